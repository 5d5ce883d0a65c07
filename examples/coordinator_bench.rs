//! Benchmark of the cluster coordinator: how many work units one head leases and completes per
//! second across worker processes, and its overhead when units take about one second.
//!
//! Run with `cargo run --release --example coordinator_bench`. The process is the head (no
//! local scorers) and starts worker processes of itself (`--role worker`) on 127.0.0.1.
//!
//! * **Cheap units**: a strategy that does nothing; units of 4 parameter sets over 100 ticks.
//!   Reports units/s with 1 and 2 workers.
//! * **One-second units**: each parameter set burns a fixed amount of CPU (calibrated here to
//!   0.25 s, so a unit of 4 sets is 1 s). Coordination overhead = the share of scorer time not
//!   spent on units (1 − Σ busy / (wall × workers)); also compared with the calibrated ideal
//!   (units × 1 s / workers), which includes the CPU's clock and the head's share of the cores.
//!   With 1 and 2 worker processes; scaling efficiency = T(1) / (2 · T(2)).

use std::hint::black_box;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use gridtest::cli::RoleChoice;
use gridtest::data::{Dataset, synth};
use gridtest::prelude::*;
use gridtest::{DataKind, RunArgs, RunOptions};

#[derive(Params, Clone, Debug)]
#[allow(dead_code, reason = "the parameter only labels cells")]
struct Index {
    i: u32,
}

/// Does nothing.
struct Noop;

#[gridtest::strategy(name = "bench_noop")]
impl Strategy for Noop {
    type Params = Index;
    type Feed = Ticks;
    fn new(_: &Index) -> Self {
        Self
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

/// Burns `GRIDTEST_BENCH_ITERS` iterations when built.
struct Burn;

fn burn(iters: u64) -> f64 {
    let mut x = 1.0f64;
    for _ in 0..iters {
        x = black_box(x * 1.000_000_001 + 1e-12);
    }
    x
}

#[gridtest::strategy(name = "bench_burn")]
impl Strategy for Burn {
    type Params = Index;
    type Feed = Ticks;
    fn new(_: &Index) -> Self {
        let iters = std::env::var("GRIDTEST_BENCH_ITERS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        black_box(burn(iters));
        Self
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    /// Which strategy a worker process serves (set by the benchmark itself).
    #[arg(long, default_value = "bench_noop")]
    strategy: String,
    /// Cheap units per run.
    #[arg(long, default_value_t = 20_000)]
    cheap_units: u32,
    /// One-second units per run.
    #[arg(long, default_value_t = 40)]
    slow_units: u32,
}

const DATA: &str = "data/coordinator-bench";
const COOKIE: &str = "bench";

fn sweep(strategy: &str, units: u32) -> anyhow::Result<Sweep> {
    Ok(Sweep::named(strategy)?
        .grid(Grid::new().axis("i", 0..units * 4))
        .data(DATA))
}

fn spawn_workers(n: usize, port: u16, strategy: &str, iters: u64) -> anyhow::Result<Vec<Child>> {
    let exe = std::env::current_exe()?;
    (0..n)
        .map(|i| {
            Ok(Command::new(&exe)
                .args(["--role", "worker", "--seeds", &format!("127.0.0.1:{port}")])
                .args(["--cookie", COOKIE, "--threads", "1", "--strategy", strategy])
                .args(["--node-name", &format!("bench-w{i}")])
                .env("GRIDTEST_BENCH_ITERS", iters.to_string())
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?)
        })
        .collect()
}

/// What one run measured.
struct Measured {
    units: usize,
    wall: Duration,
    /// Scorer time spent on units (lease to report), summed over the workers.
    busy: Duration,
}

/// Runs one sweep with `workers` worker processes.
fn run(strategy: &str, units: u32, workers: usize, iters: u64) -> anyhow::Result<Measured> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    // Measure the coordinator, not resuming: no results root.
    let cluster =
        gridtest_examples::bench_head(port, COOKIE, "bench-head").map_err(anyhow::Error::msg)?;
    let opts = RunOptions {
        threads: 0,
        unit_evals: 100 * 4,     // 4 parameter sets of 100 ticks per unit
        wait_for_nodes: workers, // time the sweep from when every worker is in
        ..RunOptions::default()
    };
    let sweep = sweep(strategy, units)?;
    let mut children = spawn_workers(workers, port, strategy, iters)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let results = rt.block_on(gridtest::cluster::head::run_head(&sweep, &opts, &cluster));
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let results = results?;
    anyhow::ensure!(results.failed() == 0, "cells failed");
    let busy = results
        .run_info()
        .map(|i| i.nodes.values().map(|n| n.busy).sum())
        .unwrap_or_default();
    Ok(Measured {
        units: results.n_sets().div_ceil(4),
        wall: results.timings.compute,
        busy,
    })
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.run.cluster.role == Some(RoleChoice::Worker) {
        gridtest::run(sweep(&cli.strategy, 1)?, &cli.run)?;
        return Ok(());
    }
    let spec = synth::SynthSpec {
        symbols: 1,
        days: 1,
        ticks_per_day: 100,
        seed: 1,
        ..synth::SynthSpec::default()
    };
    synth::ensure_blocking(&Dataset::try_new(DATA, DataKind::Ticks)?, &spec)?;

    // Calibrate the burn: iterations for 0.25 s on one core.
    let probe = 50_000_000;
    let t = Instant::now();
    black_box(burn(probe));
    let per_sec = probe as f64 / t.elapsed().as_secs_f64();
    let iters = (per_sec * 0.25) as u64;
    let t = Instant::now();
    black_box(burn(iters));
    let set_cost = t.elapsed();
    println!(
        "calibration: {iters} iterations = {:.3}s per parameter set (unit = 4 sets)",
        set_cost.as_secs_f64()
    );

    println!(
        "\ncheap units ({} units of 4 no-op parameter sets × 100 ticks):",
        cli.cheap_units
    );
    for workers in [1, 2] {
        let Measured { units, wall, .. } = run("bench_noop", cli.cheap_units, workers, 0)?;
        println!(
            "  {workers} worker process(es): {units} units in {:.2}s = {:.0} units leased and completed per second",
            wall.as_secs_f64(),
            units as f64 / wall.as_secs_f64()
        );
    }

    println!("\none-second units ({} units):", cli.slow_units);
    let unit_cost = set_cost * 4;
    let mut walls = Vec::new();
    for workers in [1, 2] {
        let Measured { units, wall, busy } = run("bench_burn", cli.slow_units, workers, iters)?;
        let ideal = unit_cost.as_secs_f64() * units as f64 / workers as f64;
        let idle = 1.0 - busy.as_secs_f64() / (wall.as_secs_f64() * workers as f64);
        println!(
            "  {workers} worker process(es): compute {:.2}s; coordination overhead {:.2}% \
             (scorer time not spent on units); vs calibrated ideal {:.2}s: {:+.2}%",
            wall.as_secs_f64(),
            idle * 100.0,
            ideal,
            (wall.as_secs_f64() / ideal - 1.0) * 100.0
        );
        walls.push(wall.as_secs_f64());
    }
    println!(
        "  scaling 1 → 2 worker processes: speed-up {:.2}×, efficiency {:.1}%",
        walls[0] / walls[1],
        walls[0] / (2.0 * walls[1]) * 100.0
    );
    Ok(())
}
