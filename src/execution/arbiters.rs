//! The arbiters a runtime runs its controllers on, and where each goes.

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

/// The arbiters a runtime runs controllers on besides its home arbiter,
/// each started (a thread) when the first controller is placed on it, and
/// stopped when this is dropped (with the supervisor).
#[derive(Debug, Default)]
pub(crate) struct Arbiters {
    slots: Vec<Option<Arbiter>>,
    next: usize,
}

impl Arbiters {
    /// Room for `n` controller arbiters; with `n <= 1`, none: everything
    /// stays on the home arbiter.
    pub(crate) fn new(n: usize) -> Self {
        let slots = if n <= 1 { Vec::new() } else { (0..n).map(|_| None).collect() };
        Arbiters { slots, next: 0 }
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
        Some(self.slots[i].get_or_insert_with(Arbiter::new).handle())
    }
}

impl Drop for Arbiters {
    fn drop(&mut self) {
        for arbiter in self.slots.iter().flatten() {
            arbiter.stop();
        }
    }
}
