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
//!   (stragglers); the first result wins. A scorer that asks when there is nothing at all is
//!   answered when a unit frees up or just before its call times out, not polled for.
//! * Progress (cells, failures, requeues, per-node throughput) is logged every
//!   `progress_every`; a node whose per-scorer speed falls below half the median is flagged.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ractor::pg::GroupChangeMessage;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

mod parked;
mod state;

pub use state::SupervisorState;

use super::ledger_writer::{LedgerWriter, LedgerWriterArgs, LedgerWriterMsg, WriterOutcome};
use crate::actors::messages::{AGENTS, NodeAgentMsg, SUPERVISORS, SupervisorMsg, SweepContext};
use crate::actors::wire::{EncodedOnce, Wire};
use crate::data::{ListedFile, ShardId};
use crate::persist::LedgerLog;
use crate::progress::{ProgressFeed, SweepProgress};
use crate::status::StatusLog;
use crate::sweep::output::{OrderedRender, TradesFile};
use crate::sweep::{CellSpool, Fleet, FleetRules, Ledger, ReturnsBook, RunInfo, Spool};

/// How long the end of a sweep waits for the ledger writer's last flush (a remote store
/// retries each write for up to `GRIDTEST_STORE_RETRY_S`).
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);

/// Below this fraction of the median per-scorer speed, a node is flagged as slow.
const SLOW_FRACTION: f64 = 0.5;

/// The node agents are pinged in this many slices, one slice per tenth of the tick period.
const PING_SLICES: u32 = 10;

/// The ping slice of an agent: a hash of its whole actor id (agents of different nodes often
/// have the same local pid; their node ids differ).
fn ping_slice_of(id: ractor::ActorId) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(id) % u64::from(PING_SLICES)
}

/// How often the supervisor times its own queue ([`SupervisorMsg::Probe`]).
const PROBE_PERIOD: Duration = Duration::from_millis(20);

/// Microseconds since this process first asked: a clock a message can carry.
fn monotonic_us() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let elapsed = START.get_or_init(Instant::now).elapsed();
    u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
}

/// What the supervisor hands back when every cell is final.
#[derive(Debug)]
pub struct SupervisorOutcome {
    /// What the run did, per node; its `reads` are filled in by the caller, which adds this
    /// process's reads to [`SupervisorOutcome::remote_bytes_read`].
    pub run: RunInfo,
    /// Every final cell (those resumed included), or why they could not be spooled.
    pub spool: Result<Spool, String>,
    /// The output files as far as they were written during the sweep.
    pub render: Option<OrderedRender>,
    /// From the first lease to the last result.
    pub compute_wall: Duration,
    /// Whether the sweep was cancelled before every cell was final (the ledger still holds
    /// every cell that was).
    pub cancelled: bool,
    /// Cells final when it ended, and cells in all.
    pub final_cells: (usize, usize),
    /// The sets' daily returns, when the sweep records them.
    pub returns: Option<ReturnsBook>,
    /// The cells' trades as far as written, or why they could not be (`--trades`).
    pub trades: Option<Result<TradesFile, String>>,
    /// Bytes the other processes of the sweep read from its dataset while it ran (this
    /// process counts its own).
    pub remote_bytes_read: u64,
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
    pub progress: ProgressFeed,
    /// The persisted ledger, if any.
    pub log: Option<LedgerLog>,
    /// Where every final cell is spooled (resumed cells already in it).
    pub spool: CellSpool,
    /// The output files, written as cells become final (resumed cells offered already).
    pub render: Option<OrderedRender>,
    /// Where the sets' daily returns are summed, when the sweep records them.
    pub returns: Option<ReturnsBook>,
    /// Where the cells' trades are written (`--trades`; resumed cells written already).
    pub trades: Option<TradesFile>,
    /// Timing.
    pub timing: SupervisorTiming,
    /// Where the outcome goes.
    pub done: oneshot::Sender<SupervisorOutcome>,
    /// Where node events (lost, back, slow) are told.
    pub status: StatusLog,
    /// The process-group scope it serves ([`SCOPE`](crate::actors::messages::SCOPE) for a
    /// cluster, one of its own for an in-process run).
    pub scope: String,
    /// Each shard's files as the sweep's manifest records them: what a node that sees other
    /// data is told it differs from.
    pub shard_files: HashMap<ShardId, Vec<ListedFile>>,
}

/// The sweep supervisor actor.
#[derive(Debug, Default)]
pub struct Supervisor;

impl Supervisor {
    async fn finish_if_done(myself: &ActorRef<SupervisorMsg>, state: &mut SupervisorState) {
        if state.ledger.as_ref().is_some_and(Ledger::is_finished) {
            Self::finish(myself, state, false).await;
        }
    }

    /// Ends the sweep: the writer's last flush, then the outcome; `cancelled` when cells are
    /// still open.
    async fn finish(
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        cancelled: bool,
    ) {
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
        state.parked.release_all();
        state.flag_slow_nodes();
        state.log_progress();
        if let (Some(ledger), Some(done)) = (state.ledger.take(), state.done.take()) {
            state.progress.publish(SweepProgress {
                done: ledger.recorded(),
                total: ledger.expected(),
                failed: ledger.failed(),
                requeued: state.requeued,
                slices: ledger.slices(),
                ended: true,
            });
            let outcome = SupervisorOutcome {
                run: RunInfo {
                    sweep_id: state.context.sweep_id.clone(),
                    computed: state.computed,
                    nodes: state.fleet.node_stats(),
                    gpu_slots: state.fleet.gpu_slots().clone(),
                    gpu_energy_joules: state.fleet.gpu_energy_joules(),
                    incompatible: state.fleet.incompatible_nodes(),
                    persist_failure: written.persist_failure,
                    ledger: ledger.stats(),
                    reads: crate::data::DataReads::default(),
                },
                spool: written.spool,
                render: written.render,
                compute_wall: state.fleet.compute_wall(Instant::now()),
                cancelled,
                final_cells: (ledger.recorded(), ledger.expected()),
                returns: written.returns,
                trades: written.trades,
                remote_bytes_read: state
                    .fleet
                    .bytes_read_except(crate::data::ProcessReads::now().process),
            };
            let _ = done.send(outcome);
        }
        myself.stop(Some(
            if cancelled {
                "sweep cancelled"
            } else {
                "sweep complete"
            }
            .to_owned(),
        ));
    }

    /// Pings the node agents of slice `slice` (of [`PING_SLICES`], by a hash of their actor
    /// id): one slice per timer tick, so that a thousand nodes' answers arrive spread over
    /// the heartbeat period instead of in one burst ahead of every lease request.
    fn ping_agents(state: &SupervisorState, myself: &ActorRef<SupervisorMsg>) {
        let (timeout, slice) = (state.timing.heartbeat, state.ping_slice);
        let members = ractor::pg::get_scoped_members(&state.scope, &AGENTS.to_owned());
        for cell in members
            .into_iter()
            .filter(|cell| ping_slice_of(cell.get_id()) == slice % u64::from(PING_SLICES))
        {
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
            args.scope.clone(),
            SUPERVISORS.to_owned(),
            vec![myself.get_cell()],
        );
        ractor::pg::monitor_scope(args.scope.clone(), myself.get_cell());
        let gpu_capable = crate::registry::find_strategy(&args.context.strategy)
            .is_ok_and(|e| (e.gpu)().is_some());
        let (writer, _) = Actor::spawn_linked(
            None,
            LedgerWriter,
            LedgerWriterArgs {
                spool: args.spool,
                log: args.log,
                every: args.timing.heartbeat / 2,
                render: args.render,
                returns: args.returns,
                trades: args.trades,
                progress: args.progress.clone(),
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
            context: EncodedOnce::new(args.context),
            progress: args.progress,
            requeued: 0,
            writer,
            timing: args.timing,
            done: Some(args.done),
            status: args.status,
            agents: HashMap::new(),
            computed: 0,
            last_progress: Instant::now(),
            gpu_capable,
            parked: parked::ParkedLeases::default(),
            arrivals: crate::progress::LatencyRecorder::default(),
            queue_delay: crate::progress::LatencyRecorder::default(),
            ping_slice: 0,
            scope: args.scope,
            shard_files: args.shard_files,
            data_faults: HashMap::new(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let period = (state.timing.heartbeat / 2).max(Duration::from_millis(50));
        myself.send_interval(period, || SupervisorMsg::Tick);
        myself.send_interval(period / PING_SLICES, || SupervisorMsg::PingSlice);
        myself.send_interval(PROBE_PERIOD, || SupervisorMsg::Probe(monotonic_us()));
        Self::finish_if_done(&myself, state).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        ractor::pg::demonitor_scope(state.scope.clone(), myself.get_id());
        ractor::pg::leave_scoped(
            state.scope.clone(),
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
            SupervisorMsg::Lease(Wire(request), reply) => state.on_lease(request, reply),
            SupervisorMsg::Report(Wire(report)) => {
                state.on_report(report);
                Self::finish_if_done(&myself, state).await;
                state.serve_parked_if_pending();
            }
            SupervisorMsg::SliceDone(Wire(report)) => state.on_slice(report),
            SupervisorMsg::Release(Wire(worker)) => state.release_worker(&worker),
            SupervisorMsg::Incompatible(Wire(refusal)) => state.incompatible(&refusal),
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
                let now = Instant::now();
                if let Some((first, later)) = status.lease_latency.of_sweep(&state.context.sweep_id)
                {
                    state
                        .fleet
                        .lease_latency_of(&status.node, first, later, now);
                }
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
            SupervisorMsg::Tick => state.on_tick(),
            SupervisorMsg::PingSlice => {
                state.ping_slice += 1;
                Self::ping_agents(state, &myself);
            }
            SupervisorMsg::Probe(sent_us) => {
                let waited = monotonic_us().saturating_sub(sent_us);
                state.queue_delay.record(Duration::from_micros(waited));
            }
            SupervisorMsg::Cancel(reason) => {
                tracing::warn!(reason = %reason, "sweep cancelled: flushing the ledger");
                Self::finish(&myself, state, true).await;
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
                GroupChangeMessage::Leave(scope, group, cells)
                    if scope == state.scope && group == AGENTS =>
                {
                    Self::agent_left(state, &cells);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_nodes_agents_spread_over_the_ping_slices() {
        // Each node's agent as the head sees it: the same local pid on every node, a node id
        // per session.
        let mut per_slice = [0u32; PING_SLICES as usize];
        for node_id in 0..1000 {
            let id = ractor::ActorId::Remote { node_id, pid: 7 };
            let slice = ping_slice_of(id);
            assert_eq!(slice, ping_slice_of(id), "stable");
            per_slice[usize::try_from(slice).unwrap()] += 1;
        }
        // Every slice pings a share near a tenth: no burst of the whole fleet.
        assert!(
            per_slice.iter().all(|&n| (50..=150).contains(&n)),
            "{per_slice:?}"
        );
    }
}
