//! The same sweep across real OS processes (a head and three workers on 127.0.0.1), with nodes
//! killed, frozen, drained and refused. In every case the results must equal the in-process
//! run's, cell for cell: no cell missing, none duplicated.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use gridtest::data::synth::SynthSpec;
use gridtest::status::{self, StatusEvent, SweepSummary};
use gridtest::sweep::NodeStats;
use gridtest_tests::Scratch;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_cluster_sweep");
/// The same binary as a later release would build it (`paced_sma` at another version).
const BIN_NEXT: &str = env!("CARGO_BIN_EXE_cluster_sweep_next");
const COOKIE: &str = "test-cookie";
const CELLS: usize = 3 * 80;
/// Busy work per event: makes a unit take about a tenth of a second.
const SPIN: &str = "4000";

mod data_views;
mod slices;

/// Cluster tests start several processes each: run them one at a time.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The dataset (3 symbols × 2 days × 5 000 ticks), generated once per test run.
pub(crate) fn dataset() -> &'static Path {
    static DATA: OnceLock<PathBuf> = OnceLock::new();
    DATA.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-data");
        let scratch = Scratch {
            dir: tempfile::TempDir::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
        };
        scratch.synth(&SynthSpec {
            symbols: 3,
            days: 2,
            ticks_per_day: 5000,
            seed: 99,
            ..SynthSpec::default()
        });
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(scratch.dir.keep(), &dir).unwrap();
        dir
    })
}

/// `results.csv` of the in-process run, the reference every cluster run must equal.
pub(crate) fn expected_results() -> &'static str {
    expected()
}

fn expected() -> &'static str {
    static EXPECTED: OnceLock<String> = OnceLock::new();
    EXPECTED.get_or_init(|| {
        let out = tempfile::tempdir().unwrap();
        let status = Command::new(BIN)
            .args(common_args(out.path()))
            .args(["--role", "local", "--threads", "2"])
            .env("GRIDTEST_TEST_SPIN", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read_to_string(out.path().join("out/results.csv")).unwrap()
    })
}

fn common_args(dir: &Path) -> Vec<String> {
    [
        "--data",
        &dataset().display().to_string(),
        "--out",
        &dir.join("out").display().to_string(),
        "--no-progress",
        "--progress-ms",
        "200",
        "--unit-evals",
        "40000",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// A running process: its output collected line by line (for diagnostics only) and its status
/// events (`--status-file`), which the tests read.
struct Proc {
    name: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    status: PathBuf,
}

/// A fresh status file path for a process named `name`.
fn status_path(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("status-{}-{n}-{name}.jsonl", std::process::id()))
}

impl Proc {
    fn spawn(name: &str, args: &[String]) -> Self {
        Self::spawn_with_spin(name, args, SPIN)
    }

    fn spawn_with_spin(name: &str, args: &[String], spin: &str) -> Self {
        Self::spawn_from(BIN, name, args, spin)
    }

    fn spawn_from(bin: &str, name: &str, args: &[String], spin: &str) -> Self {
        let status = status_path(name);
        let _ = std::fs::remove_file(&status);
        let mut child = Command::new(bin)
            .args(args)
            .arg("--status-file")
            .arg(&status)
            .env("GRIDTEST_TEST_SPIN", spin)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let readers = [
            Box::new(out) as Box<dyn std::io::Read + Send>,
            Box::new(err),
        ]
        .into_iter()
        .map(|stream| {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            })
        })
        .collect();
        Self {
            name: name.to_owned(),
            child,
            lines,
            readers,
            status,
        }
    }

    fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// The status events written so far.
    fn events(&self) -> Vec<StatusEvent> {
        match status::read(&self.status) {
            Ok(records) => records.into_iter().map(|r| r.event).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => panic!("{}: bad status file: {e}", self.name),
        }
    }

    /// Waits until a status event satisfies `pred`; returns it.
    fn wait_event(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&StatusEvent) -> bool,
    ) -> StatusEvent {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.events().into_iter().find(|e| pred(e)) {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "{}: timed out waiting for {what}; output:\n{}",
                self.name,
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the last finished sweep's event says.
    fn summary(&self) -> SweepSummary {
        self.events()
            .into_iter()
            .rev()
            .find_map(|e| match e {
                StatusEvent::SweepFinished(s) => Some(*s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{}: no sweep finished:\n{}", self.name, self.text()))
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} {}", self.name);
    }

    fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The pipes close with the process: the readers end with them.
                for reader in self.readers.drain(..) {
                    reader.join().unwrap();
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{}: did not exit; output:\n{}",
                self.name,
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A head and its workers on 127.0.0.1.
pub(crate) struct Cluster {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) port: u16,
    head: Option<Proc>,
    workers: Vec<Proc>,
    head_extra: Vec<String>,
}

impl Cluster {
    fn start(workers: usize) -> Self {
        let mut c = Self::with_head(&[]);
        for i in 1..=workers {
            c.start_worker(&format!("w{i}"), COOKIE, &[]);
        }
        c
    }

    fn with_head(extra: &[&str]) -> Self {
        let _ = expected();
        let mut c = Self {
            dir: tempfile::tempdir().unwrap(),
            // The first head binds a port of the kernel's choosing and says which (no race
            // between finding a free port and binding it); a restarted head takes it again.
            port: 0,
            head: None,
            workers: Vec::new(),
            head_extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        c.start_head();
        c
    }

    fn head_args(&self) -> Vec<String> {
        let mut args = common_args(self.dir.path());
        args.extend(
            [
                "--role",
                "head",
                "--listen",
                &format!("127.0.0.1:{}", self.port),
                "--threads",
                "0",
                "--cookie",
                COOKIE,
                "--node-name",
                "head",
                "--results",
                &self.dir.path().join("results").display().to_string(),
                "--heartbeat-ms",
                "300",
                "--node-timeout-ms",
                "1500",
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
        args.extend(self.head_extra.iter().cloned());
        args
    }

    fn start_head(&mut self) {
        let head = Proc::spawn("head", &self.head_args());
        let listening = head.wait_event("the head to listen", Duration::from_secs(60), |e| {
            matches!(e, StatusEvent::Listening { .. })
        });
        let StatusEvent::Listening { addr } = listening else {
            unreachable!()
        };
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        assert!(self.port == 0 || self.port == port, "{addr}");
        self.port = port;
        self.head = Some(head);
    }

    fn start_worker(&mut self, name: &str, cookie: &str, extra: &[&str]) -> usize {
        self.start_worker_with_spin(name, cookie, extra, SPIN)
    }

    fn start_worker_with_spin(
        &mut self,
        name: &str,
        cookie: &str,
        extra: &[&str],
        spin: &str,
    ) -> usize {
        self.start_worker_from(BIN, name, cookie, extra, spin)
    }

    fn start_worker_from(
        &mut self,
        bin: &str,
        name: &str,
        cookie: &str,
        extra: &[&str],
        spin: &str,
    ) -> usize {
        let args = self.worker_args(name, cookie, extra);
        self.workers.push(Proc::spawn_from(bin, name, &args, spin));
        self.workers.len() - 1
    }

    fn worker_args(&self, name: &str, cookie: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "--role",
            "worker",
            "--seeds",
            &format!("127.0.0.1:{}", self.port),
            "--threads",
            "1",
            "--cookie",
            cookie,
            "--node-name",
            name,
            "--drain-grace-s",
            "20",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    }

    /// Every sweep the head finished, in order, from its status file.
    pub(crate) fn finished_sweeps(&self) -> Vec<SweepSummary> {
        self.head()
            .events()
            .into_iter()
            .filter_map(|e| match e {
                StatusEvent::SweepFinished(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    fn head(&self) -> &Proc {
        self.head.as_ref().unwrap()
    }

    fn worker(&mut self, name: &str) -> &mut Proc {
        self.workers
            .iter_mut()
            .rev()
            .find(|w| w.name == name)
            .unwrap()
    }

    /// Cells done according to the head's latest progress event.
    fn done(&self) -> usize {
        self.head()
            .events()
            .iter()
            .rev()
            .find_map(|e| match e {
                StatusEvent::Progress { done, .. } => Some(*done),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn wait_done(&self, at_least: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.done() < at_least {
            assert!(
                Instant::now() < deadline,
                "the sweep did not reach {at_least} cells; head:\n{}",
                self.head().text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the head to finish; checks that it succeeded, that its sweep has every cell
    /// and that its results equal the in-process run's. Returns what its status file says of
    /// the sweep.
    fn finish(&mut self) -> SweepSummary {
        let head = self.head.as_mut().unwrap();
        let status = head.wait_exit(Duration::from_secs(180));
        let text = head.text();
        assert!(status.success(), "head failed:\n{text}");
        let summary = head.summary();
        assert_eq!(
            (summary.cells, summary.failed),
            (CELLS, 0),
            "{summary:?}\n{text}"
        );
        let got = std::fs::read_to_string(self.dir.path().join("out/results.csv")).unwrap();
        assert_eq!(got.lines().count(), CELLS + 1, "one row per cell");
        assert!(
            got == expected(),
            "cluster results differ from the in-process run"
        );
        summary
    }
}

/// A head serving submissions (`--serve`) and `workers` workers.
pub(crate) fn start_serving_cluster(workers: usize) -> (MutexGuard<'static, ()>, Cluster) {
    let serial = serial();
    let mut c = Cluster::with_head(&["--serve"]);
    c.head()
        .wait_event("the head to serve", Duration::from_secs(60), |e| {
            *e == StatusEvent::Serving
        });
    for i in 1..=workers {
        c.start_worker(&format!("w{i}"), COOKIE, &[]);
    }
    (serial, c)
}

/// What `node` did, from the head's summary.
fn node<'a>(summary: &'a SweepSummary, node: &str) -> &'a NodeStats {
    summary
        .nodes
        .get(node)
        .unwrap_or_else(|| panic!("{node} is not in the summary: {summary:?}"))
}

/// Units requeued when `name` was lost, from the supervisor's events.
fn requeued_on_loss(events: &[StatusEvent], name: &str) -> usize {
    events
        .iter()
        .map(|e| match e {
            StatusEvent::NodeLost { node, requeued, .. } if node == name => *requeued,
            _ => 0,
        })
        .sum()
}

#[test]
fn a_cluster_sweep_equals_the_in_process_run() {
    let _serial = serial();
    let mut c = Cluster::start(3);
    let summary = c.finish();
    assert_eq!(
        (summary.computed, summary.resumed),
        (CELLS, 0),
        "{summary:?}"
    );
    for w in ["w1", "w2", "w3"] {
        assert!(
            node(&summary, w).cells > 0,
            "{w} made cells final: {summary:?}"
        );
    }
    let cells: u64 = summary.nodes.values().map(|n| n.cells).sum();
    assert_eq!(
        cells, CELLS as u64,
        "each cell made final by one node: {summary:?}"
    );
    // What the workers read, as their lease requests and reports said, and the head's own
    // planning: each shard was read once by each worker that ran units of it (one to three),
    // with its footers (the content tags were cached by the in-process reference run).
    let reads = summary.reads;
    assert!(
        reads.dataset_bytes > 0
            && reads.bytes_read >= reads.dataset_bytes
            && reads.bytes_read < 5 * reads.dataset_bytes,
        "{reads:?}"
    );
}

#[test]
fn killing_workers_mid_sweep_loses_nothing() {
    let _serial = serial();
    let mut c = Cluster::start(3);
    c.wait_done(CELLS / 5);
    c.worker("w1").signal("KILL");
    c.head().wait_event(
        "w1 lost",
        Duration::from_secs(20),
        |e| matches!(e, StatusEvent::NodeLost { node, .. } if node == "w1"),
    );
    // w1 comes back under its name, then w2 is killed too.
    c.start_worker("w1", COOKIE, &[]);
    c.wait_done(CELLS * 3 / 5);
    c.worker("w2").signal("KILL");
    let summary = c.finish();
    let events = c.head().events();
    // Each killed worker was busy (one scorer, units of about a tenth of a second): each lost
    // the units it held, and exactly those went back to the queue.
    for w in ["w1", "w2"] {
        let lost = requeued_on_loss(&events, w);
        assert!(lost >= 1, "{w}'s leased units were requeued: {events:?}");
        assert_eq!(node(&summary, w).requeued, lost as u64, "{summary:?}");
    }
    assert_eq!(
        node(&summary, "w3").requeued,
        0,
        "the worker that was never killed lost nothing: {summary:?}"
    );
    assert_eq!(
        summary.ledger.requeued,
        summary.nodes.values().map(|n| n.requeued).sum::<u64>(),
        "{summary:?}"
    );
}

#[test]
fn a_frozen_worker_loses_its_leases_and_its_late_results_count_once() {
    let _serial = serial();
    let mut c = Cluster::start(3);
    c.wait_done(CELLS / 5);
    c.worker("w1").signal("STOP");
    c.head()
        .wait_event("w1 silent", Duration::from_secs(30), |e| {
            matches!(e, StatusEvent::NodeLost { node, reason, .. }
                if node == "w1" && reason.contains("silent"))
        });
    c.worker("w1").signal("CONT");
    c.finish();
    let events = c.head().events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StatusEvent::NodeBack { node } if node == "w1")),
        "{events:?}"
    );
}

#[test]
fn a_restarted_head_resumes_without_recomputing_done_cells() {
    let _serial = serial();
    let mut c = Cluster::start(3);
    // Killed once the persisted ledger (read from the results root, not from logs) holds a
    // good part of the cells.
    let results = c.dir.path().join("results");
    let deadline = Instant::now() + Duration::from_secs(120);
    let persisted = loop {
        let n = gridtest_tests::ledger_cells(&results);
        if n >= CELLS * 2 / 5 {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "the ledger never reached {} cells",
            CELLS * 2 / 5
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    c.head.as_ref().unwrap().signal("KILL");
    let first = c.head.as_mut().unwrap().wait_exit(Duration::from_secs(10));
    assert!(!first.success());
    c.start_head();
    let summary = c.finish();
    assert!(
        summary.resumed >= persisted,
        "{} resumed, {persisted} were persisted: {summary:?}",
        summary.resumed
    );
    assert_eq!(
        summary.resumed + summary.computed,
        CELLS,
        "done cells are not recomputed: {summary:?}"
    );
}

#[test]
fn a_node_with_the_wrong_cookie_is_refused_and_bad_frames_do_no_harm() {
    let _serial = serial();
    let mut c = Cluster::start(2);
    let foreign = c.start_worker("intruder", "not-the-cookie", &["--join-timeout-s", "3"]);
    // Garbage and an oversized frame on the head's port.
    for payload in [
        &b"\x00\x00\x00\x10not a protobuf frame at all"[..],
        &[0xff, 0xff, 0xff, 0xff, 1, 2, 3],
    ] {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", c.port)) {
            let _ = s.write_all(payload);
        }
    }
    let status = c.workers[foreign].wait_exit(Duration::from_secs(60));
    let intruder = c.workers[foreign].text();
    assert!(!status.success(), "{intruder}");
    assert!(
        intruder.contains("could not join the cluster"),
        "{intruder}"
    );
    let summary = c.finish();
    assert!(!summary.nodes.contains_key("intruder"), "{summary:?}");
    let events = c.head().events();
    assert!(
        events.iter().any(
            |e| matches!(e, StatusEvent::Refused { claimed, duplicate: false, .. }
            if claimed.as_deref() != Some("w1") && claimed.as_deref() != Some("w2"))
        ),
        "{events:?}"
    );
}

#[test]
fn a_node_running_other_code_is_refused_and_its_units_go_elsewhere() {
    use crate::probes::{get, parse, probes_addr, sample};
    let _serial = serial();
    // No work until three nodes have asked: the node built from other code gets leases too.
    let mut c = Cluster::with_head(&["--wait-for-nodes", "3", "--http", "127.0.0.1:0"]);
    let head = probes_addr(
        &c.head()
            .wait_event("its probes", Duration::from_secs(60), |e| {
                matches!(e, StatusEvent::Probes { .. })
            }),
    );
    c.start_worker("w1", COOKIE, &[]);
    c.start_worker("w2", COOKIE, &[]);
    c.start_worker_from(BIN_NEXT, "w-next", COOKIE, &[], SPIN);
    // The head's metrics tell it while the sweep runs (an operator's alert).
    let incompatible = |scrape: &prometheus_parse::Scrape| {
        sample(
            scrape,
            "gridtest_nodes",
            &[("kind", "cpu"), ("state", "incompatible")],
        )
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let scrape = loop {
        let scrape = parse(&get(&head, "/metrics").1);
        if incompatible(&scrape) >= 1.0 || Instant::now() > deadline {
            break scrape;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(incompatible(&scrape), 1.0);
    // Every cell, equal to the in-process run's: none came from version 2.
    let summary = c.finish();
    assert_eq!(
        summary.nodes.get("w-next").map_or(0, |n| n.cells),
        0,
        "{summary:?}"
    );
    let reason = summary
        .incompatible
        .get("w-next")
        .unwrap_or_else(|| panic!("w-next is not listed as incompatible: {summary:?}"));
    assert_eq!(
        reason,
        "strategy `paced_sma` version: the sweep needs 1, this node runs 2"
    );
    let events = c.head().events();
    assert!(
        events.iter().any(|e| matches!(e,
            StatusEvent::NodeIncompatible { node, reason: r, .. } if node == "w-next" && r == reason)),
        "{events:?}"
    );
}

#[test]
fn one_process_can_be_several_nodes_each_with_its_own_session() {
    let _serial = serial();
    // No work until all four nodes have asked: each of the process's three gets leases.
    let mut c = Cluster::with_head(&["--wait-for-nodes", "4"]);
    c.start_worker("w1", COOKIE, &[]);
    c.start_worker("multi", COOKIE, &["--nodes-per-process", "3"]);
    let members = ["multi.0", "multi.1", "multi.2"];
    c.wait_done(CELLS / 3);
    // One process, three nodes: killing it loses each of them, each with its own units.
    c.worker("multi").signal("KILL");
    for name in members {
        c.head().wait_event(
            &format!("{name} lost"),
            Duration::from_secs(20),
            |e| matches!(e, StatusEvent::NodeLost { node, .. } if node == name),
        );
    }
    let summary = c.finish();
    let names: Vec<&str> = summary.nodes.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["multi.0", "multi.1", "multi.2", "w1"],
        "each node of the process is a node of its own, none seen twice: {summary:?}"
    );
    let events = c.head().events();
    for name in members {
        assert!(
            node(&summary, name).cells > 0,
            "{name} made cells final: {summary:?}"
        );
        assert_eq!(
            node(&summary, name).requeued,
            requeued_on_loss(&events, name) as u64,
            "{name}: the units it held, and only those, went back: {events:?}"
        );
    }
    let lost: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StatusEvent::NodeLost { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    assert!(!lost.contains(&"w1"), "w1 was never lost: {events:?}");
    assert_eq!(
        summary.ledger.requeued,
        summary.nodes.values().map(|n| n.requeued).sum::<u64>(),
        "{summary:?}"
    );
}

#[test]
fn sigterm_drains_a_worker_which_exits_cleanly() {
    let _serial = serial();
    let mut c = Cluster::start(3);
    c.wait_done(CELLS * 3 / 10);
    let w1 = c.worker("w1");
    w1.signal("TERM");
    let status = w1.wait_exit(Duration::from_secs(30));
    let log = w1.text();
    assert!(status.success(), "{log}");
    assert_eq!(
        w1.events().last(),
        Some(&StatusEvent::Drained { handed_back: false }),
        "{log}"
    );
    c.finish();
}

#[test]
fn a_slow_node_is_flagged_and_stragglers_are_rerun() {
    let _serial = serial();
    let mut c = Cluster::with_head(&[]);
    c.start_worker("w1", COOKIE, &[]);
    c.start_worker("w2", COOKIE, &[]);
    // A throttled node: five times the work per event.
    c.start_worker_with_spin("slow", COOKIE, &[], "20000");
    let summary = c.finish();
    let events = c.head().events();
    assert!(
        events.iter().any(
            |e| matches!(e, StatusEvent::NodeSlow { node, speed, median }
                if node == "slow" && speed < median)
        ),
        "{events:?}"
    );
    assert!(node(&summary, "slow").slow, "{summary:?}");
    for w in ["w1", "w2"] {
        assert!(!node(&summary, w).slow, "{summary:?}");
    }
    // With the queue empty, the fast nodes took copies of the slow node's last units.
    assert!(summary.ledger.speculative > 0, "{summary:?}");
}

/// A CA and a node certificate (SAN `gridtest`) made with the openssl CLI, or `None` (the test
/// is then skipped, saying so).
fn certificates(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let run = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:gridtest\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    .ok()?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ok = run(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=gridtest-test-ca",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    ]
    .concat())
        && run(&[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "node.key",
                "-out",
                "node.csr",
                "-subj",
                "/CN=gridtest",
            ],
        ]
        .concat())
        && run(&[
            "x509",
            "-req",
            "-in",
            "node.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "node.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
    ok.then(|| {
        (
            dir.join("node.pem"),
            dir.join("node.key"),
            dir.join("ca.pem"),
        )
    })
}

#[test]
fn nodes_talk_over_mutual_tls_and_plain_nodes_are_refused() {
    let _serial = serial();
    let certs = tempfile::tempdir().unwrap();
    let Some((cert, key, ca)) = certificates(certs.path()) else {
        gridtest_tests::skip(
            "openssl",
            "nodes_talk_over_mutual_tls",
            "the openssl command is not available",
        );
        return;
    };
    let (cert, key, ca) = (
        cert.display().to_string(),
        key.display().to_string(),
        ca.display().to_string(),
    );
    let tls = [
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
        "--tls-ca",
        ca.as_str(),
    ];
    let mut c = Cluster::with_head(&tls);
    c.start_worker("w1", COOKIE, &tls);
    c.start_worker("w2", COOKIE, &tls);
    let plain = c.start_worker("plain", COOKIE, &["--join-timeout-s", "3"]);
    let status = c.workers[plain].wait_exit(Duration::from_secs(60));
    assert!(!status.success());
    assert!(
        c.workers[plain]
            .text()
            .contains("could not join the cluster")
    );
    let summary = c.finish();
    assert!(
        node(&summary, "w1").cells + node(&summary, "w2").cells > 0,
        "{summary:?}"
    );
    assert!(!summary.nodes.contains_key("plain"), "{summary:?}");
}

/// Listening TCP ports of process `pid` (from /proc: its socket inodes, the kernel's tables).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is field 9.
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

impl Cluster {
    /// A worker with no `--node-name` (the default name), labelled `label` in the test.
    fn start_unnamed_worker(&mut self, label: &str) {
        let args: Vec<String> = [
            "--role",
            "worker",
            "--seeds",
            &format!("127.0.0.1:{}", self.port),
            "--threads",
            "1",
            "--cookie",
            COOKIE,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        self.workers.push(Proc::spawn(label, &args));
    }

    fn head_pid(&self) -> u32 {
        self.head().child.id()
    }
}

#[test]
fn strangers_claiming_a_workers_name_requeue_nothing() {
    let _serial = serial();
    let mut c = Cluster::start(2);
    c.wait_done(CELLS / 10);
    // Impostors with the wrong cookie under the real workers' names, again and again.
    for _ in 0..3 {
        for name in ["w1", "w2"] {
            c.start_worker(name, "not-the-cookie", &["--join-timeout-s", "1"]);
        }
    }
    let summary = c.finish();
    for w in ["w1", "w2"] {
        assert_eq!(
            node(&summary, w).requeued,
            0,
            "an unauthenticated session moved {w}'s units: {summary:?}"
        );
    }
    let events = c.head().events();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StatusEvent::NodeLost { .. })),
        "{events:?}"
    );
}

#[test]
fn a_second_node_with_a_connected_nodes_name_is_refused_and_the_first_keeps_its_session() {
    let _serial = serial();
    let mut c = Cluster::start(2);
    c.wait_done(CELLS / 10);
    // Processes with the cookie and a running worker's name, one after another: each must be
    // refused, and the running worker must keep its session and its units. (Before, the
    // session election drew by a random nonce: each try displaced w1 about half the time.)
    let mut impostors = Vec::new();
    for _ in 0..4 {
        let i = c.start_worker("w1", COOKIE, &["--join-timeout-s", "2"]);
        let status = c.workers[i].wait_exit(Duration::from_secs(60));
        assert!(!status.success(), "{}", c.workers[i].text());
        impostors.push(i);
    }
    let summary = c.finish();
    assert_eq!(
        node(&summary, "w1").requeued,
        0,
        "an impostor moved w1's units: {summary:?}"
    );
    let events = c.head().events();
    assert_eq!(requeued_on_loss(&events, "w1"), 0, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StatusEvent::NodeLost { node, .. } if node == "w1")),
        "w1 was displaced: {events:?}"
    );
    let refused = events
        .iter()
        .filter(|e| {
            matches!(e, StatusEvent::Refused { claimed: Some(n), duplicate: true, .. } if n == "w1")
        })
        .count();
    assert!(refused >= impostors.len(), "{refused} refusals: {events:?}");
    // The first w1 ran to the end: it computed cells and never re-joined.
    let first = c.workers.iter().find(|w| w.name == "w1").unwrap();
    let joins = status::read(&first.status)
        .unwrap()
        .iter()
        .filter(|r| matches!(r.event, StatusEvent::Joined { .. }))
        .count();
    assert_eq!(joins, 1);
    assert!(node(&summary, "w1").cells > 0, "{summary:?}");
}

#[test]
fn workers_without_a_name_get_unique_ones() {
    let _serial = serial();
    let mut c = Cluster::with_head(&[]);
    for label in ["a", "b", "c"] {
        c.start_unnamed_worker(label);
    }
    let summary = c.finish();
    // Each worker says under which name it joined.
    let names: Vec<String> = c
        .workers
        .iter()
        .map(|w| {
            let records = status::read(&w.status).unwrap();
            let joined = records
                .iter()
                .find(|r| matches!(r.event, StatusEvent::Joined { .. }))
                .unwrap_or_else(|| panic!("{} never joined: {records:?}", w.name));
            joined.by_node.clone()
        })
        .collect();
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), 3, "{names:?}");
    assert!(names.iter().all(|n| n != "head"), "{names:?}");
    let events = c.head().events();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StatusEvent::Refused { .. })),
        "{events:?}"
    );
    for name in &names {
        if let Some(stats) = summary.nodes.get(name) {
            assert_eq!(stats.requeued, 0, "{summary:?}");
        }
    }
}

#[test]
fn the_head_listens_on_its_transport_only() {
    let _serial = serial();
    let mut c = Cluster::with_head(&[]);
    let ports = listening_ports(c.head_pid());
    assert!(ports.contains(&c.port), "{ports:?}");
    // ractor_cluster's NodeServer always opens a listener of its own: it is there, but a
    // worker with the cookie cannot join through it.
    let others: Vec<u16> = ports.iter().copied().filter(|p| *p != c.port).collect();
    assert!(
        !others.is_empty(),
        "ractor's listener not found among {ports:?}"
    );
    for port in others {
        let args: Vec<String> = [
            "--role",
            "worker",
            "--seeds",
            &format!("127.0.0.1:{port}"),
            "--threads",
            "1",
            "--cookie",
            COOKIE,
            "--node-name",
            "sidedoor",
            "--join-timeout-s",
            "3",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let mut side = Proc::spawn("sidedoor", &args);
        let status = side.wait_exit(Duration::from_secs(60));
        assert!(
            !status.success(),
            "joined through port {port}:\n{}",
            side.text()
        );
    }
    c.start_worker("w1", COOKIE, &[]);
    let summary = c.finish();
    assert!(!summary.nodes.contains_key("sidedoor"), "{summary:?}");
}

#[test]
fn connections_that_never_authenticate_are_closed() {
    use std::io::Read;
    let _serial = serial();
    let mut c = Cluster::with_head(&[]);
    let idle: Vec<std::net::TcpStream> = (0..50)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", c.port)).unwrap())
        .collect();
    let opened = Instant::now();
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 64];
        // The head closes it (EOF or reset) after its authentication deadline.
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    let waited = opened.elapsed();
    assert!(waited < Duration::from_secs(15), "closed after {waited:?}");
    assert!(
        waited >= Duration::from_secs(4),
        "closed after {waited:?}, before the deadline"
    );
    c.start_worker("w1", COOKIE, &[]);
    c.finish();
}

#[test]
fn sigterm_stops_a_sweep_cleanly_and_a_rerun_resumes_exactly() {
    let _serial = serial();
    let _ = expected();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let mut args = common_args(dir.path());
    args.extend(
        [
            "--role",
            "local",
            "--threads",
            "1",
            "--results",
            &results.display().to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    let mut first = Proc::spawn("first", &args);
    first.wait_event(
        "cells done",
        Duration::from_secs(120),
        |e| matches!(e, StatusEvent::Progress { done, .. } if *done >= CELLS / 5),
    );
    first.signal("TERM");
    let status = first.wait_exit(Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(i32::from(gridtest::exit::INTERRUPTED)),
        "{}",
        first.text()
    );
    let Some(StatusEvent::SweepInterrupted {
        sweep_id,
        done,
        total,
    }) = first.events().last().cloned()
    else {
        panic!("no interruption event: {:?}", first.events());
    };
    assert_eq!(total, CELLS);
    assert!((CELLS / 5..CELLS).contains(&done), "{done}");
    // Every final cell was flushed to the ledger, and the sweep's lease was released.
    assert_eq!(gridtest_tests::ledger_cells(&results), done);
    let sweep_dir = results.join("sweeps").join(sweep_id.to_string());
    assert!(sweep_dir.join("spec.json").exists());
    assert!(!sweep_dir.join("lock").exists(), "the lease was released");

    // Run again: exactly the cells that were done are resumed, the rest computed.
    let mut second = Proc::spawn_with_spin("second", &args, "0");
    let status = second.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "{}", second.text());
    let summary = second.summary();
    assert_eq!(summary.sweep_id, Some(sweep_id));
    assert_eq!((summary.resumed, summary.computed), (done, CELLS - done));
    let got = std::fs::read_to_string(dir.path().join("out/results.csv")).unwrap();
    assert!(
        got == expected(),
        "the resumed sweep differs from the in-process run"
    );
}

#[test]
fn a_halving_search_runs_its_rungs_on_the_cluster_and_a_killed_worker_loses_nothing() {
    let _serial = serial();
    // The reference: the same search in one process (2 days: rung 0 every set on the first
    // day, rung 1 the best half on both).
    let local = tempfile::tempdir().unwrap();
    let status = Command::new(BIN)
        .args(common_args(local.path()))
        .args([
            "--role",
            "local",
            "--threads",
            "2",
            "--halving",
            "--eta",
            "2",
        ])
        .env("GRIDTEST_TEST_SPIN", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let read =
        |dir: &Path, file: &str| std::fs::read_to_string(dir.join("out").join(file)).unwrap();
    let expected_cells = read(local.path(), "results.csv");
    assert_eq!(
        expected_cells.lines().count(),
        3 * 40 + 1,
        "the best 40 of 80 sets on 3 shards"
    );
    let local_search: gridtest::sweep::HalvingReport =
        serde_json::from_str(&read(local.path(), "halving.json")).unwrap();

    let mut c = Cluster::with_head(&["--halving", "--eta", "2"]);
    c.start_worker("w1", COOKIE, &[]);
    c.start_worker("w2", COOKIE, &[]);
    // Rung 0 ends; w1 is killed while rung 1 runs.
    c.head()
        .wait_event("rung 0 to finish", Duration::from_secs(120), |e| {
            matches!(e, StatusEvent::SweepFinished(_))
        });
    let after_rung_0 = |c: &Cluster| {
        let events = c.head().events();
        let start = events
            .iter()
            .position(|e| matches!(e, StatusEvent::SweepFinished(_)))
            .unwrap();
        events[start..]
            .iter()
            .filter_map(|e| match e {
                StatusEvent::Progress { done, .. } => Some(*done),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while after_rung_0(&c) < 20 {
        assert!(
            Instant::now() < deadline,
            "rung 1 did not progress:\n{}",
            c.head().text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    c.worker("w1").signal("KILL");
    let head = c.head.as_mut().unwrap();
    let status = head.wait_exit(Duration::from_secs(180));
    assert!(status.success(), "head failed:\n{}", head.text());
    let rungs = c.finished_sweeps();
    let ids: Vec<_> = rungs.iter().map(|s| s.sweep_id.clone().unwrap()).collect();
    let local_ids: Vec<_> = local_search
        .rungs
        .iter()
        .map(|r| r.sweep_id.clone())
        .collect();
    assert_eq!(ids, local_ids, "the same rungs, the same sweeps");
    assert_eq!(
        rungs
            .iter()
            .map(|s| (s.cells, s.failed))
            .collect::<Vec<_>>(),
        [(3 * 80, 0), (3 * 40, 0)]
    );
    let events = c.head().events();
    assert!(
        requeued_on_loss(&events, "w1") >= 1,
        "w1's leased units went back to the queue: {events:?}"
    );
    assert!(
        read(c.dir.path(), "results.csv") == expected_cells,
        "the cluster's last rung differs from the in-process search"
    );
}

#[test]
fn a_universe_sweep_on_the_cluster_survives_a_killed_worker_and_equals_the_local_run() {
    let _serial = serial();
    let universes = ["--universe", "u01=S000,S001", "--universe", "u12=S001,S002"];
    let cells = 2 * 40;
    let local = tempfile::tempdir().unwrap();
    let status = Command::new(BIN)
        .args(common_args(local.path()))
        .args(["--role", "local", "--threads", "2"])
        .args(universes)
        .env("GRIDTEST_TEST_SPIN", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let want = std::fs::read_to_string(local.path().join("out/results.csv")).unwrap();
    assert_eq!(want.lines().count(), cells + 1, "one row per cell:\n{want}");
    assert!(want.contains("u01:2024-01-02..2024-01-03"), "{want}");

    let mut c = Cluster::with_head(&universes);
    for w in ["w1", "w2", "w3"] {
        c.start_worker(w, COOKIE, &[]);
    }
    c.wait_done(cells / 5);
    c.worker("w1").signal("KILL");
    let head = c.head.as_mut().unwrap();
    let status = head.wait_exit(Duration::from_secs(180));
    assert!(status.success(), "head failed:\n{}", head.text());
    let summary = head.summary();
    assert_eq!((summary.cells, summary.failed), (cells, 0), "{summary:?}");
    let got = std::fs::read_to_string(c.dir.path().join("out/results.csv")).unwrap();
    assert!(got == want, "cluster results differ from the local run");
}

#[test]
fn probes_follow_each_role_and_the_heads_metrics_follow_the_sweep() {
    use crate::probes::{get, parse, probes_addr, sample, wait_for};
    let _serial = serial();
    let probes = |p: &Proc| {
        probes_addr(&p.wait_event("its probes", Duration::from_secs(60), |e| {
            matches!(e, StatusEvent::Probes { .. })
        }))
    };
    // A worker whose head is not there: alive, not ready.
    let lonely = Proc::spawn(
        "lonely",
        &[
            "--role",
            "worker",
            "--seeds",
            "127.0.0.1:1",
            "--cookie",
            COOKIE,
            "--http",
            "127.0.0.1:0",
            "--join-timeout-s",
            "60",
        ]
        .map(str::to_owned),
    );
    let addr = probes(&lonely);
    assert_eq!(get(&addr, "/healthz").0, 200);
    assert_eq!(get(&addr, "/readyz").0, 503);
    assert_eq!(get(&addr, "/nope").0, 404);
    lonely.signal("KILL");

    let mut c = Cluster::with_head(&["--http", "127.0.0.1:0"]);
    let head = probes(c.head());
    wait_for(&head, "/readyz", 200);
    c.start_worker("w1", COOKIE, &["--http", "127.0.0.1:0"]);
    let w1 = probes(c.worker("w1"));
    wait_for(&w1, "/readyz", 200);
    c.start_worker("w2", COOKIE, &[]);
    c.wait_done(CELLS / 4);
    let deadline = Instant::now() + Duration::from_secs(30);
    let scrape = loop {
        let (code, text) = get(&head, "/metrics");
        assert_eq!(code, 200);
        let scrape = parse(&text);
        // The fleet snapshot comes with the progress period: wait until it shows both workers.
        let alive = sample(
            &scrape,
            "gridtest_nodes",
            &[("kind", "cpu"), ("state", "alive")],
        );
        if alive >= 2.0 || Instant::now() > deadline {
            break scrape;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(sample(&scrape, "gridtest_ready", &[]), 1.0);
    assert_eq!(
        sample(&scrape, "gridtest_cells", &[("state", "total")]),
        CELLS as f64
    );
    let done = sample(&scrape, "gridtest_cells", &[("state", "done")]);
    assert!(done >= (CELLS / 4) as f64 && done <= CELLS as f64, "{done}");
    assert_eq!(
        sample(&scrape, "gridtest_cells", &[("state", "failed")]),
        0.0
    );
    assert_eq!(
        sample(
            &scrape,
            "gridtest_nodes",
            &[("kind", "cpu"), ("state", "alive")]
        ),
        2.0
    );
    assert_eq!(
        sample(
            &scrape,
            "gridtest_nodes",
            &[("kind", "gpu"), ("state", "alive")]
        ),
        0.0
    );
    let w1_cells = sample(&scrape, "gridtest_node_cells", &[("node", "w1")]);
    let w2_cells = sample(&scrape, "gridtest_node_cells", &[("node", "w2")]);
    assert!(
        w1_cells + w2_cells <= done,
        "{w1_cells} + {w2_cells} <= {done}"
    );
    assert!(
        sample(
            &scrape,
            "gridtest_node_evaluations_per_second",
            &[("node", "w1")]
        ) > 0.0
    );
    assert_eq!(sample(&scrape, "gridtest_requeued_units", &[]), 0.0);
    let units = sample(&scrape, "gridtest_units", &[("state", "pending")])
        + sample(&scrape, "gridtest_units", &[("state", "leased")]);
    assert!(units > 0.0, "work left mid-sweep");
    // The ledger's flushes to the results root (every half heartbeat) are counted and timed, and
    // so are the leases.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let page = parse(&get(&head, "/metrics").1);
        let leases = sample(&page, "gridtest_leases", &[]);
        let quantile = |name: &str, q: &str| sample(&page, name, &[("quantile", q)]);
        // The scorers' lease latencies, reported with their heartbeats and merged: the first
        // lease of each scorer (with the sweep's context), and the others once there are some.
        let p50 = quantile("gridtest_lease_latency_seconds", "0.5");
        if leases >= 1.0
            && p50 > 0.0
            && sample(&page, "gridtest_ledger_flushes", &[("outcome", "ok")]) >= 1.0
        {
            let p99 = quantile("gridtest_lease_latency_seconds", "0.99");
            assert!(p50 <= p99 && p99 < 60.0, "{p50} {p99}");
            let first = quantile("gridtest_first_lease_latency_seconds", "0.5");
            let first_p99 = quantile("gridtest_first_lease_latency_seconds", "0.99");
            assert!(
                first > 0.0 && first <= first_p99 && first_p99 < 60.0,
                "{first} {first_p99}"
            );
            let p99 = p99.max(first_p99);
            // The head's share of it, measured at the head from the requests' send stamps
            // (one machine, one clock): within the whole.
            let arrival = sample(
                &page,
                "gridtest_lease_arrival_seconds",
                &[("quantile", "0.5")],
            );
            assert!(arrival > 0.0 && arrival <= p99, "{arrival} {p99}");
            // The supervisor's own queue, timed by its probes every 20 ms: a few
            // milliseconds at most on an idle two-node head.
            let queue = sample(
                &page,
                "gridtest_supervisor_queue_seconds",
                &[("quantile", "0.5")],
            );
            assert!(queue > 0.0 && queue < 1.0, "{queue}");
            let slowest = sample(&page, "gridtest_ledger_flush_seconds", &[("stat", "max")]);
            assert!(slowest > 0.0 && slowest < 30.0, "{slowest}");
            let failed = sample(&page, "gridtest_ledger_flushes", &[("outcome", "failed")]);
            assert_eq!(failed, 0.0);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no ledger flush or lease counted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A worker's own page: ready, with an empty fleet.
    let page = parse(&get(&w1, "/metrics").1);
    assert_eq!(sample(&page, "gridtest_ready", &[]), 1.0);
    c.finish();
}

/// The head's autoscaler end to end (`--autoscale kube`): while its sweep has work it grows the
/// CPU pool through the scale subresource of a stand-in API server that checks every request
/// against the Kubernetes API and schema, and as the one-shot head exits it leaves the pool at
/// its minimum; the results equal the in-process run.
#[test]
fn the_head_grows_its_pool_through_the_scale_subresource_and_leaves_it_at_its_minimum() {
    use crate::autoscale::{KubeApi, NAMESPACE, TOKEN};
    let _serial = serial();
    let Some(api) = KubeApi::start(
        "cluster::the_head_grows_its_pool_through_the_scale_subresource_and_leaves_it_at_its_minimum",
        &["gridtest-cpu=0"],
    ) else {
        return;
    };
    let args = [
        "--autoscale",
        "kube",
        "--kube-api",
        &api.url,
        "--kube-token",
        TOKEN,
        "--kube-namespace",
        NAMESPACE,
        "--pool",
        "gridtest-cpu=cpu:0..3",
        "--scale-period-ms",
        "100",
    ];
    let mut c = Cluster::with_head(&args);
    c.start_worker("gridtest-cpu-0", COOKIE, &[]);
    c.finish();
    let patched = api.patched();
    assert!(
        patched.first().is_some_and(|n| (1..=3).contains(n)),
        "the pool grew within its bounds while the sweep had work: {patched:?}"
    );
    assert_eq!(patched.last(), Some(&0), "left at its minimum: {patched:?}");
    let reads = api
        .requests()
        .iter()
        .filter(|r| r["method"] == "GET")
        .count();
    assert!(reads >= 1, "the head read the pool's size");
}
