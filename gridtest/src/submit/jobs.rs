//! Managing the sweeps of a serving head: `gridtest list`, `gridtest cancel ID` and
//! `gridtest follow ID`, each a client joining the head with its cookie (and TLS) as
//! `gridtest submit` does.

use std::time::Duration;

use comfy_table::Table;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use ractor::rpc::CallResult;

use super::{HeadArgs, connect, follow};
use crate::actors::messages::{CoordinatorMsg, SweepEntry, SweepState};
use crate::actors::wire::Wire;
use crate::sweep::SweepId;
use crate::{Error, Result};

/// How long a client waits for the head's answer.
const ANSWER: Duration = Duration::from_secs(30);

/// Settings of `gridtest list`.
#[derive(clap::Args, Clone, Debug)]
pub struct ListArgs {
    /// The head.
    #[command(flatten)]
    pub head: HeadArgs,
    /// Print the sweeps as JSON (one array), for scripts.
    #[arg(long)]
    pub json: bool,
}

/// Settings of `gridtest cancel`.
#[derive(clap::Args, Clone, Debug)]
pub struct CancelArgs {
    /// The head.
    #[command(flatten)]
    pub head: HeadArgs,
    /// The sweep to cancel (queued: it leaves the queue; running: it stops cleanly, its
    /// ledger flushed, and resumes if submitted again).
    pub sweep_id: SweepId,
}

/// Settings of `gridtest follow`.
#[derive(clap::Args, Clone, Debug)]
pub struct FollowArgs {
    /// The head.
    #[command(flatten)]
    pub head: HeadArgs,
    /// The sweep to follow (anyone's: queued, running or ended).
    pub sweep_id: SweepId,
}

fn lost(what: &str, other: impl std::fmt::Debug) -> Error {
    Error::Submission(format!("{what}: no answer from the head ({other:?})"))
}

/// Every sweep the head knows, in the order submitted.
async fn list(args: &HeadArgs) -> Result<Vec<SweepEntry>> {
    let coordinator = connect(args).await?;
    match coordinator.call(CoordinatorMsg::List, Some(ANSWER)).await {
        Ok(CallResult::Success(Wire(entries))) => Ok(entries),
        other => Err(lost("listing the sweeps", other)),
    }
}

/// The sweeps as a table: id, strategy, submitted (UTC), state and its figures.
fn table(entries: &[SweepEntry]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "sweep",
        "strategy",
        "submitted (UTC)",
        "state",
        "cells",
    ]);
    for e in entries {
        let submitted = chrono::DateTime::from_timestamp_millis(
            i64::try_from(e.submitted_ms).unwrap_or(i64::MAX),
        )
        .map_or_else(String::new, |t| t.format("%Y-%m-%d %H:%M:%S").to_string());
        let cells = match &e.state {
            SweepState::Queued { ahead } => format!("{ahead} ahead"),
            SweepState::Running {
                done,
                total,
                failed,
            } => format!("{done}/{total} ({failed} failed)"),
            SweepState::Done { cells, failed, .. } => format!("{cells} ({failed} failed)"),
            SweepState::Failed { error } => error.clone(),
            SweepState::Cancelled => String::new(),
        };
        table.add_row([
            e.sweep_id.to_string(),
            e.strategy.clone(),
            submitted,
            e.state.label().to_owned(),
            cells,
        ]);
    }
    table
}

/// Runs `gridtest list`: prints the head's sweeps as a table (or JSON with `--json`).
///
/// # Errors
/// [`Error::Submission`] when the head cannot be joined or does not answer.
pub fn run_list(args: &ListArgs) -> Result<()> {
    let entries = block_on(list(&args.head))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).expect("entries serialise")
        );
    } else {
        println!("{}", table(&entries));
    }
    Ok(())
}

/// Runs `gridtest cancel ID`: prints the state the sweep is left in.
///
/// # Errors
/// [`Error::Submission`] when the head does not know the sweep, it has ended, or the head
/// cannot be reached.
pub fn run_cancel(args: &CancelArgs) -> Result<()> {
    let state = block_on(async {
        let coordinator = connect(&args.head).await?;
        let id = args.sweep_id.clone();
        match coordinator
            .call(|r| CoordinatorMsg::Cancel(Wire(id), r), Some(ANSWER))
            .await
        {
            Ok(CallResult::Success(Wire(answer))) => answer.map_err(Error::Submission),
            other => Err(lost("cancelling", other)),
        }
    })?;
    let id = &args.sweep_id;
    match state {
        SweepState::Cancelled => println!("sweep {id} cancelled"),
        running => println!(
            "sweep {id} is stopping ({}); its ledger is kept: submit it again to resume",
            running.label()
        ),
    }
    Ok(())
}

/// Runs `gridtest follow ID`: the sweep's progress until it ends, then its leaderboard.
///
/// # Errors
/// [`Error::Submission`] when the sweep failed, was cancelled or is unknown, or the head
/// cannot be reached.
pub fn run_follow(args: &FollowArgs) -> Result<()> {
    block_on(async {
        let coordinator = connect(&args.head).await?;
        follow(&coordinator, &args.sweep_id).await
    })
}

fn block_on<T>(work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::actors("starting the async runtime", e))?
        .block_on(work)
}
