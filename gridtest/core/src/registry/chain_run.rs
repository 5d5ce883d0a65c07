//! `ChainRun`: a registered strategy's [`Chain`] behind a trait object, so that a node runs a
//! history slice after slice for a strategy it knows only by name. Dispatched once per slice,
//! never per event.

use crate::data::{FeedBatch, ShardData};
use crate::engine::{Chain, Checkpoint, CheckpointError, ExecModel, Keep, Recorded};
use crate::params::ParamSet;
use crate::strategy::Strategy;

/// A chain of slices of one history, its strategy erased (see [`Chain`]).
pub trait ChainRun: Send {
    /// Runs the lanes over the next slice.
    fn feed(&mut self, slice: &ShardData);

    /// Runs the lanes over the next events (a slice read as a stream).
    fn feed_batch(&mut self, batch: &FeedBatch);

    /// The round trips held so far (see [`Chain::trades_held`]).
    fn trades_held(&self) -> usize;

    /// Every lane's state, as [`Checkpoint::to_bytes`] writes it.
    ///
    /// # Errors
    /// See [`Chain::checkpoint`].
    fn checkpoint(&self) -> Result<Vec<u8>, CheckpointError>;

    /// One outcome per set, in order, with each set's return per day and round trips (empty
    /// unless the chain keeps them); `n_days`: the whole history's days with data.
    fn finish(self: Box<Self>, n_days: u32) -> Recorded;
}

impl<S: Strategy> ChainRun for Chain<S> {
    fn feed(&mut self, slice: &ShardData) {
        Chain::feed(self, slice);
    }

    fn feed_batch(&mut self, batch: &FeedBatch) {
        Chain::feed_batch(self, batch);
    }

    fn trades_held(&self) -> usize {
        Chain::trades_held(self)
    }

    fn checkpoint(&self) -> Result<Vec<u8>, CheckpointError> {
        Chain::checkpoint(self).map(|c| c.to_bytes())
    }

    fn finish(self: Box<Self>, n_days: u32) -> Recorded {
        Chain::finish_kept(*self, n_days)
    }
}

/// Starts `S`'s chain over `sets` keeping what `keep` asks, or resumes it from the bytes of a
/// checkpoint (which say whether it records days; one that lacks the trips `keep` asks for is
/// refused rather than losing the trips of its earlier slices).
pub(super) fn start_chain<S: Strategy>(
    sets: &[ParamSet],
    exec: &ExecModel,
    checkpoint: Option<&[u8]>,
    keep: Keep,
) -> Result<Box<dyn ChainRun>, CheckpointError> {
    let chain = match checkpoint {
        Some(bytes) => {
            let chain = Chain::<S>::resume(sets, exec, &Checkpoint::from_bytes(bytes)?)?;
            if keep.trades && !chain.logs_trades() {
                return Err(CheckpointError::Mismatch {
                    what: "it was saved without the round trips this run keeps".to_owned(),
                });
            }
            chain
        }
        None => {
            let chain = Chain::<S>::start(sets, exec)?;
            let chain = if keep.days {
                chain.recording_days()
            } else {
                chain
            };
            if keep.trades {
                chain.logging_trades()
            } else {
                chain
            }
        }
    };
    Ok(Box::new(chain))
}
