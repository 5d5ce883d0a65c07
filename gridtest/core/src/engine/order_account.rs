//! `OrderAccount`: one lane of the orders path: its [`Broker`] and the accumulators of its
//! equity curve, which become the cell's [`Metrics`].

use super::day_returns::DayReturns;
use super::exec_model::{
    Annualisation, ExecModel, ExposureBasis, ProfitFactorBasis, RatioConvention,
};
use super::raw::{profit_factor, ratios};
use super::{CellFailure, FailureKind};
use crate::broker::Broker;
use crate::data::NS_PER_DAY;
use crate::metrics::{Drawdown, Metrics, Moments, daily_ratios};

/// A lane of the orders path.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct OrderAccount {
    pub(super) broker: Broker,
    initial: f64,
    previous: f64,
    position: f64,
    moments: Moments,
    downside2: f64,
    drawdown: Drawdown,
    exposed: u64,
    changes: u64,
    /// Flat periods (return exactly 0) not yet folded into `moments`.
    flat: u64,
    /// The first timestamp past the current date (ns).
    day_end: i64,
    /// Equity at the close of each date.
    pub(super) closes: Vec<f64>,
}

impl OrderAccount {
    pub(super) fn new(exec: &ExecModel) -> Self {
        let broker = Broker::new(
            exec.broker.clone(),
            exec.commission_bps / 10_000.0,
            exec.slippage_bps / 10_000.0,
        )
        .with_leverage(exec.max_leverage);
        let initial = exec.broker.initial_cash;
        Self {
            broker,
            initial,
            previous: initial,
            position: 0.0,
            moments: Moments::default(),
            downside2: 0.0,
            drawdown: Drawdown::new(initial),
            exposed: 0,
            changes: 0,
            flat: 0,
            day_end: i64::MIN,
            closes: Vec::new(),
        }
    }

    /// Equity now, in units of the initial cash.
    pub(super) fn equity(&self) -> f64 {
        self.previous / self.initial
    }

    /// Fills and marks event `index` (`[open, high, low, close]`, timestamp `ts`) and
    /// accumulates its return.
    #[inline]
    pub(super) fn step(&mut self, bar: [f64; 4], index: u64, ts: i64) {
        let (before, fills) = (self.position, self.broker.fills());
        self.broker.on_event(bar, index);
        let filled = self.broker.fills() != fills;
        if ts >= self.day_end {
            if self.day_end != i64::MIN {
                self.closes.push(self.previous);
            }
            self.day_end = (ts.div_euclid(NS_PER_DAY) + 1) * NS_PER_DAY;
        }
        if index > 0 && before == 0.0 && !filled && self.broker.open_trades() == 0 {
            // Flat, and nothing filled: the return is exactly 0.
            self.flat += 1;
            return;
        }
        let after = if self.broker.open_trades() == 0 {
            0.0
        } else {
            self.broker.position()
        };
        let equity = self.broker.equity();
        if index > 0 {
            let r = equity / self.previous - 1.0;
            self.moments.update(r);
            let down = r.min(0.0);
            self.downside2 += down * down;
            self.drawdown.update(equity);
            self.exposed += u64::from(before != 0.0 || after != 0.0);
            self.changes += u64::from(filled);
        }
        self.previous = equity;
        self.position = after;
    }

    /// The cell's outcome after `n_events` events over `n_days` dates, and its return per date.
    /// A strategy that placed an invalid order or a NaN target fails it
    /// ([`FailureKind::BadTarget`]).
    pub(super) fn finish(
        mut self,
        n_events: u64,
        n_days: u32,
        exec: &ExecModel,
    ) -> (Result<Metrics, CellFailure>, Vec<f64>) {
        self.closes.push(self.previous);
        let scaled: Vec<f64> = self.closes.iter().map(|c| c / self.initial).collect();
        let days = DayReturns::from_closes(&scaled);
        if let Some((index, why)) = self.broker.rejected() {
            let failure = CellFailure::new(
                FailureKind::BadTarget,
                format!("strategy placed an order with {why} at event {index}"),
            );
            return (Err(failure), Vec::new());
        }
        (Ok(self.metrics(n_events, n_days, exec)), days)
    }

    fn metrics(&self, n_events: u64, n_days: u32, exec: &ExecModel) -> Metrics {
        let mut moments = self.moments;
        moments.merge(&Moments::from_parts(self.flat, 0.0, 0.0));
        let annual: Annualisation = exec.annualisation();
        let per_year = annual.per_year(n_events, n_days);
        let periods = n_events.saturating_sub(1);
        let (sharpe, sortino) = match exec.ratios {
            RatioConvention::Arithmetic => {
                ratios(&moments, self.downside2, periods, per_year, annual)
            }
            RatioConvention::Geometric => daily_ratios(
                &self.closes,
                annual.trading_days_per_year(),
                annual.risk_free_rate(),
            ),
        };
        let stats = self.broker.stats();
        let (win, loss) = match exec.profit_factor {
            ProfitFactorBasis::Pnl => (stats.gross_win, stats.gross_loss),
            ProfitFactorBasis::Returns => (stats.gross_win_ret, stats.gross_loss_ret),
        };
        let share = |k: u64, of: u64| if of > 0 { k as f64 / of as f64 } else { 0.0 };
        Metrics {
            n_ticks: n_events,
            trades: self.changes,
            total_return: (self.previous - self.initial) / self.initial,
            max_drawdown: self.drawdown.finish(),
            sharpe,
            sortino,
            round_trips: stats.closed,
            win_rate: share(stats.wins, stats.closed),
            profit_factor: profit_factor(win, loss),
            exposure: match exec.exposure {
                ExposureBasis::Position => share(self.exposed, periods),
                ExposureBasis::ClosedTrades => share(stats.spans.events(), n_events),
            },
            open_at_end: self.broker.open_trades() > 0,
        }
    }
}
