//! `Dataset`: a root URL of hive-partitioned Parquet, and the object store that serves it.

use std::sync::Arc;

use chrono::NaiveDate;
use object_store::ObjectStore;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use url::Url;

use super::error::{DataError, Result};
use super::layout::{self, Layout};
use super::shard::Shard;
use crate::storage::{Location, LocationError};
use crate::strategy::DataKind;

/// A dataset: Parquet files laid out `ROOT/symbol=SYM/date=YYYY-MM-DD/*.parquet`, holding ticks
/// (`ts`, `price`, `size`) or bars (`ts`, `open`, `high`, `low`, `close`, `volume`), `ts` a UTC
/// timestamp in ns.
///
/// The root is a URL: `file:///abs/path` (a plain path is accepted and made absolute) or
/// `s3://bucket/prefix` (credentials, region and endpoint from the usual `AWS_*` variables).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::{DataKind, data::Dataset};
/// let ds = Dataset::try_new("/tmp/ticks", DataKind::Ticks).unwrap();
/// assert_eq!(ds.url().as_str(), "file:///tmp/ticks/");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dataset {
    url: Url,
    kind: DataKind,
}

impl Dataset {
    /// A dataset at `location` (a URL or a local path).
    ///
    /// # Errors
    /// [`DataError::InvalidLocation`] for an unsupported scheme or an unusable path.
    pub fn try_new(location: &str, kind: DataKind) -> Result<Self> {
        let location = Location::parse(location).map_err(location_error)?;
        Ok(Self {
            url: location.url().clone(),
            kind,
        })
    }

    fn location(&self) -> Location {
        Location::parse(self.url.as_str()).expect("a dataset URL is a valid location")
    }

    /// The root URL (always ends with `/`).
    #[must_use]
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Ticks or bars.
    #[must_use]
    pub fn kind(&self) -> DataKind {
        self.kind
    }

    /// The base URL the object store is registered under (`file:///` or `s3://bucket`).
    #[must_use]
    pub fn store_url(&self) -> Url {
        self.location().store_url()
    }

    /// Builds the object store serving the dataset, and the root's path inside it. Its reads
    /// are counted in [`super::bytes_read`].
    ///
    /// # Errors
    /// [`DataError::Store`] if the store cannot be configured.
    pub fn store(&self) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let (store, root) = self.location().store().map_err(location_error)?;
        Ok((super::read_meter::MeteredStore::wrap(store), root))
    }

    /// The URL of an object of the dataset's store.
    #[must_use]
    pub fn object_url(&self, path: &Path) -> String {
        self.location().object_url(path)
    }

    /// Lists the dataset strictly (see [`super::layout`]): the root's level, and every
    /// `symbol=…` directory in `symbols` (`None`: all) recursively.
    ///
    /// # Errors
    /// [`DataError::NotFound`] for a missing local root, [`DataError::Store`] when listing
    /// fails. Layout problems are in [`Layout::problems`], not errors here.
    pub async fn layout(&self, symbols: Option<&[String]>) -> Result<Layout> {
        layout::scan(self, symbols).await
    }

    /// Symbols present (`symbol=…` directories), sorted.
    ///
    /// # Errors
    /// As [`Dataset::layout`], and [`DataError::Layout`] if the layout has problems.
    pub async fn symbols(&self) -> Result<Vec<String>> {
        let layout = self.layout(None).await?;
        layout.check(self.url.as_str())?;
        Ok(layout.symbols())
    }

    /// Dates of `symbol`'s data files, sorted.
    ///
    /// # Errors
    /// As [`Dataset::symbols`].
    pub async fn dates(&self, symbol: &str) -> Result<Vec<NaiveDate>> {
        let layout = self.layout(Some(&[symbol.to_owned()])).await?;
        layout.check(self.url.as_str())?;
        Ok(layout.dates(symbol))
    }

    /// Plans one shard per symbol (all symbols when `symbols` is `None`) over the dates present
    /// between `from` and `to` (inclusive; open ends when `None`). Listing only: no file is
    /// opened. See [`Dataset::plan`] for the listing itself.
    ///
    /// # Errors
    /// As [`Dataset::plan`].
    pub async fn plan_shards(
        &self,
        symbols: Option<&[String]>,
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<Vec<Shard>> {
        Ok(self.plan(symbols, from, to).await?.shards)
    }

    /// Lists the dataset strictly and plans one shard per symbol (all symbols when `symbols`
    /// is `None`) over the dates present between `from` and `to` (inclusive; open ends when
    /// `None`). Listing only: no file is opened.
    ///
    /// # Errors
    /// [`DataError::NotFound`] for a missing local root, [`DataError::Layout`] naming every
    /// object that breaks the layout, [`DataError::Empty`] for a dataset with no partitions,
    /// [`DataError::UnknownSymbol`] for a requested symbol that is absent,
    /// [`DataError::NoFiles`] for a symbol with no date in range (saying which dates it has).
    pub async fn plan(
        &self,
        symbols: Option<&[String]>,
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<DataPlan> {
        let layout = self.layout(symbols).await?;
        layout.check(self.url.as_str())?;
        let present = layout.symbols();
        if present.is_empty() {
            return Err(DataError::Empty {
                url: self.url.to_string(),
                hint: csv_hint(&layout),
            });
        }
        let wanted: Vec<String> = match symbols {
            Some(list) => {
                for s in list {
                    if !present.contains(s) {
                        let all = self.layout(None).await.map(|l| l.symbols());
                        return Err(DataError::UnknownSymbol {
                            symbol: s.clone(),
                            url: self.url.to_string(),
                            known: summary(&all.unwrap_or(present)),
                        });
                    }
                }
                list.to_vec()
            }
            None => present,
        };
        let mut shards = Vec::with_capacity(wanted.len());
        for symbol in wanted {
            let all = layout.dates(&symbol);
            let dates: Vec<&NaiveDate> = all
                .iter()
                .filter(|d| from.is_none_or(|f| **d >= f) && to.is_none_or(|t| **d <= t))
                .collect();
            let (Some(first), Some(last)) = (dates.first(), dates.last()) else {
                return Err(DataError::NoFiles {
                    shard: format!(
                        "{symbol}:{}..{}",
                        from.map(|d| d.to_string()).unwrap_or_default(),
                        to.map(|d| d.to_string()).unwrap_or_default()
                    ),
                    covers: all
                        .first()
                        .zip(all.last())
                        .map(|(a, b)| format!("{a}..{b}")),
                });
            };
            shards.push(Shard::new(symbol, **first, **last));
        }
        Ok(DataPlan { shards, layout })
    }
}

impl Dataset {
    /// Plans one shard per universe: its members' dates between `from` and `to`, from the first
    /// date any member has to the last (a member without data on a date simply has no events
    /// then). Listing only, as [`Dataset::plan`].
    ///
    /// # Errors
    /// As [`Dataset::plan`], for any member.
    pub async fn plan_universes(
        &self,
        universes: &[super::Universe],
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<DataPlan> {
        let mut symbols: Vec<String> = universes.iter().flat_map(|u| u.symbols.clone()).collect();
        symbols.sort();
        symbols.dedup();
        let members = self.plan(Some(&symbols), from, to).await?;
        let shards = universes
            .iter()
            .map(|u| {
                let range = |s: &String| {
                    let shard = members.shards.iter().find(|m| m.symbol() == s);
                    let shard = shard.expect("every member was planned");
                    (shard.first(), shard.last())
                };
                let first = u.symbols.iter().map(|s| range(s).0).min();
                let last = u.symbols.iter().map(|s| range(s).1).max();
                let (first, last) = first.zip(last).expect("a checked universe has members");
                Shard::universe(u.name.clone(), u.symbols.clone(), first, last)
            })
            .collect();
        Ok(DataPlan {
            shards,
            layout: members.layout,
        })
    }
}

/// The shards a sweep reads, and the strict listing they were planned from.
#[derive(Clone, Debug)]
pub struct DataPlan {
    /// One shard per symbol.
    pub shards: Vec<Shard>,
    /// What the listing found: data files, ignored objects (warnings).
    pub layout: Layout,
}

fn summary(items: &[String]) -> String {
    let mut s = items.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > 8 {
        s.push_str(&format!(", … ({} in all)", items.len()));
    }
    s
}

fn location_error(e: LocationError) -> DataError {
    match e {
        LocationError::Invalid { location, reason } => {
            DataError::InvalidLocation { location, reason }
        }
        LocationError::Store { url, source } => DataError::Store { url, source },
    }
}

/// What to say of a dataset without partitions whose folder holds CSV files: `ingest` writes
/// them as a dataset. Empty when it holds none.
fn csv_hint(layout: &Layout) -> String {
    let csv: Vec<&str> = layout
        .ignored
        .iter()
        .map(|o| o.url.as_str())
        .filter(|url| {
            let name = url
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            [".csv", ".csv.gz", ".tsv"]
                .iter()
                .any(|x| name.ends_with(x))
        })
        .collect();
    match csv.first() {
        None => String::new(),
        Some(first) => format!(
            ": it holds {} CSV file{} ({first}{}); gridtest reads Parquet partitioned by symbol \
             and day: write them as a dataset with `gridtest ingest FILES --output DATASET` \
             (docs/persistence.md, \"Ingest\")",
            csv.len(),
            if csv.len() == 1 { "" } else { "s" },
            if csv.len() > 1 { ", …" } else { "" }
        ),
    }
}
