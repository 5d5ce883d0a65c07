//! Successive halving (Jamieson & Talwalkar 2016; Li et al., Hyperband, 2018) over a sweep's
//! history: every set is scored on a prefix of the dates, the best `1/η` go on to a prefix
//! `η` times longer, until the survivors are scored on the whole history.
//!
//! Each rung is a sweep of its own (units, ledger, results, persisted under its id), whose spec
//! records the rung ([`SearchRung`]): which search it belongs to, the sweep it continues, and
//! the number of sets the search tried, which the last rung's deflated Sharpe ratios count as
//! trials. A rung re-runs its survivors from the first date (a backtest is continuous over its
//! shard), so the evaluations of a search of `R` rungs are about `R / η^(R-1)` of an exhaustive
//! sweep's: 4/27 (15 %) for `η = 3`, four rungs.

use serde::{Deserialize, Serialize};

use super::SweepId;

/// Settings of a successive-halving search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Halving {
    /// Reduction factor: the best `1/eta` of the sets go on, on `eta` times the dates.
    pub eta: u32,
    /// Rungs at most (fewer when the history or the grid is too small for them).
    pub rungs: u32,
}

impl Default for Halving {
    /// `η = 3`, four rungs: the first scores every set on 1/27 of the history.
    fn default() -> Self {
        Self { eta: 3, rungs: 4 }
    }
}

/// One rung of a search, as the spec of the sweep that ran it records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchRung {
    /// Reduction factor of the search.
    pub eta: u32,
    /// This rung, from 0.
    pub rung: u32,
    /// Rungs of the search.
    pub rungs: u32,
    /// Dates of the history this rung scores (a prefix of the search's dates).
    pub days: usize,
    /// Parameter sets the search tried (every set of its first rung): the trials of the
    /// deflated Sharpe ratio.
    pub trials: u64,
    /// The sweep of the previous rung, whose best sets this one scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<SweepId>,
}

/// The size of one rung.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RungSize {
    /// Dates scored (a prefix of the history).
    pub days: usize,
    /// Parameter sets scored.
    pub sets: u64,
}

/// The rungs of a search of `sets` parameter sets over `days` dates.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::sweep::{Halving, HalvingSchedule, RungSize};
/// let plan = HalvingSchedule::new(Halving { eta: 3, rungs: 4 }, 81, 100_000).unwrap();
/// assert_eq!(plan.rungs()[0], RungSize { days: 3, sets: 100_000 });
/// assert_eq!(plan.rungs()[3], RungSize { days: 81, sets: 3_704 });
/// assert!(plan.share() < 0.2, "{}", plan.share());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HalvingSchedule {
    halving: Halving,
    rungs: Vec<RungSize>,
}

impl HalvingSchedule {
    /// Rung `r` of `R` scores the first `⌈days / η^(R−1−r)⌉` dates; rung 0 every set, each next
    /// rung the best `⌈n / η⌉` of the previous one's `n`. `R` is `halving.rungs`, fewer when
    /// the first rung would get less than a day or the last less than one set.
    ///
    /// # Errors
    /// The reason, when `eta` is below 2, `rungs` is 0, or there are no dates or no sets.
    pub fn new(halving: Halving, days: usize, sets: u64) -> Result<Self, String> {
        if halving.eta < 2 {
            return Err(format!("--eta {} must be at least 2", halving.eta));
        }
        if halving.rungs == 0 {
            return Err("--rungs must be at least 1".to_owned());
        }
        if days == 0 || sets == 0 {
            return Err(format!(
                "successive halving needs dates and parameter sets (found {days} dates, {sets} sets)"
            ));
        }
        let eta = u64::from(halving.eta);
        // Rungs the history and the grid have room for: η^(R−1) ≤ both.
        let mut room = 1u32;
        let mut scale = eta;
        while room < halving.rungs && scale <= days as u64 && scale <= sets {
            room += 1;
            scale = scale.saturating_mul(eta);
        }
        let mut rungs = Vec::with_capacity(room as usize);
        let mut n = sets;
        for r in 0..room {
            let divisor = eta.pow(room - 1 - r);
            rungs.push(RungSize {
                days: (days as u64).div_ceil(divisor) as usize,
                sets: n,
            });
            n = n.div_ceil(eta);
        }
        Ok(Self {
            halving: Halving {
                eta: halving.eta,
                rungs: room,
            },
            rungs,
        })
    }

    /// The settings, with the rungs actually planned.
    #[must_use]
    pub fn halving(&self) -> Halving {
        self.halving
    }

    /// The rungs, first to last (the last scores the whole history).
    #[must_use]
    pub fn rungs(&self) -> &[RungSize] {
        &self.rungs
    }

    /// Set-days scored by the search, as a share of an exhaustive sweep's (every set on every
    /// date): its share of the evaluations when every date has as many events.
    #[must_use]
    pub fn share(&self) -> f64 {
        let last = self.rungs.last().expect("at least one rung");
        let exhaustive = self.rungs[0].sets as f64 * last.days as f64;
        let searched: f64 = self
            .rungs
            .iter()
            .map(|r| r.sets as f64 * r.days as f64)
            .sum();
        searched / exhaustive
    }
}

/// What one rung of a finished search did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RungReport {
    /// The rung, from 0.
    pub rung: u32,
    /// Its sweep (persisted under this id when the run has a results root).
    pub sweep_id: SweepId,
    /// Dates scored.
    pub days: usize,
    /// Last date scored.
    pub last_date: chrono::NaiveDate,
    /// Parameter sets scored.
    pub sets: u64,
    /// Tick-parameter evaluations the rung needed (resumed cells included).
    pub evaluations: u64,
    /// Cells that failed (their sets do not go on).
    pub failed: usize,
    /// Sets that go on to the next rung (0 for the last).
    pub promoted: u64,
    /// The rung's best set and its score.
    pub best: Option<(String, f64)>,
}

/// A finished search: its rungs, and its evaluations against an exhaustive sweep's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HalvingReport {
    /// The settings.
    pub halving: Halving,
    /// The rungs, first to last.
    pub rungs: Vec<RungReport>,
    /// Evaluations of every rung together.
    pub evaluations: u64,
    /// Evaluations of every set on the whole history.
    pub exhaustive_evaluations: u64,
}

impl HalvingReport {
    /// Evaluations as a share of the exhaustive sweep's.
    #[must_use]
    pub fn share(&self) -> f64 {
        self.evaluations as f64 / self.exhaustive_evaluations.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_shrink_the_sets_and_grow_the_history() {
        let s = HalvingSchedule::new(Halving::default(), 100, 1000).unwrap();
        let got: Vec<(usize, u64)> = s.rungs().iter().map(|r| (r.days, r.sets)).collect();
        assert_eq!(got, [(4, 1000), (12, 334), (34, 112), (100, 38)]);
    }

    #[test]
    fn a_short_history_or_a_small_grid_gets_fewer_rungs() {
        let by_days = HalvingSchedule::new(Halving::default(), 10, 1000).unwrap();
        assert_eq!(by_days.rungs().len(), 3, "3^2 <= 10 < 3^3");
        assert_eq!(by_days.rungs()[0].days, 2);
        let by_sets = HalvingSchedule::new(Halving { eta: 4, rungs: 9 }, 10_000, 20).unwrap();
        assert_eq!(by_sets.rungs().len(), 3, "4^2 <= 20 < 4^3");
        let one = HalvingSchedule::new(Halving::default(), 2, 1000).unwrap();
        assert_eq!(
            one.rungs(),
            [RungSize {
                days: 2,
                sets: 1000
            }]
        );
        assert!((one.share() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(HalvingSchedule::new(Halving { eta: 1, rungs: 3 }, 10, 10).is_err());
        assert!(HalvingSchedule::new(Halving { eta: 3, rungs: 0 }, 10, 10).is_err());
        assert!(HalvingSchedule::new(Halving::default(), 0, 10).is_err());
        assert!(HalvingSchedule::new(Halving::default(), 10, 0).is_err());
    }
}
