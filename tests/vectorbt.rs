//! The per-event ratio conventions against vectorbt (`tests/reference/vectorbt_peer.py`, run
//! by the Python of `GRIDTEST_RESEARCH_PYTHON`, where `.ci/run` installs vectorbt from PyPI):
//! vectorbt fills each cell's orders at the events where gridtest filled them, so its value
//! series is the cell's equity; with `FirstReturn::Zero` (its first return, 0, counted) and
//! `ZeroDeviation::Infinite` (its division by a zero deviation) the Sharpe and Sortino ratios,
//! total return and drawdown agree to 1e-9, and without them the ratios differ.

use std::process::Command;

use gridtest::data::{Shard, ShardData};
use gridtest::engine::{FirstReturn, ZeroDeviation, run_chunk, trace_cell};
use gridtest::metrics::Metrics;
use gridtest::prelude::*;
use gridtest::{ExecModel, ParamSet};
use gridtest_examples::SmaCrossover;
use gridtest_tests::skip;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::{Value, json};

#[derive(Params, Clone, Debug)]
struct NeverParams {
    level: f64,
}

/// Holds `level` of its equity throughout: with 0, it never trades and its returns are all 0.
struct Never(f64);

#[gridtest::strategy(name = "vectorbt_never")]
impl Strategy for Never {
    type Params = NeverParams;
    type Feed = Ticks;
    fn new(p: &NeverParams) -> Self {
        Self(p.level)
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        self.0
    }
}

/// Periods a year the ratios are annualised with (vectorbt's `year_freq` over its `freq`).
const PER_YEAR: f64 = 252_000.0;

/// Two days of a random walk of 1 500 ticks each, and its prices.
fn ticks() -> (ShardData, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let step = Normal::new(0.0, 0.002).unwrap();
    let mut price = 100.0_f64;
    let prices: Vec<f64> = (0..3_000)
        .map(|_| {
            price *= 1.0 + step.sample(&mut rng);
            price
        })
        .collect();
    const DAY: i64 = 86_400_000_000_000;
    let ts = (0..3_000_i64).map(|i| (i / 1_500) * DAY + i).collect();
    let shard = Shard::new(
        "RW",
        "1970-01-01".parse().unwrap(),
        "1970-01-02".parse().unwrap(),
    );
    let data = ShardData::from_ticks(shard, ts, prices.clone(), vec![1.0; 3_000], 2).unwrap();
    (data, prices)
}

fn f(v: &Value) -> f64 {
    f64::from_bits(v.as_u64().expect("float bits"))
}

/// Equal to 1e-9 of the larger, or both NaN, or the same infinity.
fn same(what: &str, ours: f64, theirs: f64) {
    let ok = if ours.is_finite() && theirs.is_finite() {
        (ours - theirs).abs() <= 1e-9 * ours.abs().max(theirs.abs()).max(1e-12)
    } else {
        ours == theirs || (ours.is_nan() && theirs.is_nan())
    };
    assert!(ok, "{what}: gridtest {ours:e}, vectorbt {theirs:e}");
}

fn exec(first: FirstReturn, zero: ZeroDeviation) -> ExecModel {
    ExecModel::default()
        .with_commission_bps(0.0)
        .with_periods_per_year(PER_YEAR)
        .with_first_return(first)
        .with_zero_deviation(zero)
}

#[test]
fn per_event_ratios_follow_vectorbt_where_asked() {
    let test = "vectorbt::per_event_ratios_follow_vectorbt_where_asked";
    let Some(python) = gridtest_tests::research_python("vectorbt") else {
        skip(
            "vectorbt",
            test,
            "no Python with vectorbt (GRIDTEST_RESEARCH_PYTHON)",
        );
        return;
    };
    let (data, prices) = ticks();
    let vectorbt = exec(FirstReturn::Zero, ZeroDeviation::Infinite);
    let sets: Vec<ParamSet> = [(5, 40), (10, 100), (30, 200)]
        .iter()
        .map(|&(fast, slow)| {
            ParamSet::new([
                ("fast", ParamValue::Int(fast)),
                ("slow", ParamValue::Int(slow)),
            ])
        })
        .collect();
    let mut cells: Vec<(String, Metrics, Metrics)> = Vec::new();
    let mut orders = Vec::new();
    let plain = exec(FirstReturn::Skipped, ZeroDeviation::Zero);
    let ours = run_chunk::<SmaCrossover>(&data, &sets, &vectorbt);
    let defaults = run_chunk::<SmaCrossover>(&data, &sets, &plain);
    for ((set, m), d) in sets.iter().zip(ours).zip(defaults) {
        let (_, trace) = trace_cell::<SmaCrossover>(&data, set, &vectorbt);
        let fills: Vec<Value> = trace
            .fills
            .iter()
            .map(|f| json!([f.index, f.weight]))
            .collect();
        assert!(fills.len() > 10, "[{set}] trades");
        orders.push(json!({ "name": set.to_string(), "orders": fills }));
        cells.push((set.to_string(), m.unwrap(), d.unwrap()));
    }
    let never = ParamSet::new([("level", ParamValue::Float(0.0))]);
    let n = run_chunk::<Never>(&data, std::slice::from_ref(&never), &vectorbt);
    let d = run_chunk::<Never>(&data, std::slice::from_ref(&never), &plain);
    orders.push(json!({ "name": "never", "orders": [] }));
    cells.push((
        "never".to_owned(),
        n[0].clone().unwrap(),
        d[0].clone().unwrap(),
    ));

    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.json"), dir.path().join("out.json"));
    let spec = json!({ "prices": prices, "per_year": PER_YEAR, "cells": orders });
    std::fs::write(&input, serde_json::to_vec(&spec).unwrap()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/reference/vectorbt_peer.py");
    let run = Command::new(&python)
        .args([script.as_ref(), input.as_os_str(), output.as_os_str()])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let peer: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    for (name, m, default) in &cells {
        let theirs = &peer[name];
        assert_eq!(
            theirs["returns"].as_u64(),
            Some(3_000),
            "{name}: one return per event"
        );
        assert_eq!(f(&theirs["first"]), 0.0, "{name}: the first return");
        same(
            &format!("{name}: total return"),
            m.total_return,
            f(&theirs["total_return"]),
        );
        same(
            &format!("{name}: max drawdown"),
            m.max_drawdown,
            f(&theirs["max_drawdown"]),
        );
        same(&format!("{name}: sharpe"), m.sharpe, f(&theirs["sharpe"]));
        same(
            &format!("{name}: sortino"),
            m.sortino,
            f(&theirs["sortino"]),
        );
        assert_eq!(
            m.total_return, default.total_return,
            "{name}: the same equity"
        );
        if name == "never" {
            assert_eq!(
                (m.sharpe, m.sortino),
                (f64::INFINITY, f64::INFINITY),
                "{name}"
            );
            assert_eq!(
                (default.sharpe, default.sortino),
                (0.0, 0.0),
                "{name}: default"
            );
        } else {
            let offset = (m.sharpe - default.sharpe).abs() / default.sharpe.abs();
            assert!(
                offset > 1e-6 && offset < 1e-2,
                "{name}: r[0] moves Sharpe by {offset:e}"
            );
        }
    }
}
