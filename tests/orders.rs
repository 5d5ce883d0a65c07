//! A strategy of the orders path through a whole sweep: its cells equal the engine's on the
//! loaded shards, the sweep is persisted and replayed bit for bit, a traced cell's closed trades
//! and open position add up to its return, and a strategy that places an invalid order or
//! panics fails only its own cells, naming the event.

use gridtest::broker::{Broker, BrokerModel, Order, Size};
use gridtest::data::{Dataset, ShardReader};
use gridtest::engine::{FailureKind, run_chunk};
use gridtest::prelude::*;
use gridtest::replay::{ReplayScope, replay, trace};
use gridtest::storage::Location;
use gridtest::{CellKey, DataKind, RunOptions};
use gridtest_examples::SmaCrossoverOrders;
use gridtest_tests::{quiet, run_with, runtime, w1_smoke};

fn exec() -> ExecModel {
    let broker = BrokerModel::default()
        .with_initial_cash(1_000_000.0)
        .with_commission_per_order(1.0);
    ExecModel::default()
        .with_commission_bps(2.0)
        .with_broker(broker)
}

fn grid() -> Grid {
    Grid::new().axis("fast", [10, 20]).axis("slow", [60, 200])
}

#[test]
fn an_orders_sweep_is_persisted_replayed_and_traced() {
    let (data, _) = w1_smoke();
    let root = tempfile::tempdir().unwrap();
    let location = Location::parse(&root.path().display().to_string()).unwrap();
    let sweep = Sweep::of::<SmaCrossoverOrders>()
        .grid(grid())
        .data(data.display().to_string())
        .exec(exec());
    let opts = RunOptions {
        results: Some(location.clone()),
        ..quiet()
    };
    let results = run_with(&sweep, &opts).expect("the sweep runs");
    assert_eq!(results.failed(), 0);
    assert_eq!(results.recorded(), 4 * results.shards().len());
    let sweep_id = results.run_info().expect("persisted").sweep_id.clone();

    // The sweep's cells are the engine's on each loaded shard.
    let dataset = Dataset::try_new(&data.display().to_string(), DataKind::Ticks).unwrap();
    let sets: Vec<ParamSet> = grid().iter().collect();
    let cells = results.cells().unwrap();
    let rt = runtime();
    for shard in results.shards() {
        let loaded = rt
            .block_on(ShardReader::try_new(&dataset).unwrap().load(shard))
            .unwrap();
        let direct = run_chunk::<SmaCrossoverOrders>(&loaded, &sets, &exec());
        for (set, outcome) in sets.iter().zip(direct) {
            let key = CellKey {
                shard: shard.id(),
                param_set: set.id(),
            };
            let m = outcome.unwrap();
            assert!(m.round_trips > 0, "[{set}] on {} trades", shard.id());
            assert_eq!(
                cells[&key].as_ref().unwrap(),
                &m,
                "[{set}] on {}",
                shard.id()
            );
        }
    }

    let report = rt
        .block_on(replay(&location, &sweep_id, &ReplayScope::All, false))
        .unwrap();
    assert_eq!((report.cells, report.identical), (cells.len(), cells.len()));

    // A traced cell: the closed trades' P&L plus the open trade's mark is the return.
    let set = ParamSet::new([("fast", ParamValue::Int(10)), ("slow", ParamValue::Int(60))]);
    let symbol = results.shards()[0].symbol().to_owned();
    let traced = rt
        .block_on(trace(&location, &sweep_id, (set.id(), &symbol), false))
        .unwrap();
    assert!(traced.identical);
    let m = traced.outcome.as_ref().unwrap();
    let closed: f64 = traced.trace.trades.iter().map(|t| t.pnl).sum();
    assert_eq!(traced.trace.trades.len() as u64, m.round_trips);
    let end = traced.trace.equity.last().unwrap().1;
    assert!(
        (end - (1.0 + m.total_return)).abs() < 1e-12,
        "the equity curve ends at the return: {end} vs {}",
        m.total_return
    );
    let open = (end - 1.0) * 1_000_000.0 - closed;
    if m.open_at_end {
        assert!(open.abs() > 0.0);
    } else {
        assert!(open.abs() < 1e-6, "flat at the end: {open}");
    }
}

#[derive(Params, Clone, Debug)]
pub(crate) struct Fault {
    pub(crate) at: i64,
    pub(crate) panic: bool,
}

/// Buys at event 1; at event `at` places an invalid order (or panics).
pub(crate) struct Faulty(Fault);

#[gridtest::strategy(name = "orders_faulty")]
impl Strategy for Faulty {
    type Params = Fault;
    type Feed = Ticks;
    fn new(p: &Fault) -> Self {
        Self(p.clone())
    }
    fn on_orders(&mut self, now: &Cursor<'_, Ticks>, broker: &mut Broker) {
        let i = now.index() as i64;
        if i == 1 {
            broker.submit(Order::buy(Size::Equity(0.5)));
        }
        if i == self.0.at {
            assert!(!self.0.panic, "fault at event {i}");
            broker.submit(Order::sell(Size::Units(-3.0)));
        }
    }
}

#[test]
fn a_bad_order_or_a_panic_fails_only_its_cell_naming_the_event() {
    let shard = gridtest::data::Shard::new(
        "DEMO",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let prices: Vec<f64> = (0..100).map(|i| 100.0 + f64::from(i % 7)).collect();
    let ts = (1..=100).collect();
    let data = gridtest::data::ShardData::from_ticks(shard, ts, prices, vec![1.0; 100], 1).unwrap();
    let set = |at: i64, panic: bool| {
        ParamSet::new([
            ("at", ParamValue::Int(at)),
            ("panic", ParamValue::Bool(panic)),
        ])
    };
    let sets = [set(50, false), set(60, true), set(1000, false)];
    let cells = run_chunk::<Faulty>(&data, &sets, &exec());
    let bad = cells[0].as_ref().unwrap_err();
    assert_eq!(bad.kind, FailureKind::BadTarget);
    assert!(bad.message.contains("at event 50"), "{bad}");
    assert!(bad.message.contains("not a positive number"), "{bad}");
    let panicked = cells[1].as_ref().unwrap_err();
    assert_eq!(panicked.kind, FailureKind::Panic);
    assert!(panicked.message.contains("fault at event 60"), "{panicked}");
    let fine = cells[2].as_ref().unwrap();
    assert!(fine.open_at_end && fine.round_trips == 0 && fine.trades == 1);
}

/// A random walk of daily bars around 100.
fn walk_bars(n: usize) -> gridtest::data::ShardData {
    let (mut p, mut cols) = (100.0f64, vec![Vec::new(); 5]);
    let mut state = 7u64;
    let mut unit = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for _ in 0..n {
        let open = p * (1.0 + 0.01 * (unit() - 0.5));
        let close = open * (1.0 + 0.03 * (unit() - 0.48));
        let high = open.max(close) * (1.0 + 0.01 * unit());
        let low = open.min(close) * (1.0 - 0.01 * unit());
        for (c, v) in cols.iter_mut().zip([open, high, low, close, 1000.0]) {
            c.push(v);
        }
        p = close;
    }
    let day = 86_400_000_000_000i64;
    let ts = (0..n as i64).map(|d| 19_724 * day + d * day).collect();
    let first: chrono::NaiveDate = "2024-01-02".parse().unwrap();
    let last = first + chrono::TimeDelta::days(n as i64 - 1);
    let shard = gridtest::data::Shard::new("WALK", first, last);
    let days = u32::try_from(n).unwrap();
    gridtest::data::ShardData::from_columns(shard, DataKind::Bars, ts, cols, days).unwrap()
}

/// The README's orders strategy on bars: it trades, both of its exits fire, and its closed
/// trades and open position add up to its return.
#[test]
fn the_readme_orders_strategy_exits_by_stop_and_by_target() {
    use gridtest::broker::ExitReason;
    use gridtest::engine::trace_cell;
    use gridtest_examples::BreakoutOrders;
    let data = walk_bars(1500);
    let (mut stops, mut targets) = (0, 0);
    for window in [10i64, 20, 40] {
        let set = ParamSet::new([
            ("window", ParamValue::Int(window)),
            ("stop", ParamValue::Float(0.02)),
        ]);
        let (outcome, trace) = trace_cell::<BreakoutOrders>(&data, &set, &exec());
        let m = outcome.unwrap();
        assert!(m.round_trips > 5, "[{set}] trades: {m:?}");
        stops += trace
            .trades
            .iter()
            .filter(|t| t.reason == ExitReason::StopLoss)
            .count();
        targets += trace
            .trades
            .iter()
            .filter(|t| t.reason == ExitReason::TakeProfit)
            .count();
        let closed: f64 = trace.trades.iter().map(|t| t.pnl).sum();
        if !m.open_at_end {
            let pnl = m.total_return * 1_000_000.0;
            assert!(
                (pnl - closed).abs() < 1e-6 * pnl.abs().max(1.0),
                "[{set}] {pnl} vs {closed}"
            );
        }
        for t in &trace.trades {
            assert!(t.size > 0.0 && t.exit_index >= t.entry_index, "{t:?}");
        }
    }
    assert!(
        stops > 0 && targets > 0,
        "stop-losses {stops}, take-profits {targets}"
    );
}
