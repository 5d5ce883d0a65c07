//! The dataset layout, checked strictly: every object under a dataset root is either data that
//! a sweep reads, ignored with a stated reason (a warning the run prints and records), or a
//! layout problem (an error naming its path). Nothing is skipped silently.
//!
//! | object (relative to the root) | verdict |
//! | --- | --- |
//! | `symbol=S/date=YYYY-MM-DD/NAME.parquet` (a real, zero-padded date) | data |
//! | a name (directory or file) starting with `.` or `_` (`_SUCCESS`, `.crc`, `_tmp/`) | ignored |
//! | a directory named like a partition but hidden (`_date=…`, `.symbol=…`) | **problem** (it would hide data) |
//! | `date=` whose value is not a real zero-padded `YYYY-MM-DD` (`2024-1-3`, `2024-13-45`) | **problem** |
//! | a Parquet-looking file (`.parquet`, `.pq`, `.parq`, any case) anywhere else, or not ending exactly `.parquet` | **problem** |
//! | a directory at the root that is not `symbol=…` | **problem** (its files would not be read) |
//! | two `symbol=` directories spelling one symbol (`symbol=^GSPC`, `symbol=%5EGSPC`) | **problem** |
//! | a `symbol=` value whose escapes do not decode to UTF-8 (`symbol=%FF`) | **problem** |
//! | a symbolic link whose target does not exist (local datasets) | **problem** |
//! | any other file (`manifest.json`, `README.md`, `part-0.csv`) | ignored |
//!
//! A `symbol=` value is percent-decoded as Hive writes it ([`super::decode_partition_value`]): any
//! symbol name round-trips, `symbol=%5EGSPC` and an unescaped `symbol=^GSPC` both being `^GSPC`.
//! A symbol's directory is always the one the listing found, never a name rebuilt from the
//! symbol, so no spelling is lost between listing and reading.
//!
//! Dates are parsed strictly and compared as dates.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};
use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use super::error::{DataError, Result};
use super::partition_value::decode_partition_value;

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
pub struct DataObject {
    /// The store's metadata of the file.
    pub meta: ObjectMeta,
    /// The day of its `date=` partition.
    pub date: NaiveDate,
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
    pub fn files_between(
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

    fn add_dangling(&mut self, link: local::DanglingLink) {
        if is_hidden(&link.name) {
            self.ignored.push(IgnoredObject {
                url: link.url,
                reason: format!("{HIDDEN}: a symbolic link whose target does not exist"),
            });
        } else {
            self.problems.push(LayoutProblem {
                url: link.url,
                reason: format!(
                    "a symbolic link to `{}`, which does not exist: what it stands for cannot \
                     be read (a missing mount?)",
                    link.target.display()
                ),
            });
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
    check_local_root(dataset)?;
    let mut layout = Layout::default();
    let wanted = list_root(dataset, &mut layout, symbols, true).await?;
    listing::list_symbols(dataset, wanted, &mut layout).await?;
    layout.sort();
    Ok(layout)
}

/// Lists only the `symbol=…` directories of `symbols`, recursively (a worker reading its
/// shards): the root's level is read to find each symbol's directory, whatever its spelling,
/// but its other objects are the planner's business.
///
/// # Errors
/// [`DataError::NotFound`] for a local root that does not exist, [`DataError::Store`] when a
/// listing fails.
pub(crate) async fn scan_symbols(dataset: &Dataset, symbols: &[String]) -> Result<Layout> {
    check_local_root(dataset)?;
    let mut layout = Layout::default();
    let wanted = list_root(dataset, &mut layout, Some(symbols), false).await?;
    listing::list_symbols(dataset, wanted, &mut layout).await?;
    layout.sort();
    Ok(layout)
}

/// A local root must be a directory that exists (a store lists a missing one as empty).
fn check_local_root(dataset: &Dataset) -> Result<()> {
    if dataset.url().scheme() == "file"
        && let Ok(path) = dataset.url().to_file_path()
        // Without the root URL's trailing `/`, which makes a file look absent.
        && let path = path.components().collect::<std::path::PathBuf>()
        && !path.is_dir()
    {
        return Err(DataError::NotFound {
            url: dataset.url().to_string(),
            reason: if path.is_file() {
                "it is a file: a dataset is a directory of `symbol=…` partitions"
            } else if path.is_symlink() {
                "it is a symbolic link whose target does not exist"
            } else {
                "it does not exist"
            },
        });
    }
    Ok(())
}

/// The root's level: each symbol `wanted` (`None`: all) with the directory that holds it, as
/// listed (its spelling kept). With `report`, the root's other objects get their verdicts;
/// symbol directories that cannot be read as one symbol are problems either way.
async fn list_root(
    dataset: &Dataset,
    layout: &mut Layout,
    wanted: Option<&[String]>,
    report: bool,
) -> Result<BTreeMap<String, Path>> {
    let is_wanted = |symbol: &str| wanted.is_none_or(|w| w.iter().any(|s| s == symbol));
    let (store, root) = dataset.store()?;
    let top = store
        .list_with_delimiter(Some(&root))
        .await
        .map_err(|source| DataError::Store {
            url: dataset.url().to_string(),
            source,
        })?;
    if report {
        for meta in top.objects {
            let name = meta.location.filename().unwrap_or_default().to_owned();
            layout.add(dataset, meta, &[&name]);
        }
    }
    let mut symbols: BTreeMap<String, Path> = BTreeMap::new();
    for dir in top.common_prefixes {
        let name = dir.filename().unwrap_or_default().to_owned();
        let url = format!("{}/", dataset.object_url(&dir));
        let problem = |reason: String| LayoutProblem {
            url: url.clone(),
            reason,
        };
        match name.strip_prefix("symbol=") {
            // Hidden names at the root are the planner's.
            _ if is_hidden(&name) && !report => {}
            _ if hides_a_partition(&name) => {
                layout.problems.push(problem(format!(
                    "`{name}` is a partition hidden by its leading `{}`: nothing under it is \
                     read (rename it, or move it out of the dataset)",
                    &name[..1]
                )));
            }
            _ if is_hidden(&name) => layout.ignored.push(IgnoredObject {
                url,
                reason: HIDDEN.to_owned(),
            }),
            Some(raw) if !raw.is_empty() => match decode_partition_value(raw) {
                None if report => layout.problems.push(problem(UNDECODABLE.to_owned())),
                None => {}
                Some(symbol) if !report && !is_wanted(&symbol) => {}
                Some(symbol) => {
                    if let Some(other) = symbols.get(&symbol) {
                        layout.problems.push(problem(format!(
                            "spells symbol `{symbol}` as `{}/` does: one symbol, one directory",
                            dataset.object_url(other)
                        )));
                    } else {
                        symbols.insert(symbol, dir);
                    }
                }
            },
            _ if report => layout.problems.push(problem(
                "not a `symbol=…` partition: nothing under it is read".to_owned(),
            )),
            _ => {}
        }
    }
    root_links(dataset, layout, |name| {
        // A broken link of a symbol not wanted, or of any other name, is the planner's.
        let symbol = name
            .strip_prefix("symbol=")
            .and_then(decode_partition_value);
        report || symbol.is_some_and(|s| is_wanted(&s))
    })
    .await;
    symbols.retain(|symbol, _| is_wanted(symbol));
    Ok(symbols)
}

/// A local root's dangling links (the store lists none of them) whose names `wanted` accepts,
/// as problems.
async fn root_links(dataset: &Dataset, layout: &mut Layout, wanted: impl Fn(&str) -> bool) {
    if dataset.url().scheme() != "file" {
        return;
    }
    let root = dataset.url().to_file_path().ok();
    let links = tokio::task::spawn_blocking(move || {
        root.map(|r| local::dangling_links(&r, 0))
            .unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    for link in links.into_iter().filter(|l| wanted(&l.name)) {
        layout.add_dangling(link);
    }
}

const HIDDEN: &str = "hidden or marker object (its name starts with `.` or `_`)";

const UNDECODABLE: &str =
    "the `symbol=` value's %-escapes do not decode to UTF-8 text: no symbol is named so";

fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// A hidden name that is a partition's but for its first character (`_date=2024-01-03`).
fn hides_a_partition(name: &str) -> bool {
    is_hidden(name) && (name[1..].starts_with("date=") || name[1..].starts_with("symbol="))
}

mod listing;
mod local;

/// The file system path of a local store's path: the local store's paths are absolute paths
/// without their leading `/`, each part as the file system names it (never through a URL,
/// whose decoding would read a directory named `symbol=%5EGSPC` as `symbol=^GSPC`).
pub(crate) fn local_path(path: &Path) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/{path}"))
}

/// A strictly parsed `date=` value: exactly `YYYY-MM-DD`, zero-padded, a real date.
///
/// ```
/// # extern crate gridtest_core as gridtest;
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
enum Verdict {
    Data { symbol: String, date: NaiveDate },
    Ignored(String),
    Problem(String),
}

/// The verdict on an object from its path relative to the root (see the module docs).
fn classify(relative: &[&str]) -> Verdict {
    let Some((file, dirs)) = relative.split_last() else {
        return Verdict::Ignored("the root itself".to_owned());
    };
    if let Some(dir) = dirs.iter().find(|d| hides_a_partition(d)) {
        return Verdict::Problem(format!(
            "`{dir}` is a partition hidden by its leading `{}`: nothing under it is read \
             (rename it, or move it out of the dataset)",
            &dir[..1]
        ));
    }
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
            Some(raw) if !raw.is_empty() => match decode_partition_value(raw) {
                Some(symbol) => (symbol, rest),
                None => return Verdict::Problem(UNDECODABLE.to_owned()),
            },
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
mod tests;
