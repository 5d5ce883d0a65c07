//! Reopening a persisted sweep: its `report.html` drawn again from the files the sweep left
//! under its results root (`spec.json`, `leaderboard.csv`, `research.json`, the daily returns of
//! the sets the page draws, the best cell's fills, `cost.json`), without the strategy's code or
//! its data; or from a sweep's local output folder (its `--out`), which holds the same files.
//! What `gridtest report <results-root> <sweep-id>` and `gridtest report <output-folder>` run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use object_store::ObjectStoreExt as _;

use crate::error::{Error, Result};
use crate::metrics::RankMetric;
use crate::params::{Grid, ParamSetId, ParamValue};
use crate::persist::SweepSpec;
use crate::storage::Location;
use crate::sweep::report::{self, BestTrades, ReportInput};
use crate::sweep::{
    LEADERBOARD_ROWS, LeaderRow, Leaderboard, ResearchReport, SetReturns, SweepCost, SweepId,
    output,
};

/// The files a persisted sweep's page is drawn from; the first is required.
const PAGE_SOURCES: [&str; 5] = [
    output::LEADERBOARD_CSV,
    output::RESEARCH_JSON,
    output::RETURNS_PARQUET,
    output::BEST_TRADES_JSON,
    output::COST_JSON,
];

/// Draws the page of the sweep `sweep_id` persisted under `root` again into `out` (created):
/// `out/report.html`, beside copies of the files it was drawn from. Returns the page's path.
///
/// # Errors
/// [`Error::UnknownSweep`] when no such sweep is persisted, [`Error::Read`] when one of its
/// files cannot be read or parsed, [`crate::sweep::SweepError::Output`] when `out` cannot be
/// written.
pub async fn rebuild_report(root: &Location, sweep_id: &SweepId, out: &Path) -> Result<PathBuf> {
    let spec = crate::replay::read_spec(root, sweep_id).await?;
    let (_, base) = root.store()?;
    let files = SweepFiles {
        location: root,
        dir: base.join("sweeps").join(sweep_id.as_str()),
    };
    draw(&files, &spec, out).await
}

/// Draws the page of the sweep whose files are in `folder` — a sweep's output folder (its
/// `--out`) or a persisted sweep's folder (`<root>/sweeps/<id>`) — into `out` (created; it may
/// be `folder` itself). Returns the page's path.
///
/// # Errors
/// [`Error::Read`] naming `folder` when it holds no `spec.json` (with the sweeps to name when it
/// is a results root), or naming a file that cannot be read or parsed;
/// [`crate::sweep::SweepError::Output`] when `out` cannot be written.
pub async fn rebuild_report_from_folder(folder: &Location, out: &Path) -> Result<PathBuf> {
    let (store, dir) = folder.store()?;
    let spec_path = dir.clone().join(output::SPEC_JSON);
    let url = folder.object_url(&spec_path);
    let bytes = match async { store.get(&spec_path).await?.bytes().await }.await {
        Ok(bytes) => bytes,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(Error::Read {
                path: url,
                reason: not_a_sweep_folder(folder, &*store, &dir).await,
            });
        }
        Err(e) => {
            return Err(Error::Read {
                path: url,
                reason: e.to_string(),
            });
        }
    };
    let spec: SweepSpec = serde_json::from_slice(&bytes).map_err(|e| Error::Read {
        path: url,
        reason: format!("not a sweep spec: {e}"),
    })?;
    let files = SweepFiles {
        location: folder,
        dir,
    };
    draw(&files, &spec, out).await
}

/// Why a folder without `spec.json` cannot be drawn, and what to name instead.
async fn not_a_sweep_folder(
    folder: &Location,
    store: &dyn object_store::ObjectStore,
    dir: &object_store::path::Path,
) -> String {
    let sweeps = dir.clone().join("sweeps");
    let listed = store.list_with_delimiter(Some(&sweeps)).await;
    let ids: Vec<String> = listed
        .map(|l| {
            l.common_prefixes
                .iter()
                .filter_map(|p| p.filename().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() {
        "no spec.json: not a sweep's output folder (name the folder a sweep wrote with --out, \
         or a results root and a sweep id)"
            .to_owned()
    } else {
        let shown: Vec<&str> = ids.iter().take(10).map(String::as_str).collect();
        format!(
            "{folder} is a results root: name one of its {} sweeps after it ({}{})",
            ids.len(),
            shown.join(", "),
            if ids.len() > shown.len() { ", …" } else { "" }
        )
    }
}

/// Where a sweep's files are: a folder of a store.
struct SweepFiles<'a> {
    location: &'a Location,
    dir: object_store::path::Path,
}

/// Draws the page of the sweep `spec` from `files` into `out`.
async fn draw(files: &SweepFiles<'_>, spec: &SweepSpec, out: &Path) -> Result<PathBuf> {
    let sweep_id = spec.id();
    std::fs::create_dir_all(out).map_err(|e| output::output_error(out, e))?;
    for (i, name) in PAGE_SOURCES.iter().enumerate() {
        let fetched = fetch(files, name, &out.join(name)).await?;
        if !fetched && i == 0 {
            return Err(Error::Read {
                path: files.location.object_url(&files.dir.clone().join(*name)),
                reason: "the sweep has no leaderboard: it never finished".to_owned(),
            });
        }
    }
    let read_json = |name: &str| -> Result<Option<Vec<u8>>> {
        let path = out.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(read_error(&path, e)),
        }
    };
    let parse = |name: &str, bytes: &[u8]| -> Result<serde_json::Value> {
        serde_json::from_slice(bytes).map_err(|e| read_error(&out.join(name), e))
    };
    let research: Option<ResearchReport> = match read_json(output::RESEARCH_JSON)? {
        Some(b) => Some(
            serde_json::from_value(parse(output::RESEARCH_JSON, &b)?)
                .map_err(|e| read_error(&out.join(output::RESEARCH_JSON), e))?,
        ),
        None => None,
    };
    let trades: Option<BestTrades> = match read_json(output::BEST_TRADES_JSON)? {
        Some(b) => serde_json::from_slice(&b).ok(),
        None => None,
    };
    let cost: SweepCost = match read_json(output::COST_JSON)? {
        Some(b) => {
            serde_json::from_slice(&b).map_err(|e| read_error(&out.join(output::COST_JSON), e))?
        }
        None => SweepCost::measure(&BTreeMap::new(), &BTreeMap::new(), None),
    };
    let returns_path = out.join(output::RETURNS_PARQUET);
    let returns = if returns_path.exists() {
        Some(SetReturns::read_parquet(&returns_path)?)
    } else {
        None
    };
    let mut leaderboard = read_board(&out.join(output::LEADERBOARD_CSV), &spec.grid)?;
    leaderboard.drawdown_sign = spec.exec.drawdown_sign;
    let input = ReportInput {
        title: format!("{} — sweep {sweep_id}", spec.strategy),
        grid: &spec.grid,
        leaderboard: &leaderboard,
        research: research.as_ref().zip(returns.as_ref()),
        trades,
        nodes: &BTreeMap::new(),
        cost: &cost,
    };
    report::write(out, input)?;
    Ok(out.join(report::REPORT_HTML))
}

/// Copies the sweep's file `name` to `to`; false when the sweep has no such file.
async fn fetch(files: &SweepFiles<'_>, name: &str, to: &Path) -> Result<bool> {
    let (store, _) = files.location.store()?;
    let path = files.dir.clone().join(name);
    let got = async { store.get(&path).await?.bytes().await }.await;
    match got {
        Ok(bytes) => {
            std::fs::write(to, &bytes).map_err(|e| output::output_error(to, e))?;
            Ok(true)
        }
        Err(object_store::Error::NotFound { .. }) => {
            let _ = std::fs::remove_file(to);
            Ok(false)
        }
        Err(e) => Err(Error::Read {
            path: files.location.object_url(&path),
            reason: e.to_string(),
        }),
    }
}

fn read_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// The best rows of a persisted `leaderboard.csv` (at most [`LEADERBOARD_ROWS`]), their sets
/// built from `grid`, and the metric it ranks by (the one whose column equals `score`).
fn read_board(path: &Path, grid: &Grid) -> Result<Leaderboard> {
    let fail = |e: &dyn std::fmt::Display| read_error(path, e);
    let mut csv = csv::Reader::from_path(path).map_err(|e| fail(&e))?;
    let headers = csv.headers().map_err(|e| fail(&e))?.clone();
    let at = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| fail(&format!("no column {name}")))
    };
    let columns: Vec<usize> = LeaderRow::FIGURES
        .iter()
        .map(|name| at(name))
        .collect::<Result<_>>()?;
    let (rank_at, id_at, dsr_at) = (at("rank")?, at("param_set_id")?, at("dsr")?);
    let (trades_at, shards_at, failed_at) = (at("trades")?, at("shards")?, at("failed")?);
    let closed_at = at("closed_trades")?;
    let mut rows = Vec::new();
    let mut ranked = 0;
    let mut metric = None;
    for record in csv.records() {
        let record = record.map_err(|e| fail(&e))?;
        ranked += 1;
        if rows.len() == LEADERBOARD_ROWS {
            continue;
        }
        let text = |i: usize| record.get(i).unwrap_or("");
        let number = |i: usize| text(i).parse::<f64>().unwrap_or(f64::NAN);
        let count = |i: usize| text(i).parse::<u64>().map_err(|e| fail(&e));
        let f: Vec<f64> = columns.iter().map(|&i| number(i)).collect();
        let dsr = text(dsr_at).parse::<f64>().ok();
        metric = metric.or_else(|| ranked_by(&headers, &record, f[0]));
        let id: ParamSetId = text(id_at).parse().map_err(|e| fail(&e))?;
        rows.push((
            id,
            LeaderRow {
                rank: usize::try_from(count(rank_at)?).unwrap_or(usize::MAX),
                params: crate::params::ParamSet::new(std::iter::empty::<(&str, ParamValue)>()),
                param_set_id: id,
                shards: usize::try_from(count(shards_at)?).unwrap_or(usize::MAX),
                failed: usize::try_from(count(failed_at)?).unwrap_or(usize::MAX),
                score: f[0],
                total_return: f[1],
                sharpe: f[2],
                sortino: f[3],
                max_drawdown: f[4],
                worst_drawdown: f[5],
                trades: count(trades_at)?,
                closed_trades: count(closed_at)?,
                win_rate: f[6],
                profit_factor: f[7],
                exposure: f[8],
                dsr,
            },
        ));
    }
    // The sets, from the grid (walked once, only the listed ones built into the rows).
    let mut wanted: HashMap<ParamSetId, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    for set in grid.iter() {
        if wanted.is_empty() {
            break;
        }
        if let Some(i) = wanted.remove(&set.id()) {
            rows[i].1.params = set;
        }
    }
    Ok(Leaderboard {
        metric: metric.unwrap_or(RankMetric::Sharpe),
        axes: grid.axes().iter().map(|a| a.name.clone()).collect(),
        rows: rows.into_iter().map(|(_, r)| r).collect(),
        ranked,
        drawdown_sign: crate::metrics::DrawdownSign::default(),
    })
}

/// The metric whose column holds `score` in `record`.
fn ranked_by(
    headers: &csv::StringRecord,
    record: &csv::StringRecord,
    score: f64,
) -> Option<RankMetric> {
    RankMetric::ALL.into_iter().find(|m| {
        headers
            .iter()
            .position(|h| h == m.column())
            .and_then(|i| record.get(i))
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(|v| v == score || (v.is_nan() && score.is_nan()))
    })
}
