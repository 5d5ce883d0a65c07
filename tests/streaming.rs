//! Shards larger than the cache budget are streamed per unit instead of loaded, with identical
//! results.

use gridtest::{RunOptions, Sweep};
use gridtest_examples::SmaCrossover;
use gridtest_tests::{run_with, w1_grid, w1_smoke};

#[test]
fn streamed_shards_give_identical_results() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(w1_grid())
        .data(data.display().to_string());
    let cached = RunOptions {
        threads: 2,
        ..RunOptions::default()
    };
    let streamed = RunOptions {
        cache_bytes: 0,
        unit_evals: 1_000_000,
        ..cached.clone()
    };
    let a = run_with(&sweep, &cached).unwrap();
    let b = run_with(&sweep, &streamed).unwrap();
    assert_eq!(a.recorded(), 1910);
    assert_eq!(a.cells().unwrap(), b.cells().unwrap());
}
