//! Rendering while the sweep computes: each final cell is passed to the output files as soon as
//! every cell before it (in grid order, then shard order) is final, so that little is left to
//! do after the last cell. Cells that arrive ahead of that frontier wait in a bounded buffer;
//! past [`ORDERED_BUFFER`] of them the streaming stops, and the end sorts the spool from the
//! frontier on (every cell is in the spool anyway).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use super::{Pass, Rendered, SORT_MEMORY, Subject, conclude};
use crate::data::ShardId;
use crate::params::ParamSetId;
use crate::sweep::SweepError;
use crate::sweep::ledger::FinalCell;
use crate::sweep::research_report::Deflated;
use crate::sweep::spool::{Spool, SpoolRow};

/// Cells held ahead of the frontier before streaming gives up (about 250 bytes each).
pub const ORDERED_BUFFER: usize = 1 << 17;

/// The output files of a sweep, written in grid order as its cells become final.
pub struct OrderedRender {
    pass: Pass,
    ordinals: HashMap<ShardId, u32>,
    n_shards: u32,
    /// The next cell in order: set index, shard ordinal.
    next: (u64, u32),
    ahead: BTreeMap<(u64, u32), SpoolRow>,
    cap: usize,
    streaming: bool,
    failure: Option<SweepError>,
}

impl std::fmt::Debug for OrderedRender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderedRender")
            .field("next", &self.next)
            .field("ahead", &self.ahead.len())
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

impl OrderedRender {
    /// Starts the output files of `subject` in `dir` (created).
    ///
    /// # Errors
    /// [`SweepError::Output`] if a file cannot be created.
    pub fn start(subject: &Subject<'_>, dir: &Path) -> Result<Self, SweepError> {
        Self::with_buffer(subject, dir, ORDERED_BUFFER)
    }

    fn with_buffer(subject: &Subject<'_>, dir: &Path, cap: usize) -> Result<Self, SweepError> {
        Ok(Self {
            pass: Pass::new(subject, dir)?,
            ordinals: subject
                .shards
                .iter()
                .zip(0u32..)
                .map(|(s, i)| (s.id(), i))
                .collect(),
            n_shards: u32::try_from(subject.shards.len()).unwrap_or(u32::MAX),
            next: (0, 0),
            ahead: BTreeMap::new(),
            cap,
            streaming: !subject.shards.is_empty(),
            failure: None,
        })
    }

    /// Takes a final cell: passed at once when it is the next in order (with those waiting
    /// behind it), else held until it is.
    pub fn offer(&mut self, cell: &FinalCell) {
        if !self.streaming {
            return;
        }
        let Some(&shard) = self.ordinals.get(&cell.key.shard) else {
            return;
        };
        let key = (cell.place.index, shard);
        if key < self.next {
            return; // passed already
        }
        self.ahead.insert(
            key,
            SpoolRow {
                place: cell.place,
                param_set: cell.key.param_set,
                shard,
                outcome: cell.outcome.clone(),
            },
        );
        while let Some(entry) = self.ahead.first_entry()
            && *entry.key() == self.next
        {
            if let Err(e) = self.pass.cell(entry.remove()) {
                self.failure = Some(e);
                self.stop();
                return;
            }
            self.next = if self.next.1 + 1 < self.n_shards {
                (self.next.0, self.next.1 + 1)
            } else {
                (self.next.0 + 1, 0)
            };
        }
        if self.ahead.len() > self.cap {
            tracing::info!(
                held = self.ahead.len(),
                passed = self.pass.rendered.cells,
                "cells arrive too far out of order: the rest is sorted at the end"
            );
            self.stop();
        }
    }

    /// Gives the leaderboard each set's deflated Sharpe ratio (a `dsr` column; the ranking when
    /// the metric is [`RankMetric::Dsr`](crate::metrics::RankMetric::Dsr)), known once every
    /// cell is final.
    pub fn with_dsr(&mut self, dsr: Arc<HashMap<ParamSetId, Deflated>>) {
        self.pass.dsr = Some(dsr);
    }

    /// Cells passed to the files so far.
    #[must_use]
    pub fn passed(&self) -> usize {
        self.pass.rendered.cells
    }

    fn stop(&mut self) {
        self.streaming = false;
        self.ahead = BTreeMap::new();
    }

    /// Passes the cells of `spool` not passed yet (sorted out of core), and writes the
    /// leaderboard.
    ///
    /// # Errors
    /// [`SweepError::Output`] naming the file that could not be written (also a failure met
    /// while streaming) or the spool that could not be read.
    pub async fn finish(self, spool: &Spool) -> Result<Rendered, SweepError> {
        if let Some(e) = self.failure {
            return Err(e);
        }
        tracing::info!(
            passed = self.passed(),
            cells = spool.rows(),
            streaming = self.streaming,
            "outputs written during the sweep"
        );
        conclude(self.pass, spool, self.next, SORT_MEMORY).await
    }
}

#[cfg(test)]
pub(super) fn with_buffer(
    subject: &Subject<'_>,
    dir: &Path,
    cap: usize,
) -> Result<OrderedRender, SweepError> {
    OrderedRender::with_buffer(subject, dir, cap)
}
