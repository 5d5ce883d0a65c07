//! GPU scorers for gridtest's node agents: when this crate is linked into a sweep binary, every
//! node finds its GPUs at start and runs `gpu_slots_per_device` GPU scorers per device (none,
//! with a log line saying why, where there is no driver or no device).

use std::sync::Arc;

use gridtest::__private::linkme;
use gridtest::actors::{BACKEND_PROVIDERS, BackendProvider, BackendSettings, UnitBackend};
use gridtest::data::ShardData;
use gridtest::engine::ExecModel;
use gridtest::params::ParamSet;
use gridtest::registry::StrategyEntry;
use gridtest::sweep::{CellFailure, CellOutcome, FailureKind};

use crate::device::detect;
use crate::runner::GpuDevice;

#[linkme::distributed_slice(BACKEND_PROVIDERS)]
#[linkme(crate = gridtest::__private::linkme)]
static CUDA_PROVIDER: BackendProvider = gpu_slots;

/// One GPU scorer slot on a shared device.
#[derive(Debug)]
pub struct GpuSlot {
    device: Arc<GpuDevice>,
    index: usize,
}

impl UnitBackend for GpuSlot {
    fn slot(&self) -> String {
        format!("gpu{}-{}", self.device.info.ordinal, self.index)
    }

    fn supports(&self, strategy: &StrategyEntry) -> bool {
        (strategy.gpu)().is_some()
    }

    fn batch_sets(&self) -> usize {
        // A thread per parameter set: one warp per multiprocessor at least, so a slot's launch
        // can occupy the whole card (CPU-sized units hold a few hundred sets).
        self.device.multiprocessors() as usize * crate::source::MIN_BLOCK_THREADS as usize
    }

    fn telemetry(&self) -> Option<gridtest::sweep::DeviceTelemetry> {
        // One reading per device, from its first slot.
        if self.index != 0 {
            return None;
        }
        let ordinal = u32::try_from(self.device.info.ordinal).ok()?;
        crate::telemetry::sample(ordinal).map(crate::telemetry::GpuTelemetry::reading)
    }

    fn run(
        &self,
        strategy: &StrategyEntry,
        data: &ShardData,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<Vec<CellOutcome>, CellFailure> {
        let code = (strategy.gpu)().ok_or_else(|| {
            CellFailure::new(
                FailureKind::Crash,
                format!("strategy `{}` has no GPU code", strategy.name),
            )
        })?;
        self.device
            .run(strategy, &code, data, sets, exec)
            .map_err(|e| CellFailure::new(FailureKind::Crash, format!("{}: {e}", self.slot())))
    }
}

/// The GPU slots of this machine (empty without a usable GPU).
#[must_use]
pub fn gpu_slots(settings: &BackendSettings) -> Vec<Arc<dyn UnitBackend>> {
    let gpus = match detect() {
        Ok(gpus) => gpus,
        Err(why) => {
            tracing::info!(reason = %why, "no GPU scorers");
            return Vec::new();
        }
    };
    let mut slots: Vec<Arc<dyn UnitBackend>> = Vec::new();
    for info in gpus {
        let ordinal = info.ordinal;
        match GpuDevice::open(
            info,
            settings.gpu_reserve_bytes,
            settings.gpu_shard_budget_bytes,
        ) {
            Ok(device) => {
                let device = Arc::new(device);
                tracing::info!(gpu = ordinal, name = %device.info.name,
                    free_mib = device.info.free_bytes >> 20, slots = settings.gpu_slots_per_device,
                    "GPU scorers");
                for index in 0..settings.gpu_slots_per_device {
                    slots.push(Arc::new(GpuSlot {
                        device: Arc::clone(&device),
                        index,
                    }));
                }
            }
            Err(e) => tracing::warn!(gpu = ordinal, error = %e, "cannot open the GPU"),
        }
    }
    slots
}
