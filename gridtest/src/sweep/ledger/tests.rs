use proptest::prelude::*;

use super::*;
use crate::metrics::Metrics;
use crate::params::{ParamSet, ParamValue};
use crate::sweep::FailureKind;

fn shard() -> Shard {
    Shard::new(
        "S",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    )
}

fn units(n_units: usize, per_unit: usize) -> Vec<WorkUnit> {
    (0..n_units)
        .map(|u| WorkUnit {
            id: UnitId(u as u32),
            shard: shard(),
            sets: (0..per_unit)
                .map(|i| ParamSet::new([("i", ParamValue::Int((u * per_unit + i) as i64))]))
                .collect(),
        })
        .collect()
}

fn metrics(trades: u64) -> Metrics {
    Metrics {
        n_ticks: 10,
        trades,
        total_return: 0.0,
        max_drawdown: 0.0,
        sharpe: 0.0,
        sortino: 0.0,
        round_trips: 0,
        win_rate: 0.0,
        profit_factor: 0.0,
        exposure: 0.0,
    }
}

fn ok_results(u: &WorkUnit, tag: u64) -> Vec<(ParamSetId, CellOutcome)> {
    u.sets.iter().map(|s| (s.id(), Ok(metrics(tag)))).collect()
}

fn w(node: &str, slot: &str) -> WorkerId {
    WorkerId::new(node, slot)
}

#[test]
fn a_lost_worker_gives_its_units_back_and_late_results_count_once() {
    let mut l = Ledger::new(units(3, 2)).with_speculation(false);
    let a = l.lease(&w("n1", "0"), &[]).unwrap();
    let b = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_eq!(l.release_node("n1"), vec![a.id]);
    assert_eq!(
        l.lease(&w("n3", "0"), &[]).unwrap().id,
        a.id,
        "requeued at the front"
    );
    assert_eq!(l.leases(a.id), 2);
    assert_eq!(
        l.report(Some(b.id), &b.shard, ok_results(&b, 1)),
        Completion::Accepted { new: 2, retried: 0 }
    );
    assert_eq!(
        l.report(Some(b.id), &b.shard, ok_results(&b, 9)),
        Completion::Duplicate
    );
    // The lost node's late result for `a` is accepted (first wins); n3's copy is a duplicate.
    assert!(matches!(
        l.report(Some(a.id), &a.shard, ok_results(&a, 2)),
        Completion::Accepted { .. }
    ));
    assert_eq!(
        l.report(Some(a.id), &a.shard, ok_results(&a, 3)),
        Completion::Duplicate
    );
    assert_eq!(l.recorded(), 4);
    assert_eq!(l.stats().duplicate_cells, 4);
    assert!(!l.is_finished());
}

#[test]
fn results_are_matched_by_key_even_from_an_unknown_unit() {
    let mut l = Ledger::new(units(2, 3));
    let all = units(2, 3);
    // A result computed for another incarnation's unit 77 covering unit 1's cells.
    assert!(matches!(
        l.report(Some(UnitId(77)), &shard(), ok_results(&all[1], 5)),
        Completion::Accepted { new: 3, .. }
    ));
    assert_eq!(l.units_left(), 1, "unit 1 is complete without being leased");
    assert_eq!(l.lease(&w("n", "0"), &[]).unwrap().id, UnitId(0));
}

#[test]
fn failing_cells_are_retried_then_final_with_their_attempts() {
    let mut l = Ledger::new(units(1, 3)).with_max_attempts(3);
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    let boom = CellFailure::new(FailureKind::Panic, "boom");
    let mut results = ok_results(&u, 1);
    results[1].1 = Err(boom.clone());
    assert_eq!(
        l.report(Some(u.id), &u.shard, results),
        Completion::Accepted { new: 2, retried: 1 }
    );
    for attempt in 2..=3 {
        let retry = l.lease(&w("n", "0"), &[]).unwrap();
        assert_eq!(retry.sets.len(), 1, "only the failed cell is retried");
        let c = l.report(
            Some(retry.id),
            &retry.shard,
            vec![(retry.sets[0].id(), Err(boom.clone()))],
        );
        if attempt < 3 {
            assert_eq!(c, Completion::Accepted { new: 0, retried: 1 });
        } else {
            assert_eq!(c, Completion::Accepted { new: 1, retried: 0 });
        }
    }
    assert!(l.is_finished());
    assert_eq!(l.failed(), 1);
    let f = l.cells().values().find_map(|c| c.as_ref().err()).unwrap();
    assert_eq!(f.attempts, 3);
}

#[test]
fn a_failed_unit_fails_each_of_its_cells() {
    let mut l = Ledger::new(units(1, 3)).with_max_attempts(1);
    let u = l.lease(&w("a", "0"), &[]).unwrap();
    l.fail_unit(u.id, &CellFailure::new(FailureKind::Data, "bad file"));
    assert!(l.is_finished());
    assert_eq!(l.failed(), 3);
}

#[test]
fn leases_prefer_cached_shards_then_speculate_on_stragglers() {
    let other = Shard::new(
        "T",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let mut us = units(2, 1);
    us[1].shard = other.clone();
    let mut l = Ledger::new(us);
    let first = l.lease(&w("n1", "0"), &[other.id()]).unwrap();
    assert_eq!(first.shard, other, "the node holds T");
    let second = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_eq!(second.id, UnitId(0));
    // Queue empty: n3 gets a speculative copy of the oldest running unit.
    let spec = l.lease(&w("n3", "0"), &[]).unwrap();
    assert_eq!(spec.id, first.id);
    assert_eq!(l.stats().speculative, 1);
    // n1 dies: the unit stays leased (n3 still holds it), nothing is requeued.
    assert!(l.release_node("n1").is_empty());
    assert_eq!(l.leased_to("n3"), 1);
}

#[test]
fn resuming_skips_done_cells() {
    let all = units(2, 2);
    let done: BTreeMap<CellKey, CellOutcome> = all[0]
        .sets
        .iter()
        .map(|s| {
            (
                CellKey {
                    shard: shard().id(),
                    param_set: s.id(),
                },
                Ok(metrics(1)),
            )
        })
        .collect();
    let mut l = Ledger::resume(vec![all[1].clone()], done);
    assert_eq!((l.expected(), l.recorded()), (4, 2));
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    l.report(Some(u.id), &u.shard, ok_results(&u, 2));
    assert!(l.is_finished());
}

proptest! {
    /// Whatever the order, duplication and loss of reports, every cell ends with exactly one
    /// outcome: the first one reported for it.
    #[test]
    fn exactly_one_final_state_per_cell(
        n_units in 1usize..12,
        per_unit in 1usize..5,
        script in proptest::collection::vec((0u8..4, 0usize..12), 0..80),
    ) {
        let mut l = Ledger::new(units(n_units, per_unit));
        let mut first: BTreeMap<UnitId, u64> = BTreeMap::new();
        let mut leased: Vec<WorkUnit> = Vec::new();
        let mut tag = 0u64;
        for (op, pick) in script {
            match op {
                0 => if let Some(u) = l.lease(&w(&format!("n{}", pick % 3), "0"), &[]) { leased.push(u) },
                1 => { l.release_node(&format!("n{}", pick % 3)); },
                _ => if !leased.is_empty() {
                    let u = leased[pick % leased.len()].clone();
                    tag += 1;
                    if l.report(Some(u.id), &u.shard, ok_results(&u, tag)) != Completion::Duplicate {
                        first.entry(u.id).or_insert(tag);
                    }
                },
            }
        }
        // The other workers are lost; a fresh one takes whatever is left.
        for n in 0..3 {
            l.release_node(&format!("n{n}"));
        }
        while let Some(u) = l.lease(&w("drain", "0"), &[]) {
            tag += 1;
            if l.report(Some(u.id), &u.shard, ok_results(&u, tag)) != Completion::Duplicate {
                first.entry(u.id).or_insert(tag);
            }
        }
        for u in leased {
            prop_assert_eq!(l.report(Some(u.id), &u.shard, ok_results(&u, 0)), Completion::Duplicate);
        }
        prop_assert!(l.is_finished());
        prop_assert_eq!(l.recorded(), n_units * per_unit);
        let by_tag: BTreeMap<u64, usize> = l.cells().values().fold(BTreeMap::new(), |mut m, c| {
            *m.entry(c.as_ref().unwrap().trades).or_default() += 1;
            m
        });
        for (id, t) in first {
            prop_assert_eq!(by_tag.get(&t).copied(), Some(per_unit), "unit {} kept its first result", id);
        }
    }
}

#[test]
fn a_pending_only_lease_never_copies_a_running_unit() {
    let mut l = Ledger::new(units(2, 2));
    let a = l.lease_pending(&w("gpu", "0"), &[]).unwrap();
    let b = l.lease_pending(&w("gpu", "0"), &[]).unwrap();
    assert_ne!(a.id, b.id, "one worker may hold several units");
    assert_eq!(
        l.lease_pending(&w("gpu", "0"), &[]),
        None,
        "nothing pending"
    );
    let copy = l.lease(&w("cpu", "0"), &[]).expect("a speculative copy");
    assert!(copy.id == a.id || copy.id == b.id);
    assert_eq!(l.stats().speculative, 1);
}
