//! `SweepError`: a sweep that cannot run as described, or outputs that cannot be written.

/// Errors of describing a sweep and writing its outputs.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep is not runnable; every problem is listed.
    #[error("sweep of `{strategy}` is invalid:{}", .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    Invalid {
        /// The strategy.
        strategy: String,
        /// What is wrong.
        problems: Vec<String>,
    },
    /// Writing an output failed.
    #[error("cannot write {path}: {reason}")]
    Output {
        /// The file or folder.
        path: String,
        /// Why.
        reason: String,
    },
}
