//! Results reaching the ledger: cells made final or queued for another attempt, by cell
//! whoever sends them.

use super::{Completion, Ledger, SetResult};
use crate::data::Shard;
use crate::engine::{CellFailure, CellKey, FailureKind};
use crate::params::SetPlace;
use crate::sweep::{FinalCell, SetSpan, UnitId, WorkUnit};

impl Ledger {
    /// Records results for cells of `shard`. `unit`, when known, is the unit they were leased
    /// as; results are matched by cell (shard and set) either way. Cells already final keep
    /// their first result. A failed cell is retried in a new unit until it has failed
    /// `max_attempts` times (failures of kind `Params` are final at once).
    pub fn report(
        &mut self,
        unit: Option<UnitId>,
        shard: &Shard,
        results: Vec<SetResult>,
    ) -> Completion {
        self.record(unit, shard, results, true)
    }

    /// As [`Ledger::report`]; without `retry`, a failed cell is final at once.
    pub(super) fn record(
        &mut self,
        unit: Option<UnitId>,
        shard: &Shard,
        results: Vec<SetResult>,
        may_retry: bool,
    ) -> Completion {
        let shard_id = shard.id();
        let (mut new, mut duplicates) = (0usize, 0u64);
        let mut retry = Vec::new();
        for SetResult {
            place,
            param_set,
            outcome,
            day_returns,
            trades,
        } in results
        {
            let Some((owner, offset)) = self.locate(&shard_id, place.index) else {
                // Not a cell of this sweep (or of what is left of it): ignore.
                self.stats.foreign_cells += 1;
                continue;
            };
            if !self.units[&owner].is_open(offset) {
                duplicates += 1;
                continue;
            }
            let cell = (shard_id.clone(), place.index);
            let outcome = match outcome {
                Ok(m) => Ok(m),
                Err(f) => {
                    let tried = self.attempts.get(&cell).copied().unwrap_or(0) + 1;
                    if may_retry && f.kind != FailureKind::Params && tried < self.max_attempts {
                        self.attempts.insert(cell, tried);
                        self.close_cell(&shard_id, place.index, owner, offset);
                        retry.push(place);
                        continue;
                    }
                    Err(CellFailure {
                        attempts: tried,
                        ..f
                    })
                }
            };
            self.attempts.remove(&cell);
            self.close_cell(&shard_id, place.index, owner, offset);
            self.failed += usize::from(outcome.is_err());
            self.recorded += 1;
            self.journal.push(FinalCell {
                key: CellKey {
                    shard: shard_id.clone(),
                    param_set,
                },
                place,
                outcome,
                day_returns,
                trades,
            });
            new += 1;
        }
        self.stats.duplicate_cells += duplicates;
        let retried = retry.len();
        self.queue_retries(shard, retry);
        if let Some(id) = unit
            && self.units.get(&id).is_some_and(|e| e.open_count == 0)
        {
            self.finish_unit(id);
        }
        if new == 0 && retried == 0 {
            Completion::Duplicate
        } else {
            Completion::Accepted { new, retried }
        }
    }

    /// Queues failed cells of `shard` for another attempt, in a unit of their own.
    fn queue_retries(&mut self, shard: &Shard, mut retry: Vec<SetPlace>) {
        if retry.is_empty() {
            return;
        }
        self.stats.retried_cells += retry.len() as u64;
        retry.sort_unstable();
        retry.dedup_by_key(|p| p.index);
        let id = UnitId(self.next_id);
        self.next_id += 1;
        // A history read by slices is read by slices again, from its start.
        let chain = self.chains.get(&shard.id()).cloned().map(Box::new);
        let unit = WorkUnit {
            id,
            shard: shard.clone(),
            sets: SetSpan::Listed(retry),
            files_digest: self.files_digests.get(&shard.id()).cloned(),
            streamed: chain.is_some(),
            chain,
        };
        self.add(unit, false);
    }

    /// Fails every open cell of a unit with the same failure (e.g. its shard cannot be read);
    /// subject to retries like any failure.
    pub fn fail_unit(&mut self, id: UnitId, failure: &CellFailure) -> Completion {
        self.fail_open_cells(id, failure, true)
    }

    /// Fails every open cell of unit `id` with `failure`, retried or final at once.
    pub(super) fn fail_open_cells(
        &mut self,
        id: UnitId,
        failure: &CellFailure,
        retry: bool,
    ) -> Completion {
        let Some(entry) = self.units.get(&id) else {
            return Completion::Duplicate;
        };
        let shard = entry.unit.shard.clone();
        let open: Vec<u64> = entry
            .open_offsets()
            .map(|o| entry.unit.sets.index_of(o))
            .collect();
        let results = entry
            .unit
            .sets
            .expand(&self.grid)
            .into_iter()
            .filter(|(place, _)| open.binary_search(&place.index).is_ok())
            .map(|(place, set)| SetResult {
                place,
                param_set: set.id(),
                outcome: Err(failure.clone()),
                day_returns: Vec::new(),
                trades: Vec::new(),
            })
            .collect();
        self.record(Some(id), &shard, results, retry)
    }
}
