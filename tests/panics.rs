//! A strategy that panics (or returns NaN) on some parameter sets fails only those cells, each
//! with its message; every other cell comes out exactly as if the failing ones were absent.

use gridtest::prelude::*;
use gridtest::sweep::FailureKind;
use gridtest_tests::{run, w1_smoke};

#[derive(Params, Clone, Debug)]
struct FragileParams {
    window: usize,
    bomb: i64,
}

/// Long above the moving average; `bomb` selects a way to fail: 3 panics at event 4000 (after
/// thousands of good events and across a tile boundary), 5 panics in `new`, 7 returns NaN once.
struct Fragile {
    mean: RollingMean,
    bomb: i64,
}

#[gridtest::strategy(name = "test_fragile")]
impl Strategy for Fragile {
    type Params = FragileParams;
    type Feed = Ticks;
    fn new(p: &FragileParams) -> Self {
        assert!(p.bomb != 5, "bomb 5 refuses to start");
        Self {
            mean: RollingMean::new(p.window),
            bomb: p.bomb,
        }
    }
    fn lookback(&self) -> usize {
        self.mean.window()
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        self.mean
            .push(now.price(), now.price_back(self.mean.window()));
        if self.bomb == 3 && now.index() == 4000 {
            panic!("boom at {}", now.index());
        }
        if self.bomb == 7 && now.index() == 10 {
            return f64::NAN;
        }
        if now.price() > self.mean.mean() {
            1.0
        } else {
            0.0
        }
    }
}

fn sweep(bombs: Vec<i64>) -> Sweep {
    let (data, _) = w1_smoke();
    Sweep::of::<Fragile>()
        .grid(
            Grid::new()
                .axis("window", [10, 50, 200])
                .axis("bomb", bombs),
        )
        .data(data.display().to_string())
}

#[test]
fn panics_fail_only_their_cells() {
    let results = run(&sweep(vec![0, 3, 5, 7]));
    assert_eq!(
        results.recorded(),
        3 * 4 * 2,
        "every cell has a final state"
    );
    let failures: Vec<_> = results.failures().collect();
    assert_eq!(failures.len(), 3 * 3 * 2);
    for (set, shard, f) in &failures {
        let bomb = match set.get("bomb") {
            Some(ParamValue::Int(b)) => *b,
            _ => unreachable!(),
        };
        let expected = match bomb {
            3 => (FailureKind::Panic, "boom at 4000"),
            5 => (FailureKind::Panic, "bomb 5 refuses to start"),
            7 => (FailureKind::BadTarget, "returned target NaN at event 10"),
            _ => panic!("[{set}] on {shard} should not fail: {f}"),
        };
        assert_eq!(f.kind, expected.0, "{f}");
        assert!(f.message.contains(expected.1), "{f}");
        if bomb == 3 {
            assert!(f.message.contains("panicked between events"), "{f}");
            assert!(f.message.contains("panics.rs"), "has the location: {f}");
        }
    }
    // The surviving cells equal a sweep that never had the failing sets.
    let clean = run(&sweep(vec![0]));
    let all = results.cells().unwrap();
    for (set, shard, outcome) in clean.rows().unwrap() {
        let key = gridtest::CellKey {
            shard: shard.id(),
            param_set: set.id(),
        };
        assert_eq!(all.get(&key), Some(&outcome), "[{set}] on {shard}");
    }
}
