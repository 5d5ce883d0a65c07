//! `UniverseKernel`: K lanes of a portfolio strategy ([`Strategy::on_universe`]) over a
//! universe's merged events.
//!
//! Events arrive merged in time order, each tagged with its member. Per event, every lane
//! executes that member's pending target at the event's fill price (see [`Book`]); then the
//! member's as-of quote is updated. When the timestamp changes, the slice that ended is closed:
//! every lane marks its book, records the period's return and calls the strategy once with the
//! universe as of that slice ([`Slice`]). Events are the outer loop so the quotes are shared by
//! all lanes; per-lane state is allocated once, when the first batch says how many members
//! there are.

use std::sync::Arc;

use super::book::Book;
use super::checkpoint::CheckpointError;
use super::day_returns::DayReturns;
use super::exec_model::{ExecModel, RatioConvention, ReversalFee};
use super::finish::{Conventions, Outcomes};
use super::kernel::build_strategy;
use super::trace::{CellTrace, Fill, Side};
use super::trades::Trade;
use super::{CellFailure, CellOutcome, FailureKind, panic_capture};
use crate::data::{FeedBatch, NS_PER_DAY};
use crate::params::ParamSet;
use crate::strategy::{Feed, MAX_COLUMNS, Quotes, Slice, Strategy};

/// A universe kernel's lanes and what they share after some whole batches of a history: the
/// members, their as-of quotes and marks, the open slice's timestamp, the counters; per lane the
/// strategy's state, its book and the days' closing equity.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(in crate::engine) struct UniverseState {
    symbols: Vec<String>,
    quotes: Quotes,
    marks: Vec<f64>,
    open: Option<i64>,
    slices: u64,
    record_days: bool,
    log_trades: bool,
    days: Vec<i64>,
    lanes: Vec<Result<SavedLane, CellFailure>>,
}

/// A live lane's strategy state (encoded), its book (none before the first batch) and its
/// closing equity per day.
type SavedLane = (Vec<u8>, Option<Book>, Vec<f64>);

impl UniverseState {
    /// Events of the history fed before the state was saved: its slices (timestamps), closed
    /// or open.
    pub(in crate::engine) fn seen(&self) -> u64 {
        self.slices + u64::from(self.open.is_some())
    }
}

#[allow(
    clippy::large_enum_variant,
    reason = "live lanes are the rule; their books stay inline in the lane vector"
)]
enum Lane<S> {
    Live {
        strategy: S,
        book: Option<Book>,
        closes: Vec<f64>,
    },
    Failed(CellFailure),
}

/// K lanes of the portfolio strategy `S`.
pub(crate) struct UniverseKernel<S: Strategy> {
    lanes: Vec<Lane<S>>,
    symbols: Arc<[String]>,
    quotes: Quotes,
    marks: Vec<f64>,
    /// The timestamp of the open slice.
    open: Option<i64>,
    /// Slices closed so far.
    slices: u64,
    cost: f64,
    /// Whether a reversal's opening part is charged to the round trip it opens.
    split_reversals: bool,
    max_leverage: f64,
    conventions: Conventions,
    record_days: bool,
    /// Whether each lane's book keeps its round trips (`--trades`).
    log_trades: bool,
    days: Vec<i64>,
    trace: Option<CellTrace>,
}

impl<S: Strategy> UniverseKernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        let lanes = sets
            .iter()
            .map(|set| match build_strategy::<S>(set) {
                Ok(built) if !built.shared.is_empty() => Lane::Failed(CellFailure::new(
                    FailureKind::Params,
                    "the strategy declares shared series, which the universe path does not \
                     compute (read them on the targets or orders path)",
                )),
                Ok(built) => Lane::Live {
                    strategy: built.strategy,
                    book: None,
                    closes: Vec::new(),
                },
                Err(failure) => Lane::Failed(failure),
            })
            .collect();
        Self {
            lanes,
            symbols: Arc::from(Vec::new()),
            quotes: Quotes::new(0),
            marks: Vec::new(),
            open: None,
            slices: 0,
            cost: exec.cost_rate(),
            split_reversals: exec.reversal_fee == ReversalFee::Split,
            max_leverage: exec.max_leverage,
            conventions: Conventions::of(exec),
            record_days: exec.ratios == RatioConvention::Geometric,
            log_trades: false,
            days: Vec::new(),
            trace: None,
        }
    }

    /// Records the first lane's fills and its equity after every slice.
    pub(crate) fn tracing(mut self) -> Self {
        self.trace = Some(CellTrace::default());
        self
    }

    /// The trace recorded (empty when not tracing).
    pub(crate) fn take_trace(&mut self) -> CellTrace {
        self.trace.take().unwrap_or_default()
    }

    /// Keeps every lane's round trips, member by member (see [`UniverseKernel::take_trades`]);
    /// call it before the first batch.
    pub(crate) fn logging_trades(mut self) -> Self {
        self.log_trades = true;
        self
    }

    /// Whether the lanes log their round trips.
    pub(crate) fn logs_trades(&self) -> bool {
        self.log_trades
    }

    /// Round trips the lanes' books hold so far.
    pub(crate) fn trades_held(&self) -> usize {
        self.lanes
            .iter()
            .map(|lane| match lane {
                Lane::Live {
                    book: Some(book), ..
                } => book.trips_held(),
                _ => 0,
            })
            .sum()
    }

    /// Every lane's round trips so far, each member's open one marked at its last price (empty
    /// lists when not logging; a failed lane's are dropped).
    pub(crate) fn take_trades(&mut self) -> Vec<Vec<Trade>> {
        let marks = &self.marks;
        self.lanes
            .iter_mut()
            .map(|lane| match lane {
                Lane::Live {
                    book: Some(book), ..
                } => book.take_trips(marks),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Records each lane's equity at the close of every day.
    pub(crate) fn recording_days(mut self) -> Self {
        self.record_days = true;
        self
    }

    /// Sizes the quotes and books for the universe of the first batch (a batch without a member
    /// column is a universe of one symbol); a later batch of other members (a slice of another
    /// universe fed to a restored kernel) fails every lane.
    fn size_for(&mut self, batch: &FeedBatch) {
        if !self.marks.is_empty() {
            let same = batch.members().is_none_or(|m| *m.symbols == *self.symbols);
            if !same {
                self.fail_all(&format!(
                    "a batch of members {:?} after members {:?}",
                    batch
                        .members()
                        .map(|m| m.symbols.to_vec())
                        .unwrap_or_default(),
                    self.symbols
                ));
            }
            return;
        }
        self.symbols = batch.members().map_or_else(
            || Arc::from(vec![String::new()]),
            |m| Arc::clone(&m.symbols),
        );
        let n = self.symbols.len();
        self.quotes = Quotes::new(n);
        self.marks = vec![0.0; n];
        for lane in &mut self.lanes {
            if let Lane::Live { book, .. } = lane {
                let fresh = Book::new(n).splitting_reversals(self.split_reversals);
                *book = Some(if self.log_trades {
                    fresh.logging_trips()
                } else {
                    fresh
                });
            }
        }
        if let Some(trace) = self.trace.as_mut() {
            trace.symbols = self.symbols.to_vec();
        }
    }

    pub(crate) fn feed(&mut self, batch: &FeedBatch) {
        if batch.is_empty() {
            return;
        }
        self.size_for(batch);
        let (fill_col, mark_col) = (<S::Feed as Feed>::FILL, <S::Feed as Feed>::MARK);
        let cols = batch.columns();
        let members = batch.members().map(|m| &m.index);
        for (e, &ts) in batch.ts().iter().enumerate() {
            if self.open != Some(ts) {
                if self.open.is_some() {
                    self.close_slice();
                }
                self.open = Some(ts);
                self.begin_slice(ts);
            }
            let m = members.map_or(0, |idx| idx[e] as usize);
            let price = cols[fill_col][e];
            for (k, lane) in self.lanes.iter_mut().enumerate() {
                let Lane::Live {
                    book: Some(book), ..
                } = lane
                else {
                    continue;
                };
                let at = (self.slices, ts);
                let filled = book.fill(m, (price, at), &self.marks, self.cost);
                if let (Some(f), Some(trace), 0) = (filled, self.trace.as_mut(), k) {
                    trace.fills.push(Fill {
                        index: self.slices,
                        ts,
                        price,
                        units: f.units.abs(),
                        side: if f.units > 0.0 { Side::Buy } else { Side::Sell },
                        fee: f.fee,
                        weight: f.target,
                        equity: f.equity,
                        member: u32::try_from(m).unwrap_or(u32::MAX),
                    });
                }
            }
            let mut row = [0.0; MAX_COLUMNS];
            for (v, col) in row.iter_mut().zip(cols) {
                *v = col[e];
            }
            self.quotes.set(m, row, self.slices);
            self.marks[m] = cols[mark_col][e];
        }
    }

    /// A new slice at `ts`: day bookkeeping, and each book notes its exposure.
    fn begin_slice(&mut self, ts: i64) {
        let day = ts.div_euclid(NS_PER_DAY);
        if self.days.last() != Some(&day) {
            if self.record_days && !self.days.is_empty() {
                for lane in &mut self.lanes {
                    if let Lane::Live {
                        book: Some(book),
                        closes,
                        ..
                    } = lane
                    {
                        closes.push(book.equity());
                    }
                }
            }
            self.days.push(day);
        }
        for lane in &mut self.lanes {
            if let Lane::Live {
                book: Some(book), ..
            } = lane
            {
                book.begin_slice();
            }
        }
    }

    /// Closes the open slice: marks every book and calls every live strategy once.
    fn close_slice(&mut self) {
        let ts = self.open.unwrap_or_default();
        let (index, first) = (self.slices, self.slices == 0);
        let intrabar = <S::Feed as Feed>::INTRABAR;
        let now = Slice::<S::Feed>::new(&self.symbols, &self.quotes, ts, index);
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            let Lane::Live {
                strategy,
                book: Some(book),
                ..
            } = lane
            else {
                continue;
            };
            let equity = book.end_slice(&self.marks, first, intrabar);
            if let (Some(trace), 0) = (self.trace.as_mut(), k) {
                trace.equity.push((ts, equity));
            }
            match panic_capture::catch(|| strategy.on_universe(&now, &mut book.targets)) {
                Ok(()) => book.take_targets(index, self.max_leverage),
                Err(msg) => {
                    *lane = Lane::Failed(CellFailure::new(
                        FailureKind::Panic,
                        format!("strategy panicked at slice {index} (ts {ts}): {msg}"),
                    ));
                }
            }
        }
        self.slices += 1;
    }

    fn fail_all(&mut self, why: &str) {
        for lane in &mut self.lanes {
            if matches!(lane, Lane::Live { .. }) {
                *lane = Lane::Failed(CellFailure::new(FailureKind::Data, why));
            }
        }
    }

    /// The lanes' state after the batches fed so far; the slice at the last timestamp stays
    /// open (the next event closes it, as in the uncut run).
    pub(in crate::engine) fn save(&self) -> Result<UniverseState, CheckpointError> {
        let lanes = self
            .lanes
            .iter()
            .map(|lane| match lane {
                Lane::Live {
                    strategy,
                    book,
                    closes,
                } => Ok(Ok((strategy.save_state()?, book.clone(), closes.clone()))),
                Lane::Failed(failure) => Ok(Err(failure.clone())),
            })
            .collect::<Result<_, CheckpointError>>()?;
        Ok(UniverseState {
            symbols: self.symbols.to_vec(),
            quotes: self.quotes.clone(),
            marks: self.marks.clone(),
            open: self.open,
            slices: self.slices,
            record_days: self.record_days,
            log_trades: self.log_trades,
            days: self.days.clone(),
            lanes,
        })
    }

    /// Takes up `state`, saved by a kernel of the same strategy, sets and execution model.
    pub(in crate::engine) fn restore(
        &mut self,
        state: UniverseState,
    ) -> Result<(), CheckpointError> {
        if state.lanes.len() != self.lanes.len() {
            return Err(CheckpointError::Mismatch {
                what: "a different number of parameter sets".to_owned(),
            });
        }
        for (lane, saved) in self.lanes.iter_mut().zip(state.lanes) {
            match (&mut *lane, saved) {
                (
                    Lane::Live {
                        strategy,
                        book: held,
                        closes: kept,
                    },
                    Ok((saved, book, closes)),
                ) => {
                    strategy.restore_state(&saved)?;
                    *held = book;
                    *kept = closes;
                }
                (_, Err(failure)) => *lane = Lane::Failed(failure),
                (Lane::Failed(failure), Ok(_)) => {
                    return Err(CheckpointError::Mismatch {
                        what: format!("a lane that now fails from the start ({failure})"),
                    });
                }
            }
        }
        self.symbols = Arc::from(state.symbols);
        self.quotes = state.quotes;
        self.marks = state.marks;
        self.open = state.open;
        self.slices = state.slices;
        self.record_days = state.record_days;
        self.log_trades = state.log_trades;
        self.days = state.days;
        Ok(())
    }

    /// One outcome per parameter set, in order.
    pub(crate) fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        self.finish_recorded(n_days).0
    }

    /// One outcome per parameter set, and the days' returns if they were recorded.
    pub(crate) fn finish_recorded(mut self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        if self.open.is_some() {
            self.close_slice();
        }
        let (slices, conventions) = (self.slices, self.conventions);
        let mut outcomes = Outcomes::new(self.record_days, self.lanes.len());
        for lane in self.lanes {
            match lane {
                Lane::Live {
                    book, mut closes, ..
                } => {
                    let book = book.unwrap_or_else(|| Book::new(0));
                    if outcomes.recording() {
                        closes.push(book.equity());
                    }
                    let outcome = conventions.outcome(&book.raw(), &closes, slices, n_days);
                    outcomes.push(outcome, || DayReturns::from_closes(&closes));
                }
                Lane::Failed(f) => outcomes.failed(f),
            }
        }
        outcomes.finish(&self.days)
    }
}
