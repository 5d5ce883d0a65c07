//! The actors of a sweep on one node (ractor). In-process mode runs all of them in one process:
//!
//! ```text
//! run ─┬─ ShardLoader            loads each shard once, shares it by Arc (LRU byte budget)
//!      └─ Supervisor             leases units from the Ledger, records cells by key
//!           ├─ Scorer scorer-0   pull unit → get shard → engine on a blocking thread → report
//!           ├─ Scorer scorer-1
//!           └─ …                 (linked: a dead scorer's units are requeued, it is replaced)
//! ```
//!
//! Actors own their state and talk only by messages; CPU work runs off the async reactor.

mod scorer;
mod shard_loader;
mod supervisor;

pub use scorer::{Scorer, ScorerArgs, ScorerMsg, ScorerStats};
pub use shard_loader::{
    LoaderStats, ShardHandle, ShardLoader, ShardLoaderArgs, ShardLoaderMsg, ShardLoaderState,
    SharedDataError,
};
pub use supervisor::{
    ScorerTemplate, Supervisor, SupervisorArgs, SupervisorMsg, SupervisorOutcome, SupervisorState,
    UnitReport,
};
