//! The examples, run in-process. Those that need a feature run with the tests
//! of that feature: `admin` (`example_netplane_serve`), `kubernetes`
//! (`example_netplane_kube`), `cluster` (`example_greeting_operator`).

#[path = "../../examples/netplane/plane.rs"]
mod plane;

mod netplane;
