//! The arbiters a runtime runs its controllers on, and where each goes.

use std::fmt;
use std::sync::Arc;

use actix_rt::{Arbiter, ArbiterHandle};

/// Where a registered controller runs. See the [module docs](super) for
/// what runs where and how to choose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placement {
    /// The home arbiter, with the state (the default): no thread hop between
    /// the controller and the state, but it shares that thread with the
    /// state and the other controllers placed there.
    #[default]
    Home,
    /// The next of the controller arbiters, round robin (with a single
    /// arbiter, the home arbiter).
    Spread,
    /// Controller arbiter `i` (modulo their number; the home arbiter with a
    /// single arbiter): controllers given the same index share a thread, so
    /// the messages between them never cross threads.
    Arbiter(usize),
}

/// What runs first on each controller arbiter's thread (the test kit sends
/// that thread's panics to the test's log through it).
pub(crate) type ArbiterInit = Arc<dyn Fn() + Send + Sync>;

/// The arbiters a runtime runs controllers on besides its home arbiter,
/// each started (a thread) when the first controller is placed on it, and
/// stopped when this is dropped (with the supervisor).
#[derive(Default)]
pub(crate) struct Arbiters {
    slots: Vec<Option<Arbiter>>,
    next: usize,
    /// Run first on each arbiter's thread.
    init: Option<ArbiterInit>,
}

impl fmt::Debug for Arbiters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arbiters").field("slots", &self.slots).field("next", &self.next).finish()
    }
}

impl Arbiters {
    /// Room for `n` controller arbiters; with `n <= 1`, none: everything
    /// stays on the home arbiter. `init` runs first on each one's thread.
    pub(crate) fn new(n: usize, init: Option<ArbiterInit>) -> Self {
        let slots = if n <= 1 { Vec::new() } else { (0..n).map(|_| None).collect() };
        Arbiters { slots, next: 0, init }
    }

    /// A new arbiter, `init` queued first on it (an arbiter runs what it is
    /// given in order: before any controller started there).
    fn start(init: Option<&ArbiterInit>) -> Arbiter {
        let arbiter = Arbiter::new();
        if let Some(init) = init {
            let init = Arc::clone(init);
            arbiter.spawn_fn(move || init());
        }
        arbiter
    }

    /// Where a controller placed as `placement` runs: `None` for the home
    /// arbiter (the current one). Must be called inside a running actix `System`.
    pub(crate) fn place(&mut self, placement: Placement) -> Option<ArbiterHandle> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        let i = match placement {
            Placement::Home => return None,
            Placement::Arbiter(i) => i % n,
            Placement::Spread => {
                self.next = (self.next + 1) % n;
                (self.next + n - 1) % n
            }
        };
        let init = self.init.as_ref();
        Some(self.slots[i].get_or_insert_with(|| Self::start(init)).handle())
    }
}

impl Drop for Arbiters {
    fn drop(&mut self) {
        for arbiter in self.slots.iter().flatten() {
            arbiter.stop();
        }
    }
}
