//! `Chain`: one span of parameter sets run over a history a slice of days at a time, its lanes
//! saved between slices so that any slice can run elsewhere or later.

use super::CellOutcome;
use super::checkpoint::{Checkpoint, CheckpointError};
use super::day_returns::DayReturns;
use super::exec_model::ExecModel;
use super::paths::AnyKernel;
use super::recorded::Recorded;
use crate::data::{FeedBatch, ShardData};
use crate::params::ParamSet;
use crate::strategy::{CarryError, Strategy};

/// Parameter sets of strategy `S` run over a history slice after slice, in order; between two
/// slices [`Chain::checkpoint`] saves every lane, and [`Chain::resume`] — in this process or
/// another — goes on from there. The cells equal those of one run over the whole history
/// ([`run_chunk`](super::run_chunk)) bit for bit. The strategy declares
/// [`Strategy::CARRY`]; the targets, orders and universe paths all carry their lanes.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
/// use gridtest::engine::{Chain, Checkpoint, run_chunk};
/// use gridtest::data::{Shard, ShardData};
/// use gridtest::serde::{Deserialize, Serialize};
///
/// #[derive(Params, Clone, Debug)]
/// struct P { window: usize }
/// #[derive(Serialize, Deserialize)]
/// #[serde(crate = "gridtest::serde")]
/// struct Above { mean: RollingMean }
/// #[gridtest::strategy(name = "doc_chain_above", carry)]
/// impl Strategy for Above {
///     type Params = P;
///     type Feed = Ticks;
///     fn new(p: &P) -> Self { Self { mean: RollingMean::new(p.window) } }
///     fn lookback(&self) -> usize { self.mean.window() }
///     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
///         self.mean.push(now.price(), now.price_back(self.mean.window()));
///         if now.price() > self.mean.mean() { 1.0 } else { 0.0 }
///     }
/// }
///
/// const DAY: i64 = 86_400_000_000_000;
/// let (monday, tuesday) = ([100.0, 101.0, 99.0, 102.0], [103.0, 98.0, 104.0, 105.0]);
/// let ts = |day: i64| (0..4).map(move |i| day * DAY + i);
/// let shard = |first: &str, last: &str| -> Result<Shard, Box<dyn std::error::Error>> {
///     Ok(Shard::new("DEMO", first.parse()?, last.parse()?))
/// };
/// let sets = [ParamSet::new([("window", ParamValue::Int(2))])];
/// let exec = ExecModel::default();
///
/// let mut chain = Chain::<Above>::start(&sets, &exec)?;
/// let day_one = shard("1970-01-01", "1970-01-01")?;
/// chain.feed(&ShardData::from_ticks(day_one, ts(0).collect(), monday.to_vec(), vec![1.0; 4], 1)?);
/// let saved = chain.checkpoint()?.to_bytes();
/// // … later, perhaps on another node:
/// let mut chain = Chain::<Above>::resume(&sets, &exec, &Checkpoint::from_bytes(&saved)?)?;
/// let day_two = shard("1970-01-02", "1970-01-02")?;
/// chain.feed(&ShardData::from_ticks(day_two, ts(1).collect(), tuesday.to_vec(), vec![1.0; 4], 1)?);
/// let cut = chain.finish(2);
///
/// let both = shard("1970-01-01", "1970-01-02")?;
/// let whole = ShardData::from_ticks(
///     both, ts(0).chain(ts(1)).collect(), [monday, tuesday].concat(), vec![1.0; 8], 2)?;
/// let uncut = run_chunk::<Above>(&whole, &sets, &exec);
/// // every metric of every cell, bit for bit (Debug prints each f64 exactly)
/// assert_eq!(format!("{cut:?}"), format!("{uncut:?}"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Chain<S: Strategy> {
    kernel: AnyKernel<S>,
    sets: Vec<ParamSet>,
    exec: ExecModel,
}

impl<S: Strategy> Chain<S> {
    /// A chain at the start of a history.
    ///
    /// # Errors
    /// [`CarryError::NotCarried`] when `S` does not declare [`Strategy::CARRY`] (a chain that
    /// could not be saved would be no chain).
    pub fn start(sets: &[ParamSet], exec: &ExecModel) -> Result<Self, CheckpointError> {
        if !S::CARRY {
            return Err(CarryError::NotCarried {
                strategy: std::any::type_name::<S>(),
            }
            .into());
        }
        Ok(Self {
            kernel: AnyKernel::new(sets, exec),
            sets: sets.to_vec(),
            exec: exec.clone(),
        })
    }

    /// The chain `checkpoint` saved, for the same parameter sets and execution model; it
    /// records days if the saved chain did.
    ///
    /// # Errors
    /// When the checkpoint was saved by another strategy, other sets or another execution
    /// model, or the strategy's state does not decode.
    pub fn resume(
        sets: &[ParamSet],
        exec: &ExecModel,
        checkpoint: &Checkpoint,
    ) -> Result<Self, CheckpointError> {
        let mut chain = Self::start(sets, exec)?;
        checkpoint.check(std::any::type_name::<S>(), sets, exec)?;
        chain.kernel.restore(checkpoint.kernel.clone())?;
        Ok(chain)
    }

    /// Records each lane's equity at every day's close (for [`Chain::finish_recorded`]); call
    /// it before the first slice.
    #[must_use]
    pub fn recording_days(self) -> Self {
        Self {
            kernel: self.kernel.recording_days(),
            ..self
        }
    }

    /// Keeps each lane's round trips across the slices (for [`Chain::finish_kept`]); call it
    /// before the first slice. Checkpoints then carry the trips booked so far.
    #[must_use]
    pub fn logging_trades(self) -> Self {
        Self {
            kernel: self.kernel.logging_trades(),
            ..self
        }
    }

    /// Whether the chain keeps round trips: asked with [`Chain::logging_trades`], or taken up
    /// from the checkpoint it resumed.
    #[must_use]
    pub fn logs_trades(&self) -> bool {
        self.kernel.logs_trades()
    }

    /// The round trips the lanes hold so far (on the orders path, closed trades and timed
    /// fills): what a checkpoint of a chain that logs them grows by.
    #[must_use]
    pub fn trades_held(&self) -> usize {
        self.kernel.trades_held()
    }

    /// Runs the lanes over `slice`, the next days of the history.
    pub fn feed(&mut self, slice: &ShardData) {
        for batch in slice.batches() {
            self.kernel.feed(batch);
        }
    }

    /// Runs the lanes over `batch`, the next events of the history (a slice read as a stream).
    pub fn feed_batch(&mut self, batch: &FeedBatch) {
        self.kernel.feed(batch);
    }

    /// Every lane's state after the slices fed so far.
    ///
    /// # Errors
    /// When a lane's strategy state does not encode or a shared series cannot be saved (see
    /// [`CheckpointError`]).
    pub fn checkpoint(&self) -> Result<Checkpoint, CheckpointError> {
        let state = self.kernel.save()?;
        Ok(Checkpoint::new(
            std::any::type_name::<S>(),
            &self.sets,
            &self.exec,
            state,
        ))
    }

    /// One outcome per parameter set, in order; `n_days` is the whole history's count of days.
    #[must_use]
    pub fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        self.kernel.finish(n_days)
    }

    /// [`Chain::finish`] with each set's return per day (empty unless recording).
    #[must_use]
    pub fn finish_recorded(self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        self.kernel.finish_recorded(n_days)
    }

    /// [`Chain::finish`] with what the chain kept: each set's return per day and its round
    /// trips over the whole history (empty unless recording or logging them), as
    /// [`run_chunk_with`](super::run_chunk_with) keeps them in one run.
    #[must_use]
    pub fn finish_kept(mut self, n_days: u32) -> Recorded {
        let trades = self.kernel.take_trades();
        let (cells, days) = self.kernel.finish_recorded(n_days);
        Recorded {
            cells,
            days,
            trades,
        }
    }
}
