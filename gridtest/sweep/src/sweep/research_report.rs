//! `ResearchReport`: how far a sweep's best sets can be trusted, from their daily returns — the
//! deflated Sharpe ratio of every set, the effective number of trials, the probability of
//! backtest overfitting and a walk-forward selection (see [`crate::research`]).

use std::collections::HashMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::set_returns::SetReturns;
use crate::params::ParamSetId;
use crate::research::{
    self, Pbo, SeriesStats, WalkForward, WalkForwardReport, deflate, effective_trials,
};

/// Most sets listed in [`ResearchReport::best`].
pub(super) const BEST_LISTED: usize = 20;
/// Blocks of a CSCV at most (the papers' choice); fewer on short histories.
pub(super) const MAX_BLOCKS: usize = 16;
/// Days per CSCV block at least.
const MIN_BLOCK_DAYS: usize = 5;
/// Decimals a DSR ranks at (and is printed with): sets whose DSRs agree to this many decimals
/// rank by their Sharpe ratio, so that a grid of DSRs that all round to 0 (or 1) does not rank
/// by the noise of the normal distribution's tail.
pub const DSR_DECIMALS: i32 = 3;

/// A DSR's tier for ranking: the DSR at [`DSR_DECIMALS`] decimals, as a whole number.
#[must_use]
pub(crate) fn dsr_tier(dsr: f64) -> f64 {
    (dsr * 10f64.powi(DSR_DECIMALS)).round()
}

/// One set's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetEvidence {
    /// Index of the set in the grid.
    pub set: u64,
    /// Its id.
    pub param_set: ParamSetId,
    /// Its parameters (`name=value …`; filled by whoever holds the grid).
    pub params: String,
    /// Sharpe ratio of its daily returns (per day).
    pub daily_sharpe: f64,
    /// The same, annualised with the execution model's days per year.
    pub annual_sharpe: f64,
    /// Skewness of its daily returns.
    pub skew: f64,
    /// Kurtosis (not excess) of its daily returns.
    pub kurtosis: f64,
    /// Its deflated Sharpe ratio.
    pub dsr: f64,
}

/// The probability of backtest overfitting, summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PboSummary {
    /// Blocks `S` (all `C(S, S/2)` splits were used).
    pub blocks: usize,
    /// Days per block.
    pub block_days: usize,
    /// PBO: share of splits whose in-sample winner ranks at or below the out-of-sample median.
    pub probability: f64,
    /// Share of splits whose in-sample winner loses out of sample.
    pub probability_of_loss: f64,
    /// Slope of out-of-sample on in-sample Sharpe (degradation).
    pub degradation_slope: f64,
    /// Its intercept.
    pub degradation_intercept: f64,
    /// Logit of each split.
    pub logits: Vec<f64>,
    /// In-sample Sharpe (per day) of each split's winner.
    pub in_sample: Vec<f64>,
    /// Its out-of-sample Sharpe.
    pub out_of_sample: Vec<f64>,
}

impl From<Pbo> for PboSummary {
    fn from(p: Pbo) -> Self {
        Self {
            blocks: p.blocks,
            block_days: p.block_len,
            probability: p.probability,
            probability_of_loss: p.probability_of_loss,
            degradation_slope: p.degradation_slope,
            degradation_intercept: p.degradation_intercept,
            logits: p.logits,
            in_sample: p.in_sample,
            out_of_sample: p.out_of_sample,
        }
    }
}

/// A walk-forward selection, summarised (sets by grid index).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WalkForwardSummary {
    /// The windows' lengths.
    pub spec: WalkForward,
    /// Per test window: first test day, the set chosen, its in- and out-of-sample daily Sharpe.
    pub windows: Vec<(NaiveDate, u64, f64, f64)>,
    /// Daily Sharpe of the chosen sets' concatenated test windows.
    pub out_of_sample_sharpe: f64,
    /// The full-sample winner (grid index) and its daily Sharpe over the same days.
    pub full_sample_winner: u64,
    /// Its daily Sharpe over the test days.
    pub full_sample_winner_sharpe: f64,
}

/// What the research statistics say about a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResearchReport {
    /// First and last day of the calendar, and its length.
    pub first_day: Option<NaiveDate>,
    /// Last day.
    pub last_day: Option<NaiveDate>,
    /// Days in the calendar (`T`).
    pub days: usize,
    /// Sets tried (`N`: every set of the grid).
    pub trials: u64,
    /// Sets with a complete daily series (the others are left out of every statistic).
    pub sets_with_returns: u64,
    /// Effective number of independent trials (see [`research::trials`]).
    pub effective_trials: f64,
    /// Variance of the sets' daily Sharpe ratios.
    pub sharpe_variance: f64,
    /// Expected maximum daily Sharpe of `N` trials without skill (`SR0`).
    pub benchmark_sharpe: f64,
    /// Days per year used to annualise.
    pub days_per_year: f64,
    /// The sets with the highest DSR, best first.
    pub best: Vec<SetEvidence>,
    /// PBO, when the calendar allows at least 4 blocks of 5 days.
    pub pbo: Option<PboSummary>,
    /// Walk-forward selection, when the calendar allows it.
    pub walk_forward: Option<WalkForwardSummary>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
    /// DSR of every set with returns, by id (not written to `research.json`).
    #[serde(skip)]
    pub deflated: HashMap<ParamSetId, Deflated>,
}

impl ResearchReport {
    /// Computes the report for `trials` sets tried, of which `returns` holds the complete series.
    #[must_use]
    pub fn compute(returns: &SetReturns, trials: u64, days_per_year: f64) -> Self {
        let matrix = &returns.returns;
        let stats: Vec<SeriesStats> = matrix.sets().map(SeriesStats::of).collect();
        let deflation = deflate(&stats, trials);
        let mut notes = Vec::new();
        if returns.lacking > 0 {
            notes.push(format!(
                "{} of {trials} sets have no complete daily series (a failed cell, or cells from an \
                 earlier run of a resumed sweep) and are left out",
                returns.lacking
            ));
        }
        let deflated: Vec<Deflated> = deflation
            .dsr
            .iter()
            .zip(&stats)
            .map(|(&dsr, stats)| Deflated {
                dsr,
                sharpe: stats.sharpe(),
            })
            .collect();
        let mut order: Vec<usize> = (0..stats.len()).collect();
        order.sort_by(|&a, &b| deflated[a].rank_order(&deflated[b]));
        if let Some(&top) = order.first()
            && dsr_tier(deflated[top].dsr) <= 0.0
        {
            notes.push(format!(
                "no set's DSR reaches {step:.decimals$}: the best daily Sharpe ratio, {:.4}, is \
                 below {:.4}, the best that {trials} trials without skill are expected to reach, \
                 so DSR cannot tell these sets apart; they rank by Sharpe ratio",
                deflated[top].sharpe,
                deflation.benchmark,
                step = 10f64.powi(-DSR_DECIMALS),
                decimals = usize::try_from(DSR_DECIMALS).unwrap_or(3),
            ));
        }
        let best = order
            .iter()
            .take(BEST_LISTED)
            .map(|&i| SetEvidence {
                set: returns.sets[i],
                param_set: returns.places[i].1,
                params: String::new(),
                daily_sharpe: stats[i].sharpe(),
                annual_sharpe: stats[i].sharpe() * days_per_year.sqrt(),
                skew: stats[i].skew,
                kurtosis: stats[i].kurtosis,
                dsr: deflation.dsr[i],
            })
            .collect();
        Self {
            first_day: returns.dates.first().copied(),
            last_day: returns.dates.last().copied(),
            days: returns.dates.len(),
            trials: deflation.n_trials,
            sets_with_returns: returns.sets.len() as u64,
            effective_trials: effective_trials(matrix, trials),
            sharpe_variance: deflation.sharpe_variance,
            benchmark_sharpe: deflation.benchmark,
            days_per_year,
            best,
            pbo: pbo(matrix, &mut notes),
            walk_forward: walk_forward(returns, &mut notes),
            notes,
            deflated: returns
                .places
                .iter()
                .map(|&(_, id)| id)
                .zip(deflated)
                .collect(),
        }
    }

    /// The DSR of set `id`, if it has returns.
    #[must_use]
    pub fn dsr_of(&self, id: ParamSetId) -> Option<f64> {
        self.deflated.get(&id).map(|d| d.dsr)
    }
}

/// A set's deflated Sharpe ratio and the daily Sharpe ratio it deflates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Deflated {
    /// The deflated Sharpe ratio.
    pub dsr: f64,
    /// The Sharpe ratio of the set's daily returns.
    pub sharpe: f64,
}

impl Deflated {
    /// The ranking by DSR, best first: by the DSR at [`DSR_DECIMALS`] decimals, then by the
    /// Sharpe ratio; a NaN last.
    #[must_use]
    pub fn rank_order(&self, other: &Self) -> std::cmp::Ordering {
        let (a, b) = (self.rank_key(), other.rank_key());
        a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
    }

    /// The ranking's key, ascending (best first): minus the DSR's tier and minus the Sharpe
    /// ratio, each NaN as infinity.
    #[must_use]
    pub(crate) fn rank_key(&self) -> (f64, f64) {
        let high_nan = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
        (high_nan(-dsr_tier(self.dsr)), high_nan(-self.sharpe))
    }
}

/// Blocks for a CSCV over `days` days: the largest even number up to [`MAX_BLOCKS`] leaving at
/// least 5 days per block; `None` below 4.
fn blocks_for(days: usize) -> Option<usize> {
    let s = (days / MIN_BLOCK_DAYS).min(MAX_BLOCKS) / 2 * 2;
    (s >= 4).then_some(s)
}

fn pbo(matrix: &research::Returns, notes: &mut Vec<String>) -> Option<PboSummary> {
    if matrix.n_sets() < 2 {
        notes.push("PBO needs at least 2 sets with returns".to_owned());
        return None;
    }
    let Some(blocks) = blocks_for(matrix.n_periods()) else {
        notes.push(format!(
            "PBO needs at least {} days (4 blocks of {MIN_BLOCK_DAYS}); the sweep has {}",
            4 * MIN_BLOCK_DAYS,
            matrix.n_periods()
        ));
        return None;
    };
    match research::probability_of_overfitting(matrix, blocks) {
        Ok(p) => Some(p.into()),
        Err(e) => {
            notes.push(format!("PBO: {e}"));
            None
        }
    }
}

/// The default windows over `days` days: train on a third, test on a sixth, rolling.
fn default_windows(days: usize) -> WalkForward {
    WalkForward {
        train: (days / 3).max(2),
        test: (days / 6).max(2),
        anchored: false,
    }
}

fn walk_forward(returns: &SetReturns, notes: &mut Vec<String>) -> Option<WalkForwardSummary> {
    let spec = default_windows(returns.dates.len());
    match research::walk_forward(&returns.returns, spec) {
        Ok(report) => Some(summarise(returns, spec, &report)),
        Err(e) => {
            notes.push(format!("walk-forward: {e}"));
            None
        }
    }
}

fn summarise(
    returns: &SetReturns,
    spec: WalkForward,
    report: &WalkForwardReport,
) -> WalkForwardSummary {
    WalkForwardSummary {
        spec,
        windows: report
            .windows
            .iter()
            .map(|w| {
                (
                    returns.dates[w.test_start],
                    returns.sets[w.chosen],
                    w.in_sample_sharpe,
                    w.out_of_sample_sharpe,
                )
            })
            .collect(),
        out_of_sample_sharpe: report.out_of_sample_sharpe,
        full_sample_winner: returns.sets[report.full_sample_winner],
        full_sample_winner_sharpe: report.full_sample_winner_sharpe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::research::Returns;

    /// `n` sets over `days` days, each losing: set `k` returns `-0.01 + (k + 1) 1e-4` on
    /// average with a deterministic wiggle, so their Sharpe ratios rise with `k`.
    fn losing_sets(n: u64, days: usize) -> SetReturns {
        let mut returns = Returns::new(days);
        for k in 0..n {
            let row: Vec<f64> = (0..days)
                .map(|d| {
                    let wiggle = (((d as u64 * 7919 + k * 104_729) % 1000) as f64 - 500.0) * 2e-5;
                    -0.01 + (k + 1) as f64 * 1e-4 + wiggle
                })
                .collect();
            returns.push(&row).unwrap();
        }
        let first: NaiveDate = "2024-01-01".parse().unwrap();
        SetReturns {
            dates: (0..days as u64)
                .map(|d| first + chrono::Days::new(d))
                .collect(),
            sets: (0..n).collect(),
            places: (0..n).map(|k| (k, ParamSetId(1000 + k))).collect(),
            returns,
            lacking: 0,
        }
    }

    #[test]
    fn a_grid_of_losers_ranks_by_sharpe_and_says_why() {
        let returns = losing_sets(12, 250);
        let report = ResearchReport::compute(&returns, 12, 252.0);
        assert!(
            report.best.iter().all(|b| dsr_tier(b.dsr) == 0.0),
            "every DSR rounds to 0: {:?}",
            report.best.iter().map(|b| b.dsr).collect::<Vec<_>>()
        );
        let sharpes: Vec<f64> = report.best.iter().map(|b| b.daily_sharpe).collect();
        assert!(
            sharpes.windows(2).all(|w| w[0] >= w[1]),
            "best by Sharpe: {sharpes:?}"
        );
        assert_eq!(report.best[0].param_set, ParamSetId(1011));
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with("no set's DSR reaches 0.001")),
            "{:?}",
            report.notes
        );
    }

    #[test]
    fn dsr_tiers_are_the_printed_decimals() {
        assert_eq!(dsr_tier(4.3e-13), 0.0);
        assert_eq!(dsr_tier(0.0004), 0.0);
        assert_eq!(dsr_tier(0.9996), 1000.0);
        assert_eq!(dsr_tier(0.587), 587.0);
    }
}
