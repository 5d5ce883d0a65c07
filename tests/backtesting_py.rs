//! gridtest's orders path against backtesting.py 0.6 (`tests/reference/backtesting_peer.py`,
//! run by the Python of `GRIDTEST_RESEARCH_PYTHON`, where `.ci/run` installs backtesting from
//! PyPI): on the GOOG daily bars that ship inside the package, the README's `SmaCross`, its
//! optimiser grid, and strategies with stop-loss, take-profit, stop-limit and limit entries
//! give the same trades (size, entry and exit bar, prices bit for bit, P&L and return) and the
//! same return, drawdown, Sharpe, Sortino, win rate and profit factor to 1e-9, with the settings
//! `docs/execution-model.md` lists for backtesting.py.

use std::process::Command;

use gridtest::broker::{Broker, BrokerModel, ClosedTrade, ExitReason, Order, Size};
use gridtest::data::{Shard, ShardData};
use gridtest::engine::{
    ExposureBasis, Keep, ProfitFactorBasis, RatioConvention, Trade, run_chunk, run_chunk_with,
    trace_cell,
};
use gridtest::indicators::Sma;
use gridtest::metrics::{DrawdownSign, Metrics};
use gridtest::prelude::*;
use gridtest::{DataKind, ExecModel};
use gridtest_tests::skip;
use serde_json::Value;

/// backtesting.py's default order size (`buy()`): `1 − ε` of the available equity.
const ALL_IN: Size = Size::Equity(1.0 - f64::EPSILON);

#[derive(Params, Clone, Debug)]
pub(crate) struct Windows {
    pub(crate) n1: usize,
    pub(crate) n2: usize,
}

/// Two SMAs of the close, and whether the first just crossed above or below the second
/// (backtesting.py's `crossover`: strictly below, then strictly above).
struct Cross {
    ma1: Sma,
    ma2: Sma,
    previous: (f64, f64),
}

impl Cross {
    fn new(p: &Windows) -> Self {
        Self {
            ma1: Sma::new(p.n1),
            ma2: Sma::new(p.n2),
            previous: (f64::NAN, f64::NAN),
        }
    }

    fn update(&mut self, close: f64) -> (bool, bool) {
        let (a, b) = (self.ma1.push(close), self.ma2.push(close));
        let (pa, pb) = std::mem::replace(&mut self.previous, (a, b));
        (pa < pb && a > b, pb < pa && b > a)
    }
}

/// The README's `SmaCross` (with exclusive orders).
pub(crate) struct SmaCross(Cross);

#[gridtest::strategy(name = "peer_sma_cross")]
impl Strategy for SmaCross {
    type Params = Windows;
    type Feed = Bars;
    fn new(p: &Windows) -> Self {
        Self(Cross::new(p))
    }
    fn on_orders(&mut self, now: &Cursor<'_, Bars>, broker: &mut Broker) {
        match self.0.update(now.close()) {
            (true, _) => broker.submit(Order::buy(ALL_IN)),
            (_, true) => broker.submit(Order::sell(ALL_IN)),
            _ => {}
        }
    }
}

/// Market entries with a stop-loss 5 % and a take-profit 10 % away; a cross the other way
/// closes the position first.
pub(crate) struct Brackets(Cross);

#[gridtest::strategy(name = "peer_brackets")]
impl Strategy for Brackets {
    type Params = Windows;
    type Feed = Bars;
    fn new(p: &Windows) -> Self {
        Self(Cross::new(p))
    }
    fn on_orders(&mut self, now: &Cursor<'_, Bars>, broker: &mut Broker) {
        let (c, position) = (now.close(), broker.position());
        match self.0.update(c) {
            (true, _) => {
                if position < 0.0 {
                    broker.close();
                }
                if position <= 0.0 {
                    let o = Order::buy(ALL_IN).stop_loss(c * (1.0 - 0.05));
                    broker.submit(o.take_profit(c * (1.0 + 0.10)));
                }
            }
            (_, true) => {
                if position > 0.0 {
                    broker.close();
                }
                if position >= 0.0 {
                    let o = Order::sell(ALL_IN).stop_loss(c * (1.0 + 0.05));
                    broker.submit(o.take_profit(c * (1.0 - 0.10)));
                }
            }
            _ => {}
        }
    }
}

/// Stop-limit entries long, limit entries short, with exits; a cross the other way cancels
/// the waiting entry and closes the position.
pub(crate) struct Entries(Cross);

#[gridtest::strategy(name = "peer_entries")]
impl Strategy for Entries {
    type Params = Windows;
    type Feed = Bars;
    fn new(p: &Windows) -> Self {
        Self(Cross::new(p))
    }
    fn on_orders(&mut self, now: &Cursor<'_, Bars>, broker: &mut Broker) {
        let (h, l, c) = (now.high(), now.low(), now.close());
        let (up, down) = self.0.update(c);
        if up || down {
            broker.cancel_orders();
            broker.close();
        }
        if up {
            let o = Order::buy(ALL_IN).stop(h * 1.002).limit(h * 1.01);
            broker.submit(o.stop_loss(l * 0.96).take_profit(h * 1.06));
        } else if down {
            let o = Order::sell(ALL_IN).limit(c * 1.003);
            broker.submit(o.stop_loss(c * 1.05).take_profit(c * 0.94));
        }
    }
}

/// The settings that reproduce `Backtest(data, cash=10_000, commission=0.002, …)`.
fn backtesting_py(exclusive_orders: bool) -> ExecModel {
    let broker = BrokerModel::default()
        .with_initial_cash(10_000.0)
        .with_exclusive_orders(exclusive_orders);
    ExecModel::default()
        .with_commission_bps(20.0)
        .with_ratios(RatioConvention::Geometric)
        .with_profit_factor(ProfitFactorBasis::Returns)
        .with_drawdown_sign(DrawdownSign::Negative)
        .with_exposure(ExposureBasis::ClosedTrades)
        .with_broker(broker)
}

fn float(v: &Value) -> f64 {
    f64::from_bits(v.as_u64().expect("float bits"))
}

/// The GOOG bars as a shard.
fn goog(out: &Value) -> ShardData {
    let bars = &out["bars"];
    let dates: Vec<chrono::NaiveDate> = bars["date"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().parse().unwrap())
        .collect();
    let ts = dates
        .iter()
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp() * 1_000_000_000)
        .collect();
    let cols = ["open", "high", "low", "close", "volume"]
        .iter()
        .map(|c| bars[*c].as_array().unwrap().iter().map(float).collect())
        .collect();
    let shard = Shard::new("GOOG", dates[0], *dates.last().unwrap());
    let n_days = u32::try_from(dates.len()).unwrap();
    ShardData::from_columns(shard, DataKind::Bars, ts, cols, n_days).unwrap()
}

fn close_to(what: &str, ours: f64, theirs: f64) {
    let scale = ours.abs().max(theirs.abs()).max(f64::MIN_POSITIVE);
    assert!(
        (ours - theirs).abs() <= 1e-9 * scale,
        "{what}: gridtest {ours:e}, backtesting.py {theirs:e}"
    );
}

fn assert_same_trades(run: &str, ours: &[ClosedTrade], theirs: &Value) {
    let theirs = theirs.as_array().unwrap();
    assert_eq!(ours.len(), theirs.len(), "{run}: closed trades");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        let at = format!("{run}, trade {i}");
        assert_eq!(a.size, float(&b["size"]), "{at}: size");
        assert_eq!(
            a.entry_index,
            b["entry_bar"].as_u64().unwrap(),
            "{at}: entry bar"
        );
        assert_eq!(
            a.exit_index,
            b["exit_bar"].as_u64().unwrap(),
            "{at}: exit bar"
        );
        assert_eq!(a.entry_price, float(&b["entry_price"]), "{at}: entry price");
        assert_eq!(a.exit_price, float(&b["exit_price"]), "{at}: exit price");
        close_to(&format!("{at}: pnl"), a.pnl, float(&b["pnl"]));
        close_to(&format!("{at}: return"), a.ret, float(&b["ret"]));
    }
}

/// A cell's round trips as a sweep keeps them (money over the initial cash `cash`) against
/// backtesting.py's closed trades (its `_trades` lists no trade still open at the end).
fn assert_same_round_trips(run: &str, ours: &[Trade], theirs: &Value, cash: f64) {
    assert!(
        ours.iter().filter(|t| t.is_open()).count() <= 1,
        "{run}: open trades"
    );
    let closed: Vec<ClosedTrade> = ours
        .iter()
        .filter(|t| !t.is_open())
        .map(|t| {
            assert!(t.entry_time < t.exit_time.unwrap(), "{run}: times of {t:?}");
            ClosedTrade {
                size: t.size,
                entry_index: t.entry_index,
                exit_index: t.exit_index.unwrap(),
                entry_price: t.entry_price,
                exit_price: t.exit_price.unwrap(),
                pnl: t.pnl * cash,
                ret: t.ret,
                fees: t.fees * cash,
                reason: ExitReason::Order,
            }
        })
        .collect();
    assert_same_trades(run, &closed, theirs);
}

/// backtesting.py's statistics of a run against ours, drawdowns shown as `exec` shows them
/// (backtesting.py's `Max. Drawdown [%]` is negative).
fn assert_same_stats(run: &str, m: &Metrics, s: &Value, exec: &ExecModel) {
    close_to(
        &format!("{run}: return"),
        m.total_return,
        float(&s["return"]),
    );
    close_to(
        &format!("{run}: drawdown"),
        exec.drawdown_sign.show(m.max_drawdown),
        float(&s["max_drawdown"]),
    );
    close_to(&format!("{run}: sharpe"), m.sharpe, float(&s["sharpe"]));
    close_to(&format!("{run}: sortino"), m.sortino, float(&s["sortino"]));
    close_to(
        &format!("{run}: win rate"),
        m.win_rate,
        float(&s["win_rate"]),
    );
    let pf = float(&s["profit_factor"]);
    if pf.is_finite() {
        close_to(&format!("{run}: profit factor"), m.profit_factor, pf);
    }
    assert_eq!(
        m.round_trips,
        s["trades"].as_u64().unwrap(),
        "{run}: # trades"
    );
    close_to(
        &format!("{run}: exposure time"),
        m.exposure,
        float(&s["exposure"]),
    );
}

fn set(run: &Value) -> ParamSet {
    let p = &run["params"];
    let n = |k: &str| ParamValue::Int(p[k].as_i64().unwrap_or(if k == "n1" { 10 } else { 20 }));
    ParamSet::new([("n1", n("n1")), ("n2", n("n2"))])
}

/// Runs `S` on one parameter set, traced, and checks it against backtesting.py's run.
fn check_run<S: Strategy>(name: &str, data: &ShardData, exec: &ExecModel, run: &Value) {
    let set = set(run);
    let (outcome, trace) = trace_cell::<S>(data, &set, exec);
    let m = outcome.unwrap_or_else(|e| panic!("{name} [{set}]: {e}"));
    let label = format!("{name} [{set}]");
    assert_same_trades(&label, &trace.trades, &run["trades"]);
    assert_same_stats(&label, &m, &run["stats"], exec);
}

#[test]
fn the_orders_path_trades_like_backtesting_py_on_goog() {
    let test = "backtesting_py::the_orders_path_trades_like_backtesting_py_on_goog";
    let Some(python) = gridtest_tests::research_python("backtesting") else {
        skip(
            "backtesting",
            test,
            "no Python with backtesting.py (GRIDTEST_RESEARCH_PYTHON)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("peer.json");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/reference/backtesting_peer.py");
    let status = Command::new(&python)
        .arg(script)
        .arg(&json)
        .status()
        .unwrap();
    assert!(status.success(), "{script} failed");
    let out: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let data = goog(&out);

    let exclusive = backtesting_py(true);
    check_run::<SmaCross>("readme SmaCross", &data, &exclusive, &out["readme"]);
    assert_eq!(out["readme"]["trades"].as_array().unwrap().len(), 93);

    // The optimiser grid: every cell's statistics from one chunk, trades cell by cell and
    // every cell's round trips from one chunk (what a sweep with --trades writes), and the
    // same best set by final equity.
    let grid = out["grid"].as_array().unwrap();
    let sets: Vec<ParamSet> = grid.iter().map(set).collect();
    let cells = run_chunk::<SmaCross>(&data, &sets, &exclusive);
    let keep = Keep {
        days: false,
        trades: true,
    };
    let kept = run_chunk_with::<SmaCross>(&data, &sets, &exclusive, keep);
    assert_eq!(kept.cells, cells, "keeping trades changes no metric");
    let mut best = (f64::NEG_INFINITY, 0);
    for (i, (cell, run)) in cells.iter().zip(grid).enumerate() {
        let m = cell.as_ref().unwrap();
        assert_same_stats(&format!("grid [{}]", sets[i]), m, &run["stats"], &exclusive);
        check_run::<SmaCross>("grid", &data, &exclusive, run);
        let label = format!("grid [{}], kept", sets[i]);
        assert_same_round_trips(&label, &kept.trades[i], &run["trades"], 10_000.0);
        if m.total_return > best.0 {
            best = (m.total_return, i);
        }
    }
    assert_eq!(
        sets[best.1],
        set(&json_params(&out["optimised"])),
        "optimised set"
    );

    let plain = backtesting_py(false);
    for run in out["brackets"].as_array().unwrap() {
        check_run::<Brackets>("brackets", &data, &plain, run);
    }
    for run in out["entries"].as_array().unwrap() {
        check_run::<Entries>("entries", &data, &plain, run);
    }
}

fn json_params(p: &Value) -> Value {
    serde_json::json!({ "params": p })
}
