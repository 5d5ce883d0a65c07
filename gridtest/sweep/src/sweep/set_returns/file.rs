//! `returns.parquet`: the sets' daily returns in long form, written at the end of a sweep and
//! read back by `gridtest report`.

use std::path::Path;
use std::sync::Arc;

use chrono::NaiveDate;
use datafusion::arrow::array::{
    Array, AsArray, Date32Builder, Float64Builder, RecordBatch, StringBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Date32Type, Field, Float64Type, Schema, UInt64Type};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::SetReturns;
use crate::params::ParamSetId;
use crate::research::Returns;
use crate::sweep::SweepError;
use crate::sweep::output::output_error;

/// Rows per record batch of `returns.parquet`.
const RETURNS_BATCH_ROWS: usize = 1 << 16;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("param_set", DataType::Utf8, false),
        Field::new("set", DataType::UInt64, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("date", DataType::Date32, false),
        Field::new("ret", DataType::Float64, false),
    ]))
}

fn epoch() -> NaiveDate {
    chrono::DateTime::UNIX_EPOCH.date_naive()
}

impl SetReturns {
    /// Writes every series to a Parquet file in long form: one row per set and day, columns
    /// `param_set` (id, 16 hex digits), `set` (grid index), `position` (in the grid's
    /// cartesian product), `date` and `ret` (the day's return), by set and then date.
    ///
    /// # Errors
    /// [`SweepError::Output`] if the file cannot be written.
    pub fn write_parquet(&self, path: &Path) -> Result<(), SweepError> {
        let fail = |e: &dyn std::fmt::Display| output_error(path, e);
        let schema = schema();
        let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
        let mut writer =
            ArrowWriter::try_new(file, Arc::clone(&schema), None).map_err(|e| fail(&e))?;
        let days: Vec<i32> = self
            .dates
            .iter()
            .map(|d| i32::try_from(d.signed_duration_since(epoch()).num_days()).unwrap_or(i32::MAX))
            .collect();
        let sets_per_batch = (RETURNS_BATCH_ROWS / days.len().max(1)).max(1);
        for first in (0..self.sets.len()).step_by(sets_per_batch) {
            let (mut id, mut set, mut position) = (
                StringBuilder::new(),
                UInt64Builder::new(),
                UInt64Builder::new(),
            );
            let (mut date, mut ret) = (Date32Builder::new(), Float64Builder::new());
            for i in first..(first + sets_per_batch).min(self.sets.len()) {
                let (pos, param_set) = self.places[i];
                let param_set = param_set.to_string();
                for (&d, &r) in days.iter().zip(self.returns.set(i)) {
                    id.append_value(&param_set);
                    set.append_value(self.sets[i]);
                    position.append_value(pos);
                    date.append_value(d);
                    ret.append_value(r);
                }
            }
            let batch = RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(id.finish()),
                    Arc::new(set.finish()),
                    Arc::new(position.finish()),
                    Arc::new(date.finish()),
                    Arc::new(ret.finish()),
                ],
            )
            .map_err(|e| fail(&e))?;
            writer.write(&batch).map_err(|e| fail(&e))?;
        }
        writer.close().map_err(|e| fail(&e))?;
        Ok(())
    }

    /// Reads a file [`SetReturns::write_parquet`] wrote (`lacking` is not recorded: 0).
    ///
    /// # Errors
    /// [`SweepError::Output`] if the file cannot be read or is not such a file.
    pub fn read_parquet(path: &Path) -> Result<Self, SweepError> {
        let fail = |e: &dyn std::fmt::Display| output_error(path, e);
        let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(ParquetRecordBatchReaderBuilder::build)
            .map_err(|e| fail(&e))?;
        let mut out = Self {
            dates: Vec::new(),
            sets: Vec::new(),
            places: Vec::new(),
            returns: Returns::new(0),
            lacking: 0,
        };
        let mut series: Vec<Vec<f64>> = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| fail(&e))?;
            let column = |name: &str| {
                batch
                    .column_by_name(name)
                    .ok_or_else(|| fail(&format!("no column {name}")))
            };
            let missing = |name: &str| fail(&format!("column {name} has the wrong type"));
            let ids = column("param_set")?
                .as_string_opt::<i32>()
                .ok_or_else(|| missing("param_set"))?;
            let sets = column("set")?
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| missing("set"))?;
            let positions = column("position")?
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| missing("position"))?;
            let dates = column("date")?
                .as_primitive_opt::<Date32Type>()
                .ok_or_else(|| missing("date"))?;
            let rets = column("ret")?
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(|| missing("ret"))?;
            for row in 0..batch.num_rows() {
                let set = sets.value(row);
                if out.sets.last() != Some(&set) {
                    let id: ParamSetId = ids.value(row).parse().map_err(|e| fail(&e))?;
                    out.sets.push(set);
                    out.places.push((positions.value(row), id));
                    series.push(Vec::new());
                }
                if out.sets.len() == 1 {
                    out.dates.push(
                        epoch() + chrono::Days::new(u64::try_from(dates.value(row)).unwrap_or(0)),
                    );
                }
                series
                    .last_mut()
                    .expect("a set was pushed")
                    .push(rets.value(row));
            }
            debug_assert!(ids.null_count() == 0);
        }
        out.returns = Returns::new(out.dates.len());
        for s in &series {
            out.returns
                .push(s)
                .map_err(|e| fail(&format!("a set's series does not span the calendar: {e}")))?;
        }
        Ok(out)
    }

    /// The series of the sets in `ids` only (in the same order as here).
    #[must_use]
    pub fn only(&self, ids: &std::collections::HashSet<ParamSetId>) -> Self {
        let mut returns = Returns::new(self.dates.len());
        let (mut sets, mut places) = (Vec::new(), Vec::new());
        for (i, place) in self.places.iter().enumerate() {
            if ids.contains(&place.1) {
                returns
                    .push(self.returns.set(i))
                    .expect("rows have the calendar's width");
                sets.push(self.sets[i]);
                places.push(*place);
            }
        }
        Self {
            dates: self.dates.clone(),
            lacking: self.lacking + (self.sets.len() - sets.len()) as u64,
            sets,
            places,
            returns,
        }
    }
}
