//! Walk-forward selection over recorded returns.
//!
//! The periods are cut into consecutive test windows of `test` periods, the first starting after
//! `train` periods. Before each test window the set with the best Sharpe ratio over the training
//! window (the `train` periods just before it, or every period before it when anchored) is chosen
//! and its returns over the test window are kept; the kept returns, concatenated, are the
//! walk-forward's out-of-sample record. It is compared with the full-sample winner (the best set
//! over all periods, which saw the future) over the same periods.
//!
//! Caveat: the returns were recorded by running each set over the whole history, so a set's
//! indicators are already warm when its test window starts, and a position it holds when its
//! window opens is taken over as it stands (no switching cost between sets is charged).

use super::sharpe::SeriesStats;
use super::{ResearchError, Returns};

/// Window lengths, in periods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WalkForward {
    /// Periods to choose on.
    pub train: usize,
    /// Periods to score the choice on.
    pub test: usize,
    /// Train on everything before the test window instead of the last `train` periods.
    pub anchored: bool,
}

/// One test window.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// First training period.
    pub train_start: usize,
    /// First test period (one past the last training period).
    pub test_start: usize,
    /// One past the last test period.
    pub test_end: usize,
    /// The set chosen on the training window.
    pub chosen: usize,
    /// Its Sharpe ratio (per period) over the training window.
    pub in_sample_sharpe: f64,
    /// Its Sharpe ratio over the test window.
    pub out_of_sample_sharpe: f64,
}

/// The outcome of a walk-forward selection.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkForwardReport {
    /// The windows, in time order.
    pub windows: Vec<Window>,
    /// The chosen sets' returns over the test windows, concatenated (periods `windows[0].test_start..`).
    pub out_of_sample: Vec<f64>,
    /// Per-period Sharpe ratio of `out_of_sample`.
    pub out_of_sample_sharpe: f64,
    /// The set with the best Sharpe ratio over all periods.
    pub full_sample_winner: usize,
    /// Its Sharpe ratio over the same periods as `out_of_sample`.
    pub full_sample_winner_sharpe: f64,
}

/// Runs a walk-forward selection on `returns`.
///
/// # Errors
/// [`ResearchError::NoSets`] without sets; [`ResearchError::TooShort`] when a window length is
/// below 2 or the returns hold no test window after the first training window.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::{Returns, WalkForward, walk_forward};
/// // Set 0 earns in the first half, set 1 in the second.
/// let first: Vec<f64> = (0..40).map(|i| if i < 20 { 0.01 + 0.002 * f64::from(i % 2) } else { -0.01 }).collect();
/// let second: Vec<f64> = (0..40).map(|i| if i < 20 { -0.01 } else { 0.01 + 0.002 * f64::from(i % 2) }).collect();
/// let r = Returns::from_values(40, [first, second].concat())?;
/// let wf = walk_forward(&r, WalkForward { train: 10, test: 10, anchored: false })?;
/// let chosen: Vec<usize> = wf.windows.iter().map(|w| w.chosen).collect();
/// assert_eq!(chosen, [0, 0, 1]); // trained on periods 0..10, 10..20, 20..30
/// # Ok::<(), gridtest::research::ResearchError>(())
/// ```
pub fn walk_forward(
    returns: &Returns,
    spec: WalkForward,
) -> Result<WalkForwardReport, ResearchError> {
    if returns.n_sets() == 0 {
        return Err(ResearchError::NoSets);
    }
    let periods = returns.n_periods();
    if spec.train < 2 || spec.test < 2 || periods <= spec.train {
        return Err(ResearchError::TooShort {
            needed: spec.train.max(2) + spec.test.max(2),
            got: periods,
            why: format!(
                "windows of at least 2 periods, a {}-period training window and a test window after it",
                spec.train
            ),
        });
    }
    let best_over = |range: std::ops::Range<usize>| -> (usize, f64) {
        let mut best = (0, f64::NEG_INFINITY);
        for (set, series) in returns.sets().enumerate() {
            let sharpe = SeriesStats::of(&series[range.clone()]).sharpe();
            if sharpe > best.1 {
                best = (set, sharpe);
            }
        }
        best
    };
    let mut windows = Vec::new();
    let mut out_of_sample = Vec::new();
    let mut test_start = spec.train;
    while test_start < periods {
        let test_end = (test_start + spec.test).min(periods);
        let train_start = if spec.anchored {
            0
        } else {
            test_start - spec.train
        };
        let (chosen, in_sample_sharpe) = best_over(train_start..test_start);
        let test = &returns.set(chosen)[test_start..test_end];
        out_of_sample.extend_from_slice(test);
        windows.push(Window {
            train_start,
            test_start,
            test_end,
            chosen,
            in_sample_sharpe,
            out_of_sample_sharpe: SeriesStats::of(test).sharpe(),
        });
        test_start = test_end;
    }
    let (full_sample_winner, _) = best_over(0..periods);
    let winner_tail = &returns.set(full_sample_winner)[spec.train..];
    Ok(WalkForwardReport {
        out_of_sample_sharpe: SeriesStats::of(&out_of_sample).sharpe(),
        full_sample_winner,
        full_sample_winner_sharpe: SeriesStats::of(winner_tail).sharpe(),
        windows,
        out_of_sample,
    })
}
