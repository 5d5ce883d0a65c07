//! `Divisor`: many values divided by one whole number, correctly rounded, with a multiply and
//! two fused multiply-adds in place of each division — the shared means' second pass.
//!
//! A vector division is the slowest arithmetic the engine does (about two cycles per `f64`
//! on current cores, one divider per core), and the shared means divide every window sum. For
//! a divisor `b` that is a whole number up to 2⁵⁰ and a value `a` in a wide range around 1
//! (no underflow, no overflow), the correctly rounded quotient is
//!
//! ```text
//! y  = RN(1 / b)              the reciprocal, once per divisor
//! q  = RN(a × y)              within 2 ulp of a / b
//! r  = RN(a − b × q)          exact (one fused multiply-add): a few bits wide
//! q′ = RN(q + r × y)          one fused multiply-add: RN(a / b), bit for bit
//! ```
//!
//! Why `q′` is `a / b` correctly rounded (`u` = ulp(a / b), binary64, round to nearest):
//! `b × y = 1 + ε` with `|ε| ≤ 2⁻⁵³`, so `q` is within `2u` of `a / b`; `r` is a multiple of
//! `u / 2` (`a` is a multiple of `u` since `a ≥ a / b`, and `b × q` of `u / 2`) no larger than
//! `2bu`, so it needs at most `log₂(4b) + 1` bits and is exact. The value the last fused
//! multiply-add rounds is `q + r × y = a / b + (a / b − q) × ε`, within `2⁻⁵² u` of `a / b`.
//! Rounding to nearest changes only at midpoints between doubles, each an odd multiple of
//! `u / 2`; since `a` is a multiple of `u / 2` too, `a − b × midpoint` is zero or at least
//! `u / 2`, so `a / b` is either a midpoint or at least `u / (2b)` from every midpoint. It is
//! never one (that needs a 54-bit quotient of a 53-bit `a` by a whole `b`: only a power of
//! two divides without adding bits, and its quotient is exact), and `u / (2b) > 2⁻⁵² u` for
//! `b < 2⁵¹`: no midpoint lies between `a / b` and the value rounded, so both round alike.
//!
//! The range keeps every step normal and finite: `2⁻⁹⁶⁰ ≤ |a| ≤ 2¹⁰⁰⁰`. Zero, NaN, infinities
//! and values outside it divide as ever (the whole slice, when any value is outside it).

/// Smallest `|a|` of the fused path: `a / b ≥ 2⁻¹⁰¹⁰` stays normal for every `b ≤ 2⁵⁰`.
const LEAST: f64 = f64::from_bits((1023 - 960) << 52);
/// Largest `|a|` of the fused path (2¹⁰⁰⁰: far from overflow in any step).
const MOST: f64 = f64::from_bits((1023 + 1000) << 52);
/// Largest divisor of the fused path (2⁵⁰; the proof needs `b < 2⁵¹`).
const MOST_DIVISOR: f64 = (1u64 << 50) as f64;

/// A divisor and its reciprocal: [`Divisor::divide`] divides a slice by it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Divisor {
    value: f64,
    reciprocal: f64,
    /// Whether `value` is a whole number in `[1, 2⁵⁰]` (the fused path's condition on it).
    whole: bool,
}

impl Divisor {
    pub(super) fn new(value: f64) -> Self {
        Self {
            value,
            reciprocal: 1.0 / value,
            whole: (1.0..=MOST_DIVISOR).contains(&value) && value.fract() == 0.0,
        }
    }

    /// Divides every value of `values` by the divisor in place, bit for bit `x / divisor`:
    /// with fused multiply-adds where `fused` (a CPU level that has them in hardware; the
    /// result is the same without, only slower) and the divisor and every value allow it,
    /// else with divisions.
    #[inline(always)]
    pub(super) fn divide(&self, values: &mut [f64], fused: bool) {
        let (b, y) = (self.value, self.reciprocal);
        if fused && self.whole && all_within(values) {
            for a in values {
                let q = *a * y;
                let r = (-q).mul_add(b, *a);
                *a = r.mul_add(y, q);
            }
        } else {
            for a in values {
                *a /= b;
            }
        }
    }
}

/// Whether every `|x|` of `values` lies in `[LEAST, MOST]` (never for NaN): integer
/// arithmetic on the bits, one loop without compares, so that it vectorises at any level.
#[inline(always)]
fn all_within(values: &[f64]) -> bool {
    let least = LEAST.to_bits().cast_signed();
    let span = MOST.to_bits().cast_signed() - least;
    // `t` in `[0, span]` exactly when both `t` and `span − t` are non-negative.
    let sign = values.iter().fold(0i64, |acc, &x| {
        let t = x.abs().to_bits().cast_signed() - least;
        acc | t | (span - t)
    });
    sign >= 0
}

#[cfg(test)]
mod tests {
    use super::{Divisor, LEAST, MOST, MOST_DIVISOR, all_within};
    use crate::params::mix;

    /// SplitMix64 (the grid sampler's finaliser over a Weyl sequence): reproducible values.
    struct Mix(u64);

    impl Mix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            mix(self.0)
        }

        /// A double with a uniform mantissa and sign, and an exponent in `[low, high)`.
        fn value(&mut self, low: i64, high: i64) -> f64 {
            let bits = self.next();
            let span = u64::try_from(high - low).unwrap();
            let exponent = low + i64::try_from(bits % span).unwrap() + 1023;
            let bits = (u64::try_from(exponent).unwrap() << 52)
                | (self.next() & ((1 << 52) - 1))
                | (bits & (1 << 63));
            f64::from_bits(bits)
        }
    }

    fn check(divisor: f64, values: &[f64]) {
        let d = Divisor::new(divisor);
        let mut fused = values.to_vec();
        d.divide(&mut fused, true);
        for (&a, q) in values.iter().zip(&fused) {
            assert_eq!(q.to_bits(), (a / divisor).to_bits(), "{a:e} / {divisor}");
        }
    }

    #[test]
    fn the_range_is_what_the_constants_say() {
        assert_eq!(LEAST, 2f64.powi(-960));
        assert_eq!(MOST, 2f64.powi(1000));
        assert_eq!(MOST_DIVISOR, 2f64.powi(50));
        assert!(all_within(&[
            LEAST, -LEAST, MOST, -MOST, 1.0, 1e-200, 1e250
        ]));
        for outside in [
            0.0,
            -0.0,
            LEAST.next_down(),
            MOST.next_up(),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            assert!(!all_within(&[1.0, outside, 2.0]), "{outside:e}");
        }
        assert!(all_within(&[]));
    }

    /// Every window from 1 to 3 000 and windows around powers of two up to 2⁵⁰, against
    /// random values over the whole fused range and near the quotients' midpoints.
    #[test]
    fn fused_quotients_are_the_divisions_bit_for_bit() {
        let mut mix = Mix(15);
        let mut windows: Vec<f64> = (1..=3000u32).map(f64::from).collect();
        for k in 2..=50 {
            let p = 2f64.powi(k);
            windows.extend([p - 1.0, p, p + 1.0, p - 3.0]);
        }
        windows.extend((0..200).map(|_| (mix.next() % (1 << 50)) as f64 + 1.0));
        for &b in &windows {
            let mut values: Vec<f64> = (0..300).map(|_| mix.value(-960, 1000)).collect();
            // Prices and their window sums: the engine's own case.
            values.extend((0..300).map(|_| mix.value(-2, 30)));
            // `a` whose quotient lies next to a midpoint `q + u / 2`: `b × (q + u / 2)` rounded
            // once (`b × u / 2` is exact), and its neighbours.
            for _ in 0..300 {
                let q = mix.value(-50, 60);
                let half = (q.next_up() - q) / 2.0;
                let near = b.mul_add(q, b * half);
                for a in [near, near.next_up(), near.next_down()] {
                    if all_within(&[a]) {
                        values.push(a);
                    }
                }
            }
            check(b, &values);
        }
    }

    /// Values and divisors outside the fused path divide as ever, sign of zero and NaN
    /// included.
    #[test]
    fn outside_the_range_it_divides() {
        let odd = [
            0.0,
            -0.0,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::INFINITY,
            3.5,
        ];
        check(7.0, &odd);
        let mut nan = [1.0, f64::NAN, 2.0];
        Divisor::new(3.0).divide(&mut nan, true);
        assert!(nan[1].is_nan());
        assert_eq!((nan[0], nan[2]), (1.0 / 3.0, 2.0 / 3.0));
        for b in [0.5, 2.5, MOST_DIVISOR * 2.0 + 1.0, 1e300, 0.0, f64::NAN] {
            check(b, &[1.0, 3.0, 1e10, 7.25]);
        }
        assert!(!Divisor::new(2.5).whole && Divisor::new(MOST_DIVISOR).whole);
    }
}
