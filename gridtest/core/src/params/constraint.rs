//! `Constraint`: a comparison between two axes, or an axis and a value, that a parameter set
//! must satisfy (`fast < slow`, `threshold >= 0.5`, `mode != "short"`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ParamValue;

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

    pub(super) fn holds(self, ord: std::cmp::Ordering) -> bool {
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
    /// # extern crate gridtest_core as gridtest;
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
