//! Shared indicator series: strategies that declare their indicators as shared series (shared
//! means, pandas' indicators, their own) decide exactly as those that keep them per lane (every
//! cell bit-identical, on the targets and the orders paths), W1 still matches its reference, and a shared series that panics fails only
//! the cells that read it, naming it.

use gridtest::data::synth::SynthSpec;
use gridtest::prelude::*;
use gridtest::{CellOutcome, SweepResults};

use gridtest_examples::{
    Breakout, BreakoutShared, IndicatorMix, IndicatorMixShared, Momentum, MomentumShared,
    SmaCrossover, SmaCrossoverIndicators, SmaCrossoverOrders, SmaCrossoverShared, SmaParams,
};
use gridtest_tests::{Scratch, compare_w1, read_w1_csv, run, w1_grid, w1_smoke, w1_table};

/// Every cell of `a` equals the same cell of `b`, bit for bit.
fn assert_same_cells(a: &SweepResults, b: &SweepResults, cells: usize) {
    let (a, b) = (a.cells().unwrap(), b.cells().unwrap());
    assert_eq!(a.len(), cells);
    assert_eq!(a.len(), b.len());
    let failed = a.values().filter(|o| o.is_err()).count();
    assert_eq!(failed, 0, "{:?}", a.values().find(|o| o.is_err()));
    for (key, outcome) in &a {
        let other: &CellOutcome = &b[key];
        let (x, y) = (outcome.as_ref().unwrap(), other.as_ref().unwrap());
        assert_eq!(x.trades, y.trades, "{key:?}");
        assert_eq!(
            x.total_return.to_bits(),
            y.total_return.to_bits(),
            "{key:?}"
        );
        assert_eq!(
            x.max_drawdown.to_bits(),
            y.max_drawdown.to_bits(),
            "{key:?}"
        );
        assert_eq!(x.sharpe.to_bits(), y.sharpe.to_bits(), "{key:?}");
        // Every metric, NaN included (a set that never closed a trade has no win rate).
        assert_eq!(format!("{x:?}"), format!("{y:?}"), "{key:?}");
    }
}

/// Shared means, and the README's first form (pandas' rolling means as shared `Indicator`s,
/// no warm-up count): W1's cells bit for bit, and its reference.
#[test]
fn shared_means_and_the_readme_form_reproduce_w1_bit_for_bit() {
    let (data, reference) = w1_smoke();
    let sweep = |s: Sweep| {
        s.grid(w1_grid())
            .data(data.display().to_string())
            .commission_bps(1.0)
    };
    let own = run(&sweep(Sweep::of::<SmaCrossover>()));
    let forms = [
        Sweep::of::<SmaCrossoverShared>(),
        Sweep::of::<SmaCrossoverIndicators>(),
    ];
    for form in forms {
        let shared = run(&sweep(form));
        assert_same_cells(&shared, &own, 2 * 955);
        let diff = compare_w1(&w1_table(&shared), &read_w1_csv(&reference)).unwrap();
        assert_eq!(diff.cells, 1910);
        assert_eq!(diff.total_return_rel, 0.0);
        assert_eq!(diff.max_drawdown_abs, 0.0);
        assert!(diff.sharpe_rel < 2e-11, "{diff:?}");
    }
}

/// Two symbols of 2 000 bars each (two days), generated.
fn two_symbols_of_bars() -> Scratch {
    let bars = Scratch::new();
    bars.synth(&SynthSpec {
        symbols: 2,
        days: 2,
        ticks_per_day: 20_000,
        ticks_per_bar: Some(20),
        ..SynthSpec::default()
    });
    bars
}

/// Eight pandas indicators (EMA, z-score, rolling max and min of other columns, RSI, ATR,
/// both Bollinger bands) shared give the cells of the same indicators kept per set, on bars.
#[test]
fn shared_pandas_indicators_give_the_cells_of_per_set_ones() {
    let bars = two_symbols_of_bars();
    let grid = Grid::new()
        .axis("window", [10, 30])
        .axis("periods", [7, 14])
        .axis("k", [1.5, 2.0]);
    let sweep = |s: Sweep| {
        s.grid(grid.clone())
            .data(bars.location())
            .commission_bps(1.0)
    };
    let own = run(&sweep(Sweep::of::<IndicatorMix>()));
    let shared = run(&sweep(Sweep::of::<IndicatorMixShared>()));
    assert_same_cells(&shared, &own, 2 * 8);
    let traded = shared.cells().unwrap();
    assert!(
        traded.values().all(|o| o.as_ref().unwrap().trades > 10),
        "every set trades: {traded:?}"
    );
}

#[test]
fn a_shared_price_change_gives_momentums_cells() {
    let (data, _) = w1_smoke();
    let grid = Grid::new()
        .axis("window", (10..=400).step_by(30))
        .axis("threshold_bps", [0.0, 1.0, 2.5, 5.0, 10.0]);
    let sweep = |s: Sweep| s.grid(grid.clone()).data(data.display().to_string());
    let own = run(&sweep(Sweep::of::<Momentum>()));
    let shared = run(&sweep(Sweep::of::<MomentumShared>()));
    assert_same_cells(&shared, &own, 2 * 14 * 5);
    let traded = shared.cells().unwrap();
    assert!(traded.values().any(|o| o.as_ref().unwrap().trades > 10));
}

#[test]
fn shared_channels_give_breakouts_cells() {
    let bars = two_symbols_of_bars();
    let grid = Grid::new()
        .axis("entry", [5, 10, 20, 40])
        .axis("exit", [5, 10, 20])
        .axis("short", [false, true]);
    let sweep = |s: Sweep| {
        s.grid(grid.clone())
            .data(bars.location())
            .commission_bps(2.0)
    };
    let own = run(&sweep(Sweep::of::<Breakout>()));
    let shared = run(&sweep(Sweep::of::<BreakoutShared>()));
    assert_same_cells(&shared, &own, 2 * 24);
    let traded = shared.cells().unwrap();
    assert!(traded.values().any(|o| o.as_ref().unwrap().trades > 4));
}

/// The crossover through orders, reading shared means.
struct CrossOrders {
    warm_up: u64,
    long: bool,
}

#[gridtest::strategy(name = "test_shared_cross_orders")]
impl Strategy for CrossOrders {
    type Params = SmaParams;
    type Feed = Ticks;
    fn new(p: &SmaParams) -> Self {
        Self {
            warm_up: p.fast.max(p.slow) as u64,
            long: false,
        }
    }
    fn shared(p: &SmaParams, series: &mut SharedSeries<Ticks>) {
        series.add(SharedMean::price(p.fast));
        series.add(SharedMean::price(p.slow));
    }
    fn on_orders(&mut self, now: &Cursor<'_, Ticks>, broker: &mut Broker) {
        let long = now.index() + 1 >= self.warm_up && now.shared(0) > now.shared(1);
        if long != self.long {
            self.long = long;
            if long {
                broker.submit(Order::buy(Size::Equity(1.0)));
            } else {
                broker.close();
            }
        }
    }
}

#[test]
fn the_orders_path_reads_shared_series_too() {
    let (data, _) = w1_smoke();
    let grid = Grid::new()
        .axis("fast", [5, 10, 20])
        .axis("slow", [40, 100, 300]);
    let sweep = |s: Sweep| s.grid(grid.clone()).data(data.display().to_string());
    let own = run(&sweep(Sweep::of::<SmaCrossoverOrders>()));
    let shared = run(&sweep(Sweep::of::<CrossOrders>()));
    assert_same_cells(&shared, &own, 2 * 9);
}

/// A mean that panics once it has seen `fail_after` events, when that is not zero.
#[derive(Clone, Debug, PartialEq)]
struct Fragile {
    fail_after: u64,
}

impl Series<Ticks> for Fragile {
    fn lookback(&self) -> usize {
        0
    }
    fn fill(&mut self, tile: &Tile<'_, Ticks>, out: &mut [f64]) {
        let last = tile.first_index() + out.len() as u64;
        assert!(
            self.fail_after == 0 || last < self.fail_after,
            "fragile series broke after {} events",
            self.fail_after
        );
        out.copy_from_slice(&tile.column(0)[tile.lookback()..]);
    }
}

#[derive(Params, Clone, Debug)]
struct FragileParams {
    fail_after: u64,
    long: bool,
}

struct ReadsFragile {
    long: bool,
}

#[gridtest::strategy(name = "test_reads_fragile")]
impl Strategy for ReadsFragile {
    type Params = FragileParams;
    type Feed = Ticks;
    fn new(p: &FragileParams) -> Self {
        Self { long: p.long }
    }
    fn shared(p: &FragileParams, series: &mut SharedSeries<Ticks>) {
        series.add(Fragile {
            fail_after: p.fail_after,
        });
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        f64::from(u8::from(self.long && now.shared(0) > 0.0))
    }
}

#[test]
fn a_shared_series_that_panics_fails_only_the_cells_reading_it() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<ReadsFragile>()
        .grid(
            Grid::new()
                .axis("fail_after", [0, 3000])
                .axis("long", [false, true]),
        )
        .data(data.display().to_string());
    let results = run(&sweep);
    assert_eq!(results.recorded(), 8);
    let mut failed = 0;
    for (set, _, outcome) in results.rows().unwrap() {
        let fragile = set.get("fail_after") == Some(&ParamValue::Int(3000));
        match outcome {
            Ok(_) => assert!(!fragile, "{set}"),
            Err(failure) => {
                assert!(fragile, "{set}: {failure}");
                assert!(
                    failure.message.contains("Fragile")
                        && failure.message.contains("broke after 3000 events"),
                    "{failure}"
                );
                failed += 1;
            }
        }
    }
    assert_eq!(failed, 4, "two sets × two shards");
}
