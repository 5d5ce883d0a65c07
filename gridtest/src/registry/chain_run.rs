//! `ChainRun`: a registered strategy's [`Chain`] behind a trait object, so that a node runs a
//! history slice after slice for a strategy it knows only by name. Dispatched once per slice,
//! never per event.

use crate::data::{FeedBatch, ShardData};
use crate::engine::{CellOutcome, Chain, Checkpoint, CheckpointError, DayReturns, ExecModel};
use crate::params::ParamSet;
use crate::strategy::Strategy;

/// A chain of slices of one history, its strategy erased (see [`Chain`]).
pub trait ChainRun: Send {
    /// Runs the lanes over the next slice.
    fn feed(&mut self, slice: &ShardData);

    /// Runs the lanes over the next events (a slice read as a stream).
    fn feed_batch(&mut self, batch: &FeedBatch);

    /// Every lane's state, as [`Checkpoint::to_bytes`] writes it.
    ///
    /// # Errors
    /// See [`Chain::checkpoint`].
    fn checkpoint(&self) -> Result<Vec<u8>, CheckpointError>;

    /// One outcome per set, in order, and each set's return per day (empty unless the chain
    /// records days); `n_days`: the whole history's days with data.
    fn finish(self: Box<Self>, n_days: u32) -> (Vec<CellOutcome>, DayReturns);
}

impl<S: Strategy> ChainRun for Chain<S> {
    fn feed(&mut self, slice: &ShardData) {
        Chain::feed(self, slice);
    }

    fn feed_batch(&mut self, batch: &FeedBatch) {
        Chain::feed_batch(self, batch);
    }

    fn checkpoint(&self) -> Result<Vec<u8>, CheckpointError> {
        Chain::checkpoint(self).map(|c| c.to_bytes())
    }

    fn finish(self: Box<Self>, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        Chain::finish_recorded(*self, n_days)
    }
}

/// Starts `S`'s chain over `sets` (recording days when `record`), or resumes it from the bytes
/// of a checkpoint (which say whether it records).
pub(super) fn start_chain<S: Strategy>(
    sets: &[ParamSet],
    exec: &ExecModel,
    checkpoint: Option<&[u8]>,
    record: bool,
) -> Result<Box<dyn ChainRun>, CheckpointError> {
    let chain = match checkpoint {
        Some(bytes) => Chain::<S>::resume(sets, exec, &Checkpoint::from_bytes(bytes)?)?,
        None if record => Chain::<S>::start(sets, exec)?.recording_days(),
        None => Chain::<S>::start(sets, exec)?,
    };
    Ok(Box::new(chain))
}
