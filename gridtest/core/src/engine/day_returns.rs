//! `DayReturns`: each cell's return per calendar day, recorded by the engine when asked.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// The return of each parameter set of a chunk on each day of its shard that holds data.
///
/// A day's return is the equity at its last event over the equity at the previous day's last
/// event, minus 1 (equity starts at 1 before the first event). Days are UTC calendar days of the
/// events' timestamps, which the data checks hold to their `date=` partition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DayReturns {
    /// The days, in order.
    pub days: Vec<NaiveDate>,
    /// One series per set of the chunk, in order (`days.len()` values); empty for a failed cell.
    pub per_set: Vec<Vec<f64>>,
}

impl DayReturns {
    /// Returns from the equity at each day's close (`closes[i]` for `days[i]`).
    pub(crate) fn from_closes(closes: &[f64]) -> Vec<f64> {
        let mut previous = 1.0;
        closes
            .iter()
            .map(|&c| {
                let r = c / previous - 1.0;
                previous = c;
                r
            })
            .collect()
    }

    /// Days since the epoch as dates.
    pub(crate) fn dates(epoch_days: &[i64]) -> Vec<NaiveDate> {
        let epoch = chrono::DateTime::UNIX_EPOCH.date_naive();
        epoch_days
            .iter()
            .map(|&d| epoch + chrono::TimeDelta::days(d))
            .collect()
    }
}
