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

/// Runs the example sweep on `data` with a results root under `dir`; the root and the sweep id.
fn persisted_sweep(dir: &Path, data: &Path) -> (String, String) {
    let results = dir.join("results").display().to_string();
    let (data_arg, out_arg) = (
        data.display().to_string(),
        dir.join("out").display().to_string(),
    );
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
    (results, sweep_id)
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
    let (results, sweep_id) = persisted_sweep(dir.path(), &data);

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
    assert_eq!(
        forced.status.code(),
        Some(i32::from(gridtest::exit::REPLAY_MISMATCH)),
        "{report}"
    );
    assert!(report.contains("data changed (forced):"), "{report}");
    // Each difference names the metrics that differ, with both values.
    let named = gridtest::metrics::METRIC_COLUMNS
        .iter()
        .any(|c| report.contains(&format!("{}: recorded ", c.name)));
    assert!(named, "no difference names a metric:\n{report}");
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

/// The last price of a symbol's last file in the W1 smoke data.
fn last_price(data: &Path, symbol: &str) -> f64 {
    let dir = data.join(format!("symbol={symbol}"));
    let mut days: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    days.sort();
    let file = std::fs::File::open(days.last().unwrap().join("part-0.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batch = reader.map(Result::unwrap).last().unwrap();
    let price = batch
        .column_by_name("price")
        .unwrap()
        .as_primitive::<Float64Type>();
    price.value(price.len() - 1)
}

/// `--replay <id> --cell <set>@<symbol> --trades F --equity G`: the fills, replayed with cash and
/// units, give the cell's total return in the independent W1 reference, their count is its
/// trades, and the equity curve has one point per tick and ends at 1 + the total return.
#[test]
fn a_cells_trades_and_equity_reproduce_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (data, reference) = w1_smoke();
    let (results, sweep_id) = persisted_sweep(dir.path(), &data);
    let expected = csv::Reader::from_path(&reference)
        .unwrap()
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == "S001" && &r[1] == "10" && &r[2] == "60")
        .unwrap();
    let (n_ticks, trades, total_return): (usize, usize, f64) = (
        expected[3].parse().unwrap(),
        expected[4].parse().unwrap(),
        expected[5].parse().unwrap(),
    );
    assert!(trades > 10, "a cell that trades");

    let cell = ParamSet::new([("fast", ParamValue::Int(10)), ("slow", ParamValue::Int(60))]).id();
    let (trades_csv, equity_csv) = (dir.path().join("trades.csv"), dir.path().join("equity.csv"));
    let traced = sweep(&[
        "--replay",
        &sweep_id,
        "--results",
        &results,
        "--cell",
        &format!("{cell}@S001"),
        "--trades",
        &trades_csv.display().to_string(),
        "--equity",
        &equity_csv.display().to_string(),
    ]);
    assert!(traced.status.success(), "{}", text(&traced));

    let mut fills = csv::Reader::from_path(&trades_csv).unwrap();
    let header: Vec<String> = fills.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(
        header,
        [
            "index", "time", "price", "units", "side", "fee", "weight", "equity"
        ]
    );
    let (mut cash, mut units, mut count) = (1.0f64, 0.0f64, 0usize);
    for record in fills.records() {
        let r = record.unwrap();
        let (price, amount, fee): (f64, f64, f64) = (
            r[2].parse().unwrap(),
            r[3].parse().unwrap(),
            r[5].parse().unwrap(),
        );
        let signed = match &r[4] {
            "buy" => amount,
            "sell" => -amount,
            other => panic!("side {other}"),
        };
        cash -= signed * price + fee;
        units += signed;
        let equity: f64 = r[7].parse().unwrap();
        assert!(
            (cash + units * price - equity).abs() < 1e-12,
            "equity after fill {count}"
        );
        count += 1;
    }
    assert_eq!(count, trades, "one fill per position change");
    let pnl = cash + units * last_price(&data, "S001") - 1.0;
    assert!(
        (pnl - total_return).abs() < 1e-9,
        "P&L of the fills {pnl} vs {total_return}"
    );

    let curve: Vec<f64> = csv::Reader::from_path(&equity_csv)
        .unwrap()
        .records()
        .map(|r| r.unwrap()[1].parse().unwrap())
        .collect();
    assert_eq!(curve.len(), n_ticks);
    let last = curve.last().copied().unwrap();
    assert!(
        (last - 1.0 - total_return).abs() < 1e-9,
        "equity ends at {last}"
    );
}
