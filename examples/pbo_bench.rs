//! Benchmark: the research statistics on a large sweep's returns — PBO by CSCV (all C(16, 8) =
//! 12 870 splits), DSR of every set, effective trials and walk-forward — for `--sets` sets of
//! `--days` daily returns (Gaussian noise, seeded), timed one by one.
//!
//! Run with `cargo run --release -p gridtest-examples --example pbo_bench -- --sets 100000`.

use std::time::Instant;

use clap::Parser;
use gridtest::research::{
    Returns, SeriesStats, WalkForward, deflate, effective_trials, probability_of_overfitting,
    walk_forward,
};

#[derive(Parser)]
struct Args {
    /// Parameter sets.
    #[arg(long, default_value_t = 100_000)]
    sets: usize,
    /// Daily returns per set.
    #[arg(long, default_value_t = 256)]
    days: usize,
    /// CSCV blocks.
    #[arg(long, default_value_t = 16)]
    blocks: usize,
}

/// A seeded stream of standard normal draws (xorshift and Box–Muller), to keep the example free
/// of extra dependencies.
fn noise(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed | 1;
    let mut uniform = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    move || {
        let (u, v) = (uniform().max(1e-300), uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut draw = noise(42);
    let values: Vec<f64> = (0..args.sets * args.days).map(|_| 0.01 * draw()).collect();
    let returns = Returns::from_values(args.days, values)?;
    println!("{} sets × {} days", args.sets, args.days);

    let t = Instant::now();
    let stats: Vec<SeriesStats> = returns.sets().map(SeriesStats::of).collect();
    let deflation = deflate(&stats, args.sets as u64);
    println!(
        "DSR of every set        {:8.3} s  (SR0 {:.4})",
        t.elapsed().as_secs_f64(),
        deflation.benchmark
    );

    let t = Instant::now();
    let effective = effective_trials(&returns, args.sets as u64);
    println!(
        "effective trials        {:8.3} s  ({effective:.1})",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let pbo = probability_of_overfitting(&returns, args.blocks)?;
    println!(
        "PBO, {} splits       {:8.3} s  (PBO {:.3})",
        pbo.logits.len(),
        t.elapsed().as_secs_f64(),
        pbo.probability
    );

    let t = Instant::now();
    let spec = WalkForward {
        train: args.days / 3,
        test: args.days / 6,
        anchored: false,
    };
    let wf = walk_forward(&returns, spec)?;
    println!(
        "walk-forward, {} windows {:8.3} s",
        wf.windows.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
