//! The autoscaler's Kubernetes client against a stand-in API server that checks every request
//! against the Kubernetes API and every body against its schema (`reference/kube_api.py`,
//! kubernetes-validate); the head's autoscaler end to end is in `cluster.rs`.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use gridtest::autoscale::{Actuation, Autoscaler, KubeScale, Pool, ScaleError};
use gridtest::progress::{FleetSnapshot, PlanSnapshot, ProgressFeed, SweepProgress};
use serde_json::Value;

pub(crate) const TOKEN: &str = "autoscaler-token";
pub(crate) const NAMESPACE: &str = "sweeps";

/// The stand-in API server, stopped when dropped.
pub(crate) struct KubeApi {
    child: Child,
    log: PathBuf,
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

impl KubeApi {
    /// A server holding these StatefulSets (`NAME=REPLICAS`), or `None` (skipped) without
    /// kubernetes-validate.
    pub(crate) fn start(test: &str, sets: &[&str]) -> Option<Self> {
        let Some(python) = gridtest_tests::research_python("kubernetes_validate") else {
            gridtest_tests::skip(
                "kubernetes",
                test,
                "no Python with kubernetes-validate (GRIDTEST_RESEARCH_PYTHON)",
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let (port_file, log) = (dir.path().join("port"), dir.path().join("requests.jsonl"));
        let child = Command::new(python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/reference/kube_api.py"
            ))
            .args([&port_file, &log])
            .args([TOKEN, NAMESPACE])
            .args(sets)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "the stand-in API server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Some(Self {
            child,
            log,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        })
    }

    /// Every request so far, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The replicas each `PATCH` left, in order; panics on any request the API would refuse.
    pub(crate) fn patched(&self) -> Vec<u64> {
        let requests = self.requests();
        for r in &requests {
            assert!(r["violation"].is_null(), "a request the API refuses: {r}");
        }
        requests
            .iter()
            .filter(|r| r["method"] == "PATCH")
            .map(|r| r["replicas"].as_u64().unwrap())
            .collect()
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_scale_client_reads_and_sets_replicas_as_the_api_defines() {
    let Some(api) = KubeApi::start(
        "autoscale::the_scale_client_reads_and_sets_replicas_as_the_api_defines",
        &["gridtest-cpu=2", "gridtest-gpu=0"],
    ) else {
        return;
    };
    let rt = gridtest_tests::runtime();
    rt.block_on(async {
        let kube = KubeScale::at(&api.url, NAMESPACE, Some(TOKEN))
            .await
            .unwrap();
        assert_eq!(kube.replicas("gridtest-cpu").await.unwrap(), 2);
        kube.set_replicas("gridtest-cpu", 7).await.unwrap();
        assert_eq!(kube.replicas("gridtest-cpu").await.unwrap(), 7);
        assert_eq!(kube.replicas("gridtest-gpu").await.unwrap(), 0);
        match kube.replicas("gridtest-tpu").await {
            Err(ScaleError::Api { statefulset, .. }) => assert_eq!(statefulset, "gridtest-tpu"),
            other => panic!("expected the API's refusal, got {other:?}"),
        }
    });
    assert_eq!(api.patched(), vec![7]);
    // A client without the token is refused, and says which pool.
    let refused = rt.block_on(async {
        let stranger = KubeScale::at(&api.url, NAMESPACE, None).await.unwrap();
        stranger.replicas("gridtest-cpu").await
    });
    assert!(
        matches!(refused, Err(ScaleError::Api { .. })),
        "{refused:?}"
    );
}

#[test]
fn the_autoscaler_grows_a_pool_with_the_work_and_drains_it_after_the_idle_period() {
    let Some(api) = KubeApi::start(
        "autoscale::the_autoscaler_grows_a_pool_with_the_work_and_drains_it_after_the_idle_period",
        &["gridtest-cpu=1", "gridtest-gpu=0"],
    ) else {
        return;
    };
    let feed = ProgressFeed::default();
    // 500 cells of 10⁸ evaluations left, nodes at 10⁶ evaluations/s: 5·10¹⁰ / (10⁶ · 300 s)
    // is 167 nodes, bounded by the pool's 12; the strategy has no device code.
    feed.publish(SweepProgress {
        done: 500,
        total: 1_000,
        ..SweepProgress::default()
    });
    feed.publish_fleet(FleetSnapshot {
        units_pending: 40,
        units_leased: 10,
        nodes: vec![gridtest::progress::NodeSnapshot {
            name: "gridtest-cpu-0".into(),
            alive: true,
            evals_per_second: 1e6,
            ..Default::default()
        }],
        ..FleetSnapshot::default()
    });
    feed.publish_plan(PlanSnapshot {
        evals_per_cell: 1e8,
        gpu_eligible: false,
        dataset_bytes: 0,
    });
    let mut pools: Vec<Pool> = vec![
        "gridtest-cpu=cpu:0..12".parse().unwrap(),
        "gridtest-gpu=gpu:0..4".parse().unwrap(),
    ];
    for p in &mut pools {
        p.policy.scale_down_after = Duration::from_secs(60);
    }
    let rt = gridtest_tests::runtime();
    let kube = rt
        .block_on(KubeScale::at(&api.url, NAMESPACE, Some(TOKEN)))
        .unwrap();
    let mut scaler = Autoscaler::new(
        pools,
        feed.clone(),
        Actuation::Kubernetes(Box::new(kube.clone())),
    );
    let t0 = Instant::now();
    let step = |scaler: &mut Autoscaler, at: u64| {
        rt.block_on(scaler.step(t0 + Duration::from_secs(at)))
            .unwrap()
    };
    let first = step(&mut scaler, 0);
    assert_eq!((first[0].current, first[0].desired), (12, 12));
    assert_eq!((first[1].current, first[1].desired), (0, 0));
    assert_eq!(
        api.patched(),
        vec![12],
        "the CPU pool grew at once; the GPU pool stayed"
    );
    // The sweep ends: the pool holds through the idle period, then drains to zero.
    feed.publish(SweepProgress {
        done: 1_000,
        total: 1_000,
        ended: true,
        ..SweepProgress::default()
    });
    let idle = step(&mut scaler, 30);
    assert_eq!((idle[0].current, idle[0].desired), (12, 0));
    assert_eq!(api.patched(), vec![12]);
    let drained = step(&mut scaler, 91);
    assert_eq!(drained[0].current, 0);
    assert_eq!(api.patched(), vec![12, 0]);
    assert_eq!(rt.block_on(kube.replicas("gridtest-cpu")).unwrap(), 0);
    // The /metrics signal for KEDA or an HPA follows the same decisions.
    let page = gridtest::observe::render_metrics(true, &feed);
    let scrape = crate::probes::parse(&page);
    let desired = crate::probes::sample(
        &scrape,
        "gridtest_pool_replicas",
        &[("pool", "gridtest-cpu"), ("state", "desired")],
    );
    assert_eq!(desired, 0.0);
}
