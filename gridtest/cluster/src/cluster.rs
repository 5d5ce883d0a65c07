//! Running a sweep across nodes with ractor_cluster: one binary, three roles.
//!
//! ```text
//! head (StatefulSet ordinal 0)                 worker × N
//! ├─ NodeServer ◀──────── TCP (+TLS), cookie ──── NodeServer
//! ├─ Supervisor  ◀─ Lease / Report ───────────── Scorer × cores ─▶ ShardLoader ─▶ dataset
//! │     │ Ping (heartbeat) ─────────────────────▶ NodeAgent
//! │     └─ LedgerLog ─▶ ROOT/sweeps/<id>/ledger
//! └─ NodeAgent, Scorers, ShardLoader (unless --threads 0)
//! ```
//!
//! Scorers pull units from the supervisor found in the `supervisors` process group, each node
//! reads its own shards, and only keys, parameters and metrics cross the wire. See
//! `docs/cluster.md` for the settings and the failure model.

pub mod config;
#[cfg(feature = "cluster")]
pub mod coordinator;
#[cfg(feature = "cluster")]
pub mod head;
#[cfg(feature = "cluster")]
pub mod node;
#[cfg(feature = "cluster")]
mod sessions;
#[cfg(feature = "cluster")]
pub mod worker;

/// The actors' protocol, which crosses the wire between nodes (defined with the actors).
pub use crate::actors::{messages, wire};
pub use config::{ClusterConfig, Role};
