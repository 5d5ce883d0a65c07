//! Benchmark: the cost of the orders path on W1. The SMA crossover of the W1 workload runs over
//! one symbol for every W1 parameter set twice in one process: through the targets path
//! (`SmaCrossover`, the fast one) and through the orders path (`SmaCrossoverOrders`: the same
//! decisions as market orders and closes, filled by a broker with cash and whole units). Prints
//! each path's tick-parameter evaluations per second and their ratio, and checks that both made
//! the same number of position changes in every cell.
//!
//! `cargo run --release -p gridtest-examples --example orders_bench -- --data ../shared/data/w1/default`

use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use gridtest::data::{Dataset, ShardReader};
use gridtest::engine::run_chunk;
use gridtest::prelude::*;
use gridtest::{CellOutcome, DataKind};
use gridtest_examples::{SmaCrossover, SmaCrossoverOrders};

#[derive(Parser)]
struct Args {
    /// W1 dataset.
    #[arg(long, default_value = "../shared/data/w1/default")]
    data: String,
    /// Symbol to replay.
    #[arg(long, default_value = "S000")]
    symbol: String,
    /// Only the first N dates of the symbol (0: all).
    #[arg(long, default_value_t = 0)]
    days: usize,
    /// Runs of each path (the best time is reported).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
}

fn w1_sets() -> Vec<ParamSet> {
    let grid = Grid::new()
        .axis("fast", (5..=100).step_by(5))
        .axis("slow", (20..=1000).step_by(20))
        .constrain("fast < slow");
    grid.iter().collect()
}

fn best_of(repeat: usize, mut run: impl FnMut() -> Vec<CellOutcome>) -> (f64, Vec<CellOutcome>) {
    let mut best = (f64::INFINITY, Vec::new());
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let cells = run();
        let s = t.elapsed().as_secs_f64();
        if s < best.0 {
            best = (s, cells);
        }
    }
    best
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dataset = Dataset::try_new(&args.data, DataKind::Ticks)?;
    let dates = dataset.dates(&args.symbol).await?;
    let last = if args.days > 0 {
        dates.get(args.days - 1)
    } else {
        dates.last()
    };
    let shard = gridtest::data::Shard::new(&args.symbol, dates[0], *last.context("no dates")?);
    let data = ShardReader::try_new(&dataset)?.load(&shard).await?;
    let sets = w1_sets();
    let exec = ExecModel::default();
    let evals = data.n_rows() as f64 * sets.len() as f64;
    let (t_targets, targets) = best_of(args.repeat, || {
        run_chunk::<SmaCrossover>(&data, &sets, &exec)
    });
    let (t_orders, orders) = best_of(args.repeat, || {
        run_chunk::<SmaCrossoverOrders>(&data, &sets, &exec)
    });
    for (set, (a, b)) in sets.iter().zip(targets.iter().zip(&orders)) {
        let (a, b) = (
            a.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?,
            b.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?,
        );
        if a.trades != b.trades {
            bail!(
                "[{set}]: {} position changes on the targets path, {} on the orders path",
                a.trades,
                b.trades
            );
        }
    }
    println!(
        "{} × {} sets = {evals:.3e} evaluations (one thread)",
        shard.id(),
        sets.len()
    );
    println!(
        "targets path: {t_targets:8.3} s  {:.3e} evaluations/s",
        evals / t_targets
    );
    println!(
        "orders path:  {t_orders:8.3} s  {:.3e} evaluations/s",
        evals / t_orders
    );
    println!(
        "orders / targets time: {:.2}×; position changes equal in all {} cells",
        t_orders / t_targets,
        sets.len()
    );
    Ok(())
}
