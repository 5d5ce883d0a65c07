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
