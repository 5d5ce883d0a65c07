//! # gridtest-cluster
//!
//! The layers of [gridtest](https://docs.rs/gridtest) that run a sweep: the transport between
//! nodes, the actors, planning and execution on one node, the cluster of nodes (head, workers,
//! the coordinator of submitted sweeps), their probes and metrics, the autoscaler, replay, and
//! the run's `Error`. No command line and no printing: those are the facade's. Users depend on
//! `gridtest`, which re-exports these modules under the same paths (`gridtest::execute`,
//! `gridtest::actors`, …).
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`transport`] | sockets, TLS, keepalive, the authentication deadline (`TransportError`) |
//! | `error` | the run's [`Error`] (every lower layer's typed error converts into it) and the exit statuses ([`exit`]) |
//! | [`replay`] | re-executing a persisted sweep bit for bit |
//! | [`reopen`] | a persisted sweep's `report.html` drawn again from its files |
//! | [`actors`] | supervisor, ledger writer, node agent, scorers, shard loader, and their protocol |
//! | [`execute`] | planning a sweep on this node and running its actors until every cell is final |
//! | [`cluster`] | node server, sessions, head, worker, coordinator, cluster settings |
//! | [`observe`] | `/healthz`, `/readyz` and `/metrics` over HTTP |
//! | [`autoscale`] | the head's autoscaler of the worker pools |

// The modules below name the lower crates' modules as `crate::engine`, `crate::sweep`, … as
// the facade does: one path for each item in every crate.
use gridtest_core::{broker, data, engine, metrics, params, progress, registry, storage, strategy};
use gridtest_sweep::{ingest, persist, status, sweep};

pub mod actors;
pub mod autoscale;
pub mod cluster;
mod error;
pub mod execute;
pub mod observe;
pub mod reopen;
pub mod replay;
pub mod transport;

pub use error::{Error, Result, exit};
