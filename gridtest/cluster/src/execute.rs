//! Executing a sweep on this node: plan it (a [`Plan`]), then run the actors (shard loader,
//! supervisor, node agent and scorers) until every cell is final, resuming from and persisting
//! to the results root. The in-process entry point is [`run_sweep`]; a head and a coordinator
//! run the same execution with a node set-up of their own.

mod actors;
mod estimate;
mod halving;
mod plan;
mod research;
mod spooled;
mod units;

use std::collections::BTreeMap;
use std::time::Duration;

use ractor::{Actor, ActorRef};
use tokio_util::sync::CancellationToken;

use crate::actors::{
    BackendSettings, ShardLoader, ShardLoaderArgs, ShardLoaderMsg, SupervisorOutcome,
    SupervisorTiming,
};
use crate::error::{Error, Result};
use crate::metrics::RankMetric;
use crate::persist::{LedgerLog, RecordedCell, SweepLock};
use crate::progress::ProgressFeed;
use crate::status::{StatusEvent, StatusLog, SweepSummary};
use crate::storage::Location;
use crate::sweep::{
    CellKey, LeaderboardRows, Ledger, ResultParts, RunInfo, Sweep, SweepError, SweepResults,
    Timings, WorkUnit, output,
};

use actors::run_actors;
pub use estimate::{
    CALIBRATION_EVENTS, CALIBRATION_SETS, Calibration, MemoryEstimate, SweepEstimate, estimate,
};
#[cfg(feature = "cluster")]
pub(crate) use halving::run_halving;
pub use halving::run_search;
pub use plan::Plan;
pub(crate) use plan::plan;
pub use research::{DEFAULT_RETURNS_MB, Recording, ReturnsOptions};
use spooled::{Spooled, open_spool};

/// Default shard-cache budget per node, MiB.
pub const DEFAULT_CACHE_MB: u64 = 512;

/// Default size of a work unit in tick-parameter evaluations (about a second on one core).
pub const DEFAULT_UNIT_EVALS: u64 = 250_000_000;

/// Scorers a head plans work units for at least (it cannot know how many workers will join).
pub const MIN_CLUSTER_SCORERS: usize = 16;

/// How to run a sweep on this node.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Scorers.
    pub threads: usize,
    /// Shard cache budget, bytes.
    pub cache_bytes: u64,
    /// Work unit size, evaluations.
    pub unit_evals: u64,
    /// Where the supervisor publishes the sweep's progress (the sweep binary draws its bar
    /// from it).
    pub progress: ProgressFeed,
    /// Progress log (and status event) period.
    pub progress_every: Duration,
    /// Attempts a failing cell gets.
    pub max_attempts: u32,
    /// Results root to persist the sweep in (resumable); `None`: not persisted. The one place
    /// a run's results root is held.
    pub results: Option<Location>,
    /// Hand out no work until this many nodes have asked for some (a head waiting for its
    /// workers; at most two minutes).
    pub wait_for_nodes: usize,
    /// Backend (GPU) settings; `None`: CPU scorers only.
    pub backends: Option<BackendSettings>,
    /// Leaderboard metric (for the persisted leaderboard).
    pub rank_by: RankMetric,
    /// Sets ranked in `leaderboard.csv`.
    pub leaderboard_rows: LeaderboardRows,
    /// Daily returns: recorded for the research report (DSR, PBO, walk-forward), and written.
    pub returns: ReturnsOptions,
    /// Prices to cost the sweep with in `cost.json` (`--prices`); without, only what it used.
    pub prices: Option<crate::sweep::Prices>,
    /// Write every cell's round trips to `trades.parquet` as the cells finish (`--trades`):
    /// the lanes then run one by one rather than in vector blocks.
    pub trades: bool,
    /// Where this node's status events go (`--status-file`; nowhere by default).
    pub status: StatusLog,
    /// Stops a running sweep cleanly when cancelled: the ledger flushed, the sweep's lease
    /// released, [`Error::Interrupted`] returned. The sweep binary cancels it on SIGTERM and
    /// SIGINT.
    pub cancel: CancellationToken,
    /// Cuts the last units of the sweep down to each scorer's share of the work left (guided
    /// self-scheduling), so that the scorers finish together instead of waiting for the last
    /// whole units; on by default. A unit is cut to no less than an eighth of its size.
    pub tail_splitting: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            threads: default_threads(),
            cache_bytes: DEFAULT_CACHE_MB << 20,
            unit_evals: DEFAULT_UNIT_EVALS,
            progress: ProgressFeed::default(),
            progress_every: Duration::from_secs(5),
            max_attempts: crate::sweep::DEFAULT_MAX_ATTEMPTS,
            results: None,
            wait_for_nodes: 0,
            backends: None,
            rank_by: RankMetric::Sharpe,
            leaderboard_rows: LeaderboardRows::default(),
            returns: ReturnsOptions::default(),
            prices: None,
            trades: false,
            status: StatusLog::default(),
            cancel: CancellationToken::new(),
            tail_splitting: true,
        }
    }
}

/// One scorer per core.
#[must_use]
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Where and how the supervisor and this node's scorers run.
#[derive(Clone)]
pub(crate) struct NodeSetup {
    pub(crate) node_name: String,
    /// Whether other nodes may join (a head).
    pub(crate) cluster: bool,
    pub(crate) scorers: usize,
    pub(crate) timing: SupervisorTiming,
}

/// Runs a planned sweep: loader, supervisor and (unless `scorers` is 0) a node agent with its
/// scorers in this process; other nodes join through the `supervisors` process group.
pub(crate) async fn execute(
    plan: Plan,
    opts: &RunOptions,
    setup: NodeSetup,
) -> Result<SweepResults> {
    let sweep_id = plan.spec.id();
    let lock = match &opts.results {
        Some(root) => SweepLock::acquire(root, &sweep_id, &setup.node_name).await?,
        None => None,
    };
    let loader = Actor::spawn(
        None,
        ShardLoader,
        ShardLoaderArgs {
            budget_bytes: opts.cache_bytes,
        },
    )
    .await
    .map_err(|e| Error::actors("starting the shard loader", e));
    let results = match loader {
        Ok((loader, loader_task)) => {
            if setup.scorers > 0 {
                plan::prefetch(&loader, &plan, opts.cache_bytes).await;
            }
            let results = compute(plan, opts, &setup, &loader).await;
            loader.stop(None);
            let _ = loader_task.await;
            results
        }
        Err(e) => Err(e),
    };
    // Every way out (done, cancelled, an error) goes through here: the sweep's lease released.
    if let Some(lock) = lock {
        lock.release().await;
    }
    results
}

/// How this run's units are sized: for its scorers (a cluster's head assumes at least
/// [`MIN_CLUSTER_SCORERS`]) and its node's cache.
fn unit_sizing(opts: &RunOptions, setup: &NodeSetup) -> units::UnitSizing {
    let parallelism = if setup.cluster {
        setup.scorers.max(MIN_CLUSTER_SCORERS)
    } else {
        setup.scorers.max(1)
    };
    units::UnitSizing {
        unit_evals: opts.unit_evals,
        parallelism,
        cache_bytes: opts.cache_bytes,
    }
}

/// The part of [`execute`] that holds the sweep's lease: units planned (resumed cells
/// skipped), actors run until every cell is final or the run is cancelled, outputs rendered.
async fn compute(
    plan: Plan,
    opts: &RunOptions,
    setup: &NodeSetup,
    loader: &ActorRef<ShardLoaderMsg>,
) -> Result<SweepResults> {
    let (log, done) = open_ledger(&plan, opts).await?;
    let sizing = unit_sizing(opts, setup);
    let count = units::count_units(&plan, sizing);
    tracing::info!(
        param_sets = plan.n_sets,
        shards = plan.spec.shards.len(),
        cells = plan.n_sets.saturating_mul(plan.spec.shards.len()),
        evaluations = count.evaluations,
        units = count.units,
        resumed = done.len(),
        "cutting the sweep into units (a signal stops it)"
    );
    let mut planned = units::plan_units(&plan, done, sizing, &opts.cancel)?;
    resume_chains(log.as_ref(), &mut planned.units).await?;
    opts.progress.publish_plan(planned.snapshot(&plan));
    let load = plan.started.elapsed();
    tracing::info!(
        units = planned.units.len(),
        resumed = planned.resumed.len(),
        scorers = setup.scorers,
        load_ms = load.as_millis() as u64,
        "starting compute"
    );
    let resumed = planned.resumed.len();
    let resumed_failed = planned
        .resumed
        .iter()
        .filter(|c| c.outcome.is_err())
        .count();
    let ledger = Ledger::new(plan.spec.grid.clone(), planned.units)
        .with_resumed(resumed, resumed_failed)
        .with_max_attempts(opts.max_attempts)
        .with_tail_splitting(opts.tail_splitting);
    let ranking = (opts.rank_by, opts.leaderboard_rows);
    let Spooled { workspace, outputs } = open_spool(&plan, planned.resumed, ranking, opts.trades)?;
    let outcome = run_actors(&plan, ledger, log, outputs, loader, opts, setup).await?;
    for (name, s) in &outcome.run.nodes {
        tracing::info!(node = %name, units = s.units, cells = s.cells,
            evaluations = s.evaluations, requeued = s.requeued, slow = s.slow, "node summary");
    }
    if outcome.cancelled {
        let (done, total) = outcome.final_cells;
        opts.status.emit(StatusEvent::SweepInterrupted {
            sweep_id: plan.spec.id(),
            done,
            total,
        });
        return Err(Error::Interrupted {
            sweep: plan.spec.id(),
            done,
            total,
            persisted: opts.results.is_some() && outcome.run.persist_failure.is_none(),
        });
    }
    let timings = Timings {
        load,
        compute: outcome.compute_wall,
        wall: plan.started.elapsed(),
        evaluations: planned.evaluations,
    };
    let results = finish(plan, outcome, workspace, timings, opts).await?;
    opts.status
        .emit(StatusEvent::SweepFinished(Box::new(summary(
            &results, resumed,
        ))));
    Ok(results)
}

/// Puts the histories read by slices where the persisted sweep left them, if it saved any.
async fn resume_chains(log: Option<&LedgerLog>, units: &mut [WorkUnit]) -> Result<()> {
    let Some(log) = log else { return Ok(()) };
    let saved = log.chains().read().await?;
    let resumed = saved.resume(units);
    if !saved.is_empty() {
        tracing::info!(
            saved = saved.len(),
            resumed,
            "histories resume after their last slice saved"
        );
    }
    Ok(())
}

/// What the status file says of a finished sweep.
fn summary(results: &SweepResults, resumed: usize) -> SweepSummary {
    let info = results.run_info();
    SweepSummary {
        sweep_id: info.map(|i| i.sweep_id.clone()),
        cells: results.recorded(),
        failed: results.failed(),
        computed: info.map_or(0, |i| i.computed),
        resumed,
        nodes: info.map(|i| i.nodes.clone()).unwrap_or_default(),
        gpu_slots: info.map(|i| i.gpu_slots.clone()).unwrap_or_default(),
        incompatible: info.map(|i| i.incompatible.clone()).unwrap_or_default(),
        persist_failure: info.and_then(|i| i.persist_failure.clone()),
        ledger: info.map(|i| i.ledger).unwrap_or_default(),
        reads: info.map(|i| i.reads).unwrap_or_default(),
    }
}

/// Renders the outputs from the spool, and persists them under the results root, if any.
async fn finish(
    plan: Plan,
    outcome: SupervisorOutcome,
    workspace: tempfile::TempDir,
    timings: Timings,
    opts: &RunOptions,
) -> Result<SweepResults> {
    let started_run = plan.started;
    let run = outcome.run;
    let spool = outcome
        .spool
        .map_err(|why| output_error(&workspace.path().join("cells"), why))?;
    let started = std::time::Instant::now();
    let out = workspace.path().join("out");
    let research = match outcome.returns {
        Some(book) => Some(research::conclude(book, &plan, &opts.returns, &out).await?),
        None => None,
    };
    let rendered = match outcome.render {
        // Most cells were written while the sweep computed: the rest, and the leaderboard.
        Some(mut render) => {
            if let Some((report, _)) = &research {
                render.with_dsr(std::sync::Arc::new(report.deflated.clone()));
            }
            render.finish(&spool).await?
        }
        None => {
            let spec_json = plan.spec.to_json();
            let subject = output::Subject {
                grid: &plan.spec.grid,
                shards: &plan.spec.shards,
                metric: opts.rank_by,
                spec_json: Some(&spec_json),
                leaderboard_rows: opts.leaderboard_rows,
            };
            output::render(&spool, &subject, &out).await?
        }
    };
    tracing::info!(
        cells = rendered.cells,
        ms = started.elapsed().as_millis() as u64,
        "outputs rendered"
    );
    if let Some(trades) = outcome.trades {
        let path = out.join(output::TRADES_PARQUET);
        let written = trades.and_then(|file| file.finish().map_err(|e| e.to_string()));
        let rows = written.map_err(|why| output_error(&path, why))?;
        tracing::info!(trades = rows, "trades written");
    }
    let mut rendered = rendered;
    rendered.leaderboard.drawdown_sign = plan.spec.exec.drawdown_sign;
    let trades = research::trace_best(&plan, &rendered.leaderboard, opts.cache_bytes).await;
    let reads = sweep_reads(&plan, outcome.remote_bytes_read);
    let mut results = SweepResults::new(ResultParts {
        strategy: plan.strategy,
        grid: plan.spec.grid,
        n_sets: plan.n_sets,
        shards: plan.spec.shards,
        spool,
        rendered,
        workspace,
        timings,
    })
    .with_run_info(RunInfo { reads, ..run });
    let (report, returns) = research.unzip();
    if let Some(report) = report {
        results = results.with_research(report);
    }
    research::write_page(&results, returns.as_ref(), trades, opts.prices.clone())?;
    if let Some(root) = &opts.results {
        persist_results(&mut results, root).await;
    }
    // The whole run: rendering and persisting the outputs included.
    results.timings.wall = started_run.elapsed();
    Ok(results)
}

/// What the sweep read from its dataset: this process since planning began, and the others'
/// `remote` bytes as their readings said.
fn sweep_reads(plan: &Plan, remote: u64) -> crate::data::DataReads {
    crate::data::DataReads {
        bytes_read: (crate::data::bytes_read() - plan.reads_at_start) + remote,
        dataset_bytes: plan.spec.dataset_bytes(),
    }
}

/// Opens the persisted ledger (writing the spec), if the run has a results root: the log to
/// append to and the cells of this sweep already final, with their daily returns.
async fn open_ledger(
    plan: &Plan,
    opts: &RunOptions,
) -> Result<(Option<LedgerLog>, BTreeMap<CellKey, RecordedCell>)> {
    let Some(root) = &opts.results else {
        return Ok((None, BTreeMap::new()));
    };
    let sweep_id = plan.spec.id();
    let spec_json = plan.spec.to_json();
    let manifest = crate::persist::FileManifest::to_jsonl(&plan.shard_files);
    let (log, done) =
        LedgerLog::open(root, &sweep_id, spec_json.as_bytes(), manifest.as_bytes()).await?;
    tracing::info!(sweep = %sweep_id, root = %root, recorded = done.len(), "sweep ledger opened");
    Ok((Some(log), done))
}

/// Uploads the output files beside the ledger under the results root. A store that fails now
/// must not cost the computed cells: they stay in `results` (and go to the local output); the
/// failure is recorded in them.
async fn persist_results(results: &mut SweepResults, root: &Location) {
    let Some(sweep_id) = results.run_info().map(|i| i.sweep_id.clone()) else {
        return;
    };
    let dir = root.join(&format!("sweeps/{sweep_id}"));
    match output::write_to_store(results.output_dir(), &dir).await {
        Ok(()) => tracing::info!(sweep = %sweep_id, at = %dir, "sweep persisted"),
        Err(e) => {
            tracing::error!(sweep = %sweep_id, error = %e, "could not persist the sweep");
            results.set_persist_failure(format!("{dir}: {e}"));
        }
    }
}

fn output_error(path: &std::path::Path, e: impl std::fmt::Display) -> Error {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
    .into()
}

/// Runs a sweep in this process: a shard loader, a supervisor and `threads` scorers.
///
/// Shards are listed and their footers checked first; those that fit the cache are loaded
/// before compute starts, so [`Timings::load`] and [`Timings::compute`] are apart. A shard that
/// cannot be read fails only its own cells, with the file named.
///
/// # Errors
/// [`Error::InvalidSweep`] before anything runs, [`Error::Data`] when the dataset cannot be
/// listed, [`Error::Actors`] if the actor system fails.
pub async fn run_sweep(sweep: &Sweep, opts: &RunOptions) -> Result<SweepResults> {
    let planned = plan_or_cancel(sweep, &opts.cancel).await?;
    execute(planned, opts, local_setup(opts)).await
}

/// Plans `sweep` unless `cancel` fires first (a signal while a large dataset is listed).
pub(crate) async fn plan_or_cancel(sweep: &Sweep, cancel: &CancellationToken) -> Result<Plan> {
    tokio::select! {
        planned = plan::plan_with(sweep, cancel) => planned,
        () = cancel.cancelled() => Err(Error::InterruptedPlanning),
    }
}

/// This process alone: `opts.threads` scorers, no network.
fn local_setup(opts: &RunOptions) -> NodeSetup {
    NodeSetup {
        node_name: "local".to_owned(),
        cluster: false,
        scorers: opts.threads.max(1),
        timing: SupervisorTiming {
            progress_every: opts.progress_every,
            ..SupervisorTiming::default()
        },
    }
}
