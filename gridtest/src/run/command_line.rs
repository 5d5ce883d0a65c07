//! A sweep binary's command line as the user meets it: flags, `GRIDTEST_*` variables and the
//! `--config` file ([`config_file`](crate::cli::config_file)); `--completions SHELL`; `-h`
//! showing the flags most runs need and `--help` every flag in its group, the binary's own flags
//! (its grid, its strategy's settings) under its own name; `--version` naming the binary and
//! the gridtest it was built with.

use std::collections::HashSet;
use std::ffi::OsString;

use clap::{Args, Command, CommandFactory, FromArgMatches};

use super::RunArgs;
use crate::cli::config_file;

/// Parses a sweep binary's command line `C` (one that flattens [`RunArgs`]): flags,
/// `GRIDTEST_*` variables and the `--config` file; with `--completions SHELL` it prints the
/// completion script of the whole command and exits. Its help is shaped by [`shape`].
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
/// let cli: Cli = gridtest::run::parse();
/// ```
#[must_use]
pub fn parse<C: CommandFactory + FromArgMatches>() -> C {
    let args: Vec<OsString> = std::env::args_os().collect();
    let command = C::command();
    let program = program_name(&args, command.get_name());
    let mut command = shape(command, &program);
    if let Some(shell) = completions_asked(&args) {
        clap_complete::generate(shell, &mut command, program, &mut std::io::stdout());
        std::process::exit(0);
    }
    config_file::try_parse_command(command, args, |name| std::env::var_os(name))
        .unwrap_or_else(|e| e.exit())
}

/// The shell of `--completions SHELL` (or `--completions=SHELL`), when given and valid.
fn completions_asked(args: &[OsString]) -> Option<clap_complete::Shell> {
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

/// The flags of [`RunArgs`] that `-h` shows (the rest are in `--help`).
pub const FIRST_FLAGS: [&str; 15] = [
    "data",
    "out",
    "symbols",
    "from",
    "to",
    "commission_bps",
    "slippage_bps",
    "threads",
    "rank_by",
    "top",
    "results",
    "replay",
    "dry_run",
    "config",
    "verbose",
];

/// `command` (a sweep binary's, flattening [`RunArgs`]) named `program`, with its help shaped
/// as the module says.
#[must_use]
pub fn shape(command: Command, program: &str) -> Command {
    let shared: HashSet<String> = RunArgs::augment_args(Command::new("run"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let own_heading = format!("{program} options");
    let ids: Vec<(String, bool)> = command
        .get_arguments()
        .map(|a| (a.get_id().to_string(), shared.contains(a.get_id().as_str())))
        .filter(|(id, _)| id != "help" && id != "version")
        .collect();
    let version = match command.get_version() {
        Some(v) if program != "gridtest" => {
            format!("{v} (gridtest {})", env!("CARGO_PKG_VERSION"))
        }
        _ => env!("CARGO_PKG_VERSION").to_owned(),
    };
    let mut command = command
        .name(program.to_owned())
        .bin_name(program.to_owned())
        .version(version)
        .after_help("-h shows the flags most runs need; --help shows every flag, by group.");
    for (id, is_shared) in ids {
        command = command.mut_arg(id.as_str(), |arg| {
            if !is_shared {
                arg.help_heading(own_heading.clone())
            } else if FIRST_FLAGS.contains(&id.as_str()) {
                arg
            } else {
                arg.hide_short_help(true)
            }
        });
    }
    command
}

/// The name a binary was run by (the file name of `argv[0]`), else `fallback`.
fn program_name(args: &[OsString], fallback: &str) -> String {
    args.first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .map_or_else(|| fallback.to_owned(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    #[command(version, about = "A sweep")]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
        /// Largest fast window.
        #[arg(long, default_value_t = 100)]
        fast_max: usize,
    }

    #[test]
    fn the_short_help_shows_the_first_flags_and_the_binarys_own_under_its_name() {
        let mut command = shape(Cli::command(), "my_sweep");
        let short = command.render_help().to_string();
        let long = command.render_long_help().to_string();
        for flag in ["--data", "--out", "--rank-by", "--dry-run", "--fast-max"] {
            assert!(short.contains(flag), "-h lacks {flag}:\n{short}");
        }
        for flag in ["--gpu-slots", "--halving", "--status-file", "--log-format"] {
            assert!(!short.contains(flag), "-h shows {flag}");
            assert!(long.contains(flag), "--help lacks {flag}");
        }
        let own = long
            .find("my_sweep options:")
            .expect("the binary's own heading");
        let logging = long.find("Logging:").expect("the logging group");
        assert!(
            long[own..].contains("--fast-max")
                && !long[logging..own.max(logging)].contains("--fast-max"),
            "--fast-max under its binary's heading:\n{long}"
        );
        assert!(
            short.lines().count() * 3 < long.lines().count(),
            "-h is short"
        );
        let version = command.render_version();
        assert!(version.starts_with("my_sweep "), "{version}");
        assert!(version.contains("(gridtest "), "{version}");
    }
}
