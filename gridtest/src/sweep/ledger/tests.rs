use proptest::prelude::*;

use super::*;
use crate::data::Shard;
use crate::metrics::Metrics;
use crate::params::{ParamSet, ParamValue};
use crate::sweep::FailureKind;

fn units(n_units: usize, per_unit: usize) -> Vec<WorkUnit> {
    let shard = Shard::new(
        "S",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    (0..n_units)
        .map(|u| WorkUnit {
            id: UnitId(u as u32),
            shard: shard.clone(),
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

#[test]
fn a_lost_worker_gives_its_units_back() {
    let mut l = Ledger::new(units(3, 2));
    let a = l.lease("a").unwrap();
    let b = l.lease("b").unwrap();
    assert_eq!(l.release("a"), vec![a.id]);
    assert_eq!(l.lease("c").unwrap().id, a.id, "requeued at the front");
    assert_eq!(l.leases(a.id), 2);
    assert_eq!(
        l.complete(b.id, vec![Ok(metrics(1)), Ok(metrics(2))]),
        Completion::Accepted(2)
    );
    assert_eq!(
        l.complete(b.id, vec![Ok(metrics(9)), Ok(metrics(9))]),
        Completion::Duplicate
    );
    assert_eq!(l.complete(UnitId(99), vec![]), Completion::Unknown);
    assert_eq!(l.recorded(), 2);
    assert!(!l.is_finished());
}

#[test]
fn a_failed_unit_fails_each_of_its_cells_with_its_attempts() {
    let mut l = Ledger::new(units(1, 3));
    let u = l.lease("a").unwrap();
    l.release("a");
    l.lease("b").unwrap();
    l.fail_unit(u.id, &CellFailure::new(FailureKind::Data, "bad file"));
    assert!(l.is_finished());
    assert_eq!(l.failed(), 3);
    assert!(
        l.cells()
            .values()
            .all(|c| c.as_ref().unwrap_err().attempts == 2)
    );
}

proptest! {
    /// Whatever the order, duplication and loss of reports, every cell ends with exactly one
    /// outcome: the first one reported for its unit.
    #[test]
    fn exactly_one_final_state_per_cell(
        n_units in 1usize..12,
        per_unit in 1usize..5,
        script in proptest::collection::vec((0u8..4, 0usize..12), 0..80),
    ) {
        let mut l = Ledger::new(units(n_units, per_unit));
        let mut first: BTreeMap<UnitId, u64> = BTreeMap::new();
        let mut leased: Vec<UnitId> = Vec::new();
        let mut tag = 0u64;
        for (op, pick) in script {
            match op {
                0 => if let Some(u) = l.lease(&format!("w{}", pick % 3)) { leased.push(u.id) },
                1 => { l.release(&format!("w{}", pick % 3)); },
                _ => if !leased.is_empty() {
                    let id = leased[pick % leased.len()];
                    tag += 1;
                    if l.complete(id, vec![Ok(metrics(tag)); per_unit]) != Completion::Duplicate {
                        first.entry(id).or_insert(tag);
                    }
                },
            }
        }
        // Drain: lease and complete everything left.
        while let Some(u) = l.lease("drain") {
            tag += 1;
            l.complete(u.id, vec![Ok(metrics(tag)); per_unit]);
            first.entry(u.id).or_insert(tag);
        }
        for id in leased {
            l.complete(id, vec![Ok(metrics(0)); per_unit]);
        }
        prop_assert!(l.is_finished());
        prop_assert_eq!(l.recorded(), n_units * per_unit);
        let by_trades: BTreeMap<u64, usize> = l.cells().values().fold(BTreeMap::new(), |mut m, c| {
            *m.entry(c.as_ref().unwrap().trades).or_default() += 1;
            m
        });
        for (id, t) in first {
            prop_assert_eq!(by_trades.get(&t).copied(), Some(per_unit), "unit {} kept its first result", id);
        }
    }
}
