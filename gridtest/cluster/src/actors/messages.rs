//! Every message that crosses nodes, and its payloads. Variant names are the wire contract:
//! never rename one once shipped; add new variants instead.
//!
//! Payloads hold keys, parameters and results only, never shard data: every node reads its
//! shards from the dataset itself.

use ractor::RpcReplyPort;
#[cfg(feature = "cluster")]
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};

use super::wire::{EncodedOnce, Wire};
use crate::data::{Shard, ShardId};
use crate::engine::ExecModel;
use crate::metrics::RankMetric;
use crate::params::Grid;
use crate::persist::SweepSpec;
use crate::registry::CodeVersion;
use crate::strategy::DataKind;
use crate::sweep::{
    CellFailure, CheckpointBytes, DeviceTelemetry, SetResult, SweepDescription, UnitId, WorkUnit,
    WorkerId,
};

mod report_parts;
pub use report_parts::MAX_MESSAGE_BYTES;

/// Process group of sweep coordinators (heads serving submissions).
pub const COORDINATORS: &str = "coordinators";

/// The process group scope of a cluster's actors (the one every node of it syncs).
pub const SCOPE: &str = "gridtest";

/// A process-group scope of its own for one in-process run. Process groups are global to a
/// process: runs at once in one process (a service, a notebook kernel, a test binary) that
/// shared [`SCOPE`] would lease each other's units and count each other's node agents, and
/// one ending would look like the loss of the others' node.
pub(crate) fn run_scope() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{SCOPE}/run-{n}")
}
/// Process group of sweep supervisors.
pub const SUPERVISORS: &str = "supervisors";
/// Process group of node agents.
pub const AGENTS: &str = "agents";

/// What a scorer needs to run units of a sweep: sent with a scorer's first lease of the sweep
/// only (the execution model and every axis value: a few hundred bytes to many kilobytes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepContext {
    /// The sweep.
    pub sweep_id: crate::sweep::SweepId,
    /// Registered strategy name.
    pub strategy: String,
    /// Dataset root URL.
    pub dataset: String,
    /// Ticks or bars.
    pub kind: DataKind,
    /// Execution model.
    pub exec: ExecModel,
    /// The grid, from which a scorer expands the sets of a unit (its axes and constraints: a
    /// few bytes per axis value).
    pub grid: Grid,
    /// Record each cell's return per day ([`crate::engine::DayReturns`]) with its metrics.
    #[serde(default)]
    pub record_days: bool,
    /// Record each cell's round trips ([`crate::engine::Trade`]) with its metrics (`--trades`).
    #[serde(default)]
    pub record_trades: bool,
    /// The code the results must come from; a scorer running other code refuses the units.
    /// (Absent from an older head's context: refused too, since it cannot be checked.)
    #[serde(default)]
    pub code: Option<CodeVersion>,
}

impl From<&SweepSpec> for SweepContext {
    /// The context of the sweep a spec describes.
    fn from(spec: &SweepSpec) -> Self {
        Self {
            sweep_id: spec.id(),
            strategy: spec.strategy.clone(),
            dataset: spec.dataset.clone(),
            kind: spec.kind,
            exec: spec.exec.clone(),
            // Units of a grid that keeps a list of positions list their sets: the list stays
            // out of every lease.
            grid: spec.grid.without_kept(),
            record_days: false,
            record_trades: false,
            code: Some(spec.code()),
        }
    }
}

/// A scorer asks for work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaseRequest {
    /// Who asks (a GPU scorer gets units only of strategies with device code).
    pub worker: WorkerId,
    /// Shards its node holds in memory (the supervisor prefers those).
    pub cached: Vec<ShardId>,
    /// Only a pending unit, no speculative copy (a GPU scorer adding units to a batch, or a
    /// scorer asking for its next unit while one runs).
    #[serde(default)]
    pub pending_only: bool,
    /// The sweep whose context the scorer already holds: a lease of that sweep comes without it.
    #[serde(default)]
    pub holds_context: Option<crate::sweep::SweepId>,
    /// Lease a second (pending) unit in the same answer, the one to run next (granted while
    /// more units wait than are out, not in the sweep's tail): a scorer with
    /// nothing in hand asks so, instead of asking again as soon as its first unit starts (a
    /// thousand scorers starting a sweep would otherwise all ask twice at once). A head that
    /// does not know the field grants one unit, and the scorer asks for the next as before.
    #[serde(default)]
    pub with_next: bool,
    /// The scorer's process's bytes read from datasets when it asked (the head counts what a
    /// sweep read from these readings; `None` from an older scorer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::data::ProcessReads>,
    /// When the scorer sent it, microseconds since the Unix epoch by the scorer's clock (0:
    /// not stamped). The head's arrival latency is measured from it, which means something
    /// only where the two clocks agree (one machine: the fleet benchmark).
    #[serde(default)]
    pub sent_unix_us: u64,
}

impl LeaseRequest {
    /// Stamps the request as sent now, with the process's reads so far.
    pub fn stamp(&mut self) {
        self.reads = Some(crate::data::ProcessReads::now());
        self.sent_unix_us = unix_us();
    }

    /// How long ago it was sent, by this machine's clock (`None` if not stamped, or stamped
    /// ahead of this clock).
    #[must_use]
    pub fn in_flight(&self) -> Option<std::time::Duration> {
        let sent = (self.sent_unix_us > 0).then_some(self.sent_unix_us)?;
        unix_us()
            .checked_sub(sent)
            .map(std::time::Duration::from_micros)
    }
}

fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A unit leased to a scorer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// The sweep it belongs to.
    pub sweep_id: crate::sweep::SweepId,
    /// The sweep's context, unless the request said the scorer holds it (encoded once per
    /// sweep by the head).
    pub context: Option<EncodedOnce<SweepContext>>,
    /// The unit.
    pub unit: WorkUnit,
    /// The unit to run after it (same sweep, leased to the same scorer), when the request
    /// asked for one ([`LeaseRequest::with_next`]) and a pending unit was left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<WorkUnit>,
    /// More units waited than were out when it was granted: the scorer may send its next
    /// request anywhere in the first half of the unit, spread from the other scorers'. In the
    /// sweep's tail (or from a head that does not say) it asks just before the unit should
    /// end, so that the scorers that will be free first get the last units.
    #[serde(default)]
    pub queue_deep: bool,
    /// How long the supervisor held the request for want of a unit (microseconds): waiting
    /// for work, not lease latency.
    #[serde(default)]
    pub held_us: u64,
}

/// A scorer refuses a sweep whose code differs from its node's: its lease goes back, and
/// its node takes no more units of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Incompatible {
    /// The sweep.
    pub sweep_id: crate::sweep::SweepId,
    /// The scorer that refused.
    pub worker: WorkerId,
    /// What differs (every version, named).
    pub reason: String,
}

/// A scorer's report on a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnitReport {
    /// The sweep.
    pub sweep_id: crate::sweep::SweepId,
    /// Who ran it.
    pub worker: WorkerId,
    /// The unit as leased.
    pub unit: UnitId,
    /// Its shard.
    pub shard: Shard,
    /// One outcome per parameter set, or one failure for the whole unit.
    pub results: Result<Vec<SetResult>, CellFailure>,
    /// Tick-parameter evaluations it took.
    pub evaluations: u64,
    /// Milliseconds it took, getting the shard included.
    pub busy_ms: u64,
    /// Set when the unit failed because this node does not see the data the sweep recorded
    /// for its shard (`results` then holds the same failure, for a head that does not know
    /// the field): the head takes the unit back without counting an attempt and gives the
    /// shard to other nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_fault: Option<NodeDataFault>,
    /// The scorer's process's bytes read from datasets after the unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::data::ProcessReads>,
    /// Further messages that carry the rest of this unit's cells (a report too large for one
    /// frame of the transport is sent in parts, see [`UnitReport::into_parts`]); 0: the last.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parts_after: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A scorer's report on one slice of a chained unit (see [`crate::sweep::SliceChain`]): the
/// lanes' state after it, which the head keeps so that the unit resumes there if this node is
/// lost. The unit's last slice is reported with its cells ([`UnitReport`]) instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SliceReport {
    /// The sweep.
    pub sweep_id: crate::sweep::SweepId,
    /// Who ran it.
    pub worker: WorkerId,
    /// The unit as leased.
    pub unit: UnitId,
    /// The slice done (its index in the unit's chain).
    pub slice: u32,
    /// The lanes' state after it; empty when too large to send (the work is counted, and a
    /// lost holder's unit starts again from the last checkpoint the head has).
    pub checkpoint: CheckpointBytes,
    /// Tick-parameter evaluations it took.
    pub evaluations: u64,
    /// Milliseconds it took, getting the slice included.
    pub busy_ms: u64,
    /// The scorer's process's bytes read from datasets after the slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::data::ProcessReads>,
}

/// A node that does not see the files the sweep's manifest recorded for a shard, or cannot
/// list them (see [`crate::data::DataError::NotAsRecorded`]): a fault of the node, not of the
/// cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeDataFault {
    /// What the node found, in its words.
    pub reason: String,
    /// The shard's files as the node lists them (empty when its listing failed), for the head
    /// to name the files that differ from its manifest.
    pub listing: Vec<crate::data::ListedFile>,
}

/// A node's answer to a heartbeat.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// Node name.
    pub node: String,
    /// CPU cores.
    pub cores: u32,
    /// Memory, bytes.
    pub memory_bytes: u64,
    /// Scorers running.
    pub scorers: u32,
    /// Whether it is draining (SIGTERM): it takes no new work.
    pub draining: bool,
    /// Units it completed.
    pub units: u64,
    /// Evaluations it completed.
    pub evaluations: u64,
    /// Backend slots it runs besides its CPU scorers (GPU scorers).
    #[serde(default)]
    pub backends: Vec<String>,
    /// Device readings of its backends (GPU clock, temperature, throttling).
    #[serde(default)]
    pub telemetry: Vec<DeviceTelemetry>,
    /// How long its scorers waited for their leases in the sweep they last leased from (a
    /// sweep's head takes only its own sweep's).
    #[serde(default)]
    pub lease_latency: crate::actors::LeaseLatencySnapshot,
}

/// Messages of a sweep supervisor (reachable from every node).
#[cfg_attr(feature = "cluster", derive(RactorClusterMessage))]
pub enum SupervisorMsg {
    /// A scorer asks for a unit; `None`: nothing to do now.
    #[cfg_attr(feature = "cluster", rpc)]
    Lease(Wire<LeaseRequest>, RpcReplyPort<Wire<Option<Lease>>>),
    /// A scorer reports a unit.
    Report(Wire<UnitReport>),
    /// A scorer reports a slice of a chained unit.
    SliceDone(Wire<SliceReport>),
    /// A worker hands its lease back (its scorer stopped).
    Release(Wire<WorkerId>),
    /// A scorer's node runs other code than the sweep needs.
    Incompatible(Wire<Incompatible>),
    /// A node hands back everything it holds (drain grace over).
    ReleaseNode(String),
    /// Timer (local).
    Tick,
    /// Timer (local): ping the next slice of node agents.
    PingSlice,
    /// A node agent (actor id as seen here) answered a heartbeat (local, from a ping task).
    Alive(String, Wire<NodeStatus>),
    /// A node's session dropped (local, from node events).
    NodeDown(String),
    /// Answers once every message sent before it on the same session has been handled (a
    /// draining worker calls it before exiting so that its last reports are not lost).
    #[cfg_attr(feature = "cluster", rpc)]
    Barrier(RpcReplyPort<u64>),
    /// Cells done, total and failed so far.
    #[cfg_attr(feature = "cluster", rpc)]
    Progress(RpcReplyPort<Wire<(usize, usize, usize)>>),
    /// Stop the sweep now (local, from the run's cancellation token): no more leases, the
    /// ledger flushed, the outcome sent as cancelled. The reason is logged.
    Cancel(String),
    /// Times the supervisor's own queue (local timer): sent stamped with this process's
    /// monotonic clock in microseconds; handled, the difference is how long a message waited
    /// in the mailbox behind the others.
    Probe(u64),
}

/// A sweep submitted to a running head: its description (everything but the strategy's code,
/// which every node has registered under its name) and how to report it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRequest {
    /// The sweep.
    pub sweep: SweepDescription,
    /// Leaderboard metric.
    pub rank_by: RankMetric,
    /// Leaderboard rows to report back.
    pub top: usize,
}

/// Where a submitted sweep stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum SweepState {
    /// Waiting behind `ahead` sweeps.
    Queued {
        /// Sweeps before it.
        ahead: usize,
    },
    /// Running.
    Running {
        /// Cells final.
        done: usize,
        /// Cells in all.
        total: usize,
        /// Cells failed.
        failed: usize,
    },
    /// Cancelled (`gridtest cancel`): taken out of the queue, or stopped cleanly while it ran
    /// (its ledger flushed: submitted again, it resumes).
    Cancelled,
    /// Complete and persisted.
    Done {
        /// Cells.
        cells: usize,
        /// Failed cells.
        failed: usize,
        /// Where it is persisted.
        persisted_at: String,
        /// The top of the leaderboard, as printed by the head.
        leaderboard: String,
    },
    /// Could not run.
    Failed {
        /// Why.
        error: String,
    },
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    /// The sweep id (hash of its spec).
    pub sweep_id: crate::sweep::SweepId,
    /// Where it stands (a sweep already known keeps its state: it is not run twice).
    pub state: SweepState,
}

impl SweepState {
    /// One word for the state: queued, running, cancelled, done or failed.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Queued { .. } => "queued",
            Self::Running { .. } => "running",
            Self::Cancelled => "cancelled",
            Self::Done { .. } => "done",
            Self::Failed { .. } => "failed",
        }
    }
}

/// Messages of a head's sweep coordinator (`--serve`).
#[cfg_attr(feature = "cluster", derive(RactorClusterMessage))]
pub enum CoordinatorMsg {
    /// Queue a sweep; `Err` says why it cannot run.
    #[cfg_attr(feature = "cluster", rpc)]
    Submit(
        Wire<Box<SweepRequest>>,
        RpcReplyPort<Wire<Result<Submitted, String>>>,
    ),
    /// Where a sweep stands (`None`: unknown id).
    #[cfg_attr(feature = "cluster", rpc)]
    Status(
        Wire<crate::sweep::SweepId>,
        RpcReplyPort<Wire<Option<SweepState>>>,
    ),
    /// A sweep ended (local).
    Finished(Wire<crate::sweep::SweepId>, Wire<SweepState>),
    /// Every sweep this head knows, in the order submitted.
    #[cfg_attr(feature = "cluster", rpc)]
    List(RpcReplyPort<Wire<Vec<SweepEntry>>>),
    /// Cancel a queued or running sweep: the state it leaves (`Err`: unknown, or ended).
    #[cfg_attr(feature = "cluster", rpc)]
    Cancel(
        Wire<crate::sweep::SweepId>,
        RpcReplyPort<Wire<Result<SweepState, String>>>,
    ),
}

/// A sweep as `gridtest list` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepEntry {
    /// The sweep id.
    pub sweep_id: crate::sweep::SweepId,
    /// Its strategy.
    pub strategy: String,
    /// When it was submitted, ms since the Unix epoch.
    pub submitted_ms: u64,
    /// Where it stands.
    pub state: SweepState,
}

/// Messages of a node agent (one per node).
#[cfg_attr(feature = "cluster", derive(RactorClusterMessage))]
pub enum NodeAgentMsg {
    /// Heartbeat: answers the node's status.
    #[cfg_attr(feature = "cluster", rpc)]
    Ping(RpcReplyPort<Wire<NodeStatus>>),
    /// A local scorer finished a unit of this many evaluations (local).
    UnitDone(u64),
    /// Stop taking work and stop once the current units are done (SIGTERM).
    Drain,
}
