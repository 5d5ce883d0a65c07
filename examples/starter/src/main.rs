//! A strategy crate to start from: RSI mean reversion on ticks, swept over a grid.
//!
//! `cargo run` generates a synthetic dataset under `data/starter` if absent, sweeps the grid
//! over it, prints the leaderboard and writes `out/starter/`. `cargo run -- --help` lists the
//! flags (`--data PATH`, `--out DIR`, `--threads`, `--rank-by`, `--dry-run`, …).

use std::process::ExitCode;

use gridtest::data::{Dataset, synth};
use gridtest::prelude::*;
use gridtest::{DataKind, RunArgs};

/// Where the generated default dataset goes.
const DEFAULT_DATA: &str = "data/starter";

/// The grid's axes: one field per axis, of the same name.
#[derive(Params, Clone, Debug)]
pub struct RsiParams {
    /// RSI periods (ticks).
    pub period: usize,
    /// Buy below this RSI.
    pub oversold: f64,
    /// Sell above this RSI.
    pub exit: f64,
}

/// Long while the RSI recovers from oversold, flat otherwise.
pub struct RsiReversion {
    params: RsiParams,
    long: bool,
}

#[gridtest::strategy(name = "rsi_reversion", version = "1")]
impl Strategy for RsiReversion {
    type Params = RsiParams;
    type Feed = Ticks;

    fn new(p: &RsiParams) -> Self {
        Self {
            params: p.clone(),
            long: false,
        }
    }

    /// The RSI of a period is computed once for every set with that period (pandas' Wilder
    /// RSI: NaN on the first tick, then its value).
    fn shared(p: &RsiParams, series: &mut SharedSeries<Ticks>) {
        series.add(Indicator::rsi(p.period)); // slot 0
    }

    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        let rsi = now.shared(0);
        if rsi < self.params.oversold {
            self.long = true;
        } else if rsi > self.params.exit {
            self.long = false;
        }
        if self.long { 1.0 } else { 0.0 } // target: fraction of equity
    }
}

#[derive(clap::Parser)]
#[command(version, about = "RSI mean-reversion sweep with gridtest")]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> ExitCode {
    let cli: Cli = gridtest::run::parse();
    gridtest::exit_status(sweep(cli.run))
}

fn sweep(mut run: RunArgs) -> gridtest::Result<()> {
    if run.data.is_none() && run.replay.is_none() {
        let target = Dataset::try_new(DEFAULT_DATA, DataKind::Ticks)?;
        if synth::ensure_blocking(&target, &synth::SynthSpec::default())? {
            eprintln!("generated the default dataset in {DEFAULT_DATA}");
        }
        run.data = Some(DEFAULT_DATA.to_owned());
    }
    if run.out.is_none() {
        run.out = Some("out/starter".into());
    }
    let sweep = Sweep::of::<RsiReversion>()
        .grid(
            Grid::new()
                .axis("period", [7, 14, 21, 28])
                .axis("oversold", float_range(20.0, 35.0, 5.0))
                .axis("exit", float_range(50.0, 70.0, 10.0))
                .constrain("oversold < exit"),
        )
        .commission_bps(1.0);
    gridtest::run(sweep, &run).map(drop)
}
