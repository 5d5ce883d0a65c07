//! Long histories that no node's cache holds (issue 54's yardstick): a generated 20-year tick
//! layout (by default 4 symbols × 5 040 weekdays × 2 000 ticks, one file per symbol and day),
//! swept with the W1 grid by the `sma_crossover` binary twice — with a cache too small for any
//! symbol's history (`--cache-mb 32`: every unit streams its shard) and with one that holds
//! every shard — and compared: bytes read from the dataset against its size (from each run's
//! `cost.json`; a dry run hashes the files for their content tags first), throughput, peak RSS
//! of the process (`VmHWM`), and every cell equal.
//!
//! ```text
//! cargo build --release -p gridtest-examples --examples
//! cargo run --release -p gridtest-examples --example long_history
//! ```
//!
//! The layout is written under `data/long-history` (about 600 MB) if absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Parser;
use gridtest::DataKind;
use gridtest::data::{Dataset, synth};

#[derive(Parser)]
struct Args {
    /// Symbols of the generated layout.
    #[arg(long, default_value_t = 4)]
    symbols: usize,
    /// Weekdays per symbol (5 040: twenty years).
    #[arg(long, default_value_t = 5_040)]
    days: usize,
    /// Ticks per symbol and day.
    #[arg(long, default_value_t = 2_000)]
    ticks_per_day: usize,
    /// Where the layout is (generated if absent or generated with other dimensions).
    #[arg(long, default_value = "data/long-history")]
    data: PathBuf,
    /// The small cache, MiB: less than any symbol's history takes in memory.
    #[arg(long, default_value_t = 32)]
    small_cache_mb: u64,
    /// Scorer threads of each sweep (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

struct Figures {
    peak_rss_mib: f64,
    wall: Duration,
    compute: Duration,
    evaluations_per_second: f64,
    bytes_read: u64,
    dataset_bytes: u64,
    results_csv: Vec<u8>,
}

fn sweep_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let binary = me.parent().context("examples dir")?.join("sma_crossover");
    ensure!(
        binary.exists(),
        "{} is missing: cargo build --release -p gridtest-examples --examples",
        binary.display()
    );
    Ok(binary)
}

/// The peak resident set of a running process so far (`VmHWM`), KiB.
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

/// `(…, compute 12.34s: 1.2e8 …` → (compute, evaluations/s) from the summary line.
fn summary(stdout: &str) -> Option<(Duration, f64)> {
    let line = stdout.lines().find(|l| l.contains(", compute "))?;
    let compute = line
        .split(", compute ")
        .nth(1)?
        .split('s')
        .next()?
        .parse()
        .ok()?;
    let rate = line.split(": ").nth(1)?.split(' ').next()?.parse().ok()?;
    Some((Duration::from_secs_f64(compute), rate))
}

/// `bytes_read` and `dataset_bytes` of a sweep's `cost.json`.
fn reads(cost_json: &Path) -> anyhow::Result<(u64, u64)> {
    let text = std::fs::read_to_string(cost_json)
        .with_context(|| format!("reading {}", cost_json.display()))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let at = text
            .find(&format!("\"{name}\""))
            .with_context(|| format!("no {name} in {}", cost_json.display()))?;
        let digits: String = text[at + name.len() + 2..]
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(char::is_ascii_digit)
            .collect();
        Ok(digits.parse()?)
    };
    Ok((field("bytes_read")?, field("dataset_bytes")?))
}

fn run(binary: &Path, args: &Args, cache_mb: u64) -> anyhow::Result<Figures> {
    let dir = std::env::temp_dir().join(format!("gridtest-long-history-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("out");
    let mut command = Command::new(binary);
    command
        .arg("--data")
        .arg(&args.data)
        .arg("--out")
        .arg(&out)
        .args(["--cache-mb", &cache_mb.to_string()])
        .args(["--no-progress", "--top", "3", "--returns", "never"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = args.threads {
        command.args(["--threads", &t.to_string()]);
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let mut peak_kib = 0;
    let status = loop {
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
    let (compute, evaluations_per_second) =
        summary(&stdout).with_context(|| format!("no summary line in:\n{stdout}"))?;
    let (bytes_read, dataset_bytes) = reads(&out.join("cost.json"))?;
    let results_csv = std::fs::read(out.join("results.csv"))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Figures {
        peak_rss_mib: peak_kib as f64 / 1024.0,
        wall,
        compute,
        evaluations_per_second,
        bytes_read,
        dataset_bytes,
        results_csv,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let binary = sweep_binary()?;
    let spec = synth::SynthSpec {
        symbols: args.symbols,
        days: args.days,
        ticks_per_day: args.ticks_per_day,
        ..synth::SynthSpec::default()
    };
    let location = args.data.to_str().context("a UTF-8 data path")?;
    let generating = Instant::now();
    if synth::ensure_blocking(&Dataset::try_new(location, DataKind::Ticks)?, &spec)? {
        println!(
            "generated {} symbols × {} days × {} ticks in {:.1} s",
            args.symbols,
            args.days,
            args.ticks_per_day,
            generating.elapsed().as_secs_f64()
        );
    }
    // Ticks take 24 bytes in memory (time, price, size): a cache of four times the whole
    // dataset holds every shard.
    let history_mib = (args.days * args.ticks_per_day * 24) as u64 >> 20;
    let large_cache_mb = 4 * history_mib * args.symbols as u64 + 64;
    ensure!(
        args.small_cache_mb < history_mib,
        "--small-cache-mb {} holds a whole history ({history_mib} MiB)",
        args.small_cache_mb
    );
    // A dry run hashes every file for its content tag (cached by file version), so that both
    // measured runs read only what their units need.
    let dry = Command::new(&binary)
        .arg("--data")
        .arg(&args.data)
        .args(["--dry-run", "-q"])
        .stdout(Stdio::null())
        .status()?;
    ensure!(dry.success(), "the dry run failed ({dry})");
    println!("| cache | peak RSS | wall | compute | evaluations/s | bytes read | × dataset |");
    println!("|---|---|---|---|---|---|---|");
    let mut runs = Vec::new();
    for cache_mb in [args.small_cache_mb, large_cache_mb] {
        let f = run(&binary, &args, cache_mb)?;
        println!(
            "| {cache_mb} MiB | {:.0} MiB | {:.1} s | {:.1} s | {:.3e} | {:.1} MB | {:.2} |",
            f.peak_rss_mib,
            f.wall.as_secs_f64(),
            f.compute.as_secs_f64(),
            f.evaluations_per_second,
            f.bytes_read as f64 / 1e6,
            f.bytes_read as f64 / f.dataset_bytes.max(1) as f64,
        );
        runs.push(f);
    }
    let (small, large) = (&runs[0], &runs[1]);
    println!(
        "no history in the cache: {:.2}× the throughput of every history cached, {:.2}× the \
         dataset read (target ≤ 3), peak RSS {:.0} MiB (target < 1 024)",
        small.evaluations_per_second / large.evaluations_per_second,
        small.bytes_read as f64 / small.dataset_bytes.max(1) as f64,
        small.peak_rss_mib,
    );
    ensure!(
        small.results_csv == large.results_csv,
        "results.csv differs between the two caches"
    );
    println!("results.csv identical in both runs");
    Ok(())
}
