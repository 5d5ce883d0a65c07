//! `KubeScale` in a binary built without the `kubernetes` feature: it cannot be made (both
//! constructors say which feature is missing), so `--autoscale kube` fails at start with that
//! reason and `--autoscale metric` works as in any build.

use super::ScaleError;

/// Why there is no client.
const NOT_BUILT: &str =
    "--autoscale kube needs gridtest's `kubernetes` feature, which this binary was built without";

/// No Kubernetes client: a type without values.
#[derive(Clone, Debug)]
pub enum KubeScale {}

#[allow(
    clippy::unused_async,
    reason = "the same signatures as the client of the `kubernetes` feature"
)]
impl KubeScale {
    /// Always [`ScaleError::Config`]: the feature is missing.
    ///
    /// # Errors
    /// Always.
    pub async fn infer(_namespace: Option<&str>) -> Result<Self, ScaleError> {
        Err(ScaleError::Config(NOT_BUILT.into()))
    }

    /// Always [`ScaleError::Config`]: the feature is missing.
    ///
    /// # Errors
    /// Always.
    pub async fn at(
        _url: &str,
        _namespace: &str,
        _token: Option<&str>,
    ) -> Result<Self, ScaleError> {
        Err(ScaleError::Config(NOT_BUILT.into()))
    }

    /// Never called: no value exists.
    #[must_use]
    pub fn namespace(&self) -> &str {
        match *self {}
    }

    /// Never called: no value exists.
    ///
    /// # Errors
    /// None.
    pub async fn replicas(&self, _statefulset: &str) -> Result<u32, ScaleError> {
        match *self {}
    }

    /// Never called: no value exists.
    ///
    /// # Errors
    /// None.
    pub async fn set_replicas(&self, _statefulset: &str, _replicas: u32) -> Result<(), ScaleError> {
        match *self {}
    }
}
