//! `Scorer`: pulls a work unit from the sweep's supervisor (on this node or another), gets the
//! shard from its node's loader, runs the engine on a blocking thread (off the async reactor),
//! and reports the cells to the supervisor by key.
//!
//! When there is no supervisor or no work, it asks again after `idle_retry`. On `Drain` it
//! finishes the unit in hand and stops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::backend::UnitBackend;
use super::shard_loader::{ShardHandle, ShardLoaderMsg};
use crate::cluster::messages::{
    Lease, LeaseRequest, NodeAgentMsg, SCOPE, SUPERVISORS, SupervisorMsg, UnitReport,
};
use crate::cluster::wire::Wire;
use crate::data::{Dataset, ShardInfo, ShardReader};
use crate::engine::ExecModel;
use crate::params::ParamSet;
use crate::strategy::{StrategyEntry, find_strategy};
use crate::sweep::{CellFailure, CellOutcome, FailureKind, WorkerId};

/// Messages of a [`Scorer`] (local).
#[derive(Debug)]
pub enum ScorerMsg {
    /// Ask for a unit and run it.
    Pull,
    /// Stop after the unit in hand.
    Drain,
}

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
}

/// State of a [`Scorer`].
pub struct ScorerState {
    args: ScorerArgs,
    draining: bool,
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
                myself.stop(Some("drained".to_owned()));
            }
            ScorerMsg::Pull if state.draining => myself.stop(Some("drained".to_owned())),
            ScorerMsg::Pull => {
                let retry = state.args.idle_retry;
                let Some(supervisor) = find_supervisor() else {
                    myself.send_after(retry, || ScorerMsg::Pull);
                    return Ok(());
                };
                let cached = state
                    .args
                    .loader
                    .call(ShardLoaderMsg::Cached, None)
                    .await
                    .ok()
                    .and_then(|r| match r {
                        CallResult::Success(c) => Some(c),
                        _ => None,
                    })
                    .unwrap_or_default();
                let request = LeaseRequest {
                    worker: state.args.worker.clone(),
                    cached,
                    gpu: state.args.backend.is_some(),
                };
                let lease = supervisor
                    .call(
                        |r| SupervisorMsg::Lease(Wire(request), r),
                        Some(state.args.rpc_timeout),
                    )
                    .await;
                match lease {
                    Ok(CallResult::Success(Wire(Some(lease)))) => {
                        let report = run_lease(&state.args, lease).await;
                        let evaluations = report.evaluations;
                        supervisor.cast(SupervisorMsg::Report(Wire(report)))?;
                        if let Some(agent) = &state.args.agent {
                            let _ = agent.cast(NodeAgentMsg::UnitDone(evaluations));
                        }
                        myself.cast(ScorerMsg::Pull)?;
                    }
                    Ok(CallResult::Success(Wire(None))) => {
                        myself.send_after(retry, || ScorerMsg::Pull);
                    }
                    Ok(_) | Err(_) => {
                        tracing::debug!(worker = %state.args.worker, "lease request failed; retrying");
                        myself.send_after(retry, || ScorerMsg::Pull);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A supervisor of the sweep, local or remote (from the process group).
fn find_supervisor() -> Option<ActorRef<SupervisorMsg>> {
    let members = ractor::pg::get_scoped_members(&SCOPE.to_owned(), &SUPERVISORS.to_owned());
    // Prefer a local supervisor (in-process runs), else any.
    let cell = members
        .iter()
        .find(|c| c.get_id().is_local())
        .or_else(|| members.first())?;
    Some(ActorRef::from(cell.clone()))
}

fn crash(what: impl std::fmt::Display) -> CellFailure {
    CellFailure::new(FailureKind::Crash, what.to_string())
}

/// Runs a leased unit and builds its report.
async fn run_lease(args: &ScorerArgs, lease: Lease) -> UnitReport {
    let started = Instant::now();
    let Lease { context, unit } = lease;
    let (results, rows) = match (
        find_strategy(&context.strategy),
        Dataset::try_new(&context.dataset, context.kind),
    ) {
        (Ok(strategy), Ok(dataset)) => {
            run_unit(
                args,
                *strategy,
                dataset,
                &unit.shard,
                unit.sets.clone(),
                context.exec,
            )
            .await
        }
        (Err(e), _) => (
            Err(CellFailure::new(
                FailureKind::Params,
                format!("node {}: {e}", args.worker.node),
            )),
            0,
        ),
        (_, Err(e)) => (Err(CellFailure::new(FailureKind::Data, e.to_string())), 0),
    };
    let results = results.map(|outcomes| {
        unit.sets
            .iter()
            .map(ParamSet::id)
            .zip(outcomes)
            .collect::<Vec<_>>()
    });
    UnitReport {
        sweep_id: context.sweep_id,
        worker: args.worker.clone(),
        unit: unit.id,
        evaluations: rows * unit.sets.len() as u64,
        busy_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        shard: unit.shard,
        results,
    }
}

/// Runs one unit; returns its outcomes (or one failure for all its cells) and the rows replayed.
async fn run_unit(
    args: &ScorerArgs,
    strategy: StrategyEntry,
    dataset: Dataset,
    shard: &crate::data::Shard,
    sets: Vec<ParamSet>,
    exec: ExecModel,
) -> (Result<Vec<CellOutcome>, CellFailure>, u64) {
    let handle = args
        .loader
        .call(|r| ShardLoaderMsg::Get(dataset, shard.clone(), r), None)
        .await;
    let handle = match handle {
        Ok(CallResult::Success(Ok(h))) => h,
        Ok(CallResult::Success(Err(e))) => {
            return (Err(CellFailure::new(FailureKind::Data, e.to_string())), 0);
        }
        Ok(_) | Err(_) => return (Err(crash("the shard loader is unavailable")), 0),
    };
    match handle {
        ShardHandle::Loaded(data) => {
            let rows = data.n_rows();
            let backend = args.backend.clone().filter(|b| b.supports(&strategy));
            let joined = tokio::task::spawn_blocking(move || match backend {
                Some(b) => b.run(&strategy, &data, &sets, &exec).or_else(|e| {
                    // The device failed the whole chunk (driver, compiler, memory): the CPU
                    // engine computes the same cells, so the unit is not lost to it.
                    tracing::warn!(slot = %b.slot(), shard = %data.shard(), error = %e,
                        "backend failed a unit; running it on the CPU engine");
                    Ok((strategy.run)(&data, &sets, &exec))
                }),
                None => Ok((strategy.run)(&data, &sets, &exec)),
            })
            .await;
            (joined.map_err(crash).and_then(|r| r), rows)
        }
        ShardHandle::Stream(info, reader) => {
            let rows = info.n_rows();
            (stream_unit(strategy, reader, info, sets, exec).await, rows)
        }
    }
}

async fn stream_unit(
    strategy: StrategyEntry,
    reader: Arc<ShardReader>,
    info: Arc<ShardInfo>,
    sets: Vec<ParamSet>,
    exec: ExecModel,
) -> Result<Vec<CellOutcome>, CellFailure> {
    let data_failure =
        |e: crate::data::DataError| CellFailure::new(FailureKind::Data, e.to_string());
    let (kind, n_days) = (info.kind, info.n_days());
    let mut stream = reader.open_inspected(info).await.map_err(data_failure)?;
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut batches = std::iter::from_fn(|| rt.block_on(stream.next_batch()));
        (strategy.run_source)(&mut batches, kind, n_days, &sets, &exec)
    })
    .await
    .map_err(crash)?
    .map_err(data_failure)
}
