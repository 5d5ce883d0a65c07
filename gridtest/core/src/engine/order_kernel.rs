//! `OrderKernel`: the loop of the orders path ([`Strategy::on_orders`]). The same tiles and
//! lookback window as the targets path; each lane steps its [`Broker`](crate::broker::Broker)
//! through every event of the tile, then asks the strategy for orders.

use super::day_returns::DayReturns;
use super::exec_model::ExecModel;
use super::finish::Outcomes;

use super::checkpoint::CheckpointError;
use super::order_account::OrderAccount;
use super::panic_capture;
use super::shared_pool::{PoolState, SharedPool, Slots, build_lanes};
use super::trace::CellTrace;
use super::trades::{OrderTrades, Trade};
use super::window::{Window, WindowState, tile_end};
use super::{CellFailure, CellOutcome, FailureKind};
use crate::data::FeedBatch;
use crate::params::ParamSet;
use crate::strategy::{Cursor, Feed, Strategy};

enum Lane<S> {
    Live {
        strategy: S,
        account: Box<OrderAccount>,
        slots: Slots,
    },
    Failed(CellFailure),
}

/// K lanes of strategy `S` on the orders path.
pub(crate) struct OrderKernel<S: Strategy> {
    lanes: Vec<Lane<S>>,
    window: Window,
    /// The lanes' distinct shared series.
    pool: SharedPool<S::Feed>,
    exec: ExecModel,
    seen: u64,
    /// The days that ended so far, when recording them.
    record_days: bool,
    days: Vec<i64>,
    trace: Option<CellTrace>,
    /// When each lane's broker filled, when logging every lane's trades.
    trades: Option<Vec<OrderTrades>>,
}

impl<S: Strategy> OrderKernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        let (built, pool, lookback) = build_lanes::<S>(sets);
        let lanes = built
            .into_iter()
            .map(|lane| match lane {
                Ok((strategy, slots)) => Lane::Live {
                    strategy,
                    account: Box::new(OrderAccount::new(exec)),
                    slots,
                },
                Err(failure) => Lane::Failed(failure),
            })
            .collect();
        Self {
            lanes,
            window: Window::new(lookback, <S::Feed as Feed>::COLUMNS.len()),
            pool,
            exec: exec.clone(),
            seen: 0,
            record_days: false,
            days: Vec::new(),
            trace: None,
            trades: None,
        }
    }

    /// Records the closed trades and the equity after every event of the first lane.
    pub(crate) fn tracing(mut self) -> Self {
        self.trace = Some(CellTrace::default());
        for lane in &mut self.lanes {
            if let Lane::Live { account, .. } = lane {
                account.broker = account.broker.clone().recording();
            }
        }
        self
    }

    /// The trace recorded (empty when not tracing).
    pub(crate) fn take_trace(&mut self) -> CellTrace {
        let mut trace = self.trace.take().unwrap_or_default();
        if let Some(Lane::Live { account, .. }) = self.lanes.first_mut() {
            trace.trades = account.broker.take_record();
        }
        trace
    }

    /// Keeps every lane's closed trades and the times of its fills (see
    /// [`OrderKernel::take_trades`]).
    pub(crate) fn logging_trades(mut self) -> Self {
        for lane in &mut self.lanes {
            if let Lane::Live { account, .. } = lane {
                account.broker = account.broker.clone().recording();
            }
        }
        self.trades = Some(vec![OrderTrades::default(); self.lanes.len()]);
        self
    }

    /// Whether the lanes log their round trips.
    pub(crate) fn logs_trades(&self) -> bool {
        self.trades.is_some()
    }

    /// Closed trades and timed fills the lanes hold so far.
    pub(crate) fn trades_held(&self) -> usize {
        let timed: usize = self.trades.iter().flatten().map(OrderTrades::held).sum();
        let closed: usize = self
            .lanes
            .iter()
            .map(|lane| match lane {
                Lane::Live { account, .. } => account.broker.recorded(),
                Lane::Failed(_) => 0,
            })
            .sum();
        timed + closed
    }

    /// Every lane's trades so far, closed and open (empty lists when not logging; a failed
    /// lane's are dropped).
    pub(crate) fn take_trades(&mut self) -> Vec<Vec<Trade>> {
        let Some(times) = self.trades.take() else {
            return vec![Vec::new(); self.lanes.len()];
        };
        self.lanes
            .iter_mut()
            .zip(times)
            .map(|(lane, times)| match lane {
                Lane::Live { account, .. } => {
                    let closed = account.broker.take_record();
                    let broker = &account.broker;
                    times.finish(&closed, broker.open_trade_entries(), broker.valuation())
                }
                Lane::Failed(_) => Vec::new(),
            })
            .collect()
    }

    /// Records each lane's return per day (see [`DayReturns`]).
    pub(crate) fn recording_days(mut self) -> Self {
        self.record_days = true;
        self
    }

    /// Feeds one batch, tile by tile.
    pub(crate) fn feed(&mut self, batch: &FeedBatch) {
        let mut start = 0;
        while start < batch.len() {
            let end = tile_end(self.seen, start, batch.len());
            self.window.load::<S::Feed>(batch, start..end);
            if self.record_days {
                self.window.mark_days(&mut self.days);
            }
            self.run_tile();
            start = end;
        }
    }

    fn run_tile(&mut self) {
        let (seen, n) = (self.seen, self.window.len);
        self.pool.fill(&self.window, seen);
        let (window, pool) = (&self.window, &self.pool);
        let trace = &mut self.trace;
        let mut logs = self.trades.as_deref_mut();
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let Lane::Live {
                strategy,
                account,
                slots,
            } = lane
            else {
                continue;
            };
            let log = logs.as_deref_mut().map(|l| &mut l[i]);
            if let Some(failure) = pool.failure(slots) {
                *lane = Lane::Failed(failure);
                continue;
            }
            let ran = panic_capture::catch(|| {
                let cursor = window.lane_cursor(seen, pool, slots);
                run_lane(strategy, account, window, cursor, (trace, log));
            });
            if let Err(msg) = ran {
                *lane = Lane::Failed(CellFailure::new(
                    FailureKind::Panic,
                    format!(
                        "strategy panicked between events {seen} and {}: {msg}",
                        seen + n as u64 - 1
                    ),
                ));
            }
        }
        self.seen += n as u64;
    }

    /// One outcome per parameter set, in order.
    pub(crate) fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        self.finish_recorded(n_days).0
    }

    /// One outcome per parameter set, and the days' returns if they were recorded.
    pub(crate) fn finish_recorded(mut self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        let mut days = std::mem::take(&mut self.days);
        days.extend(self.window.day);
        let (seen, exec) = (self.seen, &self.exec);
        let mut outcomes = Outcomes::new(self.record_days, self.lanes.len());
        for lane in self.lanes {
            match lane {
                Lane::Live { account, .. } => {
                    let (outcome, returns) = account.finish(seen, n_days, exec);
                    outcomes.push(outcome, || returns);
                }
                Lane::Failed(f) => outcomes.failed(f),
            }
        }
        outcomes.finish(&days)
    }
}

/// An orders-path kernel's lanes and counters after some whole batches of a history (see
/// [`super::kernel::KernelState`]): each lane's strategy and its account, broker included
/// (cash, open trades with their exits, pending orders, trade statistics).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(in crate::engine) struct OrderKernelState {
    seen: u64,
    record_days: bool,
    days: Vec<i64>,
    window: WindowState,
    pool: PoolState,
    lanes: Vec<Result<SavedLane, CellFailure>>,
    /// When each lane's broker filled, when logging the trades (the closed trades travel in
    /// the brokers).
    trades: Option<Vec<OrderTrades>>,
}

/// A live lane's strategy state (encoded) and its account.
type SavedLane = (Vec<u8>, Box<OrderAccount>);

impl OrderKernelState {
    /// Events of the history fed before the state was saved.
    pub(in crate::engine) fn seen(&self) -> u64 {
        self.seen
    }
}

impl<S: Strategy> OrderKernel<S> {
    /// The lanes' state after the batches fed so far.
    pub(in crate::engine) fn save(&self) -> Result<OrderKernelState, CheckpointError> {
        let pool = self.pool.save()?;
        let lanes = self
            .lanes
            .iter()
            .map(|lane| match lane {
                Lane::Live {
                    strategy, account, ..
                } => Ok(Ok((strategy.save_state()?, account.clone()))),
                Lane::Failed(failure) => Ok(Err(failure.clone())),
            })
            .collect::<Result<_, CheckpointError>>()?;
        Ok(OrderKernelState {
            seen: self.seen,
            record_days: self.record_days,
            days: self.days.clone(),
            window: self.window.save(),
            pool,
            lanes,
            trades: self.trades.clone(),
        })
    }

    /// Takes up `state`, saved by a kernel of the same strategy, sets and execution model.
    pub(in crate::engine) fn restore(
        &mut self,
        state: OrderKernelState,
    ) -> Result<(), CheckpointError> {
        let mismatch = |what: &str| CheckpointError::Mismatch {
            what: what.to_owned(),
        };
        let lanes = (state.lanes.len(), self.lanes.len());
        super::kernel::restore_feed(
            lanes,
            (&mut self.window, state.window),
            (&mut self.pool, state.pool),
        )?;
        for (lane, saved) in self.lanes.iter_mut().zip(state.lanes) {
            match (&mut *lane, saved) {
                (
                    Lane::Live {
                        strategy,
                        account: held,
                        ..
                    },
                    Ok((saved, account)),
                ) => {
                    strategy.restore_state(&saved)?;
                    *held = account;
                }
                (_, Err(failure)) => *lane = Lane::Failed(failure),
                (Lane::Failed(failure), Ok(_)) => {
                    return Err(mismatch(&format!(
                        "a lane that now fails from the start ({failure})"
                    )));
                }
            }
        }
        self.seen = state.seen;
        self.record_days = state.record_days;
        self.days = state.days;
        self.trades = state.trades;
        Ok(())
    }
}

/// One lane over the events of the tile: fill and mark each event, then ask for orders.
#[inline(never)]
fn run_lane<S: Strategy>(
    strategy: &mut S,
    account: &mut OrderAccount,
    window: &Window,
    mut cursor: Cursor<'_, S::Feed>,
    (trace, mut log): (&mut Option<CellTrace>, Option<&mut OrderTrades>),
) {
    let seen = cursor.index();
    let l = window.lookback;
    let cols = &window.cols;
    let [o, h, lo, c] = [
        <S::Feed as Feed>::FILL,
        <S::Feed as Feed>::HIGH,
        <S::Feed as Feed>::LOW,
        <S::Feed as Feed>::MARK,
    ];
    let (open, high, low, close) = (&cols[o], &cols[h], &cols[lo], &cols[c]);
    for (j, &ts) in window.ts.iter().enumerate().skip(l).take(window.len) {
        let index = seen + (j - l) as u64;
        let bar = [open[j], high[j], low[j], close[j]];
        account.step(bar, index, ts);
        if let Some(log) = log.as_deref_mut() {
            log.after_event(account.broker.fills(), index, ts);
        }
        if let Some(trace) = trace.as_mut() {
            trace.equity.push((ts, account.equity()));
        }
        cursor.set(j, index);
        cursor.set_account(account.equity(), account.broker.weight());
        strategy.on_orders(&cursor, &mut account.broker);
    }
}
