//! Exponential backoff with jitter (pure): the delays of the supervisor's
//! retries and of the work queue's per-key retries.

use std::time::Duration;

/// Exponential backoff with jitter: the delay before retry `n` (counting from
/// 0) is `initial × multiplier^n`, capped at `max`, then spread by ±`jitter`/2.
///
/// ```
/// use std::time::Duration;
/// use cosi_runtime::supervisor::Backoff;
///
/// let b = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1), multiplier: 2.0, jitter: 0.0 };
/// assert_eq!(b.delay(0, 0.5), Duration::from_millis(100));
/// assert_eq!(b.delay(3, 0.5), Duration::from_millis(800));
/// assert_eq!(b.delay(10, 0.5), Duration::from_secs(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// Growth per consecutive failure (at least 1).
    pub multiplier: f64,
    /// Spread, as a fraction of the delay: 0.2 draws from ±10%.
    pub jitter: f64,
}

impl Default for Backoff {
    /// 100 ms, doubling, capped at 30 s, ±10% jitter.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// The delay before retry `attempt` (0-based), with `unit` a uniform random
    /// number in [0, 1) for the jitter.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let max = self.max.as_secs_f64();
        let base = self.initial.as_secs_f64()
            * self.multiplier.max(1.0).powi(i32::try_from(attempt).unwrap_or(i32::MAX));
        let base = if base.is_finite() { base.min(max) } else { max };
        let jitter = self.jitter.clamp(0.0, 1.0);
        let spread = base * (1.0 - jitter / 2.0 + jitter * unit.clamp(0.0, 1.0));
        Duration::from_secs_f64(spread.clamp(0.0, max))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 10 ms doubling up to 100 ms, no jitter: delays a test can name.
    pub(crate) fn no_jitter() -> Backoff {
        Backoff {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(100),
            multiplier: 2.0,
            jitter: 0.0,
        }
    }

    #[test]
    fn backoff_grows_and_caps() {
        let b = no_jitter();
        let delays: Vec<u128> = (0..6).map(|n| b.delay(n, 0.0).as_millis()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 100, 100]);
        assert_eq!(b.delay(u32::MAX, 0.3), Duration::from_millis(100));
    }

    #[test]
    fn jitter_stays_within_its_band() {
        let b = Backoff { jitter: 0.5, ..no_jitter() };
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(15));
        assert_eq!(b.delay(1, 0.5), Duration::from_millis(20));
        assert!(b.delay(1, 0.999) <= Duration::from_millis(25));
    }
}
