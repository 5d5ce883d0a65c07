//! Serde for `f64` that survives JSON: finite values as numbers, `inf`, `-inf` and `NaN` as
//! strings (plain serde_json would write them as `null` and fail to read them back).
//!
//! ```
//! # extern crate gridtest_core as gridtest;
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct P { #[serde(with = "gridtest::metrics::float_serde")] x: f64 }
//! let json = serde_json::to_string(&P { x: f64::INFINITY }).unwrap();
//! assert_eq!(json, r#"{"x":"inf"}"#);
//! assert_eq!(serde_json::from_str::<P>(&json).unwrap().x, f64::INFINITY);
//! ```

use serde::{Deserialize, Deserializer, Serializer};

/// Serialises a float.
///
/// # Errors
/// The serializer's.
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's `with` passes a reference"
)]
pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else if x.is_nan() {
        s.serialize_str("NaN")
    } else if *x > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Repr {
    Number(f64),
    Text(String),
}

/// Deserialises a float written by [`serialize`].
///
/// # Errors
/// A string other than `inf`, `-inf` or `NaN`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Repr::deserialize(d)? {
        Repr::Number(x) => Ok(x),
        Repr::Text(text) => match text.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "NaN" => Ok(f64::NAN),
            other => Err(serde::de::Error::custom(format!("not a float: {other}"))),
        },
    }
}
