//! The sweep binary's progress bar (indicatif, on a terminal only), drawn from the progress the
//! supervisor publishes ([`ProgressFeed`]).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::{ProgressFeed, SweepProgress};

/// A bar following a feed until the sweep ends; cleared by [`Bar::clear`] (or when dropped).
pub(super) struct Bar {
    bar: Option<ProgressBar>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Bar {
    /// Follows `feed` on stderr when `wanted` and stderr is a terminal; else draws nothing.
    pub(super) fn follow(
        runtime: &tokio::runtime::Runtime,
        feed: &ProgressFeed,
        wanted: bool,
    ) -> Self {
        if !wanted || !bar_wanted() {
            return Self {
                bar: None,
                task: None,
            };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} cells  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        super::logging::show_bar(&bar);
        let mut seen = feed.subscribe();
        let drawn = bar.clone();
        let task = runtime.spawn(async move {
            while seen.changed().await.is_ok() {
                let p = *seen.borrow_and_update();
                drawn.set_length(p.total as u64);
                drawn.set_position(p.done as u64);
                drawn.set_message(status_line(&p));
                if p.ended {
                    break;
                }
            }
        });
        Self {
            bar: Some(bar),
            task: Some(task),
        }
    }

    /// Stops following and clears the bar.
    pub(super) fn clear(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(bar) = self.bar.take() {
            super::logging::forget_bar();
            bar.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.clear();
    }
}

/// What the bar says besides the cells: slices of histories read by slices (their cells come
/// with their last slice), cells failed and units requeued.
fn status_line(p: &SweepProgress) -> String {
    let mut parts = Vec::new();
    if p.slices.1 > 0 {
        parts.push(format!("{}/{} slices", p.slices.0, p.slices.1));
    }
    if p.failed > 0 || p.requeued > 0 {
        parts.push(format!("{} failed, {} requeued", p.failed, p.requeued));
    }
    parts.join("  ")
}

/// A bar is drawn on a terminal that can redraw a line (not `TERM=dumb`) and has a width.
fn bar_wanted() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
        && console_width().is_some_and(|w| w >= 40)
}

/// The terminal's width in columns, when it reports one.
fn console_width() -> Option<u16> {
    let (_, cols) = console::Term::stderr().size_checked()?;
    (cols > 0).then_some(cols)
}
