//! `Supervisor`: one per sweep, on the head. Leases work units from the [`Ledger`] to scorers on
//! any node that ask (pull), preferring a node that holds the unit's shard; records their cells
//! by key; persists every final cell; and watches the nodes.
//!
//! # Failure handling
//! * A node whose session drops has its leases requeued at once ([`SupervisorMsg::NodeDown`]).
//! * Every `heartbeat` the supervisor pings each node agent; a node that has not answered for
//!   `node_timeout` (a hung process, a partition) loses its leases. If it comes back, its late
//!   results are accepted by key: the first result of a cell wins, copies are counted as
//!   duplicates and ignored.
//! * Losing a node is not a failure of its cells; a cell that fails by itself is retried by the
//!   ledger a bounded number of times.
//! * When the queue is empty, idle scorers get a second copy of the longest-running units
//!   (stragglers); the first result wins.
//! * Progress (cells, failures, requeues, per-node throughput) is logged every
//!   `progress_every`; a node whose per-scorer speed falls below half the median is flagged.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use ractor::pg::GroupChangeMessage;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

use super::ledger_writer::{LedgerWriter, LedgerWriterMsg};
use crate::actors::messages::{
    AGENTS, Lease, NodeAgentMsg, SCOPE, SUPERVISORS, SupervisorMsg, SweepContext, UnitReport,
};
use crate::actors::wire::Wire;
use crate::persist::LedgerLog;

/// How long the end of a sweep waits for the ledger writer's last flush (a remote store
/// retries each write for up to `GRIDTEST_STORE_RETRY_S`).
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);
use crate::progress::Progress;
use crate::sweep::NodeStats;
use crate::sweep::{Completion, Ledger};

/// Below this fraction of the median per-scorer speed, a node is flagged as slow.
const SLOW_FRACTION: f64 = 0.5;

#[derive(Debug)]
struct NodeState {
    stats: NodeStats,
    last_seen: Instant,
    alive: bool,
    draining: bool,
    /// Latest device readings (GPU nodes).
    telemetry: Vec<String>,
}

/// What the supervisor hands back when every cell is final.
#[derive(Debug)]
pub struct SupervisorOutcome {
    /// The ledger, every cell final.
    pub ledger: Ledger,
    /// From the first lease to the last result.
    pub compute_wall: Duration,
    /// Cells made final by this run (not resumed from a persisted ledger).
    pub computed: usize,
    /// Per node.
    pub nodes: BTreeMap<String, NodeStats>,
    /// Per GPU scorer (`node/gpuD-K`).
    pub gpu_slots: BTreeMap<String, NodeStats>,
    /// Why the ledger's last cells could not be persisted, if they could not.
    pub persist_failure: Option<String>,
}

/// Timing settings of a supervisor.
#[derive(Clone, Copy, Debug)]
pub struct SupervisorTiming {
    /// Heartbeat period (and ping timeout).
    pub heartbeat: Duration,
    /// Silence after which a node loses its leases.
    pub node_timeout: Duration,
    /// Progress log period.
    pub progress_every: Duration,
}

impl Default for SupervisorTiming {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_millis(1000),
            node_timeout: Duration::from_secs(5),
            progress_every: Duration::from_secs(5),
        }
    }
}

/// How long a supervisor waits for `wait_for_nodes` nodes before it starts anyway.
const WAIT_FOR_NODES_LIMIT: Duration = Duration::from_secs(120);

/// Arguments of the [`Supervisor`].
pub struct SupervisorArgs {
    /// Hand out no work until this many nodes have asked for some (0: start at once).
    pub wait_for_nodes: usize,
    /// The units to run (with the cells already done, when resumed).
    pub ledger: Ledger,
    /// What scorers need to run the units.
    pub context: SweepContext,
    /// Progress display.
    pub progress: Progress,
    /// The persisted ledger, if any.
    pub log: Option<LedgerLog>,
    /// Timing.
    pub timing: SupervisorTiming,
    /// Where the outcome goes.
    pub done: oneshot::Sender<SupervisorOutcome>,
}

/// State of the [`Supervisor`].
pub struct SupervisorState {
    ledger: Option<Ledger>,
    context: SweepContext,
    progress: Progress,
    /// Persists final cells beside this actor (never in its mailbox).
    writer: Option<ActorRef<LedgerWriterMsg>>,
    timing: SupervisorTiming,
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    nodes: BTreeMap<String, NodeState>,
    /// Per GPU scorer (`node/gpuD-K`).
    gpu_slots: BTreeMap<String, NodeStats>,
    /// Agent actor id (as shown by this node) → node name.
    agents: HashMap<String, String>,
    first_lease: Option<Instant>,
    computed: usize,
    last_progress: Instant,
    wait_for_nodes: usize,
    asking: std::collections::BTreeSet<String>,
    started: Instant,
    /// Whether the sweep's strategy has device code (GPU scorers may take its units).
    gpu_capable: bool,
}

impl SupervisorState {
    fn node(&mut self, name: &str) -> &mut NodeState {
        self.nodes
            .entry(name.to_owned())
            .or_insert_with(|| NodeState {
                stats: NodeStats::default(),
                last_seen: Instant::now(),
                alive: true,
                draining: false,
                telemetry: Vec::new(),
            })
    }

    /// Any message from a node proves it is alive.
    fn seen(&mut self, name: &str) {
        let node = self.node(name);
        node.last_seen = Instant::now();
        if !node.alive {
            node.alive = true;
            tracing::warn!(node = name, "node is back; its late results count once");
        }
    }

    fn lose(&mut self, name: &str, why: &str) {
        let released = self
            .ledger
            .as_mut()
            .map(|l| l.release_node(name))
            .unwrap_or_default();
        let node = self.node(name);
        node.alive = false;
        node.stats.requeued += released.len() as u64;
        if !released.is_empty() {
            tracing::warn!(
                node = name,
                reason = why,
                units = released.len(),
                "node lost: its units go back to the queue"
            );
            self.progress.requeued(released.len());
        } else {
            tracing::info!(node = name, reason = why, "node lost (it held no units)");
        }
    }

    /// Flags nodes whose per-scorer speed is far below the median of the others.
    fn flag_slow_nodes(&mut self) -> Vec<String> {
        let mut speeds: Vec<f64> = self
            .nodes
            .values()
            .filter(|n| n.stats.units >= 2)
            .map(|n| n.stats.speed())
            .collect();
        if speeds.len() < 2 {
            return Vec::new();
        }
        speeds.sort_by(f64::total_cmp);
        let median = speeds[speeds.len() / 2];
        let mut slow = Vec::new();
        for (name, n) in &mut self.nodes {
            let is_slow = n.stats.units >= 2 && n.stats.speed() < SLOW_FRACTION * median;
            if is_slow && !n.stats.slow {
                tracing::warn!(node = %name, speed = format!("{:.3e}", n.stats.speed()),
                    median = format!("{median:.3e}"),
                    "node is slow (throttled card or noisy neighbour?)");
            }
            n.stats.slow = is_slow;
            if is_slow {
                slow.push(name.clone());
            }
        }
        slow
    }

    fn log_progress(&mut self) {
        let Some(ledger) = &self.ledger else { return };
        let elapsed = self
            .first_lease
            .map_or(0.0, |t| t.elapsed().as_secs_f64().max(1e-9));
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|(name, n)| {
                format!(
                    "{name}:{:.0}cells/s{}{}{}",
                    n.stats.cells as f64 / elapsed.max(1e-9),
                    if n.alive { "" } else { "(lost)" },
                    if n.stats.slow { "(slow)" } else { "" },
                    if n.telemetry.is_empty() {
                        String::new()
                    } else {
                        format!("[{}]", n.telemetry.join(", "))
                    }
                )
            })
            .collect();
        let stats = ledger.stats();
        let gpus: Vec<String> = self
            .gpu_slots
            .iter()
            .map(|(slot, s)| format!("{slot}:{:.3e}evals/s", s.speed()))
            .collect();
        tracing::info!(
            done = ledger.recorded(),
            total = ledger.expected(),
            failed = ledger.failed(),
            requeued = stats.requeued,
            speculative = stats.speculative,
            duplicates = stats.duplicate_cells,
            nodes = nodes.join(" "),
            gpu_scorers = gpus.join(" "),
            "progress"
        );
    }
}

/// The sweep supervisor actor.
#[derive(Debug, Default)]
pub struct Supervisor;

impl Supervisor {
    async fn finish_if_done(myself: &ActorRef<SupervisorMsg>, state: &mut SupervisorState) {
        if !state.ledger.as_ref().is_some_and(Ledger::is_finished) {
            return;
        }
        let persist_failure = match state.writer.take() {
            Some(writer) => match writer
                .call(LedgerWriterMsg::Finish, Some(FINISH_TIMEOUT))
                .await
            {
                Ok(CallResult::Success(failure)) => failure,
                _ => Some("the ledger writer did not answer".to_owned()),
            },
            None => None,
        };
        state.progress.finish();
        state.flag_slow_nodes();
        state.log_progress();
        if let (Some(ledger), Some(done)) = (state.ledger.take(), state.done.take()) {
            let outcome = SupervisorOutcome {
                ledger,
                compute_wall: state.first_lease.map_or(Duration::ZERO, |t| t.elapsed()),
                computed: state.computed,
                nodes: state
                    .nodes
                    .iter()
                    .map(|(k, v)| (k.clone(), v.stats.clone()))
                    .collect(),
                gpu_slots: std::mem::take(&mut state.gpu_slots),
                persist_failure,
            };
            let _ = done.send(outcome);
        }
        myself.stop(Some("sweep complete".to_owned()));
    }

    fn ping_agents(myself: &ActorRef<SupervisorMsg>, timeout: Duration) {
        for cell in ractor::pg::get_scoped_members(&SCOPE.to_owned(), &AGENTS.to_owned()) {
            let agent = ActorRef::<NodeAgentMsg>::from(cell);
            let me = myself.clone();
            tokio::spawn(async move {
                if let Ok(CallResult::Success(status)) =
                    agent.call(NodeAgentMsg::Ping, Some(timeout)).await
                {
                    let _ = me.cast(SupervisorMsg::Alive(agent.get_id().to_string(), status));
                }
            });
        }
    }

    fn agent_left(state: &mut SupervisorState, cells: &[ActorCell]) {
        for cell in cells {
            if let Some(name) = state.agents.remove(&cell.get_id().to_string())
                && state.nodes.get(&name).is_some_and(|n| n.alive)
            {
                state.lose(&name, "left the cluster");
            }
        }
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        ractor::pg::join_scoped(
            SCOPE.to_owned(),
            SUPERVISORS.to_owned(),
            vec![myself.get_cell()],
        );
        ractor::pg::monitor_scope(SCOPE.to_owned(), myself.get_cell());
        let gpu_capable = crate::registry::find_strategy(&args.context.strategy)
            .is_ok_and(|e| (e.gpu)().is_some());
        let writer = match args.log {
            Some(log) => Some(
                Actor::spawn_linked(
                    None,
                    LedgerWriter,
                    (log, args.timing.heartbeat / 2),
                    myself.get_cell(),
                )
                .await?
                .0,
            ),
            None => None,
        };
        Ok(SupervisorState {
            ledger: Some(args.ledger),
            context: args.context,
            progress: args.progress,
            writer,
            timing: args.timing,
            done: Some(args.done),
            nodes: BTreeMap::new(),
            gpu_slots: BTreeMap::new(),
            agents: HashMap::new(),
            first_lease: None,
            computed: 0,
            last_progress: Instant::now(),
            wait_for_nodes: args.wait_for_nodes,
            asking: std::collections::BTreeSet::new(),
            started: Instant::now(),
            gpu_capable,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let period = (state.timing.heartbeat / 2).max(Duration::from_millis(50));
        myself.send_interval(period, || SupervisorMsg::Tick);
        Self::finish_if_done(&myself, state).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        ractor::pg::leave_scoped(
            SCOPE.to_owned(),
            SUPERVISORS.to_owned(),
            vec![myself.get_cell()],
        );
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisorMsg::Barrier(reply) = msg {
            let _ = reply.send(0);
            return Ok(());
        }
        if let SupervisorMsg::Progress(reply) = msg {
            let p = state
                .ledger
                .as_ref()
                .map_or((0, 0, 0), |l| (l.recorded(), l.expected(), l.failed()));
            let _ = reply.send(Wire(p));
            return Ok(());
        }
        if state.ledger.is_none() {
            return Ok(()); // finished; stopping
        }
        match msg {
            SupervisorMsg::Barrier(_) | SupervisorMsg::Progress(_) => {}
            SupervisorMsg::Lease(Wire(request), reply) => {
                state.seen(&request.worker.node);
                if state.first_lease.is_none() && state.wait_for_nodes > 0 {
                    state.asking.insert(request.worker.node.clone());
                    if state.asking.len() < state.wait_for_nodes
                        && state.started.elapsed() < WAIT_FOR_NODES_LIMIT
                    {
                        let _ = reply.send(Wire(None));
                        return Ok(());
                    }
                }
                let draining = state.node(&request.worker.node).draining;
                let ledger = state.ledger.as_mut().expect("checked");
                let unit = if draining || (request.gpu && !state.gpu_capable) {
                    None
                } else if request.pending_only {
                    ledger.lease_pending(&request.worker, &request.cached)
                } else {
                    ledger.lease(&request.worker, &request.cached)
                };
                if unit.is_some() && state.first_lease.is_none() {
                    state.first_lease = Some(Instant::now());
                }
                let lease = unit.map(|unit| Lease {
                    context: state.context.clone(),
                    unit,
                });
                let _ = reply.send(Wire(lease));
            }
            SupervisorMsg::Report(Wire(report)) => {
                if report.sweep_id != state.context.sweep_id {
                    tracing::debug!(sweep = %report.sweep_id, "report for another sweep ignored");
                    return Ok(());
                }
                state.seen(&report.worker.node);
                let UnitReport {
                    worker,
                    unit,
                    shard,
                    results,
                    evaluations,
                    busy_ms,
                    ..
                } = report;
                let ledger = state.ledger.as_mut().expect("checked");
                let completion = match results {
                    Ok(results) => ledger.report(Some(unit), &shard, results),
                    Err(failure) => {
                        tracing::warn!(%unit, %worker, error = %failure, "unit failed");
                        ledger.fail_unit(unit, &failure)
                    }
                };
                let journal = ledger.take_journal();
                if let Some(writer) = &state.writer
                    && !journal.is_empty()
                {
                    let _ = writer.cast(LedgerWriterMsg::Append(journal));
                }
                let (recorded, failed) = (ledger.recorded(), ledger.failed());
                let new = match completion {
                    Completion::Accepted { new, .. } => new,
                    Completion::Duplicate => 0,
                };
                state.computed += new;
                let node = state.node(&worker.node);
                node.stats.units += 1;
                node.stats.cells += new as u64;
                node.stats.evaluations += evaluations;
                node.stats.busy += Duration::from_millis(busy_ms);
                if worker.slot.starts_with("gpu") {
                    let slot = state.gpu_slots.entry(worker.to_string()).or_default();
                    slot.units += 1;
                    slot.cells += new as u64;
                    slot.evaluations += evaluations;
                    slot.busy += Duration::from_millis(busy_ms);
                }
                state.progress.set(recorded, failed);
                Self::finish_if_done(&myself, state).await;
            }
            SupervisorMsg::Release(Wire(worker)) => {
                let ledger = state.ledger.as_mut().expect("checked");
                let n = ledger.release_worker(&worker).len();
                state.node(&worker.node).stats.requeued += n as u64;
                state.progress.requeued(n);
            }
            SupervisorMsg::ReleaseNode(node) => {
                state.lose(&node, "handed its work back");
            }
            SupervisorMsg::NodeDown(node) => {
                if state.nodes.get(&node).is_some_and(|n| n.alive) {
                    state.lose(&node, "disconnected");
                }
            }
            SupervisorMsg::Alive(agent, Wire(status)) => {
                state.agents.insert(agent, status.node.clone());
                state.seen(&status.node);
                let n = state.node(&status.node);
                n.draining = status.draining;
                let newly_throttled = status
                    .telemetry
                    .iter()
                    .any(|t| t.contains("THROTTLED") && !n.telemetry.contains(t));
                n.telemetry = status.telemetry;
                if newly_throttled {
                    tracing::warn!(node = %status.node, telemetry = ?n.telemetry,
                        "a GPU reports thermal or power throttling");
                }
            }
            SupervisorMsg::Tick => {
                Self::ping_agents(&myself, state.timing.heartbeat);
                let timeout = state.timing.node_timeout;
                let silent: Vec<String> = state
                    .nodes
                    .iter()
                    .filter(|(_, n)| n.alive && n.last_seen.elapsed() > timeout)
                    .map(|(k, _)| k.clone())
                    .collect();
                for name in silent {
                    state.lose(&name, "silent past the heartbeat deadline");
                }
                if state.last_progress.elapsed() >= state.timing.progress_every {
                    state.last_progress = Instant::now();
                    state.flag_slow_nodes();
                    state.log_progress();
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ProcessGroupChanged(change) = event {
            match change {
                GroupChangeMessage::Leave(_, group, cells) if group == AGENTS => {
                    Self::agent_left(state, &cells);
                }
                _ => {}
            }
        }
        Ok(())
    }
}
