//! # gridtest
//!
//! Parameter-sweep backtesting over hive-partitioned Parquet, on an actor runtime that runs in
//! one process on a laptop or across a cluster.
//!
//! A researcher implements [`Strategy`] for a type, derives [`Params`] for its parameters,
//! registers it with [`#[gridtest::strategy]`](macro@strategy), declares a [`Grid`], and runs
//! one binary. gridtest reads each shard once, runs every parameter set over it in a tight
//! columnar loop, and returns a ranked [`Leaderboard`] plus one row per cell.
//!
//! # Nouns
//! | noun | what it is |
//! | --- | --- |
//! | [`Dataset`](data::Dataset) | a root URL of Parquet laid out `symbol=X/date=YYYY-MM-DD/*.parquet`, ticks or bars |
//! | [`Shard`](data::Shard) | one symbol over a date range, replayed as one continuous series |
//! | [`ParamSet`] | named parameter values with a stable [`ParamSetId`] (hash of the canonical encoding) |
//! | [`Grid`] | axes and constraints, expanded lazily, exact size known up front |
//! | [`WorkUnit`](sweep::WorkUnit) | a shard and a chunk of parameter sets: the unit of scheduling |
//! | [`CellKey`] | (parameter set, shard): results are keyed by it, never by position |
//! | [`Ledger`](sweep::Ledger) | the state of every unit and cell of a sweep |
//!
//! # Actors
//! ```text
//! head (ordinal 0, or the only process in-process)
//!   Coordinator          with --serve: plans submitted sweeps, runs them one at a time
//!   Supervisor           one per sweep: leases units from the ledger, records cells by key,
//!   │                    pings every node agent, requeues a silent node's units
//!   └─ LedgerWriter      spools final cells, writes ledger segments, outputs and checkpoints
//! every node (the head too, unless it has no scorers)
//!   NodeAgent            reports the node's resources, spawns and restarts its scorers, drains
//!   ├─ Scorer cpu-0 …    pull a unit → shard or slice from the loader → engine on a blocking thread
//!   └─ Scorer gpu slots  (gridtest-cuda) several per card, admitted by free device memory
//!   ShardLoader          loads each shard or slice once, shares it by Arc (LRU byte budget)
//! ```
//! See [`actors`] and [`engine`] (the hot loop and its execution model).
//!
//! # Quick start
//! ```no_run
//! use gridtest::prelude::*;
//!
//! #[derive(Params, Clone, Debug)]
//! pub struct Cross { pub fast: usize, pub slow: usize }
//!
//! pub struct SmaCross { fast: RollingMean, slow: RollingMean }
//!
//! #[gridtest::strategy(name = "quickstart_sma")]
//! impl Strategy for SmaCross {
//!     type Params = Cross;
//!     type Feed = Ticks;
//!     fn new(p: &Cross) -> Self {
//!         Self { fast: RollingMean::new(p.fast), slow: RollingMean::new(p.slow) }
//!     }
//!     fn lookback(&self) -> usize { self.slow.window() }
//!     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
//!         self.fast.push(now.price(), now.price_back(self.fast.window()));
//!         self.slow.push(now.price(), now.price_back(self.slow.window()));
//!         let ready = now.index() + 1 >= self.slow.window() as u64;
//!         if ready && self.fast.mean_gt(&self.slow) { 1.0 } else { 0.0 }
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let sweep = Sweep::of::<SmaCross>()
//!         .grid(Grid::new()
//!             .axis("fast", (5..=100).step_by(5))
//!             .axis("slow", (20..=1000).step_by(20))
//!             .constrain("fast < slow"))
//!         .data("data/ticks");
//!     // flags: --data, --out, --symbols, --threads, --rank-by, …; documented exit statuses
//!     gridtest::exit_status(gridtest::main(sweep))
//! }
//! ```

extern crate self as gridtest;

pub use gridtest_cluster::{
    actors, autoscale, cluster, execute, observe, reopen, replay, transport,
};
pub use gridtest_core::{
    broker, data, engine, indicators, metrics, params, progress, registry, research, storage,
    strategy,
};
pub use gridtest_sweep::{ingest, persist, status, sweep};

pub mod cli;
pub mod prelude;
pub mod run;
#[cfg(feature = "cluster")]
pub mod submit;

pub use engine::ExecModel;

/// This gridtest's version (`--version` of a sweep binary).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use execute::{Recording, ReturnsOptions, RunOptions, run_search, run_sweep};
pub use gridtest_cluster::{Error, Result, exit};
pub use gridtest_macros::{Choice, Params};
pub use metrics::{Metrics, RankMetric};
pub use params::{
    CmpOp, Constraint, Grid, GridError, Operand, ParamError, ParamKind, ParamSet, ParamSetId,
    ParamValue, Params,
};
pub use run::{RunArgs, SweepReport, exit_status, run};
pub use strategy::{
    Bars, Cursor, DataKind, Feed, GpuCode, MAX_SHARED, MeanKey, RegisteredStrategy, Series,
    SharedMean, SharedSeries, Slice, Strategy, Ticks, Tile, pack_numeric,
};
pub use sweep::{CellFailure, CellKey, CellOutcome, Leaderboard, Sweep, SweepResults};

/// Runs `sweep` with the settings of this process's command line ([`RunArgs`]): the whole
/// `main` of a sweep binary, in whichever role the settings select (local, head or worker).
/// Prints the leaderboard and writes the output folder; `None` for a worker.
///
/// # Errors
/// See [`run()`].
pub fn main(sweep: Sweep) -> Result<Option<SweepReport>> {
    #[derive(clap::Parser)]
    #[command(about = "Run a gridtest parameter sweep", version = VERSION)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let cli: Cli = run::parse();
    run(sweep, &cli.run)
}

#[doc(hidden)]
pub mod __private {
    pub use gridtest_core::__private::*;
}

/// serde, for `#[derive(Serialize, Deserialize)]` on a strategy that carries its state
/// (`#[serde(crate = "gridtest::serde")]`), without a dependency of its own.
pub use serde;
