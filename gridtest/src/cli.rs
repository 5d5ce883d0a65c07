//! The command line's types that more than one command shares: cluster flags and their
//! resolution, execution conventions, settings files, completions. Binary-facing: nothing
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

use clap::{CommandFactory, FromArgMatches};

/// Parses a sweep binary's command line `C` (one that flattens [`RunArgs`](crate::RunArgs)):
/// flags, `GRIDTEST_*` variables and the `--config` file ([`config_file`]); with
/// `--completions SHELL` it prints the completion script of the whole command and exits.
///
/// ```no_run
/// #[derive(clap::Parser)]
/// #[command(version, about = "My sweep")]
/// struct Cli {
///     #[command(flatten)]
///     run: gridtest::RunArgs,
///     /// A flag of my own.
///     #[arg(long, env = "GRIDTEST_FAST_MAX", default_value_t = 100)]
///     fast_max: usize,
/// }
///
/// let cli: Cli = gridtest::cli::parse();
/// ```
#[must_use]
pub fn parse<C: CommandFactory + FromArgMatches>() -> C {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(shell) = completions_asked(&args) {
        let mut command = C::command();
        let name = args
            .first()
            .and_then(|a| std::path::Path::new(a).file_name())
            .map_or_else(
                || command.get_name().to_owned(),
                |n| n.to_string_lossy().into_owned(),
            );
        clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
        std::process::exit(0);
    }
    config_file::parse()
}

/// The shell of `--completions SHELL` (or `--completions=SHELL`), when given and valid.
fn completions_asked(args: &[std::ffi::OsString]) -> Option<clap_complete::Shell> {
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = it.next() {
        if arg == "--" {
            return None;
        }
        let value = if arg == "--completions" {
            it.next().map(std::borrow::Cow::into_owned)
        } else {
            arg.strip_prefix("--completions=").map(str::to_owned)
        };
        if let Some(value) = value {
            return clap::ValueEnum::from_str(&value, true).ok();
        }
    }
    None
}
