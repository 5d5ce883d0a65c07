//! The head of the cluster benchmarks (`coordinator_bench`, `fleet_bench`): this process, on
//! 127.0.0.1, with no results root (they measure coordination, not persistence).

use gridtest::cli::{ClusterArgs, RoleChoice};
use gridtest::cluster::ClusterConfig;

/// A head listening on `127.0.0.1:port` with `cookie`, named `name`, 1 s heartbeat and 5 s
/// node timeout.
///
/// # Errors
/// A message if the settings do not resolve.
pub fn bench_head(port: u16, cookie: &str, name: &str) -> Result<ClusterConfig, String> {
    ClusterArgs {
        role: Some(RoleChoice::Head),
        listen: Some(format!("127.0.0.1:{port}")),
        cookie: Some(cookie.into()),
        node_name: Some(name.into()),
        heartbeat_ms: 1000,
        node_timeout_ms: 5000,
        max_frame_mb: 16,
        service: "gridtest".into(),
        port,
        tls_server_name: "gridtest".into(),
        ..ClusterArgs::default()
    }
    .resolve()
    .map(|mut c| {
        c.results = None;
        c
    })
}
