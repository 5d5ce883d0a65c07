//! Universes: portfolio strategies over several symbols. A universe of one symbol gives the
//! single-symbol cell; two interleaved members match an independent cash-and-units simulation
//! event by event; a sweep over files merges the members' bars, is persisted and replayed, and
//! a universe that cannot be read or run says which and why.

use gridtest::data::{Dataset, Shard, ShardData, ShardReader, synth::SynthSpec};
use gridtest::engine::{FailureKind, run_chunk, trace_cell};
use gridtest::prelude::*;
use gridtest::replay::{ReplayScope, replay};
use gridtest::storage::Location;
use gridtest::{CellKey, DataKind, Metrics, RunOptions};
use gridtest_examples::{PairsZScore, Rotation, SmaCrossover};
use gridtest_tests::{Scratch, quiet, run_with, runtime};

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The target at step `t`: changes every few steps, long, short, flat or fractional.
fn scripted(seed: i64, t: u64) -> f64 {
    let block = t / 6 + splitmix(seed as u64 ^ t.rotate_left(13)) % 3;
    let levels = [-0.6, -0.3, 0.0, 0.0, 0.4, 0.8];
    levels[(splitmix((seed as u64).wrapping_mul(97) ^ block) % 6) as usize]
}

#[derive(Params, Clone, Debug)]
struct Script {
    seed: i64,
}

/// A single-symbol strategy with scripted targets.
struct ScriptedOne(i64);

#[gridtest::strategy(name = "universe_test_one")]
impl Strategy for ScriptedOne {
    type Params = Script;
    type Feed = Ticks;
    fn new(p: &Script) -> Self {
        Self(p.seed)
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        scripted(self.0, now.index())
    }
}

/// The same script over a universe: member `m` follows seed `seed + m`.
struct ScriptedMany(i64);

#[gridtest::strategy(name = "universe_test_many")]
impl Strategy for ScriptedMany {
    type Params = Script;
    type Feed = Ticks;
    fn new(p: &Script) -> Self {
        Self(p.seed)
    }
    fn on_universe(&mut self, now: &Slice<'_, Ticks>, targets: &mut [f64]) {
        for (m, t) in targets.iter_mut().enumerate() {
            *t = scripted(self.0 + m as i64, now.index());
        }
    }
}

fn walk(n: usize, seed: u64, start: f64) -> Vec<f64> {
    let mut p = start;
    (0..n as u64)
        .map(|t| {
            p *= 1.0 + 0.003 * ((splitmix(seed ^ t) % 2001) as f64 / 1000.0 - 1.0);
            p
        })
        .collect()
}

fn day(s: &str) -> chrono::NaiveDate {
    s.parse().unwrap()
}

fn ticks(symbol: &str, ts: Vec<i64>, seed: u64, start: f64) -> ShardData {
    let n = ts.len();
    let shard = Shard::new(symbol, day("2024-01-02"), day("2024-01-02"));
    ShardData::from_ticks(shard, ts, walk(n, seed, start), vec![1.0; n], 1).unwrap()
}

fn sets() -> Vec<ParamSet> {
    (1..=6)
        .map(|s| ParamSet::new([("seed", ParamValue::Int(s))]))
        .collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * b.abs().max(1e-12)
}

fn assert_close(got: &Metrics, want: &Metrics, what: &str) {
    assert_eq!(
        (got.n_ticks, got.trades, got.round_trips, got.open_at_end),
        (
            want.n_ticks,
            want.trades,
            want.round_trips,
            want.open_at_end
        ),
        "{what}"
    );
    for (name, g, w) in [
        ("total_return", got.total_return, want.total_return),
        ("max_drawdown", got.max_drawdown, want.max_drawdown),
        ("sharpe", got.sharpe, want.sharpe),
        ("sortino", got.sortino, want.sortino),
        ("win_rate", got.win_rate, want.win_rate),
        ("profit_factor", got.profit_factor, want.profit_factor),
        ("exposure", got.exposure, want.exposure),
    ] {
        assert!(close(g, w, 1e-9), "{what}: {name} = {g}, expected {w}");
    }
}

#[test]
fn a_universe_of_one_symbol_gives_the_single_symbol_cell() {
    let one = ticks("AAA", (0..4000).collect(), 3, 50.0);
    let universe = ShardData::universe(
        Shard::universe("solo", ["AAA"], day("2024-01-02"), day("2024-01-02")),
        vec![one.clone()],
    )
    .unwrap();
    let exec = ExecModel::default().with_commission_bps(4.0);
    let single = run_chunk::<ScriptedOne>(&one, &sets(), &exec);
    let many = run_chunk::<ScriptedMany>(&universe, &sets(), &exec);
    for ((set, s), m) in sets().iter().zip(&single).zip(&many) {
        let (s, m) = (s.as_ref().unwrap(), m.as_ref().unwrap());
        assert!(s.round_trips > 20, "{set}: the script trades");
        assert_close(m, s, &set.to_string());
    }
}

/// Independent simulation of a universe: the merged events in `(ts, member)` order, cash and
/// units, each rebalance solved by fixed-point iteration, the strategy's targets taken at the
/// end of each timestamp; metrics from the stored equity curve.
fn reference(events: &[(i64, usize, f64)], members: usize, seed: i64, c: f64) -> Metrics {
    let (mut cash, mut units) = (1.0f64, vec![0.0f64; members]);
    let mut marks = vec![0.0f64; members];
    let (mut held, mut pending) = (vec![0.0f64; members], vec![0.0f64; members]);
    let (mut basis, mut trades, mut exposed) = (vec![0.0f64; members], 0u64, 0u64);
    let (mut trips, mut wins, mut won, mut lost) = (0u64, 0u64, 0.0f64, 0.0f64);
    let mut equity = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let ts = events[i].0;
        let open_at_start = units.iter().any(|&u| u != 0.0);
        while i < events.len() && events[i].0 == ts {
            let (_, m, p) = events[i];
            if pending[m] != held[m] {
                let w = pending[m];
                let others: f64 = (0..members)
                    .filter(|&j| j != m)
                    .map(|j| units[j] * marks[j])
                    .sum();
                let e = cash + others + units[m] * p;
                let x0 = units[m] * p;
                let mut x = w * e;
                for _ in 0..200 {
                    x = w * (e - c * (x - x0).abs());
                }
                let fee = c * (x - x0).abs();
                let flip = held[m] != 0.0 && (w == 0.0 || w.signum() != held[m].signum());
                if held[m] == 0.0 {
                    basis[m] = (x - x0) + fee;
                } else if flip {
                    let pnl = x0 - basis[m] - fee;
                    trips += 1;
                    if pnl > 0.0 {
                        wins += 1;
                        won += pnl;
                    } else {
                        lost -= pnl;
                    }
                    basis[m] = x;
                } else {
                    basis[m] += (x - x0) + fee;
                }
                cash -= (x - x0) + fee;
                units[m] = x / p;
                held[m] = w;
                trades += 1;
            }
            marks[m] = p;
            i += 1;
        }
        if !equity.is_empty() {
            exposed += u64::from(open_at_start);
        }
        let slice = equity.len() as u64;
        equity.push(cash + (0..members).map(|j| units[j] * marks[j]).sum::<f64>());
        for (m, t) in pending.iter_mut().enumerate() {
            *t = scripted(seed + m as i64, slice);
        }
    }
    let r: Vec<f64> = equity.windows(2).map(|w| w[1] / w[0] - 1.0).collect();
    let k = r.len() as f64;
    let mean = r.iter().sum::<f64>() / k;
    let std = (r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let downside = (r.iter().map(|x| x.min(0.0).powi(2)).sum::<f64>() / k).sqrt();
    let per_year = (252.0 * equity.len() as f64).sqrt(); // one date
    let (mut peak, mut max_dd) = (1.0f64, 0.0f64);
    for &e in &equity {
        peak = peak.max(e);
        max_dd = max_dd.max(1.0 - e / peak);
    }
    Metrics {
        n_ticks: equity.len() as u64,
        trades,
        total_return: equity[equity.len() - 1] - 1.0,
        max_drawdown: max_dd,
        sharpe: mean / std * per_year,
        sortino: mean / downside * per_year,
        round_trips: trips,
        win_rate: wins as f64 / trips as f64,
        profit_factor: won / lost,
        exposure: exposed as f64 / k,
        open_at_end: held.iter().any(|&h| h != 0.0),
    }
}

#[test]
fn two_interleaved_members_match_an_independent_cash_and_units_simulation() {
    // AAA trades every 2 ns, BBB every 3 ns: they share every sixth timestamp.
    let a = ticks("AAA", (0..3000).map(|t| 2 * t).collect(), 5, 40.0);
    let b = ticks("BBB", (0..2000).map(|t| 3 * t).collect(), 9, 120.0);
    let pair = Shard::universe("pair", ["AAA", "BBB"], day("2024-01-02"), day("2024-01-02"));
    let data = ShardData::universe(pair, vec![a.clone(), b.clone()]).unwrap();
    let mut events: Vec<(i64, usize, f64)> = Vec::new();
    for (m, d) in [&a, &b].iter().enumerate() {
        let batch = &d.batches()[0];
        events.extend(
            batch
                .ts()
                .iter()
                .zip(batch.columns()[0].iter())
                .map(|(&t, &p)| (t, m, p)),
        );
    }
    events.sort_by_key(|&(t, m, _)| (t, m));
    let exec = ExecModel::default().with_commission_bps(5.0);
    let cells = run_chunk::<ScriptedMany>(&data, &sets(), &exec);
    for (set, cell) in sets().iter().zip(&cells) {
        let seed = match set.get("seed") {
            Some(ParamValue::Int(s)) => *s,
            _ => unreachable!(),
        };
        let want = reference(&events, 2, seed, 5e-4);
        let got = cell.as_ref().unwrap();
        assert!(want.round_trips > 50 && want.n_ticks == 4000, "{want:?}");
        assert_close(got, &want, &set.to_string());
    }
    // The traced cell names each fill's symbol and ends at the cell's return.
    let (outcome, trace) = trace_cell::<ScriptedMany>(&data, &sets()[0], &exec);
    let m = outcome.unwrap();
    assert_eq!(trace.symbols, ["AAA", "BBB"]);
    assert_eq!(trace.fills.len() as u64, m.trades);
    assert!(trace.fills.iter().any(|f| f.member == 1));
    let end = trace.equity.last().unwrap().1;
    assert!((end - 1.0 - m.total_return).abs() < 1e-12);
}

fn bars_dataset(scratch: &Scratch) -> Dataset {
    scratch.synth(&SynthSpec {
        symbols: 4,
        days: 6,
        ticks_per_day: 3_000,
        ticks_per_bar: Some(25),
        ..SynthSpec::default()
    });
    scratch.dataset(DataKind::Bars)
}

fn pairs_grid() -> Grid {
    Grid::new()
        .axis("window", [10usize, 30])
        .axis("entry", [1.0, 2.0])
        .axis("exit", [0.5])
        .axis("gross", [1.0])
}

#[test]
fn a_universe_sweep_over_files_is_merged_persisted_and_replayed() {
    let scratch = Scratch::new();
    let dataset = bars_dataset(&scratch);
    let root = tempfile::tempdir().unwrap();
    let location = Location::parse(&root.path().display().to_string()).unwrap();
    let sweep = Sweep::of::<PairsZScore>()
        .grid(pairs_grid())
        .data(scratch.location())
        .universe("p01", ["S000", "S001"])
        .universe("p23", ["S002", "S003"])
        .commission_bps(1.0);
    let opts = RunOptions {
        results: Some(location.clone()),
        ..quiet()
    };
    let results = run_with(&sweep, &opts).expect("the sweep runs");
    assert_eq!(results.failed(), 0);
    let names: Vec<String> = results.shards().iter().map(|s| s.id().0).collect();
    assert_eq!(
        names,
        ["p01:2024-01-02..2024-01-09", "p23:2024-01-02..2024-01-09"]
    );
    assert_eq!(results.recorded(), 2 * 4);

    // The sweep's cells are the engine's on the members loaded one by one and merged in memory.
    let reader = ShardReader::try_new(&dataset).unwrap();
    let rt = runtime();
    let sets: Vec<ParamSet> = pairs_grid().iter().collect();
    let cells = results.cells().unwrap();
    for shard in results.shards() {
        let members = shard
            .symbols()
            .iter()
            .map(|s| rt.block_on(reader.load(&shard.member(s))).unwrap())
            .collect();
        let merged = ShardData::universe(shard.clone(), members).unwrap();
        let loaded = rt.block_on(reader.load(shard)).unwrap();
        assert_eq!(loaded.n_rows(), merged.n_rows());
        let direct = run_chunk::<PairsZScore>(&merged, &sets, sweep.exec_model());
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
    let spec = results.run_info().expect("persisted");
    let report = rt
        .block_on(replay(&location, &spec.sweep_id, &ReplayScope::All, false))
        .unwrap();
    assert_eq!((report.cells, report.identical), (cells.len(), cells.len()));
}

#[test]
fn cross_sectional_momentum_holds_the_best_members() {
    let scratch = Scratch::new();
    bars_dataset(&scratch);
    let grid = Grid::new()
        .axis("lookback", [20usize, 60])
        .axis("top", [1usize, 2])
        .axis("every", [10usize]);
    let sweep = Sweep::of::<Rotation>()
        .grid(grid)
        .data(scratch.location())
        .universe("all", ["S000", "S001", "S002", "S003"]);
    let results = run_with(&sweep, &quiet()).expect("the sweep runs");
    assert_eq!((results.recorded(), results.failed()), (4, 0));
    for cell in results.cells().unwrap().values() {
        let m = cell.as_ref().unwrap();
        assert!(m.trades > 10 && m.exposure > 0.5, "{m:?}");
    }
}

#[test]
fn a_universe_that_cannot_run_says_which_and_why() {
    let scratch = Scratch::new();
    bars_dataset(&scratch);
    // A single-symbol strategy with a universe: refused before any data is read.
    let err = run_with(
        &Sweep::of::<SmaCrossover>()
            .grid(Grid::new().axis("fast", [5]).axis("slow", [20]))
            .data(scratch.location())
            .universe("u", ["S000", "S001"]),
        &quiet(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("sma_crossover") && err.contains("on_universe"),
        "{err}"
    );
    // A member that is not in the dataset is named.
    let err = run_with(
        &Sweep::of::<PairsZScore>()
            .grid(pairs_grid())
            .data(scratch.location())
            .universe("u", ["S000", "NOPE"]),
        &quiet(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("NOPE"), "{err}");
    // Bad universes are reported together.
    assert!("x=A,A".parse::<gridtest::data::Universe>().is_err());
    let err = Sweep::of::<PairsZScore>()
        .grid(pairs_grid())
        .data(scratch.location())
        .universe("S000", ["S000", "S001"])
        .universe("S000", ["S002"])
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("named like one of its symbols") && err.contains("defined twice"),
        "{err}"
    );
    // A member's corrupt file fails the universe's cells, naming the file.
    let bad = scratch.file("S001", "2024-01-03", "part-0.parquet");
    let files: Vec<_> = std::fs::read_dir(bad.parent().unwrap()).unwrap().collect();
    let victim = files[0].as_ref().unwrap().path();
    std::fs::write(&victim, b"not parquet at all").unwrap();
    let results = run_with(
        &Sweep::of::<PairsZScore>()
            .grid(pairs_grid())
            .data(scratch.location())
            .universe("u", ["S000", "S001"]),
        &quiet(),
    )
    .expect("a bad file fails cells, not the sweep");
    assert_eq!(results.failed(), 4);
    let failure = results
        .cells()
        .unwrap()
        .into_values()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Data);
    assert!(
        failure
            .message
            .contains(&victim.file_name().unwrap().to_string_lossy().to_string()),
        "{failure}"
    );
    // A single-symbol strategy fed a universe's data fails its cells, saying why.
    let a = ticks("AAA", vec![1, 2, 3], 1, 10.0);
    let b = ticks("BBB", vec![1, 2, 3], 2, 10.0);
    let pair = Shard::universe("ab", ["AAA", "BBB"], day("2024-01-02"), day("2024-01-02"));
    let data = ShardData::universe(pair, vec![a, b]).unwrap();
    let cells = run_chunk::<ScriptedOne>(&data, &sets(), &ExecModel::default());
    let failure = cells[0].as_ref().unwrap_err();
    assert!(
        failure.message.contains("universe of 2 symbols"),
        "{failure}"
    );
}
