//! Benchmark: what recording each cell's daily returns costs the engine on the W1 workload
//! (SMA crossover, 955 parameter sets), measured as a ratio in one run: the same shards and sets,
//! with and without recording, alternated, best of `--repeat` each, one thread.
//!
//! Run with `cargo run --release --example returns_bench` (generates the W1-shaped synthetic
//! dataset under `data/bench-20d` if absent; `--data DIR` uses another).

use std::time::{Duration, Instant};

use clap::Parser;
use gridtest::data::{Dataset, ShardReader, synth};
use gridtest::engine::{run_chunk, run_chunk_recording};
use gridtest::prelude::*;
use gridtest::{DataKind, ExecModel};
use gridtest_examples::SmaCrossover;

#[derive(Parser)]
struct Args {
    /// Dataset of ticks (default: a synthetic W1-shaped one of `--days` days).
    #[arg(long)]
    data: Option<String>,
    /// Days of the synthetic dataset.
    #[arg(long, default_value_t = 20)]
    days: usize,
    /// Measurements of each mode; the best is kept.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Parameter sets per engine call (a scorer's unit).
    #[arg(long, default_value_t = 64)]
    chunk: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = match &args.data {
        Some(d) => d.clone(),
        None => {
            let dir = format!("data/bench-{}d", args.days);
            let spec = synth::SynthSpec {
                days: args.days,
                ..synth::SynthSpec::default()
            };
            synth::ensure_blocking(&Dataset::try_new(&dir, DataKind::Ticks)?, &spec)?;
            dir
        }
    };
    let dataset = Dataset::try_new(&dir, DataKind::Ticks)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let shards = runtime.block_on(async {
        let reader = ShardReader::try_new(&dataset)?;
        let mut loaded = Vec::new();
        for shard in dataset.plan_shards(None, None, None).await? {
            loaded.push(reader.load(&shard).await?);
        }
        anyhow::Ok(loaded)
    })?;
    let grid = Grid::new()
        .axis("fast", (5..=100).step_by(5))
        .axis("slow", (20..=1000).step_by(20))
        .constrain("fast < slow");
    let sets: Vec<ParamSet> = grid.iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let events: u64 = shards.iter().map(|s| s.n_rows()).sum::<u64>() * sets.len() as u64;

    let (mut plain, mut recording) = (Duration::MAX, Duration::MAX);
    let mut days_recorded = 0;
    for _ in 0..args.repeat.max(1) {
        let t = Instant::now();
        for shard in &shards {
            for chunk in sets.chunks(args.chunk) {
                std::hint::black_box(run_chunk::<SmaCrossover>(shard, chunk, &exec));
            }
        }
        plain = plain.min(t.elapsed());
        let t = Instant::now();
        days_recorded = 0;
        for shard in &shards {
            for chunk in sets.chunks(args.chunk) {
                let (cells, days) = run_chunk_recording::<SmaCrossover>(shard, chunk, &exec);
                days_recorded += days.per_set.iter().map(Vec::len).sum::<usize>();
                std::hint::black_box(cells);
            }
        }
        recording = recording.min(t.elapsed());
    }
    let rate = |d: Duration| events as f64 / d.as_secs_f64();
    println!("dataset              {dir} ({} shards)", shards.len());
    println!(
        "parameter sets       {} (chunks of {})",
        sets.len(),
        args.chunk
    );
    println!("cell-days recorded   {days_recorded}");
    println!(
        "without recording    {:.3}s  {:.3e} evaluations/s",
        plain.as_secs_f64(),
        rate(plain)
    );
    println!(
        "recording days       {:.3}s  {:.3e} evaluations/s",
        recording.as_secs_f64(),
        rate(recording)
    );
    println!(
        "cost of recording    {:+.2} % of throughput",
        100.0 * (1.0 - rate(recording) / rate(plain))
    );
    Ok(())
}
