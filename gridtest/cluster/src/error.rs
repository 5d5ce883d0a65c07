//! `Error`: what can go wrong running a sweep. Each variant names the file, shard, parameter
//! set or setting at fault.

use crate::data::DataError;
use crate::ingest::IngestError;
use crate::persist::PersistError;
use crate::registry::StrategyError;
use crate::storage::LocationError;
use crate::sweep::{SweepError, SweepId};
use crate::transport::TransportError;

/// gridtest's error type.
///
/// Its `Debug` form is its readable `Display` form, so that `fn main() -> Result<(),
/// gridtest::Error>` prints a readable message; [`Error::exit_code`] gives the documented exit
/// status of a sweep binary.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A dataset, shard or file problem.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A strategy lookup failed.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// The sweep is not runnable; every problem is listed.
    #[error("sweep of `{strategy}` is invalid:{}", .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    InvalidSweep {
        /// The strategy.
        strategy: String,
        /// What is wrong.
        problems: Vec<String>,
    },
    /// Settings that contradict each other or this machine (flags, environment, options).
    #[error("invalid settings:{}", .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    Config {
        /// What is wrong.
        problems: Vec<String>,
    },
    /// A dataset or results location is not usable.
    #[error(transparent)]
    Location(#[from] LocationError),
    /// Persisting or reading a sweep's record under the results root failed.
    #[error(transparent)]
    Persist(#[from] PersistError),
    /// Converting input files into a dataset failed.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// The network between nodes: listening, dialling, TLS.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// Writing results failed.
    #[error("cannot write {path}: {reason}")]
    Output {
        /// The file or folder.
        path: String,
        /// Why.
        reason: String,
    },
    /// Reading a persisted record failed.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// No sweep of that id is persisted under the results root.
    #[error("no sweep `{sweep}` under {root} (its spec.json is absent)")]
    UnknownSweep {
        /// The sweep id asked for.
        sweep: SweepId,
        /// The results root.
        root: String,
    },
    /// The sweep finished and its output was written, but some cells failed.
    #[error(
        "{failed} of {cells} cells failed (first: {first}); every cell, failed ones too, is in {out} (--allow-failed-cells exits 0 on failed cells)"
    )]
    FailedCells {
        /// Failed cells.
        failed: usize,
        /// All cells.
        cells: usize,
        /// The first failure: parameter set, shard and why.
        first: String,
        /// The output folder.
        out: String,
    },
    /// The sweep finished and its output was written locally, but the results root did not
    /// record it.
    #[error("sweep {sweep} could not be persisted ({reason}); every cell is in {out}")]
    NotPersisted {
        /// The sweep.
        sweep: SweepId,
        /// Where and why persisting failed.
        reason: String,
        /// The local output folder.
        out: String,
    },
    /// A replay did not reproduce the recorded metrics.
    #[error(
        "replay of sweep {sweep}: {differing} of {cells} cells differ from the record (first: {first})"
    )]
    ReplayMismatch {
        /// The sweep.
        sweep: SweepId,
        /// Cells compared.
        cells: usize,
        /// Cells that differ.
        differing: usize,
        /// The first difference.
        first: String,
    },
    /// The sweep was stopped (SIGTERM, SIGINT, or its cancellation token) before every cell
    /// was final. Every final cell is in the ledger when the sweep is persisted.
    #[error("sweep {sweep} interrupted with {done} of {total} cells final{}", if *.persisted {
        "; they are in the ledger under the results root: run it again to resume"
    } else {
        " (not persisted: pass --results to make sweeps resumable)"
    })]
    Interrupted {
        /// The sweep.
        sweep: SweepId,
        /// Cells final.
        done: usize,
        /// Cells in all.
        total: usize,
        /// Whether the final cells are in a persisted ledger.
        persisted: bool,
    },
    /// The sweep was stopped (SIGTERM, SIGINT, or its cancellation token) while it was being
    /// planned: nothing was computed or persisted.
    #[error("interrupted while the sweep was being planned: nothing was computed")]
    InterruptedPlanning,
    /// A submitted sweep was refused or failed on the cluster, or the head was lost.
    #[error("submission: {0}")]
    Submission(String),
    /// A signal handler could not be installed.
    #[error("cannot listen for {signal}: {source}")]
    Signal {
        /// The signal.
        signal: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The actor system failed: an actor could not start or stopped before answering (a bug or
    /// an exhausted machine).
    #[error("{what}: {reason}")]
    Actors {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        reason: String,
    },
}

impl From<SweepError> for Error {
    fn from(e: SweepError) -> Self {
        match e {
            SweepError::Invalid { strategy, problems } => Self::InvalidSweep { strategy, problems },
            SweepError::Output { path, reason } => Self::Output { path, reason },
        }
    }
}

impl Error {
    /// An actor-system failure while doing `what`.
    #[must_use]
    pub fn actors(what: &'static str, reason: impl std::fmt::Display) -> Self {
        Self::Actors {
            what,
            reason: reason.to_string(),
        }
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Exit statuses of a sweep binary (see `docs/running.md`).
pub mod exit {
    /// The sweep finished and every cell was computed (or a worker drained cleanly).
    pub const SUCCESS: u8 = 0;
    /// The sweep could not run or stopped: invalid settings or sweep, bad data layout,
    /// unreadable dataset, unwritable output, runtime failure.
    pub const FAILURE: u8 = 1;
    /// Command-line usage error (unknown flag, bad value), as `clap` reports it.
    pub const USAGE: u8 = 2;
    /// The sweep finished and its output is written, but some cells failed.
    pub const FAILED_CELLS: u8 = 3;
    /// The sweep finished and its output is written locally, but the results root did not
    /// record it.
    pub const NOT_PERSISTED: u8 = 4;
    /// A replay computed metrics that differ from the record.
    pub const REPLAY_MISMATCH: u8 = 5;
    /// The sweep was interrupted (SIGTERM or SIGINT) and stopped cleanly: its final cells are
    /// in the ledger, the sweep's lease released (128 + SIGINT, as shells report it).
    pub const INTERRUPTED: u8 = 130;

    /// Every status with what it means, in order: the table of `docs/running.md` is generated
    /// from it ([`markdown_table`]).
    pub const STATUSES: [(u8, &str); 7] = [
        (
            SUCCESS,
            "the sweep finished and every cell was computed (a worker: drained cleanly)",
        ),
        (
            FAILURE,
            "the sweep could not run: invalid sweep or settings, bad data layout, missing \
             dataset, unwritable output or results root, unreachable store, runtime failure; the \
             error is printed on stderr (`error: …`, or a JSON line beside JSON logs)",
        ),
        (
            USAGE,
            "command-line usage error (an unknown flag, a value out of range), as `clap` \
             reports it",
        ),
        (
            FAILED_CELLS,
            "the sweep finished and its output is written, but some cells failed (the first \
             one is named); `--allow-failed-cells` makes this 0",
        ),
        (
            NOT_PERSISTED,
            "the sweep finished and its output is written locally, but the results root did \
             not record it (ledger or results)",
        ),
        (
            REPLAY_MISMATCH,
            "`--replay` computed metrics that differ from the record (each difference names \
             the metric and both values)",
        ),
        (
            INTERRUPTED,
            "interrupted by SIGTERM or SIGINT and stopped cleanly (its final cells are in the \
             ledger)",
        ),
    ];

    /// [`STATUSES`] as a Markdown table.
    ///
    /// ```
    /// # extern crate gridtest_cluster as gridtest;
    /// let table = gridtest::exit::markdown_table();
    /// assert!(table.starts_with("| status | meaning |\n|---|---|\n| 0 | "));
    /// ```
    #[must_use]
    pub fn markdown_table() -> String {
        let mut table = "| status | meaning |\n|---|---|\n".to_owned();
        for (status, meaning) in STATUSES {
            table += &format!("| {status} | {meaning} |\n");
        }
        table
    }
}

impl Error {
    /// The process exit status for this error (see [`exit`]).
    ///
    /// ```
    /// # extern crate gridtest_cluster as gridtest;
    /// let e = gridtest::Error::FailedCells { failed: 1, cells: 2, first: String::new(), out: String::new() };
    /// assert_eq!(e.exit_code(), gridtest::exit::FAILED_CELLS);
    /// ```
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::FailedCells { .. } => exit::FAILED_CELLS,
            Self::NotPersisted { .. } => exit::NOT_PERSISTED,
            Self::ReplayMismatch { .. } => exit::REPLAY_MISMATCH,
            Self::Interrupted { .. } | Self::InterruptedPlanning => exit::INTERRUPTED,
            _ => exit::FAILURE,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
