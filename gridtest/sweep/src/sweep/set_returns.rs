//! `ReturnsBook`: each parameter set's daily returns, summed over its shards as its cells become
//! final, into one series per set on the sweep's calendar.
//!
//! A set's return on a day is the equal-weight mean of its cells' returns that day over all the
//! sweep's shards (symbols), a shard without data that day counting 0: the daily return of a
//! portfolio that splits its equity evenly across the symbols' strategies and rebalances every
//! day. The calendar is every date on which some shard holds data. A set with a failed cell (or
//! a cell recorded without returns, e.g. by an earlier run of a resumed sweep) has no series.
//!
//! Memory: one `f64` per set and day plus 18 bytes per set, allocated up front, so a sweep
//! records only when [`ReturnsBook::bytes`] fits its budget.

mod file;

use std::collections::HashMap;

use chrono::NaiveDate;

use super::ledger::FinalCell;
use crate::data::{ShardId, ShardInfo};
use crate::params::ParamSetId;
use crate::research::Returns;

/// Daily returns of every set of a sweep, filled as cells become final.
#[derive(Debug)]
pub struct ReturnsBook {
    dates: Vec<NaiveDate>,
    /// For each shard, the calendar column of each of its days.
    columns: HashMap<ShardId, Vec<usize>>,
    n_shards: u16,
    sums: Vec<f64>,
    /// Cells of each set recorded with returns.
    cells: Vec<u16>,
    /// Each set's position in the grid's product and id, as its cells tell.
    places: Vec<(u64, ParamSetId)>,
    /// Cells whose returns did not fit their shard's days (a defect; such sets have no series).
    mismatched: u64,
}

/// The sets with a complete series, in grid order.
#[derive(Clone, Debug, PartialEq)]
pub struct SetReturns {
    /// The calendar.
    pub dates: Vec<NaiveDate>,
    /// Grid index of each set with a series.
    pub sets: Vec<u64>,
    /// Their positions in the grid's cartesian product and their ids.
    pub places: Vec<(u64, ParamSetId)>,
    /// Their series, in the same order.
    pub returns: Returns,
    /// Sets of the grid without a series (a failed cell, or one recorded without returns).
    pub lacking: u64,
}

/// Distinct dates holding data, for each shard and in all.
fn calendars(infos: &[ShardInfo]) -> (Vec<NaiveDate>, Vec<(ShardId, Vec<NaiveDate>)>) {
    let per_shard: Vec<(ShardId, Vec<NaiveDate>)> = infos
        .iter()
        .map(|info| {
            let mut days: Vec<NaiveDate> = info
                .files
                .iter()
                .filter(|f| f.rows > 0)
                .map(|f| f.date)
                .collect();
            days.dedup();
            (info.shard.id(), days)
        })
        .collect();
    let mut all: Vec<NaiveDate> = per_shard
        .iter()
        .flat_map(|(_, d)| d.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    (all, per_shard)
}

impl ReturnsBook {
    /// Bytes a book takes for `n_sets` sets over the shards `infos`.
    #[must_use]
    pub fn bytes(infos: &[ShardInfo], n_sets: u64) -> u64 {
        let days = calendars(infos).0.len() as u64;
        n_sets.saturating_mul(days.saturating_mul(8).saturating_add(18))
    }

    /// An empty book for `n_sets` sets over the shards `infos`.
    #[must_use]
    pub fn new(infos: &[ShardInfo], n_sets: u64) -> Self {
        let (dates, per_shard) = calendars(infos);
        let columns = per_shard
            .into_iter()
            .map(|(id, days)| {
                let cols = days
                    .iter()
                    .map(|d| dates.binary_search(d).unwrap_or_default())
                    .collect();
                (id, cols)
            })
            .collect();
        let n = usize::try_from(n_sets).unwrap_or(usize::MAX);
        Self {
            sums: vec![0.0; n.saturating_mul(dates.len())],
            cells: vec![0; n],
            places: vec![(0, ParamSetId(0)); n],
            n_shards: u16::try_from(infos.len()).unwrap_or(u16::MAX),
            dates,
            columns,
            mismatched: 0,
        }
    }

    /// Adds a final cell's returns to its set's series.
    pub fn offer(&mut self, cell: &FinalCell) {
        let (Ok(_), Some(columns)) = (&cell.outcome, self.columns.get(&cell.key.shard)) else {
            return;
        };
        if cell.day_returns.is_empty() {
            return;
        }
        if cell.day_returns.len() != columns.len() {
            self.mismatched += 1;
            return;
        }
        let Ok(set) = usize::try_from(cell.place.index) else {
            return;
        };
        let width = self.dates.len();
        let Some(row) = self.sums.get_mut(set * width..(set + 1) * width) else {
            return;
        };
        for (&c, &r) in columns.iter().zip(&cell.day_returns) {
            row[c] += r;
        }
        self.cells[set] = self.cells[set].saturating_add(1);
        self.places[set] = (cell.place.position, cell.key.param_set);
    }

    /// Cells whose returns did not match their shard's days.
    #[must_use]
    pub fn mismatched(&self) -> u64 {
        self.mismatched
    }

    /// The complete series: each set whose every cell was recorded with returns.
    #[must_use]
    pub fn finish(self) -> SetReturns {
        let width = self.dates.len();
        let scale = 1.0 / f64::from(self.n_shards.max(1));
        let mut returns = Returns::new(width);
        let (mut sets, mut places) = (Vec::new(), Vec::new());
        for (set, &cells) in self.cells.iter().enumerate() {
            if cells == self.n_shards && width > 0 {
                let row: Vec<f64> = self.sums[set * width..(set + 1) * width]
                    .iter()
                    .map(|s| s * scale)
                    .collect();
                returns.push(&row).expect("rows have the calendar's width");
                sets.push(set as u64);
                places.push(self.places[set]);
            }
        }
        SetReturns {
            dates: self.dates,
            lacking: self.cells.len() as u64 - sets.len() as u64,
            sets,
            places,
            returns,
        }
    }
}
