//! Recording the sets' daily returns during a sweep and the research report at its end.

use std::path::Path;

use super::Plan;
use crate::data::{ShardData, ShardReader};
use crate::error::{Error, Result};
use crate::sweep::report::{self, BestTrades, ReportInput, Trip};
use crate::sweep::{
    Leaderboard, Prices, ResearchReport, ReturnsBook, SetReturns, SweepCost, SweepError,
    SweepResults, output,
};

/// Default memory budget for the sets' daily returns, MiB.
pub const DEFAULT_RETURNS_MB: u64 = 1024;

/// When a sweep records its cells' daily returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recording {
    /// Unless this node runs device (GPU) scorers: the device kernels do not record days, and a
    /// unit that records runs on the CPU engine.
    #[default]
    Auto,
    /// Always, device scorers or not (their units then run on the CPU engine).
    Always,
    /// Never: no research report.
    Never,
}

impl Recording {
    /// The names the command line and the config file take, in the order of the variants.
    pub const NAMES: [&str; 3] = ["auto", "always", "never"];
}

impl std::fmt::Display for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::NAMES[*self as usize])
    }
}

impl std::str::FromStr for Recording {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            _ => Err(format!(
                "`{s}` is not a recording: one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// What a sweep records of its sets' daily returns, and what it writes of them.
#[derive(Clone, Debug)]
pub struct ReturnsOptions {
    /// When to record each cell's daily returns and compute the research report (deflated
    /// Sharpe ratios, effective trials, PBO, walk-forward: `research.json`).
    pub record: Recording,
    /// Most bytes the sets' daily returns may take in memory (one `f64` per set and day): a
    /// sweep that needs more records nothing and says so.
    pub memory_bytes: u64,
    /// Also write every set's daily returns to `returns.parquet`.
    pub write: bool,
}

impl Default for ReturnsOptions {
    fn default() -> Self {
        Self {
            record: Recording::Auto,
            memory_bytes: DEFAULT_RETURNS_MB << 20,
            write: false,
        }
    }
}

/// The book the sweep's returns go to, or why there is none; `devices`: whether this node
/// runs device (GPU) scorers.
fn open_book(
    plan: &Plan,
    opts: &ReturnsOptions,
    devices: bool,
) -> std::result::Result<ReturnsBook, String> {
    match (opts.record, devices) {
        (Recording::Never, _) => {
            return Err("daily returns are not recorded (--returns never)".to_owned());
        }
        (Recording::Auto, true) => {
            return Err(
                "daily returns are not recorded on a node with GPU scorers (--returns always)"
                    .to_owned(),
            );
        }
        _ => {}
    }
    let mut infos = Vec::with_capacity(plan.infos.len());
    for (shard, info) in plan.spec.shards.iter().zip(&plan.infos) {
        match info {
            Ok(info) => infos.push(info.clone()),
            Err(_) => return Err(format!("shard {} could not be listed", shard.id())),
        }
    }
    let n_sets = plan.n_sets as u64;
    let bytes = ReturnsBook::bytes(&infos, n_sets);
    if bytes > opts.memory_bytes {
        return Err(format!(
            "the daily returns of {n_sets} sets would take {} MiB, over the budget of {} MiB \
             (--returns-memory)",
            bytes >> 20,
            opts.memory_bytes >> 20
        ));
    }
    Ok(ReturnsBook::new(&infos, n_sets))
}

/// The book for a run with `opts` (`None`, logged, when it records no returns); an error when
/// it ranks by DSR without them.
pub(super) fn book_for(
    plan: &Plan,
    opts: &super::RunOptions,
    devices: bool,
) -> Result<Option<ReturnsBook>> {
    match open_book(plan, &opts.returns, devices) {
        Ok(book) => Ok(Some(book)),
        Err(why) if opts.rank_by == crate::metrics::RankMetric::Dsr => Err(Error::Config {
            problems: vec![format!(
                "--rank-by dsr needs the sets' daily returns, but {why}"
            )],
        }),
        Err(why) => {
            tracing::info!(why = %why, "no research report");
            Ok(None)
        }
    }
}

/// Computes the research report from the recorded returns and writes `research.json` (and
/// `returns.parquet` when asked) into `out`; the report and the sets' returns.
pub(super) async fn conclude(
    book: ReturnsBook,
    plan: &Plan,
    opts: &ReturnsOptions,
    out: &Path,
) -> Result<(ResearchReport, SetReturns)> {
    // The last rung of a search deflates by every set the search tried.
    let trials = plan
        .spec
        .search
        .as_ref()
        .map_or(plan.n_sets as u64, |rung| rung.trials);
    let per_year = plan.spec.exec.trading_days_per_year;
    let expander = plan.spec.grid.expander();
    let (write, out) = (opts.write, out.to_owned());
    let mismatched = book.mismatched();
    tokio::task::spawn_blocking(move || -> Result<(ResearchReport, SetReturns)> {
        let returns = book.finish();
        let mut report = ResearchReport::compute(&returns, trials, per_year);
        if mismatched > 0 {
            report.notes.push(format!(
                "{mismatched} cells' daily returns did not match their shard's days and were left out"
            ));
        }
        for best in &mut report.best {
            let position = returns
                .places
                .iter()
                .find(|(_, id)| *id == best.param_set)
                .map(|&(p, _)| p);
            if let Some(set) = position.and_then(|p| expander.set_at(p)) {
                best.params = set.to_string();
            }
        }
        let path = out.join("research.json");
        let json = serde_json::to_vec_pretty(&report).expect("reports serialise");
        std::fs::write(&path, json).map_err(|e| output_error(&path, e))?;
        if write {
            returns.write_parquet(&out.join("returns.parquet"))?;
        }
        Ok((report, returns))
    })
    .await
    .map_err(|e| Error::actors("computing the research report", e))?
}

/// The fills of the best set on the first shard, traced again (one set, one shard), with the
/// shard's price outline; none when that shard is larger than the cache budget `cache_bytes`
/// (it would be loaded whole).
pub(super) async fn trace_best(
    plan: &Plan,
    board: &Leaderboard,
    cache_bytes: u64,
) -> Option<BestTrades> {
    let row = board.rows.first()?;
    let shard = plan.spec.shards.first()?;
    let info = plan.infos.first()?.as_ref().ok()?;
    if info.bytes_in_memory() > cache_bytes {
        tracing::info!(shard = %shard, "the report lists no trades: the shard exceeds the cache");
        return None;
    }
    let data = ShardReader::try_new(&plan.dataset)
        .ok()?
        .load(shard)
        .await
        .ok()?;
    let (set, exec, trace) = (
        row.params.clone(),
        plan.spec.exec.clone(),
        plan.strategy.trace,
    );
    let label = format!("{set} on {}", shard.symbol());
    let (prices, trips, traced) = tokio::task::spawn_blocking(move || {
        let (_, traced) = trace(&data, &set, &exec);
        (outline(&data), trips(&data, &traced.trades), traced)
    })
    .await
    .ok()?;
    Some(BestTrades {
        label,
        fills: traced.fills,
        prices,
        trips,
    })
}

/// The orders path's closed trades, timed by the events of `data` they entered and left at.
fn trips(data: &ShardData, trades: &[crate::broker::ClosedTrade]) -> Vec<Trip> {
    if trades.is_empty() {
        return Vec::new();
    }
    // Where each batch starts among the shard's events, to find an event's batch by search.
    let starts: Vec<usize> = data
        .batches()
        .iter()
        .scan(0, |next, b| {
            let start = *next;
            *next += b.len();
            Some(start)
        })
        .collect();
    let at = |index: u64| {
        let i = usize::try_from(index).ok()?;
        let batch = starts.partition_point(|&s| s <= i).checked_sub(1)?;
        data.batches()[batch].ts().get(i - starts[batch]).copied()
    };
    trades
        .iter()
        .filter_map(|t| {
            Some(Trip {
                entry: at(t.entry_index)?,
                exit: at(t.exit_index)?,
                entry_price: t.entry_price,
                exit_price: t.exit_price,
                long: t.size > 0.0,
                ret: t.ret,
            })
        })
        .collect()
}

/// The price outline of a one-symbol shard (its mark column); empty for a universe.
fn outline(data: &ShardData) -> Vec<(i64, f64)> {
    let mark = data.kind().mark_column();
    if data.batches().iter().any(|b| b.members().is_some()) {
        return Vec::new();
    }
    let events = data.batches().iter().flat_map(|b| {
        b.ts()
            .iter()
            .copied()
            .zip(b.columns()[mark].iter().copied())
    });
    let n = usize::try_from(data.n_rows()).unwrap_or(usize::MAX);
    report::price_outline(events, n, report::PRICE_BUCKETS)
}

/// Writes `cost.json` and `report.html` beside the other outputs of `results`.
pub(super) fn write_page(
    results: &SweepResults,
    returns: Option<&SetReturns>,
    trades: Option<BestTrades>,
    prices: Option<Prices>,
) -> Result<()> {
    let info = results.run_info();
    let nodes = info.map(|i| i.nodes.clone()).unwrap_or_default();
    let gpu = info.map(|i| i.gpu_slots.clone()).unwrap_or_default();
    let energy = info
        .map(|i| i.gpu_energy_joules.clone())
        .unwrap_or_default();
    let cost = SweepCost::measure(&nodes, &gpu, prices)
        .with_gpu_energy(energy)
        .with_reads(info.map(|i| i.reads).unwrap_or_default());
    let path = results.output_dir().join(output::COST_JSON);
    let json = serde_json::to_vec_pretty(&cost).expect("costs serialise");
    std::fs::write(&path, json).map_err(|e| output_error(&path, e))?;
    keep_for_the_page(results, returns, trades.as_ref())?;
    let title = format!(
        "{} — sweep {}",
        results.strategy(),
        info.map(|i| i.sweep_id.to_string()).unwrap_or_default()
    );
    let input = ReportInput {
        title,
        grid: results.grid(),
        leaderboard: results.leaderboard(),
        research: results.research().zip(returns),
        trades,
        nodes: &nodes,
        cost: &cost,
    };
    Ok(report::write(results.output_dir(), input)?)
}

/// Keeps what `gridtest report` needs to draw the page again and the other files do not hold:
/// the daily returns of the sets the page draws (unless every set's were written) and the
/// best cell's fills.
fn keep_for_the_page(
    results: &SweepResults,
    returns: Option<&SetReturns>,
    trades: Option<&BestTrades>,
) -> Result<()> {
    let dir = results.output_dir();
    let path = dir.join(output::RETURNS_PARQUET);
    if let Some(returns) = returns
        && !path.exists()
    {
        let shown = report::shown_sets(results.leaderboard(), results.research(), returns);
        returns.only(&shown).write_parquet(&path)?;
    }
    if let Some(trades) = trades {
        let path = dir.join(output::BEST_TRADES_JSON);
        let json = serde_json::to_vec(trades).expect("fills serialise");
        std::fs::write(&path, json).map_err(|e| output_error(&path, e))?;
    }
    Ok(())
}

fn output_error(path: &Path, e: impl std::fmt::Display) -> Error {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
    .into()
}
