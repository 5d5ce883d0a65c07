//! The cluster as containers: an image built on this machine from the cluster tests' binary
//! (`deploy/local-image.sh`: `FROM scratch`, no registry), a head and three workers named like
//! StatefulSet pods on a private Docker network, finding each other by DNS name with
//! `--role auto`; a worker `docker kill`ed mid-sweep (eviction), one `docker pause`d past the
//! heartbeat (a freeze), one `docker stop`ped (SIGTERM: drain), one cut off the network (a true
//! partition: no RST) and reconnected, and the head killed and restarted on the same volume lose
//! nothing; a worker killed while it reads a history by slices costs at most its slice; the
//! results equal the in-process run's. Needs a Docker engine (`docker` in `GRIDTEST_REQUIRE` makes it
//! required).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use gridtest::status::{self, StatusEvent};

use crate::cluster::{BIN, dataset, expected_results};

const COOKIE: &str = "container-cookie";
const CELLS: usize = 3 * 80;
/// Busy work per event: a unit takes about a tenth of a second.
const SPIN: &str = "4000";

fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

fn docker_ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Containers, a network and an image removed when the test ends, however it ends.
struct Lab {
    prefix: String,
    containers: Vec<String>,
    image: String,
    /// Busy work per event of the cluster binary (`GRIDTEST_TEST_SPIN`).
    spin: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = docker(&["rm", "-f", c]);
        }
        let _ = docker(&["network", "rm", &self.prefix]);
        let _ = docker(&["rmi", "-f", &self.image]);
    }
}

impl Lab {
    /// Starts `gridtest-<ordinal>` of the pool: its hostname is the pod name, and its DNS name
    /// on the network is `gridtest-<ordinal>.gridtest`, as a headless service gives a pod.
    fn start(&mut self, image: &str, ordinal: u32, out: &Path, extra: &[&str]) {
        let name = format!("{}-{ordinal}", self.prefix);
        let pod = format!("gridtest-{ordinal}");
        let alias = format!("{pod}.gridtest");
        let data = format!("{}:/data:ro", dataset().display());
        let out = format!("{}:/out", out.display());
        let mut args = vec![
            "run",
            "-d",
            "--name",
            &name,
            "--hostname",
            &pod,
            "--network",
            &self.prefix,
            "--network-alias",
            &alias,
            "-v",
            &data,
            "-v",
            &out,
            "-e",
            "GRIDTEST_ROLE=auto",
        ];
        let spin = format!("GRIDTEST_TEST_SPIN={}", self.spin);
        args.extend(["-e", &spin]);
        let cookie = format!("GRIDTEST_COOKIE={COOKIE}");
        args.extend(["-e", &cookie, image]);
        args.extend([
            "--data",
            "/data",
            "--no-progress",
            "--progress-ms",
            "200",
            "--unit-evals",
            "40000",
            "--heartbeat-ms",
            "300",
            "--node-timeout-ms",
            "1500",
        ]);
        args.extend(extra);
        docker_ok(&args);
        self.containers.push(name);
    }
}

/// The records of the head's status file so far.
fn head_events(status_file: &Path) -> Vec<StatusEvent> {
    status::read(status_file)
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.event)
        .collect()
}

/// Waits until the head's status file has an event matching `pred`.
fn wait_head(lab: &Lab, status_file: &Path, what: &str, pred: impl Fn(&StatusEvent) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while !head_events(status_file).iter().any(&pred) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; head:\n{}",
            String::from_utf8_lossy(&docker(&["logs", &lab.containers[0]]).stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An image of the cluster binary and a head with three workers on a network of their own, with
/// `spin` busy work per event; `None` (after a visible skip) without a Docker engine.
fn pool(test: &str, out: &Path, head_extra: &[&str], spin: &str) -> Option<(Lab, String)> {
    let required = std::env::var("GRIDTEST_REQUIRE").unwrap_or_default();
    if !docker(&["info"]).status.success() {
        gridtest_tests::skip_unless_required(&required, "docker", test, "no Docker engine")
            .unwrap();
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local-image.sh");
    let tag = format!("{}-{}", std::process::id(), test.len());
    let image = format!("gridtest-test:{tag}");
    let built = Command::new("bash")
        .arg(&script)
        .args([BIN, &image])
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mut lab = Lab {
        prefix: format!("gridtest-test-{tag}"),
        containers: Vec::new(),
        image: image.clone(),
        spin: spin.to_owned(),
    };
    docker_ok(&["network", "create", &lab.prefix]);
    let mut head = vec![
        "--threads",
        "0",
        "--out",
        "/out/results",
        "--status-file",
        "/out/status.jsonl",
    ];
    head.extend(head_extra);
    lab.start(&image, 0, out, &head);
    for ordinal in 1..=3 {
        lab.start(
            &image,
            ordinal,
            out,
            &["--threads", "1", "--drain-grace-s", "20"],
        );
    }
    Some((lab, image))
}

/// Waits for the head to exit 0 and checks its results against the in-process run.
fn finish(lab: &Lab, out: &Path) {
    let code = docker_ok(&["wait", &lab.containers[0]]);
    let logs = docker(&["logs", &lab.containers[0]]);
    assert_eq!(
        code,
        "0",
        "head:\n{}",
        String::from_utf8_lossy(&logs.stderr)
    );
    let got = std::fs::read_to_string(out.join("results/results.csv")).unwrap();
    assert!(
        got == expected_results(),
        "the pool's results differ from the in-process run"
    );
}

fn progressed(e: &StatusEvent) -> bool {
    matches!(e, StatusEvent::Progress { done, .. } if *done >= CELLS / 5)
}

#[test]
fn a_containerised_pool_survives_a_killed_worker_and_equals_the_in_process_run() {
    let _serial = crate::cluster::serial();
    let out = tempfile::tempdir().unwrap();
    let test = "containers::a_containerised_pool_survives_a_killed_worker";
    let Some((lab, _)) = pool(test, out.path(), &[], SPIN) else {
        return;
    };
    let status_file = out.path().join("status.jsonl");
    wait_head(&lab, &status_file, "a fifth of the cells", progressed);
    docker_ok(&["kill", &lab.containers[1]]);
    finish(&lab, out.path());
    let lost = head_events(&status_file)
        .iter()
        .any(|e| matches!(e, StatusEvent::NodeLost { node, .. } if node == "gridtest-1"));
    assert!(lost, "the killed worker was noticed");
}

#[test]
fn a_paused_worker_and_a_stopped_one_lose_nothing() {
    let _serial = crate::cluster::serial();
    let out = tempfile::tempdir().unwrap();
    let test = "containers::a_paused_worker_and_a_stopped_one_lose_nothing";
    let Some((lab, _)) = pool(test, out.path(), &[], SPIN) else {
        return;
    };
    let status_file = out.path().join("status.jsonl");
    wait_head(&lab, &status_file, "a fifth of the cells", progressed);
    // Frozen past the heartbeat (the cgroup freezer: no signal, no RST): its leases go back.
    docker_ok(&["pause", &lab.containers[1]]);
    wait_head(&lab, &status_file, "gridtest-1 silent", |e| {
        matches!(e, StatusEvent::NodeLost { node, reason, .. }
            if node == "gridtest-1" && reason.contains("silent"))
    });
    docker_ok(&["unpause", &lab.containers[1]]);
    // `docker stop`: SIGTERM, the worker drains within its grace and exits 0.
    docker_ok(&["stop", "-t", "30", &lab.containers[2]]);
    let code = docker_ok(&["inspect", "-f", "{{.State.ExitCode}}", &lab.containers[2]]);
    assert_eq!(code, "0", "a drained worker exits 0");
    finish(&lab, out.path());
    let events = head_events(&status_file);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StatusEvent::NodeBack { node } if node == "gridtest-1")),
        "the paused worker came back: {events:?}"
    );
}

#[test]
fn a_partitioned_worker_and_a_head_restarted_on_its_volume_lose_nothing() {
    let _serial = crate::cluster::serial();
    let out = tempfile::tempdir().unwrap();
    let test = "containers::a_partitioned_worker_and_a_head_restarted_on_its_volume_lose_nothing";
    let Some((lab, _)) = pool(test, out.path(), &["--results", "/out/root"], SPIN) else {
        return;
    };
    let status_file = out.path().join("status.jsonl");
    wait_head(&lab, &status_file, "a fifth of the cells", progressed);
    // A true partition: the worker's interface is gone, its packets vanish (no RST, no FIN);
    // the head notices the silence and takes its leases back.
    let network = lab.prefix.clone();
    docker_ok(&["network", "disconnect", &network, &lab.containers[1]]);
    wait_head(&lab, &status_file, "gridtest-1 silent", |e| {
        matches!(e, StatusEvent::NodeLost { node, reason, .. }
            if node == "gridtest-1" && reason.contains("silent"))
    });
    docker_ok(&[
        "network",
        "connect",
        "--alias",
        "gridtest-1.gridtest",
        &network,
        &lab.containers[1],
    ]);
    // The head is killed once its ledger on the volume holds a good part of the cells, and
    // restarted as the same container (same volume, same arguments, a new address that the
    // workers find again by name).
    let root = out.path().join("root");
    let deadline = Instant::now() + Duration::from_secs(180);
    let persisted = loop {
        let n = gridtest_tests::ledger_cells(&root);
        if n >= CELLS * 2 / 5 {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "the ledger never reached 2/5 of the cells"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    docker_ok(&["kill", &lab.containers[0]]);
    docker_ok(&["start", &lab.containers[0]]);
    finish(&lab, out.path());
    let summary = gridtest_tests::finished_sweep(&status_file);
    assert!(
        summary.resumed >= persisted && summary.resumed + summary.computed == CELLS,
        "{persisted} persisted before the kill: {summary:?}"
    );
}

#[test]
fn a_containerised_pool_reads_histories_by_slices_and_a_killed_worker_loses_at_most_one() {
    let _serial = crate::cluster::serial();
    let out = tempfile::tempdir().unwrap();
    let test = "containers::a_containerised_pool_reads_histories_by_slices";
    // The head's cache holds no history: each is read a day at a time, a slice taking about a
    // second.
    let Some((lab, _)) = pool(test, out.path(), &["--cache-mb", "0"], "12000") else {
        return;
    };
    let status_file = out.path().join("status.jsonl");
    wait_head(
        &lab,
        &status_file,
        "a slice of gridtest-1",
        |e| matches!(e, StatusEvent::SliceDone { node, .. } if node == "gridtest-1"),
    );
    docker_ok(&["kill", &lab.containers[1]]);
    finish(&lab, out.path());
    let summary = gridtest_tests::finished_sweep(&status_file);
    assert!(
        summary.ledger.resumed_chains >= 1,
        "the killed worker's history went on after its last slice: {summary:?}"
    );
}
