//! `Checkpoint`: the state of a run's lanes between two slices of a history, as bytes that can
//! travel to another node or wait on disk for a resume.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::exec_model::ExecModel;
use super::paths::PathState;
use crate::params::ParamSet;
use crate::strategy::CarryError;

/// Why a run's lanes could not be saved or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The strategy cannot carry its state (or its state did not encode or decode).
    #[error(transparent)]
    Strategy(#[from] CarryError),
    /// A shared series other than a [`SharedMean`](crate::strategy::SharedMean) or an
    /// [`Indicator`](crate::strategy::Indicator) holds state the engine cannot save.
    #[error(
        "shared series {series} cannot be carried between slices of a history (a SharedMean or \
         an Indicator can)"
    )]
    Series {
        /// The series' type.
        series: &'static str,
    },
    /// The checkpoint was saved by another run.
    #[error("the checkpoint was saved by another run: {what}")]
    Mismatch {
        /// What differs.
        what: String,
    },
    /// The bytes are not a checkpoint of this version of gridtest.
    #[error("the bytes are not a checkpoint of this version of gridtest")]
    Decode(#[source] postcard::Error),
}

/// What a checkpoint's bytes start with; changes whenever what a kernel saves changes.
const FORMAT: u32 = 3;

/// The state of every lane of a run after some whole slices of a history: what the next slice
/// starts from. Made by [`Chain::checkpoint`](super::Chain::checkpoint), taken up by
/// [`Chain::resume`](super::Chain::resume).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Checkpoint {
    format: u32,
    strategy: String,
    /// SHA-256 of the parameter sets' ids, in order.
    sets: [u8; 32],
    /// SHA-256 of the execution model's JSON (its serde form skips defaults, which a format
    /// that does not describe itself cannot read back).
    exec: [u8; 32],
    pub(super) kernel: PathState,
}

impl Checkpoint {
    pub(super) fn new(
        strategy: &str,
        sets: &[ParamSet],
        exec: &ExecModel,
        kernel: PathState,
    ) -> Self {
        Self {
            format: FORMAT,
            strategy: strategy.to_owned(),
            sets: digest(sets),
            exec: exec_digest(exec),
            kernel,
        }
    }

    /// Events of the history its run had seen.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.kernel.seen()
    }

    /// The checkpoint as bytes.
    ///
    /// # Panics
    /// Never: every part of a checkpoint encodes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("a checkpoint holds only numbers, strings and bytes")
    }

    /// The checkpoint `bytes` hold.
    ///
    /// # Errors
    /// [`CheckpointError::Decode`] if they are not a checkpoint of this version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let checkpoint: Self = postcard::from_bytes(bytes).map_err(CheckpointError::Decode)?;
        if checkpoint.format != FORMAT {
            return Err(CheckpointError::Decode(
                postcard::Error::DeserializeBadEncoding,
            ));
        }
        Ok(checkpoint)
    }

    /// Whether the checkpoint was saved by a run of `strategy` over `sets` with `exec`.
    pub(super) fn check(
        &self,
        strategy: &str,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<(), CheckpointError> {
        let what = if self.strategy != strategy {
            format!("strategy {}, not {strategy}", self.strategy)
        } else if self.sets != digest(sets) {
            "other parameter sets".to_owned()
        } else if self.exec != exec_digest(exec) {
            "another execution model".to_owned()
        } else {
            return Ok(());
        };
        Err(CheckpointError::Mismatch { what })
    }
}

fn digest(sets: &[ParamSet]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for set in sets {
        hash.update(set.id().0.to_le_bytes());
    }
    hash.finalize().into()
}

fn exec_digest(exec: &ExecModel) -> [u8; 32] {
    let json = serde_json::to_vec(exec).expect("an execution model is plain data");
    Sha256::digest(json).into()
}
