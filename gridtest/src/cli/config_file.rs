//! Settings from a TOML file (`--config FILE` or `GRIDTEST_CONFIG`): the lowest layer of a
//! command line. A flag given on the command line wins over its `GRIDTEST_*` variable, which
//! wins over the file, which wins over the default.
//!
//! The file's keys are the long flags without their dashes (`rank-by` or `rank_by`); values
//! are strings, numbers, booleans (a switch) or arrays (a list flag):
//!
//! ```toml
//! data = "s3://ticks/w1"
//! symbols = ["AAPL", "MSFT"]
//! rank-by = "sortino"
//! commission_bps = 0.5
//! no-progress = true
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::{ArgAction, Command, CommandFactory, FromArgMatches};

/// The flag that names the file, and its variable.
pub const CONFIG_FLAG: &str = "config";
/// The variable naming the file when `--config` is not given.
pub const CONFIG_ENV: &str = "GRIDTEST_CONFIG";

/// Parses `C` from this process's arguments and environment, with the settings of the file
/// named by `--config` (or `GRIDTEST_CONFIG`) under both; exits with clap's message on an
/// error, as `Parser::parse` does.
#[must_use]
pub fn parse<C: CommandFactory + FromArgMatches>() -> C {
    try_parse_from(std::env::args_os(), |name| std::env::var_os(name)).unwrap_or_else(|e| e.exit())
}

/// [`parse`] from explicit arguments (the program name first) and environment.
///
/// # Errors
/// clap's error for a bad command line, or for a file that cannot be read, is not TOML, names
/// a flag `C` does not have or gives one a value of the wrong shape (the message names the file
/// and the key).
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[arg(long, env = "GRIDTEST_CONFIG")]
///     config: Option<std::path::PathBuf>,
///     #[arg(long, env = "GRIDTEST_TOP", default_value_t = 10)]
///     top: usize,
/// }
///
/// let file = std::env::temp_dir().join(format!("gridtest-doc-{}.toml", std::process::id()));
/// std::fs::write(&file, "top = 3\n").unwrap();
/// let args = ["sweep", "--config", file.to_str().unwrap()];
/// let cli: Cli = gridtest::cli::config_file::try_parse_from(args, |_| None).unwrap();
/// assert_eq!(cli.top, 3);
/// // The command line wins over the file.
/// let args = ["sweep", "--config", file.to_str().unwrap(), "--top", "5"];
/// let cli: Cli = gridtest::cli::config_file::try_parse_from(args, |_| None).unwrap();
/// assert_eq!(cli.top, 5);
/// ```
pub fn try_parse_from<C, I, T>(
    args: I,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<C, clap::Error>
where
    C: CommandFactory + FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    try_parse_command(C::command(), args, env)
}

/// [`try_parse_from`] with `command`, `C`'s command as the caller shaped it (its help, its
/// name).
///
/// # Errors
/// As [`try_parse_from`].
pub fn try_parse_command<C, I, T>(
    mut command: Command,
    args: I,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<C, clap::Error>
where
    C: FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(file) = config_path(&args, &env) {
        let injected = file_args(&command, &file, &args, &env)?;
        let at = usize::from(!args.is_empty());
        args.splice(at..at, injected);
    }
    let matches = command.try_get_matches_from_mut(args)?;
    C::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// The file named on the command line (`--config F`, `--config=F`), else by the variable.
fn config_path(args: &[OsString], env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let flag = format!("--{CONFIG_FLAG}");
    let prefix = format!("--{CONFIG_FLAG}=");
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            break;
        }
        if text == flag {
            return it.next().map(PathBuf::from);
        }
        if let Some(path) = text.strip_prefix(&prefix) {
            return Some(PathBuf::from(path));
        }
    }
    env(CONFIG_ENV).map(PathBuf::from)
}

/// The file's settings as arguments, leaving out those the command line or a variable sets.
fn file_args(
    command: &Command,
    file: &Path,
    args: &[OsString],
    env: &impl Fn(&str) -> Option<OsString>,
) -> Result<Vec<OsString>, clap::Error> {
    let fail = |kind: ErrorKind, what: String| {
        clap::Error::raw(kind, format!("config file {}: {what}\n", file.display()))
    };
    let text = std::fs::read_to_string(file).map_err(|e| fail(ErrorKind::Io, e.to_string()))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| fail(ErrorKind::InvalidValue, e.to_string()))?;
    let mut out = Vec::new();
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(long.as_str()) && long != CONFIG_FLAG)
        else {
            return Err(fail(
                ErrorKind::UnknownArgument,
                format!("`{key}` is not a setting of this command (see --help)"),
            ));
        };
        let on_command_line = args.iter().skip(1).any(|a| {
            let a = a.to_string_lossy();
            a == format!("--{long}") || a.starts_with(&format!("--{long}="))
        });
        let in_env = arg
            .get_env()
            .is_some_and(|name| env(&name.to_string_lossy()).is_some());
        if on_command_line || in_env {
            continue;
        }
        let switch = matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
        );
        let shape = |expected: &str| {
            fail(
                ErrorKind::InvalidValue,
                format!("`{key}` must be {expected}, not {value}"),
            )
        };
        match value {
            toml::Value::Boolean(on) if switch => {
                if *on {
                    out.push(OsString::from(format!("--{long}")));
                }
            }
            _ if switch => return Err(shape("true or false")),
            toml::Value::Array(items) => {
                for item in items {
                    out.push(OsString::from(format!(
                        "--{long}={}",
                        scalar(item).ok_or_else(|| shape("a list of scalars"))?
                    )));
                }
            }
            other => out.push(OsString::from(format!(
                "--{long}={}",
                scalar(other).ok_or_else(|| shape("a string, number or list"))?
            ))),
        }
    }
    Ok(out)
}

/// A TOML scalar as a command-line value.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Datetime(d) => Some(d.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

#[cfg(test)]
mod tests;
