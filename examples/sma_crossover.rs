//! The embedded default: an SMA-crossover sweep, the W1 reference workload.
//!
//! Run with `cargo run --release --example sma_crossover` (no flags: generates a synthetic
//! dataset of W1's size under `data/sma_crossover` if absent, sweeps 955 parameter sets over its
//! 4 symbols, prints the leaderboard and writes `out/sma_crossover/`). `--help` lists the flags:
//! `--data URL`, `--out DIR`, `--symbols`, `--from/--to`, grid bounds, fees, `--threads`,
//! `--rank-by`.

use std::process::ExitCode;

use gridtest::data::{Dataset, synth};
use gridtest::prelude::*;
use gridtest::{DataKind, RunArgs};
use gridtest_examples::SmaCrossover;

/// Where the generated default dataset goes.
const DEFAULT_DATA: &str = "data/sma_crossover";

#[derive(clap::Parser)]
#[command(
    version,
    about = "SMA-crossover parameter sweep (the W1 workload) with gridtest"
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    /// Smallest fast window (ticks).
    #[arg(long, env = "GRIDTEST_FAST_MIN", default_value_t = 5)]
    fast_min: usize,
    /// Largest fast window.
    #[arg(long, env = "GRIDTEST_FAST_MAX", default_value_t = 100)]
    fast_max: usize,
    /// Fast window step (at least 1).
    #[arg(long, env = "GRIDTEST_FAST_STEP", default_value_t = 5, value_parser = at_least_one())]
    fast_step: usize,
    /// Smallest slow window (ticks).
    #[arg(long, env = "GRIDTEST_SLOW_MIN", default_value_t = 20)]
    slow_min: usize,
    /// Largest slow window.
    #[arg(long, env = "GRIDTEST_SLOW_MAX", default_value_t = 1000)]
    slow_max: usize,
    /// Slow window step (at least 1).
    #[arg(long, env = "GRIDTEST_SLOW_STEP", default_value_t = 20, value_parser = at_least_one())]
    slow_step: usize,
    /// Days of the generated default dataset (when --data is not given).
    #[arg(long, env = "GRIDTEST_SYNTH_DAYS", default_value_t = 20)]
    synth_days: usize,
}

/// A step of 0 is refused rather than silently read as 1.
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
}

fn main() -> ExitCode {
    let cli: Cli = gridtest::run::parse();
    gridtest::run::init_logging(&cli.run.log);
    gridtest::exit_status(sweep(cli))
}

fn sweep(mut cli: Cli) -> gridtest::Result<()> {
    // A replay reads the data its sweep recorded: nothing to generate.
    if cli.run.data.is_none() && cli.run.replay.is_none() {
        let spec = synth::SynthSpec {
            days: cli.synth_days,
            ..synth::SynthSpec::default()
        };
        let target = Dataset::try_new(DEFAULT_DATA, DataKind::Ticks)?;
        if synth::ensure_blocking(&target, &spec)? {
            eprintln!("generated the default dataset in {DEFAULT_DATA}");
        }
        cli.run.data = Some(DEFAULT_DATA.to_owned());
    }
    if cli.run.out.is_none() {
        cli.run.out = Some("out/sma_crossover".into());
    }
    let grid = Grid::new()
        .axis("fast", (cli.fast_min..=cli.fast_max).step_by(cli.fast_step))
        .axis("slow", (cli.slow_min..=cli.slow_max).step_by(cli.slow_step))
        .constrain("fast < slow");
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(grid)
        .commission_bps(1.0)
        .slippage_bps(0.0);
    gridtest::run(sweep, &cli.run)?;
    Ok(())
}
