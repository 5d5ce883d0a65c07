//! `SimdLevel`: which vector instructions the lane blocks' event step runs with, chosen at run
//! time from what the CPU reports — the engine's only `unsafe`.
//!
//! The step itself ([`Block::step_events`]) is plain Rust over fixed-size arrays, written so
//! that the compiler vectorises it across the lanes of a block (selects instead of branches).
//! A build for baseline x86-64 would vectorise it with SSE2 only, so it is compiled three times
//! here — baseline (2 lanes per register), AVX2 (4) and AVX-512 (8) — and each call runs the
//! best copy the CPU supports. The baseline copy is what a CPU without AVX2 runs, and what
//! aarch64 runs (NEON is in its baseline): even with SSE2's two lanes per register, the blocks
//! are faster than one lane at a time (`docs/decisions.md`, record 8). For aarch64 the compiler
//! packs the means into NEON and leaves the step in scalar registers.
//!
//! The lanes' decisions (`block::Decide`, the strategy's own loop over a chunk) go through
//! [`run`] the same way, so that a simple strategy's loop is vectorised across events with
//! the level's instructions (masked loads for a `&&`, which SSE2 lacks).
//!
//! `GRIDTEST_SIMD` (`baseline`, `avx2` or `avx512`) lowers the level, e.g. to measure each
//! instruction set on one machine (`examples/w1_bench.rs`); it never raises it above what the
//! CPU reports.

use std::sync::OnceLock;
use std::time::Duration;

use super::block::{Block, Growth, Lanes, Targets};

mod peak;

/// A vector instruction set the engine's event step can run with.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::engine::SimdLevel;
/// let level = SimdLevel::active();
/// assert!(level <= SimdLevel::detected());
/// println!("event step: {}", level.name());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// What every CPU of the target has (x86-64: SSE2; aarch64: NEON).
    Baseline,
    /// x86-64 AVX2 (with FMA, which every AVX2 CPU has): four `f64` per instruction.
    Avx2,
    /// x86-64 AVX-512 (F, VL, DQ; and FMA): eight `f64` per instruction.
    Avx512,
}

impl SimdLevel {
    /// The name `GRIDTEST_SIMD` takes: `baseline`, `avx2` or `avx512`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
        }
    }

    /// The best level this CPU supports.
    #[must_use]
    pub fn detected() -> Self {
        static DETECTED: OnceLock<SimdLevel> = OnceLock::new();
        *DETECTED.get_or_init(detect)
    }

    /// The level the engine uses: [`SimdLevel::detected`], lowered by `GRIDTEST_SIMD` when set
    /// (an unknown or unsupported value is ignored).
    #[must_use]
    pub fn active() -> Self {
        static ACTIVE: OnceLock<SimdLevel> = OnceLock::new();
        *ACTIVE.get_or_init(|| {
            let wanted = std::env::var("GRIDTEST_SIMD").ok();
            let wanted = wanted.as_deref().and_then(Self::parse);
            wanted.map_or(Self::detected(), |w| w.min(Self::detected()))
        })
    }

    /// Every level this CPU supports, lowest first.
    #[must_use]
    pub fn supported() -> Vec<Self> {
        [Self::Baseline, Self::Avx2, Self::Avx512]
            .into_iter()
            .filter(|l| *l <= Self::detected())
            .collect()
    }

    /// Measures this thread's peak throughput of the event step's arithmetic with this level's
    /// instructions (lowered to what the CPU supports): independent `f64` multiplies and adds,
    /// half each and never fused, as the step does them; floating-point operations per second,
    /// the best of three runs of about `budget` each. The compute roof of a roofline
    /// (`examples/roofline.rs`).
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use std::time::Duration;
    /// use gridtest::engine::SimdLevel;
    /// let rate = SimdLevel::active().peak_flops(Duration::from_millis(5));
    /// assert!(rate > 0.0);
    /// ```
    #[must_use]
    pub fn peak_flops(self, budget: Duration) -> f64 {
        peak::flops(self, budget)
    }

    /// The level named `name` (see [`SimdLevel::name`]).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Baseline, Self::Avx2, Self::Avx512]
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> SimdLevel {
    let fma = std::arch::is_x86_feature_detected!("fma");
    if fma
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512dq")
    {
        SimdLevel::Avx512
    } else if fma && std::arch::is_x86_feature_detected!("avx2") {
        SimdLevel::Avx2
    } else {
        SimdLevel::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> SimdLevel {
    SimdLevel::Baseline
}

/// [`Block::step_events`] compiled for `level` (lowered to what the CPU supports).
#[inline]
#[allow(
    unsafe_code,
    reason = "calling a function compiled for AVX2 or AVX-512 is sound only on a CPU that has \
              them: checked at run time just before, each call with its SAFETY note"
)]
pub(super) fn step_events<const INTRABAR: bool>(
    level: SimdLevel,
    block: &mut Block,
    rows: (&Targets, usize),
    ratios: (&[f64], &[f64], &[Growth]),
    cost: f64,
) {
    #[cfg(target_arch = "x86_64")]
    match level.min(SimdLevel::detected()) {
        // SAFETY: the CPU reported AVX-512 F, VL and DQ (`detect`), which is all `avx512`
        // enables.
        SimdLevel::Avx512 => return unsafe { x86::avx512::<INTRABAR>(block, rows, ratios, cost) },
        // SAFETY: the CPU reported AVX2 (`detect`), which is all `avx2` enables.
        SimdLevel::Avx2 => return unsafe { x86::avx2::<INTRABAR>(block, rows, ratios, cost) },
        SimdLevel::Baseline => {}
    }
    let _ = level;
    block.step_events::<INTRABAR, 2>(rows, ratios, cost);
}

/// [`Lanes::hold_long`] (a run of events in which every lane holds, flat or long its whole
/// equity: most of W1's events) as a function of its own for AVX2 and AVX-512 widths.
///
/// Inlined into the step, whose trade path needs many vector registers, the loop kept three
/// of its per-lane sums on the stack (a load and a store per event each; perf: the hottest
/// instructions of the AVX2 step). On its own the loop holds all its state in registers; a
/// core without store-to-load renaming paid that path's latency on every event. The call is
/// once per run of events, not per event.
#[inline]
#[allow(
    unsafe_code,
    reason = "calling a function compiled for AVX2 or AVX-512 is sound only on a CPU that has \
              them: checked at run time just before, each call with its SAFETY note"
)]
pub(super) fn hold_long<const N: usize>(lanes: &mut Lanes<N>, growth: &[Growth]) {
    #[cfg(target_arch = "x86_64")]
    {
        let level = SimdLevel::detected();
        if N == 8 && level >= SimdLevel::Avx512 {
            // SAFETY: the CPU reported AVX-512 F, VL and DQ (`detect`), which is all
            // `hold_long_avx512` enables.
            return unsafe { x86::hold_long_avx512::<N>(lanes, growth) };
        }
        if N == 4 && level >= SimdLevel::Avx2 {
            // SAFETY: the CPU reported AVX2 (`detect`), which is all `hold_long_avx2` enables.
            return unsafe { x86::hold_long_avx2::<N>(lanes, growth) };
        }
    }
    lanes.hold_long(growth);
}

/// Work that [`run`] compiles for a vector level: `call` must be `#[inline(always)]`, so that
/// it is compiled into each level's copy (a closure would not reliably be).
///
/// The work's `Subject` (a lane's strategy) is handed to each level's copy as a parameter of
/// its own, not as a field of the work: the compiler then knows it is valid for the whole
/// call and touched by nothing else, so that the loop loads the fields it reads once (as a
/// field, a field read after a branch was gathered again in every vector of events).
pub(super) trait Inlined {
    /// What the work changes besides its own fields (`()` for none).
    type Subject;
    /// What the work returns.
    type Output;
    /// Does the work.
    fn call(self, subject: &mut Self::Subject) -> Self::Output;
}

/// Runs `work` compiled for `level` (lowered to what the CPU supports): the lanes' decisions,
/// so that the compiler can vectorise a simple strategy's loop with the level's instructions
/// (AVX2 and AVX-512 also load under a mask, which a strategy's `&&` needs), and the shared
/// means' fill (whose divisions use fused multiply-adds where [`fused_multiply_add`] says).
#[inline]
#[allow(
    unsafe_code,
    reason = "calling a function compiled for AVX2 or AVX-512 is sound only on a CPU that has \
              them: checked at run time just before, each call with its SAFETY note"
)]
pub(super) fn run<W: Inlined>(level: SimdLevel, work: W, subject: &mut W::Subject) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    match level.min(SimdLevel::detected()) {
        // SAFETY: the CPU reported AVX-512 F, VL and DQ and FMA (`detect`), which is all
        // `run_avx512` enables.
        SimdLevel::Avx512 => return unsafe { x86::run_avx512(work, subject) },
        // SAFETY: the CPU reported AVX2 and FMA (`detect`), which is all `run_avx2` enables.
        SimdLevel::Avx2 => return unsafe { x86::run_avx2(work, subject) },
        SimdLevel::Baseline => {}
    }
    let _ = level;
    baseline(work, subject)
}

/// Whether [`run`]'s copy for `level` has fused multiply-adds in hardware (`f64::mul_add`
/// one instruction, not a call into the C library's `fma`): AVX2 and AVX-512 (which the
/// CPU reports only with FMA, see `detect`), and aarch64's baseline.
pub(super) fn fused_multiply_add(level: SimdLevel) -> bool {
    if cfg!(target_arch = "x86_64") {
        level.min(SimdLevel::detected()) >= SimdLevel::Avx2
    } else {
        cfg!(target_arch = "aarch64")
    }
}

/// `0..n`, each index also telling the compiler that it is below `n`.
///
/// A loop over `0..n` whose body reads a slice of length `n` checks the index against `n`;
/// the compiler drops that check only where it can prove `j < n`, which it does not always
/// do in a large function (the lanes' decisions inside [`run`]'s copies: a shared series'
/// read stayed a select, which the vectorised loop does as masked loads and blends).
#[inline(always)]
#[allow(
    unsafe_code,
    reason = "an assumption that holds by construction: a range `0..n` yields only `j < n`"
)]
pub(super) fn below(n: usize) -> impl Iterator<Item = usize> {
    // `map`, not `inspect`: the same code, but with `inspect` the AVX2 build of W1 ran about
    // 0.92× as fast (the step's code laid out differently).
    #[allow(clippy::manual_inspect, reason = "measured faster, see above")]
    (0..n).map(move |j| {
        // SAFETY: `j` comes from the range `0..n`, so `j < n`.
        unsafe { std::hint::assert_unchecked(j < n) };
        j
    })
}

/// The baseline copy of [`run`]: a function of its own, for the same reason as the others.
#[inline(never)]
fn baseline<W: Inlined>(work: W, subject: &mut W::Subject) -> W::Output {
    work.call(subject)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, Growth, Inlined, Lanes, Targets};

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma")]
    pub(super) fn run_avx512<W: Inlined>(work: W, subject: &mut W::Subject) -> W::Output {
        work.call(subject)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn run_avx2<W: Inlined>(work: W, subject: &mut W::Subject) -> W::Output {
        work.call(subject)
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    #[inline(never)]
    pub(super) fn hold_long_avx512<const N: usize>(lanes: &mut Lanes<N>, growth: &[Growth]) {
        lanes.hold_long(growth);
    }

    #[target_feature(enable = "avx2")]
    #[inline(never)]
    pub(super) fn hold_long_avx2<const N: usize>(lanes: &mut Lanes<N>, growth: &[Growth]) {
        lanes.hold_long(growth);
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    pub(super) fn avx512<const INTRABAR: bool>(
        block: &mut Block,
        rows: (&Targets, usize),
        ratios: (&[f64], &[f64], &[Growth]),
        cost: f64,
    ) {
        block.step_events::<INTRABAR, 8>(rows, ratios, cost);
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn avx2<const INTRABAR: bool>(
        block: &mut Block,
        rows: (&Targets, usize),
        ratios: (&[f64], &[f64], &[Growth]),
        cost: f64,
    ) {
        block.step_events::<INTRABAR, 4>(rows, ratios, cost);
    }
}
