//! `NodeAgent`: one per node. Publishes itself in the `agents` process group, answers the
//! supervisors' heartbeats with the node's status (cores, memory, work done, draining), spawns
//! and supervises the node's scorers (a crashed scorer's lease is handed back and the scorer
//! restarted), and drains them on request (SIGTERM).

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::backend::UnitBackend;
use super::lease_latency::SweepLeaseLatency;
use super::scorer::{Scorer, ScorerArgs, ScorerMsg};
use super::shard_loader::ShardLoaderMsg;
use crate::actors::messages::{AGENTS, NodeAgentMsg, NodeStatus, SUPERVISORS, SupervisorMsg};
use crate::actors::wire::Wire;
use crate::sweep::{ScorerKind, WorkerId};

/// Restarts allowed per scorer slot.
const MAX_RESTARTS: u32 = 3;

/// Arguments of a [`NodeAgent`].
pub struct NodeAgentArgs {
    /// Node name (stable: the pod name on Kubernetes).
    pub node: String,
    /// Scorers to run.
    pub scorers: usize,
    /// The node's loader.
    pub loader: ActorRef<ShardLoaderMsg>,
    /// Lease request timeout.
    pub rpc_timeout: std::time::Duration,
    /// Pause between lease requests when idle.
    pub idle_retry: std::time::Duration,
    /// Backend slots (GPU scorers) to run besides the CPU scorers.
    pub backends: Vec<Arc<dyn UnitBackend>>,
    /// The process-group scope its supervisors are found in
    /// ([`SCOPE`](crate::actors::messages::SCOPE) on a cluster node, the run's own for an
    /// in-process run).
    pub scope: String,
}

/// State of a [`NodeAgent`].
pub struct NodeAgentState {
    args: NodeAgentArgs,
    scorers: HashMap<ActorId, String>,
    restarts: HashMap<String, u32>,
    draining: bool,
    units: u64,
    evaluations: u64,
    cores: u32,
    memory_bytes: u64,
    lease_latency: Arc<SweepLeaseLatency>,
}

/// The node agent actor.
#[derive(Debug, Default)]
pub struct NodeAgent;

impl NodeAgent {
    async fn spawn_scorer(
        myself: &ActorRef<NodeAgentMsg>,
        state: &mut NodeAgentState,
        slot: String,
    ) -> Result<(), ActorProcessingErr> {
        let backend = state
            .args
            .backends
            .iter()
            .find(|b| b.slot() == slot)
            .cloned();
        let kind = if backend.is_some() {
            ScorerKind::Gpu
        } else {
            ScorerKind::Cpu
        };
        let args = ScorerArgs {
            worker: WorkerId::new(state.args.node.clone(), slot.clone()).of_kind(kind),
            loader: state.args.loader.clone(),
            agent: Some(myself.clone()),
            rpc_timeout: state.args.rpc_timeout,
            idle_retry: state.args.idle_retry,
            backend,
            lease_latency: Arc::clone(&state.lease_latency),
            scope: state.args.scope.clone(),
        };
        let (scorer, _) = Actor::spawn_linked(None, Scorer, args, myself.get_cell()).await?;
        state.scorers.insert(scorer.get_id(), slot);
        Ok(())
    }
}

fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

impl Actor for NodeAgent {
    type Msg = NodeAgentMsg;
    type State = NodeAgentState;
    type Arguments = NodeAgentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: NodeAgentArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        ractor::pg::join_scoped(
            args.scope.clone(),
            AGENTS.to_owned(),
            vec![myself.get_cell()],
        );
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Ok(NodeAgentState {
            args,
            scorers: HashMap::new(),
            restarts: HashMap::new(),
            draining: false,
            units: 0,
            evaluations: 0,
            cores: u32::try_from(cores).unwrap_or(u32::MAX),
            memory_bytes: memory_bytes(),
            lease_latency: Arc::default(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        for i in 0..state.args.scorers {
            Self::spawn_scorer(&myself, state, format!("cpu-{i}")).await?;
        }
        let slots: Vec<String> = state.args.backends.iter().map(|b| b.slot()).collect();
        for slot in slots {
            Self::spawn_scorer(&myself, state, slot).await?;
        }
        tracing::info!(node = %state.args.node, scorers = state.args.scorers, cores = state.cores,
            memory_mib = state.memory_bytes >> 20, "node agent up");
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NodeAgentMsg::Ping(reply) => {
                let _ = reply.send(Wire(NodeStatus {
                    node: state.args.node.clone(),
                    cores: state.cores,
                    memory_bytes: state.memory_bytes,
                    scorers: u32::try_from(state.scorers.len()).unwrap_or(u32::MAX),
                    draining: state.draining,
                    units: state.units,
                    evaluations: state.evaluations,
                    backends: state.args.backends.iter().map(|b| b.slot()).collect(),
                    telemetry: state
                        .args
                        .backends
                        .iter()
                        .filter_map(|b| b.telemetry())
                        .collect(),
                    lease_latency: state.lease_latency.snapshot(),
                }));
            }
            NodeAgentMsg::UnitDone(evaluations) => {
                state.units += 1;
                state.evaluations += evaluations;
            }
            NodeAgentMsg::Drain => {
                if !state.draining {
                    state.draining = true;
                    tracing::info!(node = %state.args.node, "draining: finishing the units in hand");
                    for cell in myself.get_children() {
                        let _ = ActorRef::<ScorerMsg>::from(cell).cast(ScorerMsg::Drain);
                    }
                }
                if state.scorers.is_empty() {
                    myself.stop(Some("drained".to_owned()));
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.scorers.remove(&cell.get_id());
                if state.draining && state.scorers.is_empty() {
                    myself.stop(Some("drained".to_owned()));
                }
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(slot) = state.scorers.remove(&cell.get_id()) else {
                    return Ok(());
                };
                let kind = if state.args.backends.iter().any(|b| b.slot() == slot) {
                    ScorerKind::Gpu
                } else {
                    ScorerKind::Cpu
                };
                let worker = WorkerId::new(state.args.node.clone(), slot.clone()).of_kind(kind);
                tracing::error!(%worker, error = %err, "scorer failed; handing its lease back");
                for sup in
                    ractor::pg::get_scoped_members(&state.args.scope, &SUPERVISORS.to_owned())
                {
                    let _ = ActorRef::<SupervisorMsg>::from(sup)
                        .cast(SupervisorMsg::Release(Wire(worker.clone())));
                }
                let restarts = state.restarts.entry(slot.clone()).or_default();
                *restarts += 1;
                if !state.draining && *restarts <= MAX_RESTARTS {
                    Self::spawn_scorer(&myself, state, slot).await?;
                } else if state.draining && state.scorers.is_empty() {
                    myself.stop(Some("drained".to_owned()));
                }
            }
            _ => {}
        }
        Ok(())
    }
}
