//! Carrying a strategy's state from one slice of a history to the next ([`Strategy::CARRY`]).
//!
//! A long history is run a slice of days at a time; between two slices the engine saves each
//! lane's state (its strategy, its account, the events its lookback still reads) and a later
//! run — on the same node or another one, after an eviction — restores it and goes on as if the
//! history had never been cut. See [`Strategy::CARRY`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Strategy;

/// Why a strategy's state could not be saved or restored.
#[derive(Debug, thiserror::Error)]
pub enum CarryError {
    /// The strategy does not declare [`Strategy::CARRY`].
    #[error(
        "strategy {strategy} does not carry its state from one slice of a history to the next: \
         derive serde's Serialize and Deserialize for it and register it with \
         `#[gridtest::strategy(name = \"…\", carry)]`"
    )]
    NotCarried {
        /// The strategy's type.
        strategy: &'static str,
    },
    /// The state did not encode or decode.
    #[error("the state of strategy {strategy} did not {action}")]
    Encoding {
        /// The strategy's type.
        strategy: &'static str,
        /// `encode` or `decode`.
        action: &'static str,
        /// What the encoding said.
        #[source]
        source: postcard::Error,
    },
}

/// The state of `strategy`, encoded (what `carry` makes [`Strategy::save_state`] do).
///
/// # Errors
/// If serde's `Serialize` of the type fails.
pub fn save<S: Strategy + Serialize>(strategy: &S) -> Result<Vec<u8>, CarryError> {
    postcard::to_stdvec(strategy).map_err(|source| CarryError::Encoding {
        strategy: std::any::type_name::<S>(),
        action: "encode",
        source,
    })
}

/// Replaces `strategy` by the state `saved` encodes (what `carry` makes
/// [`Strategy::restore_state`] do).
///
/// # Errors
/// If `saved` is not a state of this type.
pub fn restore<S: Strategy + DeserializeOwned>(
    strategy: &mut S,
    saved: &[u8],
) -> Result<(), CarryError> {
    *strategy = postcard::from_bytes(saved).map_err(|source| CarryError::Encoding {
        strategy: std::any::type_name::<S>(),
        action: "decode",
        source,
    })?;
    Ok(())
}
