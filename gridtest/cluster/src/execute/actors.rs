//! The actors of one run: its supervisor, in the process-group scope the run's nodes meet in,
//! and, when this node scores, its node agent with the scorers.

use std::time::Duration;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;

use super::spooled::Outputs;
use super::{NodeSetup, Plan, RunOptions, research};
use crate::actors::messages::{NodeAgentMsg, SCOPE, SupervisorMsg, SweepContext, run_scope};
use crate::actors::{
    NodeAgent, NodeAgentArgs, ShardLoaderMsg, Supervisor, SupervisorArgs, SupervisorOutcome,
    required_backend_slots,
};
use crate::error::{Error, Result};
use crate::persist::LedgerLog;
use crate::sweep::{FinalCell, Ledger};

impl NodeSetup {
    /// The process-group scope of the run's actors: nodes that join a head meet in the
    /// cluster's; an in-process run keeps to one of its own.
    fn scope(&self) -> String {
        if self.cluster {
            SCOPE.to_owned()
        } else {
            run_scope()
        }
    }
}

/// Starts the supervisor (and, when this node scores, a node agent with its scorers), waits
/// until every cell is final, and stops them. The cells `resumed` from the persisted ledger
/// are already in the spool and the outputs; their daily returns go into the returns book.
pub(super) async fn run_actors(
    plan: &Plan,
    ledger: Ledger,
    log: Option<LedgerLog>,
    outputs: Outputs,
    loader: &ActorRef<ShardLoaderMsg>,
    opts: &RunOptions,
    setup: &NodeSetup,
) -> Result<SupervisorOutcome> {
    let backends =
        required_backend_slots(opts.backends.as_ref()).map_err(|problem| crate::Error::Config {
            problems: vec![problem],
        })?;
    let returns = returns_book(plan, opts, !backends.is_empty(), &outputs.resumed)?;
    let (done_tx, done_rx) = oneshot::channel();
    let scope = setup.scope();
    let context = SweepContext {
        record_days: returns.is_some(),
        record_trades: opts.trades,
        ..SweepContext::from(&plan.spec)
    };
    let (supervisor, supervisor_task) = Actor::spawn(
        None,
        Supervisor,
        SupervisorArgs {
            progress: opts.progress.clone(),
            ledger,
            context,
            log,
            spool: outputs.spool,
            render: Some(outputs.render),
            returns,
            trades: outputs.trades,
            timing: setup.timing,
            done: done_tx,
            wait_for_nodes: opts.wait_for_nodes,
            status: opts.status.clone(),
            scope: scope.clone(),
            shard_files: shard_files(plan),
        },
    )
    .await
    .map_err(|e| Error::actors("starting the supervisor", e))?;
    let agent = if setup.scorers > 0 || !backends.is_empty() {
        let args = NodeAgentArgs {
            node: setup.node_name.clone(),
            scorers: setup.scorers,
            loader: loader.clone(),
            rpc_timeout: Duration::from_secs(30),
            idle_retry: Duration::from_millis(20),
            backends,
            scope,
        };
        Some(start_agent(args, &supervisor).await?)
    } else {
        None
    };
    let stopped = |_| {
        Error::actors(
            "running the sweep",
            "the supervisor stopped before it finished",
        )
    };
    let mut done_rx = done_rx;
    let outcome = tokio::select! {
        outcome = &mut done_rx => outcome.map_err(stopped),
        () = opts.cancel.cancelled() => {
            let _ = supervisor.cast(SupervisorMsg::Cancel("the run was cancelled".to_owned()));
            done_rx.await.map_err(stopped)
        }
    };
    let _ = supervisor_task.await;
    if let Some((agent, task)) = agent {
        agent.stop_children(None);
        agent.stop(None);
        let _ = task.await;
    }
    outcome
}

/// The returns book of the run ([`research::book_for`]), with the daily returns of the cells
/// `resumed` from the persisted ledger in it.
fn returns_book(
    plan: &Plan,
    opts: &RunOptions,
    devices: bool,
    resumed: &[FinalCell],
) -> Result<Option<crate::sweep::ReturnsBook>> {
    let mut book = research::book_for(plan, opts, devices)?;
    if let Some(book) = &mut book {
        resumed.iter().for_each(|cell| book.offer(cell));
    }
    Ok(book)
}

/// Each shard's files as the manifest records them, by shard.
fn shard_files(
    plan: &Plan,
) -> std::collections::HashMap<crate::data::ShardId, Vec<crate::data::ListedFile>> {
    plan.spec
        .shards
        .iter()
        .map(crate::data::Shard::id)
        .zip(plan.shard_files.iter().cloned())
        .collect()
}

/// Starts this node's agent (and its scorers); stops `supervisor` if it cannot.
async fn start_agent(
    args: NodeAgentArgs,
    supervisor: &ActorRef<SupervisorMsg>,
) -> Result<(ActorRef<NodeAgentMsg>, tokio::task::JoinHandle<()>)> {
    Actor::spawn(None, NodeAgent, args).await.map_err(|e| {
        supervisor.stop(None);
        Error::actors("starting the node agent", e)
    })
}
