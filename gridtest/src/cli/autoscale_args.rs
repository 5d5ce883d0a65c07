//! `AutoscaleArgs`: the head's autoscaler flags, and the [`Autoscaler`] they describe.

use std::time::Duration;

use crate::autoscale::{Actuation, Autoscaler, KubeScale, Pool};
use crate::progress::ProgressFeed;

/// How the head's autoscaler acts (`--autoscale`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoscaleMode {
    /// No autoscaler.
    #[default]
    Off,
    /// Sets each pool StatefulSet's replicas through the scale subresource.
    Kube,
    /// Only publishes the desired replicas on `/metrics`, for KEDA or an HPA.
    Metric,
}

/// Flags of the head's autoscaler (`docs/cluster.md`, *Elastic pools*).
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Autoscaling")]
pub struct AutoscaleArgs {
    /// Head: size the worker pools (--pool) from the work left: kube sets each StatefulSet's
    /// replicas (the ServiceAccount of deploy/rbac.yaml), metric only publishes
    /// gridtest_pool_replicas{state="desired"} for KEDA or an HPA.
    #[arg(long, env = "GRIDTEST_AUTOSCALE", value_enum, default_value_t = AutoscaleMode::Off)]
    pub autoscale: AutoscaleMode,
    /// A pool the autoscaler sizes: NAME=cpu|gpu[:MIN..MAX], NAME its StatefulSet (repeat the
    /// flag, or separate pools with commas in the variable).
    #[arg(long = "pool", env = "GRIDTEST_POOLS", value_delimiter = ',')]
    pub pools: Vec<Pool>,
    /// Seconds a pool should take to finish the work left at its nodes' measured speed.
    #[arg(long, env = "GRIDTEST_SCALE_DRAIN_S", default_value_t = 300.0)]
    pub scale_drain_s: f64,
    /// Seconds a pool must want fewer nodes before it shrinks (by draining).
    #[arg(long, env = "GRIDTEST_SCALE_DOWN_AFTER_S", default_value_t = 120)]
    pub scale_down_after_s: u64,
    /// Period of the autoscaler, ms.
    #[arg(long, env = "GRIDTEST_SCALE_PERIOD_MS", default_value_t = 5000)]
    pub scale_period_ms: u64,
    /// Kubernetes API server (default: the pod's ServiceAccount, else the kubeconfig).
    #[arg(long, env = "GRIDTEST_KUBE_API")]
    pub kube_api: Option<String>,
    /// Bearer token for --kube-api.
    #[arg(long, env = "GRIDTEST_KUBE_TOKEN", hide_env_values = true)]
    pub kube_token: Option<String>,
    /// Namespace of the pools (default: the pod's).
    #[arg(long, env = "GRIDTEST_KUBE_NAMESPACE")]
    pub kube_namespace: Option<String>,
}

impl AutoscaleArgs {
    /// The autoscaler these flags describe, following `feed`, and its period; `None` when off.
    ///
    /// # Errors
    /// A sentence naming the flag: no pool given, or no Kubernetes configuration.
    pub async fn autoscaler(
        &self,
        feed: &ProgressFeed,
    ) -> Result<Option<(Autoscaler, Duration)>, String> {
        if self.autoscale == AutoscaleMode::Off {
            return Ok(None);
        }
        if self.pools.is_empty() {
            return Err("--autoscale needs at least one --pool NAME=cpu|gpu[:MIN..MAX]".into());
        }
        let pools = self
            .pools
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.policy.drain_s = self.scale_drain_s;
                p.policy.scale_down_after = Duration::from_secs(self.scale_down_after_s);
                p
            })
            .collect();
        let namespace = self.kube_namespace.as_deref();
        let kube = match (self.autoscale, &self.kube_api) {
            (AutoscaleMode::Kube, Some(url)) => {
                let namespace = namespace.unwrap_or("default");
                let kube = KubeScale::at(url, namespace, self.kube_token.as_deref()).await;
                Some(kube.map_err(|e| format!("--kube-api: {e}"))?)
            }
            (AutoscaleMode::Kube, None) => Some(
                KubeScale::infer(namespace)
                    .await
                    .map_err(|e| format!("--autoscale kube: {e}"))?,
            ),
            _ => None,
        };
        let actuation = kube.map_or(Actuation::Metric, |k| Actuation::Kubernetes(Box::new(k)));
        let period = Duration::from_millis(self.scale_period_ms.max(10));
        Ok(Some((
            Autoscaler::new(pools, feed.clone(), actuation),
            period,
        )))
    }
}
