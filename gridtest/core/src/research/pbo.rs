//! Probability of backtest overfitting by combinatorially symmetric cross-validation (CSCV;
//! Bailey, Borwein, López de Prado and Zhu, 2017).
//!
//! The periods are cut into `S` blocks of equal length (the first `T mod S` periods, the oldest,
//! are left out). For each of the `C(S, S/2)` ways to pick half the blocks as the in-sample
//! part (the rest, out of sample), the set with the best in-sample Sharpe ratio is chosen and the
//! relative rank `ω = rank / (N + 1)` of its out-of-sample Sharpe among all `N` sets' is taken
//! (average rank for ties); its logit is `λ = ln(ω / (1 − ω))`. PBO is the fraction of splits
//! with `λ ≤ 0`: how often the in-sample winner is at or below the out-of-sample median.
//!
//! Each set's returns are summarised once per block (centred sum and sum of squares), so a split
//! costs `O(S·N)` additions whatever `T`: `C(16, 8) = 12 870` splits of 10⁵ sets take seconds.

use super::{ResearchError, Returns};

/// The outcome of a CSCV, one entry per split in lexicographic order of the in-sample blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct Pbo {
    /// Blocks `S`.
    pub blocks: usize,
    /// Periods per block.
    pub block_len: usize,
    /// Probability of backtest overfitting: the fraction of splits with `λ ≤ 0`.
    pub probability: f64,
    /// `λ` of each split.
    pub logits: Vec<f64>,
    /// The in-sample winner of each split (index of the set).
    pub chosen: Vec<usize>,
    /// Its in-sample Sharpe ratio (per period).
    pub in_sample: Vec<f64>,
    /// Its out-of-sample Sharpe ratio (per period).
    pub out_of_sample: Vec<f64>,
    /// Least-squares slope of out-of-sample on in-sample Sharpe over the splits (performance
    /// degradation; 0 when the in-sample Sharpe does not vary).
    pub degradation_slope: f64,
    /// Intercept of that line.
    pub degradation_intercept: f64,
    /// Fraction of splits whose winner loses out of sample (Sharpe below 0).
    pub probability_of_loss: f64,
}

/// Runs a CSCV over `blocks` blocks of `returns`' periods.
///
/// # Errors
/// [`ResearchError::OddBlocks`] unless `blocks` is even and at least 2,
/// [`ResearchError::NoSets`] without sets, [`ResearchError::TooShort`] when half the blocks hold
/// fewer than 2 periods.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::research::{Returns, probability_of_overfitting};
/// // Two sets, one always better: it wins in and out of sample, never overfit.
/// let good: Vec<f64> = (0..40).map(|i| 0.01 + 0.001 * f64::from(i % 3)).collect();
/// let bad: Vec<f64> = (0..40).map(|i| -0.01 + 0.001 * f64::from(i % 5)).collect();
/// let r = Returns::from_values(40, [good, bad].concat())?;
/// let pbo = probability_of_overfitting(&r, 4)?;
/// assert_eq!(pbo.logits.len(), 6); // C(4, 2)
/// assert!(pbo.chosen.iter().all(|&c| c == 0));
/// assert_eq!(pbo.probability, 0.0);
/// # Ok::<(), gridtest::research::ResearchError>(())
/// ```
pub fn probability_of_overfitting(returns: &Returns, blocks: usize) -> Result<Pbo, ResearchError> {
    if blocks < 2 || !blocks.is_multiple_of(2) {
        return Err(ResearchError::OddBlocks(blocks));
    }
    let n = returns.n_sets();
    if n == 0 {
        return Err(ResearchError::NoSets);
    }
    let block_len = returns.n_periods() / blocks;
    if block_len * blocks / 2 < 2 {
        return Err(ResearchError::TooShort {
            needed: 4usize.div_ceil(blocks).max(1) * blocks,
            got: returns.n_periods(),
            why: format!("half of {blocks} blocks must hold at least 2 periods"),
        });
    }
    let summary = BlockSums::of(returns, blocks, block_len);
    let mut splits = Splits::default();
    let mut scratch = Scratch::new(n);
    for in_sample in combinations(blocks, blocks / 2) {
        splits.push(summary.split(&in_sample, &mut scratch));
    }
    Ok(splits.finish(blocks, block_len))
}

/// Per block and set: the sum and sum of squares of the returns minus the set's mean.
struct BlockSums {
    n_sets: usize,
    block_len: usize,
    means: Vec<f64>,
    /// `[block][set]`.
    sums: Vec<f64>,
    squares: Vec<f64>,
    total_sums: Vec<f64>,
    total_squares: Vec<f64>,
}

impl BlockSums {
    fn of(returns: &Returns, blocks: usize, block_len: usize) -> Self {
        let n_sets = returns.n_sets();
        let skip = returns.n_periods() - blocks * block_len;
        let mut this = Self {
            n_sets,
            block_len,
            means: Vec::with_capacity(n_sets),
            sums: vec![0.0; blocks * n_sets],
            squares: vec![0.0; blocks * n_sets],
            total_sums: vec![0.0; n_sets],
            total_squares: vec![0.0; n_sets],
        };
        for (set, series) in returns.sets().enumerate() {
            let used = &series[skip..];
            let mean = used.iter().sum::<f64>() / used.len() as f64;
            this.means.push(mean);
            for (b, block) in used.chunks_exact(block_len).enumerate() {
                let (mut s, mut q) = (0.0, 0.0);
                for &r in block {
                    let d = r - mean;
                    s += d;
                    q += d * d;
                }
                this.sums[b * n_sets + set] = s;
                this.squares[b * n_sets + set] = q;
                this.total_sums[set] += s;
                this.total_squares[set] += q;
            }
        }
        this
    }

    /// The in-sample winner of one split and the out-of-sample figures.
    fn split(&self, in_sample: &[usize], scratch: &mut Scratch) -> Split {
        let n = self.n_sets;
        let (s, q) = (&mut scratch.sums, &mut scratch.squares);
        s.fill(0.0);
        q.fill(0.0);
        for &b in in_sample {
            let row = b * n..(b + 1) * n;
            for (acc, v) in s.iter_mut().zip(&self.sums[row.clone()]) {
                *acc += v;
            }
            for (acc, v) in q.iter_mut().zip(&self.squares[row]) {
                *acc += v;
            }
        }
        let periods = (in_sample.len() * self.block_len) as f64;
        // Sets are compared by `SR·|SR|` (same order as SR, no square root per set).
        let mut best = (0, f64::NEG_INFINITY);
        for set in 0..n {
            let is = signed_square(self.means[set], s[set], q[set], periods);
            if is > best.1 {
                best = (set, is);
            }
            scratch.oos[set] = signed_square(
                self.means[set],
                self.total_sums[set] - s[set],
                self.total_squares[set] - q[set],
                periods,
            );
        }
        let chosen = best.0;
        let oos = scratch.oos[chosen];
        let (mut less, mut equal) = (0usize, 0usize);
        for &x in &scratch.oos {
            less += usize::from(x < oos);
            equal += usize::from(x == oos);
        }
        let rank = less as f64 + (equal as f64 + 1.0) / 2.0;
        let omega = rank / (n as f64 + 1.0);
        let mean = self.means[chosen];
        Split {
            chosen,
            in_sample: sharpe(mean, s[chosen], q[chosen], periods),
            out_of_sample: sharpe(
                mean,
                self.total_sums[chosen] - s[chosen],
                self.total_squares[chosen] - q[chosen],
                periods,
            ),
            logit: (omega / (1.0 - omega)).ln(),
        }
    }
}

/// `SR·|SR|` of the returns [`sharpe`] describes: ordered as the Sharpe ratio, without its
/// square root.
fn signed_square(mean: f64, s: f64, q: f64, periods: f64) -> f64 {
    let variance = (q - s * s / periods) / (periods - 1.0);
    if variance > 0.0 {
        let m = mean + s / periods;
        m * m.abs() / variance
    } else {
        0.0
    }
}

/// Sharpe ratio of `periods` returns of mean `mean + s / periods` whose deviations from `mean`
/// sum to `s` with squares summing to `q`; 0 without variance.
fn sharpe(mean: f64, s: f64, q: f64, periods: f64) -> f64 {
    let variance = (q - s * s / periods) / (periods - 1.0);
    if variance > 0.0 {
        (mean + s / periods) / variance.sqrt()
    } else {
        0.0
    }
}

struct Scratch {
    sums: Vec<f64>,
    squares: Vec<f64>,
    oos: Vec<f64>,
}

impl Scratch {
    fn new(n: usize) -> Self {
        Self {
            sums: vec![0.0; n],
            squares: vec![0.0; n],
            oos: vec![0.0; n],
        }
    }
}

struct Split {
    chosen: usize,
    in_sample: f64,
    out_of_sample: f64,
    logit: f64,
}

#[derive(Default)]
struct Splits {
    logits: Vec<f64>,
    chosen: Vec<usize>,
    in_sample: Vec<f64>,
    out_of_sample: Vec<f64>,
}

impl Splits {
    fn push(&mut self, split: Split) {
        self.logits.push(split.logit);
        self.chosen.push(split.chosen);
        self.in_sample.push(split.in_sample);
        self.out_of_sample.push(split.out_of_sample);
    }

    fn finish(self, blocks: usize, block_len: usize) -> Pbo {
        let c = self.logits.len() as f64;
        let fraction = |count: usize| count as f64 / c;
        let (slope, intercept) = least_squares(&self.in_sample, &self.out_of_sample);
        Pbo {
            blocks,
            block_len,
            probability: fraction(self.logits.iter().filter(|&&l| l <= 0.0).count()),
            probability_of_loss: fraction(self.out_of_sample.iter().filter(|&&s| s < 0.0).count()),
            degradation_slope: slope,
            degradation_intercept: intercept,
            logits: self.logits,
            chosen: self.chosen,
            in_sample: self.in_sample,
            out_of_sample: self.out_of_sample,
        }
    }
}

/// Slope and intercept of the least-squares line of `y` on `x`; slope 0 if `x` is constant.
fn least_squares(x: &[f64], y: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, my - slope * mx)
}

/// Every `k`-subset of `0..n`, in lexicographic order.
fn combinations(n: usize, k: usize) -> impl Iterator<Item = Vec<usize>> {
    let mut next = Some((0..k).collect::<Vec<_>>());
    std::iter::from_fn(move || {
        let current = next.take()?;
        let mut c = current.clone();
        if let Some(i) = (0..k).rev().find(|&i| c[i] != i + n - k) {
            c[i] += 1;
            for j in i + 1..k {
                c[j] = c[j - 1] + 1;
            }
            next = Some(c);
        }
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::combinations;

    #[test]
    fn combinations_are_lexicographic_and_complete() {
        let all: Vec<Vec<usize>> = combinations(4, 2).collect();
        assert_eq!(
            all,
            [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]].map(Vec::from)
        );
        assert_eq!(combinations(16, 8).count(), 12_870);
    }
}
