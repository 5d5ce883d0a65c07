//! `gridtest::indicators` against pandas (`tests/reference/indicators.py`, run by the Python of
//! `GRIDTEST_RESEARCH_PYTHON`, where `.ci/run` installs pandas): on decimal prices (cents) with
//! runs of repeated values, SMA, EMA, RSI, ATR and the rolling extremes equal pandas' bit for
//! bit, the standard deviation and what is built on it to 1e-12 of the price level; and two
//! SMAs cross (ties included) exactly where pandas' do.

use std::process::Command;

use gridtest::indicators::{
    Atr, Bollinger, Ewm, RollingMax, RollingMin, RollingStd, Rsi, Sma, ZScore,
};
use gridtest_tests::skip;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// 3 000 closes on a cent grid around 100 (a tenth of the moves are 0: repeated prices; every
/// 500th close starts a flat stretch of 30, where the two averages tie), and bars around them.
fn prices() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut cents: i64 = 10_000;
    let (mut close, mut high, mut low) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..3000 {
        let flat = i % 500 < 30;
        if !flat && rng.random_bool(0.9) {
            cents += rng.random_range(-40..=40);
        }
        let c = cents as f64 / 100.0;
        close.push(c);
        high.push((cents + rng.random_range(0..60)) as f64 / 100.0);
        low.push((cents - rng.random_range(0..60)) as f64 / 100.0);
    }
    (close, high, low)
}

fn column(out: &Value, name: &str) -> Vec<f64> {
    out[name]
        .as_array()
        .unwrap_or_else(|| panic!("no column {name}"))
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NAN))
        .collect()
}

/// Same bits (NaN where pandas has NaN).
fn assert_identical(name: &str, ours: &[f64], pandas: &[f64]) {
    assert_eq!(ours.len(), pandas.len(), "{name}");
    for (i, (a, b)) in ours.iter().zip(pandas).enumerate() {
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "{name}[{i}]: ours {a:e}, pandas {b:e}"
        );
    }
}

/// Within `tolerance` (NaN where pandas has NaN).
fn assert_close(name: &str, ours: &[f64], pandas: &[f64], tolerance: f64) {
    assert_eq!(ours.len(), pandas.len(), "{name}");
    for (i, (a, b)) in ours.iter().zip(pandas).enumerate() {
        let same = (a.is_nan() && b.is_nan()) || (a - b).abs() <= tolerance;
        assert!(same, "{name}[{i}]: ours {a:e}, pandas {b:e}");
    }
}

#[test]
fn indicators_equal_pandas_on_decimal_prices() {
    let test = "indicators::indicators_equal_pandas_on_decimal_prices";
    let Some(python) = gridtest_tests::research_python("pandas") else {
        skip(
            "pandas",
            test,
            "no Python with pandas (GRIDTEST_RESEARCH_PYTHON)",
        );
        return;
    };
    let (close, high, low) = prices();
    let (n, fast, slow, k) = (14, 10, 20, 2.0);
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.json"), dir.path().join("out.json"));
    let spec = json!({"close": close, "high": high, "low": low, "window": n, "fast": fast,
        "slow": slow, "k": k});
    std::fs::write(&input, spec.to_string()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/reference/indicators.py");
    let run = Command::new(python)
        .arg(script)
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let pandas: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    eprintln!("pandas {}", pandas["pandas"]);

    let each =
        |mut f: Box<dyn FnMut(usize) -> f64>| (0..close.len()).map(&mut f).collect::<Vec<f64>>();
    let (mut sf, mut ss) = (Sma::new(fast), Sma::new(slow));
    let sma_fast = each(Box::new(|i| sf.push(close[i])));
    let sma_slow = each(Box::new(|i| ss.push(close[i])));
    assert_identical("sma_fast", &sma_fast, &column(&pandas, "sma_fast"));
    assert_identical("sma_slow", &sma_slow, &column(&pandas, "sma_slow"));
    let mut ema = Ewm::span(n);
    assert_identical(
        "ema",
        &each(Box::new(|i| ema.push(close[i]))),
        &column(&pandas, "ema"),
    );
    let mut max = RollingMax::new(n);
    assert_identical(
        "max",
        &each(Box::new(|i| max.push(close[i]))),
        &column(&pandas, "max"),
    );
    let mut min = RollingMin::new(n);
    assert_identical(
        "min",
        &each(Box::new(|i| min.push(close[i]))),
        &column(&pandas, "min"),
    );
    let mut rsi = Rsi::new(n);
    assert_identical(
        "rsi",
        &each(Box::new(|i| rsi.push(close[i]))),
        &column(&pandas, "rsi"),
    );
    let mut atr = Atr::new(n);
    let ours_atr = each(Box::new(|i| atr.push(high[i], low[i], close[i])));
    assert_identical("atr", &ours_atr, &column(&pandas, "atr"));

    // Standard deviations: the same update, to rounding (1e-12 of a price of 100).
    let tolerance = 1e-10;
    let mut sd = RollingStd::new(n);
    assert_close(
        "std",
        &each(Box::new(|i| sd.push(close[i]))),
        &column(&pandas, "std"),
        tolerance,
    );
    let mut bands = Bollinger::new(n, k);
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    for &c in &close {
        let (l, _, u) = bands.push(c);
        lower.push(l);
        upper.push(u);
    }
    assert_close("upper", &upper, &column(&pandas, "upper"), 3.0 * tolerance);
    assert_close("lower", &lower, &column(&pandas, "lower"), 3.0 * tolerance);
    let mut z = ZScore::new(n);
    let zs = each(Box::new(|i| z.push(close[i])));
    // A z-score divides by the deviation: its error is the deviation's, relative to it.
    let (pandas_z, pandas_sd) = (column(&pandas, "zscore"), column(&pandas, "std"));
    for (i, (a, b)) in zs.iter().zip(&pandas_z).enumerate() {
        if b.is_finite() {
            let allowed = tolerance * b.abs() / pandas_sd[i] + 1e-12;
            assert!((a - b).abs() <= allowed, "zscore[{i}]: {a} vs {b}");
        }
    }

    // The crossovers of the two averages, ties included, are pandas'.
    let crosses = |f: &[f64], s: &[f64]| -> Vec<(usize, std::cmp::Ordering)> {
        f.iter()
            .zip(s)
            .enumerate()
            .filter_map(|(i, (a, b))| a.partial_cmp(b).map(|o| (i, o)))
            .collect()
    };
    let ties = crosses(&sma_fast, &sma_slow)
        .iter()
        .filter(|(_, o)| o.is_eq())
        .count();
    assert!(ties > 0, "the data have ties between the averages");
    assert_eq!(
        crosses(&sma_fast, &sma_slow),
        crosses(&column(&pandas, "sma_fast"), &column(&pandas, "sma_slow"))
    );
}
