//! The state contract (docs/ARCHITECTURE.md, 'State contract'), from the public
//! conformance suite ([`cosi_runtime::testing::conformance`]), run against
//! every backend the project ships: add a line here for each new one.

use cosi_runtime::state_conformance;
use cosi_runtime::testing::conformance::{MemoryTarget, NS, RedbTarget, Reopen};

state_conformance!(memory, MemoryTarget);
state_conformance!(redb, RedbTarget::new(Reopen::Never));
state_conformance!(redb_reopened, RedbTarget::new(Reopen::BetweenSteps));
// The suite's namespace durable, every other one in memory.
state_conformance!(routed_durable, RedbTarget::routed([NS], Reopen::BetweenSteps));
// The suite's namespace in memory, next to a durable one.
state_conformance!(routed_memory, RedbTarget::routed(["config"], Reopen::Never));
// A shared state on a throwaway etcd (skipped loudly without an `etcd` binary).
#[cfg(feature = "etcd")]
state_conformance!(etcd, cosi_runtime::testing::conformance::EtcdTarget::new(Reopen::Never));
#[cfg(feature = "etcd")]
state_conformance!(
    etcd_reopened,
    cosi_runtime::testing::conformance::EtcdTarget::new(Reopen::BetweenSteps)
);
// Mixes (the Go runtime's namespaced router): the suite's namespace on
// etcd, the one beside it in memory; then the suite's namespace on redb,
// the one beside it on etcd, the rest in memory. Both reopened between steps.
#[cfg(feature = "etcd")]
state_conformance!(
    mix_etcd_memory,
    cosi_runtime::testing::conformance::EtcdTarget::mixed([NS], Reopen::BetweenSteps)
);
#[cfg(feature = "etcd")]
state_conformance!(
    mix_etcd_redb_memory,
    cosi_runtime::testing::conformance::EtcdTarget::with_durable(
        [cosi_runtime::testing::conformance::NS_BESIDE],
        [NS],
        Reopen::BetweenSteps
    )
);
