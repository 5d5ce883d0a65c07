//! The sweep binary's log set-up: level (`RUST_LOG`, `--log-level`, `-v`/`-q`), format (text
//! or JSON lines), colour (a terminal only, never with `NO_COLOR` or `TERM=dumb`), and a writer
//! that lifts the progress bar while a line is printed, so the two never interleave.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::ProgressBar;
use tracing::Level;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use super::{LogArgs, LogFormat};

/// Whether the logs are JSON lines (then so is the line that ends a failed run).
static JSON_LOGS: AtomicBool = AtomicBool::new(false);

/// The bar on screen, if any: log lines are written with it suspended.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Shows `bar` under the log lines until [`forget_bar`].
pub(super) fn show_bar(bar: &ProgressBar) {
    *BAR.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar.clone());
}

/// The bar is gone: log lines go straight to stderr again.
pub(super) fn forget_bar() {
    *BAR.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// The level `-v`/`-q` make of `base` (each step one level; at most trace, at least error).
fn shifted(base: Level, verbose: u8, quiet: u8) -> Level {
    const LEVELS: [Level; 5] = [
        Level::ERROR,
        Level::WARN,
        Level::INFO,
        Level::DEBUG,
        Level::TRACE,
    ];
    let at = LEVELS.iter().position(|l| *l == base).unwrap_or(2);
    let at = (at + usize::from(verbose)).saturating_sub(usize::from(quiet));
    LEVELS[at.min(LEVELS.len() - 1)]
}

/// Whether stderr gets ANSI colours: a terminal, `NO_COLOR` unset or empty, `TERM` not dumb
/// (<https://no-color.org>).
#[must_use]
pub fn colour_wanted() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Installs the `tracing` subscriber for `log` unless one is set (the first call wins).
pub fn init_logging(log: &LogArgs) {
    let level = shifted(log.log_level.unwrap_or(Level::INFO), log.verbose, log.quiet);
    // ractor wraps every actor in an `Actor{id=…}` span at info level: kept out (lines would
    // carry it as a prefix) unless tracing everything.
    let quiet_actors = if level == Level::TRACE {
        ""
    } else {
        ",ractor=warn,ractor_cluster=warn"
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{}{quiet_actors}",
            level.as_str().to_ascii_lowercase()
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Stderr)
        .with_target(false);
    JSON_LOGS.store(log.log_format == LogFormat::Json, Ordering::Relaxed);
    let _ = match log.log_format {
        LogFormat::Text => builder.with_ansi(colour_wanted()).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_ansi(false)
            .try_init(),
    };
}

/// Prints the error that ends a run to stderr, in the logs' format: `error: …` beside text
/// logs, one JSON line (`level` `ERROR`, `message`, `exit_code`) beside JSON logs. No backtrace:
/// the message names what failed (the file, shard or parameter set).
pub fn print_error(message: &str, exit_code: u8) {
    let line = if JSON_LOGS.load(Ordering::Relaxed) {
        serde_json::json!({
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "level": "ERROR",
            "message": message,
            "exit_code": exit_code,
        })
        .to_string()
    } else {
        format!("error: {message}")
    };
    let _ = writeln!(Stderr, "{line}");
}

/// stderr, with the progress bar lifted while a line is written.
struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let bar = BAR
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match bar {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl MakeWriter<'_> for Stderr {
    type Writer = Self;

    fn make_writer(&self) -> Self {
        Self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_moves_the_level_one_step_per_flag_within_the_range() {
        assert_eq!(shifted(Level::INFO, 0, 0), Level::INFO);
        assert_eq!(shifted(Level::INFO, 1, 0), Level::DEBUG);
        assert_eq!(shifted(Level::INFO, 5, 0), Level::TRACE);
        assert_eq!(shifted(Level::INFO, 0, 1), Level::WARN);
        assert_eq!(shifted(Level::INFO, 0, 9), Level::ERROR);
        assert_eq!(shifted(Level::ERROR, 1, 0), Level::WARN);
    }
}
