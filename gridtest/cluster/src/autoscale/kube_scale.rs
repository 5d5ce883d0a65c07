//! `KubeScale`: the thin Kubernetes client of the autoscaler. It reads and sets one thing, the
//! `spec.replicas` of a StatefulSet's scale subresource (`GET` and a JSON merge `PATCH` of
//! `/apis/apps/v1/namespaces/NS/statefulsets/NAME/scale`), which the head's ServiceAccount
//! may do and nothing more (`deploy/rbac.yaml`).

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Config};

use super::ScaleError;

/// The scale subresource of the StatefulSets of one namespace.
#[derive(Clone)]
pub struct KubeScale {
    api: Api<StatefulSet>,
    namespace: String,
}

impl std::fmt::Debug for KubeScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeScale")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl KubeScale {
    /// In a pod, the API server, token and namespace of its ServiceAccount (elsewhere, the
    /// current kubeconfig context); `namespace` overrides the namespace.
    ///
    /// # Errors
    /// [`ScaleError::Config`] when neither is there.
    pub async fn infer(namespace: Option<&str>) -> Result<Self, ScaleError> {
        let config = Config::infer()
            .await
            .map_err(|e| ScaleError::Config(e.to_string()))?;
        Self::with_config(config, namespace)
    }

    /// The API server at `url` (e.g. `https://10.0.0.1:443`, or plain `http://` for a local
    /// proxy), authenticating with a bearer `token` when given.
    ///
    /// # Errors
    /// [`ScaleError::Config`] for a URL that does not parse.
    #[allow(
        clippy::unused_async,
        reason = "the client starts a task: it must be made inside a Tokio runtime"
    )]
    pub async fn at(url: &str, namespace: &str, token: Option<&str>) -> Result<Self, ScaleError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| ScaleError::Config(format!("API server URL `{url}`: {e}")))?;
        let mut config = Config::new(uri);
        config.auth_info.token = token.map(|t| secrecy::SecretString::from(t.to_owned()));
        Self::with_config(config, Some(namespace))
    }

    fn with_config(config: Config, namespace: Option<&str>) -> Result<Self, ScaleError> {
        let namespace = namespace.map_or_else(|| config.default_namespace.clone(), str::to_owned);
        let client = Client::try_from(config).map_err(|e| ScaleError::Config(e.to_string()))?;
        Ok(Self {
            api: Api::namespaced(client, &namespace),
            namespace,
        })
    }

    /// The namespace of the StatefulSets.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The replicas `statefulset` is set to.
    ///
    /// # Errors
    /// [`ScaleError::Api`].
    pub async fn replicas(&self, statefulset: &str) -> Result<u32, ScaleError> {
        let scale = self
            .api
            .get_scale(statefulset)
            .await
            .map_err(|source| ScaleError::Api {
                statefulset: statefulset.to_owned(),
                source,
            })?;
        let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
        Ok(u32::try_from(replicas).unwrap_or(0))
    }

    /// Sets `statefulset` to `replicas`.
    ///
    /// # Errors
    /// [`ScaleError::Api`].
    pub async fn set_replicas(&self, statefulset: &str, replicas: u32) -> Result<(), ScaleError> {
        let patch = serde_json::json!({ "spec": { "replicas": replicas } });
        self.api
            .patch_scale(statefulset, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ScaleError::Api {
                statefulset: statefulset.to_owned(),
                source,
            })?;
        Ok(())
    }
}
