//! `gridtest`: tools around sweeps that need no strategy code.
//!
//! * `gridtest ingest` — CSV or Parquet with any column names → the dataset layout.
//! * `gridtest submit` — a sweep to a running head (strategy by registered name), with its
//!   progress and leaderboard streamed back.
//! * `gridtest list`, `gridtest cancel ID`, `gridtest follow ID` — the sweeps of a serving
//!   head: all of them, cancel one, follow one to its leaderboard.
//! * `gridtest report` — a persisted sweep's `report.html` drawn again from its files.
//! * `gridtest completions SHELL` — the completion script.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use datafusion::arrow::datatypes::TimeUnit;
use gridtest::DataKind;
use gridtest::data::Dataset;
use gridtest::ingest::{IngestSpec, TsFormat, ingest};

#[derive(Parser)]
#[command(
    version,
    about = "gridtest tools: ingest market data, submit sweeps to a running cluster, redraw a sweep's report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert CSV or Parquet files into the `symbol=X/date=YYYY-MM-DD` Parquet layout.
    Ingest(Box<IngestArgs>),
    #[cfg(feature = "cluster")]
    /// Submit a sweep to a running head and follow it.
    Submit(Box<gridtest::submit::SubmitArgs>),
    #[cfg(feature = "cluster")]
    /// List the sweeps a serving head knows: queued, running and ended.
    List(gridtest::submit::ListArgs),
    #[cfg(feature = "cluster")]
    /// Cancel a queued or running sweep on a serving head.
    Cancel(gridtest::submit::CancelArgs),
    #[cfg(feature = "cluster")]
    /// Follow any sweep of a serving head: its progress, then its leaderboard.
    Follow(gridtest::submit::FollowArgs),
    /// Draw the report.html of a persisted sweep again, from its files under the results root.
    Report(ReportArgs),
    /// Print the completion script of this command for a shell (bash, zsh, fish, elvish,
    /// powershell), e.g. `gridtest completions bash > /etc/bash_completion.d/gridtest`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// What the input rows are.
#[derive(Clone, Copy, clap::ValueEnum)]
enum KindArg {
    /// ts, price, size.
    Ticks,
    /// ts, open, high, low, close, volume.
    Bars,
}

/// Unit of numeric timestamps since the epoch.
#[derive(Clone, Copy, clap::ValueEnum)]
enum TsUnitArg {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

#[derive(clap::Args)]
struct ReportArgs {
    /// A results root the sweep is persisted under (path, file:// or s3://), followed by the
    /// sweep's id; or, alone, a sweep's output folder (what it wrote with --out).
    results: String,
    /// The sweep's id, when RESULTS is a results root.
    sweep_id: Option<gridtest::sweep::SweepId>,
    /// Folder for report.html and the files it is drawn from (default: out/report-<sweep-id>
    /// from a results root; the output folder itself).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn run_report(a: ReportArgs) -> anyhow::Result<()> {
    let location = gridtest::storage::Location::parse(&a.results)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let page = match (&a.sweep_id, location.local_path()) {
        (Some(id), _) => {
            let out = a
                .out
                .unwrap_or_else(|| PathBuf::from("out").join(format!("report-{id}")));
            runtime.block_on(gridtest::reopen::rebuild_report(&location, id, &out))?
        }
        (None, folder) => {
            let Some(out) = a.out.or(folder) else {
                anyhow::bail!("a sweep folder in a store needs --out, a local folder to draw in");
            };
            runtime.block_on(gridtest::reopen::rebuild_report_from_folder(
                &location, &out,
            ))?
        }
    };
    println!("{}", page.display());
    Ok(())
}

#[derive(clap::Args)]
struct IngestArgs {
    /// Input files (`.parquet` read as Parquet, anything else as CSV).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output dataset root (path, file:// or s3://).
    #[arg(long)]
    output: String,
    /// What the rows are.
    #[arg(long, value_enum, default_value_t = KindArg::Ticks)]
    kind: KindArg,
    /// Column holding the symbol.
    #[arg(long, conflicts_with = "symbol")]
    symbol_col: Option<String>,
    /// Symbol of every row (when there is no symbol column).
    #[arg(long)]
    symbol: Option<String>,
    /// Timestamp column.
    #[arg(long, default_value = "ts")]
    ts_col: String,
    /// Format of text timestamps without an offset (chrono syntax); RFC 3339 is always accepted.
    #[arg(long, default_value = "%Y-%m-%d %H:%M:%S%.f")]
    ts_format: String,
    /// Time zone of text timestamps without an offset (IANA name).
    #[arg(long, default_value = "UTC")]
    tz: String,
    /// Read the timestamp column as a number since the epoch in this unit.
    #[arg(long, value_enum)]
    ts_unit: Option<TsUnitArg>,
    /// Value columns in order, comma-separated (ticks: price,size; bars: open,high,low,close,volume).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// CSV delimiter.
    #[arg(long, default_value = ",")]
    delimiter: char,
    /// Sort each symbol by time instead of rejecting rows that go backwards.
    #[arg(long)]
    sort: bool,
}

fn run_ingest(a: IngestArgs) -> anyhow::Result<()> {
    let kind = match a.kind {
        KindArg::Ticks => DataKind::Ticks,
        KindArg::Bars => DataKind::Bars,
    };
    let ts_format = match a.ts_unit {
        None => TsFormat::Text {
            format: a.ts_format,
            tz: a
                .tz
                .parse()
                .map_err(|e| anyhow::anyhow!("--tz {}: {e}", a.tz))?,
        },
        Some(TsUnitArg::S) => TsFormat::Epoch(TimeUnit::Second),
        Some(TsUnitArg::Ms) => TsFormat::Epoch(TimeUnit::Millisecond),
        Some(TsUnitArg::Us) => TsFormat::Epoch(TimeUnit::Microsecond),
        Some(TsUnitArg::Ns) => TsFormat::Epoch(TimeUnit::Nanosecond),
    };
    let spec = IngestSpec {
        inputs: a.inputs,
        output: Dataset::try_new(&a.output, kind)?,
        symbol_column: a.symbol_col,
        symbol: a.symbol,
        ts_column: a.ts_col,
        ts_format,
        value_columns: a
            .columns
            .unwrap_or_else(|| kind.columns().iter().map(|c| (*c).to_owned()).collect()),
        delimiter: u8::try_from(a.delimiter).context("the delimiter must be one byte")?,
        sort: a.sort,
    };
    let rt = tokio::runtime::Runtime::new()?;
    let summary = rt.block_on(ingest(&spec))?;
    println!(
        "ingested {} rows into {} partitions of {} ({} stale files removed)",
        summary.rows,
        summary.partitions,
        spec.output.url(),
        summary.removed
    );
    for (symbol, s) in &summary.symbols {
        println!(
            "  {symbol}: {} rows over {} days, {} .. {}",
            s.rows, s.days, s.first, s.last
        );
    }
    Ok(())
}

/// Runs the command; an error is printed as the sweep binaries print theirs (`error: …`, its
/// causes after colons, no backtrace) and exits with its documented status.
fn main() -> std::process::ExitCode {
    gridtest::run::init_tracing();
    match command(Cli::parse().command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let code = e
                .downcast_ref::<gridtest::Error>()
                .map_or(gridtest::exit::FAILURE, gridtest::Error::exit_code);
            gridtest::run::print_error(&format!("{e:#}"), code);
            std::process::ExitCode::from(code)
        }
    }
}

fn command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Ingest(a) => run_ingest(*a),
        #[cfg(feature = "cluster")]
        Command::Submit(a) => gridtest::submit::run_submit(&a).map_err(Into::into),
        Command::Report(a) => run_report(a),
        #[cfg(feature = "cluster")]
        Command::List(a) => gridtest::submit::run_list(&a).map_err(Into::into),
        #[cfg(feature = "cluster")]
        Command::Cancel(a) => gridtest::submit::run_cancel(&a).map_err(Into::into),
        #[cfg(feature = "cluster")]
        Command::Follow(a) => gridtest::submit::run_follow(&a).map_err(Into::into),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "gridtest", &mut std::io::stdout());
            Ok(())
        }
    }
}
