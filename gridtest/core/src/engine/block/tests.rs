//! The lane blocks against the lane-by-lane loop: the same strategy, once declaring that it
//! reads its account (so the kernel runs it lane by lane) and once not (in blocks), must give
//! bit-identical cells at every vector level the CPU supports.

use super::super::exec_model::ExecModel;
use super::super::kernel::Kernel;
use super::super::simd::SimdLevel;
use super::super::{CellOutcome, DayReturns};
use crate::DataKind;
use crate::Params;
use crate::data::{Shard, ShardData};
use crate::params::{ParamSet, ParamValue};
use crate::strategy::{Bars, Cursor, Strategy, Ticks};

#[derive(Params, Clone, Debug)]
struct Seeded {
    seed: u64,
}

/// Seeds from here on are long-only, whole: flat or long their whole equity.
const LONG_ONLY: u64 = 64;

/// A target from a hash of the seed and the event: held for a while, then one of long, short,
/// fractional, over-levered (clamped), flat or NaN (a failed target, ignored); from
/// [`LONG_ONLY`] on, flat or long.
fn target(seed: u64, index: u64) -> f64 {
    let period = 7 + seed % 23;
    let mut h = (index / period).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    h ^= h >> 31;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 29;
    if seed >= LONG_ONLY {
        return if h % 5 < 2 { 1.0 } else { 0.0 };
    }
    match (h % 11, seed % 3) {
        (0..=2, _) => 0.0,
        (3 | 4, _) => 1.0,
        (5, _) => -1.0,
        (6, 0) => 0.5,
        (6, _) => 1.0,
        (7, 1) => -0.3,
        (7, _) => 0.0,
        (8, 2) => 2.5,
        (8, _) => 1.0,
        (9, 0) if index.is_multiple_of(97) => f64::NAN,
        _ => -1.0,
    }
}

struct InBlocks(u64);

#[gridtest::strategy(name = "test_block_targets")]
impl Strategy for InBlocks {
    type Params = Seeded;
    type Feed = Ticks;
    fn new(p: &Seeded) -> Self {
        Self(p.seed)
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        target(self.0, now.index())
    }
}

struct LaneByLane(u64);

#[gridtest::strategy(name = "test_lane_targets")]
impl Strategy for LaneByLane {
    type Params = Seeded;
    type Feed = Ticks;
    const ACCOUNT: bool = true;
    fn new(p: &Seeded) -> Self {
        Self(p.seed)
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        target(self.0, now.index())
    }
}

struct BarsInBlocks(u64);

#[gridtest::strategy(name = "test_block_bar_targets")]
impl Strategy for BarsInBlocks {
    type Params = Seeded;
    type Feed = Bars;
    fn new(p: &Seeded) -> Self {
        Self(p.seed)
    }
    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        target(self.0, now.index())
    }
}

struct BarsLaneByLane(u64);

#[gridtest::strategy(name = "test_lane_bar_targets")]
impl Strategy for BarsLaneByLane {
    type Params = Seeded;
    type Feed = Bars;
    const ACCOUNT: bool = true;
    fn new(p: &Seeded) -> Self {
        Self(p.seed)
    }
    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        target(self.0, now.index())
    }
}

const DAY: i64 = 86_400_000_000_000;

/// Three days of `n` events each, prices on a seeded random walk.
fn prices(n: usize) -> (Vec<i64>, Vec<f64>) {
    let mut ts = Vec::new();
    let mut price = Vec::new();
    let mut p = 100.0_f64;
    let mut h = 12_345_u64;
    for day in 0..3 {
        for i in 0..n {
            h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let step = ((h >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.004;
            p *= 1.0 + step;
            ts.push(day * DAY + i64::try_from(i).unwrap() * 1_000);
            price.push(p);
        }
    }
    (ts, price)
}

/// `n` sets of every kind of target, then `n` long-only ones.
fn sets(n: u64) -> Vec<ParamSet> {
    (0..n)
        .chain(LONG_ONLY..LONG_ONLY + n)
        .map(|seed| ParamSet::new([("seed", ParamValue::Int(i64::try_from(seed).unwrap()))]))
        .collect()
}

fn run<S: Strategy>(data: &ShardData, sets: &[ParamSet], level: SimdLevel) -> Run {
    let exec = ExecModel::default();
    let mut kernel = Kernel::<S>::new(sets, &exec)
        .at_level(level)
        .recording_days();
    for batch in data.batches() {
        kernel.feed(batch);
    }
    kernel.finish_recorded(data.n_days())
}

type Run = (Vec<CellOutcome>, DayReturns);

/// Every cell equal bit for bit (`Debug` prints each `f64` so that it reads back to the same
/// bits), and the same day returns.
fn assert_identical(blocks: &Run, lanes: &Run, what: &str) {
    assert_eq!(blocks.0.len(), lanes.0.len());
    let mut traded = 0;
    for (i, (b, l)) in blocks.0.iter().zip(&lanes.0).enumerate() {
        assert_eq!(format!("{b:?}"), format!("{l:?}"), "{what}: set {i}");
        traded += usize::from(b.as_ref().is_ok_and(|m| m.trades > 10));
    }
    assert!(traded * 2 > blocks.0.len(), "{what}: most sets trade");
    assert!(
        blocks.0.iter().any(Result::is_err),
        "{what}: a NaN target fails its cell"
    );
    let bits = |r: &Run| -> Vec<Vec<u64>> {
        r.1.per_set
            .iter()
            .map(|d| d.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(blocks), bits(lanes), "{what}: day returns");
}

#[test]
fn ticks_in_blocks_match_lane_by_lane_at_every_level() {
    // 37 sets: two full blocks and a partial one; 5 000 events a day: tiles, chunks and days
    // that do not line up.
    let (ts, price) = prices(5_000);
    let size = vec![1.0; ts.len()];
    let shard = Shard::new(
        "T",
        "1970-01-01".parse().unwrap(),
        "1970-01-03".parse().unwrap(),
    );
    let data = ShardData::from_ticks(shard, ts, price, size, 3).unwrap();
    let sets = sets(37);
    let lanes = run::<LaneByLane>(&data, &sets, SimdLevel::Baseline);
    for level in SimdLevel::supported() {
        let blocks = run::<InBlocks>(&data, &sets, level);
        assert_identical(&blocks, &lanes, level.name());
    }
}

#[test]
fn bars_in_blocks_match_lane_by_lane_at_every_level() {
    let (ts, close) = prices(3_000);
    let open: Vec<f64> = close.iter().map(|c| c * 0.999).collect();
    let high: Vec<f64> = close.iter().map(|c| c * 1.002).collect();
    let low: Vec<f64> = close.iter().map(|c| c * 0.997).collect();
    let volume = vec![1.0; ts.len()];
    let shard = Shard::new(
        "B",
        "1970-01-01".parse().unwrap(),
        "1970-01-03".parse().unwrap(),
    );
    let cols = vec![open, high, low, close, volume];
    let data = ShardData::from_columns(shard, DataKind::Bars, ts, cols, 3).unwrap();
    let sets = sets(21);
    let lanes = run::<BarsLaneByLane>(&data, &sets, SimdLevel::Baseline);
    for level in SimdLevel::supported() {
        let blocks = run::<BarsInBlocks>(&data, &sets, level);
        assert_identical(&blocks, &lanes, level.name());
    }
}
