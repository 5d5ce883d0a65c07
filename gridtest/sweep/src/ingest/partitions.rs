//! Writing one symbol's rows as whole `symbol=S/date=D/part-0.parquet` partitions: first to a
//! staging area, then moved into place once every partition of the ingest is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray};
use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;

use super::rows::Row;
use super::{IngestError, IngestSummary, SymbolSummary};
use crate::data::synth::write_parquet;
use crate::data::{DataError, Dataset, table_schema};

fn utc_date(ns: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_nanos(ns).date_naive()
}

/// A partition written to the staging area, to be moved into place.
pub(super) struct Staged {
    /// Where it was written.
    from: ObjectPath,
    /// Its partition directory in the dataset.
    dir: ObjectPath,
}

/// `parent/part` without re-encoding `part` (an object store's `join` would escape the `%` of
/// a Hive-escaped symbol a second time).
pub(super) fn child(parent: &ObjectPath, part: &str) -> Result<ObjectPath, IngestError> {
    ObjectPath::parse(format!("{parent}/{part}"))
        .map_err(|e| IngestError::Settings(format!("`{part}` cannot name an object: {e}")))
}

/// Writes `rows` (sorted by time, not empty) of `symbol` to the staging area, a partition per
/// UTC date under `symbol_dir` (the symbol's directory name); returns what to move into place.
pub(super) async fn stage_symbol(
    output: &Dataset,
    (store, staging, root): (&dyn ObjectStore, &ObjectPath, &ObjectPath),
    (symbol, symbol_dir): (&str, &str),
    rows: &[Row],
    summary: &mut IngestSummary,
) -> Result<Vec<Staged>, IngestError> {
    let mut days: BTreeMap<NaiveDate, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        days.entry(utc_date(r.0)).or_default().push(r);
    }
    summary.symbols.insert(
        symbol.to_owned(),
        SymbolSummary {
            rows: rows.len() as u64,
            days: days.len(),
            first: DateTime::<Utc>::from_timestamp_nanos(rows[0].0).to_rfc3339(),
            last: DateTime::<Utc>::from_timestamp_nanos(rows[rows.len() - 1].0).to_rfc3339(),
        },
    );
    let mut staged = Vec::with_capacity(days.len());
    for (date, day) in days {
        let batch = day_batch(output, symbol, date, &day)?;
        let partition = format!("{symbol_dir}/date={date}");
        let from = child(staging, &format!("{partition}/{PART}"))?;
        write_parquet(store, output, &from, &batch).await?;
        staged.push(Staged {
            from,
            dir: child(root, &partition)?,
        });
    }
    Ok(staged)
}

/// Moves staged partitions into place, each replacing whatever Parquet files its partition
/// held (a rename: no data is written here).
pub(super) async fn commit(
    output: &Dataset,
    store: &dyn ObjectStore,
    staged: Vec<Staged>,
    summary: &mut IngestSummary,
) -> Result<(), IngestError> {
    for Staged { from, dir } in staged {
        let target = child(&dir, PART)?;
        store
            .rename(&from, &target)
            .await
            .map_err(|source| DataError::Store {
                url: output.object_url(&target),
                source,
            })?;
        summary.removed += remove_stale(output, store, &dir, &target).await?;
        summary.partitions += 1;
    }
    Ok(())
}

/// The file each partition is written as.
const PART: &str = "part-0.parquet";

fn day_batch(
    output: &Dataset,
    symbol: &str,
    date: NaiveDate,
    day: &[&Row],
) -> Result<RecordBatch, IngestError> {
    let kind = output.kind();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(
        TimestampNanosecondArray::from(day.iter().map(|r| r.0).collect::<Vec<_>>())
            .with_timezone("UTC"),
    )];
    for c in 0..kind.columns().len() {
        columns.push(Arc::new(Float64Array::from(
            day.iter().map(|r| r.2[c]).collect::<Vec<_>>(),
        )));
    }
    RecordBatch::try_new(table_schema(kind), columns)
        .map_err(|e| IngestError::Settings(format!("cannot build the {symbol} {date} batch: {e}")))
}

/// Removes the partition's Parquet files other than `target`; returns how many.
async fn remove_stale(
    output: &Dataset,
    store: &dyn ObjectStore,
    dir: &ObjectPath,
    target: &ObjectPath,
) -> Result<usize, IngestError> {
    let listed: Vec<_> = store
        .list(Some(dir))
        .try_collect::<Vec<_>>()
        .await
        .map_err(|source| DataError::Store {
            url: output.object_url(dir),
            source,
        })?;
    let mut removed = 0;
    for meta in listed {
        if &meta.location != target && meta.location.extension() == Some("parquet") {
            store
                .delete(&meta.location)
                .await
                .map_err(|source| DataError::Store {
                    url: output.object_url(&meta.location),
                    source,
                })?;
            removed += 1;
        }
    }
    Ok(removed)
}
