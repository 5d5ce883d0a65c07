//! `FeedBatch`: one batch of events as the engine reads it, zero-copy over Arrow buffers.

use std::sync::Arc;

use datafusion::arrow::buffer::ScalarBuffer;

/// One batch of events: `ts` and the feed's value columns, zero-copy over Arrow buffers. A
/// universe's batch also says which member each event belongs to ([`FeedBatch::members`]).
#[derive(Clone, Debug)]
pub struct FeedBatch {
    ts: ScalarBuffer<i64>,
    cols: Vec<ScalarBuffer<f64>>,
    members: Option<Members>,
}

/// The member column of a universe's batch: each event's index into the universe's symbols.
#[derive(Clone, Debug)]
pub struct Members {
    /// Per event, the index of its symbol in `symbols`.
    pub index: ScalarBuffer<u32>,
    /// The universe's symbols, in order.
    pub symbols: Arc<[String]>,
}

impl FeedBatch {
    /// A batch over Arrow buffers (one symbol).
    pub(super) fn from_buffers(ts: ScalarBuffer<i64>, cols: Vec<ScalarBuffer<f64>>) -> Self {
        Self {
            ts,
            cols,
            members: None,
        }
    }

    /// A batch from owned columns (all of `ts`'s length).
    ///
    /// # Panics
    /// If a column's length differs from `ts`'s.
    #[must_use]
    pub fn new(ts: Vec<i64>, cols: Vec<Vec<f64>>) -> Self {
        assert!(
            cols.iter().all(|c| c.len() == ts.len()),
            "every column needs one value per timestamp"
        );
        Self {
            ts: ts.into(),
            cols: cols.into_iter().map(Into::into).collect(),
            members: None,
        }
    }

    /// This batch as a universe's: event `i` belongs to `symbols[index[i]]`.
    ///
    /// # Panics
    /// If `index` differs in length from the batch, or names a member beyond `symbols`.
    #[must_use]
    pub fn with_members(mut self, index: Vec<u32>, symbols: Arc<[String]>) -> Self {
        assert_eq!(index.len(), self.len(), "one member index per event");
        assert!(
            index.iter().all(|&m| (m as usize) < symbols.len()),
            "member index beyond the universe"
        );
        self.members = Some(Members {
            index: index.into(),
            symbols,
        });
        self
    }

    /// The member column, for a universe's batch (`None`: one symbol).
    #[must_use]
    pub fn members(&self) -> Option<&Members> {
        self.members.as_ref()
    }

    /// Number of events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// Whether the batch is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Timestamps (ns, UTC).
    #[must_use]
    pub fn ts(&self) -> &[i64] {
        &self.ts
    }

    /// Value columns, in the feed's order ([`DataKind::columns`](crate::strategy::DataKind::columns)).
    #[must_use]
    pub fn columns(&self) -> &[ScalarBuffer<f64>] {
        &self.cols
    }

    pub(super) fn slice(&self, offset: usize, len: usize) -> Self {
        Self {
            ts: self.ts.slice(offset, len),
            cols: self.cols.iter().map(|c| c.slice(offset, len)).collect(),
            members: self.members.as_ref().map(|m| Members {
                index: m.index.slice(offset, len),
                symbols: Arc::clone(&m.symbols),
            }),
        }
    }
}
