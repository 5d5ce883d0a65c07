//! `Pace`: how long a set takes, as the units finished so far tell, so that a speculative
//! copy goes only to a unit that runs late.
//!
//! A copy of a unit that runs at the usual pace ends no sooner than the unit itself: at the
//! end of a sweep, a thousand scorers that copied the last units (as each of them found the
//! queue empty) doubled the head's leases and reports of that last second and ran every one
//! of those units twice for nothing. As in Spark's speculation (`spark.speculation.multiplier`,
//! 1.5 by default), a unit is copied once it has been held [`SLACK`] times as long as its sets
//! usually take; until a unit has finished, nothing is known and any unit may be copied.
//!
//! It also keeps the scorers' own time per set (busy, as they report it, without the wait of
//! a prefetched unit in hand), from which the end of a sweep sizes its smallest pieces (the
//! module `tail_split`).

use std::time::Duration;

/// A unit is late, and may be copied, once held this many times its expected time.
pub(super) const SLACK: f64 = 1.5;

/// The weight of the newest unit in the running mean.
const WEIGHT: f64 = 1.0 / 8.0;

/// The running mean of the time per set of the units finished by a single holder, from lease
/// to last cell (a prefetched unit's wait in its scorer's hand included, as in the time a
/// held unit is compared with).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Pace {
    seconds_per_set: Option<f64>,
    /// The running mean of the scorers' busy time per set of the units they reported.
    busy_per_set: Option<f64>,
}

/// `mean` moved [`WEIGHT`] of the way to `x` (or `x`, the first time).
fn mean_with(mean: Option<f64>, x: f64) -> Option<f64> {
    Some(mean.map_or(x, |m| m + WEIGHT * (x - m)))
}

impl Pace {
    /// A unit of `sets` sets finished `held` after it was leased.
    pub(super) fn finished(&mut self, sets: usize, held: Duration) {
        if sets == 0 {
            return;
        }
        self.seconds_per_set = mean_with(self.seconds_per_set, held.as_secs_f64() / sets as f64);
    }

    /// A scorer reported `sets` sets computed in `busy`.
    pub(super) fn computed(&mut self, sets: usize, busy: Duration) {
        if sets > 0 {
            self.busy_per_set = mean_with(self.busy_per_set, busy.as_secs_f64() / sets as f64);
        }
    }

    /// The scorers' busy time per set, once one has reported.
    pub(super) fn busy_per_set(&self) -> Option<f64> {
        self.busy_per_set
    }

    /// Whether a unit of `sets` sets held for `held` is late: past [`SLACK`] times its expected
    /// time, or nothing is known yet.
    pub(super) fn late(&self, sets: usize, held: Duration) -> bool {
        self.seconds_per_set
            .is_none_or(|s| held.as_secs_f64() >= SLACK * s * sets as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_late_past_slack_times_the_mean_time_of_its_sets() {
        let mut pace = Pace::default();
        assert!(pace.late(4, Duration::ZERO), "nothing known: any unit");
        // Units of 4 sets in 1 s: 0.25 s a set.
        pace.finished(4, Duration::from_secs(1));
        assert!(!pace.late(4, Duration::from_millis(1_499)));
        assert!(pace.late(4, Duration::from_millis(1_500)));
        // A piece of one set is late after 0.375 s.
        assert!(!pace.late(1, Duration::from_millis(370)));
        assert!(pace.late(1, Duration::from_millis(380)));
        // The mean moves an eighth of the way to each new unit: 0.25 + (0.5 − 0.25) / 8.
        pace.finished(2, Duration::from_secs(1));
        let expected = 0.25 + 0.25 / 8.0;
        assert!(!pace.late(1, Duration::from_secs_f64(SLACK * expected * 0.999)));
        assert!(pace.late(1, Duration::from_secs_f64(SLACK * expected * 1.001)));
        // An empty unit says nothing.
        let before = pace;
        pace.finished(0, Duration::from_secs(9));
        pace.computed(0, Duration::from_secs(9));
        assert_eq!(pace, before);
    }

    #[test]
    fn the_busy_time_per_set_is_a_running_mean_of_the_reports() {
        let mut pace = Pace::default();
        assert_eq!(pace.busy_per_set(), None);
        pace.computed(4, Duration::from_secs(1));
        assert_eq!(pace.busy_per_set(), Some(0.25));
        pace.computed(1, Duration::from_secs_f64(0.5));
        assert_eq!(pace.busy_per_set(), Some(0.25 + 0.25 / 8.0));
        // The busy time does not move the lease-to-end pace, nor the other way round.
        assert!(pace.late(4, Duration::ZERO), "no unit finished yet");
    }
}
