use proptest::prelude::*;

use super::{Drawdown, METRIC_COLUMNS, Metrics, Moments, RankMetric, bitwise_equal};

fn two_pass(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

proptest! {
    #[test]
    fn welford_matches_two_pass(xs in proptest::collection::vec(-1e3f64..1e3, 2..200)) {
        let mut m = Moments::default();
        xs.iter().for_each(|&x| m.update(x));
        let (mean, var) = two_pass(&xs);
        prop_assert!((m.mean() - mean).abs() <= 1e-9 * (1.0 + mean.abs()));
        prop_assert!((m.sample_variance() - var).abs() <= 1e-9 * (1.0 + var));
    }

    /// `merge` is associative and agrees with one pass over the concatenation.
    #[test]
    fn merge_is_associative(
        a in proptest::collection::vec(-1e3f64..1e3, 0..50),
        b in proptest::collection::vec(-1e3f64..1e3, 0..50),
        c in proptest::collection::vec(-1e3f64..1e3, 0..50),
    ) {
        let acc = |xs: &[f64]| { let mut m = Moments::default(); xs.iter().for_each(|&x| m.update(x)); m };
        let (ma, mb, mc) = (acc(&a), acc(&b), acc(&c));
        let mut left = ma; left.merge(&mb); left.merge(&mc);
        let mut bc = mb; bc.merge(&mc);
        let mut right = ma; right.merge(&bc);
        let all: Vec<f64> = a.iter().chain(&b).chain(&c).copied().collect();
        let whole = acc(&all);
        prop_assert_eq!(left.count(), whole.count());
        prop_assert_eq!(right.count(), whole.count());
        for m in [left, right] {
            prop_assert!((m.mean() - whole.mean()).abs() <= 1e-9 * (1.0 + whole.mean().abs()));
            prop_assert!((m.m2() - whole.m2()).abs() <= 1e-7 * (1.0 + whole.m2()));
        }
    }

    /// The episode-based drawdown equals the per-observation definition bit for bit.
    #[test]
    fn drawdown_matches_definition(steps in proptest::collection::vec(0.9f64..1.1, 1..300)) {
        let mut e = 1.0;
        let mut dd = Drawdown::new(1.0);
        let (mut peak, mut naive) = (1.0f64, 0.0f64);
        for g in steps {
            e *= g;
            dd.update(e);
            peak = peak.max(e);
            naive = naive.max(1.0 - e / peak);
        }
        prop_assert_eq!(dd.finish().to_bits(), naive.to_bits());
    }
}

#[test]
fn the_metric_table_reads_every_field_once_in_output_order() {
    let m = Metrics {
        n_ticks: 1,
        trades: 2,
        total_return: 3.0,
        max_drawdown: 4.0,
        sharpe: 5.0,
        sortino: 6.0,
        round_trips: 7,
        win_rate: 8.0,
        profit_factor: 9.0,
        exposure: 10.0,
        open_at_end: true,
    };
    let values: Vec<f64> = METRIC_COLUMNS
        .iter()
        .map(|c| (c.value)(&m).as_f64())
        .collect();
    let mut want: Vec<f64> = (1..=10).map(f64::from).collect();
    want.push(1.0); // open_at_end
    assert_eq!(values, want);
    assert_eq!(crate::metrics::metrics_from(|_, c| (c.value)(&m)), m);
    let mut other = m;
    other.exposure = f64::from_bits(10.0f64.to_bits() + 1);
    assert!(bitwise_equal(&m, &m) && !bitwise_equal(&m, &other));
    assert_eq!(RankMetric::ProfitFactor.of(&m), 9.0);
}
