//! `--replay <id>`: a persisted sweep (or one cell) re-executed and compared with the record;
//! with `--cell <set>@<symbol> --trades FILE --equity FILE`, the cell's fills and equity curve
//! written as CSV.

use std::path::Path;

use super::RunArgs;
use crate::execute::RunOptions;
use crate::replay::{ReplayScope, TracedCell, describe_difference};
use crate::storage::Location;
use crate::sweep::{SweepError, SweepId};
use crate::{Error, Result};

/// `--replay`: re-executes a persisted sweep and prints how its cells compare to the record.
pub(super) async fn replay(sweep_id: &SweepId, args: &RunArgs, opts: &RunOptions) -> Result<()> {
    let root = match &opts.results {
        Some(root) => root.clone(),
        None => Location::parse("results")?,
    };
    let scope = args.cell.clone().unwrap_or(crate::replay::ReplayScope::All);
    let report = crate::replay::replay(&root, sweep_id, &scope, args.force).await?;
    for c in &report.changed_files {
        println!("data changed (forced): {}: {}", c.url, c.change);
    }
    println!(
        "replayed {} cells of sweep {sweep_id}: {} identical, {} different",
        report.cells,
        report.identical,
        report.differences.len()
    );
    for (key, before, after) in report.differences.iter().take(10) {
        println!("  {key}: {}", describe_difference(before.as_ref(), after));
    }
    match report.differences.first() {
        Some((key, before, after)) => Err(Error::ReplayMismatch {
            sweep: sweep_id.clone(),
            cells: report.cells,
            differing: report.differences.len(),
            first: format!("{key}: {}", describe_difference(before.as_ref(), after)),
        }),
        None => Ok(()),
    }
}

/// Traces the cell `args.cell` of sweep `sweep_id` and writes the files asked for.
pub(super) async fn write(sweep_id: &SweepId, args: &RunArgs, opts: &RunOptions) -> Result<()> {
    let root = match &opts.results {
        Some(root) => root.clone(),
        None => Location::parse("results")?,
    };
    let Some(ReplayScope::Cell { param_set, symbol }) = &args.cell else {
        return Err(Error::Config {
            problems: vec![
                "--trades FILE and --equity FILE need --cell PARAM_SET_ID@SYMBOL".to_owned(),
            ],
        });
    };
    let cell = crate::replay::trace(&root, sweep_id, (*param_set, symbol), args.force).await?;
    if let Some(Some(path)) = &args.trades {
        write_trades(path, &cell).map_err(|e| output_error(path, e))?;
    }
    if let Some(path) = &args.equity {
        write_equity(path, &cell).map_err(|e| output_error(path, e))?;
    }
    println!(
        "cell {}: {} fills, {} closed trades, total return {:+.4}% ({} the record){}",
        cell.key,
        cell.trace.fills.len(),
        cell.outcome.as_ref().map_or(0, |m| m.round_trips),
        cell.outcome.as_ref().map_or(f64::NAN, |m| m.total_return) * 100.0,
        if cell.identical {
            "identical to"
        } else {
            "DIFFERENT from"
        },
        cell.outcome
            .as_ref()
            .err()
            .map_or_else(String::new, |f| format!(": the cell failed: {f}"))
    );
    if cell.identical {
        Ok(())
    } else {
        Err(Error::ReplayMismatch {
            sweep: sweep_id.clone(),
            cells: 1,
            differing: 1,
            first: cell.key.to_string(),
        })
    }
}

/// RFC 3339 (nanoseconds, UTC) of a timestamp.
fn time(ts: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ts).to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// The fills (targets path), or the closed trades (orders path: `size, entry_index,
/// exit_index, entry_price, exit_price, pnl, ret, fees, reason`).
fn write_trades(path: &Path, cell: &TracedCell) -> csv::Result<()> {
    let mut out = csv::Writer::from_path(path)?;
    if !cell.trace.trades.is_empty() {
        for t in &cell.trace.trades {
            out.serialize(t)?;
        }
        out.flush()?;
        return Ok(());
    }
    let symbols = &cell.trace.symbols;
    let mut header = vec![
        "index", "time", "price", "units", "side", "fee", "weight", "equity",
    ];
    if !symbols.is_empty() {
        header.insert(2, "symbol");
    }
    out.write_record(header)?;
    for f in &cell.trace.fills {
        let mut row = vec![
            f.index.to_string(),
            time(f.ts),
            f.price.to_string(),
            f.units.to_string(),
            f.side.to_string(),
            f.fee.to_string(),
            f.weight.to_string(),
            f.equity.to_string(),
        ];
        if let Some(symbol) = symbols.get(f.member as usize) {
            row.insert(2, symbol.clone());
        }
        out.write_record(row)?;
    }
    out.flush()?;
    Ok(())
}

fn write_equity(path: &Path, cell: &TracedCell) -> csv::Result<()> {
    let mut out = csv::Writer::from_path(path)?;
    out.write_record(["time", "equity"])?;
    for &(ts, equity) in &cell.trace.equity {
        out.write_record([time(ts), equity.to_string()])?;
    }
    out.flush()?;
    Ok(())
}

fn output_error(path: &Path, e: impl std::fmt::Display) -> Error {
    SweepError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
    .into()
}
