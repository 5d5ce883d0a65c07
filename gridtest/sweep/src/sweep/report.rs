//! `report.html`: one self-contained page (no network, no CDN) per sweep — the leaderboard with
//! DSR, a heatmap of a metric over any two parameter axes (chosen in the page; the other axes
//! averaged), equity and drawdown curves of the top sets, the PBO panel (logit histogram, in- vs
//! out-of-sample scatter), the walk-forward windows, the trades of the best cell and per-node
//! throughput. The figures travel as JSON inside the page and a small inline script draws them
//! as SVG, so the page needs nothing but a browser.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::SweepError;
use super::cost::SweepCost;
use super::leaderboard::Leaderboard;
use super::node_stats::NodeStats;
use super::output::{LEADERBOARD_CSV, output_error};
use super::research_report::{PboSummary, ResearchReport, WalkForwardSummary};
use super::set_returns::SetReturns;
use crate::engine::Fill;
use crate::params::{Grid, ParamSetId};

/// The page's name in a sweep's output folder.
pub const REPORT_HTML: &str = "report.html";
/// Most grid points the heatmap carries (the page stays small); beyond, it says so.
pub const MAX_POINTS: usize = 200_000;
/// Equity curves drawn.
const CURVES: usize = 5;
/// Most fills of the best cell the page carries (every fill is in `best_trades.json`), so that
/// the page stays small (well under 2 MB) whatever the cell traded.
pub const MAX_FILLS_SHOWN: usize = 1_000;

/// The fills of the cell the page lists, as a sweep keeps them (`best_trades.json`).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct BestTrades {
    /// The cell (set and symbol).
    pub label: String,
    /// Its fills.
    pub fills: Vec<Fill>,
    /// Its symbol's price, outlined: `(timestamp, price)` of the lowest and the highest event of
    /// each of at most [`PRICE_BUCKETS`] stretches of equal length, in time order (empty for a
    /// universe).
    #[serde(default)]
    pub prices: Vec<(i64, f64)>,
    /// Its closed trades (the orders path, whose trace lists trades rather than fills; empty on
    /// the targets path, whose round trips the page reads from the fills).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trips: Vec<Trip>,
}

/// A closed trade as the page draws it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Trip {
    /// Entry time, nanoseconds since the epoch (UTC).
    pub entry: i64,
    /// Exit time.
    pub exit: i64,
    /// Entry price.
    pub entry_price: f64,
    /// Exit price.
    pub exit_price: f64,
    /// Whether it was long.
    pub long: bool,
    /// Its return, fees included.
    pub ret: f64,
}

/// Stretches of the best cell's history its price chart outlines (two points each).
pub const PRICE_BUCKETS: usize = 1_000;

/// The price outline of `(ts, price)` events ([`BestTrades::prices`]): per stretch of equal
/// length, its lowest and its highest event, in time order.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::sweep::report::price_outline;
/// let events: Vec<(i64, f64)> = (0..10).map(|i| (i, (i % 3) as f64)).collect();
/// let outline = price_outline(events.iter().copied(), events.len(), 2);
/// assert_eq!(outline, vec![(0, 0.0), (2, 2.0), (5, 2.0), (6, 0.0)]);
/// ```
#[must_use]
pub fn price_outline(
    events: impl Iterator<Item = (i64, f64)>,
    n: usize,
    buckets: usize,
) -> Vec<(i64, f64)> {
    let per = n.div_ceil(buckets.max(1)).max(1);
    let mut out = Vec::with_capacity(2 * buckets);
    let mut flush = |lo: Option<(i64, f64)>, hi: Option<(i64, f64)>| {
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo.0 == hi.0 {
                out.push(lo);
            } else if lo.0 < hi.0 {
                out.extend([lo, hi]);
            } else {
                out.extend([hi, lo]);
            }
        }
    };
    let mut lo: Option<(i64, f64)> = None;
    let mut hi: Option<(i64, f64)> = None;
    for (i, (ts, price)) in events.enumerate() {
        if i % per == 0 {
            flush(lo.take(), hi.take());
        }
        if !price.is_finite() {
            continue;
        }
        if lo.is_none_or(|l| price < l.1) {
            lo = Some((ts, price));
        }
        if hi.is_none_or(|h| price > h.1) {
            hi = Some((ts, price));
        }
    }
    flush(lo, hi);
    out
}

/// What the page shows.
#[derive(Debug)]
pub struct ReportInput<'a> {
    /// Title (strategy and sweep).
    pub title: String,
    /// The grid.
    pub grid: &'a Grid,
    /// The leaderboard (its top rows are listed).
    pub leaderboard: &'a Leaderboard,
    /// The research report and the sets' returns, when recorded.
    pub research: Option<(&'a ResearchReport, &'a SetReturns)>,
    /// The best cell's fills and price.
    pub trades: Option<BestTrades>,
    /// Per node.
    pub nodes: &'a BTreeMap<String, NodeStats>,
    /// What the sweep used and cost.
    pub cost: &'a SweepCost,
}

#[derive(Serialize)]
struct BoardRow {
    rank: usize,
    params: Vec<String>,
    sharpe: f64,
    dsr: Option<f64>,
    total_return: f64,
    max_drawdown: f64,
    closed_trades: u64,
    shards: usize,
}

#[derive(Serialize)]
struct Point {
    values: Vec<String>,
    metrics: BTreeMap<&'static str, Option<f64>>,
}

#[derive(Serialize)]
struct Curve {
    label: String,
    returns: Vec<f64>,
}

#[derive(Serialize)]
struct Trades {
    label: String,
    /// The first [`MAX_FILLS_SHOWN`] fills.
    fills: Vec<Fill>,
    /// Every fill of the cell.
    total: usize,
    /// The price outline.
    prices: Vec<(i64, f64)>,
    /// The closed trades (orders path).
    trips: Vec<Trip>,
}

/// The figures the page explains DSR, PBO and walk-forward with.
#[derive(Serialize)]
struct Explain {
    best: String,
    best_sharpe: f64,
    best_dsr: f64,
    benchmark_sharpe: f64,
    trials: u64,
    effective_trials: f64,
    days: usize,
}

#[derive(Serialize)]
struct NodeRow {
    name: String,
    units: u64,
    cells: u64,
    evaluations: u64,
    busy_s: f64,
    speed: f64,
}

#[derive(Serialize)]
struct PageData<'a> {
    summary: String,
    axes: Vec<String>,
    axis_values: Vec<Vec<String>>,
    metrics: Vec<&'static str>,
    leaderboard: Vec<BoardRow>,
    points: Vec<Point>,
    points_note: String,
    dates: Vec<String>,
    curves: Vec<Curve>,
    pbo: Option<&'a PboSummary>,
    walk_forward: Option<&'a WalkForwardSummary>,
    set_names: BTreeMap<u64, String>,
    research_note: String,
    explain: Option<Explain>,
    trades: Option<Trades>,
    nodes: Vec<NodeRow>,
    cost: &'a SweepCost,
}

/// Writes `report.html` into `dir` (which holds the sweep's `leaderboard.csv`).
///
/// # Errors
/// [`SweepError::Output`] if the leaderboard cannot be read or the page written.
pub fn write(dir: &Path, input: ReportInput<'_>) -> Result<(), SweepError> {
    let axes: Vec<String> = input.grid.axes().iter().map(|a| a.name.clone()).collect();
    let (points, points_note) = if input.leaderboard.ranked > MAX_POINTS {
        let note = format!("the grid has more than {MAX_POINTS} sets: no heatmap in the page");
        (Vec::new(), note)
    } else {
        let (points, note) = read_points(&dir.join(LEADERBOARD_CSV), &axes)?;
        let ranked = input.leaderboard.ranked;
        if note.is_empty() && points.len() < ranked {
            let note = format!(
                "leaderboard.csv holds the best {} of the {ranked} sets (--leaderboard-rows): \
                 the heatmap shows those",
                points.len()
            );
            (points, note)
        } else {
            (points, note)
        }
    };
    let mut data = PageData {
        summary: summary(&input),
        axis_values: input
            .grid
            .axes()
            .iter()
            .map(|a| a.values.iter().map(ToString::to_string).collect())
            .collect(),
        metrics: vec!["sharpe", "total_return", "dsr"],
        leaderboard: board_rows(input.leaderboard, &axes),
        axes,
        points,
        points_note,
        dates: Vec::new(),
        curves: Vec::new(),
        pbo: None,
        walk_forward: None,
        set_names: BTreeMap::new(),
        research_note: "no daily returns were recorded (--returns)".to_owned(),
        explain: None,
        trades: input.trades.map(|mut t| {
            let total = t.fills.len();
            t.fills.truncate(MAX_FILLS_SHOWN);
            Trades {
                label: t.label,
                fills: t.fills,
                total,
                prices: t.prices,
                trips: t.trips.into_iter().take(MAX_FILLS_SHOWN).collect(),
            }
        }),
        nodes: node_rows(input.nodes),
        cost: input.cost,
    };
    if let Some((report, returns)) = input.research {
        add_research(&mut data, (report, returns), input.leaderboard, input.grid);
    }
    let json = serde_json::to_string(&data)
        .map_err(|e| output_error(dir, e))?
        .replace("</", "<\\/");
    let page = include_str!("report/page.html")
        .replace("__TITLE__", &escape(&input.title))
        .replace("__DATA__", &json);
    let path = dir.join(REPORT_HTML);
    std::fs::write(&path, page).map_err(|e| output_error(&path, e))
}

/// The research figures of the page: curves, PBO, walk-forward, notes, the explanation.
fn add_research<'a>(
    data: &mut PageData<'a>,
    (report, returns): (&'a ResearchReport, &'a SetReturns),
    board: &Leaderboard,
    grid: &Grid,
) {
    let expander = grid.expander();
    let name_of = |returns: &SetReturns, index: u64| -> String {
        returns
            .sets
            .binary_search(&index)
            .ok()
            .and_then(|i| expander.set_at(returns.places[i].0))
            .map_or_else(|| format!("set {index}"), |s| s.to_string())
    };
    data.dates = returns.dates.iter().map(ToString::to_string).collect();
    data.curves = curves(board, returns);
    data.pbo = report.pbo.as_ref();
    data.walk_forward = report.walk_forward.as_ref();
    if let Some(wf) = &report.walk_forward {
        for &(_, set, _, _) in &wf.windows {
            data.set_names.insert(set, name_of(returns, set));
        }
    }
    data.research_note = report.notes.join("; ");
    data.explain = report.best.first().map(|best| Explain {
        best: best.params.clone(),
        best_sharpe: best.daily_sharpe,
        best_dsr: best.dsr,
        benchmark_sharpe: report.benchmark_sharpe,
        trials: report.trials,
        effective_trials: report.effective_trials,
        days: report.days,
    });
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn summary(input: &ReportInput<'_>) -> String {
    let mut s = format!(
        "{} parameter sets ranked by {}",
        input.leaderboard.ranked, input.leaderboard.metric
    );
    if let Some((r, _)) = input.research {
        s += &format!(
            "; {} days from {} to {}; {} trials (effective {:.1}); expected best Sharpe without \
             skill {:.4} per day",
            r.days,
            r.first_day.map(|d| d.to_string()).unwrap_or_default(),
            r.last_day.map(|d| d.to_string()).unwrap_or_default(),
            r.trials,
            r.effective_trials,
            r.benchmark_sharpe
        );
    }
    s
}

fn board_rows(board: &Leaderboard, axes: &[String]) -> Vec<BoardRow> {
    board
        .rows
        .iter()
        .take(20)
        .map(|r| BoardRow {
            rank: r.rank,
            params: axes
                .iter()
                .map(|a| r.params.get(a).map(ToString::to_string).unwrap_or_default())
                .collect(),
            sharpe: r.sharpe,
            dsr: r.dsr,
            total_return: r.total_return,
            max_drawdown: board.drawdown_sign.show(r.max_drawdown),
            closed_trades: r.closed_trades,
            shards: r.shards,
        })
        .collect()
}

/// The sets whose daily returns the page draws: the leaderboard's top sets that have them, the
/// sets the walk-forward windows chose and the full-sample winner. A sweep keeps their returns
/// (`returns.parquet`) so that `gridtest report` can draw the page again.
#[must_use]
pub fn shown_sets(
    board: &Leaderboard,
    research: Option<&ResearchReport>,
    returns: &SetReturns,
) -> std::collections::HashSet<ParamSetId> {
    let with_returns: std::collections::HashSet<ParamSetId> =
        returns.places.iter().map(|&(_, id)| id).collect();
    let mut shown: std::collections::HashSet<ParamSetId> = board
        .rows
        .iter()
        .map(|r| r.param_set_id)
        .filter(|id| with_returns.contains(id))
        .take(CURVES)
        .collect();
    if let Some(wf) = research.and_then(|r| r.walk_forward.as_ref()) {
        let chosen = wf.windows.iter().map(|w| w.1);
        for set in chosen.chain([wf.full_sample_winner]) {
            if let Ok(i) = returns.sets.binary_search(&set) {
                shown.insert(returns.places[i].1);
            }
        }
    }
    shown
}

/// Every set's axis values and metrics, from `leaderboard.csv` (at most [`MAX_POINTS`]).
fn read_points(path: &Path, axes: &[String]) -> Result<(Vec<Point>, String), SweepError> {
    let fail = |e: csv::Error| output_error(path, e);
    let mut reader = csv::Reader::from_path(path).map_err(fail)?;
    let headers = reader.headers().map_err(fail)?.clone();
    let at = |name: &str| headers.iter().position(|h| h == name);
    let axis_at: Vec<Option<usize>> = axes.iter().map(|a| at(a)).collect();
    let metric_at = [
        ("sharpe", at("sharpe")),
        ("total_return", at("total_return")),
        ("dsr", at("dsr")),
    ];
    let mut points = Vec::new();
    for record in reader.records() {
        let record = record.map_err(fail)?;
        if points.len() == MAX_POINTS {
            return Ok((
                Vec::new(),
                format!("the grid has more than {MAX_POINTS} sets: no heatmap in the page"),
            ));
        }
        points.push(Point {
            values: axis_at
                .iter()
                .map(|i| i.and_then(|i| record.get(i)).unwrap_or("").to_owned())
                .collect(),
            metrics: metric_at
                .iter()
                .map(|&(name, i)| {
                    let v = i.and_then(|i| record.get(i)).and_then(|s| s.parse().ok());
                    (name, v)
                })
                .collect(),
        });
    }
    Ok((points, String::new()))
}

/// The daily returns of the leaderboard's top sets that have them.
fn curves(board: &Leaderboard, returns: &SetReturns) -> Vec<Curve> {
    let index: BTreeMap<ParamSetId, usize> = returns
        .places
        .iter()
        .enumerate()
        .map(|(i, &(_, id))| (id, i))
        .collect();
    board
        .rows
        .iter()
        .filter_map(|r| {
            let i = *index.get(&r.param_set_id)?;
            Some(Curve {
                label: format!("#{} {}", r.rank, r.params),
                returns: returns.returns.set(i).to_vec(),
            })
        })
        .take(CURVES)
        .collect()
}

fn node_rows(nodes: &BTreeMap<String, NodeStats>) -> Vec<NodeRow> {
    nodes
        .iter()
        .map(|(name, s)| NodeRow {
            name: name.clone(),
            units: s.units,
            cells: s.cells,
            evaluations: s.evaluations,
            busy_s: s.busy.as_secs_f64(),
            speed: s.speed(),
        })
        .collect()
}
