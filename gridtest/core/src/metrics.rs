//! Per-cell performance metrics and the online accumulators that produce them.
//!
//! Accumulators share the same verbs: `update` (one observation), `merge` (combine two
//! accumulators, where the statistic allows it) and `finish` (the final figure). Nothing keeps an
//! equity curve.

mod columns;
mod daily_ratios;
mod drawdown;
pub mod float_serde;
mod moments;

use serde::{Deserialize, Serialize};

pub use columns::{
    METRIC_COLUMNS, MetricColumn, MetricValue, bitwise_equal, metric_column, metrics_from,
};
pub use daily_ratios::daily_ratios;
pub use drawdown::{Drawdown, DrawdownSign};
pub use moments::Moments;

/// The metrics of one cell (one parameter set on one shard).
///
/// Definitions (see `docs/execution-model.md`): per-period returns `r[t] = E[t]/E[t-1] - 1` over
/// the `n_ticks - 1` periods, flat periods included as 0, fees included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Events replayed (ticks or bars).
    pub n_ticks: u64,
    /// Position changes (entries, exits and resizes).
    pub trades: u64,
    /// `E[end] / E[0] - 1`.
    #[serde(with = "float_serde")]
    pub total_return: f64,
    /// `max_t (1 - E[t] / max(E[0..=t]))`, in `[0, 1)`.
    #[serde(with = "float_serde")]
    pub max_drawdown: f64,
    /// `mean(r) / std(r) * sqrt(A)`, `std` with ddof 1, `A` events per year; 0 if `std` is 0.
    #[serde(with = "float_serde")]
    pub sharpe: f64,
    /// `mean(r) / sqrt(mean(min(r, 0)^2)) * sqrt(A)`; 0 if there is no downside.
    #[serde(with = "float_serde")]
    pub sortino: f64,
    /// Closed round trips (flat → position → flat, or a reversal).
    pub round_trips: u64,
    /// Fraction of closed round trips with a positive P&L (0 when none closed).
    #[serde(with = "float_serde")]
    pub win_rate: f64,
    /// Gross profit / gross loss of closed round trips (`inf` with no loss, 0 with no profit).
    #[serde(with = "float_serde")]
    pub profit_factor: f64,
    /// Fraction of periods with a non-zero position.
    #[serde(with = "float_serde")]
    pub exposure: f64,
    /// Whether a position is still open after the last event (marked at the last price, not
    /// closed: it counts in the return, not among the closed trades).
    #[serde(default)]
    pub open_at_end: bool,
}

/// A metric a leaderboard can rank by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankMetric {
    /// Annualised Sharpe ratio (higher is better).
    Sharpe,
    /// Annualised Sortino ratio (higher is better).
    Sortino,
    /// Total return (higher is better).
    TotalReturn,
    /// Maximum drawdown (lower is better).
    MaxDrawdown,
    /// Profit factor (higher is better).
    ProfitFactor,
    /// Win rate (higher is better).
    WinRate,
    /// Deflated Sharpe ratio of the set's daily returns across its shards (higher is better): a
    /// figure of the whole sweep, known at its end (`research.json`), so not a per-cell metric
    /// ([`RankMetric::of`] is NaN).
    Dsr,
}

impl RankMetric {
    /// Every rank metric.
    pub const ALL: [Self; 7] = [
        Self::Sharpe,
        Self::Sortino,
        Self::TotalReturn,
        Self::MaxDrawdown,
        Self::ProfitFactor,
        Self::WinRate,
        Self::Dsr,
    ];

    /// Column name in the results.
    #[must_use]
    pub fn column(self) -> &'static str {
        match self {
            Self::Sharpe => "sharpe",
            Self::Sortino => "sortino",
            Self::TotalReturn => "total_return",
            Self::MaxDrawdown => "max_drawdown",
            Self::ProfitFactor => "profit_factor",
            Self::WinRate => "win_rate",
            Self::Dsr => "dsr",
        }
    }

    /// Whether larger values rank higher.
    #[must_use]
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Self::MaxDrawdown)
    }

    /// The metric's value in `m` (read through [`METRIC_COLUMNS`]).
    #[must_use]
    pub fn of(self, m: &Metrics) -> f64 {
        metric_column(self.column()).map_or(f64::NAN, |c| (c.value)(m).as_f64())
    }
}

impl std::fmt::Display for RankMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.column())
    }
}

/// Parses a metric by its column name (`sharpe`, `max_drawdown`, …).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::RankMetric;
/// assert_eq!("max_drawdown".parse::<RankMetric>(), Ok(RankMetric::MaxDrawdown));
/// assert!("alpha".parse::<RankMetric>().is_err());
/// ```
impl std::str::FromStr for RankMetric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.column() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|m| m.column()).collect();
                format!("unknown metric `{s}` (one of: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests;
