//! Status events: what a node tells scripts, operators and tests, as typed JSON lines appended
//! to a file (`--status-file`), never as log text to be scraped.
//!
//! Each line is one [`StatusRecord`]: the time, the node that wrote it, and a [`StatusEvent`]:
//! `{"at_ms":…,"by_node":"head","event":"node_lost","node":"w1",…}`.
//!
//! ```
//! # extern crate gridtest_sweep as gridtest;
//! use gridtest::status::{StatusEvent, StatusLog};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("status.jsonl");
//! let log = StatusLog::to_file(&path, "head");
//! log.emit(StatusEvent::Serving);
//! let records = gridtest::status::read(&path).unwrap();
//! assert_eq!(records[0].by_node, "head");
//! assert_eq!(records[0].event, StatusEvent::Serving);
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::sweep::{LedgerStats, NodeStats, SweepId};

/// Something a node did or saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StatusEvent {
    /// A head listens for nodes on this address.
    Listening {
        /// `IP:port` actually bound.
        addr: String,
    },
    /// A head serves submitted sweeps.
    Serving,
    /// The node serves its probes and metrics (`--http`) on this address.
    Probes {
        /// `IP:port` actually bound.
        addr: String,
    },
    /// A worker joined (or joined again) the cluster of this head.
    Joined {
        /// The head's node name.
        head: String,
    },
    /// A head refused a connection: it did not authenticate (wrong cookie, a plain node
    /// facing TLS), or it claimed the name of a connected node.
    Refused {
        /// The peer's address.
        peer: String,
        /// The name it claimed, if it got that far.
        claimed: Option<String>,
        /// Whether that name belongs to a connected node.
        duplicate: bool,
    },
    /// The supervisor lost a node: its session dropped or it fell silent.
    NodeLost {
        /// The node.
        node: String,
        /// Why (`session closed`, `silent for …`).
        reason: String,
        /// Units it held that went back to the queue.
        requeued: usize,
    },
    /// The supervisor refused a node that runs other code than the sweep needs (another
    /// gridtest, execution model or strategy version, or no such strategy): it takes none of
    /// the sweep's units.
    NodeIncompatible {
        /// The node.
        node: String,
        /// Every version that differs.
        reason: String,
        /// Units it held that went back to the queue.
        requeued: usize,
    },
    /// A node does not see the data the sweep recorded for a shard (another copy at the same
    /// path, a missing mount, a file changed since planning): it runs none of the shard's
    /// units, which go to other nodes.
    NodeDataMismatch {
        /// The node.
        node: String,
        /// The shard.
        shard: String,
        /// What differs: the files, as the head compares the node's listing with its manifest.
        reason: String,
        /// Units of the shard it held that went back to the queue.
        requeued: usize,
    },
    /// No node left may read a shard (each sees other data than the sweep recorded): its open
    /// cells failed, with this reason.
    ShardUnreadable {
        /// The shard.
        shard: String,
        /// Each node and what it saw.
        reason: String,
        /// Cells failed.
        cells: usize,
    },
    /// A slice of a chained unit is done and its lanes' state kept: the unit resumes after it
    /// if its node is lost.
    SliceDone {
        /// The node that ran it.
        node: String,
        /// The unit.
        unit: u32,
        /// The slice's index in the unit's chain.
        slice: u32,
        /// Slices in the chain.
        slices: u32,
        /// Bytes of the lanes' state.
        checkpoint_bytes: u64,
    },
    /// A node thought lost spoke again.
    NodeBack {
        /// The node.
        node: String,
    },
    /// A node's scorers run well below the fleet's median speed.
    NodeSlow {
        /// The node.
        node: String,
        /// Its evaluations per second of scorer time.
        speed: f64,
        /// The fleet's median.
        median: f64,
    },
    /// A worker finished draining after SIGTERM.
    Drained {
        /// Whether the drain grace ran out and its units were handed back.
        handed_back: bool,
    },
    /// Where a sweep stands (every progress period).
    Progress {
        /// Cells final.
        done: usize,
        /// Cells in all.
        total: usize,
        /// Cells failed.
        failed: usize,
        /// Slices of the histories read by slices passed, and in all (a unit's cells come
        /// with its last slice); absent when no history is read by slices.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slices: Option<(u64, u64)>,
    },
    /// A sweep was cancelled (SIGTERM, SIGINT) and stopped cleanly: its final cells flushed
    /// to the ledger (when persisted), its lease released.
    SweepInterrupted {
        /// The sweep.
        sweep_id: SweepId,
        /// Cells final.
        done: usize,
        /// Cells in all.
        total: usize,
    },
    /// A sweep finished (every cell final).
    SweepFinished(Box<SweepSummary>),
}

/// How a sweep ended, as its head saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// The sweep id, when the run had one.
    pub sweep_id: Option<SweepId>,
    /// Cells in the sweep.
    pub cells: usize,
    /// Cells failed.
    pub failed: usize,
    /// Cells computed by this run.
    pub computed: usize,
    /// Cells resumed from the persisted ledger.
    pub resumed: usize,
    /// Per node.
    pub nodes: BTreeMap<String, NodeStats>,
    /// Per GPU scorer.
    pub gpu_slots: BTreeMap<String, NodeStats>,
    /// Nodes that run other code than the sweep needs (they took none of its units), and
    /// what differs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub incompatible: BTreeMap<String, String>,
    /// Why the sweep could not be persisted, if it could not.
    pub persist_failure: Option<String>,
    /// What the ledger counted: units requeued, speculative copies, duplicate results.
    pub ledger: LedgerStats,
    /// Bytes the sweep read from its dataset (planning included), and the dataset's bytes.
    #[serde(default)]
    pub reads: crate::data::DataReads,
}

/// One line of a status file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusRecord {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The node that wrote it (events about another node name it in their own `node`).
    pub by_node: String,
    /// What happened.
    #[serde(flatten)]
    pub event: StatusEvent,
}

/// Where a node's status events go: a file, or nowhere (the default), and the node's
/// [`Readiness`], which follows them. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct StatusLog {
    target: Option<Arc<(PathBuf, String)>>,
    readiness: Readiness,
}

/// Whether a node is ready for traffic (`/readyz`), from its own status events: a head once it
/// listens for nodes (its ledger is open by then) or serves submissions, a worker once it has
/// joined a head (its scorers are up), until it drains; a local run is ready from its start.
/// Cheap to clone; every clone sees the same state.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::status::{StatusEvent, StatusLog};
/// let log = StatusLog::default();
/// let ready = log.readiness();
/// assert!(!ready.is_ready());
/// log.emit(StatusEvent::Joined { head: "head".into() });
/// assert!(ready.is_ready());
/// log.emit(StatusEvent::Drained { handed_back: false });
/// assert!(!ready.is_ready());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<std::sync::atomic::AtomicBool>);

impl Readiness {
    /// Whether the node is ready.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Marks the node ready (or not).
    pub fn set(&self, ready: bool) {
        self.0.store(ready, std::sync::atomic::Ordering::Relaxed);
    }

    fn observe(&self, event: &StatusEvent) {
        match event {
            StatusEvent::Listening { .. } | StatusEvent::Serving | StatusEvent::Joined { .. } => {
                self.set(true);
            }
            StatusEvent::Drained { .. } => self.set(false),
            _ => {}
        }
    }
}

impl StatusLog {
    /// Events of `node`, appended to `path` (created if absent).
    #[must_use]
    pub fn to_file(path: impl Into<PathBuf>, node: impl Into<String>) -> Self {
        Self {
            target: Some(Arc::new((path.into(), node.into()))),
            readiness: Readiness::default(),
        }
    }

    /// The node's readiness, as its events set it.
    #[must_use]
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// The same file, written as another node.
    #[must_use]
    pub fn as_node(&self, node: &str) -> Self {
        Self {
            readiness: self.readiness.clone(),
            target: self
                .target
                .as_ref()
                .map(|t| Arc::new((t.0.clone(), node.to_owned()))),
        }
    }

    /// Appends `event` as one line (one `write` call, so lines of concurrent writers do not
    /// interleave). A file that cannot be written costs a warning, never the run.
    pub fn emit(&self, event: StatusEvent) {
        self.readiness.observe(&event);
        let Some(target) = &self.target else { return };
        let (path, node) = &**target;
        let record = StatusRecord {
            at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            by_node: node.clone(),
            event,
        };
        let mut line = serde_json::to_vec(&record).expect("status records serialise");
        line.push(b'\n');
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(&line));
        if let Err(e) = written {
            tracing::warn!(file = %path.display(), error = %e, "cannot write the status file");
        }
    }
}

/// Reads a status file's records, skipping a last line still being written.
///
/// # Errors
/// The file cannot be read, or a complete line is not a record.
pub fn read(path: &Path) -> std::io::Result<Vec<StatusRecord>> {
    let text = std::fs::read_to_string(path)?;
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{l}: {e}"))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished sweep's summary with every field set.
    fn finished(id: SweepId) -> SweepSummary {
        let ms = std::time::Duration::from_millis;
        let stats = NodeStats {
            units: 3,
            cells: 30,
            evaluations: 300,
            busy: ms(1500),
            requeued: 1,
            slow: true,
            first_start: Some(ms(20)),
            last_end: Some(ms(1600)),
        };
        SweepSummary {
            sweep_id: Some(id),
            cells: 2,
            failed: 1,
            computed: 1,
            resumed: 1,
            nodes: BTreeMap::from([("w1".to_owned(), stats)]),
            gpu_slots: BTreeMap::new(),
            incompatible: BTreeMap::from([("w3".into(), "strategy `s` version".into())]),
            persist_failure: Some("gone".into()),
            ledger: LedgerStats::default(),
            reads: crate::data::DataReads {
                bytes_read: 1_200,
                dataset_bytes: 1_000,
            },
        }
    }

    /// One event of each kind.
    fn every_kind_of_event() -> Vec<StatusEvent> {
        let id: SweepId = "0123456789abcdef".parse().unwrap();
        let events = vec![
            StatusEvent::Listening {
                addr: "127.0.0.1:7000".into(),
            },
            StatusEvent::Serving,
            StatusEvent::Joined {
                head: "head".into(),
            },
            StatusEvent::Refused {
                peer: "127.0.0.1:5".into(),
                claimed: Some("w1".into()),
                duplicate: true,
            },
            StatusEvent::NodeLost {
                node: "w1".into(),
                reason: "silent".into(),
                requeued: 2,
            },
            StatusEvent::NodeBack { node: "w1".into() },
            StatusEvent::SliceDone {
                node: "w1".into(),
                unit: 3,
                slice: 1,
                slices: 4,
                checkpoint_bytes: 4096,
            },
            StatusEvent::NodeDataMismatch {
                node: "w2".into(),
                shard: "S001:2024-01-02..2024-01-03".into(),
                reason: "file:///d/x.parquet: missing there".into(),
                requeued: 1,
            },
            StatusEvent::ShardUnreadable {
                shard: "S001:2024-01-02..2024-01-03".into(),
                reason: "node w2: …".into(),
                cells: 10,
            },
            StatusEvent::NodeIncompatible {
                node: "w3".into(),
                reason: "strategy `s` version: the sweep needs 1, this node runs 2".into(),
                requeued: 1,
            },
            StatusEvent::NodeSlow {
                node: "w2".into(),
                speed: 1.5,
                median: 3.0,
            },
            StatusEvent::Drained { handed_back: true },
            StatusEvent::Progress {
                done: 1,
                total: 2,
                failed: 0,
                slices: Some((3, 8)),
            },
            StatusEvent::SweepInterrupted {
                sweep_id: id.clone(),
                done: 1,
                total: 2,
            },
            StatusEvent::SweepFinished(Box::new(finished(id))),
        ];
        events
    }

    /// Every event survives the file: written as a line, read back equal (no field of the
    /// record collides with a field of an event).
    #[test]
    fn every_event_reads_back_as_written() {
        let events = every_kind_of_event();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.jsonl");
        let log = StatusLog::to_file(&path, "head");
        for e in &events {
            log.emit(e.clone());
        }
        log.as_node("w9").emit(StatusEvent::Serving);
        let records = read(&path).unwrap();
        let read_back: Vec<StatusEvent> = records.iter().map(|r| r.event.clone()).collect();
        assert_eq!(read_back[..events.len()], events[..]);
        assert!(records[..events.len()].iter().all(|r| r.by_node == "head"));
        assert_eq!(records[events.len()].by_node, "w9");
    }

    #[test]
    fn a_line_still_being_written_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.jsonl");
        std::fs::write(
            &path,
            "{\"at_ms\":1,\"by_node\":\"h\",\"event\":\"serving\"}\n{\"at_ms\":2,",
        )
        .unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
    }
}
