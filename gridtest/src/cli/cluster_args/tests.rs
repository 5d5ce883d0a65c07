//! The cluster flags resolved as a pod, a plain host and a misconfigured node would see them.

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
        role: Some(RoleChoice::Auto),
        cookie: Some("c".into()),
        ..args()
    };
    let head = a.resolve_with_host("gridtest-0").unwrap();
    assert_eq!(head.role, Role::Head);
    assert_eq!(head.listen.as_deref(), Some("0.0.0.0:7000"));
    assert!(
        head.results
            .as_ref()
            .is_some_and(|r| r.url().as_str().ends_with("/results/")),
        "{:?}",
        head.results
    );
    let worker = a.resolve_with_host("gridtest-gpu-3").unwrap();
    assert_eq!(worker.role, Role::Worker);
    assert_eq!(worker.seeds, ["gridtest-gpu-0.gridtest:7000"]);
    assert_eq!(worker.node_name, "gridtest-gpu-3");
    assert!(
        worker.role_reason.contains("ordinal 3"),
        "{}",
        worker.role_reason
    );
    assert_eq!(a.resolve_with_host("laptop").unwrap().role, Role::Local);
}

#[test]
fn roles_are_inferred_only_when_asked() {
    // An ordinal-like hostname stays local without --role auto (a cookie exported in the
    // environment does not change that).
    let config = args().resolve_with_host("ip-172-31-5-0").unwrap();
    assert_eq!(config.role, Role::Local);
    assert!(
        config.role_reason.contains("no --role"),
        "{}",
        config.role_reason
    );
}

#[test]
fn cluster_flags_on_a_local_run_are_refused() {
    for stray in [
        ClusterArgs {
            listen: Some("0.0.0.0:7000".into()),
            ..args()
        },
        ClusterArgs {
            seeds: vec!["head:7000".into()],
            role: Some(RoleChoice::Local),
            ..args()
        },
        ClusterArgs {
            cookie: Some("not-from-the-environment".into()),
            ..args()
        },
    ] {
        let err = stray.resolve_with_host("laptop").unwrap_err();
        assert!(err.contains("only apply to a cluster role"), "{err}");
    }
}

#[test]
fn cookies_come_from_a_file_and_the_command_line_is_warned_about() {
    let dir = std::env::temp_dir().join(format!("gridtest-cookie-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cookie");
    std::fs::write(&file, "s3cret\n").unwrap();
    let head = ClusterArgs {
        role: Some(RoleChoice::Head),
        cookie_file: Some(file.clone()),
        ..args()
    };
    let config = head.resolve_with_host("x").unwrap();
    assert_eq!(config.cookie, "s3cret");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let on_line = ClusterArgs {
        role: Some(RoleChoice::Head),
        cookie: Some("typed-in".into()),
        ..args()
    };
    let config = on_line.resolve_with_host("x").unwrap();
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.contains("/proc/PID/cmdline"))
    );
    let missing = ClusterArgs {
        role: Some(RoleChoice::Head),
        cookie_file: Some(dir.join("absent")),
        ..args()
    };
    assert!(
        missing
            .resolve_with_host("x")
            .unwrap_err()
            .contains("--cookie-file")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn node_names_default_to_unique_ones() {
    let worker = ClusterArgs {
        role: Some(RoleChoice::Worker),
        cookie: Some("c".into()),
        seeds: vec!["head:7000".into()],
        ..args()
    };
    if std::env::var_os("POD_NAME").is_none() {
        let name = worker.resolve_with_host("box").unwrap().node_name;
        assert_eq!(name, format!("box-{}", std::process::id()));
    }
}

#[test]
fn plain_hosts_run_locally_and_roles_need_their_settings() {
    assert_eq!(
        args().resolve_with_host("laptop").unwrap().role,
        Role::Local
    );
    let head = ClusterArgs {
        role: Some(RoleChoice::Head),
        ..args()
    };
    assert!(head.resolve_with_host("x").unwrap_err().contains("cookie"));
    let worker = ClusterArgs {
        role: Some(RoleChoice::Worker),
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
        role: Some(RoleChoice::Head),
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

#[test]
fn several_nodes_per_process_are_for_workers_only() {
    let worker = ClusterArgs {
        role: Some(RoleChoice::Worker),
        cookie: Some("c".into()),
        seeds: vec!["head:7000".into()],
        nodes_per_process: 20,
        ..args()
    };
    assert_eq!(worker.resolve_with_host("x").unwrap().nodes_per_process, 20);
    let head = ClusterArgs {
        role: Some(RoleChoice::Head),
        ..worker.clone()
    };
    let refused = head.resolve_with_host("x").unwrap_err();
    assert!(refused.contains("--nodes-per-process 20"), "{refused}");
    let listening = ClusterArgs {
        listen: Some("0.0.0.0:7001".into()),
        ..worker.clone()
    };
    let refused = listening.resolve_with_host("x").unwrap_err();
    assert!(refused.contains("--listen"), "{refused}");
    let unset = ClusterArgs {
        nodes_per_process: 0,
        ..worker
    };
    assert_eq!(unset.resolve_with_host("x").unwrap().nodes_per_process, 1);
}

#[test]
fn a_node_timeout_shorter_than_two_heartbeats_is_refused() {
    let worker = |heartbeat_ms, node_timeout_ms| ClusterArgs {
        role: Some(RoleChoice::Worker),
        seeds: vec!["h:7000".into()],
        cookie: Some("c".into()),
        heartbeat_ms,
        node_timeout_ms,
        ..args()
    };
    let err = worker(1000, 500).resolve_with_host("w").unwrap_err();
    assert!(
        err.starts_with("--node-timeout-ms 500 is less than two heartbeat periods"),
        "{err}"
    );
    assert!(worker(1000, 1999).resolve_with_host("w").is_err());
    assert!(worker(5, 100).resolve_with_host("w").is_err());
    let ok = worker(1000, 2000).resolve_with_host("w").unwrap();
    assert_eq!(ok.node_timeout, Duration::from_secs(2));
}
