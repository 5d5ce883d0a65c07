//! Cutting a planned sweep into work units: per shard, the parameter sets not yet final, in
//! chunks of about `unit_evals` evaluations (finer when there would be too few units to keep
//! every scorer busy).

use std::collections::BTreeMap;

use super::plan::Plan;
use crate::data::ShardInfo;
use crate::error::{Error, Result};
use crate::params::ParamSet;
use crate::sweep::{CellKey, CellOutcome, UnitId, WorkUnit, chunk_size};

/// The units of `plan` that `done` does not cover, and the evaluations they cost.
pub(super) fn plan_units(
    plan: &Plan,
    done: &BTreeMap<CellKey, CellOutcome>,
    unit_evals: u64,
    parallelism: usize,
) -> Result<(Vec<WorkUnit>, u64)> {
    let mut units = Vec::new();
    let mut evaluations = 0u64;
    for (shard, info) in plan.shards.iter().zip(&plan.infos) {
        let rows = info.as_ref().map_or(0, ShardInfo::n_rows);
        let id = shard.id();
        let todo: Vec<ParamSet> = plan
            .sets
            .iter()
            .filter(|s| {
                !done.contains_key(&CellKey {
                    shard: id.clone(),
                    param_set: s.id(),
                })
            })
            .cloned()
            .collect();
        evaluations += rows * todo.len() as u64;
        let chunk = chunk_size(todo.len(), rows, unit_evals, parallelism);
        for chunk in todo.chunks(chunk.max(1)) {
            let id = u32::try_from(units.len()).map_err(|_| Error::Config {
                problems: vec![
                    "the sweep needs more than 2^32 work units: raise --unit-evals".to_owned(),
                ],
            })?;
            units.push(WorkUnit {
                id: UnitId(id),
                shard: shard.clone(),
                sets: chunk.to_vec(),
            });
        }
    }
    Ok((units, evaluations))
}
