//! What a sweep leaves under its results root (local path or object store):
//!
//! ```text
//! ROOT/sweeps/<sweep-id>/spec.json          what was run (the id is a hash of it)
//! ROOT/sweeps/<sweep-id>/ledger/*.jsonl     every final cell, appended as the sweep runs
//! ROOT/sweeps/<sweep-id>/lock               the lease of the run in progress (see SweepLock)
//! ROOT/sweeps/<sweep-id>/chains/*.bin       the last checkpoint of each history read by slices
//! ```
//!
//! A restarted head computes the same sweep id from the same spec, reads the ledger back and
//! recomputes only the cells that are not in it, resuming histories read by slices after the
//! last slice saved.

mod chain_log;
mod ledger_log;
mod probe;
mod spec;
mod sweep_lock;

pub use chain_log::{ChainLog, SavedChains};
pub use ledger_log::{LedgerLog, LogRecord, RecordedCell};
pub use probe::probe_root;
pub use spec::{FileManifest, ShardFiles, SweepSpec, sweep_id};
pub use sweep_lock::{LEASE_TTL, LeaseHolder, SweepLock};

/// Errors of persistence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistError {
    /// The results root is not usable.
    #[error(transparent)]
    Location(#[from] crate::storage::LocationError),
    /// The store failed.
    #[error("results store at {url}: {source}")]
    Store {
        /// The object.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A ledger file does not parse.
    #[error("{url}, line {line}: {reason}")]
    Corrupt {
        /// The object.
        url: String,
        /// Line (1-based).
        line: usize,
        /// Why.
        reason: String,
    },
    /// A sweep's lease expires further ahead than any holder writes it (its TTL and a minute
    /// of clock skew): a clock far ahead, or a lease left by a run that crashed on another host.
    /// Waiting for it could take forever, so the run stops and says how to clear it.
    #[error(
        "sweep lease {url} is held by node {node} on host {host} (pid {pid}) until {expires}, \
         more than {ttl_s} s ahead: that host's clock is ahead, or a run there crashed and left \
         it. If no run of this sweep is alive, delete {url} and start again"
    )]
    LeaseFromTheFuture {
        /// The lease object.
        url: String,
        /// Its holder's node name.
        node: String,
        /// Its holder's host.
        host: String,
        /// Its holder's process id.
        pid: u32,
        /// Its expiry (RFC 3339).
        expires: String,
        /// The lease's time to live, seconds.
        ttl_s: u64,
    },
    /// The results root does not accept writes (checked before a sweep relies on it).
    #[error("cannot write {root}: the results root does not accept writes: {reason}")]
    Unwritable {
        /// The results root.
        root: String,
        /// Why.
        reason: String,
    },
}
