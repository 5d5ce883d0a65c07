//! Parquet inputs: columns found by name and cast, a row per Parquet row.

use std::collections::BTreeMap;
use std::path::Path;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, TimeUnit, TimestampNanosecondType,
};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::rows::{Rows, check_values, is_symbol_column, other_symbol, parse_ts};
use super::{IngestError, IngestSpec};

fn column<'a>(batch: &'a RecordBatch, name: &str, file: &str) -> Result<&'a ArrayRef, IngestError> {
    batch.column_by_name(name).ok_or_else(|| IngestError::Read {
        file: file.to_owned(),
        reason: format!(
            "no column `{name}` (columns: {})",
            batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// `value(i)` for each of `len` rows, or an error for a null one.
fn per_row(
    len: usize,
    is_null: impl Fn(usize) -> bool,
    value: impl Fn(usize) -> Result<i64, String>,
) -> Vec<Result<i64, String>> {
    (0..len)
        .map(|i| {
            if is_null(i) {
                Err("null timestamp".to_owned())
            } else {
                value(i)
            }
        })
        .collect()
}

/// Each row's timestamp (ns, UTC), or why it has none.
fn timestamps(
    spec: &IngestSpec,
    ts_col: &ArrayRef,
    read_err: impl Fn(String) -> IngestError,
) -> Result<Vec<Result<i64, String>>, IngestError> {
    Ok(match ts_col.data_type() {
        DataType::Timestamp(_, _) => {
            let utc = cast(
                ts_col,
                &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            )
            .map_err(|e| read_err(e.to_string()))?;
            let a = utc.as_primitive::<TimestampNanosecondType>();
            per_row(a.len(), |i| a.is_null(i), |i| Ok(a.value(i)))
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = cast(ts_col, &DataType::Utf8).map_err(|e| read_err(e.to_string()))?;
            let s = s.as_string::<i32>();
            per_row(
                s.len(),
                |i| s.is_null(i),
                |i| parse_ts(s.value(i), &spec.ts_format),
            )
        }
        dt if dt.is_integer() => {
            let n = cast(ts_col, &DataType::Int64).map_err(|e| read_err(e.to_string()))?;
            let n = n.as_primitive::<Int64Type>();
            per_row(
                n.len(),
                |i| n.is_null(i),
                |i| parse_ts(&n.value(i).to_string(), &spec.ts_format),
            )
        }
        other => {
            return Err(read_err(format!(
                "column `{}` has type {other}: not a timestamp",
                spec.ts_column
            )));
        }
    })
}

/// One batch's columns, cast to what the rows need.
struct BatchColumns {
    ts: Vec<Result<i64, String>>,
    values: Vec<Float64Array>,
    symbols: Option<ArrayRef>,
}

impl BatchColumns {
    fn read(spec: &IngestSpec, batch: &RecordBatch, file: &str) -> Result<Self, IngestError> {
        let read_err = |reason: String| IngestError::Read {
            file: file.to_owned(),
            reason,
        };
        let ts = timestamps(spec, column(batch, &spec.ts_column, file)?, read_err)?;
        let mut values = Vec::with_capacity(spec.value_columns.len());
        for name in &spec.value_columns {
            let c = cast(column(batch, name, file)?, &DataType::Float64)
                .map_err(|e| read_err(format!("column `{name}`: {e}")))?;
            values.push(c.as_primitive::<Float64Type>().clone());
        }
        // With --symbol, a column named `symbol` is read too, to be checked.
        let name = match &spec.symbol_column {
            Some(name) => Some(name.clone()),
            None => batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .find(|n| is_symbol_column(n)),
        };
        let symbols = match name {
            Some(name) => Some(
                cast(column(batch, &name, file)?, &DataType::Utf8)
                    .map_err(|e| read_err(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Self {
            ts,
            values,
            symbols,
        })
    }
}

pub(super) fn read_parquet(
    spec: &IngestSpec,
    path: &Path,
    out: &mut BTreeMap<String, Rows>,
) -> Result<u64, IngestError> {
    let file = path.display().to_string();
    let read_err = |reason: String| IngestError::Read {
        file: file.clone(),
        reason,
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).map_err(|e| read_err(e.to_string()))?,
    )
    .map_err(|e| read_err(e.to_string()))?
    .build()
    .map_err(|e| read_err(e.to_string()))?;
    let kind = spec.output.kind();
    let mut base = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| read_err(e.to_string()))?;
        let BatchColumns {
            ts,
            values,
            symbols,
        } = BatchColumns::read(spec, &batch, &file)?;
        for (i, t) in ts.into_iter().enumerate() {
            let row = format!("row {}", base + i as u64);
            let row_err = |reason: String| IngestError::Row {
                file: file.clone(),
                row: row.clone(),
                reason,
            };
            let t = t.map_err(row_err)?;
            let vals: Vec<f64> = values
                .iter()
                .zip(kind.columns())
                .map(|(v, name)| {
                    if v.is_null(i) {
                        Err(format!("`{name}` is null"))
                    } else {
                        Ok(v.value(i))
                    }
                })
                .collect::<Result<_, _>>()
                .map_err(row_err)?;
            check_values(kind, &vals).map_err(row_err)?;
            let sym = match (&symbols, &spec.symbol) {
                (Some(s), Some(given)) => {
                    let found = s.as_string::<i32>().value(i).trim();
                    if found != given {
                        return Err(row_err(other_symbol(found, given)));
                    }
                    given.clone()
                }
                (Some(s), None) => s.as_string::<i32>().value(i).trim().to_owned(),
                (None, given) => given.clone().unwrap_or_default(),
            };
            out.entry(sym).or_default().push((t, row.clone(), vals));
        }
        base += batch.num_rows() as u64;
    }
    Ok(base)
}
