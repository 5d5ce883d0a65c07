//! `Scorer`: pulls a work unit from the sweep's supervisor (on this node or another), gets the
//! shard from its node's loader, runs the engine on a blocking thread (off the async reactor),
//! and reports the cells to the supervisor by key.
//!
//! A scorer on a backend that wants more parameter sets per call than a unit holds (a GPU)
//! leases further pending units of the same shard and runs them in one call, reporting each
//! unit on its own. When there is no supervisor or no work, it asks again after `idle_retry`.
//! A scorer with nothing in hand asks for two units at once, the one to run and the one after
//! it; while a unit runs, it already asks for the next one (a pending unit, never a
//! speculative copy), so the round trip to the head overlaps the work instead of following it:
//! at a place in the unit's first half drawn per scorer while the head says the queue is deep
//! (scorers that started together do not ask together), just before the unit should end in
//! the sweep's tail.
//! On `Drain` it finishes the units in hand (the prefetched one included) and stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef};

mod chained;
mod lease;

use lease::{
    LeaseAnswer, Leased, Prefetch, cached_shards, fill_batch, find_supervisor, next_request_delay,
    prefetch, request_lease,
};

use super::backend::UnitBackend;
use super::lease_latency::SweepLeaseLatency;
use super::shard_loader::{LOAD_TIMEOUT, ShardHandle, ShardLoaderMsg, ShardRequest};
use crate::actors::messages::{
    MAX_MESSAGE_BYTES, NodeAgentMsg, NodeDataFault, SupervisorMsg, SweepContext, UnitReport,
};
use crate::actors::wire::Wire;
use crate::data::{DataError, Dataset, ShardInfo, ShardReader};
use crate::engine::{ExecModel, Keep, Recorded, Trade};
use crate::params::{ParamSet, ParamSetId, SetPlace};
use crate::registry::{StrategyEntry, find_strategy};
use crate::sweep::{CellFailure, CellOutcome, FailureKind, SetResult, WorkerId};

/// Messages of a [`Scorer`] (local).
#[derive(Debug)]
pub enum ScorerMsg {
    /// Ask for a unit and run it.
    Pull,
    /// Stop after the unit in hand.
    Drain,
}

// Local only, never crosses the wire (with the `cluster` feature; without it ractor implements
// `Message` for every sendable type).
#[cfg(feature = "cluster")]
impl ractor::Message for ScorerMsg {}

/// What a scorer needs.
#[derive(Clone)]
pub struct ScorerArgs {
    /// Its identity (node and slot).
    pub worker: WorkerId,
    /// The node's loader.
    pub loader: ActorRef<ShardLoaderMsg>,
    /// The node's agent, told about finished units.
    pub agent: Option<ActorRef<NodeAgentMsg>>,
    /// Timeout of a lease request.
    pub rpc_timeout: Duration,
    /// Pause before asking again when there is no work or no supervisor.
    pub idle_retry: Duration,
    /// A non-CPU engine (GPU slot); `None`: the CPU engine.
    pub backend: Option<Arc<dyn UnitBackend>>,
    /// Where the time to be granted each lease is counted, per sweep (the node's, reported
    /// to the head).
    pub lease_latency: Arc<SweepLeaseLatency>,
    /// The process-group scope its supervisors are found in.
    pub scope: String,
}

/// State of a [`Scorer`].
pub struct ScorerState {
    args: ScorerArgs,
    draining: bool,
    /// The request for the next unit, sent while the current one runs.
    next: Option<Prefetch>,
    /// The context of the last sweep it ran a unit of (further leases come without it).
    context: Option<Arc<SweepContext>>,
    /// How long its last unit (or batch) took, and its sets: the next request is sent within
    /// its first half while the queue is deep, just before the unit should end in the tail.
    last_unit: Option<(Duration, usize)>,
}

/// A CPU scorer actor (one per core by default).
#[derive(Debug, Default)]
pub struct Scorer;

impl Actor for Scorer {
    type Msg = ScorerMsg;
    type State = ScorerState;
    type Arguments = ScorerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ScorerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.cast(ScorerMsg::Pull)?;
        Ok(ScorerState {
            args,
            draining: false,
            next: None,
            context: None,
            last_unit: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScorerMsg::Drain => {
                state.draining = true;
                // A prefetched unit is a unit in hand: the queued `Pull` runs it, then stops.
                if state.next.is_none() {
                    myself.stop(Some("drained".to_owned()));
                }
            }
            ScorerMsg::Pull => pull(&myself, state).await,
        }
        Ok(())
    }
}

/// Runs the next unit (the prefetched one, or one asked for now) and reports it.
async fn pull(myself: &ActorRef<ScorerMsg>, state: &mut ScorerState) {
    let retry = state.args.idle_retry;
    let (supervisor, answer) = match state.next.take() {
        Some(next) => {
            let (supervisor, answer) = next.answer().await;
            // No pending unit was left for the prefetch: ask again at once, now
            // allowing a speculative copy.
            if matches!(answer, LeaseAnswer::NoWork) && !state.draining {
                let _ = myself.cast(ScorerMsg::Pull);
                return;
            }
            (supervisor, answer)
        }
        None if state.draining => {
            myself.stop(Some("drained".to_owned()));
            return;
        }
        None => {
            let Some(supervisor) = find_supervisor(&state.args.scope) else {
                myself.send_after(retry, || ScorerMsg::Pull);
                return;
            };
            let holds = state.context.as_ref().map(|c| c.sweep_id.clone());
            // Nothing in hand: the unit after this one comes in the same answer.
            let request = state
                .args
                .request(cached_shards(&state.args).await, false, holds, true);
            let answer = request_lease(&state.args, &supervisor, request).await;
            (supervisor, answer)
        }
    };
    let (lease, next, queue_deep) = match answer {
        LeaseAnswer::Granted(mut lease) => {
            let (next, deep) = (lease.next.take(), lease.queue_deep);
            match Leased::resolve(*lease, state.context.as_ref(), &state.args.worker) {
                Ok(leased) => (leased, next, deep),
                Err(unusable) => {
                    let wait = unusable.hand_back(&supervisor, next);
                    myself.send_after(wait, || ScorerMsg::Pull);
                    return;
                }
            }
        }
        LeaseAnswer::NoWork | LeaseAnswer::Failed if state.draining => {
            myself.stop(Some("drained".to_owned()));
            return;
        }
        LeaseAnswer::NoWork => {
            myself.send_after(retry, || ScorerMsg::Pull);
            return;
        }
        LeaseAnswer::Failed => {
            tracing::debug!(worker = %state.args.worker, "lease request failed; retrying");
            myself.send_after(retry, || ScorerMsg::Pull);
            return;
        }
    };
    state.context = Some(Arc::clone(&lease.context));
    if let Some(unit) = next {
        state.next = Some(Prefetch::granted(&supervisor, &lease, unit, queue_deep));
    } else if !state.draining {
        let delay =
            next_request_delay(queue_deep, &state.args.worker, &lease.unit, state.last_unit);
        state.next = Some(prefetch(&state.args, &supervisor, &lease, delay).await);
    }
    let started = Instant::now();
    let batch = fill_batch(&state.args, &supervisor, lease).await;
    let sets = batch.iter().map(|l| l.unit.sets.len()).sum();
    let reports = run_batch(&state.args, &supervisor, batch).await;
    state.last_unit = Some((started.elapsed(), sets));
    send_reports(&state.args, &supervisor, reports);
    // Fails only while this scorer is being stopped: nothing to pull then.
    let _ = myself.cast(ScorerMsg::Pull);
}

/// Sends each unit's report to the supervisor, and tells the node's agent.
fn send_reports(args: &ScorerArgs, supervisor: &ActorRef<SupervisorMsg>, reports: Vec<UnitReport>) {
    for report in reports {
        let evaluations = report.evaluations;
        // A report too large for a frame of the transport goes in parts.
        for part in report.into_parts(MAX_MESSAGE_BYTES) {
            // A supervisor gone meanwhile (the sweep ended through a speculative copy,
            // or the head died and will requeue) is no failure of ours.
            if supervisor.cast(SupervisorMsg::Report(Wire(part))).is_err() {
                tracing::debug!(worker = %args.worker, "the supervisor is gone; report dropped");
            }
        }
        if let Some(agent) = &args.agent {
            let _ = agent.cast(NodeAgentMsg::UnitDone(evaluations));
        }
    }
}

fn crash(what: impl std::fmt::Display) -> CellFailure {
    CellFailure::new(FailureKind::Crash, what.to_string())
}

/// Runs a batch of leases (see [`fill_batch`]): the units of the first shard in one call,
/// a trailing unit of another shard on its own; one report per unit.
async fn run_batch(
    args: &ScorerArgs,
    supervisor: &ActorRef<SupervisorMsg>,
    mut batch: Vec<Leased>,
) -> Vec<UnitReport> {
    if batch[0].unit.chain.is_some() {
        let mut reports = Vec::new();
        for lease in batch {
            reports.push(if lease.unit.chain.is_some() {
                chained::run_chained(args, supervisor, lease).await
            } else {
                run_together(args, vec![lease]).await.remove(0)
            });
        }
        return reports;
    }
    let split = batch
        .iter()
        .position(|l| {
            l.context.sweep_id != batch[0].context.sweep_id || l.unit.shard != batch[0].unit.shard
        })
        .unwrap_or(batch.len());
    let rest = batch.split_off(split);
    let mut reports = run_together(args, batch).await;
    for lease in rest {
        reports.extend(run_together(args, vec![lease]).await);
    }
    reports
}

/// Runs leased units (one or more, of one shard of one sweep) in one call and builds a report
/// per unit (busy time shared in proportion to parameter sets).
async fn run_together(args: &ScorerArgs, leases: Vec<Leased>) -> Vec<UnitReport> {
    let started = Instant::now();
    let context = Arc::clone(&leases[0].context);
    let shard = leases[0].unit.shard.clone();
    let mut places = Vec::new();
    let mut sets = Vec::new();
    for lease in &leases {
        for (place, set) in lease.unit.sets.expand(&context.grid) {
            places.push(place);
            sets.push(set);
        }
    }
    let ids: Vec<_> = sets.iter().map(ParamSet::id).collect();
    let total = sets.len().max(1);
    let files_digest = leases[0].unit.files_digest.clone();
    let (results, rows, node_fault) = match (
        find_strategy(&context.strategy),
        Dataset::try_new(&context.dataset, context.kind),
    ) {
        (Ok(strategy), Ok(dataset)) => {
            let record = Keep {
                days: context.record_days,
                trades: context.record_trades,
            };
            let exec = context.exec.clone();
            let request = ShardRequest {
                dataset,
                shard: shard.clone(),
                files_digest,
            };
            run_unit(args, *strategy, request, sets, exec, record).await
        }
        (Err(e), _) => (
            Err(CellFailure::new(
                FailureKind::Params,
                format!("node {}: {e}", args.worker.node),
            )),
            0,
            None,
        ),
        (_, Err(e)) => (
            Err(CellFailure::new(FailureKind::Data, e.to_string())),
            0,
            None,
        ),
    };
    let busy_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut outcomes = results.map(|cells| set_results(places, ids, cells).into_iter());
    leases
        .into_iter()
        .map(|Leased { context, unit }| {
            let n = unit.sets.len();
            let results = match &mut outcomes {
                Ok(all) => Ok(all.by_ref().take(n).collect()),
                Err(failure) => Err(failure.clone()),
            };
            UnitReport {
                sweep_id: context.sweep_id.clone(),
                worker: args.worker.clone(),
                unit: unit.id,
                evaluations: rows * n as u64,
                busy_ms: busy_ms * n as u64 / total as u64,
                shard: unit.shard,
                results,
                node_fault: node_fault.clone(),
                reads: Some(crate::data::ProcessReads::now()),
                parts_after: 0,
            }
        })
        .collect()
}

/// A unit's outcomes, each cell's daily returns and its round trips when recorded (empty
/// otherwise).
type UnitCells = (Vec<CellOutcome>, Vec<Vec<f64>>, Vec<Vec<Trade>>);

/// The cells of the sets at `places` (ids `ids`) as the ledger takes them.
fn set_results(
    places: Vec<SetPlace>,
    ids: Vec<ParamSetId>,
    (outcomes, days, trades): UnitCells,
) -> Vec<SetResult> {
    let days = days.into_iter().chain(std::iter::repeat_with(Vec::new));
    let trades = trades.into_iter().chain(std::iter::repeat_with(Vec::new));
    places
        .into_iter()
        .zip(ids)
        .zip(outcomes)
        .zip(days.zip(trades))
        .map(
            |(((place, param_set), outcome), (day_returns, trades))| SetResult {
                place,
                param_set,
                outcome,
                day_returns,
                trades,
            },
        )
        .collect()
}

fn unit_cells(recorded: Recorded) -> UnitCells {
    (recorded.cells, recorded.days.per_set, recorded.trades)
}

/// Runs one unit; returns its outcomes (or one failure for all its cells), the rows replayed,
/// and, when the failure is this node's view of the data rather than the data, what it saw.
/// What `record` asks for (each cell's daily returns, its round trips) only the CPU engine
/// keeps, so a unit that must record runs there.
async fn run_unit(
    args: &ScorerArgs,
    strategy: StrategyEntry,
    request: ShardRequest,
    sets: Vec<ParamSet>,
    exec: ExecModel,
    record: Keep,
) -> (Result<UnitCells, CellFailure>, u64, Option<NodeDataFault>) {
    let recording = record.days || record.trades;
    let handle = match get_shard(args, request).await {
        Ok(handle) => handle,
        Err((failure, fault)) => return (Err(failure), 0, fault),
    };
    match handle {
        ShardHandle::Loaded(data) => {
            let rows = data.n_rows();
            let backend = args
                .backend
                .clone()
                .filter(|b| !recording && exec.runs_on_devices() && b.supports(&strategy));
            let joined = tokio::task::spawn_blocking(move || match backend {
                _ if recording => Ok(unit_cells((strategy.run_recording)(
                    &data, &sets, &exec, record,
                ))),
                Some(b) => b
                    .run(&strategy, &data, &sets, &exec)
                    .map(|c| (c, Vec::new(), Vec::new()))
                    .or_else(|e| {
                        // The device failed the whole chunk (driver, compiler, memory): the CPU
                        // engine computes the same cells, so the unit is not lost to it.
                        tracing::warn!(slot = %b.slot(), shard = %data.shard(), error = %e,
                        "backend failed a unit; running it on the CPU engine");
                        Ok(((strategy.run)(&data, &sets, &exec), Vec::new(), Vec::new()))
                    }),
                None => Ok(((strategy.run)(&data, &sets, &exec), Vec::new(), Vec::new())),
            })
            .await;
            (joined.map_err(crash).and_then(|r| r), rows, None)
        }
        ShardHandle::Stream(info, reader) => {
            let rows = info.n_rows();
            (
                stream_unit(strategy, reader, info, sets, exec, record).await,
                rows,
                None,
            )
        }
    }
}

/// The shard `request` names, from the node's loader; or the failure of every cell that
/// needs it, with what this node saw when it does not see the data the sweep recorded.
async fn get_shard(
    args: &ScorerArgs,
    request: ShardRequest,
) -> Result<ShardHandle, (CellFailure, Option<NodeDataFault>)> {
    let shard = request.shard.clone();
    let handle = args
        .loader
        .call(|r| ShardLoaderMsg::Get(request, r), Some(LOAD_TIMEOUT))
        .await;
    match handle {
        Ok(CallResult::Success(Ok(h))) => Ok(h),
        Ok(CallResult::Success(Err(e))) => {
            let node = &args.worker.node;
            let failure = CellFailure::new(FailureKind::Data, format!("node {node}: {e}"));
            let fault = match &*e {
                DataError::NotAsRecorded {
                    reason, listing, ..
                } => Some(NodeDataFault {
                    reason: reason.clone(),
                    listing: listing.clone(),
                }),
                _ => None,
            };
            Err((failure, fault))
        }
        Ok(CallResult::Timeout) => Err((
            crash(format!(
                "the shard loader did not deliver {shard} within {LOAD_TIMEOUT:?}"
            )),
            None,
        )),
        Ok(_) | Err(_) => Err((crash("the shard loader is unavailable"), None)),
    }
}

async fn stream_unit(
    strategy: StrategyEntry,
    reader: Arc<ShardReader>,
    info: Arc<ShardInfo>,
    sets: Vec<ParamSet>,
    exec: ExecModel,
    record: Keep,
) -> Result<UnitCells, CellFailure> {
    let data_failure =
        |e: crate::data::DataError| CellFailure::new(FailureKind::Data, e.to_string());
    let (kind, n_days) = (info.kind, info.n_days());
    let mut stream = reader.open_inspected(info).await.map_err(data_failure)?;
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut batches = std::iter::from_fn(|| rt.block_on(stream.next_batch()));
        if record.days || record.trades {
            (strategy.run_source_recording)(&mut batches, (kind, n_days), &sets, &exec, record)
                .map(unit_cells)
        } else {
            (strategy.run_source)(&mut batches, kind, n_days, &sets, &exec)
                .map(|c| (c, Vec::new(), Vec::new()))
        }
    })
    .await
    .map_err(crash)?
    .map_err(data_failure)
}
