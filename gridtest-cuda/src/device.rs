//! Finding GPUs at run time, without panicking where there is no driver.
//!
//! cudarc is built with `dynamic-loading`: nothing CUDA is linked, and the first driver call
//! `dlopen`s `libcuda`. That call panics when the library is missing, so every probe here checks
//! for the library first and runs under `catch_unwind` as well.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// One GPU as the driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Model name.
    pub name: String,
    /// Total memory, bytes.
    pub total_bytes: u64,
    /// Free memory now, bytes.
    pub free_bytes: u64,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

/// Why this machine has no usable GPU.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoGpu {
    /// `libcuda` is not installed (or not mounted into the container).
    #[error("no CUDA driver library (libcuda) on this machine")]
    NoDriver,
    /// The driver is there but reports no device.
    #[error("the CUDA driver reports no device")]
    NoDevice,
    /// `libnvrtc` is missing: kernels cannot be compiled.
    #[error("no NVRTC library (libnvrtc): kernels cannot be compiled")]
    NoNvrtc,
    /// The driver failed.
    #[error("the CUDA driver failed: {0}")]
    Driver(String),
}

fn probe<T>(f: impl FnOnce() -> T) -> Result<T, NoGpu> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| NoGpu::Driver("the driver probe panicked".to_owned()))
}

/// Whether `libcuda` can be loaded.
#[must_use]
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library; no CUDA call is made.
    probe(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// Whether `libnvrtc` can be loaded.
#[must_use]
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    probe(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// The GPUs of this machine, or why there are none. Never panics.
///
/// # Errors
/// [`NoGpu`] saying what is missing.
pub fn detect() -> Result<Vec<GpuInfo>, NoGpu> {
    if !driver_present() {
        return Err(NoGpu::NoDriver);
    }
    let count = probe(cudarc::driver::CudaContext::device_count)?
        .map_err(|e| NoGpu::Driver(e.to_string()))?;
    if count <= 0 {
        return Err(NoGpu::NoDevice);
    }
    if !nvrtc_present() {
        return Err(NoGpu::NoNvrtc);
    }
    (0..usize::try_from(count).unwrap_or(0))
        .map(|ordinal| {
            probe(|| -> Result<GpuInfo, NoGpu> {
                let driver = |e: cudarc::driver::DriverError| NoGpu::Driver(e.to_string());
                let ctx = cudarc::driver::CudaContext::new(ordinal).map_err(driver)?;
                let (free, total) = ctx.mem_get_info().map_err(driver)?;
                Ok(GpuInfo {
                    ordinal,
                    name: ctx.name().map_err(driver)?,
                    total_bytes: total as u64,
                    free_bytes: free as u64,
                    compute_capability: ctx.compute_capability().map_err(driver)?,
                })
            })?
        })
        .collect()
}

/// A one-line description of what [`detect`] found, for logs and reports.
#[must_use]
pub fn describe() -> String {
    match detect() {
        Ok(gpus) => gpus
            .iter()
            .map(|g| {
                format!(
                    "GPU {} {} (sm_{}{}), {:.1}/{:.1} GiB free",
                    g.ordinal,
                    g.name,
                    g.compute_capability.0,
                    g.compute_capability.1,
                    g.free_bytes as f64 / f64::from(1u32 << 30),
                    g.total_bytes as f64 / f64::from(1u32 << 30)
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(why) => format!("no GPU: {why}"),
    }
}
