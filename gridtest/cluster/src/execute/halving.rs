//! Running a successive-halving search ([`crate::sweep::HalvingSchedule`]): one sweep per
//! rung, through the same supervisor, units and ledger as any sweep, so a cluster runs it and a
//! lost node costs only its units; each rung persisted under its own id (a restarted search
//! resumes every rung it finished from its ledger).

use std::collections::HashSet;

use super::{NodeSetup, RunOptions, execute, plan};
use crate::data::ShardInfo;
use crate::error::{Error, Result};
use crate::metrics::RankMetric;
use crate::params::{Grid, ParamSetId};
use crate::sweep::{
    Halving, HalvingReport, HalvingSchedule, RungReport, SearchRung, Sweep, SweepError,
    SweepResults, output,
};

/// Runs `sweep` as a successive-halving search in this process (the local counterpart of a
/// head's): the last rung's results (every survivor on the whole history, its deflated Sharpe
/// ratios counting every set the search tried) and what each rung did.
///
/// # Errors
/// As [`super::run_sweep`]; [`Error::Config`] for settings the schedule refuses or when no set
/// of a rung completes.
pub async fn run_search(
    sweep: &Sweep,
    opts: &RunOptions,
    halving: Halving,
) -> Result<(SweepResults, HalvingReport)> {
    let setup = super::local_setup(opts);
    run_halving(sweep, opts, halving, &setup).await
}

/// Runs the rungs of a search of `sweep` one after another on this node's `setup`.
pub(crate) async fn run_halving(
    sweep: &Sweep,
    opts: &RunOptions,
    halving: Halving,
    setup: &NodeSetup,
) -> Result<(SweepResults, HalvingReport)> {
    let whole = plan(sweep).await?;
    let config = |problem: String| Error::Config {
        problems: vec![problem],
    };
    let schedule =
        HalvingSchedule::new(halving, whole.dates.len(), whole.n_sets as u64).map_err(config)?;
    let (dates, trials) = (whole.dates.clone(), whole.n_sets as u64);
    let exhaustive_evaluations = rows(&whole) * trials;
    drop(whole);
    let halving = schedule.halving();
    tracing::info!(
        eta = halving.eta,
        rungs = halving.rungs,
        sets = trials,
        share = schedule.share(),
        "successive halving planned"
    );
    let mut report = HalvingReport {
        halving,
        rungs: Vec::new(),
        evaluations: 0,
        exhaustive_evaluations,
    };
    let (from, _) = sweep.date_range();
    let mut grid = sweep.grid_ref().clone();
    let mut previous = None;
    for (rung, size) in (0u32..).zip(schedule.rungs()) {
        let last_date = dates[size.days - 1];
        let step = SearchRung {
            eta: halving.eta,
            rung,
            rungs: halving.rungs,
            days: size.days,
            trials,
            previous: previous.take(),
        };
        let rung_sweep = sweep
            .clone()
            .grid(grid.clone())
            .dates(from, Some(last_date))
            .rung(step);
        let last = rung + 1 == halving.rungs;
        let promoted = schedule
            .rungs()
            .get(rung as usize + 1)
            .map_or(0, |r| r.sets);
        let (results, done) = run_rung(&rung_sweep, opts, setup, last).await?;
        let sweep_id = done.sweep_id.clone();
        report.evaluations += done.evaluations;
        report.rungs.push(RungReport { promoted, ..done });
        if last {
            return Ok((results, report));
        }
        let best = best_positions(&results, &grid, promoted)?;
        if best.is_empty() {
            return Err(config(format!(
                "rung {rung} of the search (sweep {sweep_id}): no parameter set completed, so \
                 none can go on"
            )));
        }
        grid = sweep.grid_ref().clone().keep(best);
        previous = Some(sweep_id);
    }
    unreachable!("a schedule has at least one rung")
}

/// Runs one rung (`last`: the one on the whole history): its results and what it did (nothing
/// promoted yet).
async fn run_rung(
    rung_sweep: &Sweep,
    opts: &RunOptions,
    setup: &NodeSetup,
    last: bool,
) -> Result<(SweepResults, RungReport)> {
    let planned = plan(rung_sweep).await?;
    let step = rung_sweep
        .description()
        .search
        .as_deref()
        .cloned()
        .expect("a rung's sweep records its rung");
    let last_date = planned.dates.last().copied().unwrap_or_default();
    let evaluations = rows(&planned) * planned.n_sets as u64;
    let sweep_id = planned.sweep_id();
    tracing::info!(rung = step.rung, sweep = %sweep_id, days = step.days, until = %last_date,
        sets = planned.n_sets, "rung starts");
    let results = execute(planned, &rung_options(opts, last), setup.clone()).await?;
    let done = RungReport {
        rung: step.rung,
        sweep_id,
        days: step.days,
        last_date,
        sets: results.n_sets() as u64,
        evaluations,
        failed: results.failed(),
        promoted: 0,
        best: results
            .leaderboard()
            .rows
            .first()
            .map(|r| (r.params.to_string(), r.score)),
    };
    Ok((results, done))
}

/// Every rung but the last, and the last too when it ranks by DSR, records no daily returns:
/// the research report is the last rung's, on the whole history. Only the last rung writes
/// trades.
fn rung_options(opts: &RunOptions, last: bool) -> RunOptions {
    let mut rung = opts.clone();
    if !last {
        // The next rung's sets are read from this rung's ranking of every set.
        rung.leaderboard_rows = crate::sweep::LeaderboardRows::All;
        rung.trades = false;
    }
    if !last && opts.rank_by != RankMetric::Dsr {
        rung.returns.record = super::Recording::Never;
    }
    rung
}

/// Rows of a plan's shards.
fn rows(plan: &super::Plan) -> u64 {
    plan.infos
        .iter()
        .map(|i| i.as_ref().map_or(0, ShardInfo::n_rows))
        .sum()
}

/// The positions (in `grid`) of the best `keep` sets of a rung with no failed cell, from its
/// `leaderboard.csv` (every set, best first).
fn best_positions(results: &SweepResults, grid: &Grid, keep: u64) -> Result<Vec<u64>> {
    let path = results.output_dir().join(output::LEADERBOARD_CSV);
    let unreadable = |e: &dyn std::fmt::Display| -> Error {
        SweepError::Output {
            path: path.display().to_string(),
            reason: format!("cannot read the rung's ranking: {e}"),
        }
        .into()
    };
    let mut csv = csv::Reader::from_path(&path).map_err(|e| unreadable(&e))?;
    let headers = csv.headers().map_err(|e| unreadable(&e))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| unreadable(&format!("no column {name}")))
    };
    let (id_at, failed_at) = (column("param_set_id")?, column("failed")?);
    let mut best = HashSet::new();
    for record in csv.records() {
        if best.len() as u64 >= keep {
            break;
        }
        let record = record.map_err(|e| unreadable(&e))?;
        if record.get(failed_at) != Some("0") {
            continue;
        }
        let id: ParamSetId = record
            .get(id_at)
            .unwrap_or_default()
            .parse()
            .map_err(|e| unreadable(&e))?;
        best.insert(id);
    }
    Ok(grid
        .slice(0..grid.product_len() as u64)
        .filter(|(_, set)| best.contains(&set.id()))
        .map(|(position, _)| position)
        .collect())
}
