//! # gridtest-sweep
//!
//! The layers of [gridtest](https://docs.rs/gridtest) that treat a sweep as data, above
//! `gridtest-core` and below the actors: no actors, no network between nodes, no command line
//! and no printing. Users depend on `gridtest`, which re-exports these modules under the same
//! paths (`gridtest::sweep`, `gridtest::persist`, …).
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`sweep`] | the description, work units, ledger, results, ranking, output files and report (`SweepError`) |
//! | [`ingest`] | CSV or Parquet files into the strict layout (`IngestError`) |
//! | [`persist`] | what a sweep leaves under its results root: spec, ledger log, lease, chains (`PersistError`) |
//! | [`status`] | the typed status events a node appends to `--status-file` |

// The modules below name the core's modules as `crate::engine`, `crate::data`, … as the facade
// does: one path for each item on both sides of the cut.
use gridtest_core::{
    data, engine, metrics, params, progress, registry, research, storage, strategy,
};

pub mod ingest;
pub mod persist;
pub mod status;
pub mod sweep;
