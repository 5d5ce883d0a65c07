//! `--dry-run`: the sweep planned and its cost estimated ([`estimate`]), printed as JSON on
//! stdout; nothing computed, nothing written.

use crate::execute::{RunOptions, SweepEstimate, estimate};
use crate::sweep::Sweep;
use crate::{Error, Result};

/// Plans `sweep` with the run's settings and prints its [`SweepEstimate`].
pub(super) fn print(sweep: &Sweep, opts: &RunOptions) -> Result<SweepEstimate> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::actors("starting the async runtime", e))?;
    let estimate = runtime.block_on(estimate(sweep, opts))?;
    let json = serde_json::to_string_pretty(&estimate).expect("an estimate serialises");
    println!("{json}");
    tracing::info!(
        cells = estimate.cells,
        units = estimate.units,
        slices = estimate.slices,
        evaluations = estimate.evaluations,
        threads = estimate.threads,
        seconds = estimate.estimated_seconds,
        memory_mib = estimate.memory.total_bytes >> 20,
        "dry run: nothing computed"
    );
    Ok(estimate)
}
