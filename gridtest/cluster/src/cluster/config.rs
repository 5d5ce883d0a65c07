//! Cluster settings as resolved: the role of this process, where it listens, whom it dials,
//! the shared cookie, TLS, and the timing of heartbeats and drains.

use std::time::Duration;

use crate::transport::TlsFiles;

/// What this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Everything in this process, no network (the default).
    Local,
    /// The coordinator: runs the sweep's supervisor (and scorers, unless `--threads 0`), writes
    /// the output, exits when the sweep is complete.
    Head,
    /// Runs scorers for whichever head it joins, until SIGTERM.
    Worker,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Local => "local",
            Self::Head => "head",
            Self::Worker => "worker",
        })
    }
}

/// Cluster settings, resolved from flags and the environment
/// (`gridtest::cli::ClusterArgs::resolve`, in the facade).
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// The role.
    pub role: Role,
    /// Why this role (logged at start).
    pub role_reason: String,
    /// Settings that work but deserve a warning (logged at start).
    pub warnings: Vec<String>,
    /// Listen address (`None`: do not listen).
    pub listen: Option<String>,
    /// Addresses to dial.
    pub seeds: Vec<String>,
    /// The cookie.
    pub cookie: String,
    /// Node name.
    pub node_name: String,
    /// Worker nodes this process joins as (1 but for load tests; more are named
    /// `<node_name>.<i>`, each with its own session, node agent and scorers).
    pub nodes_per_process: usize,
    /// Results root.
    pub results: Option<crate::storage::Location>,
    /// Heartbeat period.
    pub heartbeat: Duration,
    /// Silence limit.
    pub node_timeout: Duration,
    /// Drain grace.
    pub drain_grace: Duration,
    /// Join timeout.
    pub join_timeout: Duration,
    /// Largest inbound frame, bytes.
    pub max_frame_bytes: u64,
    /// TLS files.
    pub tls: Option<TlsFiles>,
}
