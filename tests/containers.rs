//! The cluster as containers: an image built on this machine from the cluster tests' binary
//! (`deploy/local-image.sh`: `FROM scratch`, no registry), a head and three workers named like
//! StatefulSet pods on a private Docker network, finding each other by DNS name with
//! `--role auto`; a worker `docker kill`ed mid-sweep loses nothing, and the results equal the
//! in-process run's. Needs a Docker engine (`docker` in `GRIDTEST_REQUIRE` makes it required).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use gridtest::status::{self, StatusEvent};

use crate::cluster::{BIN, dataset, expected_results};

const COOKIE: &str = "container-cookie";
const CELLS: usize = 3 * 80;

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

/// Containers and a network removed when the test ends, however it ends.
struct Lab {
    prefix: String,
    containers: Vec<String>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = docker(&["rm", "-f", c]);
        }
        let _ = docker(&["network", "rm", &self.prefix]);
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
            "-e",
            "GRIDTEST_TEST_SPIN=4000",
        ];
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

#[test]
fn a_containerised_pool_survives_a_killed_worker_and_equals_the_in_process_run() {
    let test = "containers::a_containerised_pool_survives_a_killed_worker";
    let required = std::env::var("GRIDTEST_REQUIRE").unwrap_or_default();
    if !docker(&["info"]).status.success() {
        gridtest_tests::skip_unless_required(&required, "docker", test, "no Docker engine")
            .unwrap();
        return;
    }
    let _serial = crate::cluster::serial();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local-image.sh");
    let image = format!("gridtest-test:{}", std::process::id());
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
        prefix: format!("gridtest-test-{}", std::process::id()),
        containers: Vec::new(),
    };
    docker_ok(&["network", "create", &lab.prefix]);
    let out = tempfile::tempdir().unwrap();
    lab.start(
        &image,
        0,
        out.path(),
        &[
            "--threads",
            "0",
            "--out",
            "/out/results",
            "--status-file",
            "/out/status.jsonl",
        ],
    );
    for ordinal in 1..=3 {
        lab.start(&image, ordinal, out.path(), &["--threads", "1"]);
    }
    // Wait for a fifth of the cells, then kill a worker as an eviction would.
    let status_file = out.path().join("status.jsonl");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let done = status::read(&status_file)
            .unwrap_or_default()
            .iter()
            .filter_map(|r| match r.event {
                StatusEvent::Progress { done, .. } => Some(done),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        if done >= CELLS / 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pool made no progress; head:\n{}",
            docker_ok(&["logs", &lab.containers[0]])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    docker_ok(&["kill", &lab.containers[1]]);
    let code = docker_ok(&["wait", &lab.containers[0]]);
    let logs = docker(&["logs", &lab.containers[0]]);
    assert_eq!(
        code,
        "0",
        "head:\n{}",
        String::from_utf8_lossy(&logs.stderr)
    );
    let records = status::read(&status_file).unwrap();
    let lost = records
        .iter()
        .any(|r| matches!(&r.event, StatusEvent::NodeLost { node, .. } if node == "gridtest-1"));
    assert!(lost, "the killed worker was noticed: {records:?}");
    let got = std::fs::read_to_string(out.path().join("results/results.csv")).unwrap();
    assert!(
        got == expected_results(),
        "the pool's results differ from the in-process run"
    );
    let _ = docker(&["rmi", "-f", &image]);
}
