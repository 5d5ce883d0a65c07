//! A chunk run with what the sweep asked to keep beside the metrics: each cell's returns per
//! day (research statistics) and its round trips (`--trades`).

use super::trades::Trade;
use super::{CellFailure, CellOutcome, DayReturns, ExecModel, FailureKind};
use crate::data::{DataError, FeedBatch, ShardData};
use crate::params::ParamSet;
use crate::strategy::{DataKind, Strategy};

/// What a run keeps beside each cell's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Keep {
    /// Each cell's return per day ([`DayReturns`]).
    pub days: bool,
    /// Each cell's round trips ([`Trade`]); the lanes then run one by one rather than in
    /// vector blocks (the metrics are bit for bit the same).
    pub trades: bool,
}

/// The outcome of every cell of a chunk, with what [`Keep`] asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// One outcome per set, in order.
    pub cells: Vec<CellOutcome>,
    /// The days and each set's return on them (empty unless recorded).
    pub days: DayReturns,
    /// Each set's round trips, in order (empty lists unless recorded).
    pub trades: Vec<Vec<Trade>>,
}

impl Recorded {
    /// `cells` with nothing kept beside them.
    fn bare(cells: Vec<CellOutcome>) -> Self {
        let n = cells.len();
        Self {
            cells,
            days: DayReturns {
                days: Vec::new(),
                per_set: vec![Vec::new(); n],
            },
            trades: vec![Vec::new(); n],
        }
    }
}

/// [`run_chunk`](super::run_chunk) keeping what `keep` asks for; the metrics are bit for
/// bit those of `run_chunk`.
#[must_use]
pub fn run_chunk_with<S: Strategy>(
    data: &ShardData,
    sets: &[ParamSet],
    exec: &ExecModel,
    keep: Keep,
) -> Recorded {
    let mut batches = data.batches().iter().cloned().map(Ok);
    let shard = data.shard().id();
    let kind = data.kind();
    run_source_with::<S>(&mut batches, (kind, data.n_days()), sets, exec, keep).unwrap_or_else(
        |e| {
            let failure = CellFailure::new(FailureKind::Data, format!("shard {shard}: {e}"));
            Recorded::bare(sets.iter().map(|_| Err(failure.clone())).collect())
        },
    )
}

/// [`run_source`](super::run_source) keeping what `keep` asks for, over data of
/// `kind` with `n_days` dates.
///
/// # Errors
/// As [`run_source`](super::run_source).
pub fn run_source_with<S: Strategy>(
    source: &mut dyn Iterator<Item = Result<FeedBatch, DataError>>,
    (kind, n_days): (DataKind, u32),
    sets: &[ParamSet],
    exec: &ExecModel,
    keep: Keep,
) -> Result<Recorded, DataError> {
    let Some(mut kernel) = super::kernel_for::<S>(kind, sets, exec) else {
        return Ok(Recorded::bare(super::kind_mismatch::<S>(kind, sets)));
    };
    if keep.days {
        kernel = kernel.recording_days();
    }
    if keep.trades {
        kernel = kernel.logging_trades();
    }
    for batch in source {
        kernel.feed(&batch?);
    }
    let trades = kernel.take_trades();
    let (cells, days) = kernel.finish_recorded(n_days);
    Ok(Recorded {
        cells,
        days,
        trades,
    })
}
