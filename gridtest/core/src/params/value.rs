//! `ParamValue`, the typed value of one parameter, and its canonical encoding.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kind of a parameter: what a grid axis holds and what a `Params` field accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A signed integer (`i64` on the wire; any Rust integer type in a `Params` struct).
    Int,
    /// A finite float (`f64`; `f32` fields accept it too).
    Float,
    /// `true` or `false`.
    Bool,
    /// One of a set of short strings.
    Choice,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Int => "int",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Choice => "choice",
        })
    }
}

/// The value of one parameter.
///
/// Floats are compared and hashed by their canonical bits: `-0.0` is stored as `0.0`, and NaN or
/// infinite values are rejected when a grid is checked (see [`ParamValue::is_valid`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ParamValue {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A short string, one of an axis's choices.
    Choice(String),
}

impl ParamValue {
    /// The kind of this value.
    #[must_use]
    pub fn kind(&self) -> ParamKind {
        match self {
            Self::Int(_) => ParamKind::Int,
            Self::Float(_) => ParamKind::Float,
            Self::Bool(_) => ParamKind::Bool,
            Self::Choice(_) => ParamKind::Choice,
        }
    }

    /// Whether the value can be part of a grid: floats must be finite.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        match self {
            Self::Float(x) => x.is_finite(),
            _ => true,
        }
    }

    /// The value as `f64` when it is numeric (used by constraints that compare ints and floats).
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Float(x) => Some(*x),
            _ => None,
        }
    }

    /// Appends the canonical encoding of the value: a kind tag followed by a fixed-width or
    /// length-prefixed payload. Equal values encode equally on every machine.
    pub(crate) fn encode_canonical(&self, out: &mut Vec<u8>) {
        match self {
            Self::Int(i) => {
                out.push(b'i');
                out.extend_from_slice(&i.to_le_bytes());
            }
            Self::Float(x) => {
                out.push(b'f');
                let x = if *x == 0.0 { 0.0f64 } else { *x };
                out.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Self::Bool(b) => {
                out.push(b'b');
                out.push(u8::from(*b));
            }
            Self::Choice(s) => {
                out.push(b's');
                out.extend_from_slice(&(s.len() as u64).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::Choice(s) => f.write_str(s),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for ParamValue {
            fn from(v: $t) -> Self {
                Self::Int(i64::from(v))
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<usize> for ParamValue {
    /// # Panics
    /// Panics if the value exceeds `i64::MAX` (no realistic grid does).
    fn from(v: usize) -> Self {
        Self::Int(i64::try_from(v).expect("grid integer exceeds i64::MAX"))
    }
}

impl From<u64> for ParamValue {
    /// # Panics
    /// Panics if the value exceeds `i64::MAX` (no realistic grid does).
    fn from(v: u64) -> Self {
        Self::Int(i64::try_from(v).expect("grid integer exceeds i64::MAX"))
    }
}

impl From<isize> for ParamValue {
    fn from(v: isize) -> Self {
        Self::Int(i64::try_from(v).expect("isize fits i64"))
    }
}

impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}

impl From<f32> for ParamValue {
    fn from(v: f32) -> Self {
        Self::Float(f64::from(v))
    }
}

impl From<bool> for ParamValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<&str> for ParamValue {
    fn from(v: &str) -> Self {
        Self::Choice(v.to_owned())
    }
}

impl From<String> for ParamValue {
    fn from(v: String) -> Self {
        Self::Choice(v)
    }
}
