//! Histories larger than every node's cache, read slice after slice: a worker killed in the
//! middle of a history loses at most the slice it was on, the unit resuming elsewhere from the
//! lanes' state the head kept, and the results still equal the in-process run's.

use std::path::Path;
use std::time::{Duration, Instant};

use gridtest::status::StatusEvent;

use super::{COOKIE, Cluster, requeued_on_loss, serial};

/// Busy work per event: a slice (a day of a unit's sets) takes about a second.
const SLOW: &str = "12000";

#[test]
fn a_worker_killed_mid_history_loses_at_most_a_slice_and_the_sweep_is_exact() {
    let _serial = serial();
    // A cache of nothing: no history fits, each day is a slice of its own.
    let no_cache = ["--cache-mb", "0"];
    let mut c = Cluster::with_head(&no_cache);
    for w in ["w1", "w2", "w3"] {
        c.start_worker_with_spin(w, COOKIE, &no_cache, SLOW);
    }
    // w1 is killed on the slice after one whose state the head kept.
    let kept = c.head().wait_event(
        "a slice of w1",
        Duration::from_secs(120),
        |e| matches!(e, StatusEvent::SliceDone { node, .. } if node == "w1"),
    );
    c.worker("w1").signal("KILL");
    let StatusEvent::SliceDone {
        slice,
        slices,
        checkpoint_bytes,
        ..
    } = kept
    else {
        unreachable!()
    };
    assert_eq!((slice, slices), (0, 2), "two days, two slices: {kept:?}");
    assert!(checkpoint_bytes > 0);
    let summary = c.finish();
    let events = c.head().events();
    assert!(requeued_on_loss(&events, "w1") >= 1, "{events:?}");
    // The unit w1 held went on from the slice it had finished, not from the start.
    assert!(summary.ledger.resumed_chains >= 1, "{summary:?}");
    assert!(summary.ledger.slices >= 1, "{summary:?}");
    // The head's progress counted the slices, every one passed at the end.
    let slices = events.iter().rev().find_map(|e| match e {
        StatusEvent::Progress { slices, .. } => *slices,
        _ => None,
    });
    assert!(
        slices.is_some_and(|(done, total)| done == total && total > 0),
        "{slices:?}"
    );
}

/// Checkpoints of histories saved under the results root `results`, as files.
fn saved_chains(results: &Path) -> usize {
    let Ok(sweeps) = std::fs::read_dir(results.join("sweeps")) else {
        return 0;
    };
    sweeps
        .filter_map(Result::ok)
        .filter_map(|sweep| std::fs::read_dir(sweep.path().join("chains")).ok())
        .map(|chains| chains.filter_map(Result::ok).count())
        .sum()
}

#[test]
fn a_cluster_restarted_mid_history_resumes_each_history_after_its_last_slice_saved() {
    let _serial = serial();
    let no_cache = ["--cache-mb", "0"];
    let mut c = Cluster::with_head(&no_cache);
    for w in ["w1", "w2", "w3"] {
        c.start_worker_with_spin(w, COOKIE, &no_cache, SLOW);
    }
    // Once a history's checkpoint is saved under the results root, every process goes down at
    // once (SIGKILL): nothing survives but what the results root holds.
    let results = c.dir.path().join("results");
    let deadline = Instant::now() + Duration::from_secs(120);
    while saved_chains(&results) == 0 {
        assert!(Instant::now() < deadline, "no checkpoint was saved");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.head().signal("KILL");
    for w in ["w1", "w2", "w3"] {
        c.worker(w).signal("KILL");
    }
    let killed = c.head.as_mut().unwrap().wait_exit(Duration::from_secs(10));
    assert!(!killed.success());
    c.start_head();
    for w in ["w1", "w2", "w3"] {
        c.start_worker_with_spin(w, COOKIE, &no_cache, SLOW);
    }
    let summary = c.finish();
    assert!(summary.ledger.resumed_chains >= 1, "{summary:?}");
}
