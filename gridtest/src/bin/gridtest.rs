//! `gridtest`: tools around sweeps that need no strategy code.
//!
//! * `gridtest ingest` — CSV or Parquet with any column names → the dataset layout.
//! * `gridtest submit` — a sweep to a running head (strategy by registered name), with its
//!   progress and leaderboard streamed back.
//! * `gridtest report` — a persisted sweep's `report.html` drawn again from its files.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use datafusion::arrow::datatypes::TimeUnit;
use gridtest::DataKind;
use gridtest::data::Dataset;
use gridtest::ingest::{IngestSpec, TsFormat, ingest};

#[derive(Parser)]
#[command(
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
    /// Submit a sweep to a running head and follow it.
    Submit(Box<gridtest::submit::SubmitArgs>),
    /// Draw the report.html of a persisted sweep again, from its files under the results root.
    Report(ReportArgs),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// The results root the sweep is persisted under (path, file:// or s3://).
    results: String,
    /// The sweep's id.
    sweep_id: gridtest::sweep::SweepId,
    /// Folder for report.html and the files it is drawn from (default: out/report-<sweep-id>).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn run_report(a: ReportArgs) -> anyhow::Result<()> {
    let root = gridtest::storage::Location::parse(&a.results)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(format!("report-{}", a.sweep_id)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let page = runtime.block_on(gridtest::reopen::rebuild_report(&root, &a.sweep_id, &out))?;
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
    /// ticks (ts, price, size) or bars (ts, open, high, low, close, volume).
    #[arg(long, default_value = "ticks")]
    kind: String,
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
    /// Read the timestamp column as a number since the epoch in this unit: s, ms, us or ns.
    #[arg(long)]
    ts_unit: Option<String>,
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
    let kind = match a.kind.as_str() {
        "ticks" => DataKind::Ticks,
        "bars" => DataKind::Bars,
        other => anyhow::bail!("--kind must be ticks or bars, not {other}"),
    };
    let ts_format = match a.ts_unit.as_deref() {
        None => TsFormat::Text {
            format: a.ts_format,
            tz: a
                .tz
                .parse()
                .map_err(|e| anyhow::anyhow!("--tz {}: {e}", a.tz))?,
        },
        Some("s") => TsFormat::Epoch(TimeUnit::Second),
        Some("ms") => TsFormat::Epoch(TimeUnit::Millisecond),
        Some("us") => TsFormat::Epoch(TimeUnit::Microsecond),
        Some("ns") => TsFormat::Epoch(TimeUnit::Nanosecond),
        Some(other) => anyhow::bail!("--ts-unit must be s, ms, us or ns, not {other}"),
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

fn main() -> anyhow::Result<()> {
    gridtest::run::init_tracing();
    match Cli::parse().command {
        Command::Ingest(a) => run_ingest(*a),
        Command::Submit(a) => gridtest::submit::run_submit(&a).map_err(Into::into),
        Command::Report(a) => run_report(a),
    }
}
