//! `SweepSpec`: what a sweep is, serialisable, and its hash, the sweep id.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::data::{Dataset, IgnoredObject, ListedFile, Shard};
use crate::engine::{EXEC_MODEL_VERSION, ExecModel};
use crate::params::Grid;
use crate::strategy::DataKind;
use crate::sweep::{Sweep, SweepId};

/// Everything that determines a sweep's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// gridtest's version.
    pub gridtest_version: String,
    /// Registered strategy name.
    pub strategy: String,
    /// Strategy version.
    pub strategy_version: String,
    /// The crate that defines the strategy, `name version`.
    pub strategy_crate: String,
    /// The grid.
    pub grid: Grid,
    /// Dataset root URL.
    pub dataset: String,
    /// Ticks or bars.
    pub kind: DataKind,
    /// The shards.
    pub shards: Vec<Shard>,
    /// Execution model.
    pub exec: ExecModel,
    /// Version of the execution semantics.
    pub exec_model_version: u32,
    /// Each shard's data files, in the order of `shards`: how many, their bytes and their
    /// digest (every file's URL, size and content tag). The files themselves are in
    /// `manifest.jsonl` beside `spec.json` ([`FileManifest`]); the digests make them part of
    /// the sweep id.
    pub data: Vec<ShardFiles>,
    /// Objects under the dataset root that were not read, and why (the warnings the run
    /// printed). Recorded for audit; not part of the sweep id, so adding a README to the
    /// dataset does not make the sweep another one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<IgnoredObject>,
    /// The rung of a search (successive halving) this sweep is, if it is one: the sweep it
    /// continues and the sets the search tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::sweep::SearchRung>,
}

impl SweepSpec {
    /// The spec as written to `spec.json` (pretty JSON; the sweep id hashes the spec, not this
    /// text).
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("specs serialise")
    }

    /// The spec of `sweep` resolved against its dataset: the shards its selection planned and
    /// the files their listing saw (`shard_files`, one list per shard, in read order), with the
    /// current gridtest and execution-model versions.
    #[must_use]
    pub fn new(
        sweep: &Sweep,
        dataset: &Dataset,
        shards: Vec<Shard>,
        shard_files: &[Vec<ListedFile>],
    ) -> Self {
        let strategy = sweep.strategy();
        let description = sweep.description();
        Self {
            gridtest_version: env!("CARGO_PKG_VERSION").to_owned(),
            strategy: strategy.name.to_owned(),
            strategy_version: strategy.version.to_owned(),
            strategy_crate: strategy.crate_version.to_owned(),
            grid: description.grid.clone(),
            dataset: dataset.url().to_string(),
            kind: dataset.kind(),
            shards,
            exec: description.exec.clone(),
            exec_model_version: EXEC_MODEL_VERSION,
            data: shard_files.iter().map(|f| ShardFiles::of(f)).collect(),
            ignored: Vec::new(),
            search: description.search.as_deref().cloned(),
        }
    }

    /// The same spec recording `ignored` objects.
    #[must_use]
    pub fn with_ignored(mut self, ignored: Vec<IgnoredObject>) -> Self {
        self.ignored = ignored;
        self
    }

    /// The code its results come from: a node running other code refuses its units.
    #[must_use]
    pub fn code(&self) -> crate::registry::CodeVersion {
        crate::registry::CodeVersion {
            gridtest: self.gridtest_version.clone(),
            exec_model: self.exec_model_version,
            strategy: self.strategy.clone(),
            strategy_version: self.strategy_version.clone(),
            strategy_crate: self.strategy_crate.clone(),
        }
    }

    /// Bytes of the files the sweep's shards read.
    #[must_use]
    pub fn dataset_bytes(&self) -> u64 {
        self.data.iter().map(|s| s.bytes).sum()
    }

    /// The sweep id: see [`sweep_id`].
    #[must_use]
    pub fn id(&self) -> SweepId {
        sweep_id(self)
    }
}

/// A shard's data files as the spec records them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardFiles {
    /// Files (empty ones too).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// [`files_digest`](crate::data::files_digest) of them, in read order.
    pub digest: String,
}

impl ShardFiles {
    /// The record of `files`, a shard's files in read order.
    #[must_use]
    pub fn of(files: &[ListedFile]) -> Self {
        Self {
            files: files.len() as u64,
            bytes: files.iter().map(|f| f.size).sum(),
            digest: crate::data::files_digest(files),
        }
    }
}

/// Every data file a sweep's listing saw, with its size and content tag (for local files a
/// hash of the bytes), one JSON object per line: `sweeps/<id>/manifest.jsonl` under a results
/// root. The spec holds each shard's digest of them.
pub struct FileManifest;

impl FileManifest {
    /// Its name beside `spec.json`.
    pub const NAME: &'static str = "manifest.jsonl";

    /// The manifest's text: one [`ListedFile`] per line, shard after shard.
    #[must_use]
    pub fn to_jsonl(shard_files: &[Vec<ListedFile>]) -> String {
        let mut text = String::new();
        for file in shard_files.iter().flatten() {
            text.push_str(&serde_json::to_string(file).expect("listed files serialise"));
            text.push('\n');
        }
        text
    }

    /// The files of a manifest's text.
    ///
    /// # Errors
    /// A line that is not a listed file, with its number (1-based) and why.
    pub fn parse(text: &str) -> Result<Vec<ListedFile>, (usize, String)> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| (i + 1, e.to_string())))
            .collect()
    }
}

/// The first 8 bytes of SHA-256 over the spec's JSON (without the ignored objects), as 16 hex
/// digits. The same sweep submitted twice gets the same id.
#[must_use]
pub fn sweep_id(spec: &SweepSpec) -> SweepId {
    let json = if spec.ignored.is_empty() {
        serde_json::to_vec(spec)
    } else {
        serde_json::to_vec(&SweepSpec {
            ignored: Vec::new(),
            ..spec.clone()
        })
    }
    .expect("specs serialise");
    let digest = Sha256::digest(&json);
    SweepId::from_digest(&digest)
}
