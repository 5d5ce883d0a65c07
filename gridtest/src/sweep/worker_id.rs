//! `WorkerId`: who holds a lease, a scorer slot on a node.

use serde::{Deserialize, Serialize};

/// Who holds a lease: a scorer slot on a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkerId {
    /// Node name (stable across restarts of the same pod).
    pub node: String,
    /// Scorer slot on the node.
    pub slot: String,
}

impl WorkerId {
    /// A worker id.
    #[must_use]
    pub fn new(node: impl Into<String>, slot: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            slot: slot.into(),
        }
    }

    /// Whether the slot is a GPU scorer (`gpuD-K`).
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        self.slot.starts_with("gpu")
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.node, self.slot)
    }
}
