//! Sweeps: what to run ([`Sweep`]), how it is cut into work ([`WorkUnit`]), the state of every
//! cell ([`Ledger`]), and what comes out ([`SweepResults`], [`Leaderboard`]).

mod clock;
mod cost;
mod description;
mod device_telemetry;
mod error;
mod fleet;
mod halving;
mod leaderboard;
mod ledger;
mod node_stats;
pub mod output;
pub mod report;
mod research_report;
mod scaling;
mod set_returns;
mod slice_chain;
pub mod spool;
mod sweep_id;
mod work_unit;
mod worker_id;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::engine::{CellFailure, CellKey, CellOutcome, FailureKind};
pub use clock::{Clock, ManualClock, SystemClock};
pub use cost::{OwnedMachine, Prices, RentedMachine, SweepCost};
pub use description::{Sweep, SweepDescription};
pub use device_telemetry::DeviceTelemetry;
pub use error::SweepError;
pub use fleet::{Fleet, FleetRules, Gate, NodeView, SlowNode};
pub use halving::{Halving, HalvingReport, HalvingSchedule, RungReport, RungSize, SearchRung};
pub use leaderboard::{
    LEADERBOARD_ROWS, LeaderCsv, LeaderRow, Leaderboard, LeaderboardRows, MIN_FITTED_WIDTH,
};
pub use ledger::{
    Completion, DEFAULT_MAX_ATTEMPTS, FinalCell, Ledger, LedgerStats, MAX_ATTEMPTS, SetResult,
    WorkerId,
};
pub use node_stats::NodeStats;
pub use research_report::{
    DSR_DECIMALS, Deflated, PboSummary, ResearchReport, SetEvidence, WalkForwardSummary,
};
pub use scaling::{PoolLoad, PoolPolicy, ScaleDecision, Scaler};
pub use set_returns::{ReturnsBook, SetReturns};
pub use slice_chain::{CheckpointBytes, DaySlice, SliceChain, cut_days};
pub use spool::{CellSpool, Spool, SpoolRow};
pub use sweep_id::SweepId;
pub use work_unit::{SetSpan, UnitId, WorkUnit, chunk_size};
pub use worker_id::ScorerKind;

use crate::data::Shard;
use crate::params::{Grid, ParamSet};
use crate::registry::StrategyEntry;

/// Where the time went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Listing shards, checking footers and loading data before compute starts.
    pub load: Duration,
    /// From the first unit leased to the last result.
    pub compute: Duration,
    /// The whole run.
    pub wall: Duration,
    /// Tick-parameter evaluations.
    pub evaluations: u64,
}

impl Timings {
    /// Evaluations per second of compute.
    #[must_use]
    pub fn evaluations_per_second(&self) -> f64 {
        self.evaluations as f64 / self.compute.as_secs_f64().max(1e-9)
    }
}

/// What a finished sweep produced: counts, the best parameter sets, the first failures, and
/// every cell in its output files (`results.csv`, `results.parquet`, `leaderboard.csv` under
/// [`SweepResults::output_dir`]) and spool. Memory does not grow with the grid: cells are read
/// back only on demand ([`SweepResults::cells`], [`SweepResults::rows`]).
///
/// The files live in a private temporary folder removed when the last clone of these results
/// is dropped; copy them with [`output::write_all`] to keep them.
#[derive(Clone, Debug)]
pub struct SweepResults {
    strategy: String,
    version: String,
    grid: Grid,
    n_sets: usize,
    shards: Vec<Shard>,
    spool: Spool,
    rendered: output::Rendered,
    /// Holds the spool and the output files.
    _workspace: std::sync::Arc<tempfile::TempDir>,
    /// The research report, when daily returns were recorded.
    research: Option<std::sync::Arc<ResearchReport>>,
    /// Where the time went.
    pub timings: Timings,
    run_info: Option<RunInfo>,
}

/// How a sweep was run: its id, what this run computed, and per-node figures.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The sweep id (hash of its spec).
    pub sweep_id: SweepId,
    /// Cells computed by this run (the rest were resumed from the ledger).
    pub computed: usize,
    /// Per node.
    pub nodes: BTreeMap<String, NodeStats>,
    /// Per GPU scorer (`node/gpuD-K`).
    pub gpu_slots: BTreeMap<String, NodeStats>,
    /// Energy per device (`node/gpuD`) during the sweep, joules, where NVML reports it.
    pub gpu_energy_joules: BTreeMap<String, f64>,
    /// Nodes that joined running other code than the sweep needs (they computed none of its
    /// cells), and what differs.
    pub incompatible: BTreeMap<String, String>,
    /// Why the sweep could not be persisted to its results root, if it could not (every cell
    /// is still in these results).
    pub persist_failure: Option<String>,
    /// What the ledger counted: units requeued, speculative copies, duplicate results.
    pub ledger: LedgerStats,
    /// Bytes the sweep read from its dataset, and the dataset's bytes.
    pub reads: crate::data::DataReads,
}

/// The parts [`SweepResults`] are made of, as the execution hands them over.
pub struct ResultParts {
    /// The strategy swept.
    pub strategy: StrategyEntry,
    /// Its grid.
    pub grid: Grid,
    /// Sets in the grid.
    pub n_sets: usize,
    /// The shards, in output order.
    pub shards: Vec<Shard>,
    /// Every final cell, spooled.
    pub spool: Spool,
    /// What rendering the outputs produced besides the files.
    pub rendered: output::Rendered,
    /// The folder the output files are in (removed with the results).
    pub workspace: tempfile::TempDir,
    /// How long each phase took.
    pub timings: Timings,
}

impl SweepResults {
    /// The results of a sweep whose every cell is final.
    #[must_use]
    pub fn new(parts: ResultParts) -> Self {
        Self {
            strategy: parts.strategy.name.to_owned(),
            version: parts.strategy.version.to_owned(),
            n_sets: parts.n_sets,
            grid: parts.grid,
            shards: parts.shards,
            spool: parts.spool,
            rendered: parts.rendered,
            _workspace: std::sync::Arc::new(parts.workspace),
            timings: parts.timings,
            run_info: None,
            research: None,
        }
    }

    /// Attaches the research report and shows each leaderboard row's DSR.
    #[must_use]
    pub fn with_research(mut self, report: ResearchReport) -> Self {
        for row in &mut self.rendered.leaderboard.rows {
            row.dsr = report.dsr_of(row.param_set_id);
        }
        self.research = Some(std::sync::Arc::new(report));
        self
    }

    /// What the sets' daily returns say about the sweep (deflated Sharpe ratios, effective
    /// trials, PBO, walk-forward), when they were recorded.
    #[must_use]
    pub fn research(&self) -> Option<&ResearchReport> {
        self.research.as_deref()
    }

    /// Attaches how the sweep was run.
    #[must_use]
    pub fn with_run_info(mut self, info: RunInfo) -> Self {
        self.run_info = Some(info);
        self
    }

    /// Notes that persisting the sweep failed, and why (the results stand).
    pub fn set_persist_failure(&mut self, why: String) {
        if let Some(info) = self.run_info.as_mut() {
            info.persist_failure = Some(why);
        }
    }

    /// How the sweep was run (id, cells computed by this run, per-node figures).
    #[must_use]
    pub fn run_info(&self) -> Option<&RunInfo> {
        self.run_info.as_ref()
    }

    /// Strategy name.
    #[must_use]
    pub fn strategy(&self) -> &str {
        &self.strategy
    }

    /// Strategy version.
    #[must_use]
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Axis names in grid order.
    #[must_use]
    pub fn axes(&self) -> &[String] {
        &self.rendered.leaderboard.axes
    }

    /// The grid.
    #[must_use]
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Parameter sets of the grid.
    #[must_use]
    pub fn n_sets(&self) -> usize {
        self.n_sets
    }

    /// Shards.
    #[must_use]
    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// Cells with a final state.
    #[must_use]
    pub fn recorded(&self) -> usize {
        self.rendered.cells
    }

    /// Cells expected but not recorded (0 for a finished sweep).
    #[must_use]
    pub fn missing(&self) -> usize {
        (self.n_sets * self.shards.len()).saturating_sub(self.recorded())
    }

    /// Cells whose final state is a failure.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.rendered.failed
    }

    /// The first failed cells in grid order, with their parameter set and shard (at most
    /// [`output::FAILURES_HELD`]; [`SweepResults::failed`] counts them all).
    pub fn failures(&self) -> impl Iterator<Item = (&ParamSet, &Shard, &CellFailure)> {
        self.rendered.failures.iter().map(|(p, s, f)| (p, s, f))
    }

    /// The best parameter sets by the run's ranking metric (every set is in
    /// `leaderboard.csv`).
    #[must_use]
    pub fn leaderboard(&self) -> &Leaderboard {
        &self.rendered.leaderboard
    }

    /// The folder holding `results.csv`, `results.parquet` and `leaderboard.csv`.
    #[must_use]
    pub fn output_dir(&self) -> &std::path::Path {
        &self.rendered.dir
    }

    /// Every cell by key, read back from the spool: memory grows with the grid, so this is for
    /// small sweeps and tests.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the spool cannot be read.
    pub fn cells(&self) -> Result<BTreeMap<CellKey, CellOutcome>, SweepError> {
        Ok(self
            .spool
            .read_all()?
            .into_iter()
            .filter_map(|r| {
                let shard = self.shards.get(r.shard as usize)?;
                Some((
                    CellKey {
                        shard: shard.id(),
                        param_set: r.param_set,
                    },
                    r.outcome,
                ))
            })
            .collect())
    }

    /// Every cell with its parameter set and shard, in grid order then shard order, read back
    /// from the spool (see [`SweepResults::cells`]).
    ///
    /// # Errors
    /// [`SweepError::Output`] if the spool cannot be read.
    pub fn rows(&self) -> Result<Vec<(ParamSet, Shard, CellOutcome)>, SweepError> {
        let mut rows = self.spool.read_all()?;
        rows.sort_by_key(|r| (r.place.index, r.shard));
        let expander = self.grid.expander();
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                Some((
                    expander.set_at(r.place.position)?,
                    self.shards.get(r.shard as usize)?.clone(),
                    r.outcome,
                ))
            })
            .collect())
    }
}
