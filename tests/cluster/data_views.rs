//! Nodes that see other data than the sweep recorded: a worker whose mount holds another copy
//! of the dataset at the same path, and one whose mount is empty, each in a mount namespace of
//! its own (`unshare`), so that the same path shows each process other files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gridtest::status::StatusEvent;

use super::{BIN, COOKIE, Cluster, Proc, SPIN, dataset, serial};

/// Whether this machine lets a process see a directory of its own at a path (an unprivileged
/// user namespace with a mount namespace).
fn mount_namespaces() -> bool {
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// A copy of the cluster dataset in which the first day's file of each of the first `changed`
/// symbols is replaced by the next symbol's file of that day (valid Parquet, other bytes);
/// returns the copy and, per changed symbol (its directory name), the replaced file's URL as
/// the dataset's path names it.
fn other_copy(root: &Path, changed: usize) -> (PathBuf, BTreeMap<String, String>) {
    let copy = root.join("other-copy");
    gridtest_tests::copy_dir(dataset(), &copy);
    let sorted = |dir: &Path| {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        entries.sort();
        entries
    };
    let symbols = sorted(dataset());
    let first_day = |symbol: &Path| sorted(symbol)[0].join("part-0.parquet");
    let mut urls = BTreeMap::new();
    for (i, symbol) in symbols.iter().enumerate().take(changed) {
        let donor = first_day(&symbols[(i + 1) % symbols.len()]);
        let relative = first_day(symbol)
            .strip_prefix(dataset())
            .unwrap()
            .to_path_buf();
        std::fs::copy(&donor, copy.join(&relative)).unwrap();
        let name = symbol.file_name().unwrap().to_string_lossy().into_owned();
        let url = url::Url::from_file_path(dataset().join(&relative)).unwrap();
        urls.insert(name, url.to_string());
    }
    (copy, urls)
}

impl Cluster {
    /// A worker that sees `view` at the dataset's path (its own mount namespace).
    fn start_worker_seeing(&mut self, name: &str, view: &Path) {
        let mut args: Vec<String> = [
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            r#"mount --bind "$1" "$2" && shift 2 && exec "$@""#,
            "sh",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.push(view.display().to_string());
        args.push(dataset().display().to_string());
        args.push(BIN.to_owned());
        args.extend(self.worker_args(name, COOKIE, &[]));
        self.workers
            .push(Proc::spawn_from("unshare", name, &args, SPIN));
    }
}

#[test]
fn workers_that_see_other_data_or_none_are_barred_from_it_and_the_sweep_is_exact() {
    if !mount_namespaces() {
        gridtest_tests::skip(
            "mountns",
            "workers_that_see_other_data_or_none_are_barred_from_it_and_the_sweep_is_exact",
            "`unshare --user --map-root-user --mount` is not allowed here",
        );
        return;
    }
    let _serial = serial();
    // No work until all three have asked: each of them gets units of every shard.
    let mut c = Cluster::with_head(&["--wait-for-nodes", "3"]);
    // Every symbol differs in w-other's copy: whichever units it is given, it finds it.
    let (other, changed) = other_copy(c.dir.path(), 3);
    let empty = c.dir.path().join("empty-mount");
    std::fs::create_dir_all(&empty).unwrap();
    c.start_worker("w-good", COOKIE, &[]);
    c.start_worker_seeing("w-other", &other);
    c.start_worker_seeing("w-blind", &empty);
    // Every cell, equal to the in-process run's: none came from the other copy.
    let summary = c.finish();
    let events = c.head().events();
    let mismatches: Vec<(String, String, String)> = events
        .iter()
        .filter_map(|e| match e {
            StatusEvent::NodeDataMismatch {
                node,
                shard,
                reason,
                ..
            } => Some((node.clone(), shard.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    // w-other: each shard it was given names that shard's file that differs.
    let other: Vec<_> = mismatches.iter().filter(|m| m.0 == "w-other").collect();
    assert!(!other.is_empty(), "{mismatches:?}");
    for (_, shard, reason) in &other {
        let symbol = format!("symbol={}", shard.split(':').next().unwrap());
        let file = &changed[&symbol];
        assert!(
            reason.starts_with(&format!("{file}: ")) && reason.contains("in the manifest"),
            "{shard}: {reason}"
        );
    }
    // w-blind sees no file at all: barred from every shard it was given.
    let blind: Vec<_> = mismatches.iter().filter(|m| m.0 == "w-blind").collect();
    assert!(!blind.is_empty(), "{mismatches:?}");
    for (_, shard, reason) in &blind {
        assert!(reason.contains("has no Parquet files"), "{shard}: {reason}");
    }
    assert!(mismatches.iter().all(|m| m.0 != "w-good"), "{mismatches:?}");
    for node in ["w-other", "w-blind"] {
        assert_eq!(summary.nodes.get(node).map_or(0, |n| n.cells), 0, "{node}");
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StatusEvent::ShardUnreadable { .. })),
        "{events:?}"
    );
}

#[test]
fn a_shard_no_node_sees_as_recorded_fails_naming_the_node_and_the_file() {
    if !mount_namespaces() {
        gridtest_tests::skip(
            "mountns",
            "a_shard_no_node_sees_as_recorded_fails_naming_the_node_and_the_file",
            "`unshare --user --map-root-user --mount` is not allowed here",
        );
        return;
    }
    let _serial = serial();
    let mut c = Cluster::with_head(&[]);
    // One symbol differs: the only worker reads the others and finds it.
    let (other, changed) = other_copy(c.dir.path(), 1);
    let changed = changed.values().next().unwrap().clone();
    c.start_worker_seeing("w-other", &other);
    let head = c.head.as_mut().unwrap();
    let status = head.wait_exit(Duration::from_secs(180));
    assert_eq!(
        status.code(),
        Some(3),
        "failed cells: exit 3\n{}",
        head.text()
    );
    let summary = head.summary();
    assert_eq!(summary.failed, super::CELLS / 3, "{summary:?}");
    let events = head.events();
    let unreadable: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StatusEvent::ShardUnreadable { reason, cells, .. } => Some((reason.clone(), *cells)),
            _ => None,
        })
        .collect();
    assert_eq!(unreadable.len(), 1, "{events:?}");
    let (reason, cells) = &unreadable[0];
    assert_eq!(*cells, super::CELLS / 3);
    assert!(
        reason.contains(&format!("node w-other: {changed}: ")),
        "{reason}"
    );
    // The failed cells say so in the results, each of them.
    let results = std::fs::read_to_string(c.dir.path().join("out/results.csv")).unwrap();
    let failed = results
        .lines()
        .filter(|l| l.contains("no node sees the files the sweep recorded"))
        .count();
    assert_eq!(failed, super::CELLS / 3, "{results}");
}
