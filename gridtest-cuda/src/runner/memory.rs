//! Device memory for launches: what admission reads and allocates through, and the buffers
//! it hands out.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::GpuDevice;
use crate::admission::{DeviceMemory, OutOfMemory};

/// Device memory as the driver reports it; allocations are real, ordered on one run's stream.
pub(super) struct CudaMemory<'a> {
    pub(super) device: &'a GpuDevice,
    pub(super) stream: &'a Arc<CudaStream>,
}

impl DeviceMemory for CudaMemory<'_> {
    type Allocation = SettledBuffer;

    fn free_bytes(&self) -> u64 {
        self.device.free_bytes()
    }

    fn allocate(&self, bytes: u64) -> Result<SettledBuffer, OutOfMemory> {
        let len = usize::try_from(bytes.div_ceil(8))
            .unwrap_or(usize::MAX)
            .max(1);
        let oom = |_| OutOfMemory { needed: bytes };
        self.stream.context().bind_to_thread().map_err(oom)?;
        // SAFETY: the context is current on this thread; the pointer is owned by the returned
        // buffer, which frees it exactly once (`SettledBuffer::drop`).
        let ptr = unsafe { cudarc::driver::result::malloc_sync(len * 8) }.map_err(oom)?;
        // SAFETY: `ptr` is a fresh allocation of `len` f64s in this stream's context.
        let mut slice = unsafe { self.stream.upgrade_device_ptr::<f64>(ptr, len) };
        let buffer = |slice| SettledBuffer {
            slice: Some(slice),
            stream: Arc::clone(self.stream),
        };
        if let Err(e) = self.stream.memset_zeros(&mut slice) {
            drop(buffer(slice));
            return Err(oom(e));
        }
        Ok(buffer(slice))
    }
}

/// A launch's device buffer, allocated and freed synchronously (`cuMemAlloc` / `cuMemFree`),
/// outside the stream-ordered pool.
///
/// cudarc allocates from the stream-ordered pool (`cuMemAllocAsync`) when the device has one.
/// Two things made that pool wrong for admission, which reads the driver's free figure: a
/// dropped slice is freed *asynchronously* (the pool keeps the memory until its stream next
/// synchronises: on the H200 the squeeze, four slots with 8 MiB admissible, refused even a
/// single lane), and the pool reserves device memory in chunks larger than the request (with
/// 8 MiB admitted, free memory fell 24 MiB below the reserve). A synchronous allocation takes
/// what was admitted, and is back with the driver when this is dropped.
pub(crate) struct SettledBuffer {
    slice: Option<CudaSlice<f64>>,
    stream: Arc<CudaStream>,
}

impl SettledBuffer {
    pub(super) fn slice_mut(&mut self) -> &mut CudaSlice<f64> {
        self.slice.as_mut().expect("present until drop")
    }
}

impl Drop for SettledBuffer {
    fn drop(&mut self) {
        let Some(slice) = self.slice.take() else {
            return;
        };
        let ptr = slice.leak();
        let freed = self
            .stream
            .synchronize()
            .and_then(|()| self.stream.context().bind_to_thread())
            // SAFETY: `ptr` came from `malloc_sync` in `allocate`, its stream has finished
            // every use of it, and it is freed once, here.
            .and_then(|()| unsafe { cudarc::driver::result::free_sync(ptr) });
        if let Err(e) = freed {
            tracing::warn!(error = %e, "could not free a launch buffer");
        }
    }
}
