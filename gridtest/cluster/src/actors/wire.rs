//! `Wire<T>`: any serde type as a ractor_cluster message field (JSON on the wire);
//! `EncodedOnce<T>`: a value sent to many nodes, serialised once.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A message payload carried between nodes as JSON.
///
/// ractor_cluster needs every field of a network message to be `BytesConvertable`; wrapping
/// domain types in `Wire` gives them that through serde. Decoding cannot return an error through
/// that trait: a malformed payload panics inside the derive's `catch_unwind`, which drops the
/// message without harming the node.
#[derive(Clone, Debug, PartialEq)]
pub struct Wire<T>(pub T);

#[cfg(feature = "cluster")]
impl<T: Serialize + DeserializeOwned + Send + 'static> ractor::BytesConvertable for Wire<T> {
    fn into_bytes(self) -> Vec<u8> {
        serde_json::to_vec(&self.0).expect("wire payloads serialise")
    }

    fn from_bytes(bytes: Vec<u8>) -> Self {
        match serde_json::from_slice(&bytes) {
            Ok(value) => Self(value),
            Err(e) => {
                let payload = std::any::type_name::<T>();
                // ractor drops the message with a debug line only: say it where operators look
                // (a node of another gridtest version sends what this one cannot read), at
                // most once per period so that a retrying peer does not flood the log.
                if undecodable_may_log() {
                    tracing::error!(payload, error = %e,
                        "dropped a message from another node that could not be decoded: \
                         does it run another gridtest version?");
                }
                panic!("malformed wire payload ({payload}): {e}")
            }
        }
    }
}

/// Whether an undecodable message may be logged now: at most once per 10 s per process.
#[cfg(feature = "cluster")]
fn undecodable_may_log() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    (last == 0 || now >= last + 10)
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// A value that many messages carry (a sweep's context, in each scorer's first lease of the
/// sweep), serialised to JSON once when made instead of once per message: a thousand nodes
/// asking at a sweep's start would otherwise have the head encode it a thousand times, one
/// after the other, ahead of their leases.
///
/// It serialises to exactly the JSON of the value (a node that reads a plain `T` reads it),
/// and deserialises as a plain `T` (a received copy holds no encoding). Cloning shares both.
/// Meant for JSON ([`Wire`]): another serde format would not get the value's own form.
///
/// ```
/// # extern crate gridtest_cluster as gridtest;
/// use gridtest::actors::wire::EncodedOnce;
///
/// let axes = EncodedOnce::new(vec![1_u32, 2, 3]);
/// assert_eq!(serde_json::to_string(&axes).unwrap(), "[1,2,3]");
/// let back: EncodedOnce<Vec<u32>> = serde_json::from_str("[1,2,3]").unwrap();
/// assert_eq!(back, axes);
/// assert_eq!(*back, [1, 2, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct EncodedOnce<T> {
    value: Arc<T>,
    json: Option<Arc<RawValue>>,
}

impl<T: Serialize> EncodedOnce<T> {
    /// `value`, serialised now (a value that cannot be serialised is serialised, and fails,
    /// where it is sent, as it would without this).
    pub fn new(value: T) -> Self {
        let json = serde_json::value::to_raw_value(&value).ok().map(Arc::from);
        Self {
            value: Arc::new(value),
            json,
        }
    }
}

impl<T> EncodedOnce<T> {
    /// The value, shared.
    #[must_use]
    pub fn into_shared(self) -> Arc<T> {
        self.value
    }
}

impl<T> std::ops::Deref for EncodedOnce<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: PartialEq> PartialEq for EncodedOnce<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Serialize> Serialize for EncodedOnce<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.json {
            Some(json) => json.serialize(serializer),
            None => self.value.serialize(serializer),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for EncodedOnce<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self {
            value: Arc::new(T::deserialize(deserializer)?),
            json: None,
        })
    }
}
