//! `ShardReader`: reads shards through a DataFusion Parquet scan of the files its strict listing
//! found, and checks them on the way.
//!
//! # How a shard is read
//! 1. **List** the shard's symbol directory strictly ([`super::layout`]): only `symbol=S/` is
//!    walked, every object there is data, ignored with a reason, or a layout problem that fails
//!    the shard (an unpadded `date=2024-1-3`, a `.pq` file, a file with no `date=` level); the
//!    files dated within the shard are its files. Files outside the shard are never opened.
//! 2. **Verify**, when the request names the digest of the shard's files as the sweep's
//!    manifest records them ([`ShardReader::inspect_as_recorded`]), that this listing agrees:
//!    a node that sees other files reads nothing and says what it sees.
//! 3. **Inspect** each file's footer: not empty, required columns present with usable types,
//!    row count. A bad file is reported by name before any data is decoded.
//! 4. **Scan** exactly the files listed and inspected, in that order, through a DataFusion
//!    Parquet scan (one partition, order preserved): no second listing, so the scan cannot read
//!    a file the listing ignored (`_x.parquet`) or miss one it found (a symbol spelled with
//!    escapes). Each row is attributed to its file by the footers' row counts, and every check
//!    (nulls, NaN or non-positive prices, timestamps going backwards across the whole shard,
//!    timestamps outside their `date=` day) names the file and row. At the end the rows read
//!    must equal the footers' total.

use std::sync::Arc;

use chrono::NaiveDate;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::parquet::arrow::parquet_to_arrow_schema;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::{ObjectMeta, ObjectStore};

use super::columns::{Checker, FileInfo, ShardData, ShardInfo};
use super::dataset::Dataset;
use super::error::{DataError, Result};
use super::feed_batch::FeedBatch;
use super::files_digest::files_digest;
use super::layout::{self, DataObject, ListedFile};
use super::shard::Shard;
use super::universe::ShardStream;
use crate::strategy::DataKind;

/// Rows per Arrow batch the scan produces.
pub const BATCH_ROWS: usize = 8192;

/// Footers read concurrently when inspecting a shard.
const FOOTER_CONCURRENCY: usize = 8;

/// The table schema of a kind: `ts` (timestamp ns UTC) then the value columns as `Float64`.
/// Columns are nullable here so that a null reaches the checks, which name its file and row.
#[must_use]
pub fn table_schema(kind: DataKind) -> SchemaRef {
    let mut fields = vec![Field::new(
        "ts",
        DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        true,
    )];
    fields.extend(
        kind.columns()
            .iter()
            .map(|c| Field::new(*c, DataType::Float64, true)),
    );
    Arc::new(Schema::new(fields))
}

/// Reads shards of one dataset. Cheap to share (`Arc`); one per node.
pub struct ShardReader {
    dataset: Dataset,
    ctx: SessionContext,
    store_url: ObjectStoreUrl,
    store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for ShardReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardReader")
            .field("dataset", &self.dataset)
            .finish_non_exhaustive()
    }
}

fn df_error(what: &str, e: DataFusionError) -> DataError {
    DataError::InvalidLocation {
        location: what.to_owned(),
        reason: e.to_string(),
    }
}

impl ShardReader {
    /// A reader for `dataset`.
    ///
    /// # Errors
    /// [`DataError`] if the store or the table cannot be set up.
    pub fn try_new(dataset: &Dataset) -> Result<Self> {
        let (store, _) = dataset.store()?;
        let url = dataset.url().to_string();
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_collect_statistics(false)
            .with_batch_size(BATCH_ROWS);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_object_store(&dataset.store_url(), Arc::clone(&store));
        let store_url =
            ObjectStoreUrl::parse(dataset.store_url()).map_err(|e| df_error(&url, e))?;
        Ok(Self {
            dataset: dataset.clone(),
            ctx,
            store_url,
            store,
        })
    }

    /// The dataset.
    #[must_use]
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    fn query_error(&self, shard: &Shard, file: &str, e: DataFusionError) -> DataError {
        if let DataFusionError::ObjectStore(source) = e {
            return DataError::Store {
                url: self.dataset.url().to_string(),
                source: *source,
            };
        }
        DataError::Query {
            shard: shard.to_string(),
            file: file.to_owned(),
            source: Box::new(e),
        }
    }

    /// The shard's data files in read order (date, then name), from a strict listing of its
    /// symbol's directory: only `symbol=S/` is listed, so other symbols are never touched, and
    /// any object there that breaks the layout fails the shard (see [`super::layout`]). Empty
    /// files are included: reading them fails, naming them.
    ///
    /// # Errors
    /// [`DataError::Layout`], [`DataError::NoFiles`], [`DataError::Store`].
    pub async fn list(&self, shard: &Shard) -> Result<Vec<ListedFile>> {
        let objects = self.list_objects(shard).await?;
        Ok(self.listed(&objects))
    }

    /// Listed files as a manifest records them.
    pub fn listed(&self, objects: &[DataObject]) -> Vec<ListedFile> {
        objects
            .iter()
            .map(|o| ListedFile {
                url: self.dataset.object_url(&o.meta.location),
                size: o.meta.size,
                e_tag: o.meta.e_tag.clone(),
                date: o.date,
            })
            .collect()
    }

    /// The objects of each of the shard's symbols, in the shard's symbol order.
    async fn list_objects(&self, shard: &Shard) -> Result<Vec<DataObject>> {
        let mut objects = Vec::new();
        for symbol in shard.symbols() {
            objects.extend(self.list_symbol(&shard.member(symbol)).await?);
        }
        Ok(objects)
    }

    async fn list_symbol(&self, shard: &Shard) -> Result<Vec<DataObject>> {
        let symbol = [shard.symbol().to_owned()];
        let layout = layout::scan_symbols(&self.dataset, &symbol).await?;
        layout.check(self.dataset.url().as_str())?;
        let files = layout.files_between(shard.symbol(), shard.first(), shard.last());
        if files.is_empty() {
            let dates = layout.dates(shard.symbol());
            return Err(DataError::NoFiles {
                shard: shard.to_string(),
                covers: dates
                    .first()
                    .zip(dates.last())
                    .map(|(a, b)| format!("{a}..{b}")),
            });
        }
        super::content_tag::tag_contents(&self.dataset, files).await
    }

    /// Lists the shard's files and checks each footer (schema and row count), naming any bad
    /// file. Reads footers only.
    ///
    /// # Errors
    /// [`DataError::Layout`], [`DataError::NoFiles`], [`DataError::Unreadable`] (an empty file
    /// too), [`DataError::MissingColumn`], [`DataError::WrongType`], [`DataError::Store`].
    pub async fn inspect(&self, shard: &Shard) -> Result<ShardInfo> {
        self.inspect_as_recorded(shard, None).await
    }

    /// As [`ShardReader::inspect`], after checking that the shard's files, as listed here,
    /// are those of `recorded` ([`files_digest`] of the sweep's manifest for the shard; `None`:
    /// no check). A listing that differs, or that fails, is
    /// [`DataError::NotAsRecorded`] carrying this node's listing: no footer is read then.
    ///
    /// # Errors
    /// [`DataError::NotAsRecorded`], or any error of [`ShardReader::inspect`] once the files
    /// are as recorded.
    pub async fn inspect_as_recorded(
        &self,
        shard: &Shard,
        recorded: Option<&str>,
    ) -> Result<ShardInfo> {
        let objects = match (self.list_objects(shard).await, recorded) {
            (Ok(objects), _) => objects,
            (Err(e), None) => return Err(e),
            (Err(e), Some(_)) => {
                return Err(DataError::NotAsRecorded {
                    shard: shard.to_string(),
                    reason: e.to_string(),
                    listing: Vec::new(),
                });
            }
        };
        if let Some(recorded) = recorded {
            let listing = self.listed(&objects);
            let found = files_digest(&listing);
            if found != recorded {
                return Err(DataError::NotAsRecorded {
                    shard: shard.to_string(),
                    reason: format!(
                        "its {} files here differ from the sweep's manifest (digest {found} \
                         here, {recorded} recorded)",
                        listing.len()
                    ),
                    listing,
                });
            }
        }
        self.inspect_objects(shard, objects).await
    }

    /// Checks the footers of files already listed (by [`Dataset::plan`]).
    ///
    /// # Errors
    /// [`DataError::Unreadable`] (an empty file too), [`DataError::MissingColumn`],
    /// [`DataError::WrongType`], [`DataError::Store`], each naming the file.
    pub async fn inspect_objects(
        &self,
        shard: &Shard,
        objects: Vec<DataObject>,
    ) -> Result<ShardInfo> {
        let kind = self.dataset.kind();
        let files: Vec<FileInfo> = futures::stream::iter(objects)
            .map(|o| self.inspect_file(o.meta, o.date, kind))
            .buffered(FOOTER_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(ShardInfo {
            shard: shard.clone(),
            kind,
            files,
        })
    }

    async fn inspect_file(
        &self,
        meta: ObjectMeta,
        date: NaiveDate,
        kind: DataKind,
    ) -> Result<FileInfo> {
        let url = self.dataset.object_url(&meta.location);
        let unreadable = |reason: String| DataError::Unreadable {
            file: url.clone(),
            reason,
        };
        if meta.size == 0 {
            return Err(unreadable("the file is empty (0 bytes)".to_owned()));
        }
        // A malformed footer can make the Parquet decoder panic: that is a bad file, not a crash.
        let fetcher = DFParquetMetadata::new(&*self.store, &meta);
        let fetch = fetcher.fetch_metadata();
        let footer = std::panic::AssertUnwindSafe(fetch)
            .catch_unwind()
            .await
            .map_err(|_| unreadable("the Parquet footer is malformed".to_owned()))?
            .map_err(|e| match e {
                DataFusionError::ObjectStore(source)
                    if !matches!(*source, object_store::Error::NotFound { .. }) =>
                {
                    DataError::Store {
                        url: url.clone(),
                        source: *source,
                    }
                }
                // The Parquet error alone: DataFusion's wrapper would repeat "Parquet error".
                DataFusionError::ParquetError(parquet) => unreadable(parquet.to_string()),
                other => unreadable(other.to_string()),
            })?;
        let file_meta = footer.file_metadata();
        let schema =
            parquet_to_arrow_schema(file_meta.schema_descr(), file_meta.key_value_metadata())
                .map_err(|e| unreadable(e.to_string()))?;
        check_schema(&url, &schema, kind)?;
        let rows = u64::try_from(file_meta.num_rows()).unwrap_or(0);
        Ok(FileInfo {
            url,
            size: meta.size,
            e_tag: meta.e_tag,
            date,
            rows,
            location: meta.location,
        })
    }

    /// Opens a checked stream over the shard's batches.
    ///
    /// # Errors
    /// Any error of [`ShardReader::inspect`], or a query that cannot start.
    pub async fn open(&self, shard: &Shard) -> Result<ShardStream> {
        let info = Arc::new(self.inspect(shard).await?);
        self.open_inspected(info).await
    }

    /// Opens a checked stream over a shard already inspected. A universe's members are each
    /// scanned and checked as their own shard and merged in time order.
    ///
    /// # Errors
    /// A query that cannot start.
    pub async fn open_inspected(&self, info: Arc<ShardInfo>) -> Result<ShardStream> {
        if !info.shard.is_universe() {
            let part = self.open_symbol(Arc::clone(&info)).await?;
            return Ok(ShardStream::single(info, part));
        }
        let mut parts = Vec::with_capacity(info.shard.symbols().len());
        for symbol in info.shard.symbols() {
            parts.push(self.open_symbol(Arc::new(info.member(symbol))).await?);
        }
        Ok(ShardStream::merged(info, parts))
    }

    async fn open_symbol(&self, info: Arc<ShardInfo>) -> Result<SymbolStream> {
        let shard = info.shard.clone();
        let first_file = info.files.first().map_or("", |f| f.url.as_str()).to_owned();
        let files: Vec<PartitionedFile> = info
            .files
            .iter()
            .map(|f| {
                PartitionedFile::new_from_meta(ObjectMeta {
                    location: f.location.clone(),
                    last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                    size: f.size,
                    e_tag: None,
                    version: None,
                })
            })
            .collect();
        // The table's columns only (extra columns of a file are not read); a file's own types
        // are cast to the table's (Float32 or integers to Float64) by the scan.
        let source = Arc::new(ParquetSource::new(table_schema(info.kind)));
        let config = FileScanConfigBuilder::new(self.store_url.clone(), source)
            .with_file_group(FileGroup::new(files))
            .with_batch_size(Some(BATCH_ROWS))
            .with_preserve_order(true)
            .build();
        let stream = DataSourceExec::from_data_source(config)
            .execute(0, self.ctx.task_ctx())
            .map_err(|e| self.query_error(&shard, &first_file, e))?;
        Ok(SymbolStream {
            checker: Checker::new(Arc::clone(&info)),
            info,
            stream,
            store_url: self.dataset.url().to_string(),
            finished: false,
        })
    }

    /// Loads the whole shard into memory, checked.
    ///
    /// # Errors
    /// Any [`DataError`], naming the file at fault.
    pub async fn load(&self, shard: &Shard) -> Result<ShardData> {
        let mut stream = self.open(shard).await?;
        let mut batches = Vec::new();
        while let Some(batch) = stream.next_batch().await {
            batches.push(batch?);
        }
        Ok(ShardData::from_parts(stream.info().clone(), batches))
    }
}

/// A checked stream of one symbol's batches over a shard's dates, in time order.
pub(crate) struct SymbolStream {
    info: Arc<ShardInfo>,
    stream: SendableRecordBatchStream,
    checker: Checker,
    store_url: String,
    finished: bool,
}

impl SymbolStream {
    /// The next checked batch, `None` at the end.
    pub(crate) async fn next_batch(&mut self) -> Option<Result<FeedBatch>> {
        loop {
            let Some(next) = self.stream.next().await else {
                let (read, listed) = (self.checker.rows_checked(), self.info.n_rows());
                if read != listed && !self.finished {
                    self.finished = true;
                    return Some(Err(DataError::RowCount {
                        shard: self.info.shard.to_string(),
                        read,
                        listed,
                    }));
                }
                return None;
            };
            let rb = match next {
                Ok(rb) => rb,
                Err(DataFusionError::ObjectStore(source)) => {
                    return Some(Err(DataError::Store {
                        url: self.store_url.clone(),
                        source: *source,
                    }));
                }
                Err(e) => {
                    return Some(Err(DataError::Query {
                        shard: self.info.shard.to_string(),
                        file: self.checker.current_file().to_owned(),
                        source: Box::new(e),
                    }));
                }
            };
            if rb.num_rows() > 0 {
                return Some(self.checker.record_batch(&rb));
            }
        }
    }
}

fn check_schema(file: &str, schema: &Schema, kind: DataKind) -> Result<()> {
    let present = || {
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let wanted = std::iter::once("ts").chain(kind.columns().iter().copied());
    for name in wanted {
        let Ok(field) = schema.field_with_name(name) else {
            return Err(DataError::MissingColumn {
                file: file.to_owned(),
                column: name.to_owned(),
                present: present(),
            });
        };
        let dt = field.data_type();
        let (ok, expected) = if name == "ts" {
            let utc = |tz: &Option<Arc<str>>| {
                tz.as_deref()
                    .is_none_or(|z| matches!(z, "UTC" | "utc" | "+00:00" | "Z" | "Etc/UTC"))
            };
            (
                matches!(dt, DataType::Timestamp(_, tz) if utc(tz)),
                "a UTC timestamp",
            )
        } else if kind.price_columns().contains(&name) {
            (
                matches!(dt, DataType::Float64 | DataType::Float32),
                "Float64 (or Float32)",
            )
        } else {
            (dt.is_numeric(), "a numeric type")
        };
        if !ok {
            return Err(DataError::WrongType {
                file: file.to_owned(),
                column: name.to_owned(),
                expected: expected.to_owned(),
                found: dt.to_string(),
            });
        }
    }
    Ok(())
}
