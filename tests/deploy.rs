//! The Kubernetes manifests render (kustomize) into the objects the docs describe. Skipped, with
//! a message, where kubectl is not installed.

use std::process::Command;

#[test]
fn the_manifests_render_with_kustomize() {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let Ok(out) = Command::new("kubectl")
        .arg("kustomize")
        .arg(&deploy)
        .output()
    else {
        gridtest_tests::skip(
            "kubectl",
            "the_manifests_render_with_kustomize",
            "kubectl is not installed",
        );
        return;
    };
    let yaml = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "kind: StatefulSet\nmetadata:\n  name: gridtest\n",
        "kind: StatefulSet\nmetadata:\n  name: gridtest-gpu\n",
        "clusterIP: None",
        "publishNotReadyAddresses: true",
        "nvidia.com/gpu: 1",
        "value: gridtest-0.gridtest:7000",
        // The CPU pool infers head and workers from pod names, which takes --role auto.
        "name: GRIDTEST_ROLE\n          value: auto",
        "kind: PodDisruptionBudget",
        // Probes on the --http port of every node.
        "path: /readyz",
        "path: /healthz",
        "value: 0.0.0.0:9090",
    ] {
        assert!(yaml.contains(needle), "missing {needle:?} in\n{yaml}");
    }
}
