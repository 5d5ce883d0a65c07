//! GPU benchmark and parity check: runs a strategy's whole grid over every shard on the CPU
//! engine (all cores) and on one GPU (several slots, as GPU scorers share a card), checks every
//! cell, and prints a table of throughput measured in the same run.
//!
//! Run with `cargo run --release --example gpu_bench -- --data ../shared/data/w1/default
//! --reference ../shared/data/w1/default_reference.csv` (the W1 workload; used by
//! `gridtest-cuda/scripts/device-check.sh`). Without `--data`: a synthetic W1-shaped dataset
//! (4 symbols × 20 days × 50 000 ticks) generated under `data/gpu-bench` if absent. Without a
//! GPU it runs the CPU half, says why there is no GPU half, and exits 0. `--strategy breakout`
//! runs on bars (synthetic: 10 ticks per bar, 100 000 bars per symbol); `--strategy
//! sma_crossover_shared` runs the W1 grid on the kernel whose blocks share their means.
//!
//! `--sweep` then runs the grid through the whole sweep path (node agent, GPU scorers batching
//! units beside the CPU scorers) against a CPU-only sweep; every cell must match.
//!
//! `--squeeze` then runs a large grid with the device's reserve raised so that only a few MiB
//! stay admissible: the slots must wait and split their launches; every cell must still equal
//! the CPU engine, and the free memory sampled throughout must never fall below the reserve.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Parser;
use gridtest::actors::BackendSettings;
use gridtest::data::{Dataset, ShardData, ShardReader, synth};
use gridtest::engine::run_chunk;
use gridtest::prelude::*;
use gridtest::registry::find_strategy;
use gridtest::{CellOutcome, DataKind, RunOptions};
use gridtest_cuda::admission::ALLOCATION_GRANULE;
use gridtest_cuda::runner::GpuDevice;
use gridtest_examples::{Breakout, Momentum, SmaCrossover, SmaCrossoverShared};

#[path = "w1_reference.rs"]
mod w1_reference;
use w1_reference::Reference;

#[derive(Parser)]
struct Args {
    /// Dataset (default: synthetic, generated if absent).
    #[arg(long)]
    data: Option<String>,
    /// sma_crossover (the W1 grid), momentum (long/short ticks, 1 000 sets) or breakout
    /// (long/short bars, 240 sets).
    #[arg(long, default_value = "sma_crossover")]
    strategy: String,
    /// W1 reference CSV: the CPU cells must match it (sma_crossover on the W1 dataset).
    #[arg(long)]
    reference: Option<PathBuf>,
    /// GPU scorers sharing the card.
    #[arg(long, default_value_t = 4)]
    slots: usize,
    /// CPU threads (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory kept free on the card, MiB.
    #[arg(long, default_value_t = 512)]
    reserve_mb: u64,
    /// Fail (rather than run only the CPU half) when there is no GPU.
    #[arg(long)]
    require_gpu: bool,
    /// Also run the whole sweep path (node agent, GPU scorers batching units, CPU scorers
    /// beside them) against a CPU-only sweep of the same grid.
    #[arg(long)]
    sweep: bool,
    /// Also run the squeezed-memory check.
    #[arg(long)]
    squeeze: bool,
    /// Admissible memory beyond the reserve during the squeeze, MiB.
    #[arg(long, default_value_t = 8)]
    squeeze_headroom_mb: u64,
}

fn grid(strategy: &str) -> Grid {
    match strategy {
        "momentum" => Grid::new()
            .axis("window", (10..=2000).step_by(10))
            .axis("threshold_bps", [0.0, 1.0, 2.5, 5.0, 10.0]),
        "breakout" => Grid::new()
            .axis("entry", (5..=200).step_by(5))
            .axis("exit", [5, 20, 60])
            .axis("short", [false, true]),
        _ => Grid::new()
            .axis("fast", (5..=100).step_by(5))
            .axis("slow", (20..=1000).step_by(20))
            .constrain("fast < slow"),
    }
}

fn cpu_chunk(
    strategy: &str,
    data: &ShardData,
    sets: &[ParamSet],
    exec: &ExecModel,
) -> Vec<CellOutcome> {
    match strategy {
        "momentum" => run_chunk::<Momentum>(data, sets, exec),
        "breakout" => run_chunk::<Breakout>(data, sets, exec),
        "sma_crossover_shared" => run_chunk::<SmaCrossoverShared>(data, sets, exec),
        _ => run_chunk::<SmaCrossover>(data, sets, exec),
    }
}

/// Per worker: time busy and evaluations done.
type WorkerLoad = Vec<(Duration, u64)>;

/// Runs `work(unit)` for units `0..n` on `workers` threads pulling from one queue; results in
/// unit order, with each worker's busy time and evaluations.
fn pool<T: Send>(
    n: usize,
    workers: usize,
    work: impl Fn(usize) -> anyhow::Result<(T, u64)> + Sync,
) -> anyhow::Result<(Vec<T>, WorkerLoad)> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    let per_worker = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<(Duration, u64)> {
                    let (mut busy, mut evals) = (Duration::ZERO, 0u64);
                    loop {
                        let unit = next.fetch_add(1, Ordering::Relaxed);
                        if unit >= n {
                            return Ok((busy, evals));
                        }
                        let t = Instant::now();
                        let (result, e) = work(unit)?;
                        busy += t.elapsed();
                        evals += e;
                        out.lock().expect("results")[unit] = Some(result);
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let results = out
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every unit ran"))
        .collect();
    Ok((results, per_worker))
}

/// Every cell of every shard on the CPU engine: units of 16 sets on `threads` threads.
fn run_cpu(
    strategy: &str,
    data: &[ShardData],
    sets: &[ParamSet],
    exec: &ExecModel,
    threads: usize,
) -> anyhow::Result<Vec<Vec<CellOutcome>>> {
    const CHUNK: usize = 16;
    let per_shard = sets.len().div_ceil(CHUNK);
    let (units, _) = pool(data.len() * per_shard, threads, |u| {
        let (d, c) = (&data[u / per_shard], u % per_shard);
        let chunk = &sets[c * CHUNK..((c + 1) * CHUNK).min(sets.len())];
        Ok((
            cpu_chunk(strategy, d, chunk, exec),
            d.n_rows() * chunk.len() as u64,
        ))
    })?;
    let mut units = units.into_iter();
    Ok(data
        .iter()
        .map(|_| units.by_ref().take(per_shard).flatten().collect())
        .collect())
}

/// Every cell of every shard on the GPU: one unit per shard (all sets), on `slots` slots.
fn run_gpu(
    device: &GpuDevice,
    strategy: &str,
    data: &[ShardData],
    sets: &[ParamSet],
    exec: &ExecModel,
    slots: usize,
) -> anyhow::Result<(Vec<Vec<CellOutcome>>, WorkerLoad)> {
    let entry = find_strategy(strategy)?;
    let code = (entry.gpu)().context("the strategy has no GPU code")?;
    pool(data.len(), slots, |u| {
        let cells = device.run(entry, &code, &data[u], sets, exec)?;
        Ok((cells, data[u].n_rows() * sets.len() as u64))
    })
}

/// Cells compared, bit-identical, trade mismatches, largest relative difference of returns.
fn compare(gpu: &[Vec<CellOutcome>], cpu: &[Vec<CellOutcome>]) -> (usize, usize, usize, f64) {
    let (mut cells, mut identical, mut trades, mut max_rel) = (0, 0, 0, 0f64);
    for (g, c) in gpu.iter().flatten().zip(cpu.iter().flatten()) {
        cells += 1;
        match (g, c) {
            (Ok(g), Ok(c)) => {
                trades += usize::from(g.trades != c.trades);
                let rel = (g.total_return - c.total_return).abs() / c.total_return.abs().max(1e-12);
                max_rel = max_rel.max(rel);
                identical += usize::from(g == c);
            }
            _ => trades += 1,
        }
    }
    (cells, identical, trades, max_rel)
}

fn load(location: &str, kind: DataKind) -> anyhow::Result<Vec<ShardData>> {
    let rt = tokio::runtime::Runtime::new()?;
    let dataset = Dataset::try_new(location, kind)?;
    let reader = ShardReader::try_new(&dataset)?;
    let shards = rt.block_on(dataset.plan_shards(None, None, None))?;
    Ok(shards
        .iter()
        .map(|s| rt.block_on(reader.load(s)))
        .collect::<Result<_, _>>()?)
}

fn synthetic(dir: &str, spec: &synth::SynthSpec) -> anyhow::Result<String> {
    let kind = if spec.ticks_per_bar.is_some() {
        DataKind::Bars
    } else {
        DataKind::Ticks
    };
    synth::ensure_blocking(&Dataset::try_new(dir, kind)?, spec)?;
    Ok(dir.to_owned())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    gridtest::run::init_tracing();
    println!("{}", gridtest_cuda::device::describe());
    let kind = find_strategy(&args.strategy)?.kind;
    let location = match (&args.data, kind) {
        (Some(d), _) => d.clone(),
        (None, DataKind::Ticks) => synthetic("data/gpu-bench", &synth::SynthSpec::default())?,
        (None, DataKind::Bars) => synthetic(
            "data/gpu-bench-bars",
            &synth::SynthSpec {
                ticks_per_bar: Some(10),
                ..synth::SynthSpec::default()
            },
        )?,
    };
    let t = Instant::now();
    let data = load(&location, kind)?;
    println!(
        "loaded {} shards of {location} in {:.2}s",
        data.len(),
        t.elapsed().as_secs_f64()
    );
    let sets: Vec<ParamSet> = grid(&args.strategy).iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let evaluations: u64 = data.iter().map(|d| d.n_rows() * sets.len() as u64).sum();
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });

    let t = Instant::now();
    let cpu = run_cpu(&args.strategy, &data, &sets, &exec, threads)?;
    let cpu_s = t.elapsed().as_secs_f64();
    println!(
        "CPU engine: {} cells, {:.3e} evaluations/s on {threads} threads ({cpu_s:.2}s)",
        sets.len() * data.len(),
        evaluations as f64 / cpu_s
    );
    if let Some(path) = &args.reference {
        let reference = Reference::read(path)?;
        let cells = data.iter().zip(&cpu).flat_map(|(d, cells)| {
            sets.iter().zip(cells).map(move |(set, c)| {
                (
                    d.shard().symbol(),
                    set,
                    c.as_ref().expect("no CPU cell fails"),
                )
            })
        });
        println!("CPU vs reference: {}", reference.check(cells)?);
    }

    let gpus = match gridtest_cuda::detect() {
        Ok(g) => g,
        Err(why) => {
            ensure!(!args.require_gpu, "no GPU: {why}");
            println!("SKIPPED the GPU half: {why}");
            return Ok(());
        }
    };
    let device = GpuDevice::open(gpus[0].clone(), args.reserve_mb << 20, 8 << 30)?;
    println!(
        "GPU {}: {} multiprocessors, {} MiB free",
        gpus[0].name,
        device.multiprocessors(),
        device.free_bytes() >> 20
    );
    let (major, minor) = gpus[0].compute_capability;
    let arch = format!("sm_{major}{minor}");
    let code = (find_strategy(&args.strategy)?.gpu)().context("the strategy has no GPU code")?;
    match gridtest_cuda::resources::kernel_resources(&args.strategy, &code, &arch) {
        Ok(k) => println!(
            "kernel for {arch}: {} registers, {} bytes stack frame, {} / {} bytes spilled / reloaded",
            k.registers, k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes
        ),
        Err(e) => println!("kernel for {arch}: no resource report ({e})"),
    }
    // Warm-up: compile the kernel and upload the shards.
    let t = Instant::now();
    run_gpu(&device, &args.strategy, &data, &sets[..1], &exec, 1)?;
    let warm_s = t.elapsed().as_secs_f64();

    println!();
    println!("| engine | compute | evaluations/s | vs CPU |");
    println!("|---|---|---|---|");
    println!(
        "| CPU engine ({threads} threads) | {cpu_s:.3} s | {:.3e} | 1.0× |",
        evaluations as f64 / cpu_s
    );
    let mut failures = Vec::new();
    for slots in [1, args.slots.max(1)] {
        let t = Instant::now();
        let (gpu, per_slot) = run_gpu(&device, &args.strategy, &data, &sets, &exec, slots)?;
        let gpu_s = t.elapsed().as_secs_f64();
        println!(
            "| GPU, {slots} slot(s) | {gpu_s:.3} s | {:.3e} | {:.1}× |",
            evaluations as f64 / gpu_s,
            cpu_s / gpu_s
        );
        let (cells, identical, trades, max_rel) = compare(&gpu, &cpu);
        let per_slot: Vec<String> = per_slot
            .iter()
            .enumerate()
            .map(|(i, (busy, e))| {
                format!(
                    "slot {i}: {:.3e}/s",
                    *e as f64 / busy.as_secs_f64().max(1e-9)
                )
            })
            .collect();
        println!(
            "|   parity: {cells} cells, {identical} bit-identical, {trades} trade mismatches, \
             max rel. diff total_return {max_rel:.1e}; {} | | | |",
            per_slot.join(", ")
        );
        if trades > 0 || max_rel > 1e-9 {
            failures.push(format!("{slots} slot(s): GPU and CPU disagree"));
        }
    }
    println!("(warm-up: kernel compile and shard upload {warm_s:.2} s)");
    if args.sweep
        && let Err(e) = sweep_path(&args, &location, threads)
    {
        failures.push(format!("sweep: {e:#}"));
    }
    if args.squeeze
        && let Err(e) = squeeze(&device, &args, threads)
    {
        failures.push(format!("squeeze: {e:#}"));
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// The sweep path: the same grid through `run_sweep` with the node's GPU scorers (and its CPU
/// scorers beside them) and with CPU scorers only; every cell must match.
fn sweep_path(args: &Args, location: &str, threads: usize) -> anyhow::Result<()> {
    let strategy = find_strategy(&args.strategy)?;
    let sweep = Sweep::named(strategy.name)?
        .grid(grid(&args.strategy))
        .data(location)
        .commission_bps(1.0);
    let rt = tokio::runtime::Runtime::new()?;
    let options = |threads, backends| RunOptions {
        threads,
        backends,
        ..RunOptions::default()
    };
    let cpu = rt.block_on(gridtest::run_sweep(&sweep, &options(threads, None)))?;
    let gpu_settings = BackendSettings {
        gpu_slots_per_device: args.slots,
        gpu_reserve_bytes: args.reserve_mb << 20,
        ..BackendSettings::default()
    };
    // The GPU scorers with one CPU scorer beside them: beside all the cores, on a grid this
    // small, the CPU scorers finish (speculatively re-running what the GPU holds) before a GPU
    // batch of thousands of sets comes back, and the check would prove nothing.
    let gpu = rt.block_on(gridtest::run_sweep(&sweep, &options(1, Some(gpu_settings))))?;
    let info = gpu.run_info().context("run info")?;
    println!();
    println!(
        "sweep path: {threads} CPU scorers {:.3e} evaluations/s; {} GPU scorers and 1 CPU scorer {:.3e} evaluations/s",
        cpu.timings.evaluations_per_second(),
        args.slots,
        gpu.timings.evaluations_per_second()
    );
    for (slot, s) in &info.gpu_slots {
        println!(
            "sweep path: GPU scorer {slot}: {} units, {} cells, {:.3e} evaluations/s",
            s.units,
            s.cells,
            s.speed()
        );
    }
    let (gpu_cells, cpu_cells) = (gpu.cells()?, cpu.cells()?);
    let differing = gpu_cells
        .iter()
        .filter(|(key, outcome)| cpu_cells.get(*key) != Some(*outcome))
        .count();
    println!(
        "sweep path: {} cells, {differing} differ from the CPU-only sweep, {} failed",
        gpu_cells.len(),
        gpu.failed()
    );
    ensure!(
        differing == 0 && gpu_cells.len() == cpu_cells.len() && gpu.failed() == 0,
        "the sweep with GPU scorers differs from the CPU-only sweep"
    );
    ensure!(!info.gpu_slots.is_empty(), "no unit ran on a GPU scorer");
    Ok(())
}

/// A large grid on four small shards with only `--squeeze-headroom-mb` admissible beyond the
/// reserve: launches need more than that, so slots wait and split. Checks every cell and
/// samples the free memory all along.
fn squeeze(device: &GpuDevice, args: &Args, threads: usize) -> anyhow::Result<()> {
    let location = synthetic(
        "data/gpu-squeeze",
        &synth::SynthSpec {
            symbols: 4,
            days: 1,
            ticks_per_day: 4000,
            ..synth::SynthSpec::default()
        },
    )?;
    let data = load(&location, DataKind::Ticks)?;
    let sets: Vec<ParamSet> = Grid::new()
        .axis("fast", 1..=150)
        .axis("slow", (2..=2000).step_by(3))
        .constrain("fast < slow")
        .iter()
        .collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let cpu = run_cpu("sma_crossover", &data, &sets, &exec, threads)?;
    // Compile and upload first, then squeeze what is left.
    run_gpu(device, "sma_crossover", &data, &sets[..1], &exec, 1)?;
    let previous = device.admission().reserve();
    let headroom = args.squeeze_headroom_mb << 20;
    let reserve = device.free_bytes().saturating_sub(headroom);
    device.admission().set_reserve(reserve);
    let lane_bytes = sets.len() as u64 * (2 + 16) * 8;
    ensure!(
        lane_bytes > headroom,
        "a shard's launch ({lane_bytes} bytes) must not fit in the headroom"
    );
    let (launches_before, splits_before) = device.launch_counts();
    let stop = AtomicBool::new(false);
    let min_free = AtomicU64::new(u64::MAX);
    let t = Instant::now();
    let gpu = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                min_free.fetch_min(device.free_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let gpu = run_gpu(device, "sma_crossover", &data, &sets, &exec, args.slots);
        stop.store(true, Ordering::Relaxed);
        gpu
    });
    let squeeze_s = t.elapsed().as_secs_f64();
    device.admission().set_reserve(previous);
    let (gpu, _) = gpu?;
    let (launches, splits) = device.launch_counts();
    let (cells, identical, trades, max_rel) = compare(&gpu, &cpu);
    let min_free = min_free.load(Ordering::Relaxed);
    println!();
    println!(
        "squeeze: {} sets × {} shards on {} slots, {:.1} MiB of lanes per shard launch, {} MiB \
         admissible beyond a reserve of {} MiB: {} launches, {} refused for memory and split, \
         {squeeze_s:.2} s",
        sets.len(),
        data.len(),
        args.slots,
        lane_bytes as f64 / f64::from(1 << 20),
        headroom >> 20,
        reserve >> 20,
        launches - launches_before,
        splits - splits_before,
    );
    println!(
        "squeeze: lowest free memory sampled {} MiB (reserve {} MiB); parity: {cells} cells, \
         {identical} bit-identical, {trades} trade mismatches, max rel. diff {max_rel:.1e}",
        min_free >> 20,
        reserve >> 20
    );
    ensure!(trades == 0 && max_rel <= 1e-9, "GPU and CPU disagree");
    ensure!(splits > splits_before, "the squeeze never split a launch");
    ensure!(
        min_free + ALLOCATION_GRANULE >= reserve,
        "free memory fell to {min_free} bytes, below the reserve of {reserve}"
    );
    Ok(())
}
