//! `WorkerId`: who holds a lease, a scorer slot on a node.

use serde::{Deserialize, Serialize};

/// What a scorer runs its units on.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ScorerKind {
    /// The CPU engine, one core.
    #[default]
    Cpu,
    /// A GPU backend slot (several may share one card); it takes units only of strategies
    /// with device code.
    Gpu,
}

/// Who holds a lease: a scorer slot on a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkerId {
    /// Node name (stable across restarts of the same pod).
    pub node: String,
    /// Scorer slot on the node (`s0`, `gpu0-1`).
    pub slot: String,
    /// What the slot runs on.
    #[serde(default)]
    pub kind: ScorerKind,
}

impl WorkerId {
    /// A CPU scorer's id.
    #[must_use]
    pub fn new(node: impl Into<String>, slot: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            slot: slot.into(),
            kind: ScorerKind::Cpu,
        }
    }

    /// The same id for a scorer of `kind`.
    #[must_use]
    pub fn of_kind(mut self, kind: ScorerKind) -> Self {
        self.kind = kind;
        self
    }

    /// Whether it is a GPU scorer.
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        self.kind == ScorerKind::Gpu
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.node, self.slot)
    }
}
