//! Finishing a chunk: the metric conventions a live lane is finished with, and the outcomes
//! (with each set's returns per day when they were recorded) collected lane by lane. The
//! single-symbol targets kernel, the orders kernel and the universe kernel all finish through
//! here, so a cell's metrics never depend on which path scored it.

use super::day_returns::DayReturns;
use super::exec_model::{Annualisation, ExecModel, ProfitFactorBasis, RatioConvention};
use super::raw::{RawAccount, profit_factor};
use super::{CellFailure, CellOutcome};
use crate::metrics::{Metrics, daily_ratios};

/// The conventions of [`ExecModel`] that apply when a lane's accumulators become metrics.
#[derive(Clone, Copy, Debug)]
pub(super) struct Conventions {
    pub(super) annual: Annualisation,
    /// Sharpe and Sortino from the equity at each date's close ([`RatioConvention::Geometric`]),
    /// which needs the days recorded.
    pub(super) daily_ratios: bool,
    /// Profit factor from trade returns rather than P&L.
    pub(super) returns_pf: bool,
}

impl Conventions {
    pub(super) fn of(exec: &ExecModel) -> Self {
        Self {
            annual: exec.annualisation(),
            daily_ratios: exec.ratios == RatioConvention::Geometric,
            returns_pf: exec.profit_factor == ProfitFactorBasis::Returns,
        }
    }

    /// A live lane's outcome from its accumulators after `n_events` events over `n_days` dates,
    /// and the equity at each date's close (read only for daily ratios).
    pub(super) fn outcome(
        &self,
        raw: &RawAccount,
        closes: &[f64],
        n_events: u64,
        n_days: u32,
    ) -> CellOutcome {
        let mut metrics = raw.finish(n_events, n_days, self.annual)?;
        if self.returns_pf {
            metrics.profit_factor = profit_factor(raw.gross_ret.0, raw.gross_ret.1);
        }
        if self.daily_ratios {
            metrics = with_daily_ratios(metrics, closes, self.annual);
        }
        Ok(metrics)
    }
}

/// `m` with its Sharpe and Sortino ratios from the equity at each date's close
/// ([`RatioConvention::Geometric`]).
pub(super) fn with_daily_ratios(mut m: Metrics, closes: &[f64], annual: Annualisation) -> Metrics {
    let (sharpe, sortino) = daily_ratios(
        closes,
        annual.trading_days_per_year(),
        annual.risk_free_rate(),
    );
    m.sharpe = sharpe;
    m.sortino = sortino;
    m
}

/// Outcomes collected lane by lane, in order, with each set's returns per day when recording.
pub(super) struct Outcomes {
    record: bool,
    outcomes: Vec<CellOutcome>,
    per_set: Vec<Vec<f64>>,
}

impl Outcomes {
    pub(super) fn new(record: bool, lanes: usize) -> Self {
        Self {
            record,
            outcomes: Vec::with_capacity(lanes),
            per_set: Vec::new(),
        }
    }

    /// Whether the days' returns are recorded.
    pub(super) fn recording(&self) -> bool {
        self.record
    }

    /// A lane's outcome and, when recording, its return per day (`returns` runs only then).
    pub(super) fn push(&mut self, outcome: CellOutcome, returns: impl FnOnce() -> Vec<f64>) {
        if self.record {
            self.per_set.push(returns());
        }
        self.outcomes.push(outcome);
    }

    /// A failed lane: no returns.
    pub(super) fn failed(&mut self, failure: CellFailure) {
        self.push(Err(failure), Vec::new);
    }

    /// The outcomes and, when recording, the days (as days since the epoch) with each set's
    /// returns on them.
    pub(super) fn finish(self, epoch_days: &[i64]) -> (Vec<CellOutcome>, DayReturns) {
        let days = if self.record {
            DayReturns::dates(epoch_days)
        } else {
            Vec::new()
        };
        let per_set = self.per_set;
        (self.outcomes, DayReturns { days, per_set })
    }
}
