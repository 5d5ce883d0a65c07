//! The head: listens for workers, runs the sweep's supervisor (and local scorers), forwards
//! node disconnections to it, and returns when the sweep is complete.

use ractor::ActorRef;

use super::config::ClusterConfig;
use super::messages::{SCOPE, SUPERVISORS, SupervisorMsg};
use super::node::{self, NodeEvent};
use super::transport::{self, Tls};
use crate::actors::SupervisorTiming;
use crate::error::{Error, Result};
use crate::run::{NodeSetup, RunOptions, execute, plan};
use crate::storage::Location;
use crate::sweep::{Sweep, SweepResults};

fn local_supervisors() -> Vec<ActorRef<SupervisorMsg>> {
    ractor::pg::get_scoped_local_members(&SCOPE.to_owned(), &SUPERVISORS.to_owned())
        .into_iter()
        .map(ActorRef::from)
        .collect()
}

/// Runs `sweep` as the head of a cluster.
///
/// # Errors
/// As [`crate::run_sweep`], plus [`Error::Runtime`] if the node cannot listen.
pub async fn run_head(
    sweep: &Sweep,
    opts: &RunOptions,
    config: &ClusterConfig,
) -> Result<SweepResults> {
    let runtime = |e: String| Error::Runtime(e);
    let tls = config
        .tls
        .as_ref()
        .map(Tls::load)
        .transpose()
        .map_err(|e| runtime(e.to_string()))?;
    let mut node = node::start(config).await.map_err(runtime)?;
    let listen = config.listen.as_deref().unwrap_or("0.0.0.0:7000");
    let bound = transport::listen(node.server.clone(), listen, tls)
        .await
        .map_err(|e| runtime(e.to_string()))?;
    tracing::info!(node = %config.node_name, listen = %bound, tls = config.tls.is_some(),
        "head listening");
    eprintln!("gridtest head listening on {bound}");
    let events = tokio::spawn(async move {
        while let Some(event) = node.events.recv().await {
            match event {
                NodeEvent::Authenticated { peer } => tracing::info!(node = %peer, "node joined"),
                NodeEvent::Disconnected {
                    peer: Some(peer), ..
                } => {
                    for sup in local_supervisors() {
                        let _ = sup.cast(SupervisorMsg::NodeDown(peer.clone()));
                    }
                }
                NodeEvent::Disconnected {
                    peer: None,
                    peer_addr,
                } => tracing::warn!(peer = %peer_addr,
                    "refused a connection that did not authenticate (wrong cookie?)"),
                NodeEvent::Opened { .. } => {}
            }
        }
    });
    let planned = plan(sweep).await?;
    let results = match &config.results {
        Some(r) => Some(Location::parse(r).map_err(|e| runtime(e.to_string()))?),
        None => None,
    };
    let setup = NodeSetup {
        node_name: config.node_name.clone(),
        cluster: true,
        scorers: opts.threads,
        results,
        timing: SupervisorTiming {
            heartbeat: config.heartbeat,
            node_timeout: config.node_timeout,
            progress_every: opts.progress_every,
        },
    };
    let out = execute(planned, opts, setup).await;
    events.abort();
    node.server.stop(None);
    out
}
