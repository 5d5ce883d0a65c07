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
    /// Every data file the listing of the sweep's shards saw (empty ones too), with its size
    /// and ETag (for local files a hash of the content).
    pub manifest: Vec<ListedFile>,
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
    /// every file their listing saw, with the current gridtest and execution-model versions.
    #[must_use]
    pub fn new(
        sweep: &Sweep,
        dataset: &Dataset,
        shards: Vec<Shard>,
        manifest: Vec<ListedFile>,
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
            manifest,
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

    /// The sweep id: see [`sweep_id`].
    #[must_use]
    pub fn id(&self) -> SweepId {
        sweep_id(self)
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
