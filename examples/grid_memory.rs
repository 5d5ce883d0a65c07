//! Memory and latency of a sweep as the grid grows (issue 10's yardstick): runs the
//! `sma_crossover` binary on the W1 smoke data (2 symbols × 6 000 ticks) with its grid widened
//! to each size asked for, and prints, per size, the peak RSS of the whole process (head and
//! local scorers: the kernel's high-water mark `VmHWM` of the child), when the first results were on
//! disk (the first ledger segment under the results root), the time before compute (listing,
//! planning, loading), the time after the last cell (the rest of the outputs, the
//! leaderboard, persisting, exit) against the compute time, and the throughput.
//!
//! ```text
//! cargo run --release -p gridtest-examples --example grid_memory -- --sets 100000,1000000
//! cargo run --release -p gridtest-examples --example grid_memory -- --sets 1000000,10000000 --symbols S000
//! ```
//!
//! Sizes are reached with `fast` in `1..=F` and `slow` in `2..=S` (`fast < slow`), `S` at most
//! 5 999 (the shards' length), so that every set trades; the count printed is the exact one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Grid sizes to run, comma-separated (each is approached from below).
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    sets: Vec<u64>,
    /// The dataset (default: the W1 smoke data).
    #[arg(long, default_value = "../shared/data/w1/smoke")]
    data: PathBuf,
    /// Scorer threads of the sweep.
    #[arg(long)]
    threads: Option<usize>,
    /// Record daily returns too (the default measures without them).
    #[arg(long)]
    with_returns: bool,
    /// The symbols to sweep, comma-separated (default: both of the smoke data; one symbol
    /// measures many sets on one shard).
    #[arg(long, value_delimiter = ',')]
    symbols: Vec<String>,
}

/// Longest slow window: below the shards' 6 000 ticks.
const SLOW_MAX: u64 = 5_999;

/// `(F, S)` whose grid `fast in 1..=F, slow in 2..=S, fast < slow` has about `sets` sets, and
/// its exact size.
fn shape(sets: u64) -> anyhow::Result<(u64, u64, u64)> {
    let count = |f: u64, s: u64| (1..=f).map(|x| s.saturating_sub(x)).sum::<u64>();
    for f in 1..SLOW_MAX {
        if count(f, SLOW_MAX) >= sets {
            // Smallest S with at least `sets` sets for this F.
            let s = (f + 1..=SLOW_MAX)
                .find(|&s| count(f, s) >= sets)
                .unwrap_or(SLOW_MAX);
            return Ok((f, s, count(f, s)));
        }
    }
    bail!("{sets} sets do not fit under a slow window of {SLOW_MAX}")
}

struct Figures {
    sets: u64,
    cells: u64,
    peak_rss_mib: f64,
    first_on_disk: Option<Duration>,
    wall: Duration,
    load: Duration,
    compute: Duration,
    evaluations_per_second: f64,
    leaderboard_bytes: u64,
}

fn sweep_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let dir = me.parent().context("examples dir")?;
    let binary = dir.join("sma_crossover");
    ensure!(
        binary.exists(),
        "{} is missing: cargo build --release -p gridtest-examples --example sma_crossover",
        binary.display()
    );
    Ok(binary)
}

/// The first ledger segment under `results`, if any.
fn has_ledger(results: &Path) -> bool {
    std::fs::read_dir(results.join("sweeps"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .any(|sweep| {
            std::fs::read_dir(sweep.path().join("ledger"))
                .is_ok_and(|mut segments| segments.next().is_some())
        })
}

/// The peak resident set of a running process so far (`VmHWM`), KiB; `None` once it is gone
/// (a zombie has no memory left to report).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .ok()
}

/// `(load 0.01s, compute 12.34s: 1.2e8 …` → (load, compute, evaluations/s) from the summary
/// line.
fn summary(stdout: &str) -> Option<(Duration, Duration, f64)> {
    let line = stdout.lines().find(|l| l.contains(", compute "))?;
    let load = line
        .split("(load ")
        .nth(1)?
        .split('s')
        .next()?
        .parse()
        .ok()?;
    let compute = line
        .split(", compute ")
        .nth(1)?
        .split('s')
        .next()?
        .parse()
        .ok()?;
    let rate = line.split(": ").nth(1)?.split(' ').next()?.parse().ok()?;
    Some((
        Duration::from_secs_f64(load),
        Duration::from_secs_f64(compute),
        rate,
    ))
}

fn run(binary: &Path, args: &Args, sets: u64) -> anyhow::Result<Figures> {
    let (fast_max, slow_max, exact) = shape(sets)?;
    let dir = std::env::temp_dir().join(format!("gridtest-grid-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let results = dir.join("results");
    let mut command = Command::new(binary);
    command
        .arg("--data")
        .arg(&args.data)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--results")
        .arg(&results)
        .args(["--fast-min", "1", "--fast-step", "1", "--slow-min", "2"])
        .args(["--slow-step", "1", "--no-progress", "--top", "3"])
        // The engine's and the outputs' memory; recording daily returns adds 8 bytes per set
        // and day plus 18 per set, within its own budget (`--with-returns` measures it too).
        .args([
            "--returns",
            if args.with_returns { "always" } else { "never" },
        ])
        .args(["--fast-max", &fast_max.to_string()])
        .args(["--slow-max", &slow_max.to_string()])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = args.threads {
        command.args(["--threads", &t.to_string()]);
    }
    if !args.symbols.is_empty() {
        command.args(["--symbols", &args.symbols.join(",")]);
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let mut first_on_disk = None;
    // The kernel's high-water mark, read until the process is gone: it only grows, so the last
    // reading is at most one poll (20 ms) older than the end.
    let mut peak_kib = 0;
    let status = loop {
        if first_on_disk.is_none() && has_ledger(&results) {
            first_on_disk = Some(started.elapsed());
        }
        if let Some(kib) = peak_rss_kib(child.id()) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = started.elapsed();
    let stdout = reader.join().expect("reader")?;
    ensure!(status.success(), "the sweep failed ({status}):\n{stdout}");
    let (load, compute, evaluations_per_second) =
        summary(&stdout).with_context(|| format!("no summary line in:\n{stdout}"))?;
    let leaderboard_bytes =
        std::fs::metadata(dir.join("out").join("leaderboard.csv")).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Figures {
        leaderboard_bytes,
        sets: exact,
        cells: exact
            * if args.symbols.is_empty() {
                2
            } else {
                args.symbols.len() as u64
            },
        peak_rss_mib: peak_kib as f64 / 1024.0,
        first_on_disk,
        wall,
        load,
        compute,
        evaluations_per_second,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let binary = sweep_binary()?;
    println!(
        "| sets | cells | peak RSS | first results on disk | wall | before compute | compute | after the last cell | evaluations/s | leaderboard.csv |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &sets in &args.sets {
        let f = run(&binary, &args, sets)?;
        let after = f.wall.saturating_sub(f.load + f.compute);
        println!(
            "| {} | {} | {:.0} MiB | {} | {:.1} s | {:.1} s | {:.1} s | {:.1} s ({:.0} % of compute) | {:.3e} | {:.1} MB |",
            f.sets,
            f.cells,
            f.peak_rss_mib,
            f.first_on_disk.map_or_else(
                || "at exit".to_owned(),
                |d| format!("{:.1} s", d.as_secs_f64())
            ),
            f.wall.as_secs_f64(),
            f.load.as_secs_f64(),
            f.compute.as_secs_f64(),
            after.as_secs_f64(),
            100.0 * after.as_secs_f64() / f.compute.as_secs_f64().max(1e-9),
            f.evaluations_per_second,
            f.leaderboard_bytes as f64 / 1e6,
        );
    }
    Ok(())
}
