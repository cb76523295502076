//! A shared state on etcd (`--features etcd`): failover of exclusive outputs,
//! outages, several processes, incarnations, and a node on three stores.
//! Every test starts its own etcd (skipped loudly without an `etcd` binary,
//! failing under `CI`).
//!
//! `failover`, `processes` and `mixed_node` start this binary again as their
//! children, on an ignored test named by its path (`failover::failover_child_owner`).

mod failover;
#[cfg(feature = "redb")]
mod mixed_node;
mod outage;
mod processes;
mod sharded;
mod uid;
