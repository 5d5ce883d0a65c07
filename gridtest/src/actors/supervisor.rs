//! `Supervisor`: one per sweep. Spawns the scorers (linked), leases them work units from the
//! [`Ledger`], records their cells by key, shows progress, and hands the finished ledger back.
//!
//! A scorer that dies has its leased units put back in the queue and is replaced (up to a
//! bounded number of restarts).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use ractor::{
    Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent,
};
use tokio::sync::oneshot;

use super::scorer::{Scorer, ScorerArgs, ScorerStats};
use crate::progress::Progress;
use crate::sweep::{CellFailure, CellOutcome, Completion, Ledger, UnitId, WorkUnit};

/// Restarts allowed per scorer slot before the supervisor gives up on replacing it.
const MAX_RESTARTS_PER_SCORER: u32 = 3;

/// A scorer's report on one unit.
#[derive(Debug)]
pub struct UnitReport {
    /// The unit.
    pub unit: UnitId,
    /// Who ran it.
    pub scorer: String,
    /// Tick-parameter evaluations it took.
    pub evaluations: u64,
    /// Wall time it took, including getting the shard.
    pub compute: Duration,
    /// One outcome per parameter set, or one failure for all.
    pub result: Result<Vec<CellOutcome>, CellFailure>,
}

/// Messages of the [`Supervisor`].
pub enum SupervisorMsg {
    /// A scorer asks for work; `None` means the sweep has no more.
    Lease(String, RpcReplyPort<Option<WorkUnit>>),
    /// A scorer reports a unit.
    Done(Box<UnitReport>),
}

impl ractor::Message for SupervisorMsg {}

/// What the supervisor hands back when every unit is complete.
#[derive(Debug)]
pub struct SupervisorOutcome {
    /// The ledger, every cell final.
    pub ledger: Ledger,
    /// From the first lease to the last result.
    pub compute_wall: Duration,
    /// Per scorer.
    pub scorers: BTreeMap<String, ScorerStats>,
}

/// Arguments of the [`Supervisor`].
pub struct SupervisorArgs {
    /// The units to run.
    pub ledger: Ledger,
    /// Scorers to spawn.
    pub scorers: usize,
    /// Template for the scorers' arguments (`name` and `supervisor` are filled in).
    pub scorer_template: ScorerTemplate,
    /// Progress display.
    pub progress: Progress,
    /// Where the outcome goes.
    pub done: oneshot::Sender<SupervisorOutcome>,
}

/// The parts of [`ScorerArgs`] shared by every scorer.
#[derive(Clone)]
pub struct ScorerTemplate {
    /// The node's loader.
    pub loader: ActorRef<super::shard_loader::ShardLoaderMsg>,
    /// The reader, for streamed shards.
    pub reader: std::sync::Arc<crate::data::ShardReader>,
    /// The strategy.
    pub strategy: crate::strategy::StrategyEntry,
    /// The execution model.
    pub exec: crate::engine::ExecModel,
}

/// State of the [`Supervisor`].
pub struct SupervisorState {
    ledger: Option<Ledger>,
    progress: Progress,
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    template: ScorerTemplate,
    names: HashMap<ActorId, String>,
    restarts: HashMap<String, u32>,
    first_lease: Option<Instant>,
    scorers: BTreeMap<String, ScorerStats>,
    initial_scorers: usize,
}

/// The sweep supervisor actor.
#[derive(Debug, Default)]
pub struct Supervisor;

impl Supervisor {
    async fn spawn_scorer(
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        name: String,
    ) -> Result<(), ActorProcessingErr> {
        let t = state.template.clone();
        let args = ScorerArgs {
            name: name.clone(),
            supervisor: myself.clone(),
            loader: t.loader,
            reader: t.reader,
            strategy: t.strategy,
            exec: t.exec,
        };
        let (scorer, _) = Actor::spawn_linked(None, Scorer, args, myself.get_cell()).await?;
        state.names.insert(scorer.get_id(), name);
        Ok(())
    }

    fn finish_if_done(myself: &ActorRef<SupervisorMsg>, state: &mut SupervisorState) {
        if !state.ledger.as_ref().is_some_and(Ledger::is_finished) {
            return;
        }
        state.progress.finish();
        if let (Some(ledger), Some(done)) = (state.ledger.take(), state.done.take()) {
            let outcome = SupervisorOutcome {
                ledger,
                compute_wall: state.first_lease.map_or(Duration::ZERO, |t| t.elapsed()),
                scorers: std::mem::take(&mut state.scorers),
            };
            let _ = done.send(outcome);
        }
        myself.stop_children(None);
        myself.stop(Some("sweep complete".to_owned()));
    }

    fn lost(state: &mut SupervisorState, cell: &ActorCell, why: &str) -> Option<String> {
        let name = state.names.remove(&cell.get_id())?;
        if let Some(ledger) = state.ledger.as_mut() {
            let released = ledger.release(&name);
            if !released.is_empty() {
                tracing::warn!(scorer = %name, units = released.len(), reason = why,
                    "scorer lost: its units go back to the queue");
                state.progress.requeued(released.len());
            }
        }
        Some(name)
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let state = SupervisorState {
            ledger: Some(args.ledger),
            progress: args.progress,
            done: Some(args.done),
            template: args.scorer_template,
            names: HashMap::new(),
            restarts: HashMap::new(),
            first_lease: None,
            scorers: BTreeMap::new(),
            initial_scorers: args.scorers.max(1),
        };
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        for i in 0..state.initial_scorers {
            Self::spawn_scorer(&myself, state, format!("scorer-{i}")).await?;
        }
        Self::finish_if_done(&myself, state);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Lease(scorer, reply) => {
                let unit = state.ledger.as_mut().and_then(|l| l.lease(&scorer));
                if unit.is_some() && state.first_lease.is_none() {
                    state.first_lease = Some(Instant::now());
                }
                let _ = reply.send(unit);
            }
            SupervisorMsg::Done(report) => {
                let report = *report;
                let Some(ledger) = state.ledger.as_mut() else {
                    return Ok(());
                };
                let completion = match report.result {
                    Ok(outcomes) => ledger.complete(report.unit, outcomes),
                    Err(failure) => {
                        tracing::warn!(unit = %report.unit, scorer = %report.scorer,
                            error = %failure, "unit failed");
                        ledger.fail_unit(report.unit, &failure)
                    }
                };
                if let Completion::Accepted(new) = completion {
                    let stats = state.scorers.entry(report.scorer).or_default();
                    stats.units += 1;
                    stats.evaluations += report.evaluations;
                    stats.busy += report.compute;
                    state.progress.set(ledger.recorded(), ledger.failed(), new);
                }
                Self::finish_if_done(&myself, state);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let why = err.to_string();
                if let Some(name) = Self::lost(state, &cell, &why) {
                    let restarts = state.restarts.entry(name.clone()).or_default();
                    *restarts += 1;
                    if *restarts <= MAX_RESTARTS_PER_SCORER && state.ledger.is_some() {
                        tracing::warn!(scorer = %name, error = %why, "scorer failed; restarting it");
                        Self::spawn_scorer(&myself, state, name).await?;
                    } else {
                        tracing::error!(scorer = %name, error = %why, "scorer failed too often");
                    }
                }
                if state.names.is_empty() && state.ledger.is_some() {
                    return Err(From::from(
                        "every scorer has failed; the sweep cannot finish",
                    ));
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                let _ = Self::lost(state, &cell, reason.as_deref().unwrap_or("stopped"));
            }
            _ => {}
        }
        Ok(())
    }
}
