//! Bad data: every problem is an error naming the file (and row), and a bad shard loses
//! nothing else.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, StringArray, TimestampNanosecondArray,
};
use gridtest::data::{DataError, Shard, ShardReader, synth::SynthSpec};
use gridtest::{DataKind, Grid, Sweep};
use gridtest_examples::SmaCrossover;
use gridtest_tests::{Scratch, batch_of, run, runtime, seconds_from_15h};

const DAY1: &str = "2024-01-02";
const DAY2: &str = "2024-01-03";

fn small_spec() -> SynthSpec {
    SynthSpec {
        symbols: 2,
        days: 2,
        ticks_per_day: 500,
        seed: 11,
        ..SynthSpec::default()
    }
}

/// Loads shard `symbol` over both days and returns the error.
fn load_err(scratch: &Scratch, symbol: &str) -> DataError {
    let reader = ShardReader::try_new(&scratch.dataset(DataKind::Ticks)).unwrap();
    let shard = Shard::new(symbol, DAY1.parse().unwrap(), DAY2.parse().unwrap());
    runtime()
        .block_on(reader.load(&shard))
        .expect_err("the shard must not load")
}

fn ticks(price: Vec<f64>) -> (Vec<i64>, Vec<f64>, Vec<f64>) {
    let n = price.len();
    (seconds_from_15h(DAY2, n), price, vec![1.0; n])
}

#[test]
fn a_corrupt_file_in_another_partition_is_never_opened() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let bad = scratch.write_bytes("S001", DAY2, "part-0.parquet", b"this is not parquet");
    let reader = ShardReader::try_new(&scratch.dataset(DataKind::Ticks)).unwrap();
    let good = Shard::new("S000", DAY1.parse().unwrap(), DAY2.parse().unwrap());
    let data = runtime().block_on(reader.load(&good)).unwrap();
    assert_eq!(data.n_rows(), 1000);
    assert_eq!(data.n_days(), 2);
    // Day-range pruning inside a symbol: only day 1 of S001 is read, so its corrupt day 2 is
    // not touched either.
    let day1 = Shard::new("S001", DAY1.parse().unwrap(), DAY1.parse().unwrap());
    assert_eq!(
        runtime().block_on(reader.load(&day1)).unwrap().n_rows(),
        500
    );
    // The corrupt file itself is reported by name, its reader's message said once.
    let err = load_err(&scratch, "S001");
    assert!(matches!(err, DataError::Unreadable { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains(&bad.display().to_string()), "{err}");
    assert_eq!(message.matches("Parquet error").count(), 1, "{err}");
}

#[test]
fn a_bad_shard_fails_only_its_own_cells() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let bad = scratch.write_bytes("S001", DAY2, "part-0.parquet", b"PAR1 garbage PAR1");
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(Grid::new().axis("fast", [5, 10]).axis("slow", [20, 40]))
        .data(scratch.location());
    let results = run(&sweep);
    assert_eq!(results.recorded(), 8, "every cell has a final state");
    let failures: Vec<_> = results.failures().collect();
    assert_eq!(failures.len(), 4);
    for (_, shard, f) in &failures {
        assert_eq!(shard.symbol(), "S001");
        assert_eq!(f.kind, gridtest::sweep::FailureKind::Data);
        assert!(
            f.message.contains(&bad.display().to_string()),
            "{}",
            f.message
        );
    }
    let ok = results
        .rows()
        .unwrap()
        .into_iter()
        .filter(|(_, s, c)| s.symbol() == "S000" && c.is_ok());
    assert_eq!(ok.count(), 4);
}

#[test]
fn missing_and_mistyped_columns_name_the_file() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let ts: ArrayRef =
        Arc::new(TimestampNanosecondArray::from(seconds_from_15h(DAY2, 3)).with_timezone("UTC"));
    let no_price = batch_of(vec![
        ("ts", Arc::clone(&ts)),
        ("size", Arc::new(Float64Array::from(vec![1.0; 3]))),
    ]);
    let path = scratch.write_batch("S000", DAY2, "part-0.parquet", &no_price);
    let err = load_err(&scratch, "S000");
    let text = err.to_string();
    assert!(matches!(err, DataError::MissingColumn { .. }), "{text}");
    assert!(
        text.contains(&path.display().to_string()) && text.contains("`price`"),
        "{text}"
    );
    assert!(text.contains("columns present: ts, size"), "{text}");

    let text_price = batch_of(vec![
        ("ts", Arc::clone(&ts)),
        ("price", Arc::new(StringArray::from(vec!["1", "2", "3"]))),
        ("size", Arc::new(Float64Array::from(vec![1.0; 3]))),
    ]);
    scratch.write_batch("S000", DAY2, "part-0.parquet", &text_price);
    let err = load_err(&scratch, "S000");
    assert!(matches!(err, DataError::WrongType { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("column `price` has type Utf8, expected Float64"),
        "{err}"
    );

    let int_ts = batch_of(vec![
        ("ts", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("price", Arc::new(Float64Array::from(vec![1.0; 3]))),
        ("size", Arc::new(Float64Array::from(vec![1.0; 3]))),
    ]);
    scratch.write_batch("S000", DAY2, "part-0.parquet", &int_ts);
    let err = load_err(&scratch, "S000");
    assert!(
        err.to_string()
            .contains("column `ts` has type Int64, expected a UTC timestamp"),
        "{err}"
    );

    // Integer sizes are fine (cast to f64), and extra columns are ignored.
    let int_size = batch_of(vec![
        ("ts", Arc::clone(&ts)),
        (
            "price",
            Arc::new(Float64Array::from(vec![10.0, 11.0, 12.0])),
        ),
        ("size", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("venue", Arc::new(StringArray::from(vec!["a", "b", "c"]))),
    ]);
    scratch.write_batch("S000", DAY2, "part-0.parquet", &int_size);
    let reader = ShardReader::try_new(&scratch.dataset(DataKind::Ticks)).unwrap();
    let shard = Shard::new("S000", DAY1.parse().unwrap(), DAY2.parse().unwrap());
    let data = runtime().block_on(reader.load(&shard)).unwrap();
    assert_eq!(data.n_rows(), 503);
}

#[test]
fn bad_values_name_the_file_and_row() {
    let cases: Vec<(Vec<f64>, &str, u64)> = vec![
        (vec![10.0, 10.5, f64::NAN, 11.0], "is invalid (NaN)", 2),
        (
            vec![10.0, 0.0, 11.0],
            "is invalid (prices must be positive)",
            1,
        ),
        (
            vec![10.0, 11.0, -3.0],
            "is invalid (prices must be positive)",
            2,
        ),
        (vec![10.0, f64::INFINITY], "is invalid (infinite)", 1),
    ];
    for (prices, rule, row) in cases {
        let scratch = Scratch::new();
        scratch.synth(&small_spec());
        let (ts, price, size) = ticks(prices);
        let path = scratch.write_ticks("S000", DAY2, "part-0.parquet", ts, price, size);
        let err = load_err(&scratch, "S000");
        let text = err.to_string();
        assert!(matches!(err, DataError::BadValue { .. }), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(
            text.contains(rule) && text.contains(&format!("at row {row}")),
            "{text}"
        );
    }
}

#[test]
fn nulls_name_the_column_and_row() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let ts: ArrayRef =
        Arc::new(TimestampNanosecondArray::from(seconds_from_15h(DAY2, 3)).with_timezone("UTC"));
    let batch = batch_of(vec![
        ("ts", ts),
        (
            "price",
            Arc::new(Float64Array::from(vec![Some(10.0), None, Some(11.0)])),
        ),
        ("size", Arc::new(Float64Array::from(vec![1.0; 3]))),
    ]);
    let path = scratch.write_batch("S000", DAY2, "part-0.parquet", &batch);
    let err = load_err(&scratch, "S000");
    assert!(matches!(err, DataError::Null { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("`price` is null at row 1"),
        "{text}"
    );
}

#[test]
fn timestamps_going_backwards_are_caught_within_and_across_files() {
    // Within a file.
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let mut ts = seconds_from_15h(DAY2, 5);
    ts.swap(2, 3);
    let path = scratch.write_ticks(
        "S000",
        DAY2,
        "part-0.parquet",
        ts,
        vec![10.0; 5],
        vec![1.0; 5],
    );
    let err = load_err(&scratch, "S000");
    let text = err.to_string();
    assert!(matches!(err, DataError::Backwards { .. }), "{text}");
    assert!(
        text.contains(&path.display().to_string()) && text.contains("at row 3"),
        "{text}"
    );

    // Across two files of one day: part-1 starts before part-0 ends.
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let ts = seconds_from_15h(DAY2, 10);
    let first = scratch.write_ticks(
        "S000",
        DAY2,
        "part-0.parquet",
        ts[5..].to_vec(),
        vec![10.0; 5],
        vec![1.0; 5],
    );
    let second = scratch.write_ticks(
        "S000",
        DAY2,
        "part-1.parquet",
        ts[..5].to_vec(),
        vec![10.0; 5],
        vec![1.0; 5],
    );
    let err = load_err(&scratch, "S000");
    let text = err.to_string();
    assert!(matches!(err, DataError::Backwards { .. }), "{text}");
    assert!(
        text.contains(&second.display().to_string()) && text.contains("at row 0"),
        "{text}"
    );
    assert!(
        text.contains(&format!("(last row of file://{})", first.display())),
        "{text}"
    );
}

#[test]
fn a_timestamp_outside_its_date_partition_is_an_error() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let ts = seconds_from_15h("2024-01-04", 3); // filed under 2024-01-03
    let path = scratch.write_ticks(
        "S000",
        DAY2,
        "part-0.parquet",
        ts,
        vec![10.0; 3],
        vec![1.0; 3],
    );
    let err = load_err(&scratch, "S000");
    let text = err.to_string();
    assert!(matches!(err, DataError::OutsidePartition { .. }), "{text}");
    assert!(
        text.contains(&path.display().to_string()) && text.contains("2024-01-03"),
        "{text}"
    );
}

#[test]
fn several_files_per_day_are_read_in_name_order() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    let ts = seconds_from_15h(DAY2, 10);
    let p: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
    scratch.write_ticks(
        "S000",
        DAY2,
        "part-0.parquet",
        ts[..4].to_vec(),
        p[..4].to_vec(),
        vec![1.0; 4],
    );
    scratch.write_ticks(
        "S000",
        DAY2,
        "part-1.parquet",
        ts[4..].to_vec(),
        p[4..].to_vec(),
        vec![1.0; 6],
    );
    let reader = ShardReader::try_new(&scratch.dataset(DataKind::Ticks)).unwrap();
    let shard = Shard::new("S000", DAY2.parse().unwrap(), DAY2.parse().unwrap());
    let data = runtime().block_on(reader.load(&shard)).unwrap();
    let prices: Vec<f64> = data
        .batches()
        .iter()
        .flat_map(|b| b.columns()[0].to_vec())
        .collect();
    assert_eq!(prices, p);
    assert_eq!(data.info().files.len(), 2);
}

#[test]
fn a_row_before_its_day_is_reported_as_off_its_partition_not_as_going_backwards() {
    let scratch = Scratch::new();
    scratch.synth(&small_spec());
    // Filed under DAY2, but stamped on DAY1 before DAY1's own last tick: both "off its day" and
    // "backwards", and the cause is the first.
    let early = gridtest_tests::ns_at(DAY1, 9, 30);
    let path = scratch.write_ticks(
        "S000",
        DAY2,
        "part-0.parquet",
        vec![early, early + 1_000_000_000],
        vec![10.0; 2],
        vec![1.0; 2],
    );
    let err = load_err(&scratch, "S000");
    let text = err.to_string();
    assert!(
        matches!(err, DataError::OutsidePartition { row: 0, .. }),
        "{text}"
    );
    assert!(text.contains(&path.display().to_string()), "{text}");
    // Timestamps read as dates, with the raw value beside.
    assert!(
        text.contains(&format!(
            "timestamp 2024-01-02T09:30:00Z ({early} ns) at row 0"
        )),
        "{text}"
    );
}
