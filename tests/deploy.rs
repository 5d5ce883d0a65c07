//! The Kubernetes manifests: every resource validates strictly against Kubernetes' schemas
//! (kubernetes-validate, RBAC included, with and without the TLS component), and the rendered
//! objects hold what a platform engineer relies on (a head apart from the pools, no cookie in
//! Git, pool sizes left to the autoscaler, budgets that never block a drain, …). kustomize
//! itself renders them where kubectl is installed.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The oldest Kubernetes release the manifests are checked against (`unhealthyPodEvictionPolicy`
/// is GA from 1.31).
const KUBERNETES: &str = "1.31.0";

fn deploy_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// `{"base": [...], "tls": [...], "kustomization": {...}}` from `reference/manifests.py`, or
/// `None` (skipped) without kubernetes-validate.
fn rendered(test: &str) -> Option<Value> {
    let Some(python) = gridtest_tests::research_python("kubernetes_validate, yaml") else {
        gridtest_tests::skip(
            "kubernetes",
            test,
            "no Python with kubernetes-validate (GRIDTEST_RESEARCH_PYTHON)",
        );
        return None;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/reference/manifests.py");
    let out = Command::new(python)
        .arg(script)
        .arg(deploy_dir())
        .arg(KUBERNETES)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the manifests do not validate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn find<'a>(docs: &'a Value, kind: &str, name: &str) -> &'a Value {
    docs.as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name}"))
}

fn container(set: &Value) -> &Value {
    &set["spec"]["template"]["spec"]["containers"][0]
}

/// The value of environment variable `name` of a StatefulSet's container (literal or source).
fn env<'a>(set: &'a Value, name: &str) -> &'a Value {
    container(set)["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {}", set["metadata"]["name"]))
}

#[test]
fn the_manifests_validate_and_hold_what_a_platform_engineer_relies_on() {
    let Some(out) =
        rendered("deploy::the_manifests_validate_and_hold_what_a_platform_engineer_relies_on")
    else {
        return;
    };
    let docs = &out["base"];
    let head = find(docs, "StatefulSet", "gridtest-head");
    let (cpu, gpu) = (
        find(docs, "StatefulSet", "gridtest-cpu"),
        find(docs, "StatefulSet", "gridtest-gpu"),
    );
    // The head is its own one-replica StatefulSet, so scaling a pool to zero never stops it.
    assert_eq!(head["spec"]["replicas"], 1);
    assert_eq!(env(head, "GRIDTEST_ROLE")["value"], "head");
    // The head sizes both pools, each named by its StatefulSet.
    assert_eq!(env(head, "GRIDTEST_AUTOSCALE")["value"], "kube");
    let pools: Vec<gridtest::autoscale::Pool> = env(head, "GRIDTEST_POOLS")["value"]
        .as_str()
        .unwrap()
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect();
    let names: Vec<&str> = pools.iter().map(|p| p.statefulset.as_str()).collect();
    assert_eq!(names, ["gridtest-cpu", "gridtest-gpu"]);
    assert_eq!(
        pools.iter().map(|p| p.policy.min).max(),
        Some(0),
        "both drain to zero"
    );
    for pool in [cpu, gpu] {
        assert!(
            pool["spec"].get("replicas").is_none(),
            "the autoscaler owns a pool's size, not `kubectl apply`"
        );
        assert_eq!(env(pool, "GRIDTEST_ROLE")["value"], "worker");
        assert_eq!(
            env(pool, "GRIDTEST_SEEDS")["value"],
            "gridtest-head-0.gridtest:7000"
        );
        assert_eq!(env(pool, "GRIDTEST_JOIN_TIMEOUT_S")["value"], "0");
        let threads = &env(pool, "GRIDTEST_THREADS")["valueFrom"]["resourceFieldRef"];
        assert_eq!(threads["resource"], "requests.cpu");
        assert!(
            container(pool)["readinessProbe"]["httpGet"]["path"] == "/readyz"
                && container(pool)["livenessProbe"]["httpGet"]["path"] == "/healthz"
        );
    }
    assert_eq!(env(gpu, "GRIDTEST_REQUIRE_GPU")["value"], "true");
    assert!(gpu["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"].is_string());
    assert_eq!(container(gpu)["resources"]["limits"]["nvidia.com/gpu"], 1);

    // Secrets come from the cluster, never from Git: no Secret is rendered, and the cookie and
    // S3 credentials are references.
    assert!(out["kustomization"].get("secretGenerator").is_none());
    assert!(
        docs.as_array()
            .unwrap()
            .iter()
            .all(|d| d["kind"] != "Secret")
    );
    for set in [head, cpu, gpu] {
        assert_eq!(
            env(set, "GRIDTEST_COOKIE")["valueFrom"]["secretKeyRef"]["name"],
            "gridtest-cookie"
        );
        let from = &container(set)["envFrom"][0]["secretRef"];
        assert_eq!(
            (&from["name"], &from["optional"]),
            (&"gridtest-s3".into(), &true.into())
        );
    }

    // RBAC: the head's account may scale the pools, through the scale subresource only.
    assert_eq!(
        head["spec"]["template"]["spec"]["serviceAccountName"],
        "gridtest-head"
    );
    let binding = find(docs, "RoleBinding", "gridtest-scaler");
    assert_eq!(binding["subjects"][0]["name"], "gridtest-head");
    let rules = find(docs, "Role", "gridtest-scaler")["rules"]
        .as_array()
        .unwrap();
    let scale = rules
        .iter()
        .find(|r| r["resources"][0] == "statefulsets/scale")
        .expect("a rule on statefulsets/scale");
    assert!(scale["verbs"].as_array().unwrap().contains(&"patch".into()));
    assert!(
        rules.iter().all(|r| r["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| ["get", "patch", "update"].contains(&v.as_str().unwrap()))),
        "no verb beyond reading and scaling"
    );

    // No budget blocks a drain: the head may go (it resumes from its ledger), pools by quarters.
    let head_pdb = find(docs, "PodDisruptionBudget", "gridtest-head");
    assert_eq!(head_pdb["spec"]["maxUnavailable"], 1);
    assert_eq!(
        find(docs, "PodDisruptionBudget", "gridtest-workers")["spec"]["maxUnavailable"],
        "25%"
    );

    // The TLS component mounts the Secret and points every node at its files.
    for name in ["gridtest-head", "gridtest-cpu", "gridtest-gpu"] {
        let set = find(&out["tls"], "StatefulSet", name);
        assert_eq!(
            set["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
            "gridtest-tls"
        );
        assert_eq!(
            env(set, "GRIDTEST_TLS_CA")["value"],
            "/etc/gridtest/tls/ca.crt"
        );
    }
}

#[test]
fn kustomize_renders_the_manifests() {
    let Ok(out) = Command::new("kubectl")
        .arg("kustomize")
        .arg(deploy_dir())
        .output()
    else {
        gridtest_tests::skip(
            "kubectl",
            "deploy::kustomize_renders_the_manifests",
            "kubectl is not installed",
        );
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8_lossy(&out.stdout);
    let kinds = yaml.lines().filter(|l| l.starts_with("kind: ")).count();
    // The Python rendering covers the resources; kustomize adds the generated ConfigMap.
    assert_eq!(kinds, 11, "{yaml}");
    assert!(yaml.contains("name: gridtest-settings-"), "{yaml}");
}
