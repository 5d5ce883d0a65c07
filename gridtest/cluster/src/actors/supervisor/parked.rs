//! Lease requests the supervisor holds instead of refusing them: a scorer with nothing in hand
//! that asks while no unit can be leased (the queue is empty, or the sweep waits for nodes) is
//! answered when a unit frees up (a lost node's units requeued, a failed unit retried, a
//! straggler worth a copy) or, at the latest, just before its call would time out.
//!
//! Polling instead would cost the head one request per idle scorer every retry period: at
//! 1 000 nodes of four scorers with a 50 ms retry that is 80 000 requests a second for nothing,
//! exactly when the head should be fastest (the tail of a sweep, or a burst of requeues).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ractor::RpcReplyPort;

use crate::actors::messages::{Lease, LeaseRequest};
use crate::actors::wire::Wire;

/// The longest a request is held.
pub(super) const PARK_MAX: Duration = Duration::from_secs(2);

/// Why a lease request got no unit now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The sweep waits for more nodes before it hands out work.
    Wait,
    /// Nothing this scorer could take: the queue is empty and no unit is worth a copy.
    Empty,
    /// This scorer takes no work of this sweep (its node drains, or it is a GPU scorer and the
    /// strategy has no device code), or the sweep has ended.
    Never,
    /// Its node runs other code than the sweep needs: held until its time, so that a fleet
    /// of such scorers asks at the pace of its calls, not of its retry period.
    Incompatible,
}

/// The reply port of a lease request.
pub(super) type LeaseReply = RpcReplyPort<Wire<Option<Lease>>>;

/// A held lease request.
pub(super) struct Parked {
    pub(super) request: LeaseRequest,
    reply: LeaseReply,
    since: Instant,
    until: Instant,
}

/// The held requests, oldest first.
#[derive(Default)]
pub(super) struct ParkedLeases {
    queue: VecDeque<Parked>,
}

impl ParkedLeases {
    /// Whether a refused request is held rather than answered: one that may be served later
    /// and that asked for a speculative copy too (a prefetch, asking for pending units only,
    /// wants its answer now, to ask again as a scorer with nothing in hand).
    pub(super) fn holds(request: &LeaseRequest, refusal: Refusal) -> bool {
        match refusal {
            Refusal::Wait | Refusal::Incompatible => true,
            Refusal::Empty => !request.pending_only,
            Refusal::Never => false,
        }
    }

    /// Holds `request` until `now` plus [`PARK_MAX`], or a third of its call's timeout if that
    /// is shorter (so that the answer arrives before the caller gives up).
    pub(super) fn park(&mut self, request: LeaseRequest, reply: LeaseReply, now: Instant) {
        let hold = reply
            .get_timeout()
            .map_or(PARK_MAX, |t| (t / 3).min(PARK_MAX));
        self.queue.push_back(Parked {
            request,
            reply,
            since: now,
            until: now + hold,
        });
    }

    /// How many requests are held.
    pub(super) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Offers the held requests, oldest first, to `lease`. A granted lease is sent with the
    /// time it was held; a request refused for good, or held past its time, is answered with
    /// no unit. After the first [`Refusal::Empty`] the rest are only checked for their time:
    /// what one scorer could not take, no other can (short of the one unit a scorer may not
    /// copy because it holds it, which the next pass offers again).
    pub(super) fn serve(
        &mut self,
        now: Instant,
        mut lease: impl FnMut(&LeaseRequest) -> Result<Lease, Refusal>,
    ) {
        let mut exhausted = false;
        for parked in std::mem::take(&mut self.queue) {
            if parked.reply.is_closed() {
                continue;
            }
            let outcome = if exhausted {
                Err(Refusal::Empty)
            } else {
                lease(&parked.request)
            };
            match outcome {
                Ok(mut granted) => {
                    granted.held_us = duration_us(now.duration_since(parked.since));
                    let _ = parked.reply.send(Wire(Some(granted)));
                }
                Err(Refusal::Never) => {
                    let _ = parked.reply.send(Wire(None));
                }
                Err(refusal) => {
                    exhausted |= refusal == Refusal::Empty;
                    if now >= parked.until {
                        let _ = parked.reply.send(Wire(None));
                    } else {
                        self.queue.push_back(parked);
                    }
                }
            }
        }
    }

    /// Answers every held request with no unit (the sweep ends).
    pub(super) fn release_all(&mut self) {
        for parked in self.queue.drain(..) {
            let _ = parked.reply.send(Wire(None));
        }
    }
}

fn duration_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{ParkedLeases, Refusal};
    use crate::actors::messages::{Lease, LeaseRequest};
    use crate::sweep::WorkerId;

    fn request(node: &str, pending_only: bool) -> LeaseRequest {
        LeaseRequest {
            reads: None,
            worker: WorkerId::new(node, "0"),
            cached: Vec::new(),
            pending_only,
            holds_context: None,
            with_next: false,
            sent_unix_us: 0,
        }
    }

    #[test]
    fn only_requests_that_can_be_served_later_are_held() {
        assert!(ParkedLeases::holds(&request("a", false), Refusal::Empty));
        assert!(ParkedLeases::holds(&request("a", false), Refusal::Wait));
        assert!(ParkedLeases::holds(&request("a", true), Refusal::Wait));
        assert!(!ParkedLeases::holds(&request("a", true), Refusal::Empty));
        assert!(!ParkedLeases::holds(&request("a", false), Refusal::Never));
    }

    type Answer = tokio::sync::oneshot::Receiver<crate::actors::wire::Wire<Option<Lease>>>;

    fn park(parked: &mut ParkedLeases, node: &str, timeout: Duration, now: Instant) -> Answer {
        let (tx, rx) = tokio::sync::oneshot::channel();
        parked.park(request(node, false), (tx, timeout).into(), now);
        rx
    }

    #[test]
    fn a_pass_stops_asking_after_an_empty_ledger_and_expires_by_the_callers_timeout() {
        let t0 = Instant::now();
        let mut parked = ParkedLeases::default();
        // 30 s timeout: held for PARK_MAX (2 s); 3 s timeout: held for 1 s.
        let mut long = park(&mut parked, "a", Duration::from_secs(30), t0);
        let mut short = park(&mut parked, "b", Duration::from_secs(3), t0);
        let mut asked = Vec::new();
        parked.serve(t0 + Duration::from_millis(500), |r| {
            asked.push(r.worker.node.clone());
            Err(Refusal::Empty)
        });
        assert_eq!(
            asked,
            ["a"],
            "the ledger is asked once per pass when it is empty"
        );
        assert_eq!(parked.len(), 2);
        parked.serve(t0 + Duration::from_millis(1100), |_| Err(Refusal::Empty));
        assert_eq!(parked.len(), 1);
        assert_eq!(short.try_recv().map(|w| w.0.is_none()), Ok(true));
        assert!(long.try_recv().is_err(), "still held");
        parked.release_all();
        assert_eq!(long.try_recv().map(|w| w.0.is_none()), Ok(true));
        assert_eq!(parked.len(), 0);
    }

    #[test]
    fn a_request_refused_for_good_is_answered_at_once() {
        let t0 = Instant::now();
        let mut parked = ParkedLeases::default();
        let mut a = park(&mut parked, "a", Duration::from_secs(30), t0);
        parked.serve(t0, |_| Err(Refusal::Never));
        assert_eq!(parked.len(), 0);
        assert_eq!(a.try_recv().map(|w| w.0.is_none()), Ok(true));
    }

    #[test]
    fn a_closed_request_is_dropped() {
        let t0 = Instant::now();
        let mut parked = ParkedLeases::default();
        drop(park(&mut parked, "a", Duration::from_secs(30), t0));
        let mut asked = 0;
        parked.serve(t0, |_| {
            asked += 1;
            Err(Refusal::Empty)
        });
        assert_eq!((asked, parked.len()), (0, 0));
    }
}
