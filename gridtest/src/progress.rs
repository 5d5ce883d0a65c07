//! Progress of a running sweep, published by its supervisor for whoever shows it (the sweep
//! binary's bar, an embedding program): the latest [`SweepProgress`] in a `tokio::sync::watch`
//! channel, so that publishing never waits and a slow reader only skips states.
//!
//! ```
//! use gridtest::progress::{ProgressFeed, SweepProgress};
//! let feed = ProgressFeed::default();
//! let seen = feed.subscribe();
//! feed.publish(SweepProgress { done: 3, total: 10, ..SweepProgress::default() });
//! assert_eq!(seen.borrow().done, 3);
//! ```

use std::sync::Arc;

use tokio::sync::watch;

/// Where a sweep stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepProgress {
    /// Cells final.
    pub done: usize,
    /// Cells in all.
    pub total: usize,
    /// Cells failed.
    pub failed: usize,
    /// Units put back in the queue (their node was lost).
    pub requeued: usize,
    /// The sweep has ended (every cell final, or cancelled).
    pub ended: bool,
}

/// The publishing end, cheap to clone; readers [`subscribe`](Self::subscribe).
#[derive(Clone, Debug)]
pub struct ProgressFeed(Arc<watch::Sender<SweepProgress>>);

impl Default for ProgressFeed {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(SweepProgress::default())))
    }
}

impl ProgressFeed {
    /// A reader of the latest progress.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<SweepProgress> {
        self.0.subscribe()
    }

    /// Replaces the latest progress (whether or not anyone reads it).
    pub fn publish(&self, progress: SweepProgress) {
        self.0.send_replace(progress);
    }
}
