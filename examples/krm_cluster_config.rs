//! The `cluster-config` KRM function as an exec binary (see `examples/krm/fns.rs`).
//!
//! ```text
//! cargo build --release --example krm_cluster_config
//! kpt fn eval examples/krm/package --exec target/release/examples/krm_cluster_config
//! ```

#[path = "krm/fns.rs"]
mod fns;

fn main() -> std::process::ExitCode {
    cosi_runtime::krm::run_stdio(&fns::cluster_config())
}
