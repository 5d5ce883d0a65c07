//! Market data: datasets of hive-partitioned Parquet, shards, loading through DataFusion, the
//! columnar form the engine reads, and a synthetic generator.
//!
//! Layout: `ROOT/symbol=SYM/date=YYYY-MM-DD/*.parquet`. Ticks have columns `ts` (timestamp ns,
//! UTC), `price`, `size`; bars `ts`, `open`, `high`, `low`, `close`, `volume`. Extra columns are
//! ignored. Within a shard, timestamps must not go backwards (files are read by path: date, then
//! file name); prices must be finite and positive, sizes and volumes finite and non-negative.

mod columns;
mod content_tag;
mod dataset;
mod error;
mod feed_batch;
pub mod layout;
mod load;
mod shard;
pub mod synth;
mod universe;

pub(crate) use columns::NS_PER_DAY;
pub use columns::{FileInfo, ShardData, ShardInfo};
pub use dataset::{DataPlan, Dataset};
pub use error::{DataError, Result};
pub use feed_batch::{FeedBatch, Members};
pub use layout::{IgnoredObject, Layout, LayoutProblem, ListedFile, parse_partition_date};
pub use load::{BATCH_ROWS, ShardReader, table_schema};
pub use shard::{Shard, ShardId};
pub use universe::{ShardStream, Universe};
