//! `gridtest::research` against an independent implementation (numpy/scipy, written from the
//! papers: `tests/reference/overfitting.py`), the DSR paper's worked example, a planted signal
//! among noise, and overfitting on pure noise.

use std::path::Path;
use std::process::Command;

use gridtest::research::{
    Returns, SeriesStats, WalkForward, deflate, effective_trials, expected_max_sharpe,
    probabilistic_sharpe, probability_of_overfitting, walk_forward,
};
use gridtest_tests::skip;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Normal};
use serde_json::Value;

/// Daily-like returns of `n` sets over `t` periods: families sharing a factor, skewed sets, flat
/// sets, with seed `seed`.
fn mixed_returns(n: usize, t: usize, seed: u64) -> Returns {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.01).unwrap();
    let jumps = Exp::new(50.0).unwrap();
    let factors: Vec<Vec<f64>> = (0..4)
        .map(|_| (0..t).map(|_| noise.sample(&mut rng)).collect())
        .collect();
    let mut returns = Returns::new(t);
    for set in 0..n {
        let series: Vec<f64> = match set % 7 {
            6 => vec![0.0; t], // a set that never trades
            5 => (0..t)
                .map(|_| 0.002 - jumps.sample(&mut rng) * f64::from(rng.random_bool(0.1)))
                .collect(),
            k => {
                let (f, w) = (&factors[k % 4], 0.3 + 0.1 * k as f64);
                let drift = 0.0005 * (set as f64 / n as f64 - 0.3);
                f.iter()
                    .map(|x| drift + w * x + noise.sample(&mut rng))
                    .collect()
            }
        };
        returns.push(&series).unwrap();
    }
    returns
}

fn write_f64(path: &Path, values: &[f64]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Runs the reference script on `returns` (CSCV over `blocks`, walk-forward `wf`, `trials` sets
/// tried) and parses its JSON.
fn run_reference(
    python: &str,
    returns: &Returns,
    trials: usize,
    blocks: usize,
    wf: WalkForward,
) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("returns.f64");
    write_f64(&file, returns.values());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/overfitting.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&file)
        .args([returns.n_periods(), trials, blocks, wf.train, wf.test].map(|v| v.to_string()))
        .arg(if wf.anchored { "1" } else { "0" })
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[track_caller]
fn close(what: &str, ours: f64, reference: &Value) {
    let theirs = reference
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no number in {reference}"));
    let tolerance = 1e-9 * theirs.abs().max(1.0);
    assert!(
        (ours - theirs).abs() <= tolerance || (ours.is_nan() && theirs.is_nan()),
        "{what}: gridtest {ours:e}, reference {theirs:e}"
    );
}

#[test]
fn statistics_agree_with_the_numpy_scipy_reference() {
    let test = "research::statistics_agree_with_the_numpy_scipy_reference";
    let Some(python) = gridtest_tests::research_python("numpy, scipy") else {
        skip(
            "scipy",
            test,
            "no Python with numpy and scipy (GRIDTEST_RESEARCH_PYTHON)",
        );
        return;
    };
    let (n, t, trials, blocks) = (63, 483, 80, 16);
    let wf = WalkForward {
        train: 120,
        test: 50,
        anchored: false,
    };
    let returns = mixed_returns(n, t, 11);
    let reference = run_reference(&python, &returns, trials, blocks, wf);

    let stats: Vec<SeriesStats> = returns.sets().map(SeriesStats::of).collect();
    for (i, (s, r)) in stats
        .iter()
        .zip(reference["stats"].as_array().unwrap())
        .enumerate()
    {
        close(&format!("mean of set {i}"), s.mean, &r["mean"]);
        close(&format!("std of set {i}"), s.std, &r["std"]);
        close(&format!("skew of set {i}"), s.skew, &r["skew"]);
        close(&format!("kurtosis of set {i}"), s.kurtosis, &r["kurtosis"]);
        close(&format!("sharpe of set {i}"), s.sharpe(), &r["sharpe"]);
    }
    let deflation = deflate(&stats, trials as u64);
    close(
        "V[SR]",
        deflation.sharpe_variance,
        &reference["sharpe_variance"],
    );
    close("SR0", deflation.benchmark, &reference["benchmark"]);
    for (i, (d, r)) in deflation
        .dsr
        .iter()
        .zip(reference["dsr"].as_array().unwrap())
        .enumerate()
    {
        close(&format!("DSR of set {i}"), *d, r);
    }
    close(
        "effective trials",
        effective_trials(&returns, trials as u64),
        &reference["effective_trials"],
    );

    let pbo = probability_of_overfitting(&returns, blocks).unwrap();
    let r = &reference["pbo"];
    assert_eq!(pbo.logits.len(), 12_870);
    let chosen: Vec<usize> = serde_json::from_value(r["chosen"].clone()).unwrap();
    assert_eq!(pbo.chosen, chosen, "in-sample winners");
    for (name, ours) in [
        ("logits", &pbo.logits),
        ("in_sample", &pbo.in_sample),
        ("out_of_sample", &pbo.out_of_sample),
    ] {
        for (i, (a, b)) in ours.iter().zip(r[name].as_array().unwrap()).enumerate() {
            close(&format!("PBO {name} of split {i}"), *a, b);
        }
    }
    close("PBO", pbo.probability, &r["probability"]);
    close(
        "P[loss]",
        pbo.probability_of_loss,
        &r["probability_of_loss"],
    );
    close(
        "degradation slope",
        pbo.degradation_slope,
        &r["degradation_slope"],
    );
    close(
        "degradation intercept",
        pbo.degradation_intercept,
        &r["degradation_intercept"],
    );

    let report = walk_forward(&returns, wf).unwrap();
    let r = &reference["walk_forward"];
    let windows = r["windows"].as_array().unwrap();
    assert_eq!(report.windows.len(), windows.len());
    for (i, (w, rw)) in report.windows.iter().zip(windows).enumerate() {
        assert_eq!(
            w.chosen as u64,
            rw["chosen"].as_u64().unwrap(),
            "window {i}"
        );
        close(
            &format!("window {i} IS"),
            w.in_sample_sharpe,
            &rw["in_sample_sharpe"],
        );
        close(
            &format!("window {i} OOS"),
            w.out_of_sample_sharpe,
            &rw["out_of_sample_sharpe"],
        );
    }
    close(
        "walk-forward OOS",
        report.out_of_sample_sharpe,
        &r["out_of_sample_sharpe"],
    );
    assert_eq!(
        report.full_sample_winner as u64,
        r["full_sample_winner"].as_u64().unwrap()
    );
    close(
        "full-sample winner OOS",
        report.full_sample_winner_sharpe,
        &r["full_sample_winner_sharpe"],
    );
}

/// Section "A numerical example" of the DSR paper: an annualised Sharpe of 2.5 over five years of
/// daily returns (T = 1250, 250 days a year), skewness −3, kurtosis 10, the best of N = 100 trials
/// whose annualised Sharpe ratios have variance 1/2. The paper finds SR0 ≈ 0.1132 per day and
/// DSR ≈ 0.9004.
#[test]
fn the_deflated_sharpe_paper_example() {
    let benchmark = expected_max_sharpe(100.0, 0.5 / 250.0);
    assert!((benchmark - 0.1132).abs() < 5e-5, "SR0 {benchmark}");
    let stats = SeriesStats {
        periods: 1250,
        mean: 2.5 / 250f64.sqrt(),
        std: 1.0,
        skew: -3.0,
        kurtosis: 10.0,
    };
    let dsr = probabilistic_sharpe(&stats, benchmark);
    assert!((dsr - 0.9004).abs() < 5e-5, "DSR {dsr}");
}

/// Five years of daily noise for 1 000 sets plus one set with a real edge (annual Sharpe ≈ 3.2).
fn planted(seed: u64) -> (Returns, usize) {
    let (t, n, planted) = (1250, 1000, 617);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.01).unwrap();
    let mut returns = Returns::new(t);
    for set in 0..=n {
        let drift = if set == planted { 0.002 } else { 0.0 };
        let series: Vec<f64> = (0..t).map(|_| drift + noise.sample(&mut rng)).collect();
        returns.push(&series).unwrap();
    }
    (returns, planted)
}

#[test]
fn a_planted_edge_survives_deflation_and_the_best_noise_does_not() {
    let (returns, planted) = planted(5);
    let stats: Vec<SeriesStats> = returns.sets().map(SeriesStats::of).collect();
    let d = deflate(&stats, stats.len() as u64);
    assert!(d.dsr[planted] > 0.95, "planted DSR {}", d.dsr[planted]);
    let best_noise = (0..stats.len())
        .filter(|&i| i != planted)
        .max_by(|&a, &b| stats[a].sharpe().total_cmp(&stats[b].sharpe()))
        .unwrap();
    assert!(
        stats[best_noise].sharpe() * 250f64.sqrt() > 1.0,
        "the best noise set looks good before deflation"
    );
    assert!(
        d.dsr[best_noise] < 0.5,
        "best noise DSR {}",
        d.dsr[best_noise]
    );
    // Independent noise: the effective number of trials is close to the number tried.
    let effective = effective_trials(&returns, stats.len() as u64);
    assert!(
        effective > 0.9 * stats.len() as f64,
        "effective {effective}"
    );
}

/// The same through a whole sweep: 1 001 parameter sets of the `planted` strategy over one
/// symbol × 250 days, one set with an edge in the data, the others noise; the DSR comes from the
/// daily returns the engine recorded. The benchmark is the expected maximum Sharpe of 1 001
/// trials, so the best noise set's DSR sits near 0.5 by construction (below it a little more
/// often than not: the maximum's distribution is skewed right); the data are seeded, so the
/// outcome is fixed.
#[test]
fn a_sweep_deflates_the_best_noise_set_below_half_and_keeps_the_planted_one() {
    let scratch = gridtest_tests::Scratch::new();
    let planted = (3, 78);
    gridtest_tests::write_planted(&scratch, &["PLT"], (250, 100), planted, (6e-5, 1e-3));
    let sweep = gridtest::Sweep::of::<gridtest_examples::Planted>()
        .grid(
            gridtest::Grid::new()
                .axis("a", 0..7u32)
                .axis("b", 0..143u32),
        )
        .data(scratch.location())
        .commission_bps(0.0);
    let results = gridtest_tests::run(&sweep);
    let report = results.research().expect("daily returns recorded");
    assert_eq!((report.trials, report.days), (1001, 250));
    let name = format!("a={} b={}", planted.0, planted.1);
    let rows = &results.leaderboard().rows;
    let planted_row = rows.iter().find(|r| r.params.to_string() == name).unwrap();
    let dsr = |r: &gridtest::sweep::LeaderRow| report.dsr_of(r.param_set_id).unwrap();
    assert!(dsr(planted_row) > 0.95, "planted DSR {}", dsr(planted_row));
    let best_noise = rows
        .iter()
        .filter(|r| r.param_set_id != planted_row.param_set_id)
        .max_by(|a, b| a.sharpe.total_cmp(&b.sharpe))
        .unwrap();
    assert!(
        best_noise.sharpe > 1.0,
        "the best noise set looks good before deflation: {best_noise:?}"
    );
    assert!(dsr(best_noise) < 0.5, "best noise DSR {}", dsr(best_noise));
}

#[test]
fn pure_noise_is_overfit_half_the_time_or_more() {
    let (t, n) = (1000, 200);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let noise = Normal::new(0.0, 0.01).unwrap();
    let values: Vec<f64> = (0..t * n).map(|_| noise.sample(&mut rng)).collect();
    let returns = Returns::from_values(t, values).unwrap();
    let pbo = probability_of_overfitting(&returns, 16).unwrap();
    assert!(pbo.probability >= 0.4, "PBO {}", pbo.probability);
    // With a planted edge the same search is not overfit.
    let (planted, _) = planted(9);
    let pbo = probability_of_overfitting(&planted, 16).unwrap();
    assert!(
        pbo.probability < 0.05,
        "PBO with an edge {}",
        pbo.probability
    );
}

#[test]
fn walk_forward_follows_the_set_that_earns_now() {
    // 50 noise sets; set 10 earns in the first half, set 20 in the second.
    let (t, n) = (1000, 50);
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let noise = Normal::new(0.0, 0.01).unwrap();
    let mut returns = Returns::new(t);
    for set in 0..n {
        let series: Vec<f64> = (0..t)
            .map(|p| {
                let edge = match (set, p < t / 2) {
                    (10, true) | (20, false) => 0.008,
                    (10, false) | (20, true) => -0.008,
                    _ => 0.0,
                };
                edge + noise.sample(&mut rng)
            })
            .collect();
        returns.push(&series).unwrap();
    }
    let rolling = walk_forward(
        &returns,
        WalkForward {
            train: 100,
            test: 100,
            anchored: false,
        },
    )
    .unwrap();
    let chosen: Vec<usize> = rolling.windows.iter().map(|w| w.chosen).collect();
    // Test windows start at 100, 200, …, 900; from 600 on the training window is all second half.
    assert_eq!(chosen, [10, 10, 10, 10, 10, 20, 20, 20, 20]);
    assert!(
        rolling.out_of_sample_sharpe > 0.4 && rolling.full_sample_winner_sharpe < 0.2,
        "walk-forward {} vs full-sample winner {}",
        rolling.out_of_sample_sharpe,
        rolling.full_sample_winner_sharpe
    );
    // Anchored windows remember the first regime: set 10 keeps the better record (until the
    // last window, where its edge is diluted to the level of the best noise) and set 20 never
    // catches up.
    let anchored = walk_forward(
        &returns,
        WalkForward {
            train: 100,
            test: 100,
            anchored: true,
        },
    )
    .unwrap();
    assert!(
        anchored
            .windows
            .iter()
            .all(|w| w.train_start == 0 && w.chosen != 20)
    );
    assert!(anchored.windows[..8].iter().all(|w| w.chosen == 10));
    assert!(anchored.out_of_sample_sharpe < rolling.out_of_sample_sharpe);
}

/// The returns a sweep wrote to `returns.parquet`, as a matrix (sets in file order) with each
/// set's id.
fn read_returns_parquet(path: &Path) -> (Returns, Vec<String>) {
    use datafusion::arrow::array::{AsArray, RecordBatchReader};
    use datafusion::arrow::datatypes::Float64Type;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["param_set", "set", "position", "date", "ret"]);
    let (mut ids, mut values, mut per_set) = (Vec::<String>::new(), Vec::new(), None);
    for batch in reader {
        let batch = batch.unwrap();
        let id = batch.column(0).as_string::<i32>();
        let ret = batch.column(4).as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            if ids.last().is_none_or(|last| last != id.value(i)) {
                if per_set.is_none() && !ids.is_empty() {
                    per_set = Some(values.len());
                }
                ids.push(id.value(i).to_owned());
            }
            values.push(ret.value(i));
        }
    }
    let periods = per_set.unwrap_or(values.len());
    (Returns::from_values(periods, values).unwrap(), ids)
}

/// A recorded sweep: `returns.parquet` holds one series per set whose compounded returns are
/// the cell's total return (one symbol), and the report in `research.json` agrees with the
/// reference run on that file.
#[test]
fn a_sweep_records_daily_returns_that_compound_to_its_results() {
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 48,
        ticks_per_day: 400,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let grid = gridtest::Grid::new()
        .axis("fast", (2..=20).step_by(2))
        .axis("slow", (10..=60).step_by(10))
        .constrain("fast < slow");
    let opts = gridtest::RunOptions {
        returns: gridtest::ReturnsOptions {
            write: true,
            ..gridtest::ReturnsOptions::default()
        },
        ..gridtest_tests::quiet()
    };
    let one_symbol = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(grid.clone())
        .data(scratch.location())
        .symbols(vec!["S000".to_owned()]);
    let results = gridtest_tests::run_with(&one_symbol, &opts).unwrap();
    let report = results.research().expect("a research report");
    assert_eq!(report.days, 48);
    assert_eq!(report.trials as usize, results.n_sets());
    assert_eq!(report.sets_with_returns as usize, results.n_sets());
    let (returns, ids) = read_returns_parquet(&results.output_dir().join("returns.parquet"));
    assert_eq!(
        (returns.n_sets(), returns.n_periods()),
        (results.n_sets(), 48)
    );
    let rows = results.rows().unwrap();
    assert_eq!(rows.len(), ids.len());
    for ((set, _, outcome), (id, series)) in rows.iter().zip(ids.iter().zip(returns.sets())) {
        assert_eq!(&set.id().to_string(), id);
        let compounded = series.iter().fold(1.0, |e, r| e * (1.0 + r)) - 1.0;
        let total = outcome.as_ref().unwrap().total_return;
        assert!(
            (compounded - total).abs() < 1e-12,
            "[{set}] {compounded} vs {total}"
        );
    }
    // The leaderboard shows each set's DSR, the report's.
    for row in &results.leaderboard().rows {
        assert_eq!(row.dsr, report.dsr_of(row.param_set_id));
        assert!(row.dsr.is_some());
    }

    // Two symbols: a set's series is the mean of its cells' (checked against the engine run on
    // each shard alone), and the report agrees with the reference on the written matrix.
    let both = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(grid)
        .data(scratch.location());
    let results = gridtest_tests::run_with(&both, &opts).unwrap();
    let report = results.research().unwrap().clone();
    let (returns, _) = read_returns_parquet(&results.output_dir().join("returns.parquet"));
    let sets: Vec<gridtest::ParamSet> = results.grid().iter().collect();
    let per_shard: Vec<Vec<Vec<f64>>> =
        gridtest_tests::runtime().block_on(async {
            let dataset = scratch.dataset(gridtest::DataKind::Ticks);
            let reader = gridtest::data::ShardReader::try_new(&dataset).unwrap();
            let mut out = Vec::new();
            for shard in results.shards() {
                let data = reader.load(shard).await.unwrap();
                let exec = both.exec_model().clone();
                let (_, days) = gridtest::engine::run_chunk_recording::<
                    gridtest_examples::SmaCrossover,
                >(&data, &sets, &exec);
                out.push(days.per_set);
            }
            out
        });
    for (i, series) in returns.sets().enumerate() {
        for (d, &r) in series.iter().enumerate() {
            let mean = (per_shard[0][i][d] + per_shard[1][i][d]) * 0.5;
            assert!((r - mean).abs() < 1e-15, "set {i} day {d}: {r} vs {mean}");
        }
    }
    let Some(python) = gridtest_tests::research_python("numpy, scipy") else {
        skip(
            "scipy",
            "research::a_sweep_records_daily_returns_that_compound_to_its_results",
            "no Python with numpy and scipy (GRIDTEST_RESEARCH_PYTHON)",
        );
        return;
    };
    let pbo = report.pbo.as_ref().expect("48 days allow a CSCV");
    let wf = report.walk_forward.as_ref().expect("and a walk-forward");
    let reference = run_reference(
        &python,
        &returns,
        report.trials as usize,
        pbo.blocks,
        wf.spec,
    );
    close("SR0", report.benchmark_sharpe, &reference["benchmark"]);
    close(
        "V[SR]",
        report.sharpe_variance,
        &reference["sharpe_variance"],
    );
    close(
        "effective trials",
        report.effective_trials,
        &reference["effective_trials"],
    );
    let dsr = reference["dsr"].as_array().unwrap();
    for best in &report.best {
        close(
            &format!("DSR of set {}", best.set),
            best.dsr,
            &dsr[best.set as usize],
        );
    }
    close("PBO", pbo.probability, &reference["pbo"]["probability"]);
    for (i, (a, b)) in pbo
        .logits
        .iter()
        .zip(reference["pbo"]["logits"].as_array().unwrap())
        .enumerate()
    {
        close(&format!("logit {i}"), *a, b);
    }
    close(
        "walk-forward OOS",
        wf.out_of_sample_sharpe,
        &reference["walk_forward"]["out_of_sample_sharpe"],
    );
}

/// `--rank-by dsr`: the leaderboard (in memory and `leaderboard.csv`, every set) is ordered by
/// the deflated Sharpe ratio of the report at three decimals, best first, then by the Sharpe
/// ratio it deflates — the order of the report's best sets.
#[test]
fn ranking_by_dsr_orders_the_leaderboard_and_its_file() {
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 30,
        ticks_per_day: 300,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let sweep = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(
            gridtest::Grid::new()
                .axis("fast", (2..=24).step_by(2))
                .axis("slow", (10..=80).step_by(10))
                .constrain("fast < slow"),
        )
        .data(scratch.location());
    let opts = gridtest::RunOptions {
        rank_by: gridtest::RankMetric::Dsr,
        ..gridtest_tests::quiet()
    };
    // Without daily returns there is no DSR to rank by: refused before anything runs.
    let without = gridtest::RunOptions {
        returns: gridtest::ReturnsOptions {
            record: gridtest::Recording::Never,
            ..gridtest::ReturnsOptions::default()
        },
        ..opts.clone()
    };
    match gridtest_tests::run_with(&sweep, &without) {
        Err(gridtest::Error::Config { problems }) => {
            assert!(problems[0].contains("--rank-by dsr"), "{problems:?}");
        }
        other => panic!(
            "expected a settings error, got {:?}",
            other.map(|r| r.recorded())
        ),
    }
    let results = gridtest_tests::run_with(&sweep, &opts).unwrap();
    let report = results.research().expect("a report");
    let board = results.leaderboard();
    assert_eq!(board.metric, gridtest::RankMetric::Dsr);
    assert_eq!(board.rows.len(), results.n_sets());
    let deflated: Vec<gridtest::sweep::Deflated> = board
        .rows
        .iter()
        .map(|r| report.deflated[&r.param_set_id])
        .collect();
    let tier = |d: &gridtest::sweep::Deflated| (d.dsr * 1e3).round();
    for w in deflated.windows(2) {
        assert!(tier(&w[0]) >= tier(&w[1]), "in-memory rows by DSR: {w:?}");
        if tier(&w[0]) == tier(&w[1]) {
            assert!(w[0].sharpe >= w[1].sharpe, "then by Sharpe: {w:?}");
        }
    }
    let best: Vec<_> = report.best.iter().map(|b| b.param_set).collect();
    let first: Vec<_> = board
        .rows
        .iter()
        .take(best.len())
        .map(|r| r.param_set_id)
        .collect();
    assert_eq!(
        first, best,
        "the leaderboard's first sets are the report's best"
    );
    for row in &board.rows {
        assert_eq!(row.dsr, report.dsr_of(row.param_set_id));
        assert_eq!(row.score, row.dsr.unwrap(), "the score column is the DSR");
    }
    assert_eq!(board.rows[0].param_set_id, report.best[0].param_set);

    let mut csv = csv::Reader::from_path(results.output_dir().join("leaderboard.csv")).unwrap();
    let headers = csv.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (dsr_at, id_at) = (column("dsr"), column("param_set_id"));
    let rows: Vec<(f64, String)> = csv
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[dsr_at].parse().unwrap(), r[id_at].to_owned())
        })
        .collect();
    assert_eq!(rows.len(), results.n_sets());
    for ((d, id), row) in rows.iter().zip(&board.rows) {
        assert_eq!(*id, row.param_set_id.to_string());
        assert_eq!(Some(*d), row.dsr);
    }
}

/// A resumed sweep's research statistics cover the cells of its earlier run: the daily returns
/// are persisted with each cell in the ledger, so DSR, PBO and the best sets equal those of the
/// sweep run in one go. The earlier run is the first run's ledger cut to every other cell (a
/// run stopped half way; `cluster::sigterm_stops_a_sweep_cleanly_and_a_rerun_resumes_exactly`
/// stops one with a signal).
#[test]
fn research_statistics_survive_a_resume() {
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 40,
        ticks_per_day: 300,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let sweep = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(
            gridtest::Grid::new()
                .axis("fast", (2..=20).step_by(2))
                .axis("slow", (10..=60).step_by(10))
                .constrain("fast < slow"),
        )
        .data(scratch.location());
    let roots = tempfile::tempdir().unwrap();
    let root = |name: &str| roots.path().join(name);
    let opts = |results: &Path| gridtest::RunOptions {
        results: Some(gridtest::storage::Location::parse(&results.display().to_string()).unwrap()),
        ..gridtest_tests::quiet()
    };
    let whole = gridtest_tests::run_with(&sweep, &opts(&root("whole"))).unwrap();
    let reference = whole.research().expect("a report").clone();
    let id = whole.run_info().unwrap().sweep_id.to_string();
    let cells = whole.recorded();

    // The earlier run: its spec, its manifest and half its ledger.
    let kept = gridtest_tests::copy_with_half_its_ledger(&root("whole"), &root("half"), &id, true);
    let ledger = root("half").join("sweeps").join(&id).join("ledger");
    for segment in std::fs::read_dir(ledger).unwrap() {
        let text = std::fs::read_to_string(segment.unwrap().path()).unwrap();
        assert!(
            text.contains("\"day_returns\""),
            "cells persist their returns"
        );
    }
    assert!(kept > 0 && kept < cells, "{kept} of {cells}");

    let resumed = gridtest_tests::run_with(&sweep, &opts(&root("half"))).unwrap();
    assert_eq!(resumed.run_info().unwrap().computed, cells - kept);
    let report = resumed.research().expect("a report");
    assert_eq!(report.sets_with_returns, reference.sets_with_returns);
    assert_eq!(report.sets_with_returns as usize, resumed.n_sets());
    assert_eq!(report.notes, reference.notes);
    // Two symbols: a day's sum over the shards is exact in any order, so every figure is
    // identical.
    assert_eq!(report.deflated, reference.deflated);
    assert_eq!(report.best, reference.best);
    assert_eq!(report.pbo, reference.pbo);
    assert_eq!(report.walk_forward, reference.walk_forward);
}
