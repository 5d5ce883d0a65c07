//! Cluster flags: the same names for every sweep binary, as flags or `GRIDTEST_*` variables,
//! resolved (with the environment: `POD_NAME`, the hostname, a cookie file) into a
//! [`ClusterConfig`].

use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{ClusterConfig, Role};
use crate::transport::TlsFiles;

/// The role asked for on the command line (`--role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoleChoice {
    /// Everything in this process, no network (the default).
    Local,
    /// The coordinator.
    Head,
    /// A worker.
    Worker,
    /// From the pod name: `<name>-0` is the head, `<name>-<n>` a worker of
    /// `<name>-0.<service>:<port>`, any other name local. For StatefulSets (the manifests set it).
    Auto,
}

/// Cluster flags (flattened into [`RunArgs`](crate::RunArgs)).
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Cluster")]
pub struct ClusterArgs {
    /// Role: local (the default), head, worker, or auto: from the pod name ($POD_NAME, else the
    /// hostname) `<name>-<n>`, the head when `n` is 0 and a worker of `<name>-0.<service>`
    /// otherwise (StatefulSets; any other name runs locally). The role chosen, and why, is
    /// logged.
    #[arg(long, value_enum, env = "GRIDTEST_ROLE")]
    pub role: Option<RoleChoice>,
    /// Address to listen on (head default 0.0.0.0:7000; workers do not need to listen).
    #[arg(long, env = "GRIDTEST_LISTEN")]
    pub listen: Option<String>,
    /// Head address(es) a worker dials, host:port, comma-separated (tried in turn).
    #[arg(long, value_delimiter = ',', env = "GRIDTEST_SEEDS")]
    pub seeds: Vec<String>,
    /// Shared secret of the cluster (required for head and worker). Prefer GRIDTEST_COOKIE or
    /// --cookie-file: a command line is readable by every local user (/proc/PID/cmdline).
    #[arg(long, env = "GRIDTEST_COOKIE", hide_env_values = true)]
    pub cookie: Option<String>,
    /// File holding the cluster's shared secret (one line; a mounted Kubernetes Secret).
    #[arg(long, env = "GRIDTEST_COOKIE_FILE", conflicts_with = "cookie")]
    pub cookie_file: Option<PathBuf>,
    /// This node's name, unique in the cluster and stable across restarts (default: $POD_NAME,
    /// else with --role auto a StatefulSet hostname, else `<hostname>-<pid>`).
    #[arg(long, env = "GRIDTEST_NODE_NAME")]
    pub node_name: Option<String>,
    /// Worker nodes this process joins as, for load tests of a head (`<node-name>.<i>`, each
    /// with its own authenticated session, node agent and --threads scorers; they share the
    /// process's shard cache). A deployment runs one node per pod.
    #[arg(long, env = "GRIDTEST_NODES_PER_PROCESS", default_value_t = 1)]
    pub nodes_per_process: usize,
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
    /// How long a worker tries to join before giving up, s (0: for as long as it takes, as in
    /// a pod whose head may still be starting).
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

/// The shortest heartbeat period accepted, ms.
const MIN_HEARTBEAT_MS: u64 = 10;

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
        let (role, inferred_seeds, role_reason) = self.role(&identity);
        if role != Role::Local && !cfg!(feature = "cluster") {
            return Err(format!(
                "{role_reason} makes this process a {role}, which needs gridtest's `cluster` \
                 feature: this binary was built without it (every run is local)"
            ));
        }
        let seeds = if self.seeds.is_empty() {
            inferred_seeds.unwrap_or_default()
        } else {
            self.seeds.clone()
        };
        let cookie_from_env = std::env::var("GRIDTEST_COOKIE").ok();
        let cookie_on_command_line = self
            .cookie
            .as_ref()
            .is_some_and(|c| cookie_from_env.as_ref() != Some(c));
        // `--role auto` may resolve to local on a machine that is no pod: its cluster settings
        // are shared with the pods and simply unused there.
        if role == Role::Local && self.role != Some(RoleChoice::Auto) {
            self.refuse_stray_flags(cookie_on_command_line, &role_reason)?;
        }
        if role != Role::Local {
            self.check_timing()?;
        }
        let (cookie, warnings) = self.cookie(role, cookie_on_command_line)?;
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
        // A pod's name is unique in its StatefulSet and stable across restarts; any other
        // host may run several nodes, so the process id makes the default unique.
        let pod_like =
            self.role == Some(RoleChoice::Auto) && stateful_set_ordinal(&identity).is_some();
        let node_name = match (&self.node_name, &pod) {
            (Some(name), _) => name.clone(),
            (None, Some(pod)) => pod.clone(),
            (None, None) if pod_like => identity.clone(),
            (None, None) => format!("{host}-{}", std::process::id()),
        };
        let nodes_per_process = self.nodes_per_process(role, &role_reason)?;
        let results = match (&self.results, role) {
            (Some(r), _) => Some(r.as_str()),
            (None, Role::Head) => Some("results"),
            (None, _) => None,
        }
        .map(|r| crate::storage::Location::parse(r).map_err(|e| format!("--results {r}: {e}")))
        .transpose()?;
        Ok(ClusterConfig {
            role,
            role_reason,
            warnings,
            listen,
            seeds,
            cookie,
            node_name,
            nodes_per_process,
            results,
            heartbeat: Duration::from_millis(self.heartbeat_ms),
            node_timeout: Duration::from_millis(self.node_timeout_ms),
            drain_grace: Duration::from_secs(self.drain_grace_s),
            join_timeout: Duration::from_secs(self.join_timeout_s),
            max_frame_bytes: self.max_frame_mb.max(1) << 20,
            tls: self.tls()?,
        })
    }

    /// The role, the seeds it implies (a StatefulSet worker dials ordinal 0) and why.
    fn role(&self, identity: &str) -> (Role, Option<Vec<String>>, String) {
        match self.role {
            None => (
                Role::Local,
                None,
                "no --role given (the default)".to_owned(),
            ),
            Some(RoleChoice::Local) => (Role::Local, None, "--role local".to_owned()),
            Some(RoleChoice::Head) => (Role::Head, None, "--role head".to_owned()),
            Some(RoleChoice::Worker) => (Role::Worker, None, "--role worker".to_owned()),
            Some(RoleChoice::Auto) => match stateful_set_ordinal(identity) {
                Some((_, 0)) => (
                    Role::Head,
                    None,
                    format!("--role auto: `{identity}` is ordinal 0 of a StatefulSet"),
                ),
                Some((prefix, n)) => (
                    Role::Worker,
                    Some(vec![format!("{prefix}-0.{}:{}", self.service, self.port)]),
                    format!("--role auto: `{identity}` is ordinal {n} of a StatefulSet"),
                ),
                None => (
                    Role::Local,
                    None,
                    format!(
                        "--role auto: `{identity}` is not a StatefulSet pod name (`<name>-<n>`)"
                    ),
                ),
            },
        }
    }

    /// A node is declared lost after `--node-timeout-ms` without an answer to the heartbeats
    /// sent every `--heartbeat-ms`: a timeout of less than two periods declares healthy nodes
    /// lost between two pings, over and over, each time requeuing their units.
    fn check_timing(&self) -> Result<(), String> {
        let (heartbeat, timeout) = (self.heartbeat_ms, self.node_timeout_ms);
        if heartbeat < MIN_HEARTBEAT_MS {
            return Err(format!(
                "--heartbeat-ms {heartbeat}: at least {MIN_HEARTBEAT_MS} ms (every node is \
                 pinged each period)"
            ));
        }
        if timeout < 2 * heartbeat {
            return Err(format!(
                "--node-timeout-ms {timeout} is less than two heartbeat periods \
                 (--heartbeat-ms {heartbeat}): healthy nodes would be declared lost between \
                 two pings; give at least {}",
                2 * heartbeat
            ));
        }
        Ok(())
    }

    /// Nodes this process joins as: several only for a worker that does not listen.
    fn nodes_per_process(&self, role: Role, why: &str) -> Result<usize, String> {
        let n = self.nodes_per_process;
        if n > 1 && role != Role::Worker {
            return Err(format!(
                "--nodes-per-process {n} applies to workers only ({why})"
            ));
        }
        if n > 1 && self.listen.is_some() {
            return Err(format!(
                "--nodes-per-process {n} and --listen: the nodes of one process dial the head, \
                 none listens (one address cannot serve them all)"
            ));
        }
        Ok(n.max(1))
    }

    /// Cluster flags on a local run are refused, not silently ignored.
    fn refuse_stray_flags(&self, cookie_on_command_line: bool, why: &str) -> Result<(), String> {
        let mut stray = Vec::new();
        if self.listen.is_some() {
            stray.push("--listen");
        }
        if !self.seeds.is_empty() {
            stray.push("--seeds");
        }
        if cookie_on_command_line || self.cookie_file.is_some() {
            stray.push("--cookie/--cookie-file");
        }
        if stray.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} only apply to a cluster role, but this process runs locally ({why}): \
             add --role head, --role worker or --role auto",
            stray.join(", ")
        ))
    }

    /// The cookie (a cookie file wins), required by a cluster role, and the warnings it earns.
    fn cookie(&self, role: Role, on_command_line: bool) -> Result<(String, Vec<String>), String> {
        let cookie = match (&self.cookie, &self.cookie_file) {
            (_, Some(file)) => std::fs::read_to_string(file)
                .map_err(|e| format!("--cookie-file {}: {e}", file.display()))?
                .trim_end_matches(['\n', '\r'])
                .to_owned(),
            (Some(c), None) => c.clone(),
            (None, None) => String::new(),
        };
        let mut warnings = Vec::new();
        if role != Role::Local {
            if cookie.is_empty() {
                return Err(
                    "a cluster role needs a cookie: GRIDTEST_COOKIE, --cookie-file or --cookie"
                        .into(),
                );
            }
            if on_command_line {
                warnings.push(
                    "--cookie on the command line is readable by every local user \
                     (/proc/PID/cmdline): pass it in GRIDTEST_COOKIE or --cookie-file"
                        .to_owned(),
                );
            }
        }
        Ok((cookie, warnings))
    }

    /// TLS files: all three or none.
    fn tls(&self) -> Result<Option<TlsFiles>, String> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => Ok(Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
                server_name: self.tls_server_name.clone(),
            })),
            _ => Err("TLS needs all of --tls-cert, --tls-key and --tls-ca".into()),
        }
    }

    /// Resolves the settings with this machine's hostname.
    ///
    /// # Errors
    /// See [`ClusterArgs::resolve_with_host`].
    pub fn resolve(&self) -> Result<ClusterConfig, String> {
        self.resolve_with_host(&hostname())
    }
}

#[cfg(all(test, not(feature = "cluster")))]
mod local_only_tests {
    use super::*;

    #[test]
    fn without_the_cluster_feature_only_the_local_role_resolves() {
        let local = ClusterArgs::default().resolve_with_host("laptop").unwrap();
        assert_eq!(local.role, Role::Local);
        let head = ClusterArgs {
            role: Some(RoleChoice::Head),
            cookie: Some("c".into()),
            ..ClusterArgs::default()
        };
        let err = head.resolve_with_host("laptop").unwrap_err();
        assert!(
            err.contains("`cluster`") && err.contains("--role head"),
            "{err}"
        );
    }
}

#[cfg(all(test, feature = "cluster"))]
mod tests;
