//! The W1 reference workload on the smoke dataset: the library sweep and the example binary
//! must reproduce the independent reference (trades equal, returns within 1e-9).

use std::process::Command;

use gridtest::Sweep;
use gridtest_examples::SmaCrossover;
use gridtest_tests::{compare_w1, example_binary, read_w1_csv, run, w1_grid, w1_smoke, w1_table};

#[test]
fn library_sweep_reproduces_the_smoke_reference() {
    let (data, reference) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(w1_grid())
        .data(data.display().to_string())
        .commission_bps(1.0);
    let results = run(&sweep);
    assert_eq!(results.recorded(), 2 * 955);
    assert_eq!(results.missing(), 0);
    assert_eq!(results.failed(), 0);
    let diff = compare_w1(&w1_table(&results), &read_w1_csv(&reference)).unwrap();
    assert_eq!(diff.cells, 1910);
    // Total return and drawdown come out bit for bit; Sharpe to rounding.
    assert_eq!(diff.total_return_rel, 0.0);
    assert_eq!(diff.max_drawdown_abs, 0.0);
    assert!(diff.sharpe_rel < 1e-10, "{diff:?}");

    // The leaderboard counts both position changes and closed trades (round trips) per set,
    // summed over its cells.
    let cells = results.cells().unwrap();
    for row in &results.leaderboard().rows {
        let (mut trades, mut closed) = (0, 0);
        for (key, outcome) in &cells {
            if key.param_set == row.param_set_id {
                let m = outcome.as_ref().unwrap();
                trades += m.trades;
                closed += m.round_trips;
            }
        }
        assert_eq!((row.trades, row.closed_trades), (trades, closed), "{row:?}");
        assert!(closed <= trades);
    }
    assert!(
        results
            .leaderboard()
            .rows
            .iter()
            .any(|r| r.closed_trades > 0)
    );
}

#[test]
fn example_binary_reproduces_the_smoke_reference() {
    let (data, reference) = w1_smoke();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(example_binary("sma_crossover"))
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(out.path())
        .args(["--no-progress", "--threads", "2", "--top", "3"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("the example binary runs (built by `cargo test`)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1910 cells (0 failed)"), "{stdout}");
    assert!(
        stdout.contains("closed trades"),
        "the table shows closed trades: {stdout}"
    );
    let got = read_w1_csv(&out.path().join("results.csv"));
    compare_w1(&got, &read_w1_csv(&reference)).unwrap();

    // The leaderboard ranks all 955 parameter sets, best Sharpe first.
    let mut lb = csv::Reader::from_path(out.path().join("leaderboard.csv")).unwrap();
    let headers = lb.headers().unwrap().clone();
    let score = headers.iter().position(|h| h == "score").unwrap();
    let scores: Vec<f64> = lb
        .records()
        .map(|r| r.unwrap()[score].parse().unwrap())
        .collect();
    assert_eq!(scores.len(), 955);
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "sorted by score");

    // results.parquet holds the same cells.
    let file = std::fs::File::open(out.path().join("results.parquet")).unwrap();
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 1910);
}

#[test]
fn example_binary_rejects_an_empty_grid_clearly() {
    let (data, _) = w1_smoke();
    let output = Command::new(example_binary("sma_crossover"))
        .arg("--data")
        .arg(&data)
        .args([
            "--fast-min",
            "500",
            "--fast-max",
            "600",
            "--slow-max",
            "400",
        ])
        .args(["--no-progress"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the grid is empty: the constraints exclude all"),
        "{stderr}"
    );
}
