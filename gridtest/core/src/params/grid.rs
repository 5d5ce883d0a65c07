//! `Grid`: axes of values and constraints between them, expanded lazily into parameter sets.
//!
//! The grid is data, not code: axes hold explicit values and constraints are comparisons
//! (`fast < slow`, `threshold >= 0.5`, `mode != "short"`), so a grid serialises into a sweep's
//! spec and expands identically on every node. Expansion walks the cartesian product in
//! declaration order (the last axis varies fastest) and skips combinations a constraint rejects;
//! [`Grid::len`] counts them exactly before anything runs.

use std::collections::BTreeSet;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::constraint::{Constraint, Operand};
use super::expand::{Compiled, GridIter, GridSlice, SetExpander};
use super::sample::Sample;
use super::subset::Subset;
use super::{ParamField, ParamKind, ParamSet, ParamValue};

/// One axis: a parameter name and the values it takes, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// Parameter name (a field of the strategy's `Params`).
    pub name: String,
    /// Values, in the order they are swept.
    pub values: Vec<ParamValue>,
}

/// A parameter grid: axes and constraints.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::Grid;
/// let grid = Grid::new()
///     .axis("fast", (5..=100).step_by(5))
///     .axis("slow", (20..=1000).step_by(20))
///     .constrain("fast < slow");
/// assert_eq!(grid.len(), 955);
/// let first = grid.iter().next().unwrap();
/// assert_eq!(first.to_string(), "fast=5 slow=20");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    axes: Vec<Axis>,
    constraints: Vec<Constraint>,
    /// Expressions that did not parse, reported by [`Grid::check`].
    #[serde(skip)]
    unparsed: Vec<(String, String)>,
    /// A seeded random sample of the sets, when only some are swept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sample: Option<Sample>,
    /// The positions kept, when only an explicit list of the sets is swept (the survivors of a
    /// rung of successive halving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subset: Option<Subset>,
}

/// The most combinations (before constraints) a sweep's grid may have: planning walks each of
/// them once, at tens of millions a second, so a sweep at the limit plans in about a minute
/// (and a signal stops it at once).
pub const MAX_COMBINATIONS: u64 = 1 << 32;

/// One thing wrong with a grid.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GridProblem {
    /// The grid expands to no parameter set at all.
    #[error("the grid is empty: {0}")]
    Empty(String),
    /// An axis has no values.
    #[error("axis `{0}` has no values")]
    EmptyAxis(String),
    /// Two axes share a name.
    #[error("axis `{0}` is declared twice")]
    DuplicateAxis(String),
    /// More combinations than a sweep walks: planning visits every combination (to cut the
    /// work into units), so a grid past [`MAX_COMBINATIONS`] would plan for minutes to hours.
    #[error(
        "the grid has {combinations} combinations ({shape}), more than the {max} a sweep plans: \
         constrain or coarsen its axes, or sweep a random sample of it (--random N on a \
         coarser grid)",
        max = MAX_COMBINATIONS
    )]
    TooLarge {
        /// Combinations of the cartesian product (`u64::MAX` if past it).
        combinations: u64,
        /// Each axis with its number of values, `a 100 × b 2000`.
        shape: String,
    },
    /// An axis that the strategy's parameters do not have.
    #[error("axis `{axis}` is not a parameter of the strategy (its parameters: {expected})")]
    UnknownAxis {
        /// The axis.
        axis: String,
        /// The strategy's parameter names.
        expected: String,
    },
    /// A strategy parameter without an axis.
    #[error("parameter `{field}: {rust_type}` has no axis in the grid")]
    MissingAxis {
        /// The field.
        field: String,
        /// Its Rust type.
        rust_type: String,
    },
    /// An axis value of the wrong kind or out of the field type's range.
    #[error("axis `{axis}` value {value} ({kind}) does not fit parameter `{axis}: {rust_type}`")]
    TypeMismatch {
        /// The axis.
        axis: String,
        /// The offending value.
        value: String,
        /// The value's kind.
        kind: ParamKind,
        /// The field's Rust type.
        rust_type: String,
    },
    /// A choice the field's enum does not have (a typo).
    #[error("axis `{axis}` value `{value}` is not one of `{axis}`'s choices: {choices}")]
    NotAChoice {
        /// The axis.
        axis: String,
        /// The offending value.
        value: String,
        /// The choices the field accepts.
        choices: String,
    },
    /// A NaN or infinite float.
    #[error("axis `{axis}` holds a non-finite value {value}")]
    NonFinite {
        /// The axis.
        axis: String,
        /// The value.
        value: String,
    },
    /// A constraint that does not parse or names an unknown axis.
    #[error("constraint `{expr}`: {reason}")]
    BadConstraint {
        /// The expression.
        expr: String,
        /// What is wrong.
        reason: String,
    },
}

/// Everything wrong with a grid, all reported at once.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid parameter grid:{}", .0.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
pub struct GridError(pub Vec<GridProblem>);

impl Grid {
    /// An empty grid.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an axis.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let g = Grid::new()
    ///     .axis("window", [10, 20, 50])
    ///     .axis("threshold", [0.5, 1.0])
    ///     .axis("long_only", [true, false])
    ///     .axis("venue", ["lit", "dark"]);
    /// assert_eq!(g.len(), 24);
    /// ```
    #[must_use]
    pub fn axis<V: Into<ParamValue>>(
        mut self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.axes.push(Axis {
            name: name.into(),
            values: values.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Adds a constraint written as an expression, see [`Constraint::parse`]. An expression that
    /// does not parse is reported by [`Grid::check`].
    #[must_use]
    pub fn constrain(mut self, expr: &str) -> Self {
        match Constraint::parse(expr) {
            Ok(c) => self.constraints.push(c),
            Err(reason) => self.unparsed.push((expr.to_owned(), reason)),
        }
        self
    }

    /// Adds a constraint.
    #[must_use]
    pub fn with_constraint(mut self, constraint: Constraint) -> Self {
        self.constraints.push(constraint);
        self
    }

    /// Keeps a seeded random sample of exactly `n` of the sets the axes and constraints give (all
    /// of them if there are fewer): the `random` search mode, for grids too large to sweep
    /// exhaustively. The same seed gives the same sample on every node; the sample is part of
    /// the grid (and so of the sweep's id). Choosing costs one pass over the combinations.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let full = Grid::new().axis("a", 0..100).axis("b", 0..100).constrain("a < b");
    /// let some = full.clone().sample(50, 7);
    /// assert_eq!(some.len(), 50);
    /// assert!(some.iter().all(|s| full.iter().any(|f| f == s)));
    /// assert_eq!(some, full.clone().sample(50, 7));
    /// assert_ne!(some, full.clone().sample(50, 8));
    /// ```
    #[must_use]
    pub fn sample(mut self, n: u64, seed: u64) -> Self {
        self.sample = None;
        let positions = self.slice(0..self.product_len() as u64).positions();
        self.sample = Some(Sample::choose(n, seed, positions));
        self
    }

    /// Keeps only the sets at `positions` of the cartesian product (those the axes, constraints
    /// and sample accept): the survivors of a rung of successive halving. The positions are part
    /// of the grid, so of a sweep's spec.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let grid = Grid::new().axis("a", [1, 2, 3]).axis("b", [10, 20]).constrain("b > 10");
    /// let kept = grid.keep(vec![5, 3, 2]);
    /// let sets: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
    /// assert_eq!(sets, ["a=2 b=20", "a=3 b=20"], "position 2 is rejected by the constraint");
    /// assert_eq!(kept.len(), 2);
    /// ```
    #[must_use]
    pub fn keep(mut self, positions: Vec<u64>) -> Self {
        self.subset = Some(Subset::from(positions));
        self
    }

    /// The positions kept, if only an explicit list of the sets is swept (see [`Grid::keep`]).
    #[must_use]
    pub fn kept(&self) -> Option<&Subset> {
        self.subset.as_ref()
    }

    /// The same grid without its list of kept positions (what a scorer needs to build the sets
    /// of units that list their positions).
    #[must_use]
    pub fn without_kept(&self) -> Self {
        Self {
            subset: None,
            ..self.clone()
        }
    }

    /// The sample kept, if only some sets are swept (see [`Grid::sample`]).
    #[must_use]
    pub fn sampled(&self) -> Option<&Sample> {
        self.sample.as_ref()
    }

    /// The axes, in declaration order.
    #[must_use]
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The constraints.
    #[must_use]
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    /// Number of combinations before constraints.
    #[must_use]
    pub fn product_len(&self) -> usize {
        self.axes
            .iter()
            .map(|a| a.values.len())
            .fold(1usize, usize::saturating_mul)
    }

    /// Exact number of parameter sets the grid expands to (constraints applied).
    ///
    /// Costs one pass over the combinations of the axes the constraints name (the others only
    /// multiply the count), without building any parameter set; a sampled grid or a kept list
    /// is walked whole.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len_while(|| true)
            .expect("a count that is never stopped ends")
    }

    /// Whether the grid expands to nothing (walks only until its first set).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slice(0..self.product_len() as u64)
            .positions()
            .next()
            .is_none()
    }

    /// Expands lazily, in declaration order (the last axis varies fastest).
    ///
    /// A grid whose constraints name unknown axes expands to nothing; [`Grid::check`] says why.
    #[must_use]
    pub fn iter(&self) -> GridIter {
        GridIter::new(self.slice(0..self.product_len() as u64))
    }

    /// The parameter sets at `positions` of the cartesian product (0 is the first
    /// combination, [`Grid::product_len`] is past the last), constraints applied, each with its
    /// position. A position names the same set on every node, so work can be cut into ranges
    /// of positions without expanding the grid.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let grid = Grid::new().axis("a", [1, 2, 3]).axis("b", [10, 20]).constrain("b > 10");
    /// let sets: Vec<String> = grid.slice(1..5).map(|(p, s)| format!("{p}:{s}")).collect();
    /// assert_eq!(sets, ["1:a=1 b=20", "3:a=2 b=20"]);
    /// ```
    #[must_use]
    pub fn slice(&self, positions: Range<u64>) -> GridSlice {
        GridSlice::new(
            Compiled::new(self).ok(),
            positions,
            self.product_len() as u64,
        )
    }

    /// The parameter set at `position` of the cartesian product, if the constraints accept it.
    #[must_use]
    pub fn set_at(&self, position: u64) -> Option<ParamSet> {
        self.slice(position..position.saturating_add(1))
            .next()
            .map(|(_, set)| set)
    }

    /// Builds the parameter set at any position directly, for callers that visit many
    /// positions out of order ([`Grid::set_at`] prepares the grid on every call).
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let grid = Grid::new().axis("a", [1, 2, 3]).axis("b", [10, 20]).constrain("b > 10");
    /// let at = grid.expander();
    /// assert_eq!(at.set_at(3).unwrap().to_string(), "a=2 b=20");
    /// assert!(at.set_at(2).is_none(), "rejected by the constraint");
    /// ```
    #[must_use]
    pub fn expander(&self) -> SetExpander {
        SetExpander::new(Compiled::new(self).ok())
    }

    /// How many positions in `positions` the constraints accept (without building any set).
    #[must_use]
    pub fn count_in(&self, positions: Range<u64>) -> u64 {
        self.slice(positions).count_accepted()
    }

    /// Checks the grid against a strategy's parameter fields and reports every problem at once:
    /// an empty grid or axis, duplicate, unknown or missing axes, values of the wrong type,
    /// non-finite floats and bad constraints.
    ///
    /// # Errors
    /// [`GridError`] listing each problem.
    pub fn check(&self, fields: &[ParamField]) -> Result<(), GridError> {
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for axis in &self.axes {
            if !seen.insert(axis.name.as_str()) {
                problems.push(GridProblem::DuplicateAxis(axis.name.clone()));
            }
            if axis.values.is_empty() {
                problems.push(GridProblem::EmptyAxis(axis.name.clone()));
            }
            for v in axis.values.iter().filter(|v| !v.is_valid()) {
                problems.push(GridProblem::NonFinite {
                    axis: axis.name.clone(),
                    value: v.to_string(),
                });
            }
            match fields.iter().find(|f| f.name == axis.name) {
                None => problems.push(GridProblem::UnknownAxis {
                    axis: axis.name.clone(),
                    expected: fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", "),
                }),
                Some(field) => check_values(axis, field, &mut problems),
            }
        }
        for field in fields {
            if !seen.contains(field.name) {
                problems.push(GridProblem::MissingAxis {
                    field: field.name.to_owned(),
                    rust_type: field.rust_type.to_owned(),
                });
            }
        }
        for (expr, reason) in &self.unparsed {
            problems.push(GridProblem::BadConstraint {
                expr: expr.clone(),
                reason: reason.clone(),
            });
        }
        for c in &self.constraints {
            let mut names = vec![c.left.as_str()];
            if let Operand::Axis(r) = &c.right {
                names.push(r);
            }
            for name in names.into_iter().filter(|n| !seen.contains(n)) {
                problems.push(GridProblem::BadConstraint {
                    expr: c.to_string(),
                    reason: format!("`{name}` is not an axis of this grid"),
                });
            }
        }
        problems.extend(self.too_large());
        if problems.is_empty() && self.is_empty() {
            let why = if self.axes.iter().any(|a| a.values.is_empty()) {
                "an axis has no values".to_owned()
            } else {
                format!(
                    "the constraints exclude all {} combinations",
                    self.product_len()
                )
            };
            problems.push(GridProblem::Empty(why));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(GridError(problems))
        }
    }
}

impl Grid {
    /// [`GridProblem::TooLarge`] when the product passes [`MAX_COMBINATIONS`].
    fn too_large(&self) -> Option<GridProblem> {
        let combinations = self
            .axes
            .iter()
            .map(|a| a.values.len() as u64)
            .fold(1u64, u64::saturating_mul);
        (combinations > MAX_COMBINATIONS).then(|| GridProblem::TooLarge {
            combinations,
            shape: self
                .axes
                .iter()
                .map(|a| format!("{} {}", a.name, a.values.len()))
                .collect::<Vec<_>>()
                .join(" × "),
        })
    }
}

/// The first value of `axis` that is not one of `field`'s choices, or else the first that does
/// not fit its type, as a problem.
fn check_values(axis: &Axis, field: &ParamField, problems: &mut Vec<GridProblem>) {
    let not_a_choice = |v: &&ParamValue| {
        matches!(v, ParamValue::Choice(c) if !field.choices.is_empty()
            && !field.choices.contains(&c.as_str()))
    };
    if let Some(bad) = axis.values.iter().find(not_a_choice) {
        problems.push(GridProblem::NotAChoice {
            axis: axis.name.clone(),
            value: bad.to_string(),
            choices: field.choices.join(", "),
        });
    } else if let Some(bad) = axis.values.iter().find(|v| !(field.fits)(v)) {
        problems.push(GridProblem::TypeMismatch {
            axis: axis.name.clone(),
            value: bad.to_string(),
            kind: bad.kind(),
            rust_type: field.rust_type.to_owned(),
        });
    }
}
