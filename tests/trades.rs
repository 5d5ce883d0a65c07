//! `--trades`: a sweep writes every cell's round trips to `trades.parquet` as the cells finish,
//! in one format for the targets and the orders path. Checked against each cell's metrics
//! (round trips, wins, total return), against the fills of the cell traced through the
//! engine's separate trace loop, against the broker's closed trades, across a resume, over a
//! history read by slices and member by member over a universe.

use std::collections::BTreeMap;
use std::path::Path;

use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array,
};
use datafusion::arrow::datatypes::TimestampNanosecondType;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use gridtest::data::synth::SynthSpec;
use gridtest::data::{ShardData, ShardReader};
use gridtest::engine::{CellTrace, ReversalFee, trace_cell};
use gridtest::metrics::Metrics;
use gridtest::prelude::*;
use gridtest::{DataKind, Error, Grid, RunOptions, Sweep, SweepResults};
use gridtest_examples::{Momentum, Rotation, SmaCrossover, SmaCrossoverOrders};
use gridtest_tests::{Scratch, quiet, run_with, runtime};

/// One row of `trades.parquet`.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    first_axis: i64,
    symbol: String,
    member: String,
    set: String,
    shard: String,
    trade: u32,
    size: f64,
    entry_index: u64,
    entry_time: i64,
    entry_price: f64,
    exit_index: Option<u64>,
    exit_time: Option<i64>,
    exit_price: Option<f64>,
    pnl: f64,
    ret: f64,
    fees: f64,
    end: String,
    open: bool,
}

fn read_trades(path: &Path) -> Vec<Row> {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let b = batch.unwrap();
        let col = |name: &str| b.column_by_name(name).unwrap_or_else(|| panic!("{name}"));
        let f64s = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        let u64s = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<UInt64Array>()
                .unwrap()
                .clone()
        };
        let texts = |name: &str| {
            col(name)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let times = |name: &str| col(name).as_primitive::<TimestampNanosecondType>().clone();
        // The grid's first axis (an integer in these tests).
        let first_axis = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let trade = col("trade").as_any().downcast_ref::<UInt32Array>().unwrap();
        let open = col("open").as_any().downcast_ref::<BooleanArray>().unwrap();
        let (set, shard, end) = (texts("param_set_id"), texts("shard"), texts("end"));
        let (symbol, member) = (texts("symbol"), texts("member"));
        let (size, entry_price, exit_price) =
            (f64s("size"), f64s("entry_price"), f64s("exit_price"));
        let (pnl, ret, fees) = (f64s("pnl"), f64s("return"), f64s("fees"));
        let (entry_index, exit_index) = (u64s("entry_index"), u64s("exit_index"));
        let (entry_time, exit_time) = (times("entry_time"), times("exit_time"));
        let some = |valid: bool| valid.then_some(());
        for i in 0..b.num_rows() {
            rows.push(Row {
                first_axis: first_axis.value(i),
                symbol: symbol.value(i).to_owned(),
                member: member.value(i).to_owned(),
                set: set.value(i).to_owned(),
                shard: shard.value(i).to_owned(),
                trade: trade.value(i),
                size: size.value(i),
                entry_index: entry_index.value(i),
                entry_time: entry_time.value(i),
                entry_price: entry_price.value(i),
                exit_index: some(exit_index.is_valid(i)).map(|()| exit_index.value(i)),
                exit_time: some(exit_time.is_valid(i)).map(|()| exit_time.value(i)),
                exit_price: some(exit_price.is_valid(i)).map(|()| exit_price.value(i)),
                pnl: pnl.value(i),
                ret: ret.value(i),
                fees: fees.value(i),
                end: end.value(i).to_owned(),
                open: open.value(i),
            });
        }
    }
    rows
}

/// The rows of each cell, `(param_set_id, shard)`, in trade order.
fn by_cell(rows: Vec<Row>) -> BTreeMap<(String, String), Vec<Row>> {
    let mut cells: BTreeMap<_, Vec<Row>> = BTreeMap::new();
    for row in rows {
        cells
            .entry((row.set.clone(), row.shard.clone()))
            .or_default()
            .push(row);
    }
    for trades in cells.values_mut() {
        trades.sort_by_key(|r| r.trade);
    }
    cells
}

fn ticks(scratch: &Scratch) {
    scratch.synth(&SynthSpec {
        symbols: 2,
        days: 12,
        ticks_per_day: 400,
        ..SynthSpec::default()
    });
}

fn grid() -> Grid {
    Grid::new()
        .axis("fast", [2, 5, 9])
        .axis("slow", [20, 40])
        .constrain("fast < slow")
}

fn with_trades() -> RunOptions {
    RunOptions {
        trades: true,
        ..quiet()
    }
}

fn load(scratch: &Scratch, shard: &gridtest::data::Shard) -> ShardData {
    load_kind(scratch, shard, DataKind::Ticks)
}

fn load_kind(scratch: &Scratch, shard: &gridtest::data::Shard, kind: DataKind) -> ShardData {
    let reader = ShardReader::try_new(&scratch.dataset(kind)).unwrap();
    runtime().block_on(reader.load(shard)).unwrap()
}

/// Round trips from a trace's fills, folded independently of the engine's trade book: a trip
/// opens where the target leaves zero and ends where it returns to zero or changes sign.
/// `(entry index, entry price, exit index, exit price)`.
fn trips_of_fills(trace: &CellTrace) -> Vec<(u64, f64, Option<u64>, Option<f64>)> {
    let mut trips = Vec::new();
    let mut open: Option<(u64, f64)> = None;
    let mut held = 0.0_f64;
    for f in &trace.fills {
        let now = f.weight;
        if held != 0.0 && (now == 0.0 || now.signum() != held.signum()) {
            let (index, price) = open.take().expect("an open trip");
            trips.push((index, price, Some(f.index), Some(f.price)));
        }
        if now != 0.0 && (held == 0.0 || now.signum() != held.signum()) {
            open = Some((f.index, f.price));
        }
        held = now;
    }
    trips.extend(open.map(|(index, price)| (index, price, None, None)));
    trips
}

fn results_rows(results: &SweepResults) -> Vec<(ParamSet, gridtest::data::Shard, Metrics)> {
    results
        .rows()
        .unwrap()
        .into_iter()
        .map(|(set, shard, outcome)| (set, shard, outcome.unwrap()))
        .collect()
}

/// Checks `trades` against the cell's metrics — closed trips as round trips, wins as the win
/// rate counts them, the P&L summing to the total return — and returns the closed ones.
fn closed_as_counted<'a>(trades: &'a [Row], m: &Metrics, label: &str) -> Vec<&'a Row> {
    let closed: Vec<&Row> = trades.iter().filter(|r| !r.open).collect();
    assert_eq!(closed.len() as u64, m.round_trips, "{label}: round trips");
    let wins = closed.iter().filter(|r| r.pnl > 0.0).count() as f64;
    assert!(
        (wins - m.win_rate * m.round_trips as f64).abs() < 1e-9,
        "{label}: wins"
    );
    let pnl: f64 = trades.iter().map(|r| r.pnl).sum();
    assert!(
        (pnl - m.total_return).abs() < 1e-9,
        "{label}: {pnl} vs {}",
        m.total_return
    );
    closed
}

/// The rows of `trades.parquet` in a sweep's output, by cell.
fn trades_of(results: &SweepResults) -> BTreeMap<(String, String), Vec<Row>> {
    by_cell(read_trades(
        &results
            .output_dir()
            .join(gridtest::sweep::output::TRADES_PARQUET),
    ))
}

#[test]
fn a_sweep_writes_every_cells_round_trips_as_its_metrics_count_them() {
    let (long_flat, _) = check_targets_trades::<SmaCrossover>(grid());
    assert!(
        long_flat >= 6,
        "most cells trade several times ({long_flat})"
    );
    let momentum = Grid::new()
        .axis("window", [20, 60])
        .axis("threshold_bps", [0.0, 2.0]);
    let (_, reversals) = check_targets_trades::<Momentum>(momentum);
    assert!(reversals > 10, "long-short cells reverse ({reversals})");
}

/// Sweeps `S` over `grid` with `--trades` and checks every cell's rows; the cells with three
/// trades or more, and the reversals (a trip that opens where the last one closed).
fn check_targets_trades<S: gridtest::RegisteredStrategy>(grid: Grid) -> (usize, usize) {
    let scratch = Scratch::new();
    ticks(&scratch);
    let sweep = Sweep::of::<S>().grid(grid).data(scratch.location());
    let results = run_with(&sweep, &with_trades()).unwrap();
    let plain = run_with(&sweep, &quiet()).unwrap();
    assert_eq!(
        results.cells().unwrap(),
        plain.cells().unwrap(),
        "keeping trades changes no metric"
    );
    let cells = trades_of(&results);
    let exec = gridtest::ExecModel::default();
    let (mut traded, mut reversals) = (0, 0);
    let axis = results.axes()[0].clone();
    for (set, shard, m) in results_rows(&results) {
        let key = (set.id().to_string(), shard.id().to_string());
        let trades = cells.get(&key).cloned().unwrap_or_default();
        let label = format!("[{set}] on {shard}");
        closed_as_counted(&trades, &m, &label);
        assert!(
            trades.iter().filter(|r| r.open).count() <= 1,
            "{label}: open"
        );
        for (k, r) in trades.iter().enumerate() {
            assert_eq!(r.trade as usize, k, "{label}: numbering");
            assert_eq!(
                Some(&ParamValue::Int(r.first_axis)),
                set.get(&axis),
                "{label}: axis"
            );
            assert_eq!(r.end, if r.open { "open" } else { "target" }, "{label}");
            assert!(r.fees >= 0.0 && r.size != 0.0, "{label}: {r:?}");
            if let (Some(exit), Some(time)) = (r.exit_index, r.exit_time) {
                assert!(
                    r.entry_index < exit && r.entry_time <= time,
                    "{label}: {r:?}"
                );
                let sign = if r.size > 0.0 { 1.0 } else { -1.0 };
                let gross = sign * (r.exit_price.unwrap() / r.entry_price - 1.0);
                assert!(
                    r.ret <= gross + 1e-12,
                    "{label}: fees lower the return: {r:?}"
                );
            }
        }
        reversals += trades
            .windows(2)
            .filter(|w| w[0].exit_index == Some(w[1].entry_index))
            .count();
        // The same trips as the cell's fills, traced through the engine's own trace loop.
        let data = load(&scratch, &shard);
        let (_, trace) = trace_cell::<S>(&data, &set, &exec);
        let file: Vec<_> = trades
            .iter()
            .map(|r| (r.entry_index, r.entry_price, r.exit_index, r.exit_price))
            .collect();
        assert_eq!(file, trips_of_fills(&trace), "{label}: trips");
        let sides: Vec<bool> = trades.iter().map(|r| r.size > 0.0).collect();
        let traced: Vec<bool> = trace
            .fills
            .iter()
            .filter(|f| trades.iter().any(|r| r.entry_index == f.index))
            .map(|f| f.weight > 0.0)
            .collect();
        assert_eq!(sides, traced, "{label}: sides");
        if let (Some(r), Some(f)) = (trades.first(), trace.fills.first()) {
            assert_eq!(
                (r.entry_time, r.entry_index),
                (f.ts, f.index),
                "{label}: first entry"
            );
        }
        traded += usize::from(trades.len() >= 3);
    }
    (traded, reversals)
}

#[test]
fn the_orders_path_writes_its_brokers_trades_in_the_same_format() {
    let scratch = Scratch::new();
    ticks(&scratch);
    let sweep = Sweep::of::<SmaCrossoverOrders>()
        .grid(grid())
        .data(scratch.location());
    let results = run_with(&sweep, &with_trades()).unwrap();
    let cells = trades_of(&results);
    let exec = gridtest::ExecModel::default();
    let cash = exec.broker.initial_cash;
    let mut closed_total = 0;
    for (set, shard, m) in results_rows(&results) {
        let key = (set.id().to_string(), shard.id().to_string());
        let trades = cells.get(&key).cloned().unwrap_or_default();
        let label = format!("[{set}] on {shard}");
        let (_, trace) = trace_cell::<SmaCrossoverOrders>(&load(&scratch, &shard), &set, &exec);
        let closed = closed_as_counted(&trades, &m, &label);
        assert_eq!(closed.len(), trace.trades.len(), "{label}: closed trades");
        for (r, t) in closed.iter().zip(&trace.trades) {
            assert_eq!(
                (r.size, r.entry_index, r.exit_index),
                (t.size, t.entry_index, Some(t.exit_index)),
                "{label}"
            );
            assert_eq!(
                (r.entry_price, r.exit_price),
                (t.entry_price, Some(t.exit_price)),
                "{label}"
            );
            assert_eq!((r.pnl, r.fees), (t.pnl / cash, t.fees / cash), "{label}");
            assert_eq!((r.ret, r.end.as_str()), (t.ret, "order"), "{label}");
        }
        closed_total += closed.len();
    }
    assert!(closed_total > 20, "the cells trade ({closed_total})");
}

#[test]
fn a_resumed_sweep_lists_the_trades_of_its_earlier_run() {
    let scratch = Scratch::new();
    ticks(&scratch);
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(grid())
        .data(scratch.location());
    let roots = tempfile::tempdir().unwrap();
    let root = |name: &str| roots.path().join(name);
    let opts = |results: &Path| RunOptions {
        results: Some(gridtest::storage::Location::parse(&results.display().to_string()).unwrap()),
        ..with_trades()
    };
    let whole = run_with(&sweep, &opts(&root("whole"))).unwrap();
    let id = whole.run_info().unwrap().sweep_id.to_string();
    let reference = trades_of(&whole);

    let kept = gridtest_tests::copy_with_half_its_ledger(&root("whole"), &root("half"), &id, false);
    assert!(kept > 0 && kept < whole.recorded(), "{kept}");

    let resumed = run_with(&sweep, &opts(&root("half"))).unwrap();
    assert_eq!(
        resumed.run_info().unwrap().computed,
        whole.recorded() - kept
    );
    let again = trades_of(&resumed);
    assert_eq!(again, reference, "the same trades, each once");
}

#[test]
fn a_history_read_by_slices_lists_the_trades_of_the_uncut_run() {
    let scratch = Scratch::new();
    ticks(&scratch);
    let sliced = RunOptions {
        cache_bytes: 0,
        ..with_trades()
    };
    for sweep in [
        Sweep::of::<SmaCrossover>(),
        Sweep::of::<SmaCrossoverOrders>(),
    ] {
        let sweep = sweep.grid(grid()).data(scratch.location());
        let whole = run_with(&sweep, &with_trades()).unwrap();
        let cut = run_with(&sweep, &sliced).unwrap();
        // A budget of nothing makes every day a slice, the trips booked so far carried in the
        // checkpoints from one to the next.
        let slices = cut.run_info().unwrap().ledger.slices;
        assert!(slices >= 10, "read by slices: {slices}");
        assert_eq!(whole.cells().unwrap(), cut.cells().unwrap());
        let (expected, got) = (trades_of(&whole), trades_of(&cut));
        assert_eq!(
            got,
            expected,
            "{}: the uncut run's trades",
            sweep.strategy().name
        );
        let overnight = expected
            .values()
            .flatten()
            .filter(|r| r.exit_time.is_some_and(|t| t / DAY != r.entry_time / DAY))
            .count();
        assert!(overnight > 0, "some trips span a cut between two slices");
    }
}

const DAY: i64 = 86_400_000_000_000;

/// `(member, entry index, entry price, exit index, exit price)`.
type MemberTrip = (String, u64, f64, Option<u64>, Option<f64>);

/// Each member's round trips from a universe cell's traced fills, folded independently of the
/// book: a member's trip opens where its target leaves zero and ends where it returns to zero
/// or changes sign; the trips still open follow, member by member.
fn member_trips_of_fills(trace: &CellTrace) -> Vec<MemberTrip> {
    let members = trace.symbols.len();
    let (mut held, mut open) = (vec![0.0_f64; members], vec![None; members]);
    let mut trips = Vec::new();
    for f in &trace.fills {
        let (m, now) = (f.member as usize, f.weight);
        if held[m] != 0.0 && (now == 0.0 || now.signum() != held[m].signum()) {
            let (index, price) = open[m].take().expect("an open trip");
            trips.push((
                trace.symbols[m].clone(),
                index,
                price,
                Some(f.index),
                Some(f.price),
            ));
        }
        if now != 0.0 && (held[m] == 0.0 || now.signum() != held[m].signum()) {
            open[m] = Some((f.index, f.price));
        }
        held[m] = now;
    }
    for (m, trip) in open.into_iter().enumerate() {
        if let Some((index, price)) = trip {
            trips.push((trace.symbols[m].clone(), index, price, None, None));
        }
    }
    trips
}

#[test]
fn a_universe_sweep_lists_each_members_round_trips() {
    let scratch = Scratch::new();
    scratch.synth(&SynthSpec {
        symbols: 3,
        days: 6,
        ticks_per_day: 400,
        ticks_per_bar: Some(10),
        ..SynthSpec::default()
    });
    let symbols = ["S000", "S001", "S002"];
    let sweep = Sweep::of::<Rotation>()
        .grid(
            Grid::new()
                .axis("lookback", [3, 8])
                .axis("top", [1, 2])
                .axis("every", [2, 5]),
        )
        .data(scratch.location())
        .universe("all", symbols);
    let results = run_with(&sweep, &with_trades()).unwrap();
    let cells = trades_of(&results);
    let exec = gridtest::ExecModel::default();
    let mut closed_total = 0;
    for (set, shard, m) in results_rows(&results) {
        let key = (set.id().to_string(), shard.id().to_string());
        let trades = cells.get(&key).cloned().unwrap_or_default();
        let label = format!("[{set}] on {shard}");
        let closed = closed_as_counted(&trades, &m, &label);
        assert!(trades.iter().all(|r| r.symbol == "all"), "{label}");
        let (_, trace) =
            trace_cell::<Rotation>(&load_kind(&scratch, &shard, DataKind::Bars), &set, &exec);
        let file: Vec<_> = trades
            .iter()
            .map(|r| {
                (
                    r.member.clone(),
                    r.entry_index,
                    r.entry_price,
                    r.exit_index,
                    r.exit_price,
                )
            })
            .collect();
        assert_eq!(file, member_trips_of_fills(&trace), "{label}: trips");
        closed_total += closed.len();
    }
    assert!(closed_total > 20, "the cells rotate ({closed_total})");
    let members: std::collections::BTreeSet<&str> = cells
        .values()
        .flatten()
        .map(|r| r.member.as_str())
        .collect();
    assert_eq!(
        members,
        symbols.into_iter().collect(),
        "every member is traded"
    );

    // Read by slices, the universe's trips are the same.
    let sliced = RunOptions {
        cache_bytes: 0,
        ..with_trades()
    };
    let cut = run_with(&sweep, &sliced).unwrap();
    assert!(cut.run_info().unwrap().ledger.slices >= 5);
    assert_eq!(trades_of(&cut), cells);
}

#[test]
fn closed_trades_exposure_is_refused_for_a_targets_strategy() {
    let scratch = Scratch::new();
    ticks(&scratch);
    // backtesting.py's Exposure Time is the orders path's; a targets strategy is told so.
    let closed_trades =
        gridtest::ExecModel::default().with_exposure(gridtest::engine::ExposureBasis::ClosedTrades);
    let exposure = Sweep::of::<SmaCrossover>()
        .grid(grid())
        .data(scratch.location())
        .exec(closed_trades);
    match run_with(&exposure, &quiet()) {
        Err(Error::InvalidSweep { problems, .. }) => {
            let why = problems.join("; ");
            assert!(
                why.contains("closed-trades") && why.contains("sma_crossover"),
                "{why}"
            );
        }
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.recorded())),
    }
}

/// Win rate and profit factor of a cell's closed round trips, rebuilt from its fills with cash
/// and units: a trip runs from the fill that leaves flat (equity before its fee) to the fill
/// that returns to flat or reverses; a reversal's fee is the trip's it closes, or with `split`
/// shared in proportion to the units it sells back and the units it opens.
fn trips_from_cash(trace: &CellTrace, split: bool) -> (f64, f64) {
    let (mut cash, mut units, mut held) = (1.0_f64, 0.0_f64, 0.0_f64);
    let mut entry: Option<f64> = None;
    let (mut wins, mut closed, mut gain, mut loss) = (0u32, 0u32, 0.0, 0.0);
    for f in &trace.fills {
        let marked = cash + units * f.price;
        let signed = if f.side == gridtest::engine::Side::Buy {
            f.units
        } else {
            -f.units
        };
        // Where the trip stands is the target's sign (units carry rounding).
        let now = f.weight;
        let reverses = held != 0.0 && (now == 0.0 || now.signum() != held.signum());
        let opening_fee = if split && reverses && now != 0.0 {
            let kept = (units + signed).abs();
            f.fee * kept / (units.abs() + kept)
        } else {
            0.0
        };
        if held == 0.0 {
            entry = Some(marked);
        } else if reverses {
            let exit = marked - (f.fee - opening_fee);
            let pnl = exit - entry.expect("an open trip");
            closed += 1;
            if pnl > 0.0 {
                wins += 1;
                gain += pnl;
            } else {
                loss -= pnl;
            }
            entry = (now != 0.0).then_some(exit);
        }
        cash -= signed * f.price + f.fee;
        units += signed;
        held = now;
    }
    let profit_factor = if loss > 0.0 {
        gain / loss
    } else {
        f64::INFINITY
    };
    (f64::from(wins) / f64::from(closed.max(1)), profit_factor)
}

#[test]
fn a_reversals_fee_goes_to_the_trip_it_closes_or_is_split_by_notional() {
    let scratch = Scratch::new();
    ticks(&scratch);
    let sets: Vec<ParamSet> = [(20, 0.0), (60, 0.0), (30, 2.0)]
        .iter()
        .map(|&(window, bps)| {
            ParamSet::new([
                ("window", ParamValue::Int(window)),
                ("threshold_bps", ParamValue::Float(bps)),
            ])
        })
        .collect();
    let closing = gridtest::ExecModel::default().with_commission_bps(5.0);
    let split = closing.clone().with_reversal_fee(ReversalFee::Split);
    let shard = gridtest::data::Shard::new(
        "S000",
        "2024-01-02".parse().unwrap(),
        "2024-01-17".parse().unwrap(),
    );
    let data = load(&scratch, &shard);
    let by_closing = gridtest::engine::run_chunk::<Momentum>(&data, &sets, &closing);
    let by_split = gridtest::engine::run_chunk::<Momentum>(&data, &sets, &split);
    let mut moved = 0;
    for ((set, c), s) in sets.iter().zip(by_closing).zip(by_split) {
        let (c, s) = (c.unwrap(), s.unwrap());
        assert_eq!(
            (c.total_return, c.sharpe, c.max_drawdown, c.round_trips),
            (s.total_return, s.sharpe, s.max_drawdown, s.round_trips),
            "[{set}]: the same equity and trips"
        );
        let (_, trace) = trace_cell::<Momentum>(&data, set, &closing);
        for (m, whose) in [(&c, false), (&s, true)] {
            let (win_rate, profit_factor) = trips_from_cash(&trace, whose);
            let label = format!("[{set}], split {whose}");
            assert!(
                (m.win_rate - win_rate).abs() < 1e-12,
                "{label}: {} vs {win_rate}",
                m.win_rate
            );
            let scale = profit_factor.abs().max(1.0);
            assert!(
                (m.profit_factor - profit_factor).abs() <= 1e-9 * scale,
                "{label}: {} vs {profit_factor}",
                m.profit_factor
            );
        }
        moved += usize::from(c.profit_factor != s.profit_factor);
    }
    assert!(moved > 0, "splitting moves some profit factor");
}
