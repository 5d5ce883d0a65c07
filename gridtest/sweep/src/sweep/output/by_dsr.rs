//! Ranking the leaderboard by deflated Sharpe ratio: the DSR of a set is known only once every
//! set's returns are in, so the board's rows are spooled without a key and given one (the DSR)
//! just before the sort.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatchReader;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, RecordBatch};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::output_error;
use crate::params::ParamSetId;
use crate::sweep::SweepError;
use crate::sweep::research_report::Deflated;
use crate::sweep::spool::write_parquet;

/// Rewrites every board part under `dir`: a row's key becomes its set's DSR at
/// [`DSR_DECIMALS`](crate::sweep::DSR_DECIMALS) decimals (best first), ties broken by the Sharpe ratio it deflates (best
/// first; [`Deflated::rank_order`], the research report's order), and its
/// `score` the DSR itself; a set without one (a failed cell, no returns) ranks as incomplete.
pub(super) fn rekey(dir: &Path, dsr: &HashMap<ParamSetId, Deflated>) -> Result<(), SweepError> {
    let mut parts: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| output_error(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    parts.sort();
    for path in parts {
        let batch = read_part(&path)?;
        let rekeyed = rekey_batch(&batch, dsr).map_err(|e| output_error(&path, e))?;
        write_parquet(&path, &rekeyed)?;
    }
    Ok(())
}

fn read_part(path: &Path) -> Result<RecordBatch, SweepError> {
    let file = File::open(path).map_err(|e| output_error(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(ParquetRecordBatchReaderBuilder::build)
        .map_err(|e| output_error(path, e))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| output_error(path, e))?;
    concat_batches(&schema, &batches).map_err(|e| output_error(path, e))
}

fn rekey_batch(
    batch: &RecordBatch,
    dsr: &HashMap<ParamSetId, Deflated>,
) -> Result<RecordBatch, String> {
    let u64s = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| format!("board column {name} is missing"))
    };
    let (ids, failed) = (u64s("param_set_id")?, u64s("failed")?);
    let values: Vec<Option<Deflated>> = (0..batch.num_rows())
        .map(|i| {
            let d = dsr.get(&ParamSetId(ids.value(i))).copied();
            d.filter(|v| !v.dsr.is_nan() && failed.value(i) == 0)
        })
        .collect();
    let incomplete: BooleanArray = values.iter().map(|v| Some(v.is_none())).collect();
    let keys: Vec<(f64, f64)> = values
        .iter()
        .map(|v| v.map_or((f64::INFINITY, f64::INFINITY), |d| d.rank_key()))
        .collect();
    let key: Float64Array = keys.iter().map(|k| Some(k.0)).collect();
    let tie: Float64Array = keys.iter().map(|k| Some(k.1)).collect();
    let score: Float64Array = values
        .iter()
        .map(|v| Some(v.map_or(f64::NAN, |d| d.dsr)))
        .collect();
    let schema = batch.schema();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| match field.name().as_str() {
            "incomplete" => Arc::new(incomplete.clone()) as ArrayRef,
            "key" => Arc::new(key.clone()) as ArrayRef,
            "tie" => Arc::new(tie.clone()) as ArrayRef,
            "score" => Arc::new(score.clone()) as ArrayRef,
            _ => Arc::clone(column),
        })
        .collect();
    debug_assert!(columns.iter().all(|c| c.len() == batch.num_rows()));
    RecordBatch::try_new(schema, columns).map_err(|e| e.to_string())
}
