//! A history run a slice of days at a time, every lane saved to bytes and restored between
//! slices ([`Chain`]), against one run over the whole history: the cells must be equal bit for
//! bit, and so must the round trips of a chain that keeps them, for the W1 crossover (lane by
//! lane, on shared means and on shared pandas indicators, in vector blocks), momentum, a
//! breakout on bars, eight shared pandas indicators on bars, fractional, clamped, long-short
//! targets, the orders path (the crossover through orders, a breakout with stops and
//! take-profits) and portfolios over universes (pairs trading, cross-sectional momentum).

use gridtest::data::{Shard, ShardData};
use gridtest::engine::{
    Chain, Checkpoint, CheckpointError, Keep, Recorded, run_chunk_recording, run_chunk_with,
};
use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};
use gridtest::{DataKind, ExecModel};
use gridtest_examples::{
    Breakout, BreakoutOrders, IndicatorMixShared, Momentum, MomentumShared, PairsZScore, Rotation,
    SmaCrossover, SmaCrossoverIndicators, SmaCrossoverOrders, SmaCrossoverShared,
};

const DAY: i64 = 86_400_000_000_000;

/// `days` days of `per_day` events from day 19 000 on (weekends too: the engine does not care),
/// as one shard and as one shard per day. Ticks are a random walk; bars are built from it.
struct History {
    whole: ShardData,
    days: Vec<ShardData>,
}

fn walk(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut price = 100.0;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let step = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            price *= 1.0 + step * 0.004;
            price
        })
        .collect()
}

const START: i64 = 19_000;

fn date(day: i64) -> chrono::NaiveDate {
    chrono::DateTime::from_timestamp_nanos(day * DAY).date_naive()
}

fn history(kind: DataKind, days: i64, per_day: usize) -> History {
    member_history("CHAIN", kind, (days, per_day), 7, 0)
}

/// One symbol's history: `per_day` events a millisecond apart from 09:30 plus `offset_ns`.
fn member_history(
    symbol: &str,
    kind: DataKind,
    (days, per_day): (i64, usize),
    seed: u64,
    offset_ns: i64,
) -> History {
    let start = START;
    let shard = |first: i64, last: i64| Shard::new(symbol, date(first), date(last));
    let prices = walk(per_day * days as usize * 4, seed);
    let day_columns = |d: i64| -> (Vec<i64>, Vec<Vec<f64>>) {
        let ts = (0..per_day as i64)
            .map(|i| (start + d) * DAY + 34_200_000_000_000 + offset_ns + i * 1_000_000)
            .collect();
        let base = d as usize * per_day * 4;
        let cols = match kind {
            DataKind::Ticks => {
                let price = prices[base..base + per_day].to_vec();
                vec![price, vec![1.0; per_day]]
            }
            DataKind::Bars => {
                let bar = |i: usize| &prices[base + 4 * i..base + 4 * i + 4];
                let open = (0..per_day).map(|i| bar(i)[0]).collect();
                let high = (0..per_day).map(|i| bar(i).iter().copied().fold(f64::MIN, f64::max));
                let low = (0..per_day).map(|i| bar(i).iter().copied().fold(f64::MAX, f64::min));
                let close = (0..per_day).map(|i| bar(i)[3]).collect();
                vec![
                    open,
                    high.collect(),
                    low.collect(),
                    close,
                    vec![1.0; per_day],
                ]
            }
        };
        (ts, cols)
    };
    let mut ts = Vec::new();
    let mut cols: Vec<Vec<f64>> = Vec::new();
    let mut slices = Vec::new();
    for d in 0..days {
        let (day_ts, day_cols) = day_columns(d);
        ts.extend_from_slice(&day_ts);
        cols.resize(day_cols.len(), Vec::new());
        for (all, day) in cols.iter_mut().zip(&day_cols) {
            all.extend_from_slice(day);
        }
        let one = ShardData::from_columns(shard(start + d, start + d), kind, day_ts, day_cols, 1);
        slices.push(one.expect("a valid day"));
    }
    let n_days = u32::try_from(days).expect("few days");
    let whole = ShardData::from_columns(shard(start, start + days - 1), kind, ts, cols, n_days);
    History {
        whole: whole.expect("a valid history"),
        days: slices,
    }
}

/// The members' histories merged into a universe, whole and day by day.
fn universe(members: &[History]) -> History {
    let symbols: Vec<String> = members
        .iter()
        .map(|m| m.whole.shard().symbol().to_owned())
        .collect();
    let days = members[0].days.len();
    let last = START + days as i64 - 1;
    let whole = ShardData::universe(
        Shard::universe("U", symbols.clone(), date(START), date(last)),
        members.iter().map(|m| m.whole.clone()).collect(),
    )
    .expect("a valid universe");
    let days = (0..days)
        .map(|d| {
            let day = START + d as i64;
            let shard = Shard::universe("U", symbols.clone(), date(day), date(day));
            ShardData::universe(shard, members.iter().map(|m| m.days[d].clone()).collect())
                .expect("a valid day of the universe")
        })
        .collect();
    History { whole, days }
}

/// Runs `sets` over the history's days in slices of `per_slice` days, saving every lane to
/// bytes and restoring them in a new chain between two slices; days recorded, and round trips
/// when `trades`. Also the trips the chain said it held before finishing.
fn chained<S: Strategy>(
    h: &History,
    sets: &[ParamSet],
    exec: &ExecModel,
    (per_slice, trades): (usize, bool),
) -> (Recorded, usize) {
    let mut chain = Chain::<S>::start(sets, exec).unwrap().recording_days();
    if trades {
        chain = chain.logging_trades();
    }
    for (k, slice) in h.days.chunks(per_slice).enumerate() {
        if k > 0 {
            let bytes = chain.checkpoint().unwrap().to_bytes();
            let saved = Checkpoint::from_bytes(&bytes).unwrap();
            chain = Chain::<S>::resume(sets, exec, &saved).unwrap();
            assert_eq!(
                chain.logs_trades(),
                trades,
                "the checkpoint says what it logs"
            );
        }
        for day in slice {
            chain.feed(day);
        }
    }
    let held = chain.trades_held();
    (chain.finish_kept(h.whole.n_days()), held)
}

/// The chained cells and day returns equal the uncut run's, bit for bit (compared through
/// `Debug`, which prints every f64 exactly and tells -0.0 from 0.0); so do the round trips of
/// a chain cut at every day that logs them (`--trades` over a history read by slices).
fn assert_chains_exactly<S: Strategy>(h: &History, sets: &[ParamSet], exec: &ExecModel) {
    let (whole, whole_days) = run_chunk_recording::<S>(&h.whole, sets, exec);
    let traded = whole
        .iter()
        .filter(|c| c.as_ref().is_ok_and(|m| m.trades > 0))
        .count();
    assert!(
        traded * 2 > sets.len(),
        "most sets trade: {traded} of {}",
        sets.len()
    );
    for per_slice in [1, 3] {
        let (cut, held) = chained::<S>(h, sets, exec, (per_slice, false));
        assert_eq!(held, 0, "no trips held unless logged");
        assert_eq!(cut.cells.len(), sets.len());
        for ((set, a), b) in sets.iter().zip(&whole).zip(&cut.cells) {
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "[{set}] in slices of {per_slice} days"
            );
        }
        assert_eq!(whole_days.days, cut.days.days);
        assert_eq!(
            format!("{:?}", whole_days.per_set),
            format!("{:?}", cut.days.per_set)
        );
    }
    let keep = Keep {
        days: false,
        trades: true,
    };
    let uncut = run_chunk_with::<S>(&h.whole, sets, exec, keep);
    let (cut, held) = chained::<S>(h, sets, exec, (1, true));
    assert_eq!(format!("{:?}", uncut.cells), format!("{:?}", cut.cells));
    let trips: usize = uncut.trades.iter().map(Vec::len).sum();
    assert!(trips >= traded, "the sets' round trips are kept ({trips})");
    let closed = cut.trades.iter().flatten().filter(|t| !t.is_open()).count();
    assert!(
        held >= closed,
        "the chain counts what it holds: {held} < {closed}"
    );
    for ((set, a), b) in sets.iter().zip(&uncut.trades).zip(&cut.trades) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "[{set}]: round trips");
    }
}

fn sma_sets() -> Vec<ParamSet> {
    Grid::new()
        .axis("fast", [3_i64, 10, 25, 60])
        .axis("slow", [40_i64, 150, 900, 2500])
        .constrain("fast < slow")
        .iter()
        .collect()
}

#[test]
fn the_w1_crossover_in_slices_equals_the_uncut_run_bit_for_bit() {
    // 2 300 ticks a day: a day ends inside a tile of 2 048, and the slow window of 2 500
    // reaches back across a day boundary.
    let h = history(DataKind::Ticks, 7, 2_300);
    let exec = ExecModel::default();
    assert_chains_exactly::<SmaCrossover>(&h, &sma_sets(), &exec);
    assert_chains_exactly::<SmaCrossoverShared>(&h, &sma_sets(), &exec);
    assert_chains_exactly::<SmaCrossoverIndicators>(&h, &sma_sets(), &exec);
}

#[test]
fn momentum_and_a_breakout_on_bars_in_slices_equal_the_uncut_run() {
    let ticks = history(DataKind::Ticks, 6, 1_500);
    let momentum = Grid::new()
        .axis("window", [5_i64, 50, 400, 2_000])
        .axis("threshold_bps", [0.0, 2.0])
        .iter()
        .collect::<Vec<_>>();
    let exec = ExecModel::default();
    assert_chains_exactly::<Momentum>(&ticks, &momentum, &exec);

    let bars = history(DataKind::Bars, 8, 390);
    let breakout = Grid::new()
        .axis("entry", [5_i64, 20, 120])
        .axis("exit", [3_i64, 10])
        .axis("short", [false, true])
        .iter()
        .collect::<Vec<_>>();
    assert_chains_exactly::<Breakout>(&bars, &breakout, &exec.clone().with_commission_bps(2.0));

    // Eight pandas indicators shared (their running state carried in the checkpoint).
    let mix = Grid::new()
        .axis("window", [5_i64, 40])
        .axis("periods", [3_i64, 14])
        .axis("k", [2.0])
        .iter()
        .collect::<Vec<_>>();
    assert_chains_exactly::<IndicatorMixShared>(&bars, &mix, &exec);
}

#[test]
fn the_orders_path_in_slices_equals_the_uncut_run() {
    // Open trades with stops and take-profits, pending orders and cash cross the cuts.
    let ticks = history(DataKind::Ticks, 5, 2_300);
    let exec = ExecModel::default().with_commission_bps(1.0);
    assert_chains_exactly::<SmaCrossoverOrders>(&ticks, &sma_sets(), &exec);
    let bars = history(DataKind::Bars, 8, 390);
    let channels = Grid::new()
        .axis("window", [5_i64, 20, 60])
        .axis("stop", [0.002, 0.01])
        .iter()
        .collect::<Vec<_>>();
    assert_chains_exactly::<BreakoutOrders>(&bars, &channels, &exec);
}

#[test]
fn portfolios_over_a_universe_in_slices_equal_the_uncut_run() {
    // BBB trades half a millisecond after AAA and CCC, which share timestamps: slices of one
    // and of two members; the slice open at a day's end is closed by the next day's first bar.
    let member =
        |symbol, seed, offset| member_history(symbol, DataKind::Bars, (6, 390), seed, offset);
    let members = [
        member("AAA", 11, 0),
        member("BBB", 12, 500_000),
        member("CCC", 13, 0),
    ];
    let exec = ExecModel::default().with_commission_bps(1.0);
    let rotation = Grid::new()
        .axis("lookback", [5_i64, 30])
        .axis("top", [1_i64, 2])
        .axis("every", [1_i64, 7])
        .iter()
        .collect::<Vec<_>>();
    assert_chains_exactly::<Rotation>(&universe(&members), &rotation, &exec);
    let pairs = Grid::new()
        .axis("window", [20_i64, 100])
        .axis("entry", [1.0, 2.0])
        .axis("exit", [0.25])
        .axis("gross", [1.0])
        .iter()
        .collect::<Vec<_>>();
    assert_chains_exactly::<PairsZScore>(&universe(&members[..2]), &pairs, &exec);
}

#[derive(Params, Clone, Debug)]
struct ScriptParams {
    seed: i64,
}

/// Fractional, long-short targets beyond the leverage limit, changing at random: every branch
/// of the account (fractional weights drift with the price, clamped targets, reversals).
#[derive(Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
struct Scripted {
    state: u64,
    target: f64,
}

#[gridtest::strategy(name = "test_chain_scripted", carry)]
impl Strategy for Scripted {
    type Params = ScriptParams;
    type Feed = Ticks;
    fn new(p: &ScriptParams) -> Self {
        Self {
            state: p.seed.unsigned_abs() | 1,
            target: 0.0,
        }
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        if self.state.is_multiple_of(50) {
            const LEVELS: [f64; 7] = [-2.5, -0.75, -0.25, 0.0, 0.3, 1.0, 3.0];
            self.target = LEVELS[(self.state >> 8) as usize % LEVELS.len()];
        }
        self.target
    }
}

#[test]
fn fractional_clamped_long_short_targets_in_slices_equal_the_uncut_run() {
    let h = history(DataKind::Ticks, 5, 3_000);
    let sets = Grid::new()
        .axis("seed", 1_i64..=12)
        .iter()
        .collect::<Vec<_>>();
    let exec = ExecModel::default().with_commission_bps(1.5);
    assert_chains_exactly::<Scripted>(&h, &sets, &exec);
}

#[derive(Params, Clone, Debug)]
struct HoldParams {
    hold: bool,
}

struct Forgetful {
    hold: bool,
}

#[gridtest::strategy(name = "test_chain_forgetful")]
impl Strategy for Forgetful {
    type Params = HoldParams;
    type Feed = Ticks;
    fn new(p: &HoldParams) -> Self {
        Self { hold: p.hold }
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        f64::from(u8::from(self.hold))
    }
}

#[test]
fn what_cannot_be_carried_is_refused_with_what_to_do() {
    let sets = Grid::new().axis("hold", [true]).iter().collect::<Vec<_>>();
    let exec = ExecModel::default();
    let Err(refused) = Chain::<Forgetful>::start(&sets, &exec) else {
        panic!("a strategy without carry makes no chain");
    };
    let message = refused.to_string();
    assert!(
        message.contains("Forgetful") && message.contains("carry"),
        "{message}"
    );

    // A shared series of the user's own (momentum's price change) holds state the engine
    // cannot save: the checkpoint names it.
    let h = history(DataKind::Ticks, 2, 500);
    let sets = Grid::new()
        .axis("window", [10_i64])
        .axis("threshold_bps", [0.0])
        .iter()
        .collect::<Vec<_>>();
    let mut chain = Chain::<MomentumShared>::start(&sets, &exec).unwrap();
    chain.feed(&h.days[0]);
    match chain.checkpoint() {
        Err(CheckpointError::Series { series }) => assert!(series.contains("PriceChange")),
        other => panic!(
            "expected the series to be named, got {:?}",
            other.map(|_| ())
        ),
    }

    // A checkpoint resumes only the run that saved it.
    let sets = sma_sets();
    let mut chain = Chain::<SmaCrossover>::start(&sets, &exec).unwrap();
    chain.feed(&h.days[0]);
    let saved = chain.checkpoint().unwrap();
    let other = &sets[1..];
    let Err(mismatch) = Chain::<SmaCrossover>::resume(other, &exec, &saved) else {
        panic!("other sets cannot resume the chain");
    };
    assert!(
        mismatch.to_string().contains("other parameter sets"),
        "{mismatch}"
    );
    let costlier = exec.clone().with_commission_bps(9.0);
    assert!(Chain::<SmaCrossover>::resume(&sets, &costlier, &saved).is_err());
    assert!(Checkpoint::from_bytes(b"not a checkpoint").is_err());

    // A node keeping round trips (`--trades`) cannot take up a checkpoint saved without them:
    // the trips of its earlier slices would be missing (its scorer starts the history over).
    let start = gridtest::registry::find_strategy("sma_crossover")
        .unwrap()
        .chain;
    let (days, trips) = (
        Keep {
            days: true,
            trades: false,
        },
        Keep {
            days: false,
            trades: true,
        },
    );
    let bytes = saved.to_bytes();
    assert!(start(&sets, &exec, Some(&bytes), days).is_ok());
    let Err(without) = start(&sets, &exec, Some(&bytes), trips) else {
        panic!("a checkpoint without trips cannot give them");
    };
    assert!(without.to_string().contains("round trips"), "{without}");
}
