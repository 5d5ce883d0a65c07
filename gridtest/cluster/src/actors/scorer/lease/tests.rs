use std::time::Duration;

use super::{
    Leased, TAIL_ASK_AHEAD, Unusable, next_request_delay, prefetch_delay, tail_prefetch_delay,
};
use crate::actors::messages::{Lease, SupervisorMsg, UnitReport};
use crate::actors::wire::Wire;
use crate::data::Shard;
use crate::params::SetPlace;
use crate::sweep::{SetSpan, SweepId, UnitId, WorkUnit, WorkerId};

/// Stands in for a supervisor: passes on the reports it is sent.
struct Reports;

impl ractor::Actor for Reports {
    type Msg = SupervisorMsg;
    type State = tokio::sync::mpsc::UnboundedSender<UnitReport>;
    type Arguments = Self::State;

    async fn pre_start(
        &self,
        _: ractor::ActorRef<Self::Msg>,
        to: Self::State,
    ) -> Result<Self::State, ractor::ActorProcessingErr> {
        Ok(to)
    }

    async fn handle(
        &self,
        _: ractor::ActorRef<Self::Msg>,
        message: Self::Msg,
        to: &mut Self::State,
    ) -> Result<(), ractor::ActorProcessingErr> {
        if let SupervisorMsg::Report(Wire(report)) = message {
            let _ = to.send(report);
        }
        Ok(())
    }
}

fn unit(id: u32) -> WorkUnit {
    let day = "2024-01-02".parse().unwrap();
    let first = SetPlace {
        index: u64::from(id) * 4,
        position: u64::from(id) * 4,
    };
    WorkUnit {
        id: UnitId(id),
        shard: Shard::new("S", day, day),
        sets: SetSpan::Run { first, count: 4 },
        files_digest: None,
        streamed: false,
        chain: None,
    }
}

#[tokio::test]
async fn a_lease_without_its_context_fails_its_unit_and_the_one_leased_with_it() {
    let (to, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let (supervisor, handle) = ractor::Actor::spawn(None, Reports, to).await.unwrap();
    let worker = WorkerId::new("node-0", "s0");
    let lease = Lease {
        sweep_id: SweepId::from_digest(&[7; 8]),
        context: None,
        unit: unit(3),
        next: None,
        queue_deep: false,
        held_us: 0,
    };
    // No context sent and none held: an orphan.
    let Err(unusable) = Leased::resolve(lease, None, &worker) else {
        panic!("a lease without a context resolved");
    };
    assert!(matches!(unusable, Unusable::Orphan(_)));
    let pause = unusable.hand_back(&supervisor, Some(unit(4)));
    assert_eq!(
        pause,
        Duration::ZERO,
        "an orphan is asked for again at once"
    );
    let mut handed: Vec<(UnitId, bool)> = Vec::new();
    for _ in 0..2 {
        let r = tokio::time::timeout(Duration::from_secs(5), reports.recv())
            .await
            .expect("a report in time")
            .expect("the stand-in is up");
        assert_eq!(r.worker, worker);
        handed.push((r.unit, r.results.is_err()));
    }
    handed.sort();
    assert_eq!(
        handed,
        [(UnitId(3), true), (UnitId(4), true)],
        "both units fail (and are retried elsewhere), none is left leased"
    );
    supervisor.stop(None);
    handle.await.unwrap();
}

#[test]
fn in_the_tail_a_scorer_asks_just_before_its_unit_should_end() {
    assert_eq!(tail_prefetch_delay(None, 4), Duration::ZERO, "no pace yet");
    let one_second_of_four = Some((Duration::from_secs(1), 4));
    // A piece of 2 sets at 0.25 s a set: ends at 0.5 s, asks at 0.4 s.
    assert_eq!(
        tail_prefetch_delay(one_second_of_four, 2),
        Duration::from_millis(500) - TAIL_ASK_AHEAD
    );
    assert_eq!(
        tail_prefetch_delay(one_second_of_four, 4),
        Duration::from_millis(900)
    );
    // Shorter than the margin: at once.
    assert_eq!(
        tail_prefetch_delay(Some((Duration::from_millis(40), 1)), 2),
        Duration::ZERO
    );
    assert_eq!(
        tail_prefetch_delay(Some((Duration::ZERO, 0)), 2),
        Duration::ZERO
    );
}

#[test]
fn scorers_ask_for_their_next_unit_spread_over_the_first_half_of_a_unit() {
    let worker = |i: usize| WorkerId::new(format!("node-{i:04}"), "s0");
    assert_eq!(prefetch_delay(&worker(0), UnitId(3), None), Duration::ZERO);
    let last = Duration::from_secs(1);
    // A thousand scorers that started unit 7 together: each tenth of the first half
    // of the unit gets about a tenth of their requests.
    let mut tenths = [0_u32; 10];
    for i in 0..1000 {
        let delay = prefetch_delay(&worker(i), UnitId(7), Some(last));
        assert!(delay < last / 2, "{delay:?}");
        tenths[(delay.as_secs_f64() / 0.05) as usize] += 1;
    }
    assert!(tenths.iter().all(|n| (60..=140).contains(n)), "{tenths:?}");
    // One scorer's units land at different places too.
    let one: Vec<_> = (0..10)
        .map(|u| prefetch_delay(&worker(0), UnitId(u), Some(last)))
        .collect();
    assert!(one.windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn the_next_request_is_spread_while_the_queue_is_deep_and_just_in_time_in_the_tail() {
    let worker = WorkerId::new("node-0007", "s0");
    // The last unit: 4 sets in one second; this one has 4 sets too (`unit`).
    let last = Some((Duration::from_secs(1), 4));
    let deep = next_request_delay(true, &worker, &unit(5), last);
    assert_eq!(
        deep,
        prefetch_delay(&worker, UnitId(5), Some(Duration::from_secs(1)))
    );
    assert!(deep < Duration::from_millis(500), "within the first half");
    let tail = next_request_delay(false, &worker, &unit(5), last);
    assert_eq!(tail, Duration::from_secs(1) - TAIL_ASK_AHEAD);
    assert_eq!(
        next_request_delay(false, &worker, &unit(5), None),
        Duration::ZERO,
        "no pace yet: at once"
    );
}
