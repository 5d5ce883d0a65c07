//! `Coordinator`: a head serving submissions (`--serve`). Sweeps submitted from any client node
//! are planned (so that their id, the hash of their spec, is known), queued, and run one after
//! another with this head's supervisor; every sweep is persisted under the results root. A sweep
//! submitted again while known is not run twice: its current state is returned.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::actors::SupervisorTiming;
use crate::actors::messages::{
    COORDINATORS, CoordinatorMsg, SCOPE, SUPERVISORS, Submitted, SupervisorMsg, SweepEntry,
    SweepRequest, SweepState,
};
use crate::actors::wire::Wire;
use crate::execute::{NodeSetup, Plan, RunOptions, execute, plan};
use crate::storage::Location;
use crate::sweep::{Sweep, SweepId};

/// Arguments of the [`Coordinator`].
pub struct CoordinatorArgs {
    /// This node's name.
    pub node_name: String,
    /// How sweeps run here.
    pub opts: RunOptions,
    /// Where every sweep is persisted.
    pub results: Location,
    /// Supervisor timing.
    pub timing: SupervisorTiming,
}

/// State of the [`Coordinator`].
pub struct CoordinatorState {
    args: CoordinatorArgs,
    queue: VecDeque<(SweepId, Plan, SweepRequest)>,
    running: Option<SweepId>,
    /// The running sweep's task: awaited when the coordinator stops, after the run's
    /// cancellation token has stopped the sweep cleanly.
    running_task: Option<tokio::task::JoinHandle<()>>,
    states: HashMap<SweepId, SweepState>,
    /// Every sweep known, in the order submitted: (id, strategy, submitted at, ms).
    submitted: Vec<(SweepId, String, u64)>,
    /// Stops the running sweep alone (a child of the head's token).
    running_cancel: Option<tokio_util::sync::CancellationToken>,
    /// Sweeps cancelled while they ran: they end as cancelled, not failed.
    cancelled: std::collections::HashSet<SweepId>,
}

/// How long a stopping coordinator waits for its running sweep to flush its ledger.
const STOP_GRACE: Duration = Duration::from_secs(60);

/// The coordinator actor.
#[derive(Debug, Default)]
pub struct Coordinator;

impl Coordinator {
    /// Cancels sweep `id`: a queued one leaves the queue at once; a running one is stopped
    /// cleanly (it ends as cancelled when its run returns).
    fn cancel(state: &mut CoordinatorState, id: &SweepId) -> Result<SweepState, String> {
        if let Some(at) = state.queue.iter().position(|(queued, _, _)| queued == id) {
            state.queue.remove(at);
            for (i, (queued, _, _)) in state.queue.iter().enumerate() {
                let ahead = i + usize::from(state.running.is_some());
                state
                    .states
                    .insert(queued.clone(), SweepState::Queued { ahead });
            }
            state.states.insert(id.clone(), SweepState::Cancelled);
            tracing::info!(sweep = %id, "queued sweep cancelled");
            return Ok(SweepState::Cancelled);
        }
        if state.running.as_ref() == Some(id) {
            if let Some(token) = &state.running_cancel {
                token.cancel();
            }
            state.cancelled.insert(id.clone());
            tracing::info!(sweep = %id, "running sweep cancelled: stopping it cleanly");
            return Ok(state
                .states
                .get(id)
                .cloned()
                .unwrap_or(SweepState::Cancelled));
        }
        match state.states.get(id) {
            Some(ended) => Err(format!("sweep {id} has ended already ({})", ended.label())),
            None => Err(format!("this head knows no sweep {id}")),
        }
    }

    /// Plans a submitted sweep and queues it, unless this head knows it already (a cancelled
    /// one is queued again).
    async fn submit(
        state: &mut CoordinatorState,
        request: SweepRequest,
    ) -> Result<Submitted, String> {
        let planned = match Sweep::from_description(request.sweep.clone()) {
            Ok(sweep) => plan(&sweep).await,
            Err(e) => Err(e.into()),
        };
        match planned {
            Err(e) => Err(e.to_string()),
            Ok(planned) => {
                let id = planned.sweep_id();
                // A cancelled sweep submitted again runs again (resuming its ledger).
                if let Some(known) = state
                    .states
                    .get(&id)
                    .filter(|s| !matches!(s, SweepState::Cancelled))
                {
                    Ok(Submitted {
                        sweep_id: id,
                        state: known.clone(),
                    })
                } else {
                    let ahead = state.queue.len() + usize::from(state.running.is_some());
                    let queued = SweepState::Queued { ahead };
                    state.states.insert(id.clone(), queued.clone());
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                    state.submitted.retain(|(known, _, _)| *known != id);
                    state
                        .submitted
                        .push((id.clone(), request.sweep.strategy.clone(), now));
                    state.queue.push_back((id.clone(), planned, request));
                    tracing::info!(sweep = %id, ahead, "sweep submitted");
                    Ok(Submitted {
                        sweep_id: id,
                        state: queued,
                    })
                }
            }
        }
    }

    /// Where sweep `id` stands; a running one's figures from its supervisor.
    async fn status(state: &CoordinatorState, id: &SweepId) -> Option<SweepState> {
        let mut current = state.states.get(id).cloned();
        if state.running.as_ref() == Some(id) {
            let supervisor =
                ractor::pg::get_scoped_local_members(&SCOPE.to_owned(), &SUPERVISORS.to_owned())
                    .into_iter()
                    .next()
                    .map(ActorRef::<SupervisorMsg>::from);
            if let Some(sup) = supervisor
                && let Ok(CallResult::Success(Wire((done, total, failed)))) = sup
                    .call(SupervisorMsg::Progress, Some(Duration::from_secs(2)))
                    .await
            {
                current = Some(SweepState::Running {
                    done,
                    total,
                    failed,
                });
            }
        }
        current
    }

    fn start_next(myself: &ActorRef<CoordinatorMsg>, state: &mut CoordinatorState) {
        if state.running.is_some() {
            return;
        }
        let Some((id, planned, request)) = state.queue.pop_front() else {
            return;
        };
        for (i, (queued, _, _)) in state.queue.iter().enumerate() {
            state
                .states
                .insert(queued.clone(), SweepState::Queued { ahead: i + 1 });
        }
        state.running = Some(id.clone());
        state.states.insert(
            id.clone(),
            SweepState::Running {
                done: 0,
                total: 0,
                failed: 0,
            },
        );
        let setup = NodeSetup {
            node_name: state.args.node_name.clone(),
            cluster: true,
            scorers: state.args.opts.threads,
            timing: state.args.timing,
        };
        let cancel = state.args.opts.cancel.child_token();
        state.running_cancel = Some(cancel.clone());
        let opts = crate::execute::RunOptions {
            rank_by: request.rank_by,
            results: Some(state.args.results.clone()),
            cancel,
            ..state.args.opts.clone()
        };
        let persisted_at = state.args.results.join(&format!("sweeps/{id}")).to_string();
        let me = myself.clone();
        tracing::info!(sweep = %id, strategy = %request.sweep.strategy, "running a submitted sweep");
        state.running_task = Some(tokio::spawn(async move {
            // Run in a task of its own, so that a panic ends this sweep as failed instead of
            // leaving the queue waiting for it.
            let run = tokio::spawn(async move { execute(planned, &opts, setup).await });
            let ended = match run.await.unwrap_or_else(|panic| {
                Err(crate::Error::actors(
                    "running the sweep",
                    format!("it panicked: {panic}"),
                ))
            }) {
                Ok(results) => SweepState::Done {
                    cells: results.recorded(),
                    failed: results.failed(),
                    persisted_at,
                    leaderboard: results.leaderboard().table(request.top).to_string(),
                },
                Err(e) => SweepState::Failed {
                    error: e.to_string(),
                },
            };
            let _ = me.cast(CoordinatorMsg::Finished(Wire(id), Wire(ended)));
        }));
    }
}

impl Actor for Coordinator {
    type Msg = CoordinatorMsg;
    type State = CoordinatorState;
    type Arguments = CoordinatorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: CoordinatorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        ractor::pg::join_scoped(
            SCOPE.to_owned(),
            COORDINATORS.to_owned(),
            vec![myself.get_cell()],
        );
        Ok(CoordinatorState {
            args,
            queue: VecDeque::new(),
            running: None,
            running_task: None,
            states: HashMap::new(),
            submitted: Vec::new(),
            running_cancel: None,
            cancelled: std::collections::HashSet::new(),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // The shutdown path: the run's token stops the running sweep (ledger flushed, lease
        // released); wait for it rather than dropping it mid-flush.
        state.args.opts.cancel.cancel();
        if let Some(task) = state.running_task.take()
            && tokio::time::timeout(STOP_GRACE, task).await.is_err()
        {
            tracing::warn!("the running sweep did not stop within {STOP_GRACE:?}");
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CoordinatorMsg::Submit(Wire(request), reply) => {
                let answer = Self::submit(state, *request).await;
                let _ = reply.send(Wire(answer));
                Self::start_next(&myself, state);
            }
            CoordinatorMsg::Status(Wire(id), reply) => {
                let _ = reply.send(Wire(Self::status(state, &id).await));
            }
            CoordinatorMsg::Finished(Wire(id), Wire(ended)) => {
                let ended = if state.cancelled.remove(&id) {
                    SweepState::Cancelled
                } else {
                    ended
                };
                tracing::info!(sweep = %id, state = ?std::mem::discriminant(&ended), "submitted sweep ended");
                state.states.insert(id, ended);
                state.running = None;
                state.running_task = None;
                state.running_cancel = None;
                Self::start_next(&myself, state);
            }
            CoordinatorMsg::List(reply) => {
                let entries = state
                    .submitted
                    .iter()
                    .map(|(id, strategy, at)| SweepEntry {
                        sweep_id: id.clone(),
                        strategy: strategy.clone(),
                        submitted_ms: *at,
                        state: state
                            .states
                            .get(id)
                            .cloned()
                            .unwrap_or(SweepState::Cancelled),
                    })
                    .collect();
                let _ = reply.send(Wire(entries));
            }
            CoordinatorMsg::Cancel(Wire(id), reply) => {
                let _ = reply.send(Wire(Self::cancel(state, &id)));
            }
        }
        Ok(())
    }
}
