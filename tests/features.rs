//! Cargo features: what a user crate compiles. The starter crate (`examples/starter`, the
//! template a user copies) depends on gridtest with `default-features = false`; its dependency
//! graph must hold none of the S3, cluster, TLS, Kubernetes or GPU crates, while each feature
//! brings exactly its own. Read from `cargo tree` (the resolved graph), not from the manifests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Crates that only the named feature may bring.
const S3_CRATES: &[&str] = &["reqwest", "quick-xml"];
const CLUSTER_CRATES: &[&str] = &[
    "gridtest-ractor-cluster",
    "prost",
    "tokio-rustls",
    "rustls",
    "aws-lc-rs",
];
const KUBERNETES_CRATES: &[&str] = &["kube", "kube-client", "k8s-openapi"];
const GPU_CRATES: &[&str] = &["cudarc", "nvml-wrapper", "gridtest-cuda"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

/// The names of the crates in the normal (non-dev, non-build) dependency graph.
fn normal_crates(manifest: &Path, args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .arg("tree")
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--locked", "--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}"])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {} {args:?} failed (a starter Cargo.lock out of date? run `cargo update \
         --workspace` in examples/starter):\n{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // `{p}` is `name vX.Y.Z [(path)] [(*)]`; names compared with `-` for `_`.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| name.replace('_', "-"))
        .collect()
}

fn present<'a>(crates: &BTreeSet<String>, group: &[&'a str]) -> Vec<&'a str> {
    group
        .iter()
        .copied()
        .filter(|c| crates.contains(&c.replace('_', "-")))
        .collect()
}

#[test]
fn the_starter_crate_builds_no_s3_cluster_kubernetes_or_gpu_code() {
    let starter = normal_crates(&repo().join("examples/starter/Cargo.toml"), &[]);
    assert!(
        starter.contains("datafusion") && starter.contains("gridtest"),
        "the starter depends on gridtest and its engine: {starter:?}"
    );
    for (feature, group) in [
        ("s3", S3_CRATES),
        ("cluster", CLUSTER_CRATES),
        ("kubernetes", KUBERNETES_CRATES),
        ("gpu (gridtest-cuda)", GPU_CRATES),
    ] {
        assert_eq!(
            present(&starter, group),
            Vec::<&str>::new(),
            "the local-only starter must not compile the {feature} crates"
        );
    }
}

#[test]
fn each_feature_brings_its_own_crates_and_no_others() {
    let manifest = repo().join("Cargo.toml");
    let with = |features: &str| {
        normal_crates(
            &manifest,
            &[
                "-p",
                "gridtest",
                "--no-default-features",
                "--features",
                features,
            ],
        )
    };
    let lean = normal_crates(&manifest, &["-p", "gridtest", "--no-default-features"]);
    let s3 = with("s3");
    let cluster = with("cluster");
    let kubernetes = with("kubernetes");
    let default = normal_crates(&manifest, &["-p", "gridtest"]);
    assert!(
        lean.len() < default.len(),
        "{} vs {}",
        lean.len(),
        default.len()
    );
    for (name, crates, expected) in [
        ("lean", &lean, vec![]),
        ("s3", &s3, vec![S3_CRATES]),
        ("cluster", &cluster, vec![CLUSTER_CRATES]),
        (
            "kubernetes",
            &kubernetes,
            vec![CLUSTER_CRATES, KUBERNETES_CRATES],
        ),
        ("default", &default, vec![S3_CRATES, CLUSTER_CRATES]),
    ] {
        for group in [S3_CRATES, KUBERNETES_CRATES, GPU_CRATES] {
            let wanted = expected.contains(&group);
            let found = present(crates, group);
            assert_eq!(
                found.len(),
                if wanted { group.len() } else { 0 },
                "gridtest with {name}: found {found:?} of {group:?}"
            );
        }
        // Only the cluster's own crates (ractor_cluster is vendored under that name): `rustls`
        // comes with S3 too.
        let cluster_only = ["gridtest-ractor-cluster", "prost"];
        let wanted = expected.contains(&CLUSTER_CRATES);
        assert_eq!(
            present(crates, &cluster_only).len(),
            if wanted { 2 } else { 0 },
            "gridtest with {name}: cluster crates"
        );
    }
}
