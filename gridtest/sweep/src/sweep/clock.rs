//! `Clock`: where the ledger reads the time — the pace of units, when a unit runs late — so
//! that its policies run, and are tested, on a clock the caller moves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of the current instant.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> Instant;
}

/// The process's monotonic clock ([`Instant::now`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to ([`ManualClock::advance`]), for tests and
/// simulations of a ledger.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::sweep::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::default();
/// let start = clock.now();
/// clock.advance(Duration::from_millis(60));
/// assert_eq!(clock.now() - start, Duration::from_millis(60));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    nanos: AtomicU64,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            nanos: AtomicU64::new(0),
        }
    }
}

impl ManualClock {
    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}
