//! The command line's types that more than one command shares: cluster flags and their
//! resolution, execution conventions. Binary-facing: nothing below this layer uses clap.

mod autoscale_args;
mod cluster_args;
mod exec_args;

pub use autoscale_args::{AutoscaleArgs, AutoscaleMode};
pub use cluster_args::{ClusterArgs, RoleChoice};
pub use exec_args::ExecArgs;
