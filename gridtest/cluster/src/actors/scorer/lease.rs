//! How a scorer gets work: lease requests (the next one sent while a unit runs), the sweep's
//! context kept across leases, and batches of units of one shard for a backend that wants them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::ActorRef;
use ractor::rpc::CallResult;

use super::{ScorerArgs, crash};
use crate::actors::messages::{
    Incompatible, Lease, LeaseRequest, SUPERVISORS, SupervisorMsg, SweepContext, UnitReport,
};
use crate::actors::shard_loader::{CACHED_TIMEOUT, ShardLoaderMsg};
use crate::actors::wire::Wire;
use crate::registry::find_strategy;
use crate::sweep::{SweepId, UnitId, WorkUnit, WorkerId};

/// A lease with its sweep's context (sent with the lease, or the one the scorer holds).
pub(super) struct Leased {
    pub(super) context: Arc<SweepContext>,
    pub(super) unit: WorkUnit,
}

/// A lease this scorer may not run, and what goes back to the supervisor instead.
pub(super) enum Unusable {
    /// It came without its sweep's context, which this scorer does not hold (never sent so):
    /// its unit fails, and is retried elsewhere.
    Orphan(Box<UnitReport>),
    /// Its sweep needs other code than this node runs: the unit goes back untouched, and
    /// the node takes no more of the sweep.
    Incompatible(Box<Incompatible>),
}

/// How long a scorer whose node runs other code than a sweep needs waits before it asks
/// again (the supervisor holds its requests too; a later sweep may need this node's code).
const INCOMPATIBLE_PAUSE: Duration = Duration::from_secs(2);

impl Unusable {
    /// Tells the supervisor (a supervisor gone meanwhile needs nothing back); returns how
    /// long the scorer waits before it asks again. `next`, a unit leased with the unusable
    /// one, goes back too: as an orphan of its own (an incompatible node's units are all
    /// released by its refusal).
    pub(super) fn hand_back(
        self,
        supervisor: &ActorRef<SupervisorMsg>,
        next: Option<WorkUnit>,
    ) -> Duration {
        let (message, pause) = match self {
            Self::Orphan(report) => {
                if let Some(unit) = next {
                    let mut orphan = report.clone();
                    (orphan.unit, orphan.shard) = (unit.id, unit.shard);
                    let _ = supervisor.cast(SupervisorMsg::Report(Wire(*orphan)));
                }
                (SupervisorMsg::Report(Wire(*report)), Duration::ZERO)
            }
            Self::Incompatible(refusal) => {
                tracing::error!(sweep = %refusal.sweep_id, worker = %refusal.worker,
                    reason = %refusal.reason,
                    "this node runs other code than the sweep needs: it takes none of its units");
                (
                    SupervisorMsg::Incompatible(Wire(*refusal)),
                    INCOMPATIBLE_PAUSE,
                )
            }
        };
        let _ = supervisor.cast(message);
        pause
    }
}

impl Leased {
    /// The lease with its context (sent with it, checked against this node's code, or the
    /// one this scorer holds).
    pub(super) fn resolve(
        lease: Lease,
        held: Option<&Arc<SweepContext>>,
        worker: &WorkerId,
    ) -> Result<Self, Unusable> {
        let context = match lease.context {
            Some(context) => {
                let mismatch = match &context.code {
                    Some(code) => code.mismatch_here().map(|m| m.to_string()),
                    None => Some("the head did not say which code the sweep needs".to_owned()),
                };
                if let Some(reason) = mismatch {
                    return Err(Unusable::Incompatible(Box::new(Incompatible {
                        sweep_id: lease.sweep_id,
                        worker: worker.clone(),
                        reason,
                    })));
                }
                Some(context.into_shared())
            }
            None => held.filter(|c| c.sweep_id == lease.sweep_id).cloned(),
        };
        match context {
            Some(context) => Ok(Self {
                context,
                unit: lease.unit,
            }),
            None => Err(Unusable::Orphan(Box::new(UnitReport {
                sweep_id: lease.sweep_id,
                worker: worker.clone(),
                unit: lease.unit.id,
                shard: lease.unit.shard,
                results: Err(crash("a lease came without its sweep's context")),
                evaluations: 0,
                busy_ms: 0,
                node_fault: None,
                reads: Some(crate::data::ProcessReads::now()),
                parts_after: 0,
            }))),
        }
    }
}

/// What a lease request came back with.
pub(super) enum LeaseAnswer {
    Granted(Box<Lease>),
    /// The supervisor has nothing for this scorer now.
    NoWork,
    /// No answer (timeout, supervisor gone).
    Failed,
}

/// The next unit while the one in hand runs, and who it came from: leased with the unit in
/// hand, or asked for while that one runs (see [`prefetch_delay`]), so the round trip to the
/// head is hidden behind the work.
pub(super) struct Prefetch {
    supervisor: ActorRef<SupervisorMsg>,
    answer: NextUnit,
}

enum NextUnit {
    /// Asked for (or about to be: a message on `go` sends the request at once; `go` dropped
    /// unsent, the scorer gone, sends none); the answer comes from the task.
    Asked {
        task: tokio::task::JoinHandle<LeaseAnswer>,
        go: tokio::sync::oneshot::Sender<()>,
    },
    /// Leased with the unit in hand (without the context, which the scorer holds by then).
    Granted(Box<Lease>),
}

impl Prefetch {
    /// The unit leased with `current` (in a lease that said whether the queue was deep).
    pub(super) fn granted(
        supervisor: &ActorRef<SupervisorMsg>,
        current: &Leased,
        unit: WorkUnit,
        queue_deep: bool,
    ) -> Self {
        let lease = Lease {
            sweep_id: current.context.sweep_id.clone(),
            context: None,
            unit,
            next: None,
            queue_deep,
            held_us: 0,
        };
        Self {
            supervisor: supervisor.clone(),
            answer: NextUnit::Granted(Box::new(lease)),
        }
    }

    /// Who it came from, and the answer (waited for if it was asked for).
    pub(super) async fn answer(self) -> (ActorRef<SupervisorMsg>, LeaseAnswer) {
        let answer = match self.answer {
            NextUnit::Asked { task, go } => {
                let _ = go.send(());
                task.await.unwrap_or(LeaseAnswer::Failed)
            }
            NextUnit::Granted(lease) => LeaseAnswer::Granted(lease),
        };
        (self.supervisor, answer)
    }
}

/// Asks `supervisor` for the unit after `current`, in the background, after `delay` (or as
/// soon as the scorer wants it, if that comes first): a pending unit only (never a
/// speculative copy, which is left for a scorer with nothing in hand), preferring `current`'s
/// shard and the others this node holds.
pub(super) async fn prefetch(
    args: &ScorerArgs,
    supervisor: &ActorRef<SupervisorMsg>,
    current: &Leased,
    delay: Duration,
) -> Prefetch {
    let mut cached = cached_shards(args).await;
    let shard = current.unit.shard.id();
    if !cached.contains(&shard) {
        cached.insert(0, shard);
    }
    let request = args.request(cached, true, Some(current.context.sweep_id.clone()), false);
    let (args, to) = (args.clone(), supervisor.clone());
    let (go, wanted) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        // Waits for the delay, or until the scorer wants the unit now; a scorer stopped
        // meanwhile (`go` dropped unsent) must not be leased a unit it will never run.
        if !delay.is_zero() && matches!(tokio::time::timeout(delay, wanted).await, Ok(Err(_))) {
            return LeaseAnswer::Failed;
        }
        request_lease(&args, &to, request).await
    });
    Prefetch {
        supervisor: supervisor.clone(),
        answer: NextUnit::Asked { task, go },
    }
}

/// When, after `unit` starts, its scorer asks for the next one: spread over the
/// unit while the queue is deep ([`prefetch_delay`]); in the sweep's tail, just before the
/// unit should end ([`tail_prefetch_delay`]). `last_unit`: how long the scorer's last unit
/// took and its sets.
pub(super) fn next_request_delay(
    queue_deep: bool,
    worker: &WorkerId,
    unit: &WorkUnit,
    last_unit: Option<(Duration, usize)>,
) -> Duration {
    if queue_deep {
        prefetch_delay(worker, unit.id, last_unit.map(|(took, _)| took))
    } else {
        tail_prefetch_delay(last_unit, unit.sets.len())
    }
}

/// When, after a unit starts, its scorer asks for the next one: somewhere in the first half of
/// a unit as long as the last one it ran (at once before it has run one), the place drawn
/// from a hash of the scorer and the unit. Scorers that started their units together (a
/// thousand at a sweep's start, all units equal) would otherwise ask together at every unit;
/// the other half of the unit leaves the lease its round trip.
pub(super) fn prefetch_delay(
    worker: &WorkerId,
    unit: UnitId,
    last_unit: Option<Duration>,
) -> Duration {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let Some(last) = last_unit else {
        return Duration::ZERO;
    };
    let mut hasher = DefaultHasher::new();
    (worker, unit).hash(&mut hasher);
    // The top 53 bits: a fraction in [0, 1) exactly representable as f64.
    let fraction = (hasher.finish() >> 11) as f64 / (1_u64 << 53) as f64;
    last.mul_f64(0.5 * fraction)
}

/// How long before its unit is expected to end a scorer in a sweep's tail asks for the next
/// one: more than the lease's round trip (p99 ≤ 25 ms at 1 000 nodes on two shared cores),
/// little enough that the requests reach the head in the order the scorers will be free.
pub(super) const TAIL_ASK_AHEAD: Duration = Duration::from_millis(100);

/// When, after a unit of `sets` sets starts in a sweep's tail, its scorer asks for the next
/// one: [`TAIL_ASK_AHEAD`] before it is expected to end, at the pace of `last` (the scorer's
/// last unit: how long it took and its sets; at once before it has run one). The last pieces
/// then go to the scorers that will be free first, whatever the size of the pieces they hold
/// (asked as each unit starts, a scorer that just took a large piece is served before one
/// about to finish a small one), and none holds a second piece when the queue runs dry.
pub(super) fn tail_prefetch_delay(last: Option<(Duration, usize)>, sets: usize) -> Duration {
    let Some((took, last_sets)) = last.filter(|(_, s)| *s > 0) else {
        return Duration::ZERO;
    };
    let expected = took.mul_f64(sets as f64 / last_sets as f64);
    expected.saturating_sub(TAIL_ASK_AHEAD)
}

/// The shards the node's loader holds (none when it does not answer in time).
pub(super) async fn cached_shards(args: &ScorerArgs) -> Vec<crate::data::ShardId> {
    args.loader
        .call(ShardLoaderMsg::Cached, Some(CACHED_TIMEOUT))
        .await
        .ok()
        .and_then(|r| match r {
            CallResult::Success(c) => Some(c),
            _ => None,
        })
        .unwrap_or_default()
}

/// Sends one lease request and counts how long the grant took (less the time the supervisor
/// held it for want of a unit).
pub(super) async fn request_lease(
    args: &ScorerArgs,
    supervisor: &ActorRef<SupervisorMsg>,
    mut request: LeaseRequest,
) -> LeaseAnswer {
    request.stamp();
    let asked = Instant::now();
    let answer = supervisor
        .call(
            |r| SupervisorMsg::Lease(Wire(request), r),
            Some(args.rpc_timeout),
        )
        .await;
    match answer {
        Ok(CallResult::Success(Wire(Some(lease)))) => {
            let held = Duration::from_micros(lease.held_us);
            args.lease_latency.record(
                &lease.sweep_id,
                lease.context.is_some(),
                asked.elapsed().saturating_sub(held),
            );
            LeaseAnswer::Granted(Box::new(lease))
        }
        Ok(CallResult::Success(Wire(None))) => LeaseAnswer::NoWork,
        Ok(_) | Err(_) => LeaseAnswer::Failed,
    }
}

impl ScorerArgs {
    pub(super) fn request(
        &self,
        cached: Vec<crate::data::ShardId>,
        pending_only: bool,
        holds_context: Option<SweepId>,
        with_next: bool,
    ) -> LeaseRequest {
        LeaseRequest {
            reads: None,
            worker: self.worker.clone(),
            cached,
            pending_only,
            holds_context,
            with_next,
            sent_unix_us: 0,
        }
    }
}

/// A supervisor of the sweep, local or remote (from the process group of `scope`).
pub(super) fn find_supervisor(scope: &str) -> Option<ActorRef<SupervisorMsg>> {
    let members = ractor::pg::get_scoped_members(&scope.to_owned(), &SUPERVISORS.to_owned());
    // Prefer a local supervisor (in-process runs), else any.
    let cell = members
        .iter()
        .find(|c| c.get_id().is_local())
        .or_else(|| members.first())?;
    Some(ActorRef::from(cell.clone()))
}

/// Most units a scorer holds at once when batching.
const MAX_BATCH_UNITS: usize = 64;

/// The units to run now: `first`, and, for a backend that wants more sets per call than one
/// unit has ([`UnitBackend::batch_sets`]), further pending units of the same shard (leased
/// without speculation) until the batch holds that many sets. A unit of another shard that
/// comes back is run too, and ends the batch.
pub(super) async fn fill_batch(
    args: &ScorerArgs,
    supervisor: &ActorRef<SupervisorMsg>,
    first: Leased,
) -> Vec<Leased> {
    // A chained unit runs alone, slice after slice, on the CPU engine.
    let want = args
        .backend
        .as_ref()
        .filter(|_| first.unit.chain.is_none())
        .filter(|b| find_strategy(&first.context.strategy).is_ok_and(|s| b.supports(s)))
        .map_or(0, |b| b.batch_sets());
    let (sweep, shard) = (first.context.sweep_id.clone(), first.unit.shard.clone());
    let mut sets = first.unit.sets.len();
    let first_context = Arc::clone(&first.context);
    let mut batch = vec![first];
    while sets < want && batch.len() < MAX_BATCH_UNITS {
        let request = args.request(vec![shard.id()], true, Some(sweep.clone()), false);
        let Ok(CallResult::Success(Wire(Some(lease)))) = supervisor
            .call(
                |r| SupervisorMsg::Lease(Wire(request), r),
                Some(args.rpc_timeout),
            )
            .await
        else {
            break;
        };
        let lease = match Leased::resolve(lease, Some(&first_context), &args.worker) {
            Ok(lease) => lease,
            Err(unusable) => {
                let _ = unusable.hand_back(supervisor, None);
                break;
            }
        };
        let same = lease.context.sweep_id == sweep && lease.unit.shard == shard;
        sets += lease.unit.sets.len();
        batch.push(lease);
        if !same {
            break;
        }
    }
    batch
}

#[cfg(test)]
mod tests;
