//! A worker: joins the head (re-dialling with back-off whenever the session drops, resolving
//! the address afresh each time), runs a node agent with its scorers until SIGTERM or SIGINT,
//! then drains: the units in hand are finished within the grace period, or handed back.
//!
//! For load tests of a head, one process can be several worker nodes (`--nodes-per-process`):
//! each has its own node server, authenticated session, node agent and scorers, in a
//! process-group scope of its own that its session alone exchanges with the head.

use std::time::{Duration, Instant};

use ractor::{Actor, ActorRef};
use tokio::sync::mpsc;

use super::config::ClusterConfig;
use super::node::{self, NodeEvent};
use crate::actors::messages::{NodeAgentMsg, SCOPE, SUPERVISORS, SupervisorMsg};
use crate::actors::{NodeAgent, NodeAgentArgs, ShardLoader, ShardLoaderArgs};
use crate::error::{Error, Result};
use crate::execute::RunOptions;
use crate::status::{StatusEvent, StatusLog};
use crate::transport::{self, Tls, TransportError};

/// How long a dialled session may take to authenticate.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest pause between dial attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

fn supervisors(scope: &str) -> Vec<ActorRef<SupervisorMsg>> {
    ractor::pg::get_scoped_members(&scope.to_owned(), &SUPERVISORS.to_owned())
        .into_iter()
        .map(ActorRef::from)
        .collect()
}

/// A pause of between half and all of `backoff`, drawn afresh each time, so that a pool of
/// workers that lost its head (or starts before it) does not dial it in lockstep.
fn jittered(backoff: Duration) -> Duration {
    backoff.mul_f64(rand::random_range(0.5..=1.0))
}

/// How one dial ended.
enum Dialled {
    /// Joined, then the session dropped: dial again after the shortest pause.
    Lost,
    /// The session never authenticated: why, and whether the head closed it (a refusal) rather
    /// than it timing out.
    NotJoined { why: String, refused: bool },
    /// The node server is gone: stop.
    Stopped,
}

/// Follows the session that the dial just made until it ends. Only this session's events count:
/// a late event of an earlier session is ignored, unless it is the authentication of one (then
/// that session is the link to the head). A session that does not authenticate in time is
/// closed here, so that it cannot authenticate later and make the next dial a duplicate name
/// that the head refuses.
async fn follow_dial(
    seed: &str,
    events: &mut mpsc::UnboundedReceiver<NodeEvent>,
    status: &StatusLog,
) -> Dialled {
    let deadline = tokio::time::Instant::now() + AUTH_TIMEOUT;
    let mut ours: Option<ActorRef<ractor_cluster::NodeSessionMessage>> = None;
    let mut joined = None;
    loop {
        let event = if joined.is_some() {
            events.recv().await
        } else if let Ok(event) = tokio::time::timeout_at(deadline, events.recv()).await {
            event
        } else {
            if let Some(session) = &ours {
                session.stop(Some("did not authenticate in time".to_owned()));
            }
            return Dialled::NotJoined {
                why: format!("{seed} did not authenticate us in time"),
                refused: false,
            };
        };
        match event {
            None => return Dialled::Stopped,
            Some(NodeEvent::Opened {
                inbound: false,
                session,
                ..
            }) if ours.is_none() => ours = Some(session),
            Some(NodeEvent::Opened { .. }) => {}
            Some(NodeEvent::Authenticated { peer, session, .. }) if joined.is_none() => {
                joined = Some(session);
                tracing::info!(head = %peer, seed = %seed, "joined the cluster");
                status.emit(StatusEvent::Joined { head: peer });
            }
            Some(NodeEvent::Authenticated { .. }) => {}
            Some(NodeEvent::Disconnected { session, .. }) if joined.as_ref() == Some(&session) => {
                tracing::warn!(seed = %seed, "lost the head; reconnecting");
                return Dialled::Lost;
            }
            Some(NodeEvent::Disconnected { session, .. })
                if joined.is_none() && ours.as_ref().is_some_and(|o| o.get_id() == session) =>
            {
                let why = format!(
                    "{seed} closed the session before authentication (wrong cookie, or a node of this name is already connected?)"
                );
                tracing::warn!("{why}");
                return Dialled::NotJoined { why, refused: true };
            }
            Some(NodeEvent::Disconnected { .. }) => {}
        }
    }
}

/// Keeps this node joined to one of `seeds`; returns an error only if it never managed to join
/// within the join timeout (a zero timeout: it keeps trying while the head starts, however
/// long).
async fn stay_joined(
    server: ActorRef<ractor_cluster::NodeServerMessage>,
    mut events: mpsc::UnboundedReceiver<NodeEvent>,
    config: ClusterConfig,
    tls: Option<Tls>,
    status: StatusLog,
) -> std::result::Result<(), String> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(200);
    let (mut ever_joined, mut refused) = (false, 0u32);
    let mut last_error = String::new();
    loop {
        for seed in &config.seeds {
            match transport::dial(&server, seed, tls.as_ref()).await {
                Err(e) => last_error = e.to_string(),
                Ok(()) => match follow_dial(seed, &mut events, &status).await {
                    Dialled::Lost => {
                        ever_joined = true;
                        backoff = Duration::from_millis(200);
                    }
                    Dialled::NotJoined {
                        why,
                        refused: by_head,
                    } => {
                        refused += u32::from(by_head);
                        last_error = why;
                    }
                    Dialled::Stopped => return Ok(()),
                },
            }
            let patient = config.join_timeout.is_zero();
            if !ever_joined && !patient && started.elapsed() > config.join_timeout {
                return Err(format!(
                    "could not join the cluster at {} within {:?} ({refused} sessions refused): {last_error}",
                    config.seeds.join(","),
                    config.join_timeout
                ));
            }
            tracing::debug!(error = %last_error, "dial failed; retrying");
            tokio::time::sleep(jittered(backoff)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// One node of this process: its node server (its own session to the head), its node agent
/// and scorers in a process-group scope of its own, and the task that keeps it joined.
struct Member {
    config: ClusterConfig,
    scope: String,
    server: ActorRef<ractor_cluster::NodeServerMessage>,
    agent: ActorRef<NodeAgentMsg>,
    agent_task: tokio::task::JoinHandle<()>,
    joined: tokio::task::JoinHandle<std::result::Result<(), String>>,
}

/// The nodes this process joins as: itself, or for a load test `<name>.<i>` for each of
/// `--nodes-per-process`, each in a scope of its own (the cluster's [`SCOPE`] to its peers).
fn members_of(config: &ClusterConfig) -> Vec<(ClusterConfig, String)> {
    if config.nodes_per_process <= 1 {
        return vec![(config.clone(), SCOPE.to_owned())];
    }
    (0..config.nodes_per_process)
        .map(|i| {
            let name = format!("{}.{i}", config.node_name);
            let scope = format!("{SCOPE}@{name}");
            let member = ClusterConfig {
                node_name: name,
                ..config.clone()
            };
            (member, scope)
        })
        .collect()
}

/// Starts one node of this process: node server (listening if asked: a single node only, the
/// settings refuse `--listen` with several), node agent and the task that keeps it joined.
async fn start_member(
    opts: &RunOptions,
    config: ClusterConfig,
    scope: String,
    loader: &ActorRef<crate::actors::ShardLoaderMsg>,
    tls: Option<Tls>,
) -> Result<Member> {
    let node::Node { server, events } = node::start(&config, &scope)
        .await
        .map_err(|e| Error::actors("starting the node server", e))?;
    if let Some(listen) = &config.listen {
        let bound = transport::listen(server.clone(), listen, tls.clone()).await?;
        tracing::info!(listen = %bound, "worker listening");
    }
    let backends =
        crate::actors::required_backend_slots(opts.backends.as_ref()).map_err(|problem| {
            Error::Config {
                problems: vec![problem],
            }
        })?;
    let (agent, agent_task) = Actor::spawn(
        None,
        NodeAgent,
        NodeAgentArgs {
            node: config.node_name.clone(),
            scorers: opts.threads,
            loader: loader.clone(),
            rpc_timeout: config.heartbeat.max(Duration::from_secs(2)) * 3,
            idle_retry: Duration::from_millis(50),
            backends,
            scope: scope.clone(),
        },
    )
    .await
    .map_err(|e| Error::actors("starting the node agent", e))?;
    let joined = tokio::spawn(stay_joined(
        server.clone(),
        events,
        config.clone(),
        tls,
        opts.status.clone(),
    ));
    Ok(Member {
        config,
        scope,
        server,
        agent,
        agent_task,
        joined,
    })
}

/// Runs this process as a worker (one node, or `--nodes-per-process` of them) until SIGTERM or
/// SIGINT (then drains and returns `Ok`), or until a node cannot join the cluster.
///
/// # Errors
/// [`Error::Transport`] if a node cannot listen or never joins, [`Error::Actors`] if its
/// actors cannot start.
pub async fn run_worker(opts: &RunOptions, config: &ClusterConfig) -> Result<()> {
    let tls = config.tls.as_ref().map(Tls::load).transpose()?;
    let (loader, loader_task) = Actor::spawn(
        None,
        ShardLoader,
        ShardLoaderArgs {
            budget_bytes: opts.cache_bytes,
        },
    )
    .await
    .map_err(|e| Error::actors("starting the shard loader", e))?;
    let mut members = Vec::with_capacity(config.nodes_per_process);
    for (member, scope) in members_of(config) {
        members.push(start_member(opts, member, scope, &loader, tls.clone()).await?);
    }
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|source| Error::Signal {
        signal: "SIGTERM",
        source,
    })?;
    let (joins, agents): (Vec<_>, Vec<_>) = members
        .iter_mut()
        .map(|m| (&mut m.joined, &mut m.agent_task))
        .unzip();
    let (ended, stopped) = (
        futures::future::select_all(joins),
        futures::future::select_all(agents),
    );
    let outcome = tokio::select! {
        _ = terminate.recv() => Ok(true),
        _ = tokio::signal::ctrl_c() => Ok(true),
        (r, _, _) = ended => match r {
            Ok(Err(e)) => Err(Error::Transport(TransportError::Join(e))),
            _ => Ok(false),
        },
        _ = stopped => Ok(false),
    };
    if outcome? {
        let drained = futures::future::join_all(members.iter_mut().map(drain)).await;
        let handed_back = drained.into_iter().any(|handed_back| handed_back);
        opts.status.emit(StatusEvent::Drained { handed_back });
    }
    for member in &members {
        member.joined.abort();
        member.agent.stop(None);
    }
    loader.stop(None);
    let _ = loader_task.await;
    for member in &members {
        member.server.stop(None);
    }
    Ok(())
}

/// SIGTERM: the node agent finishes its units within the drain grace, else hands them back;
/// then the last reports are flushed to the head.
async fn drain(member: &mut Member) -> bool {
    let Member {
        config,
        scope,
        agent,
        agent_task,
        ..
    } = member;
    tracing::info!(node = %config.node_name, grace = ?config.drain_grace, "SIGTERM: draining");
    let _ = agent.cast(NodeAgentMsg::Drain);
    let handed_back = tokio::time::timeout(config.drain_grace, agent_task)
        .await
        .is_err();
    if handed_back {
        tracing::warn!(node = %config.node_name, "drain grace over: handing the units back");
        for sup in supervisors(scope) {
            let _ = sup.cast(SupervisorMsg::ReleaseNode(config.node_name.clone()));
        }
        agent.stop(None);
    }
    // Make sure the last reports (and the hand-back) reached the head before exiting.
    for sup in supervisors(scope) {
        let _ = sup
            .call(SupervisorMsg::Barrier, Some(Duration::from_secs(2)))
            .await;
    }
    tracing::info!(node = %config.node_name, "drained");
    handed_back
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_jittered_within_half_to_all_of_the_backoff() {
        let backoff = Duration::from_millis(800);
        let pauses: Vec<Duration> = (0..200).map(|_| jittered(backoff)).collect();
        assert!(pauses.iter().all(|p| *p >= backoff / 2 && *p <= backoff));
        let (lo, hi) = (pauses.iter().min().unwrap(), pauses.iter().max().unwrap());
        assert!(
            *hi - *lo > backoff / 4,
            "200 draws spread over the range: {lo:?}..{hi:?}"
        );
    }
}
