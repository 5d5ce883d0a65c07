//! Sharpe and Sortino ratios from daily equity, as backtesting.py computes them.

/// Sharpe and Sortino ratios of the equity at each date's close (`closes`, one per date in
/// order), with backtesting.py's arithmetic (`backtesting/_stats.py`): daily returns
/// `r = closes[i] / closes[i−1] − 1`, their geometric mean `g = exp(Σ ln(1 + r) / n) − 1` (0 if
/// some `1 + r ≤ 0`), the annualised return `R = (1 + g)^D − 1` and volatility
/// `σ = √((var(r) + (1 + g)²)^D − (1 + g)^{2D})` (variance with ddof 1), then
/// `sharpe = (R − rf) / σ` and `sortino = (R − rf) / (√mean(min(r, 0)²) · √D)`. Both are 0 when
/// their denominator is 0 or there are fewer than two dates.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::metrics::daily_ratios;
/// let closes = [100.0, 101.0, 100.5, 102.0];
/// let (sharpe, sortino) = daily_ratios(&closes, 252.0, 0.0);
/// assert!(sharpe > 0.0 && sortino > sharpe);
/// ```
#[must_use]
pub fn daily_ratios(closes: &[f64], days_per_year: f64, risk_free: f64) -> (f64, f64) {
    let n = closes.len().saturating_sub(1);
    if n == 0 {
        return (0.0, 0.0);
    }
    let returns = closes.windows(2).map(|w| w[1] / w[0] - 1.0);
    let (mut log_sum, mut sum, mut down2, mut ruined) = (0.0, 0.0, 0.0, false);
    for r in returns.clone() {
        let growth = r + 1.0;
        ruined |= growth <= 0.0;
        log_sum += growth.ln();
        sum += r;
        let d = r.min(0.0);
        down2 += d * d;
    }
    let count = n as f64;
    let g = if ruined {
        0.0
    } else {
        (log_sum / count).exp() - 1.0
    };
    let mean = sum / count;
    let var = if n > 1 {
        returns.map(|r| (r - mean) * (r - mean)).sum::<f64>() / (count - 1.0)
    } else {
        f64::NAN
    };
    let annual = (1.0 + g).powf(days_per_year) - 1.0;
    let vol = ((var + (1.0 + g).powi(2)).powf(days_per_year) - (1.0 + g).powf(2.0 * days_per_year))
        .sqrt();
    let ratio = |num: f64, den: f64| {
        if den > 0.0 && den.is_finite() {
            num / den
        } else {
            0.0
        }
    };
    let sharpe = ratio(annual - risk_free, vol);
    let sortino = ratio(
        annual - risk_free,
        (down2 / count).sqrt() * days_per_year.sqrt(),
    );
    (sharpe, sortino)
}
