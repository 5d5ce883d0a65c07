//! The dataset layout, checked strictly: every object under a dataset root is either data that
//! a sweep reads, ignored with a stated reason (a warning the run prints and records), or a
//! layout problem (an error naming its path). Nothing is skipped silently.
//!
//! | object (relative to the root) | verdict |
//! | --- | --- |
//! | `symbol=S/date=YYYY-MM-DD/NAME.parquet` (a real, zero-padded date) | data |
//! | a name (directory or file) starting with `.` or `_` (`_SUCCESS`, `.crc`, `_tmp/`) | ignored |
//! | `date=` whose value is not a real zero-padded `YYYY-MM-DD` (`2024-1-3`, `2024-13-45`) | **problem** |
//! | a Parquet-looking file (`.parquet`, `.pq`, `.parq`, any case) anywhere else, or not ending exactly `.parquet` | **problem** |
//! | a directory at the root that is not `symbol=…` | **problem** (its files would not be read) |
//! | any other file (`manifest.json`, `README.md`, `part-0.csv`) | ignored |
//!
//! Dates are parsed strictly and compared as dates; because every `date=` value of a checked
//! layout is canonical, the string comparisons DataFusion makes on the partition column agree
//! with date order.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};
use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use super::error::{DataError, Result};

/// One data file as a listing saw it: what a sweep's manifest records, so that a replay can
/// tell whether the data changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedFile {
    /// Full URL of the object.
    pub url: String,
    /// Size in bytes (0 for an empty file, which a read reports as unreadable).
    pub size: u64,
    /// The store's ETag; for local files a hash of the content, `sha256:<hex>`.
    pub e_tag: Option<String>,
    /// Its `date=` partition.
    pub date: NaiveDate,
}

/// An object under the root that is not read, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredObject {
    /// Full URL of the object (a directory ends with `/`).
    pub url: String,
    /// Why it is not read.
    pub reason: String,
}

/// An object that breaks the layout: an error, since data a user expects read would not be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutProblem {
    /// Full URL of the object (a directory ends with `/`).
    pub url: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for LayoutProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.url, self.reason)
    }
}

/// A data file found by a listing, with the store's metadata (to read its footer).
#[derive(Clone, Debug)]
pub(crate) struct DataObject {
    pub(crate) meta: ObjectMeta,
    pub(crate) date: NaiveDate,
}

/// What a strict listing of a dataset (or of some of its symbols) found.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub(crate) files: BTreeMap<String, Vec<DataObject>>,
    /// Objects that are not read, with the reason (warnings).
    pub ignored: Vec<IgnoredObject>,
    /// Objects that break the layout (errors).
    pub problems: Vec<LayoutProblem>,
}

impl Layout {
    /// Symbols with at least one object under `symbol=…/`, sorted.
    #[must_use]
    pub fn symbols(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// The distinct dates of `symbol`'s data files, sorted.
    #[must_use]
    pub fn dates(&self, symbol: &str) -> Vec<NaiveDate> {
        let mut dates: Vec<NaiveDate> = self
            .files
            .get(symbol)
            .into_iter()
            .flatten()
            .map(|f| f.date)
            .collect();
        dates.dedup();
        dates
    }

    /// `symbol`'s data files dated within `first..=last`, in read order (date, then name).
    pub(crate) fn files_between(
        &self,
        symbol: &str,
        first: NaiveDate,
        last: NaiveDate,
    ) -> Vec<DataObject> {
        self.files
            .get(symbol)
            .into_iter()
            .flatten()
            .filter(|f| (first..=last).contains(&f.date))
            .cloned()
            .collect()
    }

    /// `Ok` when the layout has no problem, else [`DataError::Layout`] listing every problem.
    ///
    /// # Errors
    /// [`DataError::Layout`].
    pub fn check(&self, root: &str) -> Result<()> {
        if self.problems.is_empty() {
            return Ok(());
        }
        Err(DataError::Layout {
            url: root.to_owned(),
            problems: self.problems.clone(),
        })
    }

    fn add(&mut self, dataset: &Dataset, meta: ObjectMeta, relative: &[&str]) {
        let url = || dataset.object_url(&meta.location);
        match classify(relative) {
            Verdict::Data { symbol, date } => {
                let files = self.files.entry(symbol.to_owned()).or_default();
                files.push(DataObject { meta, date });
            }
            Verdict::Ignored(reason) => self.ignored.push(IgnoredObject { url: url(), reason }),
            Verdict::Problem(reason) => self.problems.push(LayoutProblem { url: url(), reason }),
        }
    }

    fn sort(&mut self) {
        for files in self.files.values_mut() {
            files.sort_by(|a, b| (a.date, &a.meta.location).cmp(&(b.date, &b.meta.location)));
        }
        self.ignored.sort_by(|a, b| a.url.cmp(&b.url));
        self.problems.sort_by(|a, b| a.url.cmp(&b.url));
    }
}

/// Lists `dataset` strictly: the root's own level, then every `symbol=…` directory wanted
/// (`None`: all) recursively.
///
/// # Errors
/// [`DataError::NotFound`] for a local root that does not exist, [`DataError::Store`] when a
/// listing fails. Layout problems are not errors here: they are in [`Layout::problems`].
pub(crate) async fn scan(dataset: &Dataset, symbols: Option<&[String]>) -> Result<Layout> {
    let (store, root) = dataset.store()?;
    if dataset.url().scheme() == "file"
        && let Ok(path) = dataset.url().to_file_path()
        && !path.is_dir()
    {
        return Err(DataError::NotFound {
            url: dataset.url().to_string(),
            reason: if path.exists() {
                "it is not a directory"
            } else {
                "it does not exist"
            },
        });
    }
    let top = store
        .list_with_delimiter(Some(&root))
        .await
        .map_err(|source| DataError::Store {
            url: dataset.url().to_string(),
            source,
        })?;
    let mut layout = Layout::default();
    for meta in top.objects {
        let name = meta.location.filename().unwrap_or_default().to_owned();
        layout.add(dataset, meta, &[&name]);
    }
    let mut symbols_found = Vec::new();
    for dir in top.common_prefixes {
        let name = dir.filename().unwrap_or_default();
        let url = format!("{}/", dataset.object_url(&dir));
        match name.strip_prefix("symbol=") {
            _ if is_hidden(name) => layout.ignored.push(IgnoredObject {
                url,
                reason: HIDDEN.to_owned(),
            }),
            Some(symbol) if !symbol.is_empty() => {
                if symbols.is_none_or(|s| s.iter().any(|w| w == symbol)) {
                    symbols_found.push(symbol.to_owned());
                }
            }
            _ => layout.problems.push(LayoutProblem {
                url,
                reason: "not a `symbol=…` partition: nothing under it is read".to_owned(),
            }),
        }
    }
    list_symbols(dataset, &*store, &root, &symbols_found, &mut layout).await?;
    layout.sort();
    Ok(layout)
}

/// Lists only the `symbol=…` directories of `symbols`, recursively (a worker reading its
/// shards: the root's own level is the planner's business).
///
/// # Errors
/// [`DataError::Store`] when a listing fails.
pub(crate) async fn scan_symbols(dataset: &Dataset, symbols: &[String]) -> Result<Layout> {
    let (store, root) = dataset.store()?;
    let mut layout = Layout::default();
    list_symbols(dataset, &*store, &root, symbols, &mut layout).await?;
    layout.sort();
    Ok(layout)
}

async fn list_symbols(
    dataset: &Dataset,
    store: &dyn ObjectStore,
    root: &Path,
    symbols: &[String],
    layout: &mut Layout,
) -> Result<()> {
    for symbol in symbols {
        let dir = root.clone().join(format!("symbol={symbol}"));
        let objects: Vec<ObjectMeta> =
            store
                .list(Some(&dir))
                .try_collect()
                .await
                .map_err(|source| DataError::Store {
                    url: dataset.object_url(&dir),
                    source,
                })?;
        if !objects.is_empty() {
            layout.files.entry(symbol.clone()).or_default();
        }

        for meta in objects {
            let relative: Vec<String> = meta
                .location
                .prefix_match(root)
                .map(|parts| parts.map(|p| p.as_ref().to_owned()).collect())
                .unwrap_or_default();
            let relative: Vec<&str> = relative.iter().map(String::as_str).collect();
            layout.add(dataset, meta, &relative);
        }
    }
    Ok(())
}

/// For a local dataset, replaces the store's ETags (inode-mtime-size) of `objects` by content
/// tags (see [`super::content_tag`]); other stores' ETags are kept. Only the files given are
/// read (a shard's, never its neighbours').
///
/// # Errors
/// [`DataError::Unreadable`] naming a file that cannot be read.
pub(crate) async fn tag_contents(
    dataset: &Dataset,
    objects: Vec<DataObject>,
) -> Result<Vec<DataObject>> {
    if dataset.url().scheme() != "file" {
        return Ok(objects);
    }
    let dataset = dataset.clone();
    tokio::task::spawn_blocking(move || {
        objects
            .into_iter()
            .map(|mut object| {
                let url = dataset.object_url(&object.meta.location);
                let unreadable = |reason: String| DataError::Unreadable {
                    file: url.clone(),
                    reason,
                };
                let path = url::Url::parse(&url)
                    .ok()
                    .and_then(|u| u.to_file_path().ok())
                    .ok_or_else(|| unreadable("not a local file path".to_owned()))?;
                let stat = object.meta.e_tag.take().unwrap_or_default();
                let tag = super::content_tag::content_tag(&path, &stat)
                    .map_err(|e| unreadable(e.to_string()))?;
                object.meta.e_tag = Some(tag);
                Ok(object)
            })
            .collect()
    })
    .await
    .map_err(|e| DataError::InvalidLocation {
        location: "(hashing local files)".to_owned(),
        reason: e.to_string(),
    })?
}

const HIDDEN: &str = "hidden or marker object (its name starts with `.` or `_`)";

fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// A strictly parsed `date=` value: exactly `YYYY-MM-DD`, zero-padded, a real date.
///
/// ```
/// use gridtest::data::parse_partition_date;
/// assert!(parse_partition_date("2024-01-03").is_some());
/// assert!(parse_partition_date("2024-1-3").is_none());
/// assert!(parse_partition_date("2024-13-45").is_none());
/// ```
#[must_use]
pub fn parse_partition_date(value: &str) -> Option<NaiveDate> {
    let b = value.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) {
        return None;
    }
    if !digits(5..7) || !digits(8..10) {
        return None;
    }
    NaiveDate::parse_from_str(value, "%Y-%m-%d").ok()
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict<'a> {
    Data { symbol: &'a str, date: NaiveDate },
    Ignored(String),
    Problem(String),
}

/// The verdict on an object from its path relative to the root (see the module docs).
fn classify<'a>(relative: &[&'a str]) -> Verdict<'a> {
    let Some((file, dirs)) = relative.split_last() else {
        return Verdict::Ignored("the root itself".to_owned());
    };
    if relative.iter().any(|p| is_hidden(p)) {
        return Verdict::Ignored(HIDDEN.to_owned());
    }
    let extension = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let parquet_like = matches!(extension.as_deref(), Some("parquet" | "pq" | "parq"));
    let misplaced = |where_: &str| {
        if parquet_like {
            Verdict::Problem(format!(
                "a Parquet file {where_}: it is not read (data belong in `symbol=…/date=YYYY-MM-DD/`)"
            ))
        } else {
            Verdict::Ignored(format!("not data: {where_}"))
        }
    };
    let (symbol, rest) = match dirs.split_first() {
        None => return misplaced("at the dataset root"),
        Some((dir, rest)) => match dir.strip_prefix("symbol=") {
            Some(symbol) if !symbol.is_empty() => (symbol, rest),
            _ => return misplaced("outside any `symbol=…` partition"),
        },
    };
    let date = match rest {
        [] => return misplaced("directly under `symbol=…`, with no `date=` level"),
        [dir, deeper @ ..] => {
            let Some(value) = dir.strip_prefix("date=") else {
                return misplaced(&format!("under `{dir}`, which is not a `date=` partition"));
            };
            let Some(date) = parse_partition_date(value) else {
                return Verdict::Problem(format!(
                    "partition value `date={value}` is not a valid zero-padded YYYY-MM-DD date"
                ));
            };
            if !deeper.is_empty() {
                return misplaced("nested below its `date=` partition");
            }
            date
        }
    };
    if file.ends_with(".parquet") {
        Verdict::Data { symbol, date }
    } else if parquet_like {
        Verdict::Problem(format!(
            "`{file}` is not read: gridtest reads files whose names end exactly `.parquet`"
        ))
    } else {
        Verdict::Ignored("not a `.parquet` file".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn verdict(path: &str) -> Verdict<'_> {
        classify(&path.split('/').collect::<Vec<_>>())
    }

    fn is_problem(path: &str) -> bool {
        matches!(verdict(path), Verdict::Problem(_))
    }

    fn is_ignored(path: &str) -> bool {
        matches!(verdict(path), Verdict::Ignored(_))
    }

    #[test]
    fn data_files_need_the_exact_layout() {
        assert_eq!(
            verdict("symbol=S001/date=2024-01-03/part-0.parquet"),
            Verdict::Data {
                symbol: "S001",
                date: date("2024-01-03")
            }
        );
        for bad in [
            "symbol=S001/date=2024-1-3/part-0.parquet",
            "symbol=S001/date=notadate/part-0.parquet",
            "symbol=S001/date=2024-13-45/part-0.parquet",
            "symbol=S001/date=2024-02-30/part-0.parquet",
            "symbol=S001/date=2024-01-03 /part-0.parquet",
            "symbol=S001/date=+2024-01-3/part-0.parquet",
            // A bad date value is a problem whatever the file is.
            "symbol=S001/date=2024-1-3/notes.txt",
            "symbol=S001/part-0.parquet",
            "symbol=S001/date=2024-01-03/part-0.pq",
            "symbol=S001/date=2024-01-03/part-0.PARQUET",
            "symbol=S001/date=2024-01-03/part-0.Parquet",
            "symbol=S001/date=2024-01-03/hour=15/part-0.parquet",
            "symbol=S001/day=2024-01-03/part-0.parquet",
            "symbol=/date=2024-01-03/part-0.parquet",
            "part-0.parquet",
            "ticks/S001/part-0.parquet",
        ] {
            assert!(is_problem(bad), "{bad}: {:?}", verdict(bad));
        }
    }

    #[test]
    fn other_objects_are_ignored_with_a_reason() {
        for ok in [
            "manifest.json",
            "symbol=S001/date=2024-01-03/_SUCCESS",
            "symbol=S001/date=2024-01-03/.part-0.parquet.crc",
            "symbol=S001/_tmp/part-0.parquet",
            "_delta_log/0.json",
            "symbol=S001/date=2024-01-03/part-0.csv",
            "symbol=S001/README.md",
        ] {
            assert!(is_ignored(ok), "{ok}: {:?}", verdict(ok));
        }
    }

    #[test]
    fn partition_dates_are_strict() {
        assert_eq!(parse_partition_date("2024-02-29"), Some(date("2024-02-29")));
        for bad in [
            "2023-02-29",
            "2024-1-03",
            "24-01-03",
            "2024/01/03",
            "２０２４-01-03",
            "",
        ] {
            assert_eq!(parse_partition_date(bad), None, "{bad}");
        }
    }
}
