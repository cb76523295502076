//! The admin endpoint over real HTTP (`--features admin`): routes, watches as
//! server-sent events, and the flagship with `--serve`; with `--features
//! admin,etcd` too, the shards of a sharded controller on a test etcd.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/http.rs"]
mod http;

#[path = "../../examples/netplane/plane.rs"]
mod plane;
#[path = "../../examples/netplane/serve.rs"]
mod serve;

mod example_netplane_serve;
mod routes;
#[cfg(feature = "etcd")]
mod shards;
mod watch;
