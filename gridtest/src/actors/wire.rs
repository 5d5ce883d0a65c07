//! `Wire<T>`: any serde type as a ractor_cluster message field (JSON on the wire).

#[cfg(feature = "cluster")]
use serde::Serialize;
#[cfg(feature = "cluster")]
use serde::de::DeserializeOwned;

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
        Self(serde_json::from_slice(&bytes).expect("malformed wire payload"))
    }
}
