//! The head: listens for workers, runs the sweep's supervisor (and local scorers), forwards
//! node disconnections to it, and returns when the sweep is complete.

use ractor::ActorRef;

use super::config::ClusterConfig;
use super::node;
use super::sessions::{SessionChange, Sessions};
use crate::actors::SupervisorTiming;
use crate::actors::messages::{SCOPE, SUPERVISORS, SupervisorMsg};
use crate::error::{Error, Result};
use crate::execute::{NodeSetup, RunOptions, execute, plan_or_cancel, run_halving};
use crate::status::{StatusEvent, StatusLog};
use crate::storage::Location;
use crate::sweep::{Halving, HalvingReport, Sweep, SweepResults};
use crate::transport::{self, Tls};

fn local_supervisors() -> Vec<ActorRef<SupervisorMsg>> {
    ractor::pg::get_scoped_local_members(&SCOPE.to_owned(), &SUPERVISORS.to_owned())
        .into_iter()
        .map(ActorRef::from)
        .collect()
}

/// Runs `sweep` as the head of a cluster.
///
/// # Errors
/// As [`crate::execute::run_sweep`], plus [`Error::Transport`] if the node cannot listen.
pub async fn run_head(
    sweep: &Sweep,
    opts: &RunOptions,
    config: &ClusterConfig,
) -> Result<SweepResults> {
    let events = start_network(config, &opts.status).await?;
    let planned = plan_or_cancel(sweep, &opts.cancel).await;
    let out = match planned {
        Ok(planned) => execute(planned, opts, head_setup(opts, config)).await,
        Err(e) => Err(e),
    };
    events.abort();
    out
}

/// Runs `sweep` as a successive-halving search ([`crate::sweep::HalvingSchedule`]) with this
/// node as the head of a cluster: every rung a sweep whose units the workers share.
///
/// # Errors
/// As [`crate::execute::run_search`], plus [`Error::Transport`] if the node cannot listen.
pub async fn run_head_search(
    sweep: &Sweep,
    opts: &RunOptions,
    config: &ClusterConfig,
    halving: Halving,
) -> Result<(SweepResults, HalvingReport)> {
    let events = start_network(config, &opts.status).await?;
    let out = run_halving(sweep, opts, halving, &head_setup(opts, config)).await;
    events.abort();
    out
}

/// The head's node: its scorers, and the cluster's heartbeat and timeouts.
fn head_setup(opts: &RunOptions, config: &ClusterConfig) -> NodeSetup {
    NodeSetup {
        node_name: config.node_name.clone(),
        cluster: true,
        scorers: opts.threads,
        timing: SupervisorTiming {
            heartbeat: config.heartbeat,
            node_timeout: config.node_timeout,
            progress_every: opts.progress_every,
        },
    }
}

/// Starts the node server, listens, and forwards session drops to the local supervisors.
async fn start_network(
    config: &ClusterConfig,
    status: &StatusLog,
) -> Result<tokio::task::JoinHandle<()>> {
    let tls = config.tls.as_ref().map(Tls::load).transpose()?;
    let node::Node { server, mut events } = node::start(config, SCOPE)
        .await
        .map_err(|e| Error::actors("starting the node server", e))?;
    let listen = config.listen.as_deref().unwrap_or("0.0.0.0:7000");
    let bound = transport::listen(server.clone(), listen, tls).await?;
    tracing::info!(node = %config.node_name, listen = %bound, tls = config.tls.is_some(),
        "head listening");
    status.emit(StatusEvent::Listening {
        addr: bound.to_string(),
    });
    let status = status.clone();
    Ok(tokio::spawn(async move {
        let _server = server;
        let mut sessions = Sessions::default();
        while let Some(event) = events.recv().await {
            match sessions.follow(event) {
                Some(SessionChange::Joined { node, duplicate_of }) => {
                    tracing::info!(node = %node, "node joined");
                    if let Some(other) = duplicate_of {
                        tracing::warn!(node = %node, other = %other,
                            "two connected nodes share this name: give each a unique --node-name");
                    }
                }
                Some(SessionChange::Lost { node }) => {
                    for sup in local_supervisors() {
                        let _ = sup.cast(SupervisorMsg::NodeDown(node.clone()));
                    }
                }
                Some(SessionChange::Refused { peer_addr, claimed }) => {
                    let duplicate = claimed.as_ref().is_some_and(|n| sessions.is_connected(n));
                    if duplicate {
                        tracing::warn!(peer = %peer_addr, node = ?claimed,
                            "refused a second node named like a connected one (duplicate --node-name?)");
                    } else {
                        tracing::warn!(peer = %peer_addr, claimed = ?claimed,
                            "refused a connection that did not authenticate (wrong cookie?)");
                    }
                    status.emit(StatusEvent::Refused {
                        peer: peer_addr.to_string(),
                        claimed,
                        duplicate,
                    });
                }
                None => {}
            }
        }
    }))
}

/// Serves submitted sweeps (`--serve`) until SIGTERM or SIGINT: a coordinator queues them and
/// runs them one after another on this cluster, persisting each under the results root.
///
/// # Errors
/// [`Error::Transport`] if the node cannot listen.
pub async fn serve(opts: &RunOptions, config: &ClusterConfig) -> Result<()> {
    let events = start_network(config, &opts.status).await?;
    let results = match &opts.results {
        Some(root) => root.clone(),
        None => Location::parse("results")?,
    };
    let (coordinator, task) = ractor::Actor::spawn(
        None,
        super::coordinator::Coordinator,
        super::coordinator::CoordinatorArgs {
            node_name: config.node_name.clone(),
            opts: opts.clone(),
            results,
            timing: SupervisorTiming {
                heartbeat: config.heartbeat,
                node_timeout: config.node_timeout,
                progress_every: opts.progress_every,
            },
        },
    )
    .await
    .map_err(|e| Error::actors("starting the coordinator", e))?;
    opts.status.emit(StatusEvent::Serving);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|source| Error::Signal {
        signal: "SIGTERM",
        source,
    })?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("stopping: the running sweep, if any, flushes its ledger first");
    opts.cancel.cancel();
    coordinator.stop(None);
    let _ = task.await;
    events.abort();
    Ok(())
}
