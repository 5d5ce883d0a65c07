//! Histories larger than the cache budget: read slice after slice with the lanes carried
//! between slices when the strategy carries its state, streamed whole per unit when it does
//! not; the cells equal the cached run's either way.

use gridtest::prelude::*;
use gridtest::{RunOptions, SweepResults};
use gridtest_examples::{SmaCrossover, SmaCrossoverOrders};
use gridtest_tests::{run_with, w1_grid, w1_smoke};

/// Parameters of [`AboveMean`].
#[derive(Params, Clone, Debug)]
struct WindowParams {
    window: usize,
}

/// Long while the price is above its mean over the window; registered without `carry`.
struct AboveMean {
    mean: RollingMean,
}

#[gridtest::strategy(name = "test_streaming_above_mean")]
impl Strategy for AboveMean {
    type Params = WindowParams;
    type Feed = Ticks;

    fn new(p: &WindowParams) -> Self {
        Self {
            mean: RollingMean::new(p.window),
        }
    }

    fn lookback(&self) -> usize {
        self.mean.window()
    }

    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        let window = self.mean.window();
        self.mean.push(now.price(), now.price_back(window));
        let full = now.index() + 1 >= window as u64;
        if full && now.price() > self.mean.mean() {
            1.0
        } else {
            0.0
        }
    }
}

/// The cells of `sweep` with every shard cached, and with none fitting the cache.
fn cached_and_uncached(sweep: &Sweep) -> (SweepResults, SweepResults) {
    let cached = RunOptions {
        threads: 2,
        ..RunOptions::default()
    };
    let uncached = RunOptions {
        cache_bytes: 0,
        unit_evals: 1_000_000,
        ..cached.clone()
    };
    (
        run_with(sweep, &cached).unwrap(),
        run_with(sweep, &uncached).unwrap(),
    )
}

fn ledger(result: &SweepResults) -> gridtest::sweep::LedgerStats {
    result.run_info().expect("a run").ledger
}

#[test]
fn a_history_over_the_cache_is_read_by_slices_and_gives_the_cached_cells() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(w1_grid())
        .data(data.display().to_string());
    let (cached, sliced) = cached_and_uncached(&sweep);
    assert_eq!(cached.recorded(), 1910);
    assert_eq!(cached.cells().unwrap(), sliced.cells().unwrap());
    // A budget of nothing makes each day a slice: S000's three days and S001's two, each
    // unit's slices but the last kept as checkpoints by the ledger.
    let stats = ledger(&sliced);
    assert!(stats.slices >= 3, "{stats:?}");
    assert_eq!(ledger(&cached).slices, 0);
}

#[test]
fn the_orders_path_read_by_slices_gives_the_cached_cells() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossoverOrders>()
        .grid(
            Grid::new()
                .axis("fast", [5, 20, 50])
                .axis("slow", [100, 400])
                .constrain("fast < slow"),
        )
        .data(data.display().to_string());
    let (cached, sliced) = cached_and_uncached(&sweep);
    assert_eq!(cached.recorded(), 12);
    assert_eq!(cached.cells().unwrap(), sliced.cells().unwrap());
    assert!(ledger(&sliced).slices >= 3, "{:?}", ledger(&sliced));
}

#[test]
fn a_strategy_that_does_not_carry_its_state_streams_the_history_whole() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<AboveMean>()
        .grid(Grid::new().axis("window", [50, 200, 800]))
        .data(data.display().to_string());
    let (cached, streamed) = cached_and_uncached(&sweep);
    assert_eq!(cached.recorded(), 6);
    assert_eq!(cached.cells().unwrap(), streamed.cells().unwrap());
    assert_eq!(ledger(&streamed).slices, 0, "no slice: streamed whole");
}
