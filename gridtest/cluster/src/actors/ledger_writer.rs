//! `LedgerWriter`: writes a sweep's final cells beside the supervisor, so that neither a slow or
//! failing results store nor the local disk ever stalls leasing: every cell goes to the sweep's
//! spool (local Parquet parts the outputs are computed from) and, when the sweep is persisted,
//! to its ledger log.
//!
//! The supervisor casts each batch of newly final cells ([`LedgerWriterMsg::Append`]); the writer
//! spools them at once, buffers them for the log and writes a segment at most once per flush
//! period, in its own mailbox (an S3
//! flush may retry for many seconds, longer than a node's silence limit, which must not count
//! against the nodes). One flush is scheduled at a time, so a store that is down does not pile
//! up messages. At the end the supervisor calls
//! [`LedgerWriterMsg::Finish`]: the writer flushes what is left and answers with the spool and
//! whether every cell was persisted.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::persist::{LedgerLog, PersistError};
use crate::progress::ProgressFeed;
use crate::sweep::output::{OrderedRender, TradesFile};
use crate::sweep::{CellSpool, FinalCell, ReturnsBook, Spool, WorkUnit};

/// Messages of the [`LedgerWriter`].
pub enum LedgerWriterMsg {
    /// Cells made final (buffered until the next flush).
    Append(Vec<FinalCell>),
    /// A chained unit after a slice: its checkpoint is saved, when the sweep is persisted.
    Chain(Box<WorkUnit>),
    /// Write the buffered cells as a segment (scheduled by the writer itself; a failure is
    /// retried one period later).
    Flush,
    /// Write everything left and answer with the spool.
    Finish(RpcReplyPort<WriterOutcome>),
}

// Local only, never crosses the wire (with the `cluster` feature; without it ractor implements
// `Message` for every sendable type).
#[cfg(feature = "cluster")]
impl ractor::Message for LedgerWriterMsg {}

impl std::fmt::Debug for LedgerWriterMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Append(cells) => write!(f, "Append({} cells)", cells.len()),
            Self::Chain(unit) => write!(f, "Chain({})", unit.id),
            Self::Flush => f.write_str("Flush"),
            Self::Finish(_) => f.write_str("Finish"),
        }
    }
}

/// What the writer answers at the end.
#[derive(Debug)]
pub struct WriterOutcome {
    /// Every final cell, or why the spool could not be written.
    pub spool: Result<Spool, String>,
    /// Why some cells could not be persisted to the ledger log, if they could not.
    pub persist_failure: Option<String>,
    /// The output files as far as they were written during the sweep.
    pub render: Option<OrderedRender>,
    /// The sets' daily returns, when the sweep records them.
    pub returns: Option<ReturnsBook>,
    /// The cells' trades as far as written, or why they could not be (`--trades`).
    pub trades: Option<Result<TradesFile, String>>,
}

impl WriterOutcome {
    /// The outcome when the writer is gone: nothing spooled, nothing known persisted.
    #[must_use]
    pub fn lost(why: &str) -> Self {
        Self {
            spool: Err(why.to_owned()),
            persist_failure: Some(why.to_owned()),
            render: None,
            returns: None,
            trades: None,
        }
    }
}

/// The ledger writer actor (one per sweep, on the head).
#[derive(Debug, Default)]
pub struct LedgerWriter;

/// Its state: the spool, the log and its flush schedule.
#[derive(Debug)]
pub struct LedgerWriterState {
    spool: Option<CellSpool>,
    /// Why the spool failed (it takes nothing after its first failure).
    spool_failure: Option<String>,
    log: Option<LedgerLog>,
    every: Duration,
    scheduled: bool,
    render: Option<OrderedRender>,
    returns: Option<ReturnsBook>,
    trades: Option<Result<TradesFile, String>>,
    progress: ProgressFeed,
}

/// Flushes `log`, counting the flush and its duration on `progress` (`/metrics`) when it had
/// cells to write.
async fn timed_flush(log: &mut LedgerLog, progress: &ProgressFeed) -> Result<(), PersistError> {
    if log.pending() == 0 {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let flushed = log.flush().await;
    progress
        .ledger_flushes()
        .record(started.elapsed(), flushed.is_ok());
    flushed
}

/// What the [`LedgerWriter`] starts with.
#[derive(Debug)]
pub struct LedgerWriterArgs {
    /// The sweep's spool.
    pub spool: CellSpool,
    /// Its ledger log, when it is persisted.
    pub log: Option<LedgerLog>,
    /// The log's flush period.
    pub every: Duration,
    /// The output files, written in grid order as cells become final (resumed cells offered
    /// already).
    pub render: Option<OrderedRender>,
    /// The sets' daily returns, summed as cells become final, when the sweep records them.
    pub returns: Option<ReturnsBook>,
    /// Where the cells' trades are written as they become final (`--trades`; resumed cells
    /// written already).
    pub trades: Option<TradesFile>,
    /// Where each flush's duration is counted (`/metrics`).
    pub progress: ProgressFeed,
}

impl LedgerWriterState {
    fn spool_cells(&mut self, cells: &[FinalCell]) {
        let Some(spool) = &mut self.spool else { return };
        if self.spool_failure.is_some() {
            return;
        }
        for cell in cells {
            if let Err(e) = spool.push(cell) {
                tracing::error!(error = %e, "could not spool cells");
                self.spool_failure = Some(e.to_string());
                return;
            }
            if let Some(render) = &mut self.render {
                render.offer(cell);
            }
            if let Some(book) = &mut self.returns {
                book.offer(cell);
            }
            if let Some(Ok(file)) = &mut self.trades
                && let Err(e) = file.push(cell)
            {
                tracing::error!(error = %e, "could not write the cells' trades");
                self.trades = Some(Err(e.to_string()));
            }
        }
    }

    fn schedule(&mut self, myself: &ActorRef<LedgerWriterMsg>) {
        if !self.scheduled {
            self.scheduled = true;
            myself.send_after(self.every, || LedgerWriterMsg::Flush);
        }
    }
}

impl Actor for LedgerWriter {
    type Msg = LedgerWriterMsg;
    type State = LedgerWriterState;
    type Arguments = LedgerWriterArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: LedgerWriterArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(LedgerWriterState {
            spool: Some(args.spool),
            spool_failure: None,
            log: args.log,
            every: args.every,
            scheduled: false,
            render: args.render,
            returns: args.returns,
            trades: args.trades.map(Ok),
            progress: args.progress,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            LedgerWriterMsg::Append(cells) => {
                state.spool_cells(&cells);
                if let Some(log) = &mut state.log {
                    for cell in &cells {
                        log.push(cell);
                    }
                    state.schedule(&myself);
                }
            }
            LedgerWriterMsg::Chain(unit) => {
                if let Some(log) = &state.log
                    && let Err(e) = log.chains().save(&unit).await
                {
                    tracing::warn!(unit = %unit.id, error = %e,
                        "could not save a history's checkpoint: a restarted head would \
                         run it again from an earlier slice");
                }
            }
            LedgerWriterMsg::Flush => {
                state.scheduled = false;
                if let Some(log) = &mut state.log {
                    match timed_flush(log, &state.progress).await {
                        Ok(()) => tracing::debug!(written = log.written(), "ledger flushed"),
                        Err(e) => {
                            tracing::error!(error = %e, "could not persist cells; will retry");
                            state.schedule(&myself);
                        }
                    }
                }
            }
            LedgerWriterMsg::Finish(reply) => {
                let persist_failure = match &mut state.log {
                    Some(log) => timed_flush(log, &state.progress).await.err().map(|e| {
                        tracing::error!(error = %e, "could not persist the last cells");
                        format!("the ledger's last cells: {e}")
                    }),
                    None => None,
                };
                let spool = match (state.spool.take(), state.spool_failure.take()) {
                    (Some(spool), None) => spool.finish().map_err(|e| e.to_string()),
                    (_, Some(why)) => Err(why),
                    (None, None) => Err("the spool was finished already".to_owned()),
                };
                let _ = reply.send(WriterOutcome {
                    spool,
                    persist_failure,
                    render: state.render.take(),
                    returns: state.returns.take(),
                    trades: state.trades.take(),
                });
                myself.stop(Some("sweep complete".to_owned()));
            }
        }
        Ok(())
    }
}
