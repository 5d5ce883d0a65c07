//! S3 for real: a dataset read from an S3-compatible server, results and the ledger written
//! there, a sweep resumed from a ledger in S3, and a clear, bounded failure when the store is
//! unreachable. The server is the one `.ci/run` starts (`GRIDTEST_TEST_S3_ENDPOINT`), or a moto
//! server started here when `moto_server` is installed; without either the tests say they are
//! skipped.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use gridtest_tests::{compare_w1, example_binary, read_w1_csv, w1_smoke};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

const BUCKET: &str = "gridtest-test";

struct S3 {
    endpoint: String,
    _server: Option<Child>,
}

/// A port of 127.0.0.1 that nothing listens on while the returned socket lives: the socket is
/// bound but never listens, so no other process can take the port and a connection to it is
/// refused at once.
fn refused_port() -> (socket2::Socket, u16) {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = socket.local_addr().unwrap().as_socket().unwrap().port();
    (socket, port)
}

/// A port that was free a moment ago (the server started on it may still find it taken: see
/// [`start_moto`]).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Stops a server started by [`start_moto_on`]: its watcher stops the server on SIGTERM.
fn stop_watched(watcher: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &watcher.id().to_string()])
        .status();
    let _ = watcher.wait();
}

/// A raw HTTP request (moto accepts unsigned requests for bucket creation).
fn http(endpoint: &str, method: &str, path: &str) -> Option<String> {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Starts a moto server on a free port (enforcing credentials when `auth`), waits for it. A port
/// found free can be taken before the server binds it: then the server exits (or another
/// server answers, which is not moto's answer), and the next attempt takes another port. The
/// server is watched by a shell that stops it when this test process is gone (statics holding
/// it are never dropped).
fn start_moto(auth: bool) -> Option<(String, Child)> {
    (0..5).find_map(|_| start_moto_on(free_port(), auth))
}

fn start_moto_on(port: u16, auth: bool) -> Option<(String, Child)> {
    let moto = std::env::var("GRIDTEST_MOTO").unwrap_or_else(|_| "moto_server".into());
    let script = format!(
        "{moto} -H 127.0.0.1 -p {port} >/dev/null 2>&1 & m=$!; \
         trap 'kill $m 2>/dev/null; wait $m; exit 0' TERM; \
         while kill -0 {parent} 2>/dev/null && kill -0 $m 2>/dev/null; do sleep 1; done; kill $m 2>/dev/null",
        parent = std::process::id()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if auth {
        command.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
    }
    let mut child = command.spawn().ok()?;
    let endpoint = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(answer) = http(&endpoint, "GET", "/") {
            // moto lists the buckets (or, enforcing credentials, refuses in S3's words).
            if answer.contains("ListAllMyBucketsResult") || answer.contains("<Error>") {
                return Some((endpoint, child));
            }
            stop_watched(&mut child);
            return None;
        }
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            stop_watched(&mut child);
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server() -> Option<&'static S3> {
    static S3_SERVER: OnceLock<Option<S3>> = OnceLock::new();
    S3_SERVER
        .get_or_init(|| {
            let s3 = match std::env::var("GRIDTEST_TEST_S3_ENDPOINT") {
                Ok(endpoint) => S3 {
                    endpoint,
                    _server: None,
                },
                Err(_) => {
                    let (endpoint, child) = start_moto(false)?;
                    S3 {
                        endpoint,
                        _server: Some(child),
                    }
                }
            };
            http(&s3.endpoint, "PUT", &format!("/{BUCKET}"))?;
            Some(s3)
        })
        .as_ref()
}

macro_rules! s3_or_skip {
    ($name:literal) => {
        match server() {
            Some(s3) => s3,
            None => {
                gridtest_tests::skip(
                    "s3",
                    $name,
                    "no S3 server (set GRIDTEST_TEST_S3_ENDPOINT, or install moto: pip install 'moto[server]'; .ci/run does both)",
                );
                return;
            }
        }
    };
}

fn store(s3: &S3) -> Arc<AmazonS3> {
    Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(&s3.endpoint)
            .with_allow_http(true)
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    gridtest_tests::runtime()
}

/// Uploads every file under `dir` to `prefix/…`.
fn upload(store: &AmazonS3, dir: &Path, prefix: &str) {
    let rt = runtime();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                let key = ObjectPath::parse(format!("{prefix}/{rel}")).unwrap();
                rt.block_on(store.put(&key, PutPayload::from(std::fs::read(&p).unwrap())))
                    .unwrap();
            }
        }
    }
}

fn list(store: &AmazonS3, prefix: &str) -> Vec<String> {
    let prefix = ObjectPath::parse(prefix).unwrap();
    let rt = runtime();
    let mut keys: Vec<String> = rt
        .block_on(store.list(Some(&prefix)).try_collect::<Vec<_>>())
        .unwrap()
        .into_iter()
        .map(|m| m.location.to_string())
        .collect();
    keys.sort();
    keys
}

/// Cells recorded in every ledger segment under `prefix` (one JSON line each).
fn ledger_cells(store: &AmazonS3, prefix: &str) -> usize {
    let rt = runtime();
    list(store, prefix)
        .iter()
        .filter(|key| key.contains("/ledger/"))
        .map(|key| {
            let bytes = rt
                .block_on(async {
                    store
                        .get(&ObjectPath::parse(key).unwrap())
                        .await?
                        .bytes()
                        .await
                })
                .unwrap();
            bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count()
        })
        .sum()
}

fn with_aws_env<'a>(cmd: &'a mut Command, endpoint: &str) -> &'a mut Command {
    cmd.env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("RUST_LOG", "warn")
}

fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ rand_u64()
    )
}

fn rand_u64() -> u128 {
    u128::from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos(),
    )
}

#[test]
fn a_sweep_reads_its_dataset_from_s3_and_persists_everything_there() {
    let s3 = s3_or_skip!("a_sweep_reads_its_dataset_from_s3_and_persists_everything_there");
    let store = store(s3);
    let prefix = unique("read");
    let (smoke, reference) = w1_smoke();
    upload(&store, &smoke, &format!("{prefix}/smoke"));
    // A corrupt third symbol: never opened when the sweep asks for S000 and S001 only.
    runtime()
        .block_on(
            store.put(
                &ObjectPath::parse(format!(
                    "{prefix}/smoke/symbol=S002/date=2024-01-02/part-0.parquet"
                ))
                .unwrap(),
                PutPayload::from_static(b"not parquet"),
            ),
        )
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let status_file = out.path().join("status.jsonl");
    let run = || {
        with_aws_env(
            &mut Command::new(example_binary("sma_crossover")),
            &s3.endpoint,
        )
        .arg("--status-file")
        .arg(&status_file)
        .args(["--data", &format!("s3://{BUCKET}/{prefix}/smoke")])
        .args(["--results", &format!("s3://{BUCKET}/{prefix}/results")])
        .args([
            "--symbols",
            "S000,S001",
            "--no-progress",
            "--threads",
            "2",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap()
    };
    let first = run();
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        first.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    compare_w1(
        &read_w1_csv(&out.path().join("results.csv")),
        &read_w1_csv(&reference),
    )
    .unwrap();

    let keys = list(&store, &format!("{prefix}/results"));
    let sweep_dir = keys
        .iter()
        .find_map(|k| k.strip_suffix("/spec.json"))
        .unwrap_or_else(|| panic!("no spec.json in {keys:?}"))
        .to_owned();
    for file in ["results.parquet", "results.csv", "leaderboard.csv"] {
        assert!(
            keys.contains(&format!("{sweep_dir}/{file}")),
            "{file} missing from {keys:?}"
        );
    }
    assert!(
        keys.iter()
            .any(|k| k.starts_with(&format!("{sweep_dir}/ledger/"))),
        "{keys:?}"
    );
    let spec: serde_json::Value = serde_json::from_slice(
        &runtime()
            .block_on(async {
                store
                    .get(&ObjectPath::parse(format!("{sweep_dir}/spec.json")).unwrap())
                    .await?
                    .bytes()
                    .await
            })
            .unwrap(),
    )
    .unwrap();
    let manifest = runtime()
        .block_on(async {
            store
                .get(&ObjectPath::parse(format!("{sweep_dir}/manifest.jsonl")).unwrap())
                .await?
                .bytes()
                .await
        })
        .unwrap();
    let manifest =
        gridtest::persist::FileManifest::parse(&String::from_utf8_lossy(&manifest)).unwrap();
    assert_eq!(manifest.len(), 6, "every file read, nothing of S002");
    assert!(
        manifest
            .iter()
            .all(|f| f.e_tag.as_deref().is_some_and(|t| !t.is_empty()) && f.size > 0)
    );
    let files: u64 = spec["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["files"].as_u64().unwrap())
        .sum();
    assert_eq!(files, 6, "the spec counts each shard's files");
    assert_eq!(spec["strategy"], "sma_crossover");
    assert!(
        spec["strategy_crate"]
            .as_str()
            .unwrap()
            .starts_with("gridtest-examples ")
    );

    // The same sweep again is recognised: nothing is recomputed.
    let second = run();
    let text = String::from_utf8_lossy(&second.stdout).to_string()
        + &String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{text}");
    let summary = gridtest_tests::finished_sweep(&status_file);
    assert_eq!(
        (summary.computed, summary.resumed),
        (0, 1910),
        "{summary:?}"
    );
}

#[test]
fn an_unreachable_store_fails_clearly_after_bounded_retries() {
    let started = Instant::now();
    let (_closed, port) = refused_port();
    let out = with_aws_env(
        &mut Command::new(example_binary("sma_crossover")),
        &format!("http://127.0.0.1:{port}"),
    )
    .env("GRIDTEST_STORE_RETRIES", "2")
    .env("GRIDTEST_STORE_RETRY_S", "5")
    .args(["--data", "s3://nowhere-bucket/ticks", "--no-progress"])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot access `s3://nowhere-bucket/ticks"),
        "{stderr}"
    );
    assert!(stderr.contains("after 2 retries"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_sweep_resumes_from_its_ledger_in_s3() {
    let s3 = s3_or_skip!("a_sweep_resumes_from_its_ledger_in_s3");
    let prefix = unique("resume");
    let out = tempfile::tempdir().unwrap();
    let status_dir = tempfile::tempdir().unwrap();
    let status_file = status_dir.path().join("status.jsonl");
    let command = || {
        let mut c = Command::new(crate::cluster::BIN);
        with_aws_env(&mut c, &s3.endpoint)
            .arg("--status-file")
            .arg(&status_file)
            .env("GRIDTEST_TEST_SPIN", "4000")
            .env("RUST_LOG", "info")
            .args(["--data", &crate::cluster::dataset().display().to_string()])
            .args(["--results", &format!("s3://{BUCKET}/{prefix}/results")])
            .args([
                "--threads",
                "2",
                "--no-progress",
                "--progress-ms",
                "200",
                "--unit-evals",
                "40000",
                "--out",
            ])
            .arg(out.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    // First run: killed once a good part of the cells are in the ledger, read from the store
    // itself (progress lines run ahead of the ledger, which is flushed periodically).
    let store = store(s3);
    let mut first = command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut killed = false;
    while Instant::now() < deadline && first.try_wait().unwrap().is_none() {
        if ledger_cells(&store, &format!("{prefix}/results/sweeps")) >= 100 {
            first.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = first.wait();
    assert!(killed, "the first run never got far enough");
    let second = command().output().unwrap();
    let text = String::from_utf8_lossy(&second.stdout).to_string()
        + &String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{text}");
    let summary = gridtest_tests::finished_sweep(&status_file);
    assert!(summary.resumed >= 100, "{summary:?}\n{text}");
    assert_eq!(summary.computed + summary.resumed, 240, "{summary:?}");
}

/// A second server that enforces authentication (moto with `INITIAL_NO_AUTH_ACTION_COUNT=0`).
fn auth_server() -> Option<&'static str> {
    static AUTH: OnceLock<Option<(String, Option<Child>)>> = OnceLock::new();
    AUTH.get_or_init(|| match std::env::var("GRIDTEST_TEST_S3_AUTH_ENDPOINT") {
        Ok(endpoint) => Some((endpoint, None)),
        Err(_) => start_moto(true).map(|(e, c)| (e, Some(c))),
    })
    .as_ref()
    .map(|(e, _)| e.as_str())
}

#[test]
fn refused_credentials_fail_clearly() {
    let Some(endpoint) = auth_server() else {
        gridtest_tests::skip(
            "s3",
            "refused_credentials_fail_clearly",
            "no authenticating S3 server (set GRIDTEST_TEST_S3_AUTH_ENDPOINT or install moto)",
        );
        return;
    };
    let out = with_aws_env(&mut Command::new(example_binary("sma_crossover")), endpoint)
        .env("AWS_ACCESS_KEY_ID", "not-a-key")
        .args(["--data", "s3://gridtest-test/ticks", "--no-progress"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot access `s3://gridtest-test/ticks"),
        "{stderr}"
    );
    assert!(stderr.contains("403 Forbidden"), "{stderr}");
}

#[test]
fn a_results_store_lost_mid_sweep_costs_no_computed_cell() {
    let Some((endpoint, mut moto)) = start_moto(false) else {
        gridtest_tests::skip(
            "moto",
            "a_results_store_lost_mid_sweep_costs_no_computed_cell",
            "moto is not installed",
        );
        return;
    };
    http(&endpoint, "PUT", &format!("/{BUCKET}")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let status_dir = tempfile::tempdir().unwrap();
    let status_file = status_dir.path().join("status.jsonl");
    let mut sweep = with_aws_env(&mut Command::new(crate::cluster::BIN), &endpoint)
        .env("GRIDTEST_TEST_SPIN", "4000")
        .env("RUST_LOG", "info")
        .env("GRIDTEST_STORE_RETRIES", "1")
        .env("GRIDTEST_STORE_RETRY_S", "2")
        .arg("--status-file")
        .arg(&status_file)
        .args(["--data", &crate::cluster::dataset().display().to_string()])
        .args(["--results", &format!("s3://{BUCKET}/lost/results")])
        .args([
            "--threads",
            "2",
            "--no-progress",
            "--progress-ms",
            "200",
            "--unit-evals",
            "40000",
            "--out",
        ])
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = sweep.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        let _ = std::io::BufReader::new(stderr).read_to_string(&mut log);
        log
    });
    // The store goes away mid-sweep, once the progress events say 60 cells are done: its
    // watcher (by pid) stops the server and waits for it.
    let mut killed = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !killed && Instant::now() < deadline && sweep.try_wait().unwrap().is_none() {
        let done = gridtest::status::read(&status_file)
            .unwrap_or_default()
            .iter()
            .filter_map(|r| match r.event {
                gridtest::status::StatusEvent::Progress { done, .. } => Some(done),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        if done >= 60 {
            stop_watched(&mut moto);
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = sweep.wait().unwrap();
    let log = log.join().unwrap();
    assert!(killed, "the store was never taken away:\n{log}");
    // The sweep finishes and writes everything locally, then says that the results root did
    // not record it: the documented exit status, not success.
    assert_eq!(
        status.code(),
        Some(i32::from(gridtest::exit::NOT_PERSISTED)),
        "{log}"
    );
    let summary = gridtest_tests::finished_sweep(&status_file);
    assert_eq!((summary.cells, summary.failed), (240, 0), "{summary:?}");
    assert!(summary.persist_failure.is_some(), "{summary:?}\n{log}");
    let local = std::fs::read_to_string(out.path().join("results.csv")).unwrap();
    assert!(
        local == crate::cluster::expected_results(),
        "every computed cell is in the local output"
    );
}
