//! The dataset layout is checked strictly: a layout mistake is an error naming the path (never a
//! sweep on part of a symbol's history), an empty file fails its shard and stays in the
//! manifest, objects that are not data are recorded as ignored, and a file's identity is its
//! content.

use std::path::PathBuf;

use gridtest::data::{DataError, Shard, ShardReader};
use gridtest::persist::SweepSpec;
use gridtest::sweep::FailureKind;
use gridtest::{DataKind, Error, RunOptions, Sweep, SweepResults};
use gridtest_examples::SmaCrossover;
use gridtest_tests::{copy_dir, quiet, run_with, runtime, w1_grid, w1_smoke};

/// A copy of the W1 smoke dataset (2 symbols × 3 days) to break, and a results root.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&w1_smoke().0, &dir.path().join("ticks"));
        Self { dir }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("ticks")
    }

    fn day(&self, symbol: &str, date: &str) -> PathBuf {
        self.data().join(format!("symbol={symbol}/date={date}"))
    }

    fn sweep(&self) -> Sweep {
        Sweep::of::<SmaCrossover>()
            .grid(w1_grid())
            .data(self.data().display().to_string())
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            results: Some(
                gridtest::storage::Location::parse(
                    &self.dir.path().join("results").display().to_string(),
                )
                .unwrap(),
            ),
            ..quiet()
        }
    }

    fn run(&self) -> gridtest::Result<SweepResults> {
        run_with(&self.sweep(), &self.options())
    }

    fn spec(&self, results: &SweepResults) -> SweepSpec {
        let id = &results.run_info().unwrap().sweep_id;
        let path = self
            .dir
            .path()
            .join(format!("results/sweeps/{id}/spec.json"));
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// Every file the sweep's listing saw, from its `manifest.jsonl`.
    fn manifest(&self, results: &SweepResults) -> Vec<gridtest::data::ListedFile> {
        let id = &results.run_info().unwrap().sweep_id;
        let path = self.dir.path().join(format!(
            "results/sweeps/{id}/{}",
            gridtest::persist::FileManifest::NAME
        ));
        gridtest::persist::FileManifest::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

/// The layout problems of a failed sweep, as `(path relative to the data, reason)`.
fn layout_problems(fixture: &Fixture, result: gridtest::Result<SweepResults>) -> Vec<String> {
    match result {
        Err(Error::Data(DataError::Layout { problems, .. })) => problems
            .iter()
            .map(|p| {
                let root = format!("file://{}/", fixture.data().display());
                format!("{}: {}", p.url.trim_start_matches(&root), p.reason)
            })
            .collect(),
        Err(other) => panic!("expected a layout error, got: {other}"),
        Ok(r) => panic!(
            "a sweep on a broken layout completed ({} cells, {} failed)",
            r.recorded(),
            r.failed()
        ),
    }
}

#[test]
fn an_empty_parquet_file_fails_its_shard_and_stays_in_the_manifest() {
    let f = Fixture::new();
    let empty = f.day("S001", "2024-01-03").join("part-0.parquet");
    std::fs::write(&empty, b"").unwrap();
    let results = f.run().unwrap();
    assert_eq!(results.recorded(), 1910);
    let failures: Vec<_> = results.failures().collect();
    assert_eq!(
        failures.len(),
        955,
        "every S001 cell fails, none computes on part of it"
    );
    for (_, shard, failure) in &failures {
        assert_eq!(shard.symbol(), "S001");
        assert_eq!(failure.kind, FailureKind::Data);
        assert!(
            failure.message.contains(&empty.display().to_string())
                && failure.message.contains("empty (0 bytes)"),
            "{}",
            failure.message
        );
    }
    let ok = results
        .rows()
        .unwrap()
        .into_iter()
        .filter(|(_, s, c)| s.symbol() == "S000" && c.is_ok());
    assert_eq!(ok.count(), 955);
    // The manifest lists every file the listing saw, the empty one too, and the spec counts
    // them per shard.
    let manifest = f.manifest(&results);
    assert_eq!(manifest.len(), 6);
    let spec = f.spec(&results);
    assert_eq!(spec.data.iter().map(|s| s.files).sum::<u64>(), 6);
    assert_eq!(
        spec.dataset_bytes(),
        manifest.iter().map(|m| m.size).sum::<u64>()
    );
    let recorded = manifest
        .iter()
        .find(|m| {
            m.url
                .ends_with("symbol=S001/date=2024-01-03/part-0.parquet")
        })
        .expect("the empty file is in the manifest");
    assert_eq!(recorded.size, 0);
}

#[test]
fn layout_mistakes_are_errors_naming_the_path() {
    type Break = fn(&Fixture);
    let cases: [(&str, Break, &str); 7] = [
        (
            "unpadded date",
            |f| std::fs::rename(f.day("S001", "2024-01-03"), f.day("S001", "2024-1-3")).unwrap(),
            "symbol=S001/date=2024-1-3/part-0.parquet: partition value `date=2024-1-3` is not a valid zero-padded YYYY-MM-DD date",
        ),
        (
            "not a date",
            |f| std::fs::rename(f.day("S001", "2024-01-03"), f.day("S001", "notadate")).unwrap(),
            "symbol=S001/date=notadate/part-0.parquet: partition value `date=notadate`",
        ),
        (
            "impossible date",
            |f| std::fs::rename(f.day("S001", "2024-01-03"), f.day("S001", "2024-13-45")).unwrap(),
            "symbol=S001/date=2024-13-45/part-0.parquet: partition value `date=2024-13-45`",
        ),
        (
            "no date level",
            |f| {
                let from = f.day("S001", "2024-01-03").join("part-0.parquet");
                std::fs::rename(from, f.data().join("symbol=S001/part-9.parquet")).unwrap();
            },
            "symbol=S001/part-9.parquet: a Parquet file directly under `symbol=…`, with no `date=` level",
        ),
        (
            ".pq",
            |f| {
                let day = f.day("S001", "2024-01-03");
                std::fs::rename(day.join("part-0.parquet"), day.join("part-0.pq")).unwrap();
            },
            "symbol=S001/date=2024-01-03/part-0.pq: `part-0.pq` is not read",
        ),
        (
            ".PARQUET",
            |f| {
                let day = f.day("S001", "2024-01-03");
                std::fs::rename(day.join("part-0.parquet"), day.join("part-0.PARQUET")).unwrap();
            },
            "symbol=S001/date=2024-01-03/part-0.PARQUET: `part-0.PARQUET` is not read",
        ),
        (
            "a directory that is no symbol partition",
            |f| copy_dir(&f.data().join("symbol=S001"), &f.data().join("S002")),
            "S002/: not a `symbol=…` partition",
        ),
    ];
    for (name, break_it, expected) in cases {
        let f = Fixture::new();
        break_it(&f);
        let problems = layout_problems(&f, f.run());
        assert!(
            problems.iter().any(|p| p.starts_with(expected)),
            "{name}: expected `{expected}…` among {problems:#?}"
        );
        // A worker reading the shard directly is refused the same way (S002 is not a symbol).
        if !name.starts_with("a directory") {
            let reader = ShardReader::try_new(&f.sweep_dataset()).unwrap();
            let shard = Shard::new(
                "S001",
                "2024-01-02".parse().unwrap(),
                "2024-01-04".parse().unwrap(),
            );
            let err = runtime().block_on(reader.load(&shard)).unwrap_err();
            assert!(matches!(err, DataError::Layout { .. }), "{name}: {err}");
        }
        // Nothing was computed: no ledger under the results root.
        assert!(!f.dir.path().join("results/sweeps").exists(), "{name}");
    }
}

impl Fixture {
    fn sweep_dataset(&self) -> gridtest::data::Dataset {
        gridtest::data::Dataset::try_new(&self.data().display().to_string(), DataKind::Ticks)
            .unwrap()
    }
}

#[test]
fn objects_that_are_not_data_are_ignored_and_recorded() {
    let f = Fixture::new();
    std::fs::write(f.day("S000", "2024-01-02").join("_SUCCESS"), b"").unwrap();
    std::fs::write(f.data().join("README.md"), b"ticks").unwrap();
    let results = f.run().unwrap();
    assert_eq!(results.failed(), 0);
    assert_eq!(results.recorded(), 1910);
    let spec = f.spec(&results);
    let ignored: Vec<&str> = spec
        .ignored
        .iter()
        .map(|i| i.url.rsplit("/ticks/").next().unwrap())
        .collect();
    assert_eq!(
        ignored,
        [
            "README.md",
            "manifest.json",
            "symbol=S000/date=2024-01-02/_SUCCESS"
        ]
    );
    // Ignored objects do not make another sweep: without them the id is the same.
    std::fs::remove_file(f.data().join("README.md")).unwrap();
    let again = f.run().unwrap();
    assert_eq!(
        again.run_info().unwrap().sweep_id,
        results.run_info().unwrap().sweep_id
    );
    assert_eq!(
        again.run_info().unwrap().computed,
        0,
        "resumed, not recomputed"
    );
}

#[test]
fn a_missing_dataset_says_it_does_not_exist() {
    let f = Fixture::new();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(w1_grid())
        .data(f.dir.path().join("nope").display().to_string());
    let err = run_with(&sweep, &quiet()).unwrap_err();
    assert!(
        matches!(err, Error::Data(DataError::NotFound { .. })),
        "{err}"
    );
    assert!(err.to_string().ends_with("it does not exist"), "{err}");
    // A file given as the dataset says what it is.
    let file = f.data().join("symbol=S000/date=2024-01-02/part-0.parquet");
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(w1_grid())
        .data(file.display().to_string());
    let err = run_with(&sweep, &quiet()).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("it is a file: a dataset is a directory of `symbol=…` partitions"),
        "{err}"
    );
}

#[test]
fn dates_beyond_the_data_say_which_dates_the_data_cover() {
    let f = Fixture::new();
    let sweep = f.sweep().dates(Some("2025-01-01".parse().unwrap()), None);
    let err = run_with(&sweep, &quiet()).unwrap_err();
    assert!(
        matches!(err, Error::Data(DataError::NoFiles { .. })),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("(the data of this symbol cover 2024-01-02..2024-01-04)"),
        "{err}"
    );
}

#[test]
fn a_file_is_identified_by_its_content_not_its_times() {
    let f = Fixture::new();
    let first = f.run().unwrap();
    // Rewrite every file with the same bytes under a new inode and mtime (a copy without -p).
    for symbol in ["S000", "S001"] {
        for date in ["2024-01-02", "2024-01-03", "2024-01-04"] {
            let file = f.day(symbol, date).join("part-0.parquet");
            let bytes = std::fs::read(&file).unwrap();
            let fresh = file.with_extension("tmp");
            std::fs::write(&fresh, &bytes).unwrap();
            std::fs::rename(&fresh, &file).unwrap();
        }
    }
    let again = f.run().unwrap();
    let (a, b) = (first.run_info().unwrap(), again.run_info().unwrap());
    assert_eq!(a.sweep_id, b.sweep_id, "same bytes, same sweep");
    assert_eq!(
        b.computed, 0,
        "the interrupted-or-finished sweep is resumed, not restarted"
    );
    let manifest = f.manifest(&again);
    assert!(
        manifest
            .iter()
            .all(|m| m.e_tag.as_deref().is_some_and(|t| t.starts_with("sha256:"))),
        "{manifest:?}"
    );
}

fn date(s: &str) -> chrono::NaiveDate {
    s.parse().unwrap()
}

#[test]
fn symbol_names_round_trip_whatever_their_characters() {
    let f = Fixture::new();
    let dataset = f.sweep_dataset();
    let rt = runtime();
    let reader = ShardReader::try_new(&dataset).unwrap();
    let shard = |symbol: &str| Shard::new(symbol, date("2024-01-02"), date("2024-01-04"));
    let rows = rt.block_on(reader.load(&shard("S001"))).unwrap().n_rows();
    // (directory name after `symbol=`, the symbol it names): unescaped names read as
    // themselves, Hive's escapes decode.
    let names = [
        ("^GSPC", "^GSPC"),
        ("Ü1", "Ü1"),
        ("|", "|"),
        ("%", "%"),
        ("%2F", "/"),
        ("#", "#"),
        ("*", "*"),
        ("?", "?"),
        ("\\", "\\"),
        ("{}", "{}"),
        ("[]", "[]"),
        ("~", "~"),
        ("\"", "\""),
        ("<>", "<>"),
        ("%5EGSPC", "^GSPC"),
        ("%C3%9C1", "Ü1"),
        ("ES=F", "ES=F"),
        ("RDS A", "RDS A"),
    ];
    let mut current = "S001".to_owned();
    for (raw, symbol) in names {
        let from = f.data().join(format!("symbol={current}"));
        std::fs::rename(from, f.data().join(format!("symbol={raw}"))).unwrap();
        current = raw.to_owned();
        let mut want = vec!["S000".to_owned(), symbol.to_owned()];
        want.sort();
        assert_eq!(rt.block_on(dataset.symbols()).unwrap(), want, "{raw}");
        let data = rt.block_on(reader.load(&shard(symbol))).unwrap();
        assert_eq!(data.n_rows(), rows, "symbol={raw}");
    }
}

#[test]
fn a_sweep_over_an_escaped_symbol_equals_the_reference() {
    let f = Fixture::new();
    std::fs::rename(
        f.data().join("symbol=S001"),
        f.data().join("symbol=%5EGSPC"),
    )
    .unwrap();
    let results = run_with(&f.sweep().symbols(["^GSPC"]), &f.options()).unwrap();
    assert_eq!((results.recorded(), results.failed()), (955, 0));
    let got: gridtest_tests::W1Table = gridtest_tests::w1_table(&results)
        .into_iter()
        .map(|((symbol, fast, slow), row)| {
            assert_eq!(symbol, "^GSPC");
            (("S001".to_owned(), fast, slow), row)
        })
        .collect();
    let reference: gridtest_tests::W1Table = gridtest_tests::read_w1_csv(&w1_smoke().1)
        .into_iter()
        .filter(|((symbol, ..), _)| symbol == "S001")
        .collect();
    gridtest_tests::compare_w1(&got, &reference).unwrap();
    // Two directories naming one symbol would be read as one: refused, naming both.
    std::fs::create_dir_all(f.data().join("symbol=^GSPC")).unwrap();
    copy_dir(
        &f.data().join("symbol=%5EGSPC"),
        &f.data().join("symbol=^GSPC"),
    );
    let problems = layout_problems(&f, f.run());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("symbol=^GSPC/: spells symbol `^GSPC` as `file://")
            && problems[0].ends_with("/symbol=%5EGSPC/` does: one symbol, one directory"),
        "{problems:#?}"
    );
}

#[test]
fn a_dangling_link_is_an_error_naming_it() {
    type Break = fn(&Fixture);
    let cases: [(&str, Break, &str); 3] = [
        (
            "a day's only file",
            |f| {
                let file = f.day("S001", "2024-01-03").join("part-0.parquet");
                std::fs::remove_file(&file).unwrap();
                std::os::unix::fs::symlink("/nonexistent/part-0.parquet", &file).unwrap();
            },
            "symbol=S001/date=2024-01-03/part-0.parquet: a symbolic link to `/nonexistent/part-0.parquet`, which does not exist",
        ),
        (
            "a date directory",
            |f| {
                std::fs::remove_dir_all(f.day("S001", "2024-01-03")).unwrap();
                std::os::unix::fs::symlink("/mnt/gone", f.day("S001", "2024-01-03")).unwrap();
            },
            "symbol=S001/date=2024-01-03: a symbolic link to `/mnt/gone`, which does not exist",
        ),
        (
            "a symbol directory",
            |f| {
                std::os::unix::fs::symlink("/mnt/gone", f.data().join("symbol=S002")).unwrap();
            },
            "symbol=S002: a symbolic link to `/mnt/gone`, which does not exist",
        ),
    ];
    for (name, break_it, expected) in cases {
        let f = Fixture::new();
        break_it(&f);
        let problems = layout_problems(&f, f.run());
        assert!(
            problems.iter().any(|p| p.starts_with(expected)),
            "{name}: expected `{expected}…` among {problems:#?}"
        );
        assert!(!f.dir.path().join("results/sweeps").exists(), "{name}");
    }
    // A worker reading the shard directly is refused the same way.
    let f = Fixture::new();
    std::fs::remove_dir_all(f.day("S001", "2024-01-03")).unwrap();
    std::os::unix::fs::symlink("/mnt/gone", f.day("S001", "2024-01-03")).unwrap();
    let reader = ShardReader::try_new(&f.sweep_dataset()).unwrap();
    let shard = Shard::new("S001", date("2024-01-02"), date("2024-01-04"));
    let err = runtime().block_on(reader.load(&shard)).unwrap_err();
    assert!(matches!(err, DataError::Layout { .. }), "{err}");
    // A hidden one (an editor's lock file) is ignored like any hidden object.
    let f = Fixture::new();
    std::os::unix::fs::symlink("user@host.123", f.day("S001", "2024-01-03").join(".#notes"))
        .unwrap();
    let results = f.run().unwrap();
    assert_eq!((results.recorded(), results.failed()), (1910, 0));
}

#[test]
fn hidden_objects_are_ignored_by_the_listing_and_the_scan_alike() {
    let f = Fixture::new();
    // Not Parquet at all: were it read, the shard would fail.
    std::fs::write(
        f.day("S001", "2024-01-03").join("_x.parquet"),
        b"not parquet",
    )
    .unwrap();
    let results = f.run().unwrap();
    assert_eq!((results.recorded(), results.failed()), (1910, 0));
    let got = gridtest_tests::w1_table(&results);
    let reference = gridtest_tests::read_w1_csv(&w1_smoke().1);
    gridtest_tests::compare_w1(&got, &reference).unwrap();
    // A partition hidden by its leading `_` would hide a day: an error, not a warning.
    let f = Fixture::new();
    std::fs::rename(
        f.day("S001", "2024-01-03"),
        f.data().join("symbol=S001/_date=2024-01-03"),
    )
    .unwrap();
    let problems = layout_problems(&f, f.run());
    assert!(
        problems.iter().any(|p| p.starts_with(
            "symbol=S001/_date=2024-01-03/part-0.parquet: `_date=2024-01-03` is a partition hidden by its leading `_`"
        )),
        "{problems:#?}"
    );
}
