//! Running a sweep: command-line settings ([`RunArgs`]), the in-process actor run
//! ([`run_sweep`]), and the one-call entry points [`run`] and [`main`](crate::main) that also
//! print the leaderboard and write the output folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use chrono::NaiveDate;
use futures::future::join_all;
use ractor::Actor;
use ractor::rpc::CallResult;
use tokio::sync::oneshot;

use crate::actors::{
    ScorerTemplate, ShardHandle, ShardLoader, ShardLoaderArgs, ShardLoaderMsg, Supervisor,
    SupervisorArgs,
};
use crate::data::{Dataset, ShardReader};
use crate::error::{Error, Result};
use crate::metrics::RankMetric;
use crate::params::ParamSet;
use crate::progress::Progress;
use crate::sweep::{
    Leaderboard, Ledger, Sweep, SweepResults, Timings, UnitId, WorkUnit, chunk_size, output,
};

/// Default shard-cache budget per node, MiB.
pub const DEFAULT_CACHE_MB: u64 = 512;

/// Default size of a work unit in tick-parameter evaluations (about a second on one core).
pub const DEFAULT_UNIT_EVALS: u64 = 250_000_000;

/// Settings every sweep binary accepts on its command line (and from `GRIDTEST_*` variables).
/// Flatten it into your own `clap` parser to add flags of your own.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunArgs {
    /// Dataset root: a path, file:///… or s3://bucket/prefix.
    #[arg(long, env = "GRIDTEST_DATA")]
    pub data: Option<String>,
    /// Output folder for results.csv, results.parquet and leaderboard.csv.
    #[arg(long, env = "GRIDTEST_OUT")]
    pub out: Option<PathBuf>,
    /// Symbols to sweep, comma-separated (default: all in the dataset).
    #[arg(long, value_delimiter = ',')]
    pub symbols: Option<Vec<String>>,
    /// First date, YYYY-MM-DD (inclusive).
    #[arg(long)]
    pub from: Option<NaiveDate>,
    /// Last date, YYYY-MM-DD (inclusive).
    #[arg(long)]
    pub to: Option<NaiveDate>,
    /// Commission, basis points of traded notional.
    #[arg(long)]
    pub commission_bps: Option<f64>,
    /// Slippage, basis points of traded notional.
    #[arg(long)]
    pub slippage_bps: Option<f64>,
    /// Largest absolute target weight.
    #[arg(long)]
    pub max_leverage: Option<f64>,
    /// Scorer threads (default: one per core).
    #[arg(long, env = "GRIDTEST_THREADS")]
    pub threads: Option<usize>,
    /// Metric to rank the leaderboard by (mean across symbols).
    #[arg(long, value_enum)]
    pub rank_by: Option<RankMetric>,
    /// Rows of the leaderboard to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Shard cache budget per node, MiB; larger shards are streamed.
    #[arg(long, default_value_t = DEFAULT_CACHE_MB)]
    pub cache_mb: u64,
    /// Work unit size, tick-parameter evaluations.
    #[arg(long, default_value_t = DEFAULT_UNIT_EVALS)]
    pub unit_evals: u64,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// How to run a sweep on this node.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Scorers.
    pub threads: usize,
    /// Shard cache budget, bytes.
    pub cache_bytes: u64,
    /// Work unit size, evaluations.
    pub unit_evals: u64,
    /// Show a progress bar on a terminal.
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            threads: default_threads(),
            cache_bytes: DEFAULT_CACHE_MB << 20,
            unit_evals: DEFAULT_UNIT_EVALS,
            progress: true,
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

fn runtime_error(e: impl std::fmt::Display) -> Error {
    Error::Runtime(e.to_string())
}

/// Runs a sweep in this process: a shard loader, a supervisor and `threads` scorers.
///
/// Shards are listed and their footers checked first; those that fit the cache are loaded
/// before compute starts, so [`Timings::load`] and [`Timings::compute`] are apart. A shard that
/// cannot be read fails only its own cells, with the file named.
///
/// # Errors
/// [`Error::InvalidSweep`] before anything runs, [`Error::Data`] when the dataset cannot be
/// listed, [`Error::Runtime`] if the actor system fails.
pub async fn run_sweep(sweep: &Sweep, opts: &RunOptions) -> Result<SweepResults> {
    sweep.validate()?;
    let started = Instant::now();
    let strategy = *sweep.strategy();
    let location = sweep.data_location().expect("validated");
    let dataset = Dataset::try_new(location, strategy.kind)?;
    let (from, to) = sweep.date_range();
    let shards = dataset
        .plan_shards(sweep.symbol_selection(), from, to)
        .await?;
    let sets: Vec<ParamSet> = sweep.grid_ref().iter().collect();
    tracing::info!(strategy = strategy.name, dataset = %dataset.url(), shards = shards.len(),
        param_sets = sets.len(), cells = shards.len() * sets.len(), "sweep planned");
    let reader = Arc::new(ShardReader::try_new(&dataset)?);

    // Footers first (sizes units, names bad files early), then load what fits the cache.
    let infos = join_all(shards.iter().map(|s| reader.inspect(s))).await;
    let (loader, loader_task) = Actor::spawn(
        None,
        ShardLoader,
        ShardLoaderArgs {
            reader: Arc::clone(&reader),
            budget_bytes: opts.cache_bytes,
        },
    )
    .await
    .map_err(runtime_error)?;
    let mut budget = opts.cache_bytes;
    let mut prefetch = Vec::new();
    for (shard, info) in shards.iter().zip(&infos) {
        match info {
            Ok(info) if info.bytes_in_memory() <= budget => {
                budget -= info.bytes_in_memory();
                prefetch.push(shard.clone());
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(shard = %shard, error = %e, "shard cannot be read; its cells will fail")
            }
        }
    }
    let loaded = join_all(prefetch.into_iter().map(|shard| {
        let loader = loader.clone();
        async move { loader.call(|r| ShardLoaderMsg::Get(shard, r), None).await }
    }))
    .await;
    for l in loaded {
        if let Ok(CallResult::Success(Ok(ShardHandle::Loaded(data)))) = l {
            tracing::debug!(shard = %data.shard(), bytes = data.bytes(), "prefetched");
        }
    }
    let load = started.elapsed();

    let threads = opts.threads.max(1);
    let mut units = Vec::new();
    let mut evaluations = 0u64;
    for (shard, info) in shards.iter().zip(&infos) {
        let rows = info.as_ref().map_or(0, |i| i.n_rows());
        evaluations += rows * sets.len() as u64;
        let chunk = chunk_size(sets.len(), rows, opts.unit_evals, threads);
        for chunk in sets.chunks(chunk) {
            units.push(WorkUnit {
                id: UnitId(u32::try_from(units.len()).map_err(runtime_error)?),
                shard: shard.clone(),
                sets: chunk.to_vec(),
            });
        }
    }
    tracing::info!(
        units = units.len(),
        scorers = threads,
        load_ms = load.as_millis() as u64,
        "starting compute"
    );
    let ledger = Ledger::new(units);
    let (done_tx, done_rx) = oneshot::channel();
    let (_supervisor, supervisor_task) = Actor::spawn(
        None,
        Supervisor,
        SupervisorArgs {
            progress: Progress::new(ledger.expected(), opts.progress),
            ledger,
            scorers: threads,
            scorer_template: ScorerTemplate {
                loader: loader.clone(),
                reader,
                strategy,
                exec: sweep.exec_model().clone(),
            },
            done: done_tx,
        },
    )
    .await
    .map_err(runtime_error)?;
    let outcome = done_rx.await.map_err(|_| {
        Error::Runtime("the supervisor stopped before the sweep finished".to_owned())
    })?;
    let _ = supervisor_task.await;
    loader.stop(None);
    let _ = loader_task.await;

    for (name, s) in &outcome.scorers {
        tracing::debug!(scorer = %name, units = s.units, evaluations = s.evaluations,
            busy_ms = s.busy.as_millis() as u64, "scorer");
    }
    let timings = Timings {
        load,
        compute: outcome.compute_wall,
        wall: started.elapsed(),
        evaluations,
    };
    Ok(SweepResults::new(
        &strategy,
        sweep.grid_ref(),
        sets,
        shards,
        outcome.ledger.into_cells(),
        timings,
    ))
}

/// A finished run: the results, the leaderboard and where they were written.
#[derive(Debug)]
pub struct SweepReport {
    /// Every cell.
    pub results: SweepResults,
    /// The ranking.
    pub leaderboard: Leaderboard,
    /// The output folder.
    pub out_dir: PathBuf,
}

/// Applies command-line settings to a sweep and options.
#[must_use]
pub fn apply_args(mut sweep: Sweep, args: &RunArgs) -> (Sweep, RunOptions) {
    if let Some(d) = &args.data {
        sweep = sweep.data(d.clone());
    }
    if let Some(s) = &args.symbols {
        sweep = sweep.symbols(s.clone());
    }
    let (from, to) = sweep.date_range();
    sweep = sweep.dates(args.from.or(from), args.to.or(to));
    let mut exec = sweep.exec_model().clone();
    if let Some(c) = args.commission_bps {
        exec.commission_bps = c;
    }
    if let Some(s) = args.slippage_bps {
        exec.slippage_bps = s;
    }
    if let Some(l) = args.max_leverage {
        exec.max_leverage = l;
    }
    sweep = sweep.exec(exec);
    let opts = RunOptions {
        threads: args.threads.unwrap_or_else(default_threads),
        cache_bytes: args.cache_mb << 20,
        unit_evals: args.unit_evals,
        progress: !args.no_progress,
    };
    (sweep, opts)
}

/// Installs the `tracing` subscriber (level from `RUST_LOG`, default `info`) unless one is set.
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Runs a sweep with command-line settings, prints the leaderboard and a summary, and writes
/// `results.csv`, `results.parquet` and `leaderboard.csv` to `--out` (default
/// `out/<strategy>`).
///
/// # Errors
/// As [`run_sweep`], or [`Error::Output`] if the output cannot be written.
pub fn run(sweep: Sweep, args: &RunArgs) -> Result<SweepReport> {
    init_tracing();
    let (sweep, opts) = apply_args(sweep, args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads.clamp(1, 4))
        .enable_all()
        .thread_name("gridtest-rt")
        .build()
        .map_err(runtime_error)?;
    let results = runtime.block_on(run_sweep(&sweep, &opts))?;
    let rank_by = args.rank_by.unwrap_or(RankMetric::Sharpe);
    let leaderboard = results.leaderboard(rank_by);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(results.strategy()));
    output::write_all(&results, &leaderboard, &out_dir)?;

    println!("{}", leaderboard.table(args.top));
    let t = &results.timings;
    let cells = results.cells().len();
    let failed = results.failures().count();
    println!(
        "{cells} cells ({failed} failed) over {} shards × {} parameter sets in {:.2}s \
         (load {:.2}s, compute {:.2}s: {:.3e} tick-parameter evaluations/s)",
        results.shards().len(),
        results.sets().len(),
        t.wall.as_secs_f64(),
        t.load.as_secs_f64(),
        t.compute.as_secs_f64(),
        t.evaluations_per_second()
    );
    for (set, shard, f) in results.failures().take(10) {
        println!("  failed: [{set}] on {shard}: {f}");
    }
    if failed > 10 {
        println!(
            "  … and {} more failed cells (see results.csv)",
            failed - 10
        );
    }
    println!("results written to {}", out_dir.display());
    Ok(SweepReport {
        results,
        leaderboard,
        out_dir,
    })
}
