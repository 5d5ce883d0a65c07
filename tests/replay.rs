//! Exact replay of a persisted sweep: identical bit for bit, for the whole sweep and for one
//! cell; refused, naming the file, once the data changed; forced, it shows what changed.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use gridtest::{ParamSet, ParamValue};
use gridtest_tests::{copy_dir, example_binary, w1_smoke};

fn sweep(args: &[&str]) -> Output {
    Command::new(example_binary("sma_crossover"))
        .args(args)
        .args(["--no-progress", "--threads", "2"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Multiplies one price of a Parquet file by 1.01.
fn nudge_a_price(file: &Path) {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(file).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batch = reader.map(Result::unwrap).next().unwrap();
    let price = batch
        .column_by_name("price")
        .unwrap()
        .as_primitive::<Float64Type>();
    let mut values: Vec<f64> = price.values().to_vec();
    values[100] *= 1.01;
    let mut columns = batch.columns().to_vec();
    let i = batch.schema().index_of("price").unwrap();
    columns[i] = Arc::new(Float64Array::from(values));
    let changed = RecordBatch::try_new(batch.schema(), columns).unwrap();
    assert_eq!(changed.column(i).len(), price.len());
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(file).unwrap(), changed.schema(), None).unwrap();
    w.write(&changed).unwrap();
    w.close().unwrap();
}

#[test]
fn a_sweep_replays_bit_for_bit_and_refuses_changed_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("ticks");
    copy_dir(&w1_smoke().0, &data);
    let results = dir.path().join("results").display().to_string();
    let data_arg = data.display().to_string();
    let out_arg = dir.path().join("out").display().to_string();
    let first = sweep(&[
        "--data",
        &data_arg,
        "--results",
        &results,
        "--out",
        &out_arg,
    ]);
    assert!(first.status.success(), "{}", text(&first));
    let sweep_id = text(&first)
        .lines()
        .find_map(|l| {
            l.strip_prefix("sweep ")?
                .split(':')
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no sweep id:\n{}", text(&first)));

    let all = sweep(&["--replay", &sweep_id, "--results", &results]);
    assert!(all.status.success(), "{}", text(&all));
    assert!(
        text(&all).contains(&format!(
            "replayed 1910 cells of sweep {sweep_id}: 1910 identical, 0 different"
        )),
        "{}",
        text(&all)
    );

    let cell = ParamSet::new([("fast", ParamValue::Int(5)), ("slow", ParamValue::Int(20))]).id();
    let one = sweep(&[
        "--replay",
        &sweep_id,
        "--results",
        &results,
        "--cell",
        &format!("{cell}@S001"),
    ]);
    assert!(
        text(&one).contains("replayed 1 cells") && text(&one).contains("1 identical, 0 different"),
        "{}",
        text(&one)
    );

    let changed = data.join("symbol=S001/date=2024-01-03/part-0.parquet");
    nudge_a_price(&changed);
    let refused = sweep(&["--replay", &sweep_id, "--results", &results]);
    assert!(!refused.status.success());
    let why = text(&refused);
    assert!(
        why.contains("changed since it ran; refusing to replay"),
        "{why}"
    );
    assert!(
        why.contains("symbol=S001/date=2024-01-03/part-0.parquet: changed (size"),
        "{why}"
    );

    let forced = sweep(&["--replay", &sweep_id, "--results", &results, "--force"]);
    let report = text(&forced);
    assert!(
        !forced.status.success(),
        "different metrics are an error:\n{report}"
    );
    assert!(report.contains("data changed (forced):"), "{report}");
    let identical: usize = report
        .lines()
        .find_map(|l| {
            l.split(": ")
                .nth(1)?
                .strip_suffix(" different")?
                .split(" identical")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        (955..1910).contains(&identical),
        "S000 is unchanged, S001 is not:\n{report}"
    );
}
