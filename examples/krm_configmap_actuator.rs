//! The `configmap-actuator` KRM function as an exec binary (see `examples/krm/fns.rs`).
//!
//! ```text
//! cargo build --release --example krm_configmap_actuator
//! kpt fn eval examples/krm/package --exec target/release/examples/krm_configmap_actuator
//! ```

#[path = "krm/fns.rs"]
mod fns;

fn main() -> std::process::ExitCode {
    cosi_runtime::krm::run_stdio(&fns::configmap_actuator())
}
