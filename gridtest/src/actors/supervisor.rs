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

use super::ledger_writer::{LedgerWriter, LedgerWriterArgs, LedgerWriterMsg, WriterOutcome};
use crate::actors::messages::{
    AGENTS, Lease, LeaseRequest, NodeAgentMsg, SCOPE, SUPERVISORS, SupervisorMsg, SweepContext,
    UnitReport,
};
use crate::actors::wire::Wire;
use crate::persist::LedgerLog;
use crate::progress::Progress;
use crate::sweep::{CellSpool, Completion, Fleet, FleetRules, Gate, Ledger, NodeStats, Spool};

/// How long the end of a sweep waits for the ledger writer's last flush (a remote store
/// retries each write for up to `GRIDTEST_STORE_RETRY_S`).
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);

/// Below this fraction of the median per-scorer speed, a node is flagged as slow.
const SLOW_FRACTION: f64 = 0.5;

/// What the supervisor hands back when every cell is final.
#[derive(Debug)]
pub struct SupervisorOutcome {
    /// Every final cell (those resumed included), or why they could not be spooled.
    pub spool: Result<Spool, String>,
    /// Cells made final by this run (not resumed from a persisted ledger).
    pub computed: usize,
    /// From the first lease to the last result.
    pub compute_wall: Duration,
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
    /// Where every final cell is spooled (resumed cells already in it).
    pub spool: CellSpool,
    /// Timing.
    pub timing: SupervisorTiming,
    /// Where the outcome goes.
    pub done: oneshot::Sender<SupervisorOutcome>,
}

/// State of the [`Supervisor`].
pub struct SupervisorState {
    ledger: Option<Ledger>,
    fleet: Fleet,
    context: SweepContext,
    progress: Progress,
    /// Persists final cells beside this actor (never in its mailbox).
    writer: Option<ActorRef<LedgerWriterMsg>>,
    timing: SupervisorTiming,
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    /// Agent actor id (as shown by this node) → node name.
    agents: HashMap<String, String>,
    /// Cells this run made final.
    computed: usize,
    last_progress: Instant,
    /// Whether the sweep's strategy has device code (GPU scorers may take its units).
    gpu_capable: bool,
}

impl SupervisorState {
    /// Any message from a node proves it is alive.
    fn seen(&mut self, name: &str) {
        if self.fleet.seen(name, Instant::now()) {
            tracing::warn!(node = name, "node is back; its late results count once");
        }
    }

    fn lose(&mut self, name: &str, why: &str) {
        let released = self
            .ledger
            .as_mut()
            .map(|l| l.release_node(name))
            .unwrap_or_default();
        self.fleet.lost(name, released.len(), Instant::now());
        if released.is_empty() {
            tracing::info!(node = name, reason = why, "node lost (it held no units)");
        } else {
            tracing::warn!(
                node = name,
                reason = why,
                units = released.len(),
                "node lost: its units go back to the queue"
            );
            self.progress.requeued(released.len());
        }
    }

    fn flag_slow_nodes(&mut self) {
        for slow in self.fleet.flag_slow() {
            tracing::warn!(node = %slow.node, speed = format!("{:.3e}", slow.speed),
                median = format!("{:.3e}", slow.median),
                "node is slow (throttled card or noisy neighbour?)");
        }
    }

    fn log_progress(&self) {
        let Some(ledger) = &self.ledger else { return };
        let elapsed = self.fleet.compute_wall(Instant::now()).as_secs_f64();
        let nodes: Vec<String> = self
            .fleet
            .nodes()
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
            .fleet
            .gpu_slots()
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

    /// A scorer asks for work.
    fn on_lease(&mut self, request: &LeaseRequest) -> Option<Lease> {
        let now = Instant::now();
        self.seen(&request.worker.node);
        if self.fleet.gate(&request.worker.node, now) == Gate::Wait
            || !self
                .fleet
                .may_lease(&request.worker.node, request.gpu, self.gpu_capable)
        {
            return None;
        }
        let ledger = self.ledger.as_mut()?;
        let unit = if request.pending_only {
            ledger.lease_pending(&request.worker, &request.cached)
        } else {
            ledger.lease(&request.worker, &request.cached)
        }?;
        self.fleet.leased(now);
        Some(Lease {
            context: self.context.clone(),
            unit,
        })
    }

    /// A scorer reports a unit: its cells go to the ledger, the new final ones to the writer.
    fn on_report(&mut self, report: UnitReport) {
        if report.sweep_id != self.context.sweep_id {
            tracing::debug!(sweep = %report.sweep_id, "report for another sweep ignored");
            return;
        }
        self.seen(&report.worker.node);
        let UnitReport {
            worker,
            unit,
            shard,
            results,
            evaluations,
            busy_ms,
            ..
        } = report;
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let completion = match results {
            Ok(results) => ledger.report(Some(unit), &shard, results),
            Err(failure) => {
                tracing::warn!(%unit, %worker, error = %failure, "unit failed");
                ledger.fail_unit(unit, &failure)
            }
        };
        let journal = ledger.take_journal();
        self.computed += journal.len();
        if let Some(writer) = &self.writer
            && !journal.is_empty()
        {
            let _ = writer.cast(LedgerWriterMsg::Append(journal));
        }
        self.progress.set(ledger.recorded(), ledger.failed());
        let new = match completion {
            Completion::Accepted { new, .. } => new,
            Completion::Duplicate => 0,
        };
        let busy = Duration::from_millis(busy_ms);
        self.fleet
            .reported(&worker, new, evaluations, busy, Instant::now());
    }

    /// The heartbeat: nodes silent too long lose their leases; progress is logged.
    fn on_tick(&mut self) {
        for name in self.fleet.silent(Instant::now()) {
            self.lose(&name, "silent past the heartbeat deadline");
        }
        if self.last_progress.elapsed() >= self.timing.progress_every {
            self.last_progress = Instant::now();
            self.flag_slow_nodes();
            self.log_progress();
        }
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
        let written = match state.writer.take() {
            Some(writer) => match writer
                .call(LedgerWriterMsg::Finish, Some(FINISH_TIMEOUT))
                .await
            {
                Ok(CallResult::Success(outcome)) => outcome,
                _ => WriterOutcome::lost("the ledger writer did not answer"),
            },
            None => WriterOutcome::lost("the ledger writer was stopped"),
        };
        state.progress.finish();
        state.flag_slow_nodes();
        state.log_progress();
        if let (Some(_), Some(done)) = (state.ledger.take(), state.done.take()) {
            let outcome = SupervisorOutcome {
                spool: written.spool,
                computed: state.computed,
                compute_wall: state.fleet.compute_wall(Instant::now()),
                nodes: state.fleet.node_stats(),
                gpu_slots: state.fleet.gpu_slots().clone(),
                persist_failure: written.persist_failure,
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
                && state.fleet.is_alive(&name)
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
        let (writer, _) = Actor::spawn_linked(
            None,
            LedgerWriter,
            LedgerWriterArgs {
                spool: args.spool,
                log: args.log,
                every: args.timing.heartbeat / 2,
            },
            myself.get_cell(),
        )
        .await?;
        let writer = Some(writer);
        let rules = FleetRules {
            wait_for_nodes: args.wait_for_nodes,
            wait_limit: WAIT_FOR_NODES_LIMIT,
            node_timeout: args.timing.node_timeout,
            slow_fraction: SLOW_FRACTION,
        };
        Ok(SupervisorState {
            ledger: Some(args.ledger),
            fleet: Fleet::new(rules, Instant::now()),
            context: args.context,
            progress: args.progress,
            writer,
            timing: args.timing,
            done: Some(args.done),
            agents: HashMap::new(),
            computed: 0,
            last_progress: Instant::now(),
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
                let _ = reply.send(Wire(state.on_lease(&request)));
            }
            SupervisorMsg::Report(Wire(report)) => {
                state.on_report(report);
                Self::finish_if_done(&myself, state).await;
            }
            SupervisorMsg::Release(Wire(worker)) => {
                let n = state
                    .ledger
                    .as_mut()
                    .map_or(0, |l| l.release_worker(&worker).len());
                state.fleet.requeued(&worker.node, n, Instant::now());
                state.progress.requeued(n);
            }
            SupervisorMsg::ReleaseNode(node) => {
                state.lose(&node, "handed its work back");
            }
            SupervisorMsg::NodeDown(node) => {
                if state.fleet.is_alive(&node) {
                    state.lose(&node, "disconnected");
                }
            }
            SupervisorMsg::Alive(agent, Wire(status)) => {
                state.agents.insert(agent, status.node.clone());
                state.seen(&status.node);
                if state.fleet.status(
                    &status.node,
                    status.draining,
                    status.telemetry,
                    Instant::now(),
                ) {
                    let telemetry = state.fleet.nodes().get(&status.node).map(|n| &n.telemetry);
                    tracing::warn!(node = %status.node, telemetry = ?telemetry,
                        "a GPU reports thermal or power throttling");
                }
            }
            SupervisorMsg::Tick => {
                Self::ping_agents(&myself, state.timing.heartbeat);
                state.on_tick();
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
