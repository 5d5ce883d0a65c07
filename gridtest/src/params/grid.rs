//! `Grid`: axes of values and constraints between them, expanded lazily into parameter sets.
//!
//! The grid is data, not code: axes hold explicit values and constraints are comparisons
//! (`fast < slow`, `threshold >= 0.5`, `mode != "short"`), so a grid serialises into a sweep's
//! spec and expands identically on every node. Expansion walks the cartesian product in
//! declaration order (the last axis varies fastest) and skips combinations a constraint rejects;
//! [`Grid::len`] counts them exactly before anything runs.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{ParamField, ParamKind, ParamSet, ParamValue};

/// One axis: a parameter name and the values it takes, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// Parameter name (a field of the strategy's `Params`).
    pub name: String,
    /// Values, in the order they are swept.
    pub values: Vec<ParamValue>,
}

/// Comparison operator of a [`Constraint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    fn symbol(self) -> &'static str {
        match self {
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Eq => "==",
            Self::Ne => "!=",
        }
    }

    fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Self::Lt => ord == Less,
            Self::Le => ord != Greater,
            Self::Gt => ord == Greater,
            Self::Ge => ord != Less,
            Self::Eq => ord == Equal,
            Self::Ne => ord != Equal,
        }
    }
}

/// The right-hand side of a [`Constraint`]: another axis or a constant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operand {
    /// The value of another axis.
    Axis(String),
    /// A constant.
    Value(ParamValue),
}

/// A comparison that every expanded parameter set must satisfy, e.g. `fast < slow`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    /// Left axis.
    pub left: String,
    /// Operator.
    pub op: CmpOp,
    /// Right axis or constant.
    pub right: Operand,
}

impl Constraint {
    /// Parses `left OP right`, where `OP` is one of `< <= > >= == !=`, `left` is an axis name and
    /// `right` an axis name, an integer, a float, `true`/`false` or a quoted string.
    ///
    /// ```
    /// use gridtest::{Constraint, CmpOp, Operand};
    /// let c = Constraint::parse("fast < slow").unwrap();
    /// assert_eq!((c.left.as_str(), c.op), ("fast", CmpOp::Lt));
    /// assert_eq!(c.right, Operand::Axis("slow".into()));
    /// ```
    ///
    /// # Errors
    /// A message saying what is wrong with the expression.
    pub fn parse(expr: &str) -> Result<Self, String> {
        const OPS: [(&str, CmpOp); 6] = [
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ];
        let (at, sym, op) = OPS
            .iter()
            .filter_map(|(sym, op)| expr.find(sym).map(|at| (at, *sym, *op)))
            .min_by_key(|(at, sym, _)| (*at, std::cmp::Reverse(sym.len())))
            .ok_or_else(|| "expected `left OP right` with OP one of < <= > >= == !=".to_owned())?;
        let left = expr[..at].trim();
        let right = expr[at + sym.len()..].trim();
        if !is_identifier(left) {
            return Err(format!("`{left}` is not an axis name"));
        }
        if right.is_empty() {
            return Err("nothing on the right of the operator".to_owned());
        }
        let right = if let Ok(i) = right.parse::<i64>() {
            Operand::Value(ParamValue::Int(i))
        } else if let Ok(x) = right.parse::<f64>() {
            Operand::Value(ParamValue::Float(x))
        } else if right == "true" || right == "false" {
            Operand::Value(ParamValue::Bool(right == "true"))
        } else if let Some(s) = unquote(right) {
            Operand::Value(ParamValue::Choice(s.to_owned()))
        } else if is_identifier(right) {
            Operand::Axis(right.to_owned())
        } else {
            return Err(format!("`{right}` is neither an axis name nor a constant"));
        };
        Ok(Self {
            left: left.to_owned(),
            op,
            right,
        })
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn unquote(s: &str) -> Option<&str> {
    ['"', '\'']
        .iter()
        .find_map(|q| s.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.left, self.op.symbol())?;
        match &self.right {
            Operand::Axis(a) => f.write_str(a),
            Operand::Value(ParamValue::Choice(s)) => write!(f, "{s:?}"),
            Operand::Value(v) => write!(f, "{v}"),
        }
    }
}

/// A parameter grid: axes and constraints.
///
/// ```
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
}

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
    /// Costs one pass over the combinations when there are constraints, without building any
    /// parameter set.
    #[must_use]
    pub fn len(&self) -> usize {
        match Compiled::new(self) {
            Ok(c) if c.constraints.is_empty() => self.product_len(),
            Ok(c) => {
                let mut n = 0usize;
                let mut idx = vec![0usize; self.axes.len()];
                if self.product_len() > 0 {
                    loop {
                        n += usize::from(c.accepts(&idx));
                        if !c.advance(&mut idx) {
                            break;
                        }
                    }
                }
                n
            }
            Err(_) => 0,
        }
    }

    /// Whether the grid expands to nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Expands lazily, in declaration order (the last axis varies fastest).
    ///
    /// A grid whose constraints name unknown axes expands to nothing; [`Grid::check`] says why.
    #[must_use]
    pub fn iter(&self) -> GridIter {
        let compiled = Compiled::new(self).ok();
        let done = compiled.is_none() || self.product_len() == 0;
        GridIter {
            compiled: compiled.map(Arc::new),
            idx: vec![0; self.axes.len()],
            done,
        }
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
                Some(field) => {
                    if let Some(bad) = axis.values.iter().find(|v| !(field.fits)(v)) {
                        problems.push(GridProblem::TypeMismatch {
                            axis: axis.name.clone(),
                            value: bad.to_string(),
                            kind: bad.kind(),
                            rust_type: field.rust_type.to_owned(),
                        });
                    }
                }
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
struct Compiled {
    names: Vec<Arc<str>>,
    values: Vec<Vec<ParamValue>>,
    constraints: Vec<CompiledConstraint>,
}

impl Compiled {
    fn new(grid: &Grid) -> Result<Self, ()> {
        let pos = |name: &str| grid.axes.iter().position(|a| a.name == name).ok_or(());
        let constraints = grid
            .constraints
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
                .axes
                .iter()
                .map(|a| Arc::from(a.name.as_str()))
                .collect(),
            values: grid.axes.iter().map(|a| a.values.clone()).collect(),
            constraints,
        })
    }

    fn accepts(&self, idx: &[usize]) -> bool {
        self.constraints.iter().all(|c| {
            let left = &self.values[c.left][idx[c.left]];
            let right = match &c.right {
                Rhs::Axis(a) => &self.values[*a][idx[*a]],
                Rhs::Value(v) => v,
            };
            compare(left, right).is_some_and(|ord| c.op.holds(ord))
        })
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

/// Lazy expansion of a [`Grid`], see [`Grid::iter`].
#[derive(Debug)]
pub struct GridIter {
    compiled: Option<Arc<Compiled>>,
    idx: Vec<usize>,
    done: bool,
}

impl Iterator for GridIter {
    type Item = ParamSet;

    fn next(&mut self) -> Option<ParamSet> {
        let c = self.compiled.as_ref()?;
        while !self.done {
            let accepted = c.accepts(&self.idx);
            let set = accepted.then(|| {
                ParamSet::new(
                    self.idx
                        .iter()
                        .enumerate()
                        .map(|(a, &i)| (Arc::clone(&c.names[a]), c.values[a][i].clone())),
                )
            });
            self.done = !c.advance(&mut self.idx);
            if set.is_some() {
                return set;
            }
        }
        None
    }
}
