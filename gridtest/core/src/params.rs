//! Parameters: typed values, named parameter sets with a stable id, the `Params` schema a
//! strategy declares, and the [`Grid`] that expands into parameter sets.
//!
//! A [`ParamSet`] is a list of `(name, value)` pairs kept sorted by name. Its [`ParamSetId`] is
//! the first 8 bytes of the SHA-256 of its canonical encoding, so it is equal on every node, in
//! every process and in every run, whatever order the values were given in.

mod constraint;
mod count;
mod expand;
mod grid;
mod sample;
#[cfg(test)]
pub(crate) use sample::mix;
mod subset;
mod value;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use constraint::{CmpOp, Constraint, Operand};
pub use expand::{GridIter, GridSlice, SetExpander};
pub use grid::{Axis, Grid, GridError, GridProblem, MAX_COMBINATIONS};
pub use sample::Sample;
pub use subset::Subset;
pub use value::{ParamKind, ParamValue};

/// Where a parameter set sits in its grid: its `index` among the grid's sets (grid order,
/// constraints applied) and its `position` in the cartesian product (see [`Grid::slice`]). Both
/// name the same set on every node, so work can refer to sets without carrying them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SetPlace {
    /// Index among the grid's sets.
    pub index: u64,
    /// Position in the grid's cartesian product.
    pub position: u64,
}

/// Stable identifier of a parameter set: a hash of its canonical encoding, shown as 16 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct ParamSetId(pub u64);

impl fmt::Display for ParamSetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl From<ParamSetId> for String {
    fn from(id: ParamSetId) -> Self {
        id.to_string()
    }
}

impl TryFrom<String> for ParamSetId {
    type Error = std::num::ParseIntError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for ParamSetId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u64::from_str_radix(s, 16).map(Self)
    }
}

/// Named parameter values, sorted by name, with their stable [`ParamSetId`].
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::{ParamSet, ParamValue};
/// let a = ParamSet::new([("slow", ParamValue::Int(20)), ("fast", ParamValue::Int(5))]);
/// let b = ParamSet::new([("fast", ParamValue::Int(5)), ("slow", ParamValue::Int(20))]);
/// assert_eq!(a.id(), b.id());
/// assert_eq!(a.to_string(), "fast=5 slow=20");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    from = "Vec<(Arc<str>, ParamValue)>",
    into = "Vec<(Arc<str>, ParamValue)>"
)]
pub struct ParamSet {
    values: Vec<(Arc<str>, ParamValue)>,
    id: ParamSetId,
}

impl ParamSet {
    /// Builds a parameter set; the pairs are sorted by name. A later duplicate name replaces an
    /// earlier one.
    pub fn new<N, I>(pairs: I) -> Self
    where
        N: Into<Arc<str>>,
        I: IntoIterator<Item = (N, ParamValue)>,
    {
        let mut values: Vec<(Arc<str>, ParamValue)> = Vec::new();
        for (name, value) in pairs {
            let name = name.into();
            match values.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => values.push((name, value)),
            }
        }
        Self::from_sorted(values)
    }

    fn from_sorted(mut values: Vec<(Arc<str>, ParamValue)>) -> Self {
        values.sort_by(|a, b| a.0.cmp(&b.0));
        let id = Self::hash(&values);
        Self { values, id }
    }

    fn hash(values: &[(Arc<str>, ParamValue)]) -> ParamSetId {
        let mut buf = Vec::with_capacity(16 * values.len() + 8);
        buf.extend_from_slice(b"gridtest.params.v1");
        for (name, value) in values {
            buf.extend_from_slice(&(name.len() as u64).to_le_bytes());
            buf.extend_from_slice(name.as_bytes());
            value.encode_canonical(&mut buf);
        }
        let digest = Sha256::digest(&buf);
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        ParamSetId(u64::from_be_bytes(first))
    }

    /// The stable id.
    #[must_use]
    pub fn id(&self) -> ParamSetId {
        self.id
    }

    /// The value of parameter `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.values
            .binary_search_by(|(n, _)| n.as_ref().cmp(name))
            .ok()
            .map(|i| &self.values[i].1)
    }

    /// The `(name, value)` pairs, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.values.iter().map(|(n, v)| (n.as_ref(), v))
    }

    /// Number of parameters.
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the set has no parameters.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Display for ParamSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (n, v)) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{n}={v}")?;
        }
        Ok(())
    }
}

impl From<Vec<(Arc<str>, ParamValue)>> for ParamSet {
    fn from(values: Vec<(Arc<str>, ParamValue)>) -> Self {
        Self::new(values)
    }
}

impl From<ParamSet> for Vec<(Arc<str>, ParamValue)> {
    fn from(set: ParamSet) -> Self {
        set.values
    }
}

/// The floats from `start` to `end` inclusive, `step` apart, each computed as
/// `start + i · step` (no accumulated rounding), the last one `end` itself when the range
/// divides into whole steps (within a millionth of a step); for a float axis.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// assert_eq!(float_range(0.5, 1.5, 0.25), [0.5, 0.75, 1.0, 1.25, 1.5]);
/// assert_eq!(float_range(0.1, 0.3, 0.1), [0.1, 0.2, 0.3]);
/// assert_eq!(float_range(1.0, 1.9, 0.5), [1.0, 1.5]);
/// let grid = Grid::new().axis("threshold", float_range(1.0, 3.0, 0.5));
/// assert_eq!(grid.len(), 5);
/// ```
///
/// # Panics
/// If `step` is not a positive finite number, or `start` or `end` is not finite.
#[must_use]
pub fn float_range(start: f64, end: f64, step: f64) -> Vec<f64> {
    assert!(
        step.is_finite() && step > 0.0 && start.is_finite() && end.is_finite(),
        "float_range({start}, {end}, {step}): the step must be positive and the bounds finite"
    );
    if end < start {
        return Vec::new();
    }
    let span = (end - start) / step;
    let whole = span.round();
    let (steps, exact) = if (span - whole).abs() <= 1e-6 {
        (whole, true)
    } else {
        (span.floor(), false)
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a non-negative whole number of steps"
    )]
    let n = steps as u64;
    (0..=n)
        .map(|i| {
            if exact && i == n {
                end
            } else {
                start + i as f64 * step
            }
        })
        .collect()
}

/// One field of a strategy's parameter struct, as `#[derive(Params)]` describes it.
#[derive(Clone, Copy, Debug)]
pub struct ParamField {
    /// Field name = axis name.
    pub name: &'static str,
    /// What values the field accepts.
    pub kind: ParamKind,
    /// The Rust type, for messages.
    pub rust_type: &'static str,
    /// Whether a value fits the field's Rust type (kind and range).
    pub fits: fn(&ParamValue) -> bool,
    /// The values a choice field accepts (an enum's variants); empty: any (a `String`).
    pub choices: &'static [&'static str],
}

impl ParamField {
    /// Describes a field `name` of Rust type `T`.
    #[must_use]
    pub const fn of<T: ParamType>(name: &'static str) -> Self {
        typed::<T>().field(name)
    }
}

/// A field type's conversions, for `#[derive(Params)]`: taken once per field through
/// [`typed`], whose one `ParamType` bound is where an unsupported type is reported (once).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct TypedField<T> {
    kind: ParamKind,
    rust_type: &'static str,
    fits: fn(&ParamValue) -> bool,
    from_value: fn(&ParamValue) -> Option<T>,
    choices: &'static [&'static str],
}

/// The conversions of field type `T`.
#[doc(hidden)]
#[must_use]
pub const fn typed<T: ParamType>() -> TypedField<T> {
    TypedField {
        kind: T::KIND,
        rust_type: T::RUST_TYPE,
        fits: fits::<T>,
        from_value: T::from_value,
        choices: T::CHOICES,
    }
}

impl<T> TypedField<T> {
    /// The schema entry of a field `name` of this type.
    #[must_use]
    pub const fn field(&self, name: &'static str) -> ParamField {
        ParamField {
            name,
            kind: self.kind,
            rust_type: self.rust_type,
            fits: self.fits,
            choices: self.choices,
        }
    }

    /// Reads field `name` from `set`.
    ///
    /// # Errors
    /// [`ParamError::Missing`] or [`ParamError::Mismatch`].
    pub fn read(&self, set: &ParamSet, name: &'static str) -> Result<T, ParamError> {
        let value = set.get(name).ok_or_else(|| ParamError::Missing {
            set: set.to_string(),
            field: name,
        })?;
        (self.from_value)(value).ok_or_else(|| ParamError::Mismatch {
            set: set.to_string(),
            field: name,
            value: value.to_string(),
            rust_type: self.rust_type,
        })
    }
}

fn fits<T: ParamType>(value: &ParamValue) -> bool {
    T::from_value(value).is_some()
}

/// Why a parameter set could not be turned into a strategy's parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// The set lacks a field the strategy needs.
    #[error("parameter set [{set}] has no value for `{field}`")]
    Missing {
        /// The parameter set, displayed.
        set: String,
        /// The missing field.
        field: &'static str,
    },
    /// A value has the wrong kind or does not fit the field's type.
    #[error("parameter set [{set}]: `{field}` = {value} does not fit `{rust_type}`")]
    Mismatch {
        /// The parameter set, displayed.
        set: String,
        /// The field.
        field: &'static str,
        /// The offending value, displayed.
        value: String,
        /// The field's Rust type.
        rust_type: &'static str,
    },
}

/// A strategy's parameters: a plain struct with `#[derive(Params)]`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// #[derive(Params, Clone, Debug)]
/// struct Breakout { lookback: u32, threshold: f64, side: String }
///
/// let schema = Breakout::schema();
/// assert_eq!(schema[0].name, "lookback");
/// assert_eq!(schema[1].kind, ParamKind::Float);
/// let set = ParamSet::new([
///     ("lookback", ParamValue::Int(30)),
///     ("threshold", ParamValue::Float(1.5)),
///     ("side", ParamValue::Choice("long".into())),
/// ]);
/// let p = Breakout::from_param_set(&set)?;
/// assert_eq!((p.lookback, p.side.as_str()), (30, "long"));
/// # Ok::<(), gridtest::ParamError>(())
/// ```
pub trait Params: Sized + 'static {
    /// The fields, in declaration order.
    fn schema() -> &'static [ParamField];

    /// Builds the struct from a parameter set.
    ///
    /// # Errors
    /// [`ParamError`] when a field is missing or a value does not fit its type.
    fn from_param_set(set: &ParamSet) -> Result<Self, ParamError>;
}

/// A Rust type that a `Params` field may have. Implemented for the integer types, `f32`, `f64`,
/// `bool`, `String` and enums with `#[derive(Choice)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a strategy parameter",
    label = "unsupported parameter type",
    note = "a `#[derive(Params)]` field must be an integer type, f32, f64, bool, String or an enum with `#[derive(gridtest::Choice)]`"
)]
pub trait ParamType: Sized {
    /// The kind of grid axis this type accepts.
    const KIND: ParamKind;
    /// The type's name, for messages.
    const RUST_TYPE: &'static str;
    /// The values a choice type accepts (empty: any string).
    const CHOICES: &'static [&'static str] = &[];
    /// Converts a value, or `None` if it has the wrong kind or does not fit.
    fn from_value(value: &ParamValue) -> Option<Self>;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl ParamType for $t {
            const KIND: ParamKind = ParamKind::Int;
            const RUST_TYPE: &'static str = stringify!($t);
            fn from_value(value: &ParamValue) -> Option<Self> {
                match value {
                    ParamValue::Int(i) => <$t>::try_from(*i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
int_param!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl ParamType for f64 {
    const KIND: ParamKind = ParamKind::Float;
    const RUST_TYPE: &'static str = "f64";
    fn from_value(value: &ParamValue) -> Option<Self> {
        match value {
            ParamValue::Float(x) => Some(*x),
            _ => None,
        }
    }
}

impl ParamType for f32 {
    const KIND: ParamKind = ParamKind::Float;
    const RUST_TYPE: &'static str = "f32";
    fn from_value(value: &ParamValue) -> Option<Self> {
        match value {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "an f32 field asks for f32 precision"
            )]
            ParamValue::Float(x) => Some(*x as f32),
            _ => None,
        }
    }
}

impl ParamType for bool {
    const KIND: ParamKind = ParamKind::Bool;
    const RUST_TYPE: &'static str = "bool";
    fn from_value(value: &ParamValue) -> Option<Self> {
        match value {
            ParamValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl ParamType for String {
    const KIND: ParamKind = ParamKind::Choice;
    const RUST_TYPE: &'static str = "String";
    fn from_value(value: &ParamValue) -> Option<Self> {
        match value {
            ParamValue::Choice(s) => Some(s.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
