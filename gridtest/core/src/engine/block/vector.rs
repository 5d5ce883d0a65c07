//! `V` and `M`: `N` lanes of `f64` and of a condition, with the few operations the event step
//! needs. Each operation is a loop of `N` iterations over one instruction, which the compiler
//! unrolls; the values then live in registers and the lanes are packed into vector
//! instructions (with `N` the width of one register: 8 for AVX-512, 4 for AVX2, 2 for SSE2 and
//! NEON) — the portable form of explicit SIMD.

/// `N` lanes of `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct V<const N: usize>(pub(super) [f64; N]);

impl<const N: usize> Default for V<N> {
    fn default() -> Self {
        Self([0.0; N])
    }
}

impl<const N: usize> Default for M<N> {
    fn default() -> Self {
        Self([0; N])
    }
}

/// `N` lanes of a condition: all bits set where it holds, as vector compares produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct M<const N: usize>(pub(super) [i64; N]);

macro_rules! lanewise {
    ($name:ident, $a:ident, $b:ident, $out:ty, $wrap:ident, $e:expr) => {
        #[inline(always)]
        pub(super) fn $name(self, other: V<N>) -> $out {
            let mut out = $wrap::<N>::default();
            for ((o, &$a), &$b) in out.0.iter_mut().zip(&self.0).zip(&other.0) {
                *o = $e;
            }
            out
        }
    };
}

impl<const N: usize> V<N> {
    #[inline(always)]
    pub(super) fn splat(x: f64) -> Self {
        Self([x; N])
    }

    lanewise!(add, a, b, V<N>, V, a + b);
    lanewise!(sub, a, b, V<N>, V, a - b);
    lanewise!(mul, a, b, V<N>, V, a * b);
    lanewise!(div, a, b, V<N>, V, a / b);
    lanewise!(eq, a, b, M<N>, M, -i64::from(a == b));
    lanewise!(ne, a, b, M<N>, M, -i64::from(a != b));
    lanewise!(gt, a, b, M<N>, M, -i64::from(a > b));

    /// `a` where `a < b`, else `b`, lane by lane (so `b` where either is NaN).
    #[inline(always)]
    pub(super) fn min(self, other: V<N>) -> Self {
        let mut out = V::<N>::default();
        for ((o, &a), &b) in out.0.iter_mut().zip(&self.0).zip(&other.0) {
            *o = if a < b { a } else { b };
        }
        out
    }

    /// `min(x, 0)` lane by lane, as `f64::min` (a NaN gives 0).
    #[inline(always)]
    pub(super) fn min0(self) -> Self {
        let mut out = V::<N>::default();
        for (o, &a) in out.0.iter_mut().zip(&self.0) {
            *o = if a < 0.0 { a } else { 0.0 };
        }
        out
    }
}

impl<const N: usize> M<N> {
    #[inline(always)]
    pub(super) fn and(self, other: M<N>) -> M<N> {
        let mut out = M::<N>::default();
        for ((o, &a), &b) in out.0.iter_mut().zip(&self.0).zip(&other.0) {
            *o = a & b;
        }
        out
    }

    #[inline(always)]
    pub(super) fn or(self, other: M<N>) -> M<N> {
        let mut out = M::<N>::default();
        for ((o, &a), &b) in out.0.iter_mut().zip(&self.0).zip(&other.0) {
            *o = a | b;
        }
        out
    }

    #[inline(always)]
    pub(super) fn not(self) -> M<N> {
        let mut out = M::<N>::default();
        for (o, &a) in out.0.iter_mut().zip(&self.0) {
            *o = !a;
        }
        out
    }

    /// `yes` where the condition holds, `no` elsewhere.
    #[inline(always)]
    pub(super) fn select(self, yes: V<N>, no: V<N>) -> V<N> {
        let mut out = V::<N>::default();
        for (((o, &c), &y), &n) in out.0.iter_mut().zip(&self.0).zip(&yes.0).zip(&no.0) {
            *o = if c != 0 { y } else { n };
        }
        out
    }

    /// Whether the condition holds in any lane.
    #[inline(always)]
    pub(super) fn any(self) -> bool {
        self.0.iter().fold(0, |acc, &c| acc | c) != 0
    }
}
