//! `RawAccount`: a lane's accumulators at the end of a shard, and the one place they become
//! [`Metrics`]. The CPU engine and the GPU kernels (gridtest-cuda) both produce them, so both
//! finish a cell with exactly the same arithmetic.

use super::exec_model::{Annualisation, FirstReturn};
use super::{CellFailure, FailureKind};
use crate::metrics::{Drawdown, Metrics, Moments};

/// A lane's accumulators after the last event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawAccount {
    /// Final equity (starts at 1).
    pub equity: f64,
    /// Moments of the per-period returns.
    pub moments: Moments,
    /// Sum of squared negative returns.
    pub downside2: f64,
    /// Drawdown state.
    pub drawdown: Drawdown,
    /// Position changes.
    pub trades: u64,
    /// Periods with a position.
    pub exposed: u64,
    /// Closed round trips.
    pub round_trips: u64,
    /// Round trips with a profit.
    pub wins: u64,
    /// Gross profit of round trips.
    pub gross_win: f64,
    /// Gross loss of round trips (positive).
    pub gross_loss: f64,
    /// First invalid target: event index and value.
    pub bad_target: Option<(u64, f64)>,
    /// The last executed target (non-zero: a position is open at the end).
    pub held: f64,
    /// Sums of the round trips' positive returns and of their negative ones (negated), for
    /// the profit factor from returns (CPU only: the device layout does not carry them).
    pub gross_ret: (f64, f64),
}

impl RawAccount {
    /// Number of `f64` a device writes per lane, in the order of [`RawAccount::from_device`].
    pub const DEVICE_LEN: usize = 17;

    /// Reads the device layout: `equity, moments.n, moments.mean, moments.m2, downside2,
    /// dd.peak, dd.trough, dd.max, trades, exposed, round_trips, wins, gross_win, gross_loss,
    /// bad_index (negative: none), bad_value, held`. Counts are exact in `f64` below 2^53.
    ///
    /// # Panics
    /// If `v` is shorter than [`RawAccount::DEVICE_LEN`].
    #[must_use]
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "device counters are non-negative integers held exactly in f64"
    )]
    pub fn from_device(v: &[f64]) -> Self {
        let count = |x: f64| x as u64;
        Self {
            equity: v[0],
            moments: Moments::from_parts(count(v[1]), v[2], v[3]),
            downside2: v[4],
            drawdown: Drawdown::from_parts(v[5], v[6], v[7]),
            trades: count(v[8]),
            exposed: count(v[9]),
            round_trips: count(v[10]),
            wins: count(v[11]),
            gross_win: v[12],
            gross_loss: v[13],
            bad_target: (v[14] >= 0.0).then(|| (count(v[14]), v[15])),
            held: v[16],
            gross_ret: (0.0, 0.0),
        }
    }

    /// The cell's metrics after `n_events` events over `n_days` distinct dates, ratios
    /// annualised by `annual`.
    ///
    /// # Errors
    /// [`FailureKind::BadTarget`] if the strategy returned a NaN target.
    pub fn finish(
        &self,
        n_events: u64,
        n_days: u32,
        annual: Annualisation,
    ) -> Result<Metrics, CellFailure> {
        if let Some((index, value)) = self.bad_target {
            return Err(CellFailure::new(
                FailureKind::BadTarget,
                format!("strategy returned target {value} at event {index}"),
            ));
        }
        let periods = n_events.saturating_sub(1);
        let per_year = annual.per_year(n_events, n_days);
        let (sharpe, sortino) = ratios(&self.moments, self.downside2, periods, per_year, annual);
        let profit_factor = profit_factor(self.gross_win, self.gross_loss);
        Ok(Metrics {
            n_ticks: n_events,
            trades: self.trades,
            total_return: self.equity - 1.0,
            max_drawdown: self.drawdown.finish(),
            sharpe,
            sortino,
            round_trips: self.round_trips,
            win_rate: if self.round_trips > 0 {
                self.wins as f64 / self.round_trips as f64
            } else {
                0.0
            },
            profit_factor,
            exposure: if periods > 0 {
                self.exposed as f64 / periods as f64
            } else {
                0.0
            },
            open_at_end: self.held != 0.0,
        })
    }
}

/// Gross profit over gross loss: `inf` with no loss, 0 with neither.
pub(super) fn profit_factor(win: f64, loss: f64) -> f64 {
    if loss > 0.0 {
        win / loss
    } else if win > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// Sharpe and Sortino of per-period returns with these moments and sum of squared negative
/// returns over `periods` periods, `per_year` periods a year, less `annual`'s risk-free rate
/// `rf` (`rf / per_year` a period): `(mean − rf/A) / std · √A` and
/// `(mean − rf/A) / √(downside² / n) · √A`; with [`FirstReturn::Zero`] one more period of
/// return 0 counted, and a zero denominator as [`ZeroDeviation`] says.
pub(super) fn ratios(
    moments: &Moments,
    downside2: f64,
    periods: u64,
    per_year: f64,
    annual: Annualisation,
) -> (f64, f64) {
    let (moments, periods) = match annual.first_return() {
        FirstReturn::Skipped => (*moments, periods),
        FirstReturn::Zero => {
            let mut with_first = *moments;
            with_first.merge(&Moments::from_parts(1, 0.0, 0.0));
            (with_first, periods + 1)
        }
    };
    let (mean, std) = moments.finish();
    let rf = annual.risk_free_rate();
    let mean = if rf == 0.0 {
        mean
    } else {
        mean - rf / per_year
    };
    let zero = annual.zero_deviation();
    let sharpe = zero.ratio(mean, std) * per_year.sqrt();
    let downside = if periods > 0 {
        (downside2 / periods as f64).sqrt()
    } else {
        0.0
    };
    let sortino = zero.ratio(mean, downside) * per_year.sqrt();
    (sharpe, sortino)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device layout, slot by slot (the order `gt_account_write` writes in gridtest-cuda).
    fn device(bad_index: f64) -> Vec<f64> {
        vec![
            1.25,                    // equity
            9_007_199_254_740_992.0, // moments.n = 2^53, still exact
            1e-4,                    // moments.mean
            2e-6,                    // moments.m2
            3e-6,                    // downside2
            1.5,                     // dd.peak
            1.2,                     // dd.trough
            0.3,                     // dd.max
            41.0,                    // trades
            1000.0,                  // exposed
            20.0,                    // round_trips
            11.0,                    // wins
            0.75,                    // gross_win
            0.5,                     // gross_loss
            bad_index,               // bad_index
            f64::NAN,                // bad_value
            -0.5,                    // held
        ]
    }

    #[test]
    fn the_device_layout_unpacks_slot_by_slot() {
        let v = device(-1.0);
        assert_eq!(v.len(), RawAccount::DEVICE_LEN);
        let raw = RawAccount::from_device(&v);
        assert_eq!(
            raw,
            RawAccount {
                equity: 1.25,
                moments: Moments::from_parts(1 << 53, 1e-4, 2e-6),
                downside2: 3e-6,
                drawdown: Drawdown::from_parts(1.5, 1.2, 0.3),
                trades: 41,
                exposed: 1000,
                round_trips: 20,
                wins: 11,
                gross_win: 0.75,
                gross_loss: 0.5,
                bad_target: None,
                held: -0.5,
                gross_ret: (0.0, 0.0),
            }
        );
        let m = raw
            .finish(5001, 2, crate::ExecModel::default().annualisation())
            .unwrap();
        assert_eq!((m.n_ticks, m.trades, m.round_trips), (5001, 41, 20));
        assert_eq!(m.total_return, 0.25);
        assert_eq!(m.profit_factor, 1.5);
        assert_eq!(m.win_rate, 11.0 / 20.0);
        assert!(m.open_at_end);
    }

    #[test]
    fn a_bad_target_on_the_device_fails_the_cell_naming_the_event() {
        let raw = RawAccount::from_device(&device(77.0));
        assert!(matches!(raw.bad_target, Some((77, v)) if v.is_nan()));
        let err = raw
            .finish(100, 1, crate::ExecModel::default().annualisation())
            .unwrap_err();
        assert_eq!(err.kind, FailureKind::BadTarget);
        assert!(err.to_string().contains("at event 77"), "{err}");
    }
}
