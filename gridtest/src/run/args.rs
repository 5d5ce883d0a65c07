//! [`RunArgs`]: the settings every sweep binary accepts, each from its flag, its `GRIDTEST_*`
//! variable or a `--config` file, grouped under help headings.

use std::path::PathBuf;

use chrono::NaiveDate;

use crate::cli::ClusterArgs;
use crate::metrics::RankMetric;
use crate::sweep::LeaderboardRows;

use super::{DEFAULT_CACHE_MB, DEFAULT_UNIT_EVALS};

/// Settings every sweep binary accepts on its command line (and from `GRIDTEST_*` variables).
/// Flatten it into your own `clap` parser to add flags of your own.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunArgs {
    /// Dataset root: a path, file:///… or s3://bucket/prefix.
    #[arg(help_heading = "Data", long, env = "GRIDTEST_DATA")]
    pub data: Option<String>,
    /// Output folder for results.csv, results.parquet and leaderboard.csv.
    #[arg(help_heading = "Output", long, env = "GRIDTEST_OUT")]
    pub out: Option<PathBuf>,
    /// Symbols to sweep, comma-separated (default: all in the dataset).
    #[arg(
        help_heading = "Data",
        long,
        env = "GRIDTEST_SYMBOLS",
        value_delimiter = ','
    )]
    pub symbols: Option<Vec<String>>,
    /// Serve `/healthz`, `/readyz` and `/metrics` (Prometheus) on this address, e.g.
    /// `0.0.0.0:9090` (port 0: any free port, reported in the status file).
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_HTTP",
        value_name = "ADDR"
    )]
    pub http: Option<String>,
    /// A universe for a portfolio strategy, `NAME=SYM1,SYM2,…` (repeat for several): one shard
    /// of its members per sweep, in place of one per symbol.
    #[arg(
        help_heading = "Data",
        long = "universe",
        env = "GRIDTEST_UNIVERSE",
        value_delimiter = ';',
        value_name = "NAME=SYMBOLS"
    )]
    pub universes: Vec<crate::data::Universe>,
    /// First date, YYYY-MM-DD (inclusive).
    #[arg(help_heading = "Data", long, env = "GRIDTEST_FROM")]
    pub from: Option<NaiveDate>,
    /// Last date, YYYY-MM-DD (inclusive).
    #[arg(help_heading = "Data", long, env = "GRIDTEST_TO")]
    pub to: Option<NaiveDate>,
    /// Commission, basis points of traded notional.
    #[arg(help_heading = "Execution", long, env = "GRIDTEST_COMMISSION_BPS")]
    pub commission_bps: Option<f64>,
    /// Slippage, basis points of traded notional.
    #[arg(help_heading = "Execution", long, env = "GRIDTEST_SLIPPAGE_BPS")]
    pub slippage_bps: Option<f64>,
    /// Largest absolute target weight.
    #[arg(help_heading = "Execution", long, env = "GRIDTEST_MAX_LEVERAGE")]
    pub max_leverage: Option<f64>,
    /// Trading days per year: Sharpe and Sortino are annualised by `days · events / distinct
    /// dates` events per year (default 252).
    #[arg(
        help_heading = "Execution",
        long,
        env = "GRIDTEST_TRADING_DAYS_PER_YEAR"
    )]
    pub trading_days_per_year: Option<f64>,
    /// Events per year, stated for every shard (e.g. 252 for daily bars, 8760 for hourly bars of
    /// a 24/7 market), instead of the derivation from trading days.
    #[arg(help_heading = "Execution", long, env = "GRIDTEST_PERIODS_PER_YEAR")]
    pub periods_per_year: Option<f64>,
    /// Metric conventions and the orders path's broker.
    #[command(flatten)]
    pub conventions: crate::cli::ExecArgs,
    /// The head's autoscaler of the worker pools.
    #[command(flatten)]
    pub autoscale: crate::cli::AutoscaleArgs,
    /// Scorer threads (default: one per core).
    #[arg(help_heading = "Run", long, env = "GRIDTEST_THREADS")]
    pub threads: Option<usize>,
    /// Metric to rank the leaderboard by, its mean across symbols: sharpe (default), sortino,
    /// total_return, max_drawdown, profit_factor or win_rate; or dsr, the deflated Sharpe
    /// ratio of each set's daily returns (needs them recorded: not with --returns never).
    #[arg(help_heading = "Output", long, env = "GRIDTEST_RANK_BY")]
    pub rank_by: Option<RankMetric>,
    /// Sets ranked in leaderboard.csv: the best N, or `all` (every cell is in results.parquet
    /// whatever this says).
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_LEADERBOARD_ROWS",
        value_name = "N|all",
        default_value_t = LeaderboardRows::default()
    )]
    pub leaderboard_rows: LeaderboardRows,
    /// Rows of the leaderboard to print.
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_TOP",
        default_value_t = 10
    )]
    pub top: usize,
    /// Shard cache budget per node, MiB; longer histories are read by slices of days.
    #[arg(help_heading = "Run", long, env = "GRIDTEST_CACHE_MB", default_value_t = DEFAULT_CACHE_MB)]
    pub cache_mb: u64,
    /// Work unit size, tick-parameter evaluations (a whole number, also as `2.5e8`).
    #[arg(
        help_heading = "Run",
        long,
        env = "GRIDTEST_UNIT_EVALS",
        default_value_t = DEFAULT_UNIT_EVALS,
        value_parser = whole_number
    )]
    pub unit_evals: u64,
    /// No progress bar.
    #[arg(help_heading = "Output", long, env = "GRIDTEST_NO_PROGRESS")]
    pub no_progress: bool,
    /// Append status events (listening, node lost/back/slow, drained, sweep finished) to this
    /// file as JSON lines, for scripts and tests (see `gridtest::status`).
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_STATUS_FILE",
        value_name = "PATH"
    )]
    pub status_file: Option<PathBuf>,
    /// Period of the progress log line and `progress` status event, ms.
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_PROGRESS_MS",
        default_value_t = 5000
    )]
    pub progress_ms: u64,
    /// Attempts a failing cell gets before its failure is final (1 to 100).
    #[arg(
        help_heading = "Run",
        long,
        env = "GRIDTEST_MAX_ATTEMPTS",
        default_value_t = crate::sweep::DEFAULT_MAX_ATTEMPTS,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::sweep::MAX_ATTEMPTS))
    )]
    pub max_attempts: u32,
    /// Head: hand out no work until this many nodes ask for some (at most two minutes).
    #[arg(
        help_heading = "Cluster",
        long,
        env = "GRIDTEST_WAIT_FOR_NODES",
        default_value_t = 0
    )]
    pub wait_for_nodes: usize,
    /// GPU scorers per device (when gridtest-cuda is linked and a GPU is found).
    #[arg(
        help_heading = "GPU",
        long,
        env = "GRIDTEST_GPU_SLOTS",
        default_value_t = 4
    )]
    pub gpu_slots: usize,
    /// Device memory kept free on each GPU, MiB.
    #[arg(
        help_heading = "GPU",
        long,
        env = "GRIDTEST_GPU_RESERVE_MB",
        default_value_t = 512
    )]
    pub gpu_reserve_mb: u64,
    /// Device memory for resident shards per GPU, MiB.
    #[arg(
        help_heading = "GPU",
        long,
        env = "GRIDTEST_GPU_SHARD_MB",
        default_value_t = 4096
    )]
    pub gpu_shard_mb: u64,
    /// Exit 0 even when some cells failed (they are still reported and written). Without it a
    /// sweep with failed cells exits with status 3.
    #[arg(help_heading = "Run", long, env = "GRIDTEST_ALLOW_FAILED_CELLS")]
    pub allow_failed_cells: bool,
    /// Run no GPU scorers even if GPUs are found.
    #[arg(help_heading = "GPU", long, env = "GRIDTEST_NO_GPU")]
    pub no_gpu: bool,
    /// Refuse to start without a GPU scorer (a GPU pod whose device is missing or unusable
    /// fails, rather than quietly scoring on its CPU cores).
    #[arg(
        help_heading = "GPU",
        long,
        env = "GRIDTEST_REQUIRE_GPU",
        conflicts_with = "no_gpu"
    )]
    pub require_gpu: bool,
    /// When to record each cell's daily returns for the research report (DSR, PBO,
    /// walk-forward): auto (unless this node runs GPU scorers, whose kernels do not record
    /// them), always (GPU units then run on the CPU engine) or never.
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_RETURNS",
        value_parser = recording_parser(),
        default_value_t = crate::execute::Recording::Auto
    )]
    pub returns: crate::execute::Recording,
    /// Memory for the sets' daily returns, MiB (8 bytes per set and day).
    #[arg(help_heading = "Output", long, env = "GRIDTEST_RETURNS_MB", default_value_t = crate::execute::DEFAULT_RETURNS_MB)]
    pub returns_memory: u64,
    /// Also write every set's daily returns to returns.parquet.
    #[arg(help_heading = "Output", long, env = "GRIDTEST_WRITE_RETURNS")]
    pub write_returns: bool,
    /// Re-execute the persisted sweep with this id (under --results) and check that every
    /// metric is identical to the record, bit for bit.
    #[arg(
        help_heading = "Replay",
        long,
        env = "GRIDTEST_REPLAY",
        value_name = "SWEEP_ID"
    )]
    pub replay: Option<crate::sweep::SweepId>,
    /// With --replay: only this cell, PARAM_SET_ID@SYMBOL.
    #[arg(
        help_heading = "Replay",
        long,
        env = "GRIDTEST_CELL",
        value_name = "PARAM_SET_ID@SYMBOL",
        requires = "replay"
    )]
    pub cell: Option<crate::replay::ReplayScope>,
    /// With --replay: run even if the data changed since the sweep.
    #[arg(
        help_heading = "Replay",
        long,
        env = "GRIDTEST_FORCE",
        requires = "replay"
    )]
    pub force: bool,
    /// Write every cell's round trips (entry and exit time, price, size, P&L, return, fees,
    /// the open trade) to trades.parquet as the cells finish. With --replay and --cell, a FILE:
    /// the cell's every fill, as CSV.
    #[arg(
        help_heading = "Output",
        long,
        value_name = "FILE",
        num_args = 0..=1
    )]
    pub trades: Option<Option<PathBuf>>,
    /// With --replay --cell: write the cell's equity after every event to this CSV.
    #[arg(
        help_heading = "Replay",
        long,
        env = "GRIDTEST_EQUITY",
        value_name = "FILE",
        requires = "cell"
    )]
    pub equity: Option<PathBuf>,
    /// Price file (JSON: owned hardware cost, lifetime, cores, watts; power price; rented price
    /// per hour and cores) to price the sweep in cost.json.
    #[arg(
        help_heading = "Output",
        long,
        env = "GRIDTEST_PRICES",
        value_name = "FILE"
    )]
    pub prices: Option<PathBuf>,
    /// Random search: sweep a seeded sample of N of the grid's sets (every one counts as a
    /// trial of the DSR), for grids too large to sweep exhaustively.
    #[arg(
        help_heading = "Search",
        long,
        env = "GRIDTEST_RANDOM",
        value_name = "N"
    )]
    pub random: Option<u64>,
    /// Successive halving: score every set on a prefix of the dates, the best 1/--eta go on to
    /// a prefix --eta times longer, until the survivors are scored on the whole history (each
    /// rung a sweep of its own; the last one's DSR counts every set tried).
    #[arg(help_heading = "Search", long, env = "GRIDTEST_HALVING")]
    pub halving: bool,
    /// With --halving: the reduction factor.
    #[arg(
        help_heading = "Search",
        long,
        env = "GRIDTEST_ETA",
        default_value_t = 3,
        requires = "halving"
    )]
    pub eta: u32,
    /// With --halving: rungs at most (fewer when the history or the grid is too small).
    #[arg(
        help_heading = "Search",
        long,
        env = "GRIDTEST_RUNGS",
        default_value_t = 4,
        requires = "halving"
    )]
    pub rungs: u32,
    /// Seed of --random.
    #[arg(
        help_heading = "Search",
        long,
        env = "GRIDTEST_SEED",
        default_value_t = 0,
        requires = "random"
    )]
    pub seed: u64,
    /// Head: run no sweep of its own; serve sweeps submitted with `gridtest submit` until
    /// SIGTERM, one after another, each persisted under --results (ignored by workers).
    #[arg(help_heading = "Cluster", long, env = "GRIDTEST_SERVE")]
    pub serve: bool,
    /// Cluster settings.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Read settings from this TOML file (keys are the long flags: `rank-by = "sortino"`); a
    /// flag or a `GRIDTEST_*` variable wins over it.
    #[arg(
        help_heading = "Run",
        long,
        env = "GRIDTEST_CONFIG",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    /// Plan the sweep and print its size (parameter sets, shards, cells, units, evaluations)
    /// with estimates of its time and memory, as JSON; compute nothing.
    #[arg(help_heading = "Run", long, env = "GRIDTEST_DRY_RUN")]
    pub dry_run: bool,
    /// Print this command's completion script for a shell and exit (e.g.
    /// `--completions bash > /etc/bash_completion.d/sweep`).
    #[arg(
        help_heading = "Run",
        long,
        value_name = "SHELL",
        env = "GRIDTEST_COMPLETIONS"
    )]
    pub completions: Option<clap_complete::Shell>,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// A count written as an integer or in scientific notation (`250000000`, `2.5e8`).
fn whole_number(text: &str) -> Result<u64, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(n);
    }
    let x: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "checked to be a whole number within u64"
    )]
    if x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64 {
        Ok(x as u64)
    } else {
        Err(format!("`{text}` is not a whole number"))
    }
}

/// How log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal unless `NO_COLOR` is set).
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, message and fields), for log collectors.
    Json,
}

/// Logging settings (to stderr; `RUST_LOG`, when set, overrides the level).
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Logging")]
pub struct LogArgs {
    /// Log format.
    #[arg(long, env = "GRIDTEST_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log level: error, warn, info (default), debug or trace.
    #[arg(long, env = "GRIDTEST_LOG_LEVEL", value_name = "LEVEL")]
    pub log_level: Option<tracing::Level>,
    /// More log lines (-v: debug, -vv: trace).
    #[arg(short, long, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Fewer log lines (-q: warnings and errors, -qq: errors only).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub quiet: u8,
}

/// `--returns`: one of [`Recording::NAMES`](crate::execute::Recording::NAMES), listed in the help.
fn recording_parser() -> impl clap::builder::TypedValueParser<Value = crate::execute::Recording> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(crate::execute::Recording::NAMES)
        .map(|name| name.parse().expect("a possible value parses"))
}

#[cfg(test)]
mod tests {
    use clap::{Args, Command};

    /// Variables that do not follow `GRIDTEST_<LONG FLAG>`: a list of pools in one variable,
    /// and a name kept from before the rule.
    const RENAMED: &[(&str, &str)] = &[
        ("pool", "GRIDTEST_POOLS"),
        ("returns-memory", "GRIDTEST_RETURNS_MB"),
    ];
    /// Flags with no variable: counts (`-v`, `-q`) and clap's own.
    /// Flags without a variable: counts, clap's own, and `--trades`, whose value is optional
    /// (alone on a sweep, with a file on a replayed cell).
    const NO_VARIABLE: &[&str] = &["verbose", "quiet", "help", "version", "trades"];

    #[test]
    fn counts_read_in_scientific_notation_too() {
        assert_eq!(super::whole_number("250000000"), Ok(250_000_000));
        assert_eq!(super::whole_number("2.5e8"), Ok(250_000_000));
        assert!(super::whole_number("2.5").is_err());
        assert!(super::whole_number("-1e3").is_err());
        assert!(super::whole_number("many").is_err());
    }

    #[test]
    fn every_flag_has_its_gridtest_variable_and_a_help_heading() {
        let command = super::RunArgs::augment_args(Command::new("sweep"));
        let mut checked = 0;
        let mut wrong = Vec::new();
        for arg in command.get_arguments() {
            let long = arg.get_long().expect("every setting is a long flag");
            if NO_VARIABLE.contains(&long) {
                continue;
            }
            let expected = RENAMED.iter().find(|(l, _)| *l == long).map_or_else(
                || format!("GRIDTEST_{}", long.to_uppercase().replace('-', "_")),
                |(_, v)| (*v).to_owned(),
            );
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            if env.as_deref() != Some(expected.as_str()) {
                wrong.push(format!("--{long}: {env:?}, not {expected}"));
            }
            assert!(arg.get_help_heading().is_some(), "--{long} has no heading");
            checked += 1;
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        assert!(checked > 60, "only {checked} flags seen");
    }
}
