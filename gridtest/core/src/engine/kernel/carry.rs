//! Saving a [`Kernel`]'s lanes between two slices of a history and restoring them.
//!
//! Everything a lane's next event reads is saved: the strategy (through
//! [`Strategy::save_state`]), the account with its open tile of return moments, the equity at
//! each day's close, the events the lookback still reads, the shared means' running sums, the
//! kernel's counters (events seen, periods of the open tile, days ended), and the round trips
//! booked so far when a sweep keeps them. Tiles stay on the shard's multiples of
//! [`super::TILE`], so a restored kernel fed the rest of the history does the operations the
//! uncut run does, in the same order: the cells are bit-identical.

use serde::{Deserialize, Serialize};

use super::{Kernel, Lane};
use crate::engine::CellFailure;
use crate::engine::account::Account;
use crate::engine::checkpoint::CheckpointError;
use crate::engine::shared_pool::{PoolState, SharedPool};
use crate::engine::trades::TargetTrades;
use crate::engine::window::{Window, WindowState};
use crate::strategy::{Feed, Strategy};

/// A kernel's lanes and counters after some whole batches of a history.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(in crate::engine) struct KernelState {
    seen: u64,
    tile_periods: u32,
    record_days: bool,
    days: Vec<i64>,
    window: WindowState,
    pool: PoolState,
    lanes: Vec<LaneState>,
    /// Every lane's round trips so far, when logging them (`--trades`).
    trades: Option<Vec<TargetTrades>>,
}

impl KernelState {
    /// Events of the history fed before the state was saved.
    pub(in crate::engine) fn seen(&self) -> u64 {
        self.seen
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
enum LaneState {
    Live {
        strategy: Vec<u8>,
        account: Box<Account>,
        closes: Vec<f64>,
    },
    Failed(CellFailure),
}

impl<S: Strategy> Kernel<S> {
    /// The lanes' state after the batches fed so far.
    pub(in crate::engine) fn save(&self) -> Result<KernelState, CheckpointError> {
        let pool = self.pool.save()?;
        let lanes = self
            .lanes
            .iter()
            .map(|lane| match lane {
                Lane::Live {
                    strategy,
                    account,
                    closes,
                    ..
                } => Ok(LaneState::Live {
                    strategy: strategy.save_state()?,
                    account: Box::new(account.clone()),
                    closes: closes.clone(),
                }),
                Lane::Failed(failure) => Ok(LaneState::Failed(failure.clone())),
            })
            .collect::<Result<_, CheckpointError>>()?;
        Ok(KernelState {
            seen: self.seen,
            tile_periods: self.tile_periods,
            record_days: self.record_days,
            days: self.days.clone(),
            window: self.window.save(),
            pool,
            lanes,
            trades: self.trades.clone(),
        })
    }

    /// Takes up `state`, saved by a kernel of the same strategy, parameter sets and execution
    /// model (the caller checks the latter two); the next batch continues the history.
    pub(in crate::engine) fn restore(&mut self, state: KernelState) -> Result<(), CheckpointError> {
        let mismatch = |what: &str| CheckpointError::Mismatch {
            what: what.to_owned(),
        };
        let lanes = (state.lanes.len(), self.lanes.len());
        restore_feed(
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
                        closes: kept,
                        ..
                    },
                    LaneState::Live {
                        strategy: saved,
                        account,
                        closes,
                    },
                ) => {
                    strategy.restore_state(&saved)?;
                    *held = *account;
                    *kept = closes;
                }
                (_, LaneState::Failed(failure)) => *lane = Lane::Failed(failure),
                (Lane::Failed(failure), LaneState::Live { .. }) => {
                    return Err(mismatch(&format!(
                        "a lane that now fails from the start ({failure})"
                    )));
                }
            }
        }
        self.seen = state.seen;
        self.tile_periods = state.tile_periods;
        self.record_days = state.record_days;
        self.days = state.days;
        self.trades = state.trades;
        Ok(())
    }
}

/// Takes up what every single-symbol path's kernel keeps besides its lanes: the window's
/// lookback and the shared series, after checking that the saved lanes are as many as
/// `lanes.1` (`lanes.0` saved).
pub(in crate::engine) fn restore_feed<F: Feed>(
    lanes: (usize, usize),
    (window, saved_window): (&mut Window, WindowState),
    (pool, saved_pool): (&mut SharedPool<F>, PoolState),
) -> Result<(), CheckpointError> {
    let what = if lanes.0 != lanes.1 {
        "a different number of parameter sets"
    } else if !window.restore(saved_window) {
        "a different lookback or feed"
    } else if !pool.restore(saved_pool) {
        "different shared series"
    } else {
        return Ok(());
    };
    Err(CheckpointError::Mismatch {
        what: what.to_owned(),
    })
}
