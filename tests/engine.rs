//! The engine against an independent implementation of the execution model: a cash-and-units
//! simulation that solves each rebalance by fixed-point iteration (not the engine's closed
//! form) and computes the metrics in two passes over the stored equity curve.

use gridtest::data::{Shard, ShardData};
use gridtest::engine::{ProfitFactorBasis, RatioConvention, run_chunk};
use gridtest::metrics::daily_ratios;
use gridtest::prelude::*;
use gridtest::{DataKind, ExecModel, Metrics};

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The target a scripted strategy returns at event `t`: changes with probability ~1/8.
fn scripted_target(seed: i64, style: &str, t: u64) -> f64 {
    let block = t / 8 + (splitmix(seed as u64 ^ t.rotate_left(17)) % 3);
    let h = splitmix((seed as u64).wrapping_mul(31) ^ block);
    let levels: &[f64] = match style {
        "long_only" => &[0.0, 1.0],
        "long_short" => &[-1.0, 0.0, 1.0],
        "fractional" => &[-0.75, -0.25, 0.0, 0.3, 0.5, 1.0],
        _ => &[0.0, 3.0, -2.5], // beyond max leverage: clamped
    };
    levels[(h % levels.len() as u64) as usize]
}

#[derive(Params, Clone, Debug)]
struct ScriptParams {
    seed: i64,
    style: String,
}

struct ScriptedTicks {
    seed: i64,
    style: String,
}

#[gridtest::strategy(name = "test_scripted_ticks")]
impl Strategy for ScriptedTicks {
    type Params = ScriptParams;
    type Feed = Ticks;
    fn new(p: &ScriptParams) -> Self {
        Self {
            seed: p.seed,
            style: p.style.clone(),
        }
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        scripted_target(self.seed, &self.style, now.index())
    }
}

struct ScriptedBars {
    seed: i64,
    style: String,
}

#[gridtest::strategy(name = "test_scripted_bars")]
impl Strategy for ScriptedBars {
    type Params = ScriptParams;
    type Feed = Bars;
    fn new(p: &ScriptParams) -> Self {
        Self {
            seed: p.seed,
            style: p.style.clone(),
        }
    }
    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        scripted_target(self.seed, &self.style, now.index())
    }
}

/// Independent simulation: cash and units; `fill[t]` executes the target of `t-1`, `mark[t]`
/// values the book at the end of event `t`. Returns the metrics, the profit factor from round
/// trips' returns, and the equity after every event.
fn reference(
    fill: &[f64],
    mark: &[f64],
    targets: &[f64],
    c: f64,
    days: u32,
    bars: bool,
) -> (Metrics, f64, Vec<f64>) {
    reference_with(fill, mark, c, days, bars, |t, _, _| targets[t as usize])
}

/// [`reference`] with the target at event `t` from `policy(t, equity, position)`: the
/// simulation's own equity and position (a signed fraction of equity) after event `t`.
fn reference_with(
    fill: &[f64],
    mark: &[f64],
    c: f64,
    days: u32,
    bars: bool,
    policy: impl Fn(u64, f64, f64) -> f64,
) -> (Metrics, f64, Vec<f64>) {
    let n = fill.len();
    let (mut cash, mut units, mut held) = (1.0f64, 0.0f64, 0.0f64);
    let mut equity = vec![1.0f64];
    let mut decided = policy(0, 1.0, 0.0);
    let (mut trades, mut exposed) = (0u64, 0u64);
    let (mut entry, mut round_trips, mut wins, mut gross_win, mut gross_loss) =
        (1.0, 0u64, 0u64, 0.0, 0.0);
    let (mut win_ret, mut loss_ret) = (0.0f64, 0.0f64);
    for t in 1..n {
        let target = decided.clamp(-1.0, 1.0);
        let was_exposed = units != 0.0;
        if target != held {
            let e_fill = cash + units * fill[t];
            let x0 = units * fill[t];
            let mut x = target * e_fill;
            for _ in 0..100 {
                x = target * (e_fill - c * (x - x0).abs());
            }
            let fee = c * (x - x0).abs();
            let after = e_fill - fee;
            if held == 0.0 {
                entry = e_fill;
            } else if target == 0.0 || target.signum() != held.signum() {
                let pnl = after - entry;
                round_trips += 1;
                if pnl > 0.0 {
                    wins += 1;
                    gross_win += pnl;
                } else {
                    gross_loss -= pnl;
                }
                let ret = after / entry - 1.0;
                if ret > 0.0 {
                    win_ret += ret;
                } else {
                    loss_ret -= ret;
                }
                entry = after;
            }
            cash -= (x - x0) + fee;
            units = x / fill[t];
            held = target;
            trades += 1;
        }
        exposed += u64::from(was_exposed || (bars && units != 0.0));
        let e = cash + units * mark[t];
        equity.push(e);
        decided = policy(t as u64, e, units * mark[t] / e);
    }
    let r: Vec<f64> = equity.windows(2).map(|w| w[1] / w[0] - 1.0).collect();
    let k = r.len() as f64;
    let mean = r.iter().sum::<f64>() / k;
    let std = (r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let downside = (r.iter().map(|x| x.min(0.0).powi(2)).sum::<f64>() / k).sqrt();
    let per_year = (252.0 * n as f64 / f64::from(days)).sqrt();
    let mut peak = 1.0f64;
    let mut max_dd = 0.0f64;
    for &e in &equity {
        peak = peak.max(e);
        max_dd = max_dd.max(1.0 - e / peak);
    }
    let m = Metrics {
        n_ticks: n as u64,
        trades,
        total_return: equity[n - 1] - 1.0,
        max_drawdown: max_dd,
        sharpe: if std > 0.0 {
            mean / std * per_year
        } else {
            0.0
        },
        sortino: if downside > 0.0 {
            mean / downside * per_year
        } else {
            0.0
        },
        round_trips,
        win_rate: if round_trips > 0 {
            wins as f64 / round_trips as f64
        } else {
            0.0
        },
        profit_factor: if gross_loss > 0.0 {
            gross_win / gross_loss
        } else if gross_win > 0.0 {
            f64::INFINITY
        } else {
            0.0
        },
        exposure: exposed as f64 / k,
        open_at_end: held != 0.0,
    };
    (m, win_ret / loss_ret, equity)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a - b).abs() <= rel * b.abs().max(1e-12)
}

fn assert_matches(got: &Metrics, want: &Metrics, what: &str) {
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
        assert!(close(g, w, 1e-9), "{what}: {name} = {g}, reference {w}");
    }
}

fn random_walk(n: usize, seed: u64, start: f64) -> Vec<f64> {
    let mut p = start;
    (0..n as u64)
        .map(|t| {
            let u = (splitmix(seed ^ t) % 2001) as f64 / 1000.0 - 1.0; // [-1, 1]
            p *= 1.0 + 0.002 * u;
            p
        })
        .collect()
}

fn sets(styles: &[&str]) -> Vec<ParamSet> {
    styles
        .iter()
        .flat_map(|style| {
            (1..=4).map(move |seed| {
                ParamSet::new([
                    ("seed", ParamValue::Int(seed)),
                    ("style", ParamValue::Choice((*style).to_owned())),
                ])
            })
        })
        .collect()
}

const STYLES: [&str; 4] = ["long_only", "long_short", "fractional", "leveraged"];

#[test]
fn ticks_match_the_independent_simulation() {
    let n = 5000; // more than two tiles
    let price = random_walk(n, 42, 50.0);
    let ts: Vec<i64> = (0..n as i64).collect();
    let shard = Shard::new(
        "T",
        "2024-01-02".parse().unwrap(),
        "2024-01-03".parse().unwrap(),
    );
    let data = ShardData::from_ticks(shard, ts, price.clone(), vec![1.0; n], 2).unwrap();
    let exec = ExecModel::default()
        .with_commission_bps(3.0)
        .with_slippage_bps(2.0);
    let sets = sets(&STYLES);
    let cells = run_chunk::<ScriptedTicks>(&data, &sets, &exec);
    let by_returns = exec.with_profit_factor(ProfitFactorBasis::Returns);
    let cells_by_returns = run_chunk::<ScriptedTicks>(&data, &sets, &by_returns);
    for ((set, cell), by_returns) in sets.iter().zip(&cells).zip(&cells_by_returns) {
        let seed = match set.get("seed") {
            Some(ParamValue::Int(s)) => *s,
            _ => unreachable!(),
        };
        let style = set.get("style").unwrap().to_string();
        let targets: Vec<f64> = (0..n as u64)
            .map(|t| scripted_target(seed, &style, t))
            .collect();
        let (want, pf_returns, _) = reference(&price, &price, &targets, 5e-4, 2, false);
        assert!(want.trades > 100, "the script trades");
        assert_matches(cell.as_ref().unwrap(), &want, &set.to_string());
        // The profit factor from round trips' returns; every other metric the same bits.
        let mut got = *by_returns.as_ref().unwrap();
        assert!(
            close(got.profit_factor, pf_returns, 1e-9),
            "[{set}] {got:?} vs {pf_returns}"
        );
        got.profit_factor = cell.as_ref().unwrap().profit_factor;
        assert!(
            gridtest::metrics::bitwise_equal(&got, cell.as_ref().unwrap()),
            "[{set}]"
        );
    }
}

#[test]
fn bars_fill_at_the_next_open_and_mark_at_the_close() {
    let n = 3000;
    let close_px = random_walk(n, 7, 20.0);
    let open: Vec<f64> = close_px
        .iter()
        .enumerate()
        .map(|(t, c)| c * (1.0 + 0.001 * (((splitmix(t as u64) % 201) as f64 / 100.0) - 1.0)))
        .collect();
    let high: Vec<f64> = open
        .iter()
        .zip(&close_px)
        .map(|(o, c)| o.max(*c) * 1.001)
        .collect();
    let low: Vec<f64> = open
        .iter()
        .zip(&close_px)
        .map(|(o, c)| o.min(*c) * 0.999)
        .collect();
    let ts: Vec<i64> = (0..n as i64).collect();
    let shard = Shard::new(
        "B",
        "2024-01-02".parse().unwrap(),
        "2024-01-31".parse().unwrap(),
    );
    let data = ShardData::from_columns(
        shard,
        DataKind::Bars,
        ts,
        vec![open.clone(), high, low, close_px.clone(), vec![100.0; n]],
        22,
    )
    .unwrap();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let sets = sets(&STYLES);
    let cells = run_chunk::<ScriptedBars>(&data, &sets, &exec);
    for (set, cell) in sets.iter().zip(&cells) {
        let seed = match set.get("seed") {
            Some(ParamValue::Int(s)) => *s,
            _ => unreachable!(),
        };
        let style = set.get("style").unwrap().to_string();
        let targets: Vec<f64> = (0..n as u64)
            .map(|t| scripted_target(seed, &style, t))
            .collect();
        let (want, _, _) = reference(&open, &close_px, &targets, 1e-4, 22, true);
        assert_matches(cell.as_ref().unwrap(), &want, &set.to_string());
    }
}

#[test]
fn a_tick_strategy_on_bar_data_fails_its_cells_clearly() {
    let shard = Shard::new(
        "B",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let data = ShardData::from_columns(shard, DataKind::Bars, vec![1, 2], vec![vec![1.0; 2]; 5], 1)
        .unwrap();
    let cells = run_chunk::<ScriptedTicks>(&data, &sets(&["long_only"]), &ExecModel::default());
    let err = cells[0].as_ref().unwrap_err();
    assert!(
        err.message
            .contains("holds bars but the strategy consumes ticks"),
        "{err}"
    );
}

#[test]
fn in_memory_data_is_checked_like_a_file() {
    let shard = Shard::new(
        "T",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let err = ShardData::from_ticks(
        shard.clone(),
        vec![1, 2, 3],
        vec![1.0, f64::NAN, 1.0],
        vec![1.0; 3],
        1,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("memory: column `price` = NaN at row 1"),
        "{err}"
    );
    let err =
        ShardData::from_ticks(shard, vec![1, 3, 2], vec![1.0; 3], vec![1.0; 3], 1).unwrap_err();
    assert!(
        err.to_string()
            .contains("timestamp goes backwards at row 2"),
        "{err}"
    );
}

/// Annualisation: derived per shard as `trading days · events / distinct dates`, or stated
/// (`--periods-per-year`): Sharpe and Sortino scale by the root of the ratio, nothing else moves.
#[test]
fn stated_periods_per_year_rescale_sharpe_and_sortino_only() {
    let n = 5000;
    let price = random_walk(n, 7, 80.0);
    let shard = Shard::new(
        "T",
        "2024-01-02".parse().unwrap(),
        "2024-01-03".parse().unwrap(),
    );
    let data =
        ShardData::from_ticks(shard, (0..n as i64).collect(), price, vec![1.0; n], 2).unwrap();
    let sets = sets(&STYLES);
    let derived = ExecModel::default();
    let hourly = ExecModel::default().with_periods_per_year(24.0 * 365.0);
    let fewer_days = ExecModel::default().with_trading_days_per_year(365.0);
    let run = |exec: &ExecModel| -> Vec<Metrics> {
        run_chunk::<ScriptedTicks>(&data, &sets, exec)
            .into_iter()
            .map(Result::unwrap)
            .collect()
    };
    let (base, stated, calendar) = (run(&derived), run(&hourly), run(&fewer_days));
    let a = 252.0 * n as f64 / 2.0; // events per year derived: 2 dates
    for ((b, s), c) in base.iter().zip(&stated).zip(&calendar) {
        assert!(b.sharpe != 0.0 && b.sortino != 0.0);
        let k = (8760.0 / a).sqrt();
        assert!(
            close(s.sharpe, b.sharpe * k, 1e-12),
            "{} vs {}",
            s.sharpe,
            b.sharpe * k
        );
        assert!(close(s.sortino, b.sortino * k, 1e-12));
        let k = (365.0_f64 / 252.0).sqrt();
        assert!(close(c.sharpe, b.sharpe * k, 1e-12));
        assert_eq!(
            (s.total_return, s.max_drawdown, s.trades),
            (b.total_return, b.max_drawdown, b.trades)
        );
    }
    let bad = ExecModel::default().with_periods_per_year(0.0).validate();
    assert!(
        bad.unwrap_err()
            .iter()
            .any(|p| p.contains("periods_per_year"))
    );
}

#[test]
fn geometric_ratios_on_the_targets_path_come_from_each_dates_closing_equity() {
    let n = 3000;
    let price = random_walk(n, 11, 50.0);
    // 600 ticks a day over five days: day boundaries fall inside tiles and between batches
    let per_day = 600usize;
    let ns_per_day = 86_400_000_000_000i64;
    let ts: Vec<i64> = (0..n as i64)
        .map(|t| {
            let (day, tick) = (t / per_day as i64, t % per_day as i64);
            (19_724 + day) * ns_per_day + tick * 1_000_000
        })
        .collect();
    let shard = Shard::new(
        "G",
        "2024-01-02".parse().unwrap(),
        "2024-01-06".parse().unwrap(),
    );
    let data = ShardData::from_ticks(shard, ts, price.clone(), vec![1.0; n], 5).unwrap();
    let sets = sets(&STYLES);
    let arithmetic = ExecModel::default().with_commission_bps(3.0);
    let geometric = arithmetic
        .clone()
        .with_ratios(RatioConvention::Geometric)
        .with_risk_free_rate(0.01);
    let base = run_chunk::<ScriptedTicks>(&data, &sets, &arithmetic);
    let cells = run_chunk::<ScriptedTicks>(&data, &sets, &geometric);
    for ((set, b), g) in sets.iter().zip(&base).zip(&cells) {
        let (b, g) = (b.as_ref().unwrap(), g.as_ref().unwrap());
        let seed = match set.get("seed") {
            Some(ParamValue::Int(s)) => *s,
            _ => unreachable!(),
        };
        let style = set.get("style").unwrap().to_string();
        let targets: Vec<f64> = (0..n as u64)
            .map(|t| scripted_target(seed, &style, t))
            .collect();
        let (_, _, equity) = reference(&price, &price, &targets, 3e-4, 5, false);
        let closes: Vec<f64> = (1..=n / per_day).map(|d| equity[d * per_day - 1]).collect();
        let (sharpe, sortino) = daily_ratios(&closes, 252.0, 0.01);
        assert!(sharpe != 0.0 && sharpe != b.sharpe, "{set}: {sharpe}");
        assert!(
            close(g.sharpe, sharpe, 1e-9),
            "{set}: {} vs {sharpe}",
            g.sharpe
        );
        assert!(
            close(g.sortino, sortino, 1e-9),
            "{set}: {} vs {sortino}",
            g.sortino
        );
        assert_eq!(
            (g.total_return, g.max_drawdown, g.trades, g.profit_factor),
            (b.total_return, b.max_drawdown, b.trades, b.profit_factor),
            "{set}: only the ratios change"
        );
    }
}

/// Reads its account: trades the script until its equity falls below `floor` (then flat for
/// good), and cuts to half of equity any position that has grown beyond 0.9 of it.
struct Guarded {
    seed: i64,
    floor: f64,
    stopped: bool,
}

#[derive(Params, Clone, Debug)]
struct GuardParams {
    seed: i64,
    floor: f64,
}

#[gridtest::strategy(name = "test_guarded_ticks")]
impl Strategy for Guarded {
    type Params = GuardParams;
    type Feed = Ticks;
    fn new(p: &GuardParams) -> Self {
        Self {
            seed: p.seed,
            floor: p.floor,
            stopped: false,
        }
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        guarded(
            self.seed,
            self.floor,
            &mut self.stopped,
            now.index(),
            now.equity(),
            now.position(),
        )
    }
}

fn guarded(seed: i64, floor: f64, stopped: &mut bool, t: u64, equity: f64, position: f64) -> f64 {
    *stopped |= equity < floor;
    if *stopped {
        0.0
    } else if position.abs() > 0.9 {
        0.5 * position.signum()
    } else {
        scripted_target(seed, "fractional", t)
    }
}

#[test]
fn a_strategy_reads_its_equity_and_position_as_the_simulation_has_them() {
    let n = 6000;
    let price = random_walk(n, 23, 60.0);
    let shard = Shard::new(
        "A",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let data = ShardData::from_ticks(
        shard,
        (0..n as i64).collect(),
        price.clone(),
        vec![1.0; n],
        1,
    )
    .unwrap();
    let sets: Vec<ParamSet> = [(1, 0.97), (2, 0.99), (3, 0.0), (4, 0.985)]
        .iter()
        .map(|&(seed, floor)| {
            ParamSet::new([
                ("seed", ParamValue::Int(seed)),
                ("floor", ParamValue::Float(floor)),
            ])
        })
        .collect();
    let exec = ExecModel::default().with_commission_bps(2.0);
    let cells = run_chunk::<Guarded>(&data, &sets, &exec);
    let mut stops = 0;
    for (set, cell) in sets.iter().zip(&cells) {
        let (seed, floor) = match (set.get("seed"), set.get("floor")) {
            (Some(ParamValue::Int(s)), Some(ParamValue::Float(f))) => (*s, *f),
            _ => unreachable!(),
        };
        let stopped = std::cell::Cell::new(false);
        let policy = |t, e, w| {
            let mut s = stopped.get();
            let target = guarded(seed, floor, &mut s, t, e, w);
            stopped.set(s);
            target
        };
        let (want, _, _) = reference_with(&price, &price, 2e-4, 1, false, policy);
        stops += usize::from(stopped.get());
        assert_matches(cell.as_ref().unwrap(), &want, &set.to_string());
    }
    assert!(stops >= 1, "a floor was hit, so the account was read");
}

/// Reads its account from a helper the macro cannot see, without declaring `ACCOUNT`.
struct Undeclared;

fn equity_of(now: &Cursor<'_, Ticks>) -> f64 {
    now.equity()
}

impl Strategy for Undeclared {
    type Params = GuardParams;
    type Feed = Ticks;
    fn new(_: &GuardParams) -> Self {
        Self
    }
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        if equity_of(now) > 0.5 { 1.0 } else { 0.0 }
    }
}

#[test]
fn reading_an_undeclared_account_fails_the_cell_saying_so() {
    let shard = Shard::new(
        "A",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let data = ShardData::from_ticks(
        shard,
        vec![1, 2, 3],
        vec![10.0, 11.0, 12.0],
        vec![1.0; 3],
        1,
    )
    .unwrap();
    let set = ParamSet::new([
        ("seed", ParamValue::Int(1)),
        ("floor", ParamValue::Float(0.0)),
    ]);
    let cells = run_chunk::<Undeclared>(&data, &[set], &ExecModel::default());
    let failure = cells[0].as_ref().unwrap_err();
    assert_eq!(failure.kind, gridtest::engine::FailureKind::Panic);
    assert!(
        failure.message.contains("const ACCOUNT: bool = true"),
        "{failure}"
    );
}
