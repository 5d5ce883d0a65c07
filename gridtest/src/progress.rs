//! Progress of a sweep: an indicatif bar on a terminal (cells done, cells/s, ETA), and a log
//! line every few seconds otherwise.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often progress is logged when no bar is drawn.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// The progress display of one sweep.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    failed: usize,
    requeued: usize,
    started: Instant,
    last_log: Instant,
}

impl Progress {
    /// Progress over `total` cells; a bar when `bar` is set and stderr is a terminal.
    #[must_use]
    pub fn new(total: usize, bar: bool) -> Self {
        let bar = (bar && console_is_terminal()).then(|| {
            let pb = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            pb.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} cells  {per_sec}  ETA {eta}  {msg}",
                )
                .expect("valid template"),
            );
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        });
        let now = Instant::now();
        Self {
            bar,
            total,
            done: 0,
            failed: 0,
            requeued: 0,
            started: now,
            last_log: now,
        }
    }

    /// Cells recorded so far, of which failed.
    pub fn set(&mut self, done: usize, failed: usize) {
        self.done = done;
        self.failed = failed;
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            if failed > 0 || self.requeued > 0 {
                bar.set_message(format!("{failed} failed, {} requeued", self.requeued));
            }
        } else if self.last_log.elapsed() >= LOG_EVERY {
            self.last_log = Instant::now();
            let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
            tracing::info!(
                done,
                total = self.total,
                failed,
                requeued = self.requeued,
                cells_per_s = format!("{rate:.1}"),
                "progress"
            );
        }
    }

    /// Units put back in the queue.
    pub fn requeued(&mut self, units: usize) {
        self.requeued += units;
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn console_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}
