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

/// `gridtest <command> --head … --cookie …` with `extra` after.
fn manage(command: &str, port: u16, extra: &[&str]) -> Output {
    Command::new(gridtest_cli())
        .args([
            command,
            "--head",
            &format!("127.0.0.1:{port}"),
            "--cookie",
            "test-cookie",
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// The head's sweeps, from `gridtest list --json`: (id, state label, the state as JSON).
fn listed(port: u16) -> Vec<(String, String, serde_json::Value)> {
    let o = manage("list", port, &["--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let entries: Vec<serde_json::Value> =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    entries
        .into_iter()
        .map(|e| {
            (
                e["sweep_id"].as_str().unwrap().to_owned(),
                e["state"]["state"].as_str().unwrap().to_owned(),
                e["state"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_serving_heads_sweeps_are_listed_cancelled_and_followed_from_other_clients() {
    let (_serial, cluster) = start_serving_cluster(2);
    let port = cluster.port;
    let ids: Vec<String> = ["3", "4", "5"]
        .iter()
        .map(|fee| {
            let o = submit(port, &["--no-wait", "--commission-bps", fee]);
            assert!(o.status.success(), "{}", text(&o));
            sweep_id(&o)
        })
        .collect();
    let (a, b, c) = (&ids[0], &ids[1], &ids[2]);
    let sweeps = listed(port);
    let order: Vec<&str> = sweeps.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        order,
        [a.as_str(), b.as_str(), c.as_str()],
        "in the order submitted"
    );
    assert_eq!(sweeps[2].1, "queued", "{sweeps:?}");
    assert_eq!(sweeps[2].2["ahead"], 2, "{sweeps:?}");

    // The last queued one leaves the queue at once.
    let o = manage("cancel", port, &[c]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(listed(port)[2].1, "cancelled");
    // The running one stops cleanly; the next one then runs.
    let o = manage("cancel", port, &[a]);
    assert!(o.status.success(), "{}", text(&o));
    // Another client follows B to its end and gets its leaderboard.
    let followed = manage("follow", port, &[b]);
    assert!(followed.status.success(), "{}", text(&followed));
    assert!(
        text(&followed).contains(&format!("sweep {b} complete: 240 cells (0 failed)")),
        "{}",
        text(&followed)
    );
    let states: Vec<String> = listed(port).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(states, ["cancelled", "done", "cancelled"]);
    // Following a cancelled sweep, or cancelling an ended or unknown one, fails and says why.
    let o = manage("follow", port, &[a]);
    assert!(
        !o.status.success() && text(&o).contains("cancelled"),
        "{}",
        text(&o)
    );
    let o = manage("cancel", port, &[b]);
    assert!(
        !o.status.success() && text(&o).contains("ended already"),
        "{}",
        text(&o)
    );
    let unknown = "0".repeat(b.len());
    let o = manage("cancel", port, &[&unknown]);
    assert!(
        !o.status.success() && text(&o).contains("knows no sweep"),
        "{}",
        text(&o)
    );
    // Only B was computed to the end.
    let finished: Vec<String> = cluster
        .finished_sweeps()
        .into_iter()
        .filter(|s| s.failed == 0 && s.cells == 240)
        .filter_map(|s| s.sweep_id.map(|i| i.to_string()))
        .collect();
    assert!(
        finished.contains(b) && !finished.contains(c),
        "{finished:?}"
    );
}
