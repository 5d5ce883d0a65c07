//! `Leaderboard`: parameter sets ranked by a metric averaged across shards.

use std::cmp::Ordering;
use std::fmt::Write as _;

use comfy_table::presets::{ASCII_FULL_CONDENSED, UTF8_FULL_CONDENSED};
use comfy_table::{Cell, ContentArrangement, Table};

/// Terminal width below which the leaderboard is printed at its natural width, not fitted.
pub const MIN_FITTED_WIDTH: u16 = 60;
use serde::Serialize;

use crate::metrics::{DrawdownSign, Metrics, RankMetric};
use crate::params::{ParamSet, ParamSetId};

mod file_rows;

pub use file_rows::LeaderboardRows;

/// One parameter set's figures across the shards of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeaderRow {
    /// 1-based rank.
    pub rank: usize,
    /// The parameter set.
    pub params: ParamSet,
    /// Its id.
    pub param_set_id: ParamSetId,
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
    /// Position changes (entries, exits, resizes), summed.
    pub trades: u64,
    /// Closed trades (round trips: flat → position → flat, or a reversal), summed: what other
    /// backtesters call trades, and what the printed leaderboard shows.
    #[serde(default)]
    pub closed_trades: u64,
    /// Mean win rate.
    pub win_rate: f64,
    /// Mean profit factor.
    pub profit_factor: f64,
    /// Mean exposure.
    pub exposure: f64,
    /// Deflated Sharpe ratio of the set's daily returns across its shards, when they were
    /// recorded (see [`crate::sweep::ResearchReport`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dsr: Option<f64>,
}

impl LeaderRow {
    /// Names of the real-valued figures, in the order of [`LeaderRow::figures`].
    pub const FIGURES: [&'static str; 9] = [
        "score",
        "total_return",
        "sharpe",
        "sortino",
        "max_drawdown",
        "worst_drawdown",
        "win_rate",
        "profit_factor",
        "exposure",
    ];

    /// The real-valued figures, named by [`LeaderRow::FIGURES`].
    #[must_use]
    pub fn figures(&self) -> [f64; 9] {
        [
            self.score,
            self.total_return,
            self.sharpe,
            self.sortino,
            self.max_drawdown,
            self.worst_drawdown,
            self.win_rate,
            self.profit_factor,
            self.exposure,
        ]
    }
}

/// Parameter sets ranked by a metric aggregated across shards (its mean). Sets with a failed
/// cell rank after every complete set; ties break on the parameter set id.
///
/// Holds the best [`Leaderboard::rows`] only (at most [`LEADERBOARD_ROWS`]); every set is
/// ranked in the sweep's `leaderboard.csv`.
#[derive(Clone, Debug)]
pub struct Leaderboard {
    /// The ranking metric.
    pub metric: RankMetric,
    /// Axis names, in grid order (table columns).
    pub axes: Vec<String>,
    /// The best rows, best first.
    pub rows: Vec<LeaderRow>,
    /// Parameter sets ranked in all.
    pub ranked: usize,
    /// How [`Leaderboard::table`] and the report show drawdowns (rows hold them positive).
    pub drawdown_sign: DrawdownSign,
}

/// Rows a [`Leaderboard`] holds in memory.
pub const LEADERBOARD_ROWS: usize = 1_000;

/// One parameter set's figures summed over its shards, as its cells go by.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SetTally {
    ok: usize,
    failed: usize,
    score: f64,
    total_return: f64,
    sharpe: f64,
    sortino: f64,
    max_drawdown: f64,
    worst_drawdown: f64,
    trades: u64,
    closed_trades: u64,
    win_rate: f64,
    profit_factor: f64,
    exposure: f64,
}

impl Default for SetTally {
    fn default() -> Self {
        Self {
            ok: 0,
            failed: 0,
            score: 0.0,
            total_return: 0.0,
            sharpe: 0.0,
            sortino: 0.0,
            max_drawdown: 0.0,
            worst_drawdown: f64::NAN,
            trades: 0,
            closed_trades: 0,
            win_rate: 0.0,
            profit_factor: 0.0,
            exposure: 0.0,
        }
    }
}

impl SetTally {
    /// Counts one cell of the set.
    pub(crate) fn add(&mut self, outcome: Option<&Metrics>, metric: RankMetric) {
        let Some(m) = outcome else {
            self.failed += 1;
            return;
        };
        self.ok += 1;
        self.score += metric.of(m);
        self.total_return += m.total_return;
        self.sharpe += m.sharpe;
        self.sortino += m.sortino;
        self.max_drawdown += m.max_drawdown;
        self.worst_drawdown = self.worst_drawdown.max(m.max_drawdown);
        self.trades += m.trades;
        self.closed_trades += m.round_trips;
        self.win_rate += m.win_rate;
        self.profit_factor += m.profit_factor;
        self.exposure += m.exposure;
    }

    /// The set's row (rank 0: not ranked yet); `id` is `params`' id.
    pub(crate) fn row(&self, params: ParamSet, id: ParamSetId) -> LeaderRow {
        #[allow(clippy::cast_precision_loss, reason = "shard counts are small")]
        let mean = |sum: f64| {
            if self.ok == 0 {
                f64::NAN
            } else {
                sum / self.ok as f64
            }
        };
        LeaderRow {
            rank: 0,
            params,
            param_set_id: id,
            shards: self.ok,
            failed: self.failed,
            score: mean(self.score),
            total_return: mean(self.total_return),
            sharpe: mean(self.sharpe),
            sortino: mean(self.sortino),
            max_drawdown: mean(self.max_drawdown),
            worst_drawdown: self.worst_drawdown,
            trades: self.trades,
            closed_trades: self.closed_trades,
            win_rate: mean(self.win_rate),
            profit_factor: mean(self.profit_factor),
            exposure: mean(self.exposure),
            dsr: None,
        }
    }
}

/// Where a row ranks: `(incomplete, key)`, smaller first; incomplete means a failed cell or no
/// score; `key` is the score signed so that the best is smallest (infinite without a score).
pub(crate) fn rank_key(row: &LeaderRow, metric: RankMetric) -> (bool, f64) {
    let sign = if metric.higher_is_better() { -1.0 } else { 1.0 };
    let key = sign * row.score;
    (
        row.failed > 0 || row.score.is_nan(),
        if key.is_nan() { f64::INFINITY } else { key },
    )
}

/// The ranking order of two rows (ties break on the parameter set id).
pub(crate) fn rank_order(a: &LeaderRow, b: &LeaderRow, metric: RankMetric) -> Ordering {
    let (ka, kb) = (rank_key(a, metric), rank_key(b, metric));
    ka.0.cmp(&kb.0)
        .then(ka.1.total_cmp(&kb.1))
        .then(a.param_set_id.cmp(&b.param_set_id))
}

/// The best rows seen so far, at most `keep` of them.
pub(crate) struct BestRows {
    metric: RankMetric,
    keep: usize,
    rows: Vec<LeaderRow>,
    seen: usize,
}

impl BestRows {
    pub(crate) fn new(metric: RankMetric, keep: usize) -> Self {
        Self {
            metric,
            keep,
            rows: Vec::new(),
            seen: 0,
        }
    }

    pub(crate) fn offer(&mut self, row: LeaderRow) {
        self.seen += 1;
        self.rows.push(row);
        if self.rows.len() >= 2 * self.keep.max(1) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let metric = self.metric;
        self.rows.sort_by(|a, b| rank_order(a, b, metric));
        self.rows.truncate(self.keep);
    }

    /// The leaderboard of the best rows, ranked.
    pub(crate) fn into_leaderboard(mut self, axes: Vec<String>) -> Leaderboard {
        self.trim();
        for (i, row) in self.rows.iter_mut().enumerate() {
            row.rank = i + 1;
        }
        Leaderboard {
            metric: self.metric,
            axes,
            rows: self.rows,
            ranked: self.seen,
            drawdown_sign: DrawdownSign::default(),
        }
    }
}

impl Leaderboard {
    /// The best `top` rows as a table for the terminal: fitted to its width when it has a
    /// usable one, at natural width otherwise (a pipe, or a pseudo-terminal that reports no
    /// size, e.g. `docker run -t`); plain ASCII on a `TERM=dumb` terminal.
    #[must_use]
    pub fn table(&self, top: usize) -> Table {
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        self.table_within(top, Table::new().width(), dumb)
    }

    /// [`Leaderboard::table`] for a terminal `width` columns wide (`None`: unknown), in ASCII
    /// when `ascii`. Below [`MIN_FITTED_WIDTH`] columns no fitting is tried: the rows keep
    /// their natural width rather than wrap to a character per line.
    #[must_use]
    pub fn table_within(&self, top: usize, width: Option<u16>, ascii: bool) -> Table {
        let mut table = Table::new();
        table.load_preset(if ascii {
            ASCII_FULL_CONDENSED
        } else {
            UTF8_FULL_CONDENSED
        });
        match width {
            Some(w) if w >= MIN_FITTED_WIDTH => {
                table
                    .set_width(w)
                    .set_content_arrangement(ContentArrangement::Dynamic);
            }
            _ => {
                table.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        let mut header: Vec<String> = vec!["rank".into()];
        header.extend(self.axes.iter().cloned());
        header.extend(
            [
                &if self.metric == RankMetric::Dsr {
                    "rank: dsr".to_owned()
                } else {
                    format!("{} (mean)", self.metric)
                },
                "return",
                "sharpe",
                "dsr",
                "max dd",
                "closed trades",
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
                Cell::new(
                    row.dsr
                        .map_or_else(|| "-".to_owned(), |d| format!("{d:.3}")),
                ),
                Cell::new(format!(
                    "{:.2}%",
                    self.drawdown_sign.show(row.max_drawdown) * 100.0
                )),
                Cell::new(row.closed_trades),
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

    /// Writes the rows held as CSV (see [`LeaderCsv`]).
    ///
    /// # Errors
    /// An I/O or CSV error.
    pub fn write_csv<W: std::io::Write>(&self, w: W) -> csv::Result<()> {
        let mut out = LeaderCsv::new(w, &self.axes)?;
        for r in &self.rows {
            out.write(r)?;
        }
        out.finish()
    }
}

/// Leaderboard rows as CSV: rank, the axes, then the figures, `shards`, `failed`,
/// `param_set_id` and `dsr` (empty when the sweep recorded no daily returns).
pub struct LeaderCsv<W: std::io::Write> {
    out: csv::Writer<W>,
    axes: Vec<String>,
    number: String,
}

impl<W: std::io::Write> LeaderCsv<W> {
    /// Writes the header.
    ///
    /// # Errors
    /// An I/O or CSV error.
    pub fn new(w: W, axes: &[String]) -> csv::Result<Self> {
        let mut out = csv::Writer::from_writer(w);
        let mut header: Vec<&str> = vec!["rank"];
        header.extend(axes.iter().map(String::as_str));
        header.extend(&LeaderRow::FIGURES[..6]);
        header.extend(["trades", "closed_trades"]);
        header.extend(&LeaderRow::FIGURES[6..]);
        header.extend(["shards", "failed", "param_set_id", "dsr"]);
        out.write_record(&header)?;
        Ok(Self {
            out,
            axes: axes.to_vec(),
            number: String::new(),
        })
    }

    /// Writes a row.
    ///
    /// # Errors
    /// An I/O or CSV error.
    pub fn write(&mut self, r: &LeaderRow) -> csv::Result<()> {
        let mut field = |out: &mut csv::Writer<W>, v: &dyn std::fmt::Display| {
            self.number.clear();
            write!(self.number, "{v}").expect("formatting into a String");
            out.write_field(&self.number)
        };
        field(&mut self.out, &r.rank)?;
        for a in &self.axes {
            match r.params.get(a) {
                Some(v) => field(&mut self.out, v)?,
                None => self.out.write_field("")?,
            }
        }
        let figures = r.figures();
        for v in &figures[..6] {
            field(&mut self.out, v)?;
        }
        field(&mut self.out, &r.trades)?;
        field(&mut self.out, &r.closed_trades)?;
        for v in &figures[6..] {
            field(&mut self.out, v)?;
        }
        field(&mut self.out, &r.shards)?;
        field(&mut self.out, &r.failed)?;
        field(&mut self.out, &r.param_set_id)?;
        match r.dsr {
            Some(d) => field(&mut self.out, &d)?,
            None => self.out.write_field("")?,
        }
        self.out.write_record(None::<&[u8]>)
    }

    /// Flushes.
    ///
    /// # Errors
    /// An I/O error.
    pub fn finish(mut self) -> csv::Result<()> {
        self.out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
