//! A chained unit ([`SliceChain`](crate::sweep::SliceChain)) run by a scorer: its history's
//! slices from the one after the last the head kept to the end, each from the node's loader
//! (shared with the node's other scorers on the same slice), the lanes carried between them
//! in memory. After each slice but the last the lanes' state goes to the head, which hands it
//! to whoever takes the unit over if this node is lost; the last slice's cells make the
//! unit's report. Runs on the CPU engine.

use std::sync::Arc;
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
use crate::params::ParamSet;
use crate::registry::{ChainRun, find_strategy};
use crate::sweep::{CellFailure, CheckpointBytes, FailureKind, SetResult, SliceChain, WorkUnit};

/// The largest checkpoint sent to the head (as base64 in JSON, a third larger): a larger one is
/// kept on this node only, and the unit restarts from its first slice if the node is lost.
const MAX_SENT_CHECKPOINT: usize = MAX_MESSAGE_BYTES / 4 * 3;

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
    };
    let (cells, rows, node_fault) = match run.slices(sets).await {
        Ok((cells, days, rows)) => {
            let days = days.into_iter().chain(std::iter::repeat_with(Vec::new));
            let results = places
                .into_iter()
                .zip(ids)
                .zip(cells)
                .zip(days)
                .map(|(((place, param_set), outcome), day_returns)| SetResult {
                    place,
                    param_set,
                    outcome,
                    day_returns,
                    trades: Vec::new(),
                })
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

/// A unit's outcomes, each cell's daily returns (empty unless recorded) and the last slice's
/// events; or one failure for every cell.
type ChainOutcome = Result<
    (Vec<crate::sweep::CellOutcome>, Vec<Vec<f64>>, u64),
    (CellFailure, Option<NodeDataFault>),
>;

struct Run<'a> {
    args: &'a ScorerArgs,
    supervisor: &'a ActorRef<SupervisorMsg>,
    context: &'a crate::actors::messages::SweepContext,
    unit: &'a WorkUnit,
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
        let (exec, record) = (self.context.exec.clone(), self.context.record_days);
        let checkpoint = chain.checkpoint.as_ref().map(|c| c.0.clone());
        let mut start = Some((sets, exec, checkpoint));
        let mut lanes: Option<Box<dyn ChainRun>> = None;
        for k in chain.done as usize..chain.len() {
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
            let start_now = start.take();
            let rt = tokio::runtime::Handle::current();
            let n_days = chain.n_days;
            let step = tokio::task::spawn_blocking(move || -> Result<Step, CellFailure> {
                let mut run = match (lanes, start_now) {
                    (Some(run), _) => run,
                    (None, Some((sets, exec, saved))) => {
                        (strategy.chain)(&sets, &exec, saved.as_deref(), record)
                            .map_err(|e| crash(format!("the unit's lanes: {e}")))?
                    }
                    (None, None) => unreachable!("the lanes start with the first slice run"),
                };
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
                    let (cells, days) = run.finish(n_days);
                    return Ok(Step::Finished(cells, days.per_set));
                }
                let saved = run
                    .checkpoint()
                    .map_err(|e| CellFailure::new(FailureKind::Params, e.to_string()))?;
                Ok(Step::Saved(run, saved))
            })
            .await
            .map_err(|e| (crash(e), None))?
            .map_err(|failure| (failure, None))?;
            match step {
                Step::Finished(cells, days) => return Ok((cells, days, rows)),
                Step::Saved(run, saved) => {
                    self.report_slice(k, saved, rows, began);
                    lanes = Some(run);
                }
            }
        }
        unreachable!("a chain has a last slice")
    }

    /// Sends the head the lanes' state after slice `k`.
    fn report_slice(&self, k: usize, saved: Vec<u8>, rows: u64, began: Instant) {
        let saved = if saved.len() > MAX_SENT_CHECKPOINT {
            tracing::warn!(unit = %self.unit.id, bytes = saved.len(),
                "the lanes' state is too large to send to the head: kept on this node only \
                 (fewer parameter sets per unit make it smaller)");
            Vec::new()
        } else {
            saved
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
    /// The lanes after a slice that is not the last, and their state's bytes.
    Saved(Box<dyn ChainRun>, Vec<u8>),
    /// The cells and their daily returns after the last slice.
    Finished(Vec<crate::sweep::CellOutcome>, Vec<Vec<f64>>),
}

fn data_failure(e: &crate::data::DataError) -> (CellFailure, Option<NodeDataFault>) {
    (CellFailure::new(FailureKind::Data, e.to_string()), None)
}
