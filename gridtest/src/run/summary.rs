//! What a finished run prints and writes: the leaderboard, the summary of the sweep and its
//! nodes, the first failures, and a search's rungs.

use std::path::PathBuf;

use super::{RunArgs, SweepReport};
use crate::Result;
use crate::sweep::{HalvingReport, SweepResults, output};

/// Prints and writes a finished sweep.
pub(super) fn report(
    results: SweepResults,
    args: &RunArgs,
    out_dir: PathBuf,
    search: Option<HalvingReport>,
) -> Result<SweepReport> {
    let leaderboard = results.leaderboard().clone();
    output::write_all(results.output_dir(), &out_dir)?;

    println!("{}", leaderboard.table(args.top));
    let t = &results.timings;
    let cells = results.recorded();
    let failed = results.failed();
    println!(
        "{cells} cells ({failed} failed) over {} shards × {} parameter sets in {:.2}s \
         (load {:.2}s, compute {:.2}s: {:.3e} tick-parameter evaluations/s)",
        results.shards().len(),
        results.n_sets(),
        t.wall.as_secs_f64(),
        t.load.as_secs_f64(),
        t.compute.as_secs_f64(),
        t.evaluations_per_second()
    );
    if let Some(info) = results.run_info() {
        println!(
            "sweep {}: {} cells computed by this run, {} resumed from the ledger",
            info.sweep_id,
            info.computed,
            cells - info.computed
        );
        print_reads(info.reads);
        for (node, s) in &info.nodes {
            println!(
                "  node {node}: {} units, {} cells, {:.3e} evaluations/s per scorer, {} units requeued{}",
                s.units,
                s.cells,
                s.speed(),
                s.requeued,
                if s.slow { ", SLOW" } else { "" }
            );
        }
        for (node, why) in &info.incompatible {
            println!("  node {node}: REFUSED, it runs other code than the sweep needs ({why})");
        }
        for (slot, s) in &info.gpu_slots {
            println!(
                "  GPU scorer {slot}: {} units, {} cells, {:.3e} evaluations/s",
                s.units,
                s.cells,
                s.speed()
            );
        }
    }
    for (set, shard, f) in results.failures().take(10) {
        println!("  failed: [{set}] on {shard}: {f}");
    }
    if failed > 10 {
        println!(
            "  … and {} more failed cells (see results.csv)",
            failed - 10
        );
    }
    if let Some(search) = &search {
        print_search(search);
        let path = out_dir.join(HALVING_JSON);
        let json = serde_json::to_vec_pretty(search).expect("reports serialise");
        std::fs::write(&path, json).map_err(|e| crate::sweep::SweepError::Output {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    println!("results written to {}", out_dir.display());
    Ok(SweepReport {
        results,
        leaderboard,
        out_dir,
        search,
    })
}

/// What a successive-halving run writes beside the last rung's outputs.
pub const HALVING_JSON: &str = "halving.json";

/// The rungs of a search, one line each.
fn print_search(search: &HalvingReport) {
    println!(
        "successive halving, eta {}: {} rungs, {:.3e} evaluations = {:.1}% of an exhaustive sweep's {:.3e}",
        search.halving.eta,
        search.rungs.len(),
        search.evaluations as f64,
        100.0 * search.share(),
        search.exhaustive_evaluations as f64
    );
    for r in &search.rungs {
        let best = r.best.as_ref().map_or_else(String::new, |(set, score)| {
            format!(", best [{set}] {score:.4}")
        });
        println!(
            "  rung {} (sweep {}): {} sets on {} days to {}, {:.3e} evaluations, {} failed cells, {} go on{best}",
            r.rung,
            r.sweep_id,
            r.sets,
            r.days,
            r.last_date,
            r.evaluations as f64,
            r.failed,
            r.promoted
        );
    }
}

/// What the sweep read from its dataset, against the dataset's size.
fn print_reads(reads: crate::data::DataReads) {
    println!(
        "read {} from the dataset: {:.2}× its {}",
        human_bytes(reads.bytes_read),
        reads.ratio(),
        human_bytes(reads.dataset_bytes)
    );
}

/// `n` bytes with a binary prefix (`1.5 MiB`).
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
