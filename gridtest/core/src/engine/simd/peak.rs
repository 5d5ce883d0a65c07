//! The peak of the vector arithmetic the event step uses, measured: independent chains of
//! `f64` multiplies and of `f64` adds (half each, never fused — the engine does not fuse, to
//! stay bit-identical to the lane-by-lane loop), compiled for each [`SimdLevel`] through
//! [`super::run`]. Enough independent chains that neither unit waits on a latency: six vectors
//! of multiplies and six of adds, twelve of the sixteen AVX2 registers.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::{Inlined, SimdLevel};

/// Independent vectors of multiplies, and as many of adds.
const CHAINS: usize = 6;

/// `rounds` rounds of one multiply on every `f64` of `CHAINS` vectors of `W` lanes and one add
/// on as many others.
struct Chains<const W: usize> {
    rounds: u64,
    factor: f64,
    step: f64,
}

/// The chains' values after the rounds: returned whole (and stored by the caller), which is
/// what lets the compiler pack each chain's lanes into one vector register.
type Values<const W: usize> = ([[f64; W]; CHAINS], [[f64; W]; CHAINS]);

impl<const W: usize> Inlined for Chains<W> {
    type Subject = ();
    type Output = Values<W>;

    #[inline(always)]
    fn call(self, (): &mut ()) -> Values<W> {
        let mut products = [[1.0; W]; CHAINS];
        let mut sums = [[0.0; W]; CHAINS];
        for _ in 0..self.rounds {
            for v in &mut products {
                for x in v.iter_mut() {
                    *x *= self.factor;
                }
            }
            for v in &mut sums {
                for x in v.iter_mut() {
                    *x += self.step;
                }
            }
        }
        (products, sums)
    }
}

/// Floating-point operations of `rounds` rounds at `level`, and the time they took.
fn time(level: SimdLevel, rounds: u64) -> (f64, Duration) {
    let factor = black_box(1.0 + 1e-12);
    let step = black_box(1e-9);
    let started = Instant::now();
    // Lanes per chain: one register of the level.
    let lanes: u64 = match level {
        SimdLevel::Avx512 => {
            black_box(super::run(
                level,
                Chains::<8> {
                    rounds,
                    factor,
                    step,
                },
                &mut (),
            ));
            8
        }
        SimdLevel::Avx2 => {
            black_box(super::run(
                level,
                Chains::<4> {
                    rounds,
                    factor,
                    step,
                },
                &mut (),
            ));
            4
        }
        SimdLevel::Baseline => {
            black_box(super::run(
                level,
                Chains::<2> {
                    rounds,
                    factor,
                    step,
                },
                &mut (),
            ));
            2
        }
    };
    let elapsed = started.elapsed();
    #[allow(
        clippy::cast_precision_loss,
        reason = "operation counts far below 2^53"
    )]
    let flops = (rounds * 2 * CHAINS as u64 * lanes) as f64;
    (flops, elapsed)
}

/// This thread's throughput of the step's arithmetic at `level` (lowered to what the CPU
/// supports), in floating-point operations per second: the best of a few runs of about
/// `budget` each.
pub(super) fn flops(level: SimdLevel, budget: Duration) -> f64 {
    let level = level.min(SimdLevel::detected());
    // Calibrate: double the rounds until a run takes a tenth of the budget.
    let mut rounds = 1_024_u64;
    loop {
        let (_, took) = time(level, rounds);
        if took >= budget / 10 || rounds >= 1 << 40 {
            break;
        }
        rounds *= 2;
    }
    let (_, took) = time(level, rounds);
    let scale = budget.as_secs_f64() / took.as_secs_f64().max(1e-9);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive ratio of durations, far below 2^64 rounds"
    )]
    let rounds = ((rounds as f64 * scale) as u64).max(1);
    (0..3)
        .map(|_| {
            let (flops, took) = time(level, rounds);
            flops / took.as_secs_f64().max(1e-9)
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_operations_of_the_rounds_it_ran() {
        let (flops, took) = time(SimdLevel::Baseline, 1_000);
        assert!((flops - 1_000.0 * 2.0 * 6.0 * 2.0).abs() < 0.5);
        assert!(took > Duration::ZERO);
    }

    #[test]
    fn measures_a_finite_positive_throughput_at_every_level() {
        for level in SimdLevel::supported() {
            let rate = flops(level, Duration::from_millis(10));
            assert!(rate.is_finite() && rate > 1e6, "{level:?}: {rate}");
        }
    }
}
