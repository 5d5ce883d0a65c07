//! Sharing a card by measured memory: how much a launch needs, whether the device has it now
//! (free memory minus a reserve, as the driver reports it), and what to do when it does not
//! (split the chunk and retry, never fail the cells for it).
//!
//! `gpu_slots_per_device` GPU scorers share one card (the seed design's `num_gpus=0.25` becomes
//! 4 slots). A slot checks and allocates under the device's lock, so slots of one process never
//! race; other processes' use shows in the driver's free figure. A launch that does not fit
//! waits for memory to come back (another slot finishing) or, when nothing else holds memory,
//! runs as smaller launches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Default slots (GPU scorers) per device.
pub const DEFAULT_SLOTS_PER_DEVICE: usize = 4;

/// Default memory kept free on a device for the driver and other users, bytes.
pub const DEFAULT_RESERVE_BYTES: u64 = 512 << 20;

/// The driver hands out device memory in pages of this size: a launch needing a few kilobytes
/// still takes a page, so admission charges whole pages.
pub const ALLOCATION_GRANULE: u64 = 2 << 20;

/// Device memory a launch of `lanes` parameter sets needs, bytes: the shard's columns (shared
/// by every launch on the device once uploaded) and the per-lane parameters and results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchEstimate {
    /// The shard's columns on the device.
    pub shard_bytes: u64,
    /// Parameters and results of the lanes.
    pub lane_bytes: u64,
}

impl LaunchEstimate {
    /// The estimate for `rows × n_cols` shard values and `lanes` lanes of `param_len`
    /// parameters (each writes `out_len` results).
    #[must_use]
    pub fn new(rows: u64, n_cols: usize, lanes: usize, param_len: usize, out_len: usize) -> Self {
        Self {
            shard_bytes: rows * n_cols as u64 * 8,
            lane_bytes: lanes as u64 * (param_len + out_len) as u64 * 8,
        }
    }

    /// Bytes to find free for this launch when the shard is (or is not) already on the device.
    #[must_use]
    pub fn needed(&self, shard_resident: bool) -> u64 {
        self.lane_bytes + if shard_resident { 0 } else { self.shard_bytes }
    }
}

/// An allocation failed for lack of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("out of device memory: {needed} bytes needed")]
pub struct OutOfMemory {
    /// Bytes asked for.
    pub needed: u64,
}

/// What a device can do for admission: report free memory and allocate.
pub trait DeviceMemory: Send + Sync {
    /// A live allocation; freed on drop.
    type Allocation: Send;
    /// Free bytes now, as the driver reports them.
    fn free_bytes(&self) -> u64;
    /// Allocates `bytes`.
    ///
    /// # Errors
    /// [`OutOfMemory`].
    fn allocate(&self, bytes: u64) -> Result<Self::Allocation, OutOfMemory>;
}

/// Admission of launches on one device, shared by its slots.
#[derive(Debug)]
pub struct Admission {
    reserve: AtomicU64,
    granule: u64,
    lock: Mutex<u64>,
    released: Condvar,
}

impl Admission {
    /// Admission keeping `reserve` bytes free, charging allocations in whole
    /// [`ALLOCATION_GRANULE`] pages.
    #[must_use]
    pub fn new(reserve: u64) -> Self {
        Self::with_granule(reserve, ALLOCATION_GRANULE)
    }

    /// Admission keeping `reserve` bytes free on a device that allocates in pages of `granule`
    /// bytes.
    #[must_use]
    pub fn with_granule(reserve: u64, granule: u64) -> Self {
        Self {
            reserve: AtomicU64::new(reserve),
            granule: granule.max(1),
            lock: Mutex::new(0),
            released: Condvar::new(),
        }
    }

    /// Bytes kept free on the device.
    #[must_use]
    pub fn reserve(&self) -> u64 {
        self.reserve.load(Ordering::Relaxed)
    }

    /// Changes the bytes kept free (later admissions see it).
    pub fn set_reserve(&self, bytes: u64) {
        self.reserve.store(bytes, Ordering::Relaxed);
    }

    /// Bytes a request of `needed` bytes takes on the device: whole pages.
    #[must_use]
    pub fn charged(&self, needed: u64) -> u64 {
        needed.max(1).div_ceil(self.granule) * self.granule
    }

    /// Allocates `needed` bytes if the device has them (in whole pages) beyond the reserve. Waits (up to
    /// `patience`) while other slots of this process hold memory that may come back; then gives
    /// up with [`OutOfMemory`] (the caller splits the launch).
    ///
    /// # Errors
    /// [`OutOfMemory`] when the memory is not there.
    pub fn admit<D: DeviceMemory>(
        &self,
        device: &D,
        needed: u64,
        patience: Duration,
    ) -> Result<Admitted<'_, D::Allocation>, OutOfMemory> {
        let mut held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = std::time::Instant::now() + patience;
        let charged = self.charged(needed);
        loop {
            if device.free_bytes().saturating_sub(self.reserve()) >= charged
                && let Ok(allocation) = device.allocate(needed)
            {
                *held += charged;
                return Ok(Admitted {
                    admission: self,
                    bytes: charged,
                    allocation: Some(allocation),
                });
            }
            let now = std::time::Instant::now();
            if *held == 0 || now >= deadline {
                return Err(OutOfMemory { needed });
            }
            held = self
                .released
                .wait_timeout(held, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    fn release(&self, bytes: u64) {
        let mut held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *held -= bytes;
        self.released.notify_all();
    }
}

/// Memory admitted for one launch; released (and waiting slots woken) on drop.
#[derive(Debug)]
pub struct Admitted<'a, A> {
    admission: &'a Admission,
    bytes: u64,
    allocation: Option<A>,
}

impl<A> Admitted<'_, A> {
    /// The allocation.
    ///
    /// # Panics
    /// Never: it is present until drop.
    pub fn allocation(&mut self) -> &mut A {
        self.allocation.as_mut().expect("present until drop")
    }
}

impl<A> Drop for Admitted<'_, A> {
    fn drop(&mut self) {
        drop(self.allocation.take());
        self.admission.release(self.bytes);
    }
}

/// Runs `items` through `launch`, splitting a chunk in halves when it runs out of memory, down
/// to single items; results come back in order.
///
/// # Errors
/// [`OutOfMemory`] if even one item does not fit; any other error of `launch` as is.
pub fn run_split<T, O, E: From<OutOfMemory>>(
    items: &[T],
    launch: &mut impl FnMut(&[T]) -> Result<Vec<O>, SplitError<E>>,
) -> Result<Vec<O>, E> {
    match launch(items) {
        Ok(out) => Ok(out),
        Err(SplitError::OutOfMemory(oom)) if items.len() > 1 => {
            tracing::debug!(
                items = items.len(),
                needed = oom.needed,
                "out of device memory: splitting"
            );
            let (a, b) = items.split_at(items.len() / 2);
            let mut out = run_split(a, launch)?;
            out.extend(run_split(b, launch)?);
            Ok(out)
        }
        Err(SplitError::OutOfMemory(oom)) => Err(E::from(oom)),
        Err(SplitError::Other(e)) => Err(e),
    }
}

/// An error of a launch: out of memory (split and retry) or anything else.
#[derive(Debug)]
pub enum SplitError<E> {
    /// Not enough device memory.
    OutOfMemory(OutOfMemory),
    /// Another failure.
    Other(E),
}

#[cfg(test)]
mod tests;
