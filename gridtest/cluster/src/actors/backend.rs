//! Extra ways to run units, plugged in by other crates (GPU scorers from gridtest-cuda).
//!
//! A crate contributes a [`BackendProvider`] to [`BACKEND_PROVIDERS`] (a link-time slice); every
//! node agent calls the providers once at start and runs one extra scorer per backend slot it
//! gets. A backend scorer leases only units of strategies it [`supports`](UnitBackend::supports).

use std::sync::Arc;

use linkme::distributed_slice;

use crate::data::ShardData;
use crate::engine::ExecModel;
use crate::params::ParamSet;
use crate::registry::StrategyEntry;
use crate::sweep::{CellFailure, CellOutcome, DeviceTelemetry};

/// A non-CPU engine slot (one GPU scorer).
pub trait UnitBackend: Send + Sync + 'static {
    /// Slot name, unique on the node (e.g. `gpu0-1`).
    fn slot(&self) -> String;

    /// Whether this backend can run the strategy.
    fn supports(&self, strategy: &StrategyEntry) -> bool;

    /// A short reading of the device (clock, temperature, throttling), shown in the head's
    /// progress view; `None` when there is nothing to show.
    fn telemetry(&self) -> Option<DeviceTelemetry> {
        None
    }

    /// Parameter sets worth running in one call: a scorer on this backend leases more units of
    /// the same shard until it holds this many sets, and runs them together (a GPU needs
    /// thousands of lanes to fill its multiprocessors; CPU-sized units have hundreds). 0: one
    /// unit at a time.
    fn batch_sets(&self) -> usize {
        0
    }

    /// Runs a chunk of parameter sets over a loaded shard (called on a blocking thread); one
    /// outcome per set, in order.
    ///
    /// # Errors
    /// A failure of the device for the whole chunk: the scorer logs it and computes the chunk
    /// on the CPU engine instead (cells that fail on their own, such as a parameter set the
    /// strategy refuses, are outcomes in the returned vector, not errors).
    fn run(
        &self,
        strategy: &StrategyEntry,
        data: &ShardData,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<Vec<CellOutcome>, CellFailure>;
}

/// Settings handed to backend providers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendSettings {
    /// GPU scorers per device.
    pub gpu_slots_per_device: usize,
    /// Memory kept free on each device, bytes.
    pub gpu_reserve_bytes: u64,
    /// Device memory for resident shards, bytes.
    pub gpu_shard_budget_bytes: u64,
    /// A node that finds no backend slot refuses to start ([`required_backend_slots`]) rather
    /// than quietly scoring on its CPU cores alone, as a GPU pod should.
    pub require_gpu: bool,
}

impl Default for BackendSettings {
    fn default() -> Self {
        Self {
            gpu_slots_per_device: 4,
            gpu_reserve_bytes: 512 << 20,
            gpu_shard_budget_bytes: 4 << 30,
            require_gpu: false,
        }
    }
}

/// Contributes backend slots to a node.
pub type BackendProvider = fn(&BackendSettings) -> Vec<Arc<dyn UnitBackend>>;

/// Every registered provider.
#[distributed_slice]
pub static BACKEND_PROVIDERS: [BackendProvider];

/// The slots every registered provider offers on this machine.
#[must_use]
pub fn backend_slots(settings: &BackendSettings) -> Vec<Arc<dyn UnitBackend>> {
    BACKEND_PROVIDERS.iter().flat_map(|p| p(settings)).collect()
}

/// The slots of this node (none when `settings` is `None`, i.e. `--no-gpu`).
///
/// # Errors
/// A sentence saying why, when [`BackendSettings::require_gpu`] is set and no slot is offered:
/// no provider linked into the binary, or none found a usable device.
pub fn required_backend_slots(
    settings: Option<&BackendSettings>,
) -> Result<Vec<Arc<dyn UnitBackend>>, String> {
    let slots = settings.map_or_else(Vec::new, backend_slots);
    match settings {
        Some(s) if s.require_gpu && slots.is_empty() => Err(if BACKEND_PROVIDERS.is_empty() {
            "--require-gpu: this binary links no GPU backend (gridtest-cuda)".to_owned()
        } else {
            "--require-gpu: no usable GPU on this node (no NVIDIA driver or device visible, or \
             none with the reserve free: the log above says which)"
                .to_owned()
        }),
        _ => Ok(slots),
    }
}
