//! The `package-summary` KRM function as an exec binary (see `examples/krm/fns.rs`).
//!
//! ```text
//! cargo build --release --example krm_package_summary
//! kpt fn eval examples/krm/package --exec target/release/examples/krm_package_summary
//! ```

#[path = "krm/fns.rs"]
mod fns;

fn main() -> std::process::ExitCode {
    cosi_runtime::krm::run_stdio(&fns::package_summary())
}
