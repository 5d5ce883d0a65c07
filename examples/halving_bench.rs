//! Benchmark: successive halving against the exhaustive sweep on a 10⁵-set grid with one set
//! whose edge is planted in the data (`gridtest_examples::planted`), measured in one run: the
//! evaluations and wall time of each, and where each puts the planted set.
//!
//! Run with `cargo run --release --example halving_bench` (writes its dataset, 2 symbols × 81
//! days × 250 ticks, under `data/planted-81d` if absent; `--no-exhaustive` skips the peer).

use std::time::Instant;

use clap::Parser;
use gridtest::data::{Dataset, synth};
use gridtest::sweep::{Halving, SweepResults};
use gridtest::{DataKind, Grid, Recording, RunOptions, Sweep};
use gridtest_examples::{Planted, planted_key, planted_prices};

#[derive(Parser)]
struct Args {
    /// Days of history.
    #[arg(long, default_value_t = 81)]
    days: usize,
    /// Ticks per symbol and day.
    #[arg(long, default_value_t = 250)]
    ticks: usize,
    /// The planted edge per tick, in units of the tick volatility.
    #[arg(long, default_value_t = 0.15)]
    edge: f64,
    /// Reduction factor.
    #[arg(long, default_value_t = 3)]
    eta: u32,
    /// Rungs.
    #[arg(long, default_value_t = 4)]
    rungs: u32,
    /// Scorer threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Skip the exhaustive sweep (its evaluations are still counted).
    #[arg(long)]
    no_exhaustive: bool,
}

/// 250 × 400 = 100 000 sets; the planted one is (a, b) = (171, 293).
const PLANTED: (u32, u32) = (171, 293);
const SYMBOLS: [&str; 2] = ["P000", "P001"];
const VOL: f64 = 1e-3;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = format!("data/planted-{}d-{}t-{}", args.days, args.ticks, args.edge);
    write_data(&dir, &args)?;
    let sweep = Sweep::of::<Planted>()
        .grid(Grid::new().axis("a", 0..250u32).axis("b", 0..400u32))
        .data(dir.clone())
        .commission_bps(0.0);
    let mut opts = RunOptions::default();
    if let Some(t) = args.threads {
        opts.threads = t;
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let halving = Halving {
        eta: args.eta,
        rungs: args.rungs,
    };
    let t = Instant::now();
    let (last, report) = runtime.block_on(gridtest::run_search(&sweep, &opts, halving))?;
    let halving_wall = t.elapsed().as_secs_f64();
    println!(
        "halving_bench: {} sets, {} days × {} ticks × {} symbols, planted {PLANTED:?} (edge {} σ), {} threads",
        250 * 400,
        args.days,
        args.ticks,
        SYMBOLS.len(),
        args.edge,
        opts.threads
    );
    for r in &report.rungs {
        println!(
            "  rung {}: {:>6} sets on {:>3} days: {:.3e} evaluations, best {:?}",
            r.rung, r.sets, r.days, r.evaluations as f64, r.best
        );
    }
    println!(
        "halving (eta {}, {} rungs): {:.3e} evaluations = {:.1} % of exhaustive ({:.3e}), {halving_wall:.2} s; planted set ranks {}",
        report.halving.eta,
        report.rungs.len(),
        report.evaluations as f64,
        100.0 * report.share(),
        report.exhaustive_evaluations as f64,
        rank_of_planted(&last)
    );
    if !args.no_exhaustive {
        // The peer: every set on every day (no daily returns: its research report is not what
        // is measured).
        opts.returns.record = Recording::Never;
        let t = Instant::now();
        let all = runtime.block_on(gridtest::run_sweep(&sweep, &opts))?;
        let wall = t.elapsed().as_secs_f64();
        println!(
            "exhaustive: {:.3e} evaluations, {wall:.2} s; planted set ranks {}; halving took {:.1} % of its wall time",
            all.timings.evaluations as f64,
            rank_of_planted(&all),
            100.0 * halving_wall / wall
        );
    }
    Ok(())
}

/// The planted set's rank on a leaderboard (0 when it is not among its best rows).
fn rank_of_planted(results: &SweepResults) -> usize {
    let name = format!("a={} b={}", PLANTED.0, PLANTED.1);
    results
        .leaderboard()
        .rows
        .iter()
        .find(|r| r.params.to_string() == name)
        .map_or(0, |r| r.rank)
}

/// The dataset: each symbol's returns carry the planted set's sides.
fn write_data(dir: &str, args: &Args) -> anyhow::Result<()> {
    // Beside the dataset, not in it (an object there that is not data would be listed).
    let marker = std::path::PathBuf::from(format!("{dir}.complete"));
    if marker.exists() {
        return Ok(());
    }
    let dataset = Dataset::try_new(dir, DataKind::Ticks)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let key = planted_key(PLANTED.0, PLANTED.1);
    for (seed, symbol) in (1u64..).zip(SYMBOLS) {
        let prices = planted_prices(key, args.ticks * args.days, args.edge * VOL, VOL, seed);
        for (day, date) in synth::weekdays(args.days).into_iter().enumerate() {
            let ticks = &prices[day * args.ticks..(day + 1) * args.ticks];
            runtime.block_on(synth::write_tick_day(&dataset, symbol, date, ticks))?;
        }
    }
    std::fs::write(marker, b"")?;
    Ok(())
}
