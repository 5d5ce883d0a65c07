//! Portfolio strategies over universes of symbols, on bars: pairs trading on the z-score of a
//! log spread (`--strategy pairs`, universe `pair=S000,S001`) and cross-sectional momentum
//! (`--strategy rotation`, universe `all=S000,…,S005`). Each universe is one shard: its members'
//! bars merged in time order, one account with shared cash.
//!
//! Run with `cargo run --release --example portfolio -- --strategy pairs` (generates a synthetic
//! bar dataset under `data/portfolio` if absent). `--universe NAME=SYM1,SYM2,…` (repeatable)
//! replaces the default universe; every other flag of a sweep binary applies.

use std::process::ExitCode;

use clap::ValueEnum;
use gridtest::data::{Dataset, synth};
use gridtest::prelude::*;
use gridtest::{DataKind, RunArgs};
use gridtest_examples::{PairsZScore, Rotation};

/// Where the generated default dataset goes.
const DEFAULT_DATA: &str = "data/portfolio";

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Which {
    /// Pairs trading: the z-score of `ln(a) − ln(b)`.
    Pairs,
    /// Cross-sectional momentum: hold the best `top` members.
    Rotation,
}

#[derive(clap::Parser)]
#[command(
    version,
    about = "Portfolio strategies over universes of symbols with gridtest"
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    /// Which portfolio strategy to sweep.
    #[arg(long, env = "GRIDTEST_STRATEGY", value_enum, default_value_t = Which::Pairs)]
    strategy: Which,
}

fn main() -> ExitCode {
    let cli: Cli = gridtest::run::parse();
    gridtest::run::init_logging(&cli.run.log);
    gridtest::exit_status(sweep(cli))
}

fn sweep(mut cli: Cli) -> gridtest::Result<()> {
    if cli.run.data.is_none() && cli.run.replay.is_none() {
        let spec = synth::SynthSpec {
            symbols: 6,
            days: 60,
            ticks_per_day: 7_800,
            ticks_per_bar: Some(100),
            ..synth::SynthSpec::default()
        };
        let target = Dataset::try_new(DEFAULT_DATA, DataKind::Bars)?;
        if synth::ensure_blocking(&target, &spec)? {
            eprintln!("generated the default dataset in {DEFAULT_DATA}");
        }
        cli.run.data = Some(DEFAULT_DATA.to_owned());
    }
    if cli.run.out.is_none() {
        cli.run.out = Some(
            format!("out/portfolio_{:?}", cli.strategy)
                .to_lowercase()
                .into(),
        );
    }
    let sweep = match cli.strategy {
        Which::Pairs => Sweep::of::<PairsZScore>()
            .grid(
                Grid::new()
                    .axis("window", [20usize, 40, 80, 160])
                    .axis("entry", [1.5, 2.0, 2.5])
                    .axis("exit", [0.0, 0.5])
                    .axis("gross", [1.0]),
            )
            .universe("pair", ["S000", "S001"]),
        Which::Rotation => Sweep::of::<Rotation>()
            .grid(
                Grid::new()
                    .axis("lookback", [20usize, 50, 100, 200])
                    .axis("top", [1usize, 2, 3])
                    .axis("every", [10usize, 20, 50]),
            )
            .universe("all", ["S000", "S001", "S002", "S003", "S004", "S005"]),
    };
    let sweep = if cli.run.universes.is_empty() {
        sweep
    } else {
        sweep.clear_universes()
    };
    gridtest::run(sweep.commission_bps(1.0), &cli.run)?;
    Ok(())
}
