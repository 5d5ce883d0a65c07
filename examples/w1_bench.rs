//! Benchmark: the W1 workload (SMA crossover, 955 parameter sets) with throughput, timings,
//! peak memory, and a check against the reference results on the way.
//!
//! Run with `cargo run --release --example w1_bench -- --data ../shared/data/w1/default
//! --reference ../shared/data/w1/default_reference.csv`.
//! `--synth-days N` instead generates (if absent) a synthetic W1-shaped dataset of N days under
//! `data/bench-<N>d` and runs on it (no reference), to show how memory behaves as history grows;
//! `--cache-mb 0` streams every shard; `--unit-evals` sizes the work units (the library's
//! default otherwise). `--indicators` lists the forms of the strategy to run, one after the
//! other: `own` (per-lane rolling means, the default), `shared` (shared means,
//! `SmaCrossoverShared`: each distinct window computed once per unit) and `readme` (the
//! README's first form, pandas-exact `Indicator::sma`s declared shared,
//! `SmaCrossoverIndicators`); with several (`--indicators readme,shared`) every cell of each
//! must equal the first's, and each one's throughput ratio to the first is printed (each run
//! checked against the reference). The engine steps its lanes with the best vector instructions the
//! CPU has (printed as `event step`); `GRIDTEST_SIMD=baseline|avx2|avx512` lowers them, to
//! measure each instruction set on one machine.
//!
//! `--trades` runs the per-lane grid a second time with every cell's round trips written to
//! `trades.parquet` (`RunOptions::trades`), checks its cells equal the first run's and prints
//! the trades and the throughput ratio.
//!
//! `--strategy momentum` (long/short ticks, 1 000 sets, on W1) or `--strategy breakout`
//! (long/short bars, 240 sets, on a synthetic bar dataset generated under
//! `data/gpu-bench-bars` if absent) run those grids instead, per lane (`Momentum`,
//! `Breakout`) and on shared series (`MomentumShared`, `BreakoutShared`); `--indicators
//! own,shared` compares them.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use clap::Parser;
use gridtest::data::{Dataset, Shard, synth};
use gridtest::prelude::*;
use gridtest::{CellOutcome, DataKind, RunOptions};
use gridtest_examples::{
    Breakout, BreakoutShared, Momentum, MomentumShared, SmaCrossover, SmaCrossoverIndicators,
    SmaCrossoverShared,
};

#[path = "w1_reference.rs"]
mod w1_reference;
use w1_reference::Reference;

#[derive(Parser)]
struct Args {
    /// Dataset (default: the W1 benchmark dataset next to the repository).
    #[arg(long)]
    data: Option<String>,
    /// Reference CSV to check every cell against.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Generate and use a synthetic dataset of this many days instead.
    #[arg(long)]
    synth_days: Option<usize>,
    /// Scorer threads.
    #[arg(long)]
    threads: Option<usize>,
    /// Shard cache, MiB (0: stream every shard).
    #[arg(long, default_value_t = gridtest::run::DEFAULT_CACHE_MB)]
    cache_mb: u64,
    /// Work unit size, tick-parameter evaluations (default: the library's).
    #[arg(long)]
    unit_evals: Option<u64>,
    /// Runs (the best compute time is reported).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// The forms of the strategy to run, in order: per-lane indicators (`own`), shared means
    /// (`shared`), the README's pandas-exact shared indicators (`readme`); with several, every
    /// cell must equal the first's and each ratio to the first is printed.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "own")]
    indicators: Vec<Form>,
    /// The workload: the W1 crossover, or the momentum or breakout grid.
    #[arg(long, value_enum, default_value_t = Workload::SmaCrossover)]
    strategy: Workload,
    /// Also run the per-lane grid writing every cell's trades, and print the ratio.
    #[arg(long)]
    trades: bool,
}

/// One cell of a run: its parameter set, its shard and what it gave.
type Cell = (ParamSet, Shard, CellOutcome);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Workload {
    SmaCrossover,
    Momentum,
    Breakout,
}

impl Workload {
    /// The sweep of the workload's strategy written in `form`.
    fn sweep(self, form: Form) -> anyhow::Result<Sweep> {
        Ok(match (self, form) {
            (Self::SmaCrossover, Form::Own) => Sweep::of::<SmaCrossover>(),
            (Self::SmaCrossover, Form::Shared) => Sweep::of::<SmaCrossoverShared>(),
            (Self::SmaCrossover, Form::Readme) => Sweep::of::<SmaCrossoverIndicators>(),
            (Self::Momentum, Form::Own) => Sweep::of::<Momentum>(),
            (Self::Momentum, Form::Shared) => Sweep::of::<MomentumShared>(),
            (Self::Breakout, Form::Own) => Sweep::of::<Breakout>(),
            (Self::Breakout, Form::Shared) => Sweep::of::<BreakoutShared>(),
            (_, Form::Readme) => bail!("the README's form is the crossover's only"),
        })
    }

    /// The workload's grid (those of `gpu_bench`).
    fn grid(self) -> Grid {
        match self {
            Self::SmaCrossover => Grid::new()
                .axis("fast", (5..=100).step_by(5))
                .axis("slow", (20..=1000).step_by(20))
                .constrain("fast < slow"),
            Self::Momentum => Grid::new()
                .axis("window", (10..=2000).step_by(10))
                .axis("threshold_bps", [0.0, 1.0, 2.5, 5.0, 10.0]),
            Self::Breakout => Grid::new()
                .axis("entry", (5..=200).step_by(5))
                .axis("exit", [5, 20, 60])
                .axis("short", [false, true]),
        }
    }
}

/// How the strategy keeps its indicators.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Form {
    Own,
    Shared,
    Readme,
}

impl Form {
    fn label(self) -> &'static str {
        match self {
            Self::Own => "per-lane indicators",
            Self::Shared => "shared indicators",
            Self::Readme => "the README's form (shared pandas-exact indicators)",
        }
    }
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let data = match (args.synth_days, &args.data) {
        (Some(days), _) => {
            let dir = format!("data/bench-{days}d");
            let spec = synth::SynthSpec {
                days,
                ..synth::SynthSpec::default()
            };
            let t = Instant::now();
            if synth::ensure_blocking(&Dataset::try_new(&dir, DataKind::Ticks)?, &spec)? {
                println!("generated {dir} in {:.1}s", t.elapsed().as_secs_f64());
            }
            dir
        }
        (None, Some(d)) => d.clone(),
        (None, None) if args.strategy == Workload::Breakout => {
            let dir = "data/gpu-bench-bars";
            let spec = synth::SynthSpec {
                ticks_per_bar: Some(10),
                ..synth::SynthSpec::default()
            };
            synth::ensure_blocking(&Dataset::try_new(dir, DataKind::Bars)?, &spec)?;
            dir.to_owned()
        }
        (None, None) => "../shared/data/w1/default".to_owned(),
    };
    let opts = RunOptions {
        threads: args.threads.unwrap_or(RunOptions::default().threads),
        cache_bytes: args.cache_mb << 20,
        unit_evals: args.unit_evals.unwrap_or(gridtest::run::DEFAULT_UNIT_EVALS),
        ..RunOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let startup = started.elapsed();
    println!("start-up           {:.3}s", startup.as_secs_f64());
    println!(
        "event step         {} (CPU supports {})",
        gridtest::engine::SimdLevel::active().name(),
        gridtest::engine::SimdLevel::detected().name()
    );
    let mut runs = Vec::new();
    for &form in &args.indicators {
        let sweep = args.strategy.sweep(form)?;
        runs.push(measure(form.label(), sweep, &data, &args, &opts, &runtime)?);
    }
    if let [(first, first_cells), others @ ..] = &runs[..] {
        for ((rate, cells), form) in others.iter().zip(&args.indicators[1..]) {
            let same = first_cells
                .iter()
                .zip(cells)
                .filter(|(a, b)| a == b)
                .count();
            if first_cells.len() != cells.len() || same != first_cells.len() {
                bail!(
                    "{} and {} differ: {same} of {} cells equal",
                    form.label(),
                    args.indicators[0].label(),
                    first_cells.len()
                );
            }
            println!(
                "{} = {}: {same} cells, every one equal",
                form.label(),
                args.indicators[0].label()
            );
            println!(
                "{} / {}: {:.2}×",
                form.label(),
                args.indicators[0].label(),
                rate / first
            );
        }
    }
    if args.trades {
        compare_with_trades(&data, &args, &opts, &runtime, runs.first())?;
    }
    println!("peak RSS           {:.1} MiB", peak_rss_mib());
    Ok(())
}

/// Runs the per-lane grid with `--trades` and compares it with the run without (`plain`).
fn compare_with_trades(
    data: &str,
    args: &Args,
    opts: &RunOptions,
    runtime: &tokio::runtime::Runtime,
    plain: Option<&(f64, Vec<Cell>)>,
) -> anyhow::Result<()> {
    let (Some((plain, plain_cells)), [Form::Own, ..]) = (plain, &args.indicators[..]) else {
        bail!("--trades compares with the per-lane run: run `own` first");
    };
    let with = RunOptions {
        trades: true,
        ..opts.clone()
    };
    let (traded, cells) = measure(
        "per-lane indicators, every trade written",
        args.strategy.sweep(Form::Own)?,
        data,
        args,
        &with,
        runtime,
    )?;
    if &cells != plain_cells {
        bail!("the cells with --trades differ from those without");
    }
    println!("--trades = without  {} cells, every one equal", cells.len());
    println!("--trades / without  {:.2}×", traded / plain);
    Ok(())
}

/// Runs the workload's grid with `sweep`'s strategy `--repeat` times, prints the best run and
/// checks it against the reference; returns its evaluations per second and its cells.
fn measure(
    label: &str,
    sweep: Sweep,
    data: &str,
    args: &Args,
    opts: &RunOptions,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<(f64, Vec<Cell>)> {
    let sweep = sweep
        .grid(args.strategy.grid())
        .data(data.to_owned())
        .commission_bps(1.0);
    println!("{label}:");
    let mut best = None;
    for _ in 0..args.repeat.max(1) {
        let results = runtime.block_on(gridtest::run_sweep(&sweep, opts))?;
        let t = results.timings;
        println!(
            "run: load {:.3}s  compute {:.3}s  wall {:.3}s  {:.3e} evaluations/s",
            t.load.as_secs_f64(),
            t.compute.as_secs_f64(),
            t.wall.as_secs_f64(),
            t.evaluations_per_second()
        );
        if best
            .as_ref()
            .is_none_or(|b: &gridtest::SweepResults| t.compute < b.timings.compute)
        {
            best = Some(results);
        }
    }
    let results = best.expect("at least one run");
    let t = results.timings;
    let failed = results.failed();
    if failed > 0 {
        bail!("{failed} cells failed");
    }
    println!("dataset            {data}");
    println!(
        "cells              {} ({} shards × {} parameter sets), {} threads, cache {} MiB",
        results.recorded(),
        results.shards().len(),
        results.n_sets(),
        opts.threads,
        args.cache_mb
    );
    println!("evaluations        {:.4e}", t.evaluations as f64);
    println!("load               {:.3}s", t.load.as_secs_f64());
    println!("compute            {:.3}s", t.compute.as_secs_f64());
    println!(
        "throughput         {:.3e} tick-parameter evaluations/s",
        t.evaluations_per_second()
    );
    let rows = results.rows()?;
    let trades = results
        .output_dir()
        .join(gridtest::sweep::output::TRADES_PARQUET);
    if let Ok(file) = std::fs::metadata(&trades) {
        println!(
            "trades.parquet     {:.1} MiB",
            file.len() as f64 / f64::from(1 << 20)
        );
    }
    if let Some(path) = &args.reference {
        let reference = Reference::read(path)?;
        let cells: Vec<_> = rows
            .iter()
            .map(|(set, shard, outcome)| {
                let m = outcome.as_ref().expect("no failures");
                (shard.symbol(), set, m)
            })
            .collect();
        println!("reference          {}", reference.check(cells)?);
    }
    Ok((t.evaluations_per_second(), rows))
}
