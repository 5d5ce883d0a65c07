//! Cluster settings: the role of this process, where it listens, whom it dials, the shared
//! cookie, TLS, and the timing of heartbeats and drains. The same names for every sweep binary,
//! as flags or `GRIDTEST_*` variables.

use std::path::PathBuf;
use std::time::Duration;

/// What this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Everything in this process, no network (the default).
    Local,
    /// The coordinator: runs the sweep's supervisor (and scorers, unless `--threads 0`), writes
    /// the output, exits when the sweep is complete.
    Head,
    /// Runs scorers for whichever head it joins, until SIGTERM.
    Worker,
}

/// Cluster flags (flattened into [`RunArgs`](crate::RunArgs)).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ClusterArgs {
    /// Role: local, head or worker. Without it, a host named `<name>-<n>` (a StatefulSet pod)
    /// is the head when `n` is 0 and a worker of `<name>-0.<service>` otherwise; anything else
    /// runs locally.
    #[arg(long, value_enum, env = "GRIDTEST_ROLE")]
    pub role: Option<Role>,
    /// Address to listen on (head default 0.0.0.0:7000; workers do not need to listen).
    #[arg(long, env = "GRIDTEST_LISTEN")]
    pub listen: Option<String>,
    /// Head address(es) a worker dials, host:port, comma-separated (tried in turn).
    #[arg(long, value_delimiter = ',', env = "GRIDTEST_SEEDS")]
    pub seeds: Vec<String>,
    /// Shared secret of the cluster (required for head and worker).
    #[arg(long, env = "GRIDTEST_COOKIE", hide_env_values = true)]
    pub cookie: Option<String>,
    /// This node's name (default: $POD_NAME, else the hostname); stable across restarts.
    #[arg(long, env = "GRIDTEST_NODE_NAME")]
    pub node_name: Option<String>,
    /// Results root for persisted sweeps (path, file:// or s3://); the head default is
    /// `results`.
    #[arg(long, env = "GRIDTEST_RESULTS")]
    pub results: Option<String>,
    /// Headless service name for StatefulSet peer discovery.
    #[arg(long, env = "GRIDTEST_SERVICE", default_value = "gridtest")]
    pub service: String,
    /// Cluster port for StatefulSet peer discovery.
    #[arg(long, env = "GRIDTEST_PORT", default_value_t = 7000)]
    pub port: u16,
    /// Heartbeat period, ms.
    #[arg(long, env = "GRIDTEST_HEARTBEAT_MS", default_value_t = 1000)]
    pub heartbeat_ms: u64,
    /// Silence after which a node loses its leases, ms.
    #[arg(long, env = "GRIDTEST_NODE_TIMEOUT_MS", default_value_t = 5000)]
    pub node_timeout_ms: u64,
    /// On SIGTERM, how long a worker may finish its units before handing them back, s.
    #[arg(long, env = "GRIDTEST_DRAIN_GRACE_S", default_value_t = 30)]
    pub drain_grace_s: u64,
    /// How long a worker tries to join before giving up, s.
    #[arg(long, env = "GRIDTEST_JOIN_TIMEOUT_S", default_value_t = 120)]
    pub join_timeout_s: u64,
    /// Largest inbound cluster frame, MiB (set the same on every node).
    #[arg(long, env = "GRIDTEST_MAX_FRAME_MB", default_value_t = 16)]
    pub max_frame_mb: u64,
    /// PEM certificate chain of this node (enables TLS with --tls-key and --tls-ca).
    #[arg(long, env = "GRIDTEST_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of this node.
    #[arg(long, env = "GRIDTEST_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificate(s) that peers' certificates must chain to (mutual TLS).
    #[arg(long, env = "GRIDTEST_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Name the head's certificate must carry (a SAN).
    #[arg(long, env = "GRIDTEST_TLS_SERVER_NAME", default_value = "gridtest")]
    pub tls_server_name: String,
}

/// Settings resolved from [`ClusterArgs`] and the environment.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// The role.
    pub role: Role,
    /// Listen address (`None`: do not listen).
    pub listen: Option<String>,
    /// Addresses to dial.
    pub seeds: Vec<String>,
    /// The cookie.
    pub cookie: String,
    /// Node name.
    pub node_name: String,
    /// Results root.
    pub results: Option<String>,
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

/// TLS material.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// Certificate chain.
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
    /// CA bundle.
    pub ca: PathBuf,
    /// Expected server name.
    pub server_name: String,
}

/// A pod-style hostname `<name>-<ordinal>`.
fn stateful_set_ordinal(host: &str) -> Option<(&str, u32)> {
    let (prefix, ordinal) = host.rsplit_once('-')?;
    let n = ordinal.parse().ok()?;
    (!prefix.is_empty()).then_some((prefix, n))
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

impl ClusterArgs {
    /// Resolves the settings; `hostname` decides the StatefulSet role when none is given.
    ///
    /// # Errors
    /// A message naming the missing or contradictory setting.
    pub fn resolve_with_host(&self, host: &str) -> Result<ClusterConfig, String> {
        let pod = std::env::var("POD_NAME").ok().filter(|p| !p.is_empty());
        let identity = pod.clone().unwrap_or_else(|| host.to_owned());
        let (role, mut seeds) = match (self.role, stateful_set_ordinal(&identity)) {
            (Some(role), _) => (role, self.seeds.clone()),
            (None, Some((_, 0))) if pod.is_some() || self.cookie.is_some() => {
                (Role::Head, Vec::new())
            }
            (None, Some((prefix, _))) if pod.is_some() || self.cookie.is_some() => (
                Role::Worker,
                vec![format!("{prefix}-0.{}:{}", self.service, self.port)],
            ),
            (None, _) => (Role::Local, Vec::new()),
        };
        if !self.seeds.is_empty() {
            seeds.clone_from(&self.seeds);
        }
        let cookie = match (role, &self.cookie) {
            (Role::Local, c) => c.clone().unwrap_or_default(),
            (_, Some(c)) if !c.is_empty() => c.clone(),
            _ => return Err("a cluster role needs a cookie: --cookie or GRIDTEST_COOKIE".into()),
        };
        if role == Role::Worker && seeds.is_empty() {
            return Err("a worker needs the head's address: --seeds HOST:PORT".into());
        }
        let listen = match role {
            Role::Head => Some(
                self.listen
                    .clone()
                    .unwrap_or_else(|| format!("0.0.0.0:{}", self.port)),
            ),
            _ => self.listen.clone(),
        };
        let tls = match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (None, None, None) => None,
            (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
                server_name: self.tls_server_name.clone(),
            }),
            _ => return Err("TLS needs all of --tls-cert, --tls-key and --tls-ca".into()),
        };
        Ok(ClusterConfig {
            role,
            listen,
            seeds,
            cookie,
            node_name: self.node_name.clone().unwrap_or(identity),
            results: self
                .results
                .clone()
                .or_else(|| (role == Role::Head).then(|| "results".to_owned())),
            heartbeat: Duration::from_millis(self.heartbeat_ms.max(10)),
            node_timeout: Duration::from_millis(self.node_timeout_ms.max(20)),
            drain_grace: Duration::from_secs(self.drain_grace_s),
            join_timeout: Duration::from_secs(self.join_timeout_s),
            max_frame_bytes: self.max_frame_mb.max(1) << 20,
            tls,
        })
    }

    /// Resolves the settings with this machine's hostname.
    ///
    /// # Errors
    /// See [`ClusterArgs::resolve_with_host`].
    pub fn resolve(&self) -> Result<ClusterConfig, String> {
        self.resolve_with_host(&hostname())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ClusterArgs {
        ClusterArgs {
            service: "gridtest".into(),
            port: 7000,
            heartbeat_ms: 1000,
            node_timeout_ms: 5000,
            max_frame_mb: 16,
            tls_server_name: "gridtest".into(),
            ..ClusterArgs::default()
        }
    }

    #[test]
    fn stateful_set_pods_pick_their_role() {
        let a = ClusterArgs {
            cookie: Some("c".into()),
            ..args()
        };
        let head = a.resolve_with_host("gridtest-0").unwrap();
        assert_eq!(head.role, Role::Head);
        assert_eq!(head.listen.as_deref(), Some("0.0.0.0:7000"));
        assert_eq!(head.results.as_deref(), Some("results"));
        let worker = a.resolve_with_host("gridtest-gpu-3").unwrap();
        assert_eq!(worker.role, Role::Worker);
        assert_eq!(worker.seeds, ["gridtest-gpu-0.gridtest:7000"]);
        assert_eq!(worker.node_name, "gridtest-gpu-3");
    }

    #[test]
    fn plain_hosts_run_locally_and_roles_need_their_settings() {
        assert_eq!(
            args().resolve_with_host("laptop").unwrap().role,
            Role::Local
        );
        assert_eq!(
            args().resolve_with_host("build-7").unwrap().role,
            Role::Local,
            "no cookie"
        );
        let head = ClusterArgs {
            role: Some(Role::Head),
            ..args()
        };
        assert!(head.resolve_with_host("x").unwrap_err().contains("cookie"));
        let worker = ClusterArgs {
            role: Some(Role::Worker),
            cookie: Some("c".into()),
            ..args()
        };
        assert!(
            worker
                .resolve_with_host("x")
                .unwrap_err()
                .contains("--seeds")
        );
        let half_tls = ClusterArgs {
            role: Some(Role::Head),
            cookie: Some("c".into()),
            tls_cert: Some("c.pem".into()),
            ..args()
        };
        assert!(
            half_tls
                .resolve_with_host("x")
                .unwrap_err()
                .contains("--tls-key")
        );
    }
}
