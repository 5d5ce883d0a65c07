//! Submission to a running cluster: a head serving submissions and two workers are started
//! once; a separate client process submits two sweeps one after the other (and one of them
//! again); both complete, are persisted, and the first equals the in-process run.

use std::process::{Command, Output};
use std::time::Duration;

use gridtest_tests::gridtest_cli;

use crate::cluster::{BIN, dataset, expected_results, start_serving_cluster};

fn submit(port: u16, extra: &[&str]) -> Output {
    Command::new(gridtest_cli())
        .args([
            "submit",
            "--head",
            &format!("127.0.0.1:{port}"),
            "--cookie",
            "test-cookie",
        ])
        .args([
            "--strategy",
            "paced_sma",
            "--data",
            &dataset().display().to_string(),
        ])
        .args([
            "--axis",
            "fast=5..50:5",
            "--axis",
            "slow=60..200:20",
            "--constrain",
            "fast < slow",
        ])
        .args(["--top", "3"])
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

fn sweep_id(o: &Output) -> String {
    text(o)
        .lines()
        .find_map(|l| {
            l.strip_prefix("submitted sweep ")?
                .split(':')
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no sweep id:\n{}", text(o)))
}

#[test]
fn sweeps_submitted_to_a_running_cluster_complete_and_are_persisted() {
    let (_serial, cluster) = start_serving_cluster(2);
    let _ = BIN;
    let first = submit(cluster.port, &[]);
    assert!(first.status.success(), "{}", text(&first));
    let a = sweep_id(&first);
    assert!(
        text(&first).contains(&format!("sweep {a} complete: 240 cells (0 failed)")),
        "{}",
        text(&first)
    );

    let second = submit(cluster.port, &["--commission-bps", "2.5"]);
    assert!(second.status.success(), "{}", text(&second));
    let b = sweep_id(&second);
    assert_ne!(a, b, "a different sweep");

    // The first sweep again: recognised, not run twice.
    let again = submit(cluster.port, &[]);
    assert_eq!(sweep_id(&again), a);
    assert!(text(&again).contains("Done {"), "{}", text(&again));

    // The head ran each sweep once, computing every cell.
    let finished: Vec<(String, usize, usize, usize)> = cluster
        .finished_sweeps()
        .into_iter()
        .map(|s| {
            let id = s.sweep_id.map(|i| i.to_string()).unwrap_or_default();
            (id, s.cells, s.failed, s.computed)
        })
        .collect();
    assert_eq!(
        finished,
        vec![(a.clone(), 240, 0, 240), (b.clone(), 240, 0, 240)],
        "{finished:?}"
    );
    for id in [&a, &b] {
        let dir = cluster.dir.path().join("results/sweeps").join(id);
        for file in [
            "spec.json",
            "results.parquet",
            "results.csv",
            "leaderboard.csv",
        ] {
            assert!(dir.join(file).exists(), "{file} of {id} not persisted");
        }
    }
    let persisted = std::fs::read_to_string(
        cluster
            .dir
            .path()
            .join("results/sweeps")
            .join(&a)
            .join("results.csv"),
    )
    .unwrap();
    assert!(
        persisted == expected_results(),
        "the submitted sweep differs from the in-process run"
    );
    let _ = Duration::ZERO;
}
