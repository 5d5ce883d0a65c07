//! Ingest round trips: CSV with New York local times and Parquet with other column names, both
//! turned into the layout, give exactly the data (and the sweep results) of the same data
//! written directly; re-running is idempotent; bad rows are named.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::TimeUnit;
use gridtest::data::synth::SynthSpec;
use gridtest::data::{Shard, ShardData, ShardReader};
use gridtest::ingest::{IngestSpec, TsFormat, ingest};
use gridtest::{DataKind, Grid, Sweep};
use gridtest_examples::SmaCrossover;
use gridtest_tests::{Scratch, batch_of, gridtest_cli, run, runtime};

const NY: chrono_tz::Tz = chrono_tz::America::New_York;

fn source() -> Scratch {
    let s = Scratch::new();
    s.synth(&SynthSpec {
        symbols: 2,
        days: 2,
        ticks_per_day: 3000,
        seed: 5,
        ..SynthSpec::default()
    });
    s
}

fn load_all(dir: &Scratch) -> Vec<(Vec<i64>, Vec<f64>, Vec<f64>)> {
    let reader = ShardReader::try_new(&dir.dataset(DataKind::Ticks)).unwrap();
    ["S000", "S001"]
        .iter()
        .map(|s| {
            let shard = Shard::new(
                *s,
                "2024-01-02".parse().unwrap(),
                "2024-01-03".parse().unwrap(),
            );
            let d: ShardData = runtime().block_on(reader.load(&shard)).unwrap();
            let mut out = (Vec::new(), Vec::new(), Vec::new());
            for b in d.batches() {
                out.0.extend_from_slice(b.ts());
                out.1.extend_from_slice(&b.columns()[0]);
                out.2.extend_from_slice(&b.columns()[1]);
            }
            out
        })
        .collect()
}

/// Every tick of the source, as (symbol, ts, price, size), symbols interleaved by time.
fn ticks(src: &Scratch) -> Vec<(String, i64, f64, f64)> {
    let mut all = Vec::new();
    for (sym, (ts, p, q)) in ["S000", "S001"].iter().zip(load_all(src)) {
        for i in 0..ts.len() {
            all.push(((*sym).to_owned(), ts[i], p[i], q[i]));
        }
    }
    all.sort_by_key(|t| t.1);
    all
}

fn ny_time(ns: i64) -> String {
    DateTime::<Utc>::from_timestamp_nanos(ns)
        .with_timezone(&NY)
        .format("%Y-%m-%d %H:%M:%S%.9f")
        .to_string()
}

fn sweep_cells(dir: &Scratch) -> Vec<String> {
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(Grid::new().axis("fast", [5, 20]).axis("slow", [50, 200]))
        .data(dir.location());
    let results = run(&sweep);
    results
        .rows()
        .unwrap()
        .into_iter()
        .map(|(set, s, c)| format!("{set} {} {c:?}", s.symbol()))
        .collect()
}

fn hash_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn csv_with_local_times_round_trips_through_the_command() {
    let src = source();
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("trades.csv");
    let mut w = csv::Writer::from_path(&csv).unwrap();
    w.write_record(["sym", "time_ny", "last", "qty"]).unwrap();
    for (sym, ts, p, q) in ticks(&src) {
        w.write_record([sym, ny_time(ts), p.to_string(), q.to_string()])
            .unwrap();
    }
    w.flush().unwrap();
    let out = Scratch::new();
    let ingest_cmd = || {
        Command::new(gridtest_cli())
            .arg("ingest")
            .arg(&csv)
            .args([
                "--output",
                &out.location(),
                "--symbol-col",
                "sym",
                "--ts-col",
                "time_ny",
            ])
            .args(["--tz", "America/New_York", "--columns", "last,qty"])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let first = ingest_cmd();
    let report = String::from_utf8_lossy(&first.stdout).to_string()
        + &String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{report}");
    assert!(
        report.contains("ingested 12000 rows into 4 partitions"),
        "{report}"
    );
    assert!(report.contains("S000: 6000 rows over 2 days"), "{report}");
    assert_eq!(
        load_all(&out),
        load_all(&src),
        "same ticks, same nanoseconds"
    );
    assert_eq!(sweep_cells(&out), sweep_cells(&src), "same sweep results");

    // Idempotent: the same bytes again.
    let before = hash_tree(out.dir.path());
    let second = ingest_cmd();
    assert!(second.status.success());
    assert!(String::from_utf8_lossy(&second.stdout).contains("(0 stale files removed)"));
    assert_eq!(hash_tree(out.dir.path()), before);
}

#[test]
fn parquet_with_other_column_names_and_a_zoned_timestamp_round_trips() {
    let src = source();
    let work = tempfile::tempdir().unwrap();
    let all = ticks(&src);
    // A vendor file: its own column names, integer sizes, timestamps zoned in New York.
    let batch = batch_of(vec![
        (
            "ticker",
            Arc::new(StringArray::from(
                all.iter().map(|t| t.0.clone()).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
        (
            "t",
            Arc::new(
                TimestampNanosecondArray::from(all.iter().map(|t| t.1).collect::<Vec<_>>())
                    .with_timezone("America/New_York"),
            ),
        ),
        (
            "px",
            Arc::new(Float64Array::from(
                all.iter().map(|t| t.2).collect::<Vec<_>>(),
            )),
        ),
        (
            "volume",
            Arc::new(Int64Array::from(
                all.iter().map(|t| t.3 as i64).collect::<Vec<_>>(),
            )),
        ),
    ]);
    let file = work.path().join("vendor.parquet");
    let mut w = datafusion::parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&file).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = Scratch::new();
    let summary = runtime()
        .block_on(ingest(&IngestSpec {
            inputs: vec![file],
            output: out.dataset(DataKind::Ticks),
            symbol_column: Some("ticker".into()),
            symbol: None,
            ts_column: "t".into(),
            ts_format: TsFormat::Epoch(TimeUnit::Nanosecond),
            value_columns: vec!["px".into(), "volume".into()],
            delimiter: b',',
            sort: false,
        }))
        .unwrap();
    assert_eq!(summary.rows, 12000);
    assert_eq!(summary.partitions, 4);
    assert_eq!(load_all(&out), load_all(&src));
}

#[test]
fn bad_rows_are_named_and_unsorted_input_needs_sort() {
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("bad.csv");
    std::fs::write(
        &csv,
        "ts,price,size\n2024-01-02T15:00:00Z,10,1\n2024-01-02T15:00:01Z,11,1\n2024-01-02T15:00:02Z,NaN,1\n",
    )
    .unwrap();
    let spec = |sort: bool, out: &Scratch| IngestSpec {
        inputs: vec![csv.clone()],
        output: out.dataset(DataKind::Ticks),
        symbol_column: None,
        symbol: Some("X".into()),
        ts_column: "ts".into(),
        ts_format: TsFormat::Text {
            format: "%Y-%m-%d %H:%M:%S".into(),
            tz: chrono_tz::UTC,
        },
        value_columns: vec!["price".into(), "size".into()],
        delimiter: b',',
        sort,
    };
    let out = Scratch::new();
    let err = runtime()
        .block_on(ingest(&spec(false, &out)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.csv, line 4: `price` = NaN"), "{err}");
    assert!(
        std::fs::read_dir(out.dir.path()).unwrap().next().is_none(),
        "nothing written"
    );

    std::fs::write(
        &csv,
        "ts,price,size\n2024-01-02 15:00:02,10,1\n2024-01-02 15:00:01,11,1\n",
    )
    .unwrap();
    let err = runtime()
        .block_on(ingest(&spec(false, &out)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 3") && err.contains("goes backwards"),
        "{err}"
    );
    let summary = runtime().block_on(ingest(&spec(true, &out))).unwrap();
    assert_eq!(summary.rows, 2);
}

/// A CSV of `symbols` × `days` × `per_day` ticks (one per second from 15:00 UTC).
fn many_days_csv(path: &Path, symbols: &[&str], days: u32, per_day: usize) {
    let mut w = csv::Writer::from_path(path).unwrap();
    w.write_record(["sym", "ts", "price", "size"]).unwrap();
    let first: chrono::NaiveDate = "2024-01-01".parse().unwrap();
    for symbol in symbols {
        for d in 0..days {
            let day = first + chrono::Days::new(u64::from(d));
            for i in 0..per_day {
                let ts = day.and_hms_opt(15, 0, 0).unwrap().and_utc().timestamp() + i as i64;
                let price = 100.0 + f64::from(d) + i as f64 * 1e-3;
                w.write_record([
                    (*symbol).to_owned(),
                    ts.to_string(),
                    price.to_string(),
                    "1".to_owned(),
                ])
                .unwrap();
            }
        }
    }
    w.flush().unwrap();
}

#[test]
fn an_ingest_stopped_by_a_full_disk_leaves_the_dataset_as_it_was() {
    let namespaces = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !namespaces {
        gridtest_tests::skip(
            "mountns",
            "an_ingest_stopped_by_a_full_disk_leaves_the_dataset_as_it_was",
            "`unshare --user --map-root-user --mount` is not allowed here (a small tmpfs is \
             the full disk)",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("ticks.csv");
    // 2 symbols × 40 days: 80 partitions of about 10 KiB, on a 256 KiB file system.
    many_days_csv(&csv, &["AAA", "BBB"], 40, 400);
    let disk = work.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    // In a mount namespace of its own: mount the small disk, ingest onto it, then count the
    // Parquet files left there and list the root (the tmpfs vanishes with the namespace).
    let script = r#"mount -t tmpfs -o size=256k tmpfs "$1" || exit 99
"$2" ingest "$3" --output "$1/ticks" --symbol-col sym --ts-col ts --ts-unit s --columns price,size
echo "exit=$?"
echo "parquet=$(find "$1" -name '*.parquet' | wc -l)"
echo "root=$(ls -A "$1/ticks" 2>/dev/null | tr '\n' ' ')""#;
    let o = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&disk)
        .arg(gridtest_cli())
        .arg(&csv)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(out.contains("exit=1\n"), "{out}\n{err}");
    assert!(
        err.contains("No space left on device"),
        "the disk filled: {err}"
    );
    assert!(out.contains("parquet=0\n"), "partitions left behind: {out}");
    assert!(out.contains("root=\n") || out.contains("root= \n"), "{out}");
    // The same ingest on a disk large enough writes all 80 partitions.
    let ok = Command::new(gridtest_cli())
        .arg("ingest")
        .arg(&csv)
        .args(["--output", &work.path().join("ticks").display().to_string()])
        .args(["--symbol-col", "sym", "--ts-col", "ts", "--ts-unit", "s"])
        .args(["--columns", "price,size"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let report = String::from_utf8_lossy(&ok.stdout);
    assert!(report.contains("into 80 partitions"), "{report}");
    let leftovers: Vec<_> = std::fs::read_dir(work.path().join("ticks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('_'))
        .collect();
    assert!(leftovers.is_empty(), "staging left: {leftovers:?}");
}

#[test]
fn a_symbol_column_is_checked_not_merged_when_a_symbol_is_given() {
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("two.csv");
    many_days_csv(&csv, &["AAA", "BBB"], 1, 5);
    let out = Scratch::new();
    let o = Command::new(gridtest_cli())
        .arg("ingest")
        .arg(&csv)
        .args(["--output", &out.location(), "--symbol", "AAA"])
        .args([
            "--ts-col",
            "ts",
            "--ts-unit",
            "s",
            "--columns",
            "price,size",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("two.csv, line 7: the input's symbol column says `BBB`, not `AAA` (--symbol)"),
        "{err}"
    );
    assert!(std::fs::read_dir(out.dir.path()).unwrap().next().is_none());
}

#[test]
fn any_symbol_is_written_hive_escaped_and_reads_back_as_itself() {
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("index.csv");
    many_days_csv(&csv, &["^GSPC", "A/B"], 2, 50);
    let out = Scratch::new();
    let ingest_it = || {
        Command::new(gridtest_cli())
            .arg("ingest")
            .arg(&csv)
            .args(["--output", &out.location(), "--symbol-col", "sym"])
            .args([
                "--ts-col",
                "ts",
                "--ts-unit",
                "s",
                "--columns",
                "price,size",
            ])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let o = ingest_it();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut dirs: Vec<String> = std::fs::read_dir(out.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, ["symbol=%5EGSPC", "symbol=A%2FB"]);
    let dataset = out.dataset(DataKind::Ticks);
    assert_eq!(
        runtime().block_on(dataset.symbols()).unwrap(),
        ["A/B", "^GSPC"]
    );
    let reader = ShardReader::try_new(&dataset).unwrap();
    let shard = Shard::new(
        "^GSPC",
        "2024-01-01".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    assert_eq!(
        runtime().block_on(reader.load(&shard)).unwrap().n_rows(),
        100
    );
    // A symbol already present under an unescaped name is written there, not beside it.
    std::fs::rename(
        out.dir.path().join("symbol=%5EGSPC"),
        out.dir.path().join("symbol=^GSPC"),
    )
    .unwrap();
    assert!(ingest_it().status.success());
    assert_eq!(
        runtime().block_on(dataset.symbols()).unwrap(),
        ["A/B", "^GSPC"]
    );
    assert!(!out.dir.path().join("symbol=%5EGSPC").exists());
}
