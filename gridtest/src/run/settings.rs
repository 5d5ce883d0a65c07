//! Command-line settings applied to a sweep and its run options.

use std::time::Duration;

use super::RunArgs;
use crate::actors::BackendSettings;
use crate::cluster::ClusterConfig;
use crate::execute::{RunOptions, default_threads};
use crate::metrics::RankMetric;
use crate::status::StatusLog;
use crate::sweep::Sweep;
use crate::{Error, Result};

/// Applies command-line settings to a sweep and options; the results root is the resolved
/// cluster settings' (a head's default included).
#[must_use]
pub fn apply_args(mut sweep: Sweep, args: &RunArgs, config: &ClusterConfig) -> (Sweep, RunOptions) {
    if let Some(d) = &args.data {
        sweep = sweep.data(d.clone());
    }
    if let Some(s) = &args.symbols {
        sweep = sweep.symbols(s.clone());
    }
    for u in &args.universes {
        sweep = sweep.universe(u.name.clone(), u.symbols.clone());
    }
    if let Some(n) = args.random {
        let sampled = sweep.grid_ref().clone().sample(n, args.seed);
        sweep = sweep.grid(sampled);
    }
    let (from, to) = sweep.date_range();
    sweep = sweep.dates(args.from.or(from), args.to.or(to));
    let mut exec = sweep.exec_model().clone();
    if let Some(c) = args.commission_bps {
        exec.commission_bps = c;
    }
    if let Some(s) = args.slippage_bps {
        exec.slippage_bps = s;
    }
    if let Some(l) = args.max_leverage {
        exec.max_leverage = l;
    }
    if let Some(d) = args.trading_days_per_year {
        exec.trading_days_per_year = d;
    }
    if let Some(p) = args.periods_per_year {
        exec.periods_per_year = Some(p);
    }
    args.conventions.apply(&mut exec);
    sweep = sweep.exec(exec);
    let opts = RunOptions {
        threads: args.threads.unwrap_or_else(default_threads),
        cache_bytes: args.cache_mb << 20,
        unit_evals: args.unit_evals,
        progress_every: Duration::from_millis(args.progress_ms.max(10)),
        max_attempts: args.max_attempts,
        results: config.results.clone(),
        wait_for_nodes: args.wait_for_nodes,
        backends: (!args.no_gpu).then_some(BackendSettings {
            gpu_slots_per_device: args.gpu_slots,
            gpu_reserve_bytes: args.gpu_reserve_mb << 20,
            gpu_shard_budget_bytes: args.gpu_shard_mb << 20,
            require_gpu: args.require_gpu,
        }),
        rank_by: args.rank_by.unwrap_or(RankMetric::Sharpe),
        leaderboard_rows: args.leaderboard_rows,
        returns: crate::execute::ReturnsOptions {
            record: args.returns,
            memory_bytes: args.returns_memory << 20,
            write: args.write_returns,
        },
        prices: None,
        trades: matches!(args.trades, Some(None)),
        status: args
            .status_file
            .as_ref()
            .map_or_else(StatusLog::default, |path| {
                StatusLog::to_file(path, &config.node_name)
            }),
        cancel: tokio_util::sync::CancellationToken::new(),
        progress: crate::progress::ProgressFeed::default(),
        tail_splitting: true,
    };
    (sweep, opts)
}

/// Reads a price file (`--prices`).
pub(super) fn read_prices(path: &std::path::Path) -> Result<crate::sweep::Prices> {
    let problem = |why: String| Error::Config {
        problems: vec![format!("price file {}: {why}", path.display())],
    };
    let text = std::fs::read_to_string(path).map_err(|e| problem(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| problem(e.to_string()))
}
