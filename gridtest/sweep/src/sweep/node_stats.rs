//! `NodeStats`: what one node (or one GPU scorer) did for a sweep.

use std::time::Duration;

/// What one node did for a sweep.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeStats {
    /// Units reported (accepted or not).
    pub units: u64,
    /// Cells it made final.
    pub cells: u64,
    /// Evaluations of its reported units.
    pub evaluations: u64,
    /// Scorer time spent on them.
    pub busy: Duration,
    /// Units taken back from it (disconnect, silence, drain).
    pub requeued: u64,
    /// Whether it was flagged as slow at the end.
    pub slow: bool,
    /// When its first reported unit started, from the sweep's first lease (its report's
    /// arrival less its busy time): how long the sweep's start kept it waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_start: Option<Duration>,
    /// When its last report arrived, from the sweep's first lease: the sweep's compute wall
    /// less this is how long it waited for the others at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_end: Option<Duration>,
}

impl NodeStats {
    /// Evaluations per second of scorer time (independent of how many scorers it runs).
    #[must_use]
    pub fn speed(&self) -> f64 {
        self.evaluations as f64 / self.busy.as_secs_f64().max(1e-9)
    }
}
