//! The actors of a sweep (ractor). In-process mode runs all of them in one process; across a
//! cluster the supervisor lives on the head and every node runs its own agent, loader and
//! scorers:
//!
//! ```text
//! Supervisor (head)          leases units from the Ledger, records cells by key, heartbeats
//! └─ LedgerWriter            spools final cells, writes ledger segments and chain checkpoints
//! NodeAgent (each node)      answers heartbeats, spawns and restarts its scorers, drains
//!   ├─ Scorer cpu-0          pull unit → shard or slice from the loader → engine (blocking thread)
//!   └─ Scorer cpu-1 … and GPU slots
//! ShardLoader (each node)    loads each shard or slice once, shares it by Arc (LRU byte budget)
//! ```
//!
//! The `Coordinator` of a serving head (`cluster::coordinator`) starts a supervisor per
//! submitted sweep.
//!
//! Actors own their state and talk only by messages; CPU work runs off the async reactor.

mod backend;
mod lease_latency;
mod ledger_writer;
pub mod messages;
mod node_agent;
mod scorer;
mod shard_loader;
mod supervisor;
pub mod wire;

pub use crate::sweep::NodeStats;
pub use backend::{
    BACKEND_PROVIDERS, BackendProvider, BackendSettings, UnitBackend, backend_slots,
    required_backend_slots,
};
pub use lease_latency::{LeaseLatencySnapshot, SweepLeaseLatency};
pub use ledger_writer::{LedgerWriter, LedgerWriterMsg, LedgerWriterState};
pub use node_agent::{NodeAgent, NodeAgentArgs, NodeAgentState};
pub use scorer::{Scorer, ScorerArgs, ScorerMsg, ScorerState};
pub use shard_loader::{
    CACHED_TIMEOUT, LOAD_TIMEOUT, LoaderStats, ShardHandle, ShardLoader, ShardLoaderArgs,
    ShardLoaderMsg, ShardLoaderState, ShardRequest, SharedDataError,
};
pub use supervisor::{
    Supervisor, SupervisorArgs, SupervisorOutcome, SupervisorState, SupervisorTiming,
};
