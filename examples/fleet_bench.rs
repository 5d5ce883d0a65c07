//! The head at fleet scale: one head (this process, no local scorers) and `--nodes` worker
//! nodes (1 000 by default), each with its own name and its own authenticated session, one
//! scorer each, all on 127.0.0.1. The nodes run as `--nodes / --per-process` worker processes
//! of this binary (`--nodes-per-process`: each node of a process has its own node server,
//! session, node agent and scorer), so that one machine can hold a thousand nodes without a
//! thousand runtimes competing for its cores.
//!
//! Run with `cargo run --release -p gridtest-examples --example fleet_bench -- --per-process 20`
//! (`--nodes 100` for a quick look). Three sweeps, the same workers throughout (they re-dial between sweeps):
//!
//! * **Cheap units** (a strategy that does nothing; units of 4 parameter sets × 100 ticks,
//!   `--cheap-per-node` units per node): units leased and completed per second, and the lease
//!   latency each scorer measured (request to lease granted: the network, the supervisor's
//!   queue and its work), merged at the head, p50 and p99 — apart for each scorer's first lease
//!   of the sweep (it carries the sweep's context, and all come at once as the sweep starts).
//! * **One-second units** (each unit sleeps 4 × 0.25 s in its strategy, so that a thousand
//!   nodes fit two cores; `--slow-per-node` per node): coordination overhead = the share of
//!   scorer time not spent on units, 1 − Σ busy / (compute wall × nodes), split into before
//!   each node's first unit, between units and after its last. The last units are cut to each
//!   scorer's share (guided self-scheduling); `--compare-whole-units` runs the sweep again
//!   with whole units, to compare in the same run.
//! * **Loss of `--lose` nodes at once**: during a sweep of one-second units (`--loss-per-node`
//!   per node, so that it outlasts the 5 s node timeout), that many workers
//!   are frozen (SIGSTOP: silent, no FIN, no RST — the hard case; a killed process's sessions
//!   close at once): `--lose / --per-process` whole processes. Time from the freeze until the head has reported every one of them lost and
//!   put its units back in the queue (its `node_lost` status events), and the sweep still ends
//!   with every cell (the frozen workers are then killed).
//!
//! The head's share of the lease latency is printed beside it: from the scorer's send to the
//! supervisor's handling (the session, the network and the supervisor's mailbox), by the one
//! clock of this machine; and the supervisor's own queue, timed by probes it sends itself
//! every 20 ms (one clock, no worker in it). `--idle-workers` runs the workers at idle
//! priority, so that the head is scheduled as on a core of its own while a thousand workers
//! share what it leaves.
//!
//! For each sweep, the head's CPU (user + system time of this process over the sweep's wall
//! time) and, at the end, its peak resident memory (VmHWM).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Parser;
use gridtest::cli::RoleChoice;
use gridtest::data::{Dataset, synth};
use gridtest::prelude::*;
use gridtest::status::{StatusEvent, StatusLog};
use gridtest::{DataKind, RunArgs, RunOptions};

#[derive(Params, Clone, Debug)]
#[allow(dead_code, reason = "the parameters only label cells")]
struct Index {
    i: u32,
    j: u32,
}

/// Does nothing.
struct Noop;

#[gridtest::strategy(name = "fleet_noop")]
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

/// Sleeps a quarter of a second when built: a unit of 4 sets takes one second of scorer time.
struct Quarter;

#[gridtest::strategy(name = "fleet_quarter")]
impl Strategy for Quarter {
    type Params = Index;
    type Feed = Ticks;
    fn new(_: &Index) -> Self {
        std::thread::sleep(Duration::from_millis(250));
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
    /// Worker nodes.
    #[arg(long, default_value_t = 1_000)]
    nodes: usize,
    /// Worker nodes per worker process (it must divide `--nodes` and `--lose`).
    #[arg(long, default_value_t = 1)]
    per_process: usize,
    /// Cheap units per node.
    #[arg(long, default_value_t = 20)]
    cheap_per_node: u32,
    /// One-second units per node.
    #[arg(long, default_value_t = 3)]
    slow_per_node: u32,
    /// Nodes lost at once in the third sweep.
    #[arg(long, default_value_t = 100)]
    lose: usize,
    /// One-second units per node in the third sweep (it must outlast the node timeout, 5 s).
    #[arg(long, default_value_t = 12)]
    loss_per_node: u32,
    /// Run the workers at idle priority (`chrt --idle 0`: Linux's `SCHED_IDLE`, CPU only
    /// when nothing else wants it), so that on a machine shared with a thousand workers the
    /// head is scheduled whenever it is ready, as on a core of its own. (`nice 19` is not
    /// enough: a thousand runnable threads at weight 15 still outweigh one at 1 024.)
    #[arg(long)]
    idle_workers: bool,
    /// Also run the one-second sweep with whole units (no cut at its end), after the one with
    /// cuts: the effect of guided self-scheduling, measured in the same run.
    #[arg(long)]
    compare_whole_units: bool,
}

const DATA: &str = "data/fleet-bench";
const COOKIE: &str = "fleet";

/// A sweep of `units` units of 4 sets: a grid of two axes (`i` × 100 values of `j`), as real
/// grids are — a lease carries the sweep's context, axis values included.
fn sweep(strategy: &str, units: u64) -> anyhow::Result<Sweep> {
    sweep_from(strategy, units, 0)
}

/// [`sweep`] with `j` starting at `j0`: the same work as another sweep, but a sweep of its own
/// (another id: its first leases carry its context again).
fn sweep_from(strategy: &str, units: u64, j0: u32) -> anyhow::Result<Sweep> {
    let rows = u32::try_from((units * 4).div_ceil(100)).context("too many units")?;
    Ok(Sweep::named(strategy)?
        .grid(Grid::new().axis("i", 0..rows).axis("j", j0..j0 + 100))
        .data(DATA))
}

/// Starts `n` worker processes of `per_process` nodes each that dial each sweep's head (one port
/// per sweep: a head's port is not free again at once).
fn spawn_workers(
    n: usize,
    per_process: usize,
    ports: &[u16],
    idle: bool,
) -> anyhow::Result<Vec<Child>> {
    let exe = std::env::current_exe()?;
    let seeds: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let seeds = seeds.join(",");
    let command = || {
        if idle {
            // `chrt` execs the worker: the child's pid is the worker's (the loss sweep stops it).
            let mut c = Command::new("chrt");
            c.args(["--idle", "0"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        }
    };
    (0..n)
        .map(|i| {
            Ok(command()
                .args(["--role", "worker", "--seeds", &seeds])
                .args([
                    "--cookie",
                    COOKIE,
                    "--threads",
                    "1",
                    "--join-timeout-s",
                    "0",
                ])
                .args(["--node-name", &format!("fleet-w{i}")])
                .args(["--nodes-per-process", &per_process.to_string()])
                .env("RUST_LOG", "error")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?)
        })
        .collect()
}

/// The head's share of the lease latency: request sent (scorer's clock) to handled by the
/// supervisor (the head's; one machine, one clock).
fn print_arrival(phase: &str, fleet: &gridtest::progress::FleetSnapshot) {
    let ms = |h: &gridtest::progress::LatencyHistogram, q: f64| {
        h.quantile(q).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    let (arrival, queue) = (&fleet.lease_arrival, &fleet.supervisor_queue);
    println!(
        "{phase} lease requests, sent to handled by the supervisor: p50 ≤ {:.2} ms, p99 ≤ {:.2} ms \
         ({} requests); the supervisor's queue: p50 ≤ {:.2} ms, p99 ≤ {:.2} ms ({} probes)",
        ms(arrival, 0.5),
        ms(arrival, 0.99),
        arrival.count(),
        ms(queue, 0.5),
        ms(queue, 0.99),
        queue.count()
    );
}

/// The scorers' first leases of the sweep (each with the sweep's context, all at its start).
fn print_first_leases(phase: &str, fleet: &gridtest::progress::FleetSnapshot) {
    let h = &fleet.first_lease_latency;
    let ms = |q: f64| h.quantile(q).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    println!(
        "{phase} first leases of the sweep (with its context): p50 ≤ {:.2} ms, p99 ≤ {:.2} ms ({} leases)",
        ms(0.5),
        ms(0.99),
        h.count()
    );
}

/// Where the scorers' time not spent on units went, on average per node (one scorer each):
/// before its first unit started (the sweep's start reaching it), after its last unit ended
/// (waiting for the others' last units: the end of a sweep of whole units), and between units
/// (the lease and report of each).
fn print_idle(
    phase: &str,
    nodes: &std::collections::BTreeMap<String, gridtest::sweep::NodeStats>,
    wall: f64,
) {
    let n = nodes.len().max(1) as f64;
    let mean =
        |f: &dyn Fn(&gridtest::sweep::NodeStats) -> f64| nodes.values().map(f).sum::<f64>() / n;
    let before = mean(&|s| s.first_start.unwrap_or_default().as_secs_f64());
    let after = mean(&|s| wall - s.last_end.map_or(wall, |t| t.as_secs_f64()));
    let idle = mean(&|s| wall - s.busy.as_secs_f64());
    let between = idle - before - after;
    let part = |secs: f64| format!("{:.0} ms ({:.2}%)", secs * 1e3, secs / wall * 100.0);
    println!(
        "{phase} scorer time not on units, mean per node: before its first unit {}, after its \
         last {}, between units {}",
        part(before),
        part(after),
        part(between)
    );
    // How the last units ended: a long wait after them is the spread of these.
    let mut ends: Vec<(f64, &str)> = nodes
        .iter()
        .filter_map(|(name, s)| Some((s.last_end?.as_secs_f64(), name.as_str())))
        .collect();
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some(first), Some(last)) = (ends.first(), ends.last()) {
        let at = |q: f64| ends[((ends.len() - 1) as f64 * q).round() as usize].0;
        println!(
            "{phase} nodes' last units ended at {:.2} s (first), {:.2} s (median), {:.2} s \
             (99th percentile), {:.2} s (last: {}) of {wall:.2} s",
            first.0,
            at(0.5),
            at(0.99),
            last.0,
            last.1
        );
    }
}

/// `n` ports free now and below the kernel's ephemeral range, so that none of the thousands of
/// connections the workers open takes one before its head listens on it.
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")?;
    let low: u16 = range
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .context("the ephemeral port range")?;
    let ports: Vec<u16> = (10_000..low)
        .filter(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .take(n)
        .collect();
    ensure!(ports.len() == n, "no {n} free ports below {low}");
    Ok(ports)
}

/// User + system CPU time of this process.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // After the command: state is field 0, utime 11, stime 12 (clock ticks of 10 ms).
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Peak resident memory of this process, MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// One sweep as the head, with every worker in before it starts.
struct Phase {
    results: gridtest::SweepResults,
    cpu: Duration,
    opts: RunOptions,
}

fn run_phase(
    rt: &tokio::runtime::Runtime,
    port: u16,
    sweep: &Sweep,
    nodes: usize,
    status: &Path,
    during: impl FnOnce(&RunOptions) + Send + 'static,
) -> anyhow::Result<Phase> {
    run_phase_with(rt, port, sweep, (nodes, true), status, during)
}

/// [`run_phase`] with its `(nodes, tail_splitting)` given.
fn run_phase_with(
    rt: &tokio::runtime::Runtime,
    port: u16,
    sweep: &Sweep,
    (nodes, tail_splitting): (usize, bool),
    status: &Path,
    during: impl FnOnce(&RunOptions) + Send + 'static,
) -> anyhow::Result<Phase> {
    let opts = RunOptions {
        tail_splitting,
        threads: 0,
        unit_evals: 100 * 4,
        wait_for_nodes: nodes,
        progress_every: Duration::from_millis(250),
        status: StatusLog::to_file(status, "fleet-head"),
        ..RunOptions::default()
    };
    let config =
        gridtest_examples::bench_head(port, COOKIE, "fleet-head").map_err(anyhow::Error::msg)?;
    let watcher = {
        let opts = opts.clone();
        std::thread::spawn(move || during(&opts))
    };
    let cpu = cpu_time();
    let results = rt.block_on(gridtest::cluster::head::run_head(sweep, &opts, &config))?;
    let cpu = cpu_time().saturating_sub(cpu);
    let _ = watcher.join();
    ensure!(
        results.failed() == 0 && results.missing() == 0,
        "cells failed or missing"
    );
    Ok(Phase { results, cpu, opts })
}

fn cpu_share(p: &Phase) -> f64 {
    p.cpu.as_secs_f64() / p.results.timings.wall.as_secs_f64().max(1e-9)
}

/// Waits until the sweep has done `cells`, then freezes `victims`; returns when it froze them.
fn freeze_after(opts: &RunOptions, cells: usize, victims: &[u32]) -> Option<Instant> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while opts.progress.latest().done < cells {
        if Instant::now() > deadline || opts.progress.latest().ended {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let at = Instant::now();
    for pid in victims {
        let _ = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status();
    }
    Some(at)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.run.cluster.role == Some(RoleChoice::Worker) {
        gridtest::run(sweep("fleet_noop", 1)?, &cli.run)?;
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
    let ports = free_ports(3 + usize::from(cli.compare_whole_units))?;
    let (n, k) = (cli.nodes, cli.per_process.max(1));
    ensure!(
        n % k == 0 && cli.lose % k == 0,
        "--per-process {k} must divide --nodes {n} and --lose {}",
        cli.lose
    );
    let started = Instant::now();
    let mut workers = spawn_workers(n / k, k, &ports, cli.idle_workers)?;
    println!(
        "{n} worker nodes in {} processes started in {:.1}s",
        n / k,
        started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let dir = tempfile::tempdir()?;
    let outcome = phases(&cli, &rt, &ports, &mut workers, dir.path());
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    outcome?;
    println!("head peak RSS: {:.0} MiB", peak_rss_mib());
    Ok(())
}

fn phases(
    cli: &Cli,
    rt: &tokio::runtime::Runtime,
    ports: &[u16],
    workers: &mut [Child],
    dir: &Path,
) -> anyhow::Result<()> {
    let n = cli.nodes;
    // (a) Cheap units.
    let units = n as u64 * u64::from(cli.cheap_per_node);
    let cheap = sweep("fleet_noop", units)?;
    let a = run_phase(rt, ports[0], &cheap, n, &dir.join("a.jsonl"), |_| {})?;
    let units = a.results.n_sets() as u64 / 4;
    let wall = a.results.timings.compute.as_secs_f64();
    let latency = &a.opts.progress.fleet().lease_latency;
    let q = |q: f64| {
        latency
            .quantile(q)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    let nodes_in = a.results.run_info().map_or(0, |i| i.nodes.len());
    println!(
        "(a) cheap units: {units} units over {nodes_in} nodes in {wall:.2}s = {:.0} leases/s; \
         lease latency p50 ≤ {:.2} ms, p99 ≤ {:.2} ms ({} leases timed); head CPU {:.0}% of a core",
        units as f64 / wall,
        q(0.5),
        q(0.99),
        latency.count(),
        cpu_share(&a) * 100.0
    );
    print_arrival("(a)", &a.opts.progress.fleet());
    print_first_leases("(a)", &a.opts.progress.fleet());

    // (b) One-second units, cut at the end (guided self-scheduling); then, to compare, whole.
    slow_phase(cli, rt, ports[1], dir, "(b)", true)?;
    if cli.compare_whole_units {
        slow_phase(cli, rt, ports[2], dir, "(b, whole units)", false)?;
    }

    // (c) Loss of `lose` nodes at once.
    let units = n as u64 * u64::from(cli.loss_per_node);
    let lossy = sweep("fleet_quarter", units)?;
    let per_process = cli.per_process.max(1);
    let victims: Vec<u32> = workers
        .iter()
        .take(cli.lose / per_process)
        .map(Child::id)
        .collect();
    let status = dir.join("c.jsonl");
    let (tx, rx) = std::sync::mpsc::channel();
    let cells = usize::try_from(units / 2).unwrap_or(usize::MAX); // an eighth of the cells
    let frozen = victims.clone();
    let c = run_phase(
        rt,
        ports[ports.len() - 1],
        &lossy,
        n,
        &status,
        move |opts| {
            let _ = tx.send(freeze_after(opts, cells, &frozen));
        },
    )?;
    let froze = rx
        .recv()
        .ok()
        .flatten()
        .context("the sweep ended before the freeze")?;
    let froze_ms = froze_epoch_ms(froze);
    let lost: Vec<(u64, usize)> = gridtest::status::read(&status)?
        .into_iter()
        .filter_map(|r| match r.event {
            StatusEvent::NodeLost { requeued, .. } if r.at_ms >= froze_ms => {
                Some((r.at_ms, requeued))
            }
            _ => None,
        })
        .collect();
    let last = lost.iter().map(|(at, _)| *at).max().unwrap_or(froze_ms);
    let requeued: usize = lost.iter().map(|(_, r)| r).sum();
    println!(
        "(c) {} nodes ({} processes) frozen at once: {} reported lost, the last {:.2}s after the freeze, \
         {requeued} units put back; sweep complete ({} cells, none missing) in {:.2}s; head CPU {:.0}% of a core",
        victims.len() * per_process,
        victims.len(),
        lost.len(),
        last.saturating_sub(froze_ms) as f64 / 1e3,
        c.results.recorded(),
        c.results.timings.compute.as_secs_f64(),
        cpu_share(&c) * 100.0
    );
    Ok(())
}

/// The sweep of one-second units: coordination overhead, where the idle time went, lease
/// latency, head CPU.
fn slow_phase(
    cli: &Cli,
    rt: &tokio::runtime::Runtime,
    port: u16,
    dir: &Path,
    label: &str,
    tail_splitting: bool,
) -> anyhow::Result<()> {
    let n = cli.nodes;
    let units = n as u64 * u64::from(cli.slow_per_node);
    let slow = sweep_from("fleet_quarter", units, if tail_splitting { 0 } else { 100 })?;
    let status = dir.join(format!("b-{tail_splitting}.jsonl"));
    let (tx, rx) = std::sync::mpsc::channel();
    let b = run_phase_with(rt, port, &slow, (n, tail_splitting), &status, move |opts| {
        let _ = tx.send(sample_slow_leases(opts));
    })?;
    let units = b.results.n_sets() as u64 / 4;
    let wall = b.results.timings.compute.as_secs_f64();
    let info = b.results.run_info().context("run info")?;
    let busy: f64 = info.nodes.values().map(|s| s.busy.as_secs_f64()).sum();
    let overhead = 1.0 - busy / (wall * info.nodes.len() as f64);
    let latency = &b.opts.progress.fleet().lease_latency;
    let q = |q: f64| {
        latency
            .quantile(q)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "{label} one-second units: {units} units over {} nodes in {wall:.2}s (ideal {}s); \
         coordination overhead {:.2}% (scorer time not spent on units); lease latency \
         p50 ≤ {:.2} ms, p99 ≤ {:.2} ms ({} leases timed); head CPU {:.0}% of a core",
        info.nodes.len(),
        units.div_ceil(n as u64),
        overhead * 100.0,
        q(0.5),
        q(0.99),
        latency.count(),
        cpu_share(&b) * 100.0
    );
    print_arrival(label, &b.opts.progress.fleet());
    print_first_leases(label, &b.opts.progress.fleet());
    print_idle(label, &info.nodes, wall);
    println!(
        "{label} units cut at the end: {}; speculative copies: {} ({} duplicate cells)",
        info.ledger.split, info.ledger.speculative, info.ledger.duplicate_cells
    );
    let mut samples = rx.recv().unwrap_or_default();
    // The p99 above is read from the final histogram (statuses that came after the last
    // sample included): it closes the series, so that the counts add up to it.
    samples.push(Sample::of(&b.opts.progress.fleet()));
    print_slow_leases(label, "scorer leases", &samples, |s| s.leases);
    print_slow_leases(label, "lease requests sent to handled", &samples, |s| {
        s.arrivals
    });
    Ok(())
}

/// Leases as slow as this or slower are counted over the sweep: the bound of the latency
/// histograms' fine buckets just below the 50 ms target (12 × 2^12 µs), so that every lease
/// that may be over it is counted.
const SLOW_LEASE: Duration = Duration::from_micros(12 << 12);

/// The lease latencies counted at the head up to one moment: `(all, slow)` of the scorers'
/// leases (from their nodes' statuses) and of the requests' arrival at the supervisor (timed
/// there), slow meaning [`SLOW_LEASE`] or more.
struct Sample {
    at: Instant,
    leases: (u64, u64),
    arrivals: (u64, u64),
}

impl Sample {
    fn of(fleet: &gridtest::progress::FleetSnapshot) -> Self {
        let counts =
            |h: &gridtest::progress::LatencyHistogram| (h.count(), h.count_at_least(SLOW_LEASE));
        Self {
            at: Instant::now(),
            leases: counts(&fleet.lease_latency),
            arrivals: counts(&fleet.lease_arrival),
        }
    }
}

/// Every 250 ms until the sweep ends.
fn sample_slow_leases(opts: &RunOptions) -> Vec<Sample> {
    let mut samples = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !opts.progress.latest().ended && Instant::now() < deadline {
        samples.push(Sample::of(&opts.progress.fleet()));
        std::thread::sleep(Duration::from_millis(250));
    }
    samples
}

/// When in the sweep the slow ones of `what` came: its first 5 s of leases, between, its last
/// 5 s of samples, and after the sweep ended (what the head heard of after its last sample:
/// the last statuses of the nodes).
fn print_slow_leases(
    label: &str,
    what: &str,
    samples: &[Sample],
    counts: impl Fn(&Sample) -> (u64, u64),
) {
    let Some((closing, sampled)) = samples.split_last() else {
        return;
    };
    let leasing: Vec<_> = sampled.iter().filter(|s| counts(s).0 > 0).collect();
    let (Some(first), Some(last)) = (leasing.first(), leasing.last()) else {
        return;
    };
    let at = |t: Instant| {
        leasing
            .iter()
            .rev()
            .find(|s| s.at <= t)
            .map_or((0, 0), |s| counts(s))
    };
    let window = Duration::from_secs(5);
    let (n_start, slow_start) = at(first.at + window);
    let (n_end, slow_end) = at(last.at - window);
    let (last, closing) = (counts(last), counts(closing));
    println!(
        "{label} {what} of {:.1} ms or more, by time: {slow_start} of {n_start} in the \
         first 5 s, {} of {} between, {} of {} in the last 5 s, {} of {} heard of after the \
         end ({} of {} in all)",
        SLOW_LEASE.as_secs_f64() * 1e3,
        slow_end.saturating_sub(slow_start),
        n_end.saturating_sub(n_start),
        last.1.saturating_sub(slow_end),
        last.0.saturating_sub(n_end),
        closing.1.saturating_sub(last.1),
        closing.0.saturating_sub(last.0),
        closing.1,
        closing.0
    );
}

/// `at` as milliseconds since the Unix epoch (status records' clock).
fn froze_epoch_ms(at: Instant) -> u64 {
    let ago = at.elapsed();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(now.saturating_sub(ago).as_millis()).unwrap_or(u64::MAX)
}
