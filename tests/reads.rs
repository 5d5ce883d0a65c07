//! What a sweep reads from its dataset: every sweep reports the bytes its processes read (the
//! count is per process, so each run here is a process of its own) against the dataset's.

use std::path::Path;
use std::process::Command;

use gridtest::data::DataReads;
use gridtest_tests::{copy_dir, example_binary, finished_sweep, w1_smoke};

/// Bytes of the Parquet files under `root`.
fn parquet_bytes(root: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            total += parquet_bytes(&path);
        } else if path.extension().is_some_and(|e| e == "parquet") {
            total += std::fs::metadata(&path).unwrap().len();
        }
    }
    total
}

/// Runs the W1 example on `data` into `out` with `args`; returns what its status file and
/// stdout say.
fn sweep(dir: &Path, out: &str, args: &[&str]) -> (DataReads, String) {
    let (summary, stdout) = sweep_summary(dir, out, args);
    (summary.reads, stdout)
}

/// [`sweep`], with everything its status file says of the finished sweep.
fn sweep_summary(dir: &Path, out: &str, args: &[&str]) -> (gridtest::status::SweepSummary, String) {
    let status = dir.join(format!("{out}.jsonl"));
    let o = Command::new(example_binary("sma_crossover"))
        .args(args)
        .args(["--no-progress", "--threads", "2", "--data"])
        .arg(dir.join("ticks"))
        .arg("--out")
        .arg(dir.join(out))
        .arg("--status-file")
        .arg(&status)
        .env("GRIDTEST_CACHE_DIR", dir.join("cache"))
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        finished_sweep(&status),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn a_sweep_reports_the_bytes_it_read_against_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&w1_smoke().0, &dir.path().join("ticks"));
    let dataset = parquet_bytes(&dir.path().join("ticks"));
    let (first, stdout) = sweep(dir.path(), "first", &[]);
    assert_eq!(first.dataset_bytes, dataset);
    // The first run hashes every file for its content tag, then reads the columns.
    assert!(
        first.bytes_read >= 2 * dataset && first.bytes_read <= 4 * dataset,
        "{first:?}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("read "))
        .unwrap_or_else(|| panic!("no read line:\n{stdout}"));
    assert!(
        line.ends_with(&format!(
            ": {:.2}× its {:.1} KiB",
            first.ratio(),
            dataset as f64 / 1024.0
        )),
        "{line}"
    );
    let cost: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("first/cost.json")).unwrap())
            .unwrap();
    assert_eq!(cost["reads"]["bytes_read"], first.bytes_read);
    assert_eq!(cost["reads"]["dataset_bytes"], dataset);
    assert_eq!(cost["read_ratio"].as_f64().unwrap(), first.ratio());
    // Again, with the tags cached: the columns and footers only, about one dataset less.
    let (again, _) = sweep(dir.path(), "again", &[]);
    assert_eq!(again.dataset_bytes, dataset);
    assert!(
        again.bytes_read >= dataset && again.bytes_read + dataset * 9 / 10 <= first.bytes_read,
        "{again:?} after {first:?}"
    );
}

/// A history larger than the cache is streamed by every unit that needs it, so such a shard
/// gets as few units as keep the scorers busy, never cut at the tail: with no cache at all and
/// units of a few thousand evaluations (which would cut each shard into 239 units), the sweep
/// reads about what the one that holds both shards reads, and computes the same cells. A
/// speculative copy of a streaming unit (one running late at the tail) reads its shard again:
/// each is allowed one shard's bytes.
#[test]
fn a_history_larger_than_the_cache_is_read_about_once() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&w1_smoke().0, &dir.path().join("ticks"));
    let dataset = parquet_bytes(&dir.path().join("ticks"));
    let small_units = ["--unit-evals", "10000"];
    let (held, _) = sweep(dir.path(), "held", &small_units);
    let streamed_args = ["--unit-evals", "10000", "--cache-mb", "0"];
    let (summary, _) = sweep_summary(dir.path(), "streamed", &streamed_args);
    let streamed = summary.reads;
    assert_eq!(streamed.dataset_bytes, dataset);
    // `held` hashed every file first (one dataset more) and then read each shard once; the
    // two shards are alike, half the dataset each.
    let copies = summary.ledger.speculative;
    assert!(
        streamed.bytes_read
            <= held.bytes_read - dataset * 9 / 10 + dataset / 10 + copies * dataset / 2,
        "streamed {streamed:?} with {copies} speculative copies, held {held:?}"
    );
    let results = |out: &str| std::fs::read(dir.path().join(out).join("results.csv")).unwrap();
    assert_eq!(results("streamed"), results("held"), "the same cells");
}
