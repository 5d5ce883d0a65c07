//! Expanding a [`Grid`]: its cartesian product walked as a mixed-radix counter (the last axis
//! varies fastest), positions decoded directly, combinations filtered by the constraints.

use std::ops::Range;
use std::sync::Arc;

use super::constraint::{CmpOp, Operand};
use super::grid::Grid;
use super::sample::Sample;
use super::subset::Subset;
use super::{ParamSet, ParamValue};

/// A constraint with its axes resolved to positions.
#[derive(Debug)]
struct CompiledConstraint {
    left: usize,
    op: CmpOp,
    right: Rhs,
}

#[derive(Debug)]
enum Rhs {
    Axis(usize),
    Value(ParamValue),
}

#[derive(Debug)]
pub(super) struct Compiled {
    names: Vec<Arc<str>>,
    values: Vec<Vec<ParamValue>>,
    constraints: Vec<CompiledConstraint>,
    sample: Option<Sample>,
    subset: Option<Subset>,
}

impl Compiled {
    pub(super) fn new(grid: &Grid) -> Result<Self, ()> {
        let pos = |name: &str| grid.axes().iter().position(|a| a.name == name).ok_or(());
        let constraints = grid
            .constraints()
            .iter()
            .map(|c| {
                Ok(CompiledConstraint {
                    left: pos(&c.left)?,
                    op: c.op,
                    right: match &c.right {
                        Operand::Axis(a) => Rhs::Axis(pos(a)?),
                        Operand::Value(v) => Rhs::Value(v.clone()),
                    },
                })
            })
            .collect::<Result<_, ()>>()?;
        Ok(Self {
            names: grid
                .axes()
                .iter()
                .map(|a| Arc::from(a.name.as_str()))
                .collect(),
            values: grid.axes().iter().map(|a| a.values.clone()).collect(),
            constraints,
            sample: grid.sampled().copied(),
            subset: grid.kept().cloned(),
        })
    }

    fn accepts(&self, idx: &[usize], position: u64) -> bool {
        self.sample.is_none_or(|s| s.contains(position))
            && self.subset.as_ref().is_none_or(|s| s.contains(position))
            && self.satisfies(idx)
    }

    /// Whether the combination `idx` satisfies every constraint.
    fn satisfies(&self, idx: &[usize]) -> bool {
        self.constraints.iter().all(|c| {
            let left = &self.values[c.left][idx[c.left]];
            let right = match &c.right {
                Rhs::Axis(a) => &self.values[*a][idx[*a]],
                Rhs::Value(v) => v,
            };
            compare(left, right).is_some_and(|ord| c.op.holds(ord))
        })
    }

    /// The mixed-radix digits of a position (the last axis varies fastest).
    fn digits(&self, mut position: u64) -> Vec<usize> {
        let mut idx = vec![0; self.values.len()];
        for axis in (0..idx.len()).rev() {
            let radix = self.values[axis].len() as u64;
            idx[axis] = usize::try_from(position % radix).expect("below an axis length");
            position /= radix;
        }
        idx
    }

    fn set(&self, idx: &[usize]) -> ParamSet {
        ParamSet::new(
            idx.iter()
                .enumerate()
                .map(|(a, &i)| (Arc::clone(&self.names[a]), self.values[a][i].clone())),
        )
    }

    /// Advances the mixed-radix counter; false when it wraps around.
    fn advance(&self, idx: &mut [usize]) -> bool {
        for axis in (0..idx.len()).rev() {
            idx[axis] += 1;
            if idx[axis] < self.values[axis].len() {
                return true;
            }
            idx[axis] = 0;
        }
        false
    }
}

/// Orders two values: numbers numerically (ints and floats together), strings and bools among
/// themselves; `None` for incomparable kinds (the constraint then rejects the combination).
fn compare(a: &ParamValue, b: &ParamValue) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (ParamValue::Int(x), ParamValue::Int(y)) => Some(x.cmp(y)),
        (ParamValue::Choice(x), ParamValue::Choice(y)) => Some(x.cmp(y)),
        (ParamValue::Bool(x), ParamValue::Bool(y)) => Some(x.cmp(y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// Positions a count walks between two calls of its `keep_going`.
const COUNT_CHECK_EVERY: u64 = 1 << 18;

/// Parameter sets of a range of positions of a [`Grid`], with their positions; see
/// [`Grid::slice`].
#[derive(Debug)]
pub struct GridSlice {
    compiled: Option<Arc<Compiled>>,
    idx: Vec<usize>,
    next: u64,
    end: u64,
}

impl GridSlice {
    pub(super) fn new(compiled: Option<Compiled>, positions: Range<u64>, product: u64) -> Self {
        let end = positions.end.min(product);
        let next = positions.start.min(end);
        let idx = compiled
            .as_ref()
            .map(|c| {
                if next < end {
                    c.digits(next)
                } else {
                    Vec::new()
                }
            })
            .unwrap_or_default();
        Self {
            compiled: compiled.map(Arc::new),
            idx,
            next,
            end,
        }
    }

    /// Counts the accepted positions left, without building any set.
    pub(super) fn count_accepted(self) -> u64 {
        self.count_accepted_while(&|| true)
            .expect("a count that is never stopped ends")
    }

    /// As [`GridSlice::count_accepted`], asking `keep_going` every [`COUNT_CHECK_EVERY`]
    /// positions: `None` as soon as it says no.
    pub(super) fn count_accepted_while(mut self, keep_going: &dyn Fn() -> bool) -> Option<u64> {
        let Some(c) = self.compiled.as_ref() else {
            return Some(0);
        };
        let mut n = 0;
        while self.next < self.end {
            if self.next.is_multiple_of(COUNT_CHECK_EVERY) && !keep_going() {
                return None;
            }
            n += u64::from(c.accepts(&self.idx, self.next));
            self.next += 1;
            if self.next < self.end {
                c.advance(&mut self.idx);
            }
        }
        Some(n)
    }

    /// The accepted positions left, without building any set.
    pub fn positions(mut self) -> impl Iterator<Item = u64> {
        std::iter::from_fn(move || self.walk(|_, _| None::<()>).map(|(position, _)| position))
    }

    /// Walks to the next accepted position, calling `make` there, and moves past it.
    fn walk<T>(
        &mut self,
        make: impl Fn(&Compiled, &[usize]) -> Option<T>,
    ) -> Option<(u64, Option<T>)> {
        let Self {
            compiled,
            idx,
            next,
            end,
        } = self;
        let c = compiled.as_ref()?;
        while *next < *end {
            let position = *next;
            let accepted = c.accepts(idx, position);
            let made = if accepted { make(c, idx) } else { None };
            *next += 1;
            if *next < *end {
                c.advance(idx);
            }
            if accepted {
                return Some((position, made));
            }
        }
        None
    }
}

impl Iterator for GridSlice {
    type Item = (u64, ParamSet);

    fn next(&mut self) -> Option<(u64, ParamSet)> {
        let (position, set) = self.walk(|c, idx| Some(c.set(idx)))?;
        Some((position, set.expect("made at an accepted position")))
    }
}

/// The parameter set at any position of a [`Grid`], without walking to it; see
/// [`Grid::expander`].
#[derive(Debug)]
pub struct SetExpander(Option<Compiled>);

impl SetExpander {
    pub(super) fn new(compiled: Option<Compiled>) -> Self {
        Self(compiled)
    }

    /// The set at `position` of the cartesian product, if the constraints accept it.
    #[must_use]
    pub fn set_at(&self, position: u64) -> Option<ParamSet> {
        let c = self.0.as_ref()?;
        let product: u64 = c.values.iter().map(|v| v.len() as u64).product();
        if position >= product {
            return None;
        }
        let idx = c.digits(position);
        c.accepts(&idx, position).then(|| c.set(&idx))
    }
}

/// Lazy expansion of a [`Grid`], see [`Grid::iter`].
#[derive(Debug)]
pub struct GridIter(GridSlice);

impl GridIter {
    pub(super) fn new(slice: GridSlice) -> Self {
        Self(slice)
    }
}

impl Iterator for GridIter {
    type Item = ParamSet;

    fn next(&mut self) -> Option<ParamSet> {
        self.0.next().map(|(_, set)| set)
    }
}
