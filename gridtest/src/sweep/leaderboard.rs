//! `Leaderboard`: parameter sets ranked by a metric averaged across shards.

use std::collections::BTreeMap;

use comfy_table::{Cell, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use super::SweepResults;
use crate::metrics::{Metrics, RankMetric};
use crate::params::ParamSet;

/// One parameter set's figures across the shards of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeaderRow {
    /// 1-based rank.
    pub rank: usize,
    /// The parameter set.
    pub params: ParamSet,
    /// Shards with a result.
    pub shards: usize,
    /// Shards whose cell failed.
    pub failed: usize,
    /// The ranking metric, averaged over the shards with a result.
    pub score: f64,
    /// Mean total return.
    pub total_return: f64,
    /// Mean Sharpe.
    pub sharpe: f64,
    /// Mean Sortino.
    pub sortino: f64,
    /// Mean maximum drawdown.
    pub max_drawdown: f64,
    /// Worst maximum drawdown.
    pub worst_drawdown: f64,
    /// Trades, summed.
    pub trades: u64,
    /// Mean win rate.
    pub win_rate: f64,
    /// Mean profit factor.
    pub profit_factor: f64,
    /// Mean exposure.
    pub exposure: f64,
}

/// Parameter sets ranked by a metric aggregated across shards (its mean). Sets with a failed
/// cell rank after every complete set; ties break on the parameter set id.
#[derive(Clone, Debug)]
pub struct Leaderboard {
    /// The ranking metric.
    pub metric: RankMetric,
    /// Axis names, in grid order (table columns).
    pub axes: Vec<String>,
    /// Rows, best first.
    pub rows: Vec<LeaderRow>,
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

impl Leaderboard {
    /// Ranks the results of a sweep.
    #[must_use]
    pub fn build(results: &SweepResults, metric: RankMetric) -> Self {
        let mut per_set: BTreeMap<usize, (Vec<&Metrics>, usize)> = BTreeMap::new();
        for (set_index, _, outcome) in results.rows() {
            let slot = per_set.entry(set_index).or_default();
            match outcome {
                Ok(m) => slot.0.push(m),
                Err(_) => slot.1 += 1,
            }
        }
        let mut rows: Vec<LeaderRow> = per_set
            .into_iter()
            .map(|(i, (ms, failed))| {
                let avg = |f: fn(&Metrics) -> f64| mean(ms.iter().map(|m| f(m)));
                LeaderRow {
                    rank: 0,
                    params: results.sets()[i].clone(),
                    shards: ms.len(),
                    failed,
                    score: mean(ms.iter().map(|m| metric.of(m))),
                    total_return: avg(|m| m.total_return),
                    sharpe: avg(|m| m.sharpe),
                    sortino: avg(|m| m.sortino),
                    max_drawdown: avg(|m| m.max_drawdown),
                    worst_drawdown: ms.iter().map(|m| m.max_drawdown).fold(f64::NAN, f64::max),
                    trades: ms.iter().map(|m| m.trades).sum(),
                    win_rate: avg(|m| m.win_rate),
                    profit_factor: avg(|m| m.profit_factor),
                    exposure: avg(|m| m.exposure),
                }
            })
            .collect();
        let sign = if metric.higher_is_better() { -1.0 } else { 1.0 };
        rows.sort_by(|a, b| {
            let key = |r: &LeaderRow| (r.failed > 0 || r.score.is_nan(), sign * r.score);
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.total_cmp(&kb.1))
                .then(a.params.id().cmp(&b.params.id()))
        });
        for (i, row) in rows.iter_mut().enumerate() {
            row.rank = i + 1;
        }
        Self {
            metric,
            axes: results.axes().to_vec(),
            rows,
        }
    }

    /// The best `top` rows as a table for the terminal.
    #[must_use]
    pub fn table(&self, top: usize) -> Table {
        let mut table = Table::new();
        table
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
        let mut header: Vec<String> = vec!["rank".into()];
        header.extend(self.axes.iter().cloned());
        header.extend(
            [
                &format!("{} (mean)", self.metric),
                "return",
                "sharpe",
                "max dd",
                "trades",
                "win rate",
                "shards",
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
        table.set_header(header);
        for row in self.rows.iter().take(top) {
            let mut cells = vec![Cell::new(row.rank)];
            cells.extend(self.axes.iter().map(|a| {
                Cell::new(
                    row.params
                        .get(a)
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                )
            }));
            cells.extend([
                Cell::new(format!("{:.4}", row.score)),
                Cell::new(format!("{:+.2}%", row.total_return * 100.0)),
                Cell::new(format!("{:.3}", row.sharpe)),
                Cell::new(format!("{:.2}%", row.max_drawdown * 100.0)),
                Cell::new(row.trades),
                Cell::new(format!("{:.1}%", row.win_rate * 100.0)),
                Cell::new(if row.failed > 0 {
                    format!("{} ({} failed)", row.shards, row.failed)
                } else {
                    row.shards.to_string()
                }),
            ]);
            table.add_row(cells);
        }
        table
    }

    /// Writes every row as CSV: rank, the axes, then the figures.
    ///
    /// # Errors
    /// An I/O or CSV error.
    pub fn write_csv<W: std::io::Write>(&self, w: W) -> csv::Result<()> {
        let mut out = csv::Writer::from_writer(w);
        let mut header: Vec<&str> = vec!["rank"];
        header.extend(self.axes.iter().map(String::as_str));
        header.extend([
            "score",
            "total_return",
            "sharpe",
            "sortino",
            "max_drawdown",
            "worst_drawdown",
            "trades",
            "win_rate",
            "profit_factor",
            "exposure",
            "shards",
            "failed",
            "param_set_id",
        ]);
        out.write_record(&header)?;
        for r in &self.rows {
            let mut rec = vec![r.rank.to_string()];
            rec.extend(
                self.axes
                    .iter()
                    .map(|a| r.params.get(a).map(ToString::to_string).unwrap_or_default()),
            );
            rec.extend([
                r.score.to_string(),
                r.total_return.to_string(),
                r.sharpe.to_string(),
                r.sortino.to_string(),
                r.max_drawdown.to_string(),
                r.worst_drawdown.to_string(),
                r.trades.to_string(),
                r.win_rate.to_string(),
                r.profit_factor.to_string(),
                r.exposure.to_string(),
                r.shards.to_string(),
                r.failed.to_string(),
                r.params.id().to_string(),
            ]);
            out.write_record(&rec)?;
        }
        out.flush()?;
        Ok(())
    }
}
