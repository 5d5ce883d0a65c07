//! The command line of a sweep binary: settings ([`RunArgs`]), the one-call entry points
//! [`run`] and [`main`](crate::main) that pick the role, print the leaderboard and write the
//! output folder, and the tracing set-up. The in-process run itself is
//! [`run_sweep`].

mod args;
mod bar;
mod cell_trace;
mod command_line;
mod dry_run;
mod logging;
mod pools;
mod settings;
mod summary;

use std::path::PathBuf;

use crate::cluster::{ClusterConfig, Role};
use crate::execute::default_threads;
use crate::sweep::{Halving, HalvingReport, Leaderboard, Sweep, SweepResults, output};
use crate::{Error, Result};

pub use args::{LogArgs, LogFormat, RunArgs};
pub use command_line::{FIRST_FLAGS, parse, shape};
pub use logging::{colour_wanted, init_logging, print_error};
pub use settings::apply_args;
use settings::read_prices;
pub use summary::HALVING_JSON;

pub use crate::execute::{
    DEFAULT_CACHE_MB, DEFAULT_UNIT_EVALS, MIN_CLUSTER_SCORERS, RunOptions, run_sweep,
};

/// A finished run: the results, the leaderboard and where they were written.
#[derive(Debug)]
pub struct SweepReport {
    /// Every cell.
    pub results: SweepResults,
    /// The ranking.
    pub leaderboard: Leaderboard,
    /// The output folder.
    pub out_dir: PathBuf,
    /// The rungs of a successive-halving search (`--halving`); `results` are its last rung's.
    pub search: Option<HalvingReport>,
}

/// Installs the `tracing` subscriber (level from `RUST_LOG`, default `info`; text lines)
/// unless one is set; [`init_logging`] takes the command line's logging settings.
pub fn init_tracing() {
    init_logging(&LogArgs::default());
}

/// Runs a sweep with command-line settings, in the role they select (see
/// [`ClusterArgs`](crate::cli::ClusterArgs)): locally or as the head, it prints the leaderboard and a summary and writes
/// `results.csv`, `results.parquet` and `leaderboard.csv` to `--out` (default
/// `out/<strategy>`), returning them; as a worker it serves heads until SIGTERM and returns
/// `None`. The output folder and the results root are checked writable before anything is
/// computed.
///
/// # Errors
/// As [`run_sweep`], [`Error::Config`] for contradictory settings, [`Error::Output`] or
/// [`Error::Persist`] if the output folder or the results root cannot be written (checked first), and, after
/// everything was written locally, [`Error::NotPersisted`] when the results root failed to
/// record the sweep or [`Error::FailedCells`] when cells failed (unless
/// `--allow-failed-cells`). [`Error::exit_code`] maps each to the process's exit status.
pub fn run(sweep: Sweep, args: &RunArgs) -> Result<Option<SweepReport>> {
    init_logging(&args.log);
    let config = args.cluster.resolve().map_err(|problem| Error::Config {
        problems: vec![problem],
    })?;
    tracing::info!(role = %config.role, node = %config.node_name, reason = %config.role_reason,
        "role chosen");
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    check_threads(args.threads, config.role, args.require_gpu).map_err(|problem| {
        Error::Config {
            problems: vec![problem],
        }
    })?;
    check_status_file(args.status_file.as_deref())?;
    let (sweep, mut opts) = apply_args(sweep, args, &config);
    if args.dry_run {
        dry_run::print(&sweep, &opts)?;
        return Ok(None);
    }
    opts.prices = args.prices.as_deref().map(read_prices).transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads.clamp(2, 4))
        .enable_all()
        .thread_name("gridtest-rt")
        .build()
        .map_err(|e| Error::actors("starting the async runtime", e))?;
    if let Some(addr) = &args.http {
        runtime.block_on(start_probes(addr, &opts, config.role))?;
    }
    // The head sizes the worker pools while it runs.
    let scaler = if config.role == Role::Head {
        pools::start(&runtime, args, &opts)?
    } else {
        None
    };
    check_trades_flag(args)?;
    if let Some(sweep_id) = &args.replay {
        if matches!(args.trades, Some(Some(_))) || args.equity.is_some() {
            runtime.block_on(cell_trace::write(sweep_id, args, &opts))?;
        } else {
            runtime.block_on(cell_trace::replay(sweep_id, args, &opts))?;
        }
        return Ok(None);
    }
    if serve_or_work(&runtime, args, &opts, &config)? {
        return Ok(None);
    }
    // Outputs are checked before anything is computed: a sweep must not run for minutes only
    // to find that it cannot write its results.
    let out_dir = out_dir(args, sweep.strategy().name);
    output::prepare_dir(&out_dir)?;
    if let Some(root) = &opts.results {
        runtime.block_on(crate::persist::probe_root(root))?;
    }
    cancel_on_signals(&runtime, opts.cancel.clone())?;
    let mut bar = bar::Bar::follow(&runtime, &opts.progress, !args.no_progress);
    let computed = runtime.block_on(compute(&sweep, &opts, &config, args));
    bar.clear();
    if let Some(scaler) = scaler {
        scaler.settle(&runtime);
    }
    let (results, search) = computed?;
    let report = summary::report(results, args, out_dir, search)?;
    outcome(report, args.allow_failed_cells).map(Some)
}

/// The roles that compute no sweep of their own here: a head with `--serve` serves submissions,
/// a worker serves heads; `true` when this process was one of them (and is done). `--serve` is
/// ignored by workers, so that every ordinal of a StatefulSet can share one command line.
fn serve_or_work(
    runtime: &tokio::runtime::Runtime,
    args: &RunArgs,
    opts: &RunOptions,
    config: &ClusterConfig,
) -> Result<bool> {
    if args.serve {
        match config.role {
            #[cfg(feature = "cluster")]
            Role::Head => {
                runtime.block_on(crate::cluster::head::serve(opts, config))?;
                return Ok(true);
            }
            Role::Worker => {}
            _ => {
                return Err(Error::Config {
                    problems: vec!["--serve needs the head role (--role head)".to_owned()],
                });
            }
        }
    }
    #[cfg(feature = "cluster")]
    if config.role == Role::Worker {
        runtime.block_on(crate::cluster::worker::run_worker(opts, config))?;
        return Ok(true);
    }
    // Without the cluster feature, resolving the settings refused every other role.
    #[cfg(not(feature = "cluster"))]
    let _ = (runtime, opts);
    Ok(false)
}

/// Binds `addr` and serves the probes and metrics on it for the life of the process.
async fn start_probes(addr: &str, opts: &RunOptions, role: Role) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Config {
            problems: vec![format!("--http {addr}: cannot listen: {e}")],
        })?;
    let bound = listener
        .local_addr()
        .map_or_else(|_| addr.to_owned(), |a| a.to_string());
    let probes = crate::observe::Probes {
        readiness: opts.status.readiness(),
        progress: opts.progress.clone(),
    };
    if role == Role::Local {
        probes.readiness.set(true);
    }
    tracing::info!(addr = %bound, "serving /healthz, /readyz and /metrics");
    opts.status
        .emit(crate::status::StatusEvent::Probes { addr: bound });
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(crate::observe::serve(listener, probes, stop));
    Ok(())
}

/// Runs the sweep (or, with `--halving`, the search) in this node's role.
async fn compute(
    sweep: &Sweep,
    opts: &RunOptions,
    config: &ClusterConfig,
    args: &RunArgs,
) -> Result<(SweepResults, Option<HalvingReport>)> {
    let search = args.halving.then_some(Halving {
        eta: args.eta,
        rungs: args.rungs,
    });
    #[cfg(feature = "cluster")]
    if config.role == Role::Head {
        return match search {
            None => crate::cluster::head::run_head(sweep, opts, config)
                .await
                .map(|r| (r, None)),
            Some(h) => crate::cluster::head::run_head_search(sweep, opts, config, h)
                .await
                .map(|(r, s)| (r, Some(s))),
        };
    }
    // Only a local role gets here (resolving refuses the others without the cluster feature).
    #[cfg(not(feature = "cluster"))]
    let _ = config;
    match search {
        None => run_sweep(sweep, opts).await.map(|r| (r, None)),
        Some(h) => crate::execute::run_search(sweep, opts, h)
            .await
            .map(|(r, s)| (r, Some(s))),
    }
}

/// Ends a sweep binary: `SUCCESS` for `Ok`, else prints the error ([`print_error`]: `error: …`,
/// or a JSON line beside JSON logs) and returns its documented exit status.
///
/// ```no_run
/// # fn sweep() -> gridtest::Sweep { unimplemented!() }
/// fn main() -> std::process::ExitCode {
///     gridtest::exit_status(gridtest::main(sweep()))
/// }
/// ```
pub fn exit_status<T>(result: Result<T>) -> std::process::ExitCode {
    match result {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            print_error(&e.to_string(), e.exit_code());
            std::process::ExitCode::from(e.exit_code())
        }
    }
}

/// SIGTERM or SIGINT cancels the run: the sweep stops cleanly (its ledger flushed, its lease
/// released) and the process exits with [`crate::exit::INTERRUPTED`]; a second signal exits at
/// once.
fn cancel_on_signals(
    runtime: &tokio::runtime::Runtime,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let _context = runtime.enter();
    let listen = |kind: SignalKind, name: &'static str| {
        signal(kind).map_err(|source| Error::Signal {
            signal: name,
            source,
        })
    };
    let mut term = listen(SignalKind::terminate(), "SIGTERM")?;
    let mut int = listen(SignalKind::interrupt(), "SIGINT")?;
    runtime.spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("signal received: stopping the sweep cleanly (again to exit at once)");
        cancel.cancel();
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        std::process::exit(i32::from(crate::exit::INTERRUPTED));
    });
    Ok(())
}

/// Scorer threads per node beyond this multiple of the cores are refused: they only add memory
/// (each holds a unit's state) and contention.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// `--threads`: at most [`MAX_THREADS_PER_CORE`] per core of this machine, and 0 (no CPU
/// scorers) only on a head, or on a worker that must have GPU scorers (`--require-gpu`): a
/// local run, or a worker that would take no work, refuses it.
fn check_threads(
    threads: Option<usize>,
    role: Role,
    require_gpu: bool,
) -> std::result::Result<(), String> {
    let cores = default_threads();
    match threads {
        Some(0) if role == Role::Local => Err(
            "--threads 0 means no scorer on this node, which only a head or a worker can have: \
             a local run needs at least 1"
                .to_owned(),
        ),
        Some(0) if role == Role::Worker && !require_gpu => Err(
            "--threads 0 on a worker means no CPU scorer: the node would take no work (and the \
             head would wait for it); give at least 1, or --require-gpu for a worker that \
             scores on its GPUs only"
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

/// `--status-file`: opened for appending up front, so that a path that cannot be written is an
/// error now rather than events lost to a warning later.
fn check_status_file(path: Option<&std::path::Path>) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
        .map_err(|e| Error::Config {
            problems: vec![format!(
                "--status-file {}: cannot be written: {e}",
                path.display()
            )],
        })
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
    if let Some(info) = report.results.run_info()
        && let Some(why) = info.persist_failure.clone()
    {
        return Err(Error::NotPersisted {
            sweep: info.sweep_id.clone(),
            reason: why,
            out: report.out_dir.display().to_string(),
        });
    }
    let failed = report.results.failed();
    if failed > 0 && !allow_failed_cells {
        let first = report
            .results
            .failures()
            .next()
            .map(|(set, shard, f)| format!("[{set}] on {shard}: {f}"))
            .unwrap_or_default();
        return Err(Error::FailedCells {
            failed,
            cells: report.results.recorded(),
            first,
            out: report.out_dir.display().to_string(),
        });
    }
    // Cells of earlier rungs of a search that failed (their sets did not go on).
    let earlier = report.search.as_ref().and_then(|s| {
        let rungs = s.rungs.split_last().map_or(&[][..], |(_, r)| r);
        rungs.iter().find(|r| r.failed > 0).map(|r| {
            let failed = rungs.iter().map(|r| r.failed).sum();
            (failed, r.clone())
        })
    });
    if let Some((failed, rung)) = earlier
        && !allow_failed_cells
    {
        return Err(Error::FailedCells {
            failed,
            cells: report.results.recorded(),
            first: format!(
                "{} cells of rung {} (sweep {}) failed: see that sweep's results",
                rung.failed, rung.rung, rung.sweep_id
            ),
            out: report.out_dir.display().to_string(),
        });
    }
    Ok(report)
}

/// `--trades` alone belongs to a sweep (every cell's round trips), `--trades FILE` to a
/// replayed cell (its fills).
fn check_trades_flag(args: &RunArgs) -> Result<()> {
    let problem = match (&args.replay, &args.trades) {
        (None, Some(Some(file))) => format!(
            "--trades {}: a file takes one cell's fills (--replay ID --cell SET@SYMBOL --trades \
             FILE); a sweep writes every cell's round trips to trades.parquet with --trades alone",
            file.display()
        ),
        (Some(_), Some(None)) => "--trades with --replay needs --cell SET@SYMBOL and a FILE for \
             the cell's fills"
            .to_owned(),
        _ => return Ok(()),
    };
    Err(Error::Config {
        problems: vec![problem],
    })
}
