//! Writing one symbol's rows as whole `symbol=S/date=D/part-0.parquet` partitions.

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

/// Writes `rows` (sorted by time, not empty) of `symbol` under `root`, a partition per UTC date,
/// each replacing whatever Parquet files the partition held.
pub(super) async fn write_symbol(
    output: &Dataset,
    (store, root): (&dyn ObjectStore, &ObjectPath),
    symbol: &str,
    rows: &[Row],
    summary: &mut IngestSummary,
) -> Result<(), IngestError> {
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
    for (date, day) in days {
        let batch = day_batch(output, symbol, date, &day)?;
        let dir = root
            .clone()
            .join(format!("symbol={symbol}"))
            .join(format!("date={date}"));
        let target = dir.clone().join("part-0.parquet");
        summary.removed += remove_stale(output, store, &dir, &target).await?;
        write_parquet(store, output, &target, &batch).await?;
        summary.partitions += 1;
    }
    Ok(())
}

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
