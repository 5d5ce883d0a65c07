//! What a sweep leaves under its results root (local path or object store):
//!
//! ```text
//! ROOT/sweeps/<sweep-id>/spec.json          what was run (the id is a hash of it)
//! ROOT/sweeps/<sweep-id>/ledger/*.jsonl     every final cell, appended as the sweep runs
//! ROOT/sweeps/<sweep-id>/lock               the lease of the run in progress (see SweepLock)
//! ```
//!
//! A restarted head computes the same sweep id from the same spec, reads the ledger back and
//! recomputes only the cells that are not in it.

mod ledger_log;
mod probe;
mod spec;
mod sweep_lock;

pub use ledger_log::{LedgerLog, LogRecord};
pub use probe::probe_root;
pub use spec::{SweepSpec, sweep_id};
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
    /// The results root does not accept writes (checked before a sweep relies on it).
    #[error("cannot write {root}: the results root does not accept writes: {reason}")]
    Unwritable {
        /// The results root.
        root: String,
        /// Why.
        reason: String,
    },
}
