//! `Scorer`: pulls a work unit, gets its shard from the node's loader, runs the engine on a
//! blocking thread (off the async reactor), and reports the cells.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::shard_loader::{ShardHandle, ShardLoaderMsg};
use super::supervisor::{SupervisorMsg, UnitReport};
use crate::data::{ShardInfo, ShardReader};
use crate::engine::ExecModel;
use crate::strategy::StrategyEntry;
use crate::sweep::{CellFailure, CellOutcome, FailureKind, WorkUnit};

/// Messages of a [`Scorer`].
#[derive(Debug)]
pub enum ScorerMsg {
    /// Ask the supervisor for a unit and run it.
    Pull,
}

impl ractor::Message for ScorerMsg {}

/// What a scorer needs (shared by all scorers of a node).
#[derive(Clone)]
pub struct ScorerArgs {
    /// Name (unique per node).
    pub name: String,
    /// Where units come from and results go.
    pub supervisor: ActorRef<SupervisorMsg>,
    /// The node's loader.
    pub loader: ActorRef<ShardLoaderMsg>,
    /// For shards streamed instead of loaded.
    pub reader: Arc<ShardReader>,
    /// The strategy.
    pub strategy: StrategyEntry,
    /// The execution model.
    pub exec: ExecModel,
}

/// A CPU scorer actor (one per core by default).
#[derive(Debug, Default)]
pub struct Scorer;

impl Actor for Scorer {
    type Msg = ScorerMsg;
    type State = ScorerArgs;
    type Arguments = ScorerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ScorerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.cast(ScorerMsg::Pull)?;
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScorerMsg::Pull => {
                let lease = state
                    .supervisor
                    .call(|r| SupervisorMsg::Lease(state.name.clone(), r), None)
                    .await;
                let Ok(CallResult::Success(Some(unit))) = lease else {
                    myself.stop(Some("no more work".to_owned()));
                    return Ok(());
                };
                let started = Instant::now();
                let (result, rows) = run_unit(state, &unit).await;
                let report = UnitReport {
                    unit: unit.id,
                    scorer: state.name.clone(),
                    evaluations: rows * unit.sets.len() as u64,
                    compute: started.elapsed(),
                    result,
                };
                state
                    .supervisor
                    .cast(SupervisorMsg::Done(Box::new(report)))?;
                myself.cast(ScorerMsg::Pull)?;
            }
        }
        Ok(())
    }
}

fn crash(what: impl std::fmt::Display) -> CellFailure {
    CellFailure::new(FailureKind::Crash, what.to_string())
}

/// Runs one unit; returns its outcomes (or one failure for all its cells) and the rows replayed.
async fn run_unit(
    state: &ScorerArgs,
    unit: &WorkUnit,
) -> (Result<Vec<CellOutcome>, CellFailure>, u64) {
    let handle = state
        .loader
        .call(|r| ShardLoaderMsg::Get(unit.shard.clone(), r), None)
        .await;
    let handle = match handle {
        Ok(CallResult::Success(Ok(h))) => h,
        Ok(CallResult::Success(Err(e))) => {
            return (Err(CellFailure::new(FailureKind::Data, e.to_string())), 0);
        }
        Ok(_) | Err(_) => return (Err(crash("the shard loader is unavailable")), 0),
    };
    let sets = unit.sets.clone();
    let exec = state.exec.clone();
    let strategy = state.strategy;
    match handle {
        ShardHandle::Loaded(data) => {
            let rows = data.n_rows();
            let joined =
                tokio::task::spawn_blocking(move || (strategy.run)(&data, &sets, &exec)).await;
            (joined.map_err(crash), rows)
        }
        ShardHandle::Stream(info) => {
            let rows = info.n_rows();
            (stream_unit(state, info, sets, exec).await, rows)
        }
    }
}

async fn stream_unit(
    state: &ScorerArgs,
    info: Arc<ShardInfo>,
    sets: Vec<crate::params::ParamSet>,
    exec: ExecModel,
) -> Result<Vec<CellOutcome>, CellFailure> {
    let data_failure =
        |e: crate::data::DataError| CellFailure::new(FailureKind::Data, e.to_string());
    let (kind, n_days) = (info.kind, info.n_days());
    let mut stream = state
        .reader
        .open_inspected(info)
        .await
        .map_err(data_failure)?;
    let strategy = state.strategy;
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut batches = std::iter::from_fn(|| rt.block_on(stream.next_batch()));
        (strategy.run_source)(&mut batches, kind, n_days, &sets, &exec)
    })
    .await
    .map_err(crash)?
    .map_err(data_failure)
}

/// How long a scorer's unit ran, for throughput reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScorerStats {
    /// Units completed.
    pub units: u64,
    /// Tick-parameter evaluations.
    pub evaluations: u64,
    /// Time spent running units.
    pub busy: Duration,
}
