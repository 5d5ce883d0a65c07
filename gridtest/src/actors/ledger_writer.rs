//! `LedgerWriter`: persists a sweep's final cells beside the supervisor, so that a slow or
//! failing results store never stalls leasing.
//!
//! The supervisor casts each batch of newly final cells ([`LedgerWriterMsg::Append`]); the writer
//! buffers them and writes a segment at most once per flush period, in its own mailbox (an S3
//! flush may retry for many seconds, longer than a node's silence limit, which must not count
//! against the nodes). One flush is scheduled at a time, so a store that is down does not pile
//! up messages. At the end the supervisor calls
//! [`LedgerWriterMsg::Finish`]: the writer flushes what is left and answers whether every cell
//! was persisted.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::engine::{CellKey, CellOutcome};
use crate::persist::LedgerLog;

/// Messages of the [`LedgerWriter`].
pub enum LedgerWriterMsg {
    /// Cells made final (buffered until the next flush).
    Append(Vec<(CellKey, CellOutcome)>),
    /// Write the buffered cells as a segment (scheduled by the writer itself; a failure is
    /// retried one period later).
    Flush,
    /// Write everything left and answer `None`, or why some cells could not be persisted.
    Finish(RpcReplyPort<Option<String>>),
}

// Local only: never crosses the wire.
impl ractor::Message for LedgerWriterMsg {}

impl std::fmt::Debug for LedgerWriterMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Append(cells) => write!(f, "Append({} cells)", cells.len()),
            Self::Flush => f.write_str("Flush"),
            Self::Finish(_) => f.write_str("Finish"),
        }
    }
}

/// The ledger writer actor (one per persisted sweep, on the head).
#[derive(Debug, Default)]
pub struct LedgerWriter;

/// Its state: the log and its flush schedule.
#[derive(Debug)]
pub struct LedgerWriterState {
    log: LedgerLog,
    every: Duration,
    scheduled: bool,
}

impl LedgerWriterState {
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
    /// The log and the flush period.
    type Arguments = (LedgerLog, Duration);

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        (log, every): (LedgerLog, Duration),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(LedgerWriterState {
            log,
            every,
            scheduled: false,
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
                for (key, outcome) in &cells {
                    state.log.push(key, outcome);
                }
                state.schedule(&myself);
            }
            LedgerWriterMsg::Flush => {
                state.scheduled = false;
                match state.log.flush().await {
                    Ok(()) => tracing::debug!(written = state.log.written(), "ledger flushed"),
                    Err(e) => {
                        tracing::error!(error = %e, "could not persist cells; will retry");
                        state.schedule(&myself);
                    }
                }
            }
            LedgerWriterMsg::Finish(reply) => {
                let failure = match state.log.flush().await {
                    Ok(()) => None,
                    Err(e) => {
                        tracing::error!(error = %e, "could not persist the last cells");
                        Some(format!("the ledger's last cells: {e}"))
                    }
                };
                let _ = reply.send(failure);
                myself.stop(Some("sweep complete".to_owned()));
            }
        }
        Ok(())
    }
}
