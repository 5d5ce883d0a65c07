//! GPU benchmark and parity check: runs a strategy's whole grid over every shard on the CPU
//! engine and on one GPU, checks every cell, and prints a table of throughput.
//!
//! Run with `cargo run --release --example gpu_bench` (used by
//! `gridtest-cuda/scripts/device-check.sh`). Without a GPU it says so and exits 0. Default data:
//! a synthetic W1-shaped dataset (4 symbols × 20 days × 50 000 ticks) generated under
//! `data/gpu-bench` if absent; `--data` for another.

use std::time::Instant;

use clap::Parser;
use gridtest::data::{Dataset, ShardData, ShardReader, synth};
use gridtest::engine::run_chunk;
use gridtest::prelude::*;
use gridtest::strategy::find_strategy;
use gridtest::{CellOutcome, DataKind};
use gridtest_cuda::runner::GpuDevice;
use gridtest_examples::{Momentum, SmaCrossover};

#[derive(Parser)]
struct Args {
    /// Dataset (default: synthetic, generated if absent).
    #[arg(long)]
    data: Option<String>,
    /// sma_crossover (the W1 grid) or momentum.
    #[arg(long, default_value = "sma_crossover")]
    strategy: String,
}

fn grid(strategy: &str) -> Grid {
    match strategy {
        "momentum" => Grid::new()
            .axis("window", (10..=2000).step_by(10))
            .axis("threshold_bps", [0.0, 1.0, 2.5, 5.0, 10.0]),
        _ => Grid::new()
            .axis("fast", (5..=100).step_by(5))
            .axis("slow", (20..=1000).step_by(20))
            .constrain("fast < slow"),
    }
}

fn cpu(strategy: &str, data: &ShardData, sets: &[ParamSet], exec: &ExecModel) -> Vec<CellOutcome> {
    match strategy {
        "momentum" => run_chunk::<Momentum>(data, sets, exec),
        _ => run_chunk::<SmaCrossover>(data, sets, exec),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    println!("{}", gridtest_cuda::device::describe());
    let location = match &args.data {
        Some(d) => d.clone(),
        None => {
            let dir = "data/gpu-bench";
            synth::ensure_blocking(
                &Dataset::try_new(dir, DataKind::Ticks)?,
                &synth::SynthSpec::default(),
            )?;
            dir.to_owned()
        }
    };
    let rt = tokio::runtime::Runtime::new()?;
    let dataset = Dataset::try_new(&location, DataKind::Ticks)?;
    let reader = ShardReader::try_new(&dataset)?;
    let shards = rt.block_on(dataset.plan_shards(None, None, None))?;
    let t = Instant::now();
    let data: Vec<ShardData> = shards
        .iter()
        .map(|s| rt.block_on(reader.load(s)))
        .collect::<Result<_, _>>()?;
    println!(
        "loaded {} shards in {:.2}s",
        data.len(),
        t.elapsed().as_secs_f64()
    );
    let sets: Vec<ParamSet> = grid(&args.strategy).iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let evaluations: u64 = data.iter().map(|d| d.n_rows() * sets.len() as u64).sum();

    // CPU: one shard per thread.
    let t = Instant::now();
    let cpu_cells: Vec<Vec<CellOutcome>> = std::thread::scope(|scope| {
        let handles: Vec<_> = data
            .iter()
            .map(|d| scope.spawn(|| cpu(&args.strategy, d, &sets, &exec)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("cpu thread"))
            .collect()
    });
    let cpu_s = t.elapsed().as_secs_f64();

    let gpus = match gridtest_cuda::detect() {
        Ok(g) => g,
        Err(why) => {
            println!("SKIPPED the GPU half: {why}");
            println!(
                "CPU engine: {:.3e} evaluations/s ({cpu_s:.2}s)",
                evaluations as f64 / cpu_s
            );
            return Ok(());
        }
    };
    let device = GpuDevice::open(gpus[0].clone(), 512 << 20, 8 << 30)?;
    let entry = find_strategy(&args.strategy)?;
    let code = (entry.gpu)().ok_or_else(|| anyhow::anyhow!("no GPU code"))?;
    // Warm-up: compile the kernel and upload the shards.
    let t = Instant::now();
    for d in &data {
        device.run(entry, &code, d, &sets[..1], &exec)?;
    }
    let warm_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let gpu_cells: Vec<Vec<CellOutcome>> = data
        .iter()
        .map(|d| device.run(entry, &code, d, &sets, &exec))
        .collect::<Result<_, _>>()?;
    let gpu_s = t.elapsed().as_secs_f64();

    let (mut cells, mut trade_mismatch, mut max_rel, mut identical) =
        (0usize, 0usize, 0f64, 0usize);
    for (g, c) in gpu_cells.iter().flatten().zip(cpu_cells.iter().flatten()) {
        cells += 1;
        match (g, c) {
            (Ok(g), Ok(c)) => {
                trade_mismatch += usize::from(g.trades != c.trades);
                let rel = (g.total_return - c.total_return).abs() / c.total_return.abs().max(1e-12);
                max_rel = max_rel.max(rel);
                identical += usize::from(g == c);
            }
            _ => trade_mismatch += 1,
        }
    }
    println!();
    println!("| engine | compute | evaluations/s | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| CPU ({} threads) | {cpu_s:.2} s | {:.3e} | 1.0× |",
        data.len(),
        evaluations as f64 / cpu_s
    );
    println!(
        "| GPU {} | {gpu_s:.2} s (+{warm_s:.2} s compile and upload) | {:.3e} | {:.1}× |",
        gpus[0].name,
        evaluations as f64 / gpu_s,
        cpu_s / gpu_s
    );
    println!();
    println!(
        "parity: {cells} cells, {identical} bit-identical, {trade_mismatch} trade mismatches, \
         max relative difference of total_return {max_rel:.1e}"
    );
    anyhow::ensure!(
        trade_mismatch == 0 && max_rel <= 1e-9,
        "GPU and CPU disagree"
    );
    Ok(())
}
