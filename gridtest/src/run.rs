//! Running a sweep: command-line settings ([`RunArgs`]), the in-process actor run
//! ([`run_sweep`]), and the one-call entry points [`run`] and [`main`](crate::main) that also
//! print the leaderboard and write the output folder.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use futures::future::join_all;
use ractor::Actor;
use tokio::sync::oneshot;

use crate::actors::{
    BackendSettings, NodeAgent, NodeAgentArgs, ShardLoader, ShardLoaderArgs, ShardLoaderMsg,
    Supervisor, SupervisorArgs, SupervisorTiming,
};
use crate::cluster::messages::SweepContext;
use crate::cluster::{ClusterArgs, Role};
use crate::data::{DataError, Dataset, Shard, ShardInfo, ShardReader};
use crate::engine::ExecModel;
use crate::error::{Error, Result};
use crate::metrics::RankMetric;
use crate::params::{Grid, ParamSet};
use crate::persist::{LedgerLog, SweepLock, SweepSpec};
use crate::progress::Progress;
use crate::storage::Location;
use crate::strategy::StrategyEntry;
use crate::sweep::{
    CellKey, Leaderboard, Ledger, Sweep, SweepResults, Timings, UnitId, WorkUnit, chunk_size,
    output,
};

/// Default shard-cache budget per node, MiB.
pub const DEFAULT_CACHE_MB: u64 = 512;

/// Default size of a work unit in tick-parameter evaluations (about a second on one core).
pub const DEFAULT_UNIT_EVALS: u64 = 250_000_000;

/// Scorers a head plans work units for at least (it cannot know how many workers will join).
pub const MIN_CLUSTER_SCORERS: usize = 16;

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
    /// Progress log period when no bar is drawn, ms.
    #[arg(long, env = "GRIDTEST_PROGRESS_MS", default_value_t = 5000)]
    pub progress_ms: u64,
    /// Attempts a failing cell gets before its failure is final.
    #[arg(long, default_value_t = crate::sweep::DEFAULT_MAX_ATTEMPTS)]
    pub max_attempts: u32,
    /// Head: hand out no work until this many nodes ask for some (at most two minutes).
    #[arg(long, env = "GRIDTEST_WAIT_FOR_NODES", default_value_t = 0)]
    pub wait_for_nodes: usize,
    /// GPU scorers per device (when gridtest-cuda is linked and a GPU is found).
    #[arg(long, env = "GRIDTEST_GPU_SLOTS", default_value_t = 4)]
    pub gpu_slots: usize,
    /// Device memory kept free on each GPU, MiB.
    #[arg(long, env = "GRIDTEST_GPU_RESERVE_MB", default_value_t = 512)]
    pub gpu_reserve_mb: u64,
    /// Device memory for resident shards per GPU, MiB.
    #[arg(long, env = "GRIDTEST_GPU_SHARD_MB", default_value_t = 4096)]
    pub gpu_shard_mb: u64,
    /// Exit 0 even when some cells failed (they are still reported and written). Without it a
    /// sweep with failed cells exits with status 3.
    #[arg(long, env = "GRIDTEST_ALLOW_FAILED_CELLS")]
    pub allow_failed_cells: bool,
    /// Run no GPU scorers even if GPUs are found.
    #[arg(long, env = "GRIDTEST_NO_GPU")]
    pub no_gpu: bool,
    /// Re-execute the persisted sweep with this id (under --results) and check that every
    /// metric is identical to the record, bit for bit.
    #[arg(long, value_name = "SWEEP_ID")]
    pub replay: Option<String>,
    /// With --replay: only this cell, PARAM_SET_ID@SYMBOL.
    #[arg(long, value_name = "PARAM_SET_ID@SYMBOL", requires = "replay")]
    pub cell: Option<crate::replay::ReplayScope>,
    /// With --replay: run even if the data changed since the sweep.
    #[arg(long, requires = "replay")]
    pub force: bool,
    /// Head: run no sweep of its own; serve sweeps submitted with `gridtest submit` until
    /// SIGTERM, one after another, each persisted under --results (ignored by workers).
    #[arg(long)]
    pub serve: bool,
    /// Cluster settings.
    #[command(flatten)]
    pub cluster: ClusterArgs,
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
    /// Progress log period when no bar is drawn.
    pub progress_every: Duration,
    /// Attempts a failing cell gets.
    pub max_attempts: u32,
    /// Results root to persist the sweep's ledger in (resumable); `None`: not persisted.
    pub results: Option<String>,
    /// Hand out no work until this many nodes have asked for some (a head waiting for its
    /// workers; at most two minutes).
    pub wait_for_nodes: usize,
    /// Backend (GPU) settings; `None`: CPU scorers only.
    pub backends: Option<BackendSettings>,
    /// Leaderboard metric (for the persisted leaderboard).
    pub rank_by: RankMetric,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            threads: default_threads(),
            cache_bytes: DEFAULT_CACHE_MB << 20,
            unit_evals: DEFAULT_UNIT_EVALS,
            progress: true,
            progress_every: Duration::from_secs(5),
            max_attempts: crate::sweep::DEFAULT_MAX_ATTEMPTS,
            results: None,
            wait_for_nodes: 0,
            backends: None,
            rank_by: RankMetric::Sharpe,
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

fn runtime_error(e: impl std::fmt::Display) -> Error {
    Error::Runtime(e.to_string())
}

/// A sweep resolved against its dataset: shards, parameter sets, footers, spec.
pub struct Plan {
    strategy: StrategyEntry,
    grid: Grid,
    exec: ExecModel,
    dataset: Dataset,
    shards: Vec<Shard>,
    sets: Vec<ParamSet>,
    infos: Vec<std::result::Result<ShardInfo, DataError>>,
    spec: SweepSpec,
    started: Instant,
}

impl Plan {
    /// The sweep id (hash of the spec).
    #[must_use]
    pub fn sweep_id(&self) -> String {
        self.spec.id()
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("sweep", &self.spec.id())
            .finish_non_exhaustive()
    }
}

/// Lists the dataset, plans the shards, expands the grid and checks every shard's footers.
pub(crate) async fn plan(sweep: &Sweep) -> Result<Plan> {
    sweep.validate()?;
    let started = Instant::now();
    let strategy = *sweep.strategy();
    let location = sweep.data_location().expect("validated");
    let dataset = Dataset::try_new(location, strategy.kind)?;
    let (from, to) = sweep.date_range();
    let data = dataset.plan(sweep.symbol_selection(), from, to).await?;
    for ignored in &data.layout.ignored {
        tracing::warn!(object = %ignored.url, reason = %ignored.reason,
            "not data: ignored (recorded in the sweep's spec)");
    }
    let shards = data.shards.clone();
    let sets: Vec<ParamSet> = sweep.grid_ref().iter().collect();
    tracing::info!(strategy = strategy.name, dataset = %dataset.url(), shards = shards.len(),
        param_sets = sets.len(), cells = shards.len() * sets.len(), "sweep planned");
    let reader = ShardReader::try_new(&dataset)?;
    let mut listed = Vec::with_capacity(shards.len());
    for s in &shards {
        let files = data.layout.files_between(s.symbol(), s.first(), s.last());
        listed.push(crate::data::layout::tag_contents(&dataset, files).await?);
    }
    // The manifest holds every file the listing saw, also those of shards that fail below.
    let manifest = listed.iter().flat_map(|l| reader.listed(l)).collect();
    let infos = join_all(
        shards
            .iter()
            .zip(listed)
            .map(|(s, l)| reader.inspect_objects(s, l)),
    )
    .await;
    for (shard, info) in shards.iter().zip(&infos) {
        if let Err(e) = info {
            tracing::error!(shard = %shard, error = %e, "shard cannot be read; its cells will fail");
        }
    }
    let spec = SweepSpec::new(
        &strategy,
        sweep.grid_ref().clone(),
        dataset.url().to_string(),
        dataset.kind(),
        shards.clone(),
        sweep.exec_model().clone(),
        manifest,
    )
    .with_ignored(data.layout.ignored);
    Ok(Plan {
        strategy,
        grid: sweep.grid_ref().clone(),
        exec: sweep.exec_model().clone(),
        dataset,
        shards,
        sets,
        infos,
        spec,
        started,
    })
}

/// Where and how the supervisor and this node's scorers run.
pub(crate) struct NodeSetup {
    pub(crate) node_name: String,
    /// Whether other nodes may join (a head).
    pub(crate) cluster: bool,
    pub(crate) scorers: usize,
    pub(crate) results: Option<Location>,
    pub(crate) timing: SupervisorTiming,
}

/// Runs a planned sweep: loader, supervisor and (unless `scorers` is 0) a node agent with its
/// scorers in this process; other nodes join through the `supervisors` process group.
pub(crate) async fn execute(
    plan: Plan,
    opts: &RunOptions,
    setup: NodeSetup,
) -> Result<SweepResults> {
    let Plan {
        strategy,
        grid,
        exec,
        dataset,
        shards,
        sets,
        infos,
        spec,
        started,
    } = plan;
    let sweep_id = spec.id();
    let (loader, loader_task) = Actor::spawn(
        None,
        ShardLoader,
        ShardLoaderArgs {
            budget_bytes: opts.cache_bytes,
        },
    )
    .await
    .map_err(runtime_error)?;

    // Load what fits the cache before compute starts, so load and compute are timed apart.
    if setup.scorers > 0 {
        let mut budget = opts.cache_bytes;
        let mut prefetch = Vec::new();
        for (shard, info) in shards.iter().zip(&infos) {
            if let Ok(info) = info
                && info.bytes_in_memory() <= budget
            {
                budget -= info.bytes_in_memory();
                prefetch.push(shard.clone());
            }
        }
        join_all(prefetch.into_iter().map(|shard| {
            let (loader, dataset) = (loader.clone(), dataset.clone());
            async move {
                loader
                    .call(|r| ShardLoaderMsg::Get(dataset, shard, r), None)
                    .await
            }
        }))
        .await;
    }

    // Resume from the persisted ledger, if any.
    let lock = match &setup.results {
        Some(root) => SweepLock::acquire(root, &sweep_id, &setup.node_name)
            .await
            .map_err(|e| Error::Runtime(e.to_string()))?,
        None => None,
    };
    let (log, done) = match &setup.results {
        Some(root) => {
            let spec_json = serde_json::to_vec_pretty(&spec).expect("specs serialise");
            let (log, mut done) = LedgerLog::open(root, &sweep_id, &spec_json)
                .await
                .map_err(|e| Error::Runtime(e.to_string()))?;
            let wanted: std::collections::BTreeSet<CellKey> = shards
                .iter()
                .flat_map(|sh| {
                    let id = sh.id();
                    sets.iter().map(move |s| CellKey {
                        shard: id.clone(),
                        param_set: s.id(),
                    })
                })
                .collect();
            done.retain(|k, _| wanted.contains(k));
            tracing::info!(sweep = %sweep_id, root = %root, resumed = done.len(),
                "sweep ledger opened");
            let total = shards.len() * sets.len();
            if done.len() == total {
                eprintln!("sweep {sweep_id} is already complete ({total} cells): reporting it");
            } else if !done.is_empty() {
                eprintln!(
                    "resumed {} cells of sweep {sweep_id} from its ledger",
                    done.len()
                );
            }
            (Some(log), done)
        }
        None => (None, std::collections::BTreeMap::new()),
    };

    // Units are sized for about `unit_evals` evaluations, and cut finer when there would be too
    // few to keep every scorer busy (a head does not know how many workers will join: it
    // assumes at least MIN_CLUSTER_SCORERS).
    let parallelism = if setup.cluster {
        setup.scorers.max(MIN_CLUSTER_SCORERS)
    } else {
        setup.scorers.max(1)
    };
    let mut units = Vec::new();
    let mut evaluations = 0u64;
    for (shard, info) in shards.iter().zip(&infos) {
        let rows = info.as_ref().map_or(0, ShardInfo::n_rows);
        let id = shard.id();
        let todo: Vec<ParamSet> = sets
            .iter()
            .filter(|s| {
                !done.contains_key(&CellKey {
                    shard: id.clone(),
                    param_set: s.id(),
                })
            })
            .cloned()
            .collect();
        evaluations += rows * todo.len() as u64;
        let chunk = chunk_size(todo.len(), rows, opts.unit_evals, parallelism);
        for chunk in todo.chunks(chunk.max(1)) {
            units.push(WorkUnit {
                id: UnitId(u32::try_from(units.len()).map_err(runtime_error)?),
                shard: shard.clone(),
                sets: chunk.to_vec(),
            });
        }
    }
    let load = started.elapsed();
    tracing::info!(
        units = units.len(),
        scorers = setup.scorers,
        load_ms = load.as_millis() as u64,
        "starting compute"
    );
    let ledger = Ledger::resume(units, done).with_max_attempts(opts.max_attempts);
    let (done_tx, done_rx) = oneshot::channel();
    let context = SweepContext {
        sweep_id: sweep_id.clone(),
        strategy: strategy.name.to_owned(),
        dataset: dataset.url().to_string(),
        kind: dataset.kind(),
        exec: exec.clone(),
    };
    let (_supervisor, supervisor_task) = Actor::spawn(
        None,
        Supervisor,
        SupervisorArgs {
            progress: Progress::new(ledger.expected(), opts.progress),
            ledger,
            context,
            log,
            timing: setup.timing,
            done: done_tx,
            wait_for_nodes: opts.wait_for_nodes,
        },
    )
    .await
    .map_err(runtime_error)?;
    let backends = opts
        .backends
        .as_ref()
        .map(crate::actors::backend_slots)
        .unwrap_or_default();
    let agent = if setup.scorers > 0 || !backends.is_empty() {
        let (agent, agent_task) = Actor::spawn(
            None,
            NodeAgent,
            NodeAgentArgs {
                node: setup.node_name.clone(),
                scorers: setup.scorers,
                loader: loader.clone(),
                rpc_timeout: Duration::from_secs(30),
                idle_retry: Duration::from_millis(20),
                backends,
            },
        )
        .await
        .map_err(runtime_error)?;
        Some((agent, agent_task))
    } else {
        None
    };
    let outcome = done_rx.await.map_err(|_| {
        Error::Runtime("the supervisor stopped before the sweep finished".to_owned())
    })?;
    let _ = supervisor_task.await;
    if let Some((agent, task)) = agent {
        agent.stop_children(None);
        agent.stop(None);
        let _ = task.await;
    }
    loader.stop(None);
    let _ = loader_task.await;

    for (name, s) in &outcome.nodes {
        tracing::info!(node = %name, units = s.units, cells = s.cells,
            evaluations = s.evaluations, requeued = s.requeued, slow = s.slow, "node summary");
    }
    let timings = Timings {
        load,
        compute: outcome.compute_wall,
        wall: started.elapsed(),
        evaluations,
    };
    let mut results = SweepResults::new(
        &strategy,
        &grid,
        sets,
        shards,
        outcome.ledger.into_cells(),
        timings,
    )
    .with_run_info(
        sweep_id.clone(),
        outcome.computed,
        outcome.nodes,
        outcome.gpu_slots,
    );
    if let Some(why) = outcome.persist_failure {
        results.set_persist_failure(why);
    }
    if let Some(root) = &setup.results {
        // A results store that fails now must not cost the computed cells: they are returned
        // (and written to the local output) whatever happens here.
        let dir = root.join(&format!("sweeps/{sweep_id}"));
        match output::write_to_store(&results, &results.leaderboard(opts.rank_by), &dir).await {
            Ok(()) => tracing::info!(sweep = %sweep_id, at = %dir, "sweep persisted"),
            Err(e) => {
                tracing::error!(sweep = %sweep_id, error = %e, "could not persist the sweep");
                results.set_persist_failure(format!("{dir}: {e}"));
            }
        }
    }
    if let Some(lock) = lock {
        lock.release().await;
    }
    Ok(results)
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
    let planned = plan(sweep).await?;
    let results = match &opts.results {
        Some(r) => Some(Location::parse(r).map_err(|e| Error::Runtime(e.to_string()))?),
        None => None,
    };
    let setup = NodeSetup {
        node_name: "local".to_owned(),
        cluster: false,
        scorers: opts.threads.max(1),
        results,
        timing: SupervisorTiming {
            progress_every: opts.progress_every,
            ..SupervisorTiming::default()
        },
    };
    execute(planned, opts, setup).await
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
        progress_every: Duration::from_millis(args.progress_ms.max(10)),
        max_attempts: args.max_attempts,
        results: args.cluster.results.clone(),
        wait_for_nodes: args.wait_for_nodes,
        backends: (!args.no_gpu).then_some(BackendSettings {
            gpu_slots_per_device: args.gpu_slots,
            gpu_reserve_bytes: args.gpu_reserve_mb << 20,
            gpu_shard_budget_bytes: args.gpu_shard_mb << 20,
        }),
        rank_by: args.rank_by.unwrap_or(RankMetric::Sharpe),
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
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Runs a sweep with command-line settings, in the role they select (see
/// [`ClusterArgs`]): locally or as the head, it prints the leaderboard and a summary and writes
/// `results.csv`, `results.parquet` and `leaderboard.csv` to `--out` (default
/// `out/<strategy>`), returning them; as a worker it serves heads until SIGTERM and returns
/// `None`. The output folder and the results root are checked writable before anything is
/// computed.
///
/// # Errors
/// As [`run_sweep`], [`Error::InvalidSweep`] for contradictory settings, [`Error::Output`] if
/// the output folder or the results root cannot be written (checked first), and, after
/// everything was written locally, [`Error::NotPersisted`] when the results root failed to
/// record the sweep or [`Error::FailedCells`] when cells failed (unless
/// `--allow-failed-cells`). [`Error::exit_code`] maps each to the process's exit status.
pub fn run(sweep: Sweep, args: &RunArgs) -> Result<Option<SweepReport>> {
    init_tracing();
    let config = args
        .cluster
        .resolve()
        .map_err(|problem| Error::InvalidSweep {
            strategy: sweep.strategy().name.to_owned(),
            problems: vec![problem],
        })?;
    tracing::info!(role = %config.role, node = %config.node_name, reason = %config.role_reason,
        "role chosen");
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    check_threads(args.threads, config.role).map_err(|problem| Error::InvalidSweep {
        strategy: sweep.strategy().name.to_owned(),
        problems: vec![problem],
    })?;
    let (sweep, opts) = apply_args(sweep, args);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads.clamp(2, 4))
        .enable_all()
        .thread_name("gridtest-rt")
        .build()
        .map_err(runtime_error)?;
    if let Some(sweep_id) = &args.replay {
        let root = Location::parse(args.cluster.results.as_deref().unwrap_or("results"))
            .map_err(|e| Error::Runtime(e.to_string()))?;
        let scope = args.cell.clone().unwrap_or(crate::replay::ReplayScope::All);
        let report =
            runtime.block_on(crate::replay::replay(&root, sweep_id, &scope, args.force))?;
        for c in &report.changed_files {
            println!("data changed (forced): {}: {}", c.url, c.change);
        }
        println!(
            "replayed {} cells of sweep {sweep_id}: {} identical, {} different",
            report.cells,
            report.identical,
            report.differences.len()
        );
        for (key, before, after) in report.differences.iter().take(10) {
            println!("  {key}: recorded {before:?}, now {after:?}");
        }
        if let Some((key, _, _)) = report.differences.first() {
            return Err(Error::ReplayMismatch {
                sweep: sweep_id.clone(),
                cells: report.cells,
                differing: report.differences.len(),
                first: key.to_string(),
            });
        }
        return Ok(None);
    }
    // `--serve` makes a head serve submissions; workers ignore it, so that every ordinal of a
    // StatefulSet can share one command line.
    if args.serve {
        match config.role {
            Role::Head => {
                runtime.block_on(crate::cluster::head::serve(&opts, &config))?;
                return Ok(None);
            }
            Role::Worker => {}
            Role::Local => {
                return Err(Error::InvalidSweep {
                    strategy: sweep.strategy().name.to_owned(),
                    problems: vec!["--serve needs the head role (--role head)".to_owned()],
                });
            }
        }
    }
    if config.role == Role::Worker {
        runtime.block_on(crate::cluster::worker::run_worker(&opts, &config))?;
        return Ok(None);
    }
    // Outputs are checked before anything is computed: a sweep must not run for minutes only
    // to find that it cannot write its results.
    let out_dir = out_dir(args, sweep.strategy().name);
    output::prepare_dir(&out_dir)?;
    if let Some(root) = &opts.results {
        let root = Location::parse(root).map_err(|e| Error::Output {
            path: root.clone(),
            reason: e.to_string(),
        })?;
        runtime.block_on(crate::persist::probe_root(&root))?;
    }
    let results = match config.role {
        Role::Head => runtime.block_on(crate::cluster::head::run_head(&sweep, &opts, &config))?,
        _ => runtime.block_on(run_sweep(&sweep, &opts))?,
    };
    let report = report(results, args, out_dir)?;
    outcome(report, args.allow_failed_cells).map(Some)
}

/// Scorer threads per node beyond this multiple of the cores are refused: they only add memory
/// (each holds a unit's state) and contention.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// `--threads`: at most [`MAX_THREADS_PER_CORE`] per core of this machine, and 0 (no CPU
/// scorers) only on a cluster node: a local run refuses it rather than silently running one.
fn check_threads(threads: Option<usize>, role: Role) -> std::result::Result<(), String> {
    let cores = default_threads();
    match threads {
        Some(0) if role == Role::Local => Err(
            "--threads 0 means no scorer on this node, which only a head or a worker can have: \
             a local run needs at least 1"
                .to_owned(),
        ),
        Some(n) if n > MAX_THREADS_PER_CORE * cores => Err(format!(
            "--threads {n} is more than {MAX_THREADS_PER_CORE} per core of this machine's {cores} \
             cores ({}): extra scorer threads only add memory and contention",
            MAX_THREADS_PER_CORE * cores
        )),
        _ => Ok(()),
    }
}

/// The output folder: `--out`, else `out/<strategy>`.
fn out_dir(args: &RunArgs, strategy: &str) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(strategy))
}

/// A finished, reported sweep as the process sees it: an error when the results root could
/// not record it, or when cells failed (unless allowed).
fn outcome(report: SweepReport, allow_failed_cells: bool) -> Result<SweepReport> {
    let info = report.results.run_info();
    if let Some(why) = info.and_then(|i| i.persist_failure.clone()) {
        return Err(Error::NotPersisted {
            sweep: info.map(|i| i.sweep_id.clone()).unwrap_or_default(),
            reason: why,
            out: report.out_dir.display().to_string(),
        });
    }
    let failed = report.results.failures().count();
    if failed > 0 && !allow_failed_cells {
        let first = report
            .results
            .failures()
            .next()
            .map(|(set, shard, f)| format!("[{set}] on {shard}: {f}"))
            .unwrap_or_default();
        return Err(Error::FailedCells {
            failed,
            cells: report.results.cells().len(),
            first,
            out: report.out_dir.display().to_string(),
        });
    }
    Ok(report)
}

/// Prints and writes a finished sweep.
fn report(results: SweepResults, args: &RunArgs, out_dir: PathBuf) -> Result<SweepReport> {
    let rank_by = args.rank_by.unwrap_or(RankMetric::Sharpe);
    let leaderboard = results.leaderboard(rank_by);
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
    if let Some(info) = results.run_info() {
        println!(
            "sweep {}: {} cells computed by this run, {} resumed from the ledger",
            info.sweep_id,
            info.computed,
            cells - info.computed
        );
        for (node, s) in &info.nodes {
            println!(
                "  node {node}: {} units, {} cells, {:.3e} evaluations/s per scorer, {} units requeued{}",
                s.units,
                s.cells,
                s.speed(),
                s.requeued,
                if s.slow { ", SLOW" } else { "" }
            );
        }
        for (slot, s) in &info.gpu_slots {
            println!(
                "  GPU scorer {slot}: {} units, {} cells, {:.3e} evaluations/s",
                s.units,
                s.cells,
                s.speed()
            );
        }
    }
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
