//! The machine's two roofs, measured, and where W1 sits under them: memory copy bandwidth
//! (one thread and all of them) and the peak throughput of the event step's arithmetic at each
//! vector level the CPU has (`SimdLevel::peak_flops`: separate `f64` multiplies and adds, as
//! the step does them).
//!
//! Run with `cargo run --release -p gridtest-examples --example roofline -- --w1 4.7e8`,
//! where `--w1` is the evaluations per second `w1_bench --indicators shared` printed on the
//! same machine (without it only the roofs are printed).
//!
//! W1's work per evaluation (one parameter set, one tick), counted in the code of
//! `engine/block.rs` and `examples/sma_crossover.rs` (the machines at hand expose no hardware
//! counters): the account step of a lane that keeps its position, 13 multiplies, adds and
//! subtractions (mark 3, equity 1, return 2, moments 5, counts 2); the decision, 1 compare;
//! the shared means, about 55 distinct windows of 3 operations per tick over the 955 lanes
//! that read them (0.17 per evaluation, 0.7 counted per tile of about 250 lanes); the tick
//! itself, 24 bytes (time, price, size) read from memory once for all 955 lanes.
//! The step's 13 are those of the general event: where a group of lanes is long its whole
//! equity between two target changes, a lane does 7 (equity 1, moments 5, count 1; the growth,
//! return and downside once for the group), and a group all flat skips the event; so the
//! count is an upper bound of the work per evaluation.

use std::time::{Duration, Instant};

use clap::Parser;
use gridtest::engine::SimdLevel;

#[derive(Parser)]
struct Args {
    /// Size of each of the two copy buffers, MiB.
    #[arg(long, default_value_t = 512)]
    mib: usize,
    /// Seconds per compute measurement.
    #[arg(long, default_value_t = 0.5)]
    seconds: f64,
    /// W1's evaluations per second on this machine (`w1_bench --indicators shared`).
    #[arg(long)]
    w1: Option<f64>,
}

/// Floating-point operations per W1 evaluation (see the module docs).
const W1_FLOPS: f64 = 13.0 + 1.0 + 0.7;
/// Bytes of memory per W1 evaluation: a 24-byte tick shared by 955 lanes.
const W1_DRAM_BYTES: f64 = 24.0 / 955.0;

fn main() {
    let args = Args::parse();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    println!("cpu                {}", cpu_model());
    println!("threads            {threads}");
    let one = copy_bandwidth(args.mib, 1);
    let all = copy_bandwidth(args.mib, threads);
    println!(
        "copy bandwidth     {:.1} GB/s (1 thread), {:.1} GB/s ({threads} threads; read + write counted)",
        one / 1e9,
        all / 1e9
    );
    let budget = Duration::from_secs_f64(args.seconds);
    let mut roof = 0.0;
    for level in SimdLevel::supported() {
        let single = level.peak_flops(budget);
        let every = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| s.spawn(move || level.peak_flops(budget)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0.0))
                .sum::<f64>()
        });
        println!(
            "compute, {:<9}{:.1} GFLOP/s (1 thread), {:.1} GFLOP/s ({threads} threads)",
            level.name(),
            single / 1e9,
            every / 1e9
        );
        if level == SimdLevel::active() {
            roof = every;
        }
    }
    println!(
        "ridge point        {:.1} flops per byte (compute roof / copy bandwidth, level {})",
        roof / all,
        SimdLevel::active().name()
    );
    if let Some(rate) = args.w1 {
        let flops = rate * W1_FLOPS;
        let bytes = rate * W1_DRAM_BYTES;
        println!(
            "W1                 {rate:.3e} evaluations/s × {W1_FLOPS} flops = {:.1} GFLOP/s, {:.0}% of the compute roof",
            flops / 1e9,
            100.0 * flops / roof
        );
        println!(
            "                   × {W1_DRAM_BYTES:.3} bytes = {:.2} GB/s of memory, {:.2}% of the copy bandwidth; \
             arithmetic intensity {:.0} flops per byte",
            bytes / 1e9,
            100.0 * bytes / all,
            W1_FLOPS / W1_DRAM_BYTES
        );
    }
}

/// Copy bandwidth with `threads` threads, each copying its part of two `mib`-MiB buffers: bytes
/// read plus written per second, the best of five copies.
fn copy_bandwidth(mib: usize, threads: usize) -> f64 {
    let len = mib * (1 << 20) / 8;
    let src = vec![1.0_f64; len];
    let mut dst = vec![0.0_f64; len];
    let part = len.div_ceil(threads);
    let best = (0..5)
        .map(|_| {
            let started = Instant::now();
            std::thread::scope(|s| {
                for (d, from) in dst.chunks_mut(part).zip(src.chunks(part)) {
                    s.spawn(move || d.copy_from_slice(from));
                }
            });
            started.elapsed()
        })
        .min()
        .unwrap_or(Duration::MAX);
    std::hint::black_box(&dst);
    #[allow(clippy::cast_precision_loss, reason = "buffer sizes far below 2^53")]
    let bytes = (2 * len * 8) as f64;
    bytes / best.as_secs_f64()
}

/// The CPU's model name, as the kernel reports it.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
