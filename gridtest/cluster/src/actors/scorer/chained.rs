//! A chained unit ([`SliceChain`](crate::sweep::SliceChain)) run by a scorer: its history's
//! slices from the one after the last the head kept to the end, each from the node's loader
//! (shared with the node's other scorers on the same slice), the lanes carried between them
//! in memory. After each slice but the last the lanes' state goes to the head, which hands it
//! to whoever takes the unit over if this node is lost; the last slice's cells make the
//! unit's report. Runs on the CPU engine.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ractor::ActorRef;

use super::lease::Leased;
use super::{ScorerArgs, crash, get_shard};
use crate::actors::messages::{
    MAX_MESSAGE_BYTES, NodeDataFault, SliceReport, SupervisorMsg, UnitReport,
};
use crate::actors::shard_loader::{ShardHandle, ShardRequest};
use crate::actors::wire::Wire;
use crate::data::{Dataset, ProcessReads};
use crate::engine::{Keep, Recorded};
use crate::params::ParamSet;
use crate::registry::{ChainRun, StartChain, find_strategy};
use crate::sweep::{CellFailure, CheckpointBytes, FailureKind, SetResult, SliceChain, WorkUnit};

/// The largest checkpoint sent to the head (as base64 in JSON, a third larger): a larger one is
/// kept on this node only, and the unit restarts from the last checkpoint the head has (its
/// first slice if none) if the node is lost.
const MAX_SENT_CHECKPOINT: usize = MAX_MESSAGE_BYTES / 4 * 3;

/// Fewer bytes than any round trip takes in a checkpoint: lanes holding more trips than
/// [`MAX_SENT_CHECKPOINT`] over this are not even encoded (the trips only grow, and encoding
/// them after every slice would cost the square of the history's trades).
const MIN_TRADE_BYTES: usize = 32;

/// Runs the chained unit of `lease` to its end; its report.
pub(super) async fn run_chained(
    args: &ScorerArgs,
    supervisor: &ActorRef<SupervisorMsg>,
    lease: Leased,
) -> UnitReport {
    let started = Instant::now();
    let Leased { context, unit } = lease;
    let (places, sets): (Vec<_>, Vec<_>) = unit.sets.expand(&context.grid).into_iter().unzip();
    let ids: Vec<_> = sets.iter().map(ParamSet::id).collect();
    let n = sets.len() as u64;
    let run = Run {
        args,
        supervisor,
        context: &context,
        unit: &unit,
        kept_here: AtomicBool::new(false),
    };
    let (cells, rows, node_fault) = match run.slices(sets).await {
        Ok((kept, rows)) => {
            let days = kept.days.per_set.into_iter();
            let trades = kept.trades.into_iter();
            let results = places
                .into_iter()
                .zip(ids)
                .zip(kept.cells)
                .zip(days.chain(std::iter::repeat_with(Vec::new)))
                .zip(trades.chain(std::iter::repeat_with(Vec::new)))
                .map(
                    |((((place, param_set), outcome), day_returns), trades)| SetResult {
                        place,
                        param_set,
                        outcome,
                        day_returns,
                        trades,
                    },
                )
                .collect();
            (Ok(results), rows, None)
        }
        Err((failure, fault)) => (Err(failure), 0, fault),
    };
    UnitReport {
        sweep_id: context.sweep_id.clone(),
        worker: args.worker.clone(),
        unit: unit.id,
        shard: unit.shard.clone(),
        results: cells,
        evaluations: rows * n,
        busy_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        node_fault,
        reads: Some(ProcessReads::now()),
        parts_after: 0,
    }
}

/// A unit's outcomes with each cell's daily returns and round trips (empty unless kept), and
/// the last slice's events; or one failure for every cell.
type ChainOutcome = Result<(Recorded, u64), (CellFailure, Option<NodeDataFault>)>;

struct Run<'a> {
    args: &'a ScorerArgs,
    supervisor: &'a ActorRef<SupervisorMsg>,
    context: &'a crate::actors::messages::SweepContext,
    unit: &'a WorkUnit,
    /// Whether the head was told once that the lanes' state stays on this node.
    kept_here: AtomicBool,
}

impl Run<'_> {
    async fn slices(&self, sets: Vec<ParamSet>) -> ChainOutcome {
        let chain: &SliceChain = self.unit.chain.as_deref().expect("a chained unit");
        let strategy = *find_strategy(&self.context.strategy).map_err(|e| {
            let node = &self.args.worker.node;
            (
                CellFailure::new(FailureKind::Params, format!("node {node}: {e}")),
                None,
            )
        })?;
        let dataset = Dataset::try_new(&self.context.dataset, self.context.kind)
            .map_err(|e| (CellFailure::new(FailureKind::Data, e.to_string()), None))?;
        let keep = Keep {
            days: self.context.record_days,
            trades: self.context.record_trades,
        };
        let (first, run) = self.lanes(strategy.chain, sets, keep).await?;
        let mut lanes = Some(run);
        for k in first..chain.len() {
            let began = Instant::now();
            let request = ShardRequest {
                dataset: dataset.clone(),
                shard: chain.shard(&self.unit.shard, k),
                files_digest: Some(chain.slices[k].files_digest.clone()),
            };
            let handle = get_shard(self.args, request).await?;
            let (rows, stream) = match &handle {
                ShardHandle::Loaded(data) => (data.n_rows(), None),
                ShardHandle::Stream(info, reader) => {
                    let opened = reader.open_inspected(Arc::clone(info)).await;
                    let stream = opened.map_err(|e| data_failure(&e))?;
                    (info.n_rows(), Some(stream))
                }
            };
            let last = k + 1 == chain.len();
            let rt = tokio::runtime::Handle::current();
            let n_days = chain.n_days;
            let mut run = lanes.take().expect("the lanes go from slice to slice");
            let step = tokio::task::spawn_blocking(move || -> Result<Step, CellFailure> {
                match (handle, stream) {
                    (ShardHandle::Loaded(data), _) => run.feed(&data),
                    (_, Some(mut stream)) => {
                        while let Some(batch) = rt.block_on(stream.next_batch()) {
                            run.feed_batch(&batch.map_err(|e| data_failure(&e).0)?);
                        }
                    }
                    (ShardHandle::Stream(..), None) => unreachable!("opened above"),
                }
                if last {
                    return Ok(Step::Finished(run.finish(n_days)));
                }
                if run.trades_held() > MAX_SENT_CHECKPOINT / MIN_TRADE_BYTES {
                    return Ok(Step::Saved(run, None));
                }
                let saved = run
                    .checkpoint()
                    .map_err(|e| CellFailure::new(FailureKind::Params, e.to_string()))?;
                Ok(Step::Saved(run, Some(saved)))
            })
            .await
            .map_err(|e| (crash(e), None))?
            .map_err(|failure| (failure, None))?;
            match step {
                Step::Finished(kept) => return Ok((kept, rows)),
                Step::Saved(run, saved) => {
                    self.report_slice(k, saved, rows, began);
                    lanes = Some(run);
                }
            }
        }
        unreachable!("a chain has a last slice")
    }

    /// The unit's lanes and the slice they start at: taken up from the head's checkpoint, or,
    /// when there is none or it cannot be taken up (saved by another version of gridtest, or
    /// without the round trips this sweep keeps), fresh at the history's first slice.
    async fn lanes(
        &self,
        start: StartChain,
        sets: Vec<ParamSet>,
        keep: Keep,
    ) -> Result<(usize, Box<dyn ChainRun>), (CellFailure, Option<NodeDataFault>)> {
        let chain: &SliceChain = self.unit.chain.as_deref().expect("a chained unit");
        let exec = self.context.exec.clone();
        let saved = chain.checkpoint.as_ref().map(|c| c.0.clone());
        let (unit, done) = (self.unit.id, chain.done as usize);
        tokio::task::spawn_blocking(move || {
            if let Some(bytes) = saved {
                match start(&sets, &exec, Some(&bytes), keep) {
                    Ok(run) => return Ok((done, run)),
                    Err(e) => tracing::warn!(%unit, error = %e,
                        "the unit's checkpoint cannot be taken up: its history starts over"),
                }
            }
            start(&sets, &exec, None, keep)
                .map(|run| (0, run))
                .map_err(|e| crash(format!("the unit's lanes: {e}")))
        })
        .await
        .map_err(|e| (crash(e), None))?
        .map_err(|failure| (failure, None))
    }

    /// Sends the head the lanes' state after slice `k`.
    fn report_slice(&self, k: usize, saved: Option<Vec<u8>>, rows: u64, began: Instant) {
        let saved = match saved {
            Some(saved) if saved.len() <= MAX_SENT_CHECKPOINT => saved,
            too_large => {
                if !self.kept_here.swap(true, Ordering::Relaxed) {
                    tracing::warn!(unit = %self.unit.id, bytes = too_large.map(|s| s.len()),
                        "the lanes' state is too large to send to the head: kept on this node \
                         only (fewer parameter sets per unit, or a sweep without --trades, make \
                         it smaller)");
                }
                Vec::new()
            }
        };
        let report = SliceReport {
            sweep_id: self.context.sweep_id.clone(),
            worker: self.args.worker.clone(),
            unit: self.unit.id,
            slice: u32::try_from(k).unwrap_or(u32::MAX),
            checkpoint: CheckpointBytes(saved),
            evaluations: rows * self.unit.sets.len() as u64,
            busy_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            reads: Some(ProcessReads::now()),
        };
        if self
            .supervisor
            .cast(SupervisorMsg::SliceDone(Wire(report)))
            .is_err()
        {
            tracing::debug!(worker = %self.args.worker, "the supervisor is gone; slice report dropped");
        }
    }
}

/// What one slice's run left.
enum Step {
    /// The lanes after a slice that is not the last, and their state's bytes (none when the
    /// round trips they hold make it too large to send).
    Saved(Box<dyn ChainRun>, Option<Vec<u8>>),
    /// The cells, with what the unit keeps, after the last slice.
    Finished(Recorded),
}

fn data_failure(e: &crate::data::DataError) -> (CellFailure, Option<NodeDataFault>) {
    (CellFailure::new(FailureKind::Data, e.to_string()), None)
}
