//! `Drawdown`: maximum drawdown of an equity series without a division per observation.

use serde::{Deserialize, Serialize};

/// Running maximum drawdown, `max_t (1 - E[t] / max(E[0..=t]))`.
///
/// Sequential only (no `merge`: a drawdown depends on the order of the whole path). Keeps the
/// running peak and the lowest value since it; the ratio is taken only when a new peak
/// closes an episode (and at `finish`). Because `1 - x / peak` is monotone in `x` under IEEE
/// rounding, this returns bit for bit what the per-observation formula returns.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::metrics::Drawdown;
/// let mut dd = Drawdown::new(1.0);
/// for e in [1.1, 0.99, 1.2, 1.08, 1.3] { dd.update(e); }
/// assert!((dd.finish() - (1.0 - 0.99 / 1.1)).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drawdown {
    peak: f64,
    trough: f64,
    max: f64,
}

impl Drawdown {
    /// Starts at equity `start` (part of the running maximum).
    #[must_use]
    pub fn new(start: f64) -> Self {
        Self {
            peak: start,
            trough: start,
            max: 0.0,
        }
    }

    /// A drawdown state from its parts (e.g. read back from a device).
    #[must_use]
    pub fn from_parts(peak: f64, trough: f64, max: f64) -> Self {
        Self { peak, trough, max }
    }

    /// The parts [`Drawdown::from_parts`] takes: running peak, lowest value since it, and the
    /// largest drawdown of the episodes closed so far.
    #[must_use]
    pub fn parts(&self) -> (f64, f64, f64) {
        (self.peak, self.trough, self.max)
    }

    /// Observes the next equity value.
    #[inline(always)]
    pub fn update(&mut self, equity: f64) {
        if equity > self.peak {
            self.close_episode();
            self.peak = equity;
            self.trough = equity;
        } else if equity < self.trough {
            self.trough = equity;
        }
    }

    #[inline]
    fn close_episode(&mut self) {
        let dd = 1.0 - self.trough / self.peak;
        if dd > self.max {
            self.max = dd;
        }
    }

    /// The maximum drawdown, a fraction in `[0, 1)`.
    #[must_use]
    pub fn finish(&self) -> f64 {
        let last = 1.0 - self.trough / self.peak;
        self.max.max(last)
    }
}

/// How drawdowns are shown to a reader: gridtest computes and stores them as positive fractions
/// (`0.12` for a 12 % fall from the peak), which every file, ranking and aggregate keeps; the
/// printed leaderboard and the HTML report may show them negated, as backtesting.py and most
/// charting tools do (`−12 %`).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::metrics::DrawdownSign;
/// assert_eq!(DrawdownSign::Positive.show(0.12), 0.12);
/// assert_eq!(DrawdownSign::Negative.show(0.12), -0.12);
/// assert_eq!("negative".parse::<DrawdownSign>(), Ok(DrawdownSign::Negative));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DrawdownSign {
    /// `0.12` for a 12 % fall (the default).
    #[default]
    Positive,
    /// `−0.12` for a 12 % fall.
    Negative,
}

impl DrawdownSign {
    /// A drawdown, stored as a positive fraction, as it is shown.
    #[must_use]
    pub fn show(self, drawdown: f64) -> f64 {
        match self {
            Self::Positive => drawdown,
            Self::Negative => -drawdown,
        }
    }
}

impl std::str::FromStr for DrawdownSign {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "positive" => Ok(Self::Positive),
            "negative" => Ok(Self::Negative),
            _ => Err(format!("`{s}`: expected positive or negative")),
        }
    }
}
