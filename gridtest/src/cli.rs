//! The command line's types that more than one command shares: cluster flags and their
//! resolution, execution conventions, settings files, the reference page. Binary-facing: nothing
//! below this layer uses clap.

mod autoscale_args;
mod cluster_args;
pub mod config_file;
mod exec_args;
mod reference;

pub use autoscale_args::{AutoscaleArgs, AutoscaleMode};
pub use cluster_args::{ClusterArgs, RoleChoice};
pub use exec_args::ExecArgs;
pub use reference::markdown_reference;
