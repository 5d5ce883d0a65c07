//! `SweepId`: the identity of a sweep, a hash of everything that determines its results.

use serde::{Deserialize, Serialize};

/// A sweep's id: 16 lowercase hex digits, the first 8 bytes of SHA-256 over its persisted spec
/// (strategy and version, grid, data manifest, execution model). The same sweep described twice
/// gets the same id; it names the sweep's folder under the results root.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::sweep::SweepId;
/// let id: SweepId = "00ff00ff00ff00ff".parse().unwrap();
/// assert_eq!(id.to_string(), "00ff00ff00ff00ff");
/// assert!("not-an-id".parse::<SweepId>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SweepId(String);

impl SweepId {
    /// The id made of a digest's first 8 bytes.
    #[must_use]
    pub fn from_digest(digest: &[u8]) -> Self {
        Self(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
    }

    /// The 16 hex digits.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SweepId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for SweepId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() == 16
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Self(s.to_owned()))
        } else {
            Err(format!(
                "`{s}` is not a sweep id (16 lowercase hex digits, as printed by a sweep)"
            ))
        }
    }
}

impl TryFrom<String> for SweepId {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SweepId> for String {
    fn from(id: SweepId) -> Self {
        id.0
    }
}
