//! Market data: datasets of hive-partitioned Parquet, shards, loading through DataFusion, the
//! columnar form the engine reads, and a synthetic generator.
//!
//! Layout: `ROOT/symbol=SYM/date=YYYY-MM-DD/*.parquet`, `SYM` percent-encoded as Hive writes it
//! where its characters cannot stand in a path. Ticks have columns `ts` (timestamp ns,
//! UTC), `price`, `size`; bars `ts`, `open`, `high`, `low`, `close`, `volume`. Extra columns are
//! ignored. Within a shard, timestamps must not go backwards (files are read by path: date, then
//! file name); prices must be finite and positive, sizes and volumes finite and non-negative.

mod columns;
pub mod content_tag;
mod dataset;
mod error;
mod feed_batch;
mod files_digest;
pub mod layout;
mod load;
mod partition_value;
mod read_meter;
mod shard;
pub mod synth;
mod universe;

pub(crate) use columns::NS_PER_DAY;
pub use columns::{FileInfo, ShardData, ShardInfo};
pub use dataset::{DataPlan, Dataset};
pub use error::{DataError, Result};
pub use feed_batch::{FeedBatch, Members};
pub use files_digest::files_digest;
pub use files_digest::listing_differences;
pub use layout::{IgnoredObject, Layout, LayoutProblem, ListedFile, parse_partition_date};
pub use load::{BATCH_ROWS, ShardReader, table_schema};
pub use partition_value::{decode_partition_value, encode_partition_value};
pub use read_meter::{DataReads, ProcessReads, bytes_read};
pub use shard::{Shard, ShardId};
pub use universe::{ShardStream, Universe};
