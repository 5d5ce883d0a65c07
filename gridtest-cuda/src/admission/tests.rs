use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

/// A device with a fixed amount of memory, handing it out in pages of `page` bytes, that
/// records its peak use.
struct SimDevice {
    total: u64,
    page: u64,
    used: Arc<AtomicU64>,
    peak: AtomicU64,
}

impl SimDevice {
    fn new(total: u64, page: u64) -> Self {
        Self {
            total,
            page,
            used: Arc::new(AtomicU64::new(0)),
            peak: AtomicU64::new(0),
        }
    }
}

struct SimAlloc {
    bytes: u64,
    used: Arc<AtomicU64>,
}

impl Drop for SimAlloc {
    fn drop(&mut self) {
        self.used.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl DeviceMemory for SimDevice {
    type Allocation = SimAlloc;

    fn free_bytes(&self) -> u64 {
        self.total - self.used.load(Ordering::SeqCst)
    }

    fn allocate(&self, bytes: u64) -> Result<SimAlloc, OutOfMemory> {
        let bytes = bytes.div_ceil(self.page) * self.page;
        let mut cur = self.used.load(Ordering::SeqCst);
        loop {
            if cur + bytes > self.total {
                return Err(OutOfMemory { needed: bytes });
            }
            match self
                .used
                .compare_exchange(cur, cur + bytes, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        self.peak.fetch_max(cur + bytes, Ordering::SeqCst);
        Ok(SimAlloc {
            bytes,
            used: Arc::clone(&self.used),
        })
    }
}

#[derive(Debug)]
struct Failed;

impl From<OutOfMemory> for Failed {
    fn from(_: OutOfMemory) -> Self {
        Failed
    }
}

#[test]
fn four_slots_sharing_a_squeezed_device_never_exceed_it() {
    // 64 MiB card, 8 MiB reserve, another process holding 16 MiB; each lane needs 1 MiB.
    let device = Arc::new(SimDevice::new(64 << 20, 1));
    let _other_process = device.allocate(16 << 20).unwrap();
    let admission = Arc::new(Admission::new(8 << 20));
    let splits = Arc::new(AtomicU64::new(0));
    let slots: Vec<_> = (0..4)
        .map(|slot| {
            let (device, admission, splits) = (
                Arc::clone(&device),
                Arc::clone(&admission),
                Arc::clone(&splits),
            );
            std::thread::spawn(move || {
                let mut done = 0usize;
                for round in 0..20 {
                    // Chunks of 10 to 60 lanes: larger ones cannot fit beside the others.
                    let lanes: Vec<usize> = (0..10 + (slot * 7 + round * 13) % 51).collect();
                    let mut launch = |chunk: &[usize]| -> Result<Vec<usize>, SplitError<Failed>> {
                        let needed = chunk.len() as u64 * (1 << 20);
                        let mut admitted = admission
                            .admit(&*device, needed, Duration::from_millis(5))
                            .map_err(|oom| {
                                splits.fetch_add(1, Ordering::SeqCst);
                                SplitError::OutOfMemory(oom)
                            })?;
                        let _ = admitted.allocation();
                        std::thread::sleep(Duration::from_micros(200)); // the kernel runs
                        Ok(chunk.to_vec())
                    };
                    let out = run_split(&lanes, &mut launch).unwrap();
                    assert_eq!(out, lanes, "every lane once, in order");
                    done += out.len();
                }
                done
            })
        })
        .collect();
    let done: usize = slots.into_iter().map(|s| s.join().unwrap()).sum();
    assert!(done > 0);
    let peak = device.peak.load(Ordering::SeqCst);
    assert!(peak <= 64 << 20, "peak {peak} exceeds the device");
    assert!(peak <= (64 - 8) << 20, "peak {peak} ate into the reserve");
    assert!(
        splits.load(Ordering::SeqCst) > 0,
        "the budget was squeezed enough to split"
    );
    assert_eq!(
        device.used.load(Ordering::SeqCst),
        16 << 20,
        "everything released"
    );
}

/// Small launches on a device that allocates 2 MiB pages: admission must charge the page, not
/// the kilobytes asked for, or four slots overrun the reserve.
#[test]
fn small_launches_are_charged_whole_pages() {
    const PAGE: u64 = 2 << 20;
    let device = Arc::new(SimDevice::new(64 << 20, PAGE));
    let _other_process = device.allocate(50 << 20).unwrap();
    // 14 MiB free, 7 MiB reserve: room for three pages beyond it.
    let admission = Arc::new(Admission::with_granule(7 << 20, PAGE));
    assert_eq!(admission.charged(100 << 10), PAGE);
    assert_eq!(admission.charged(PAGE + 1), 2 * PAGE);
    let slots: Vec<_> = (0..4)
        .map(|_| {
            let (device, admission) = (Arc::clone(&device), Arc::clone(&admission));
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let lanes: Vec<u32> = (0..8).collect();
                    let mut launch = |chunk: &[u32]| -> Result<Vec<u32>, SplitError<Failed>> {
                        let needed = chunk.len() as u64 * (16 << 10);
                        let _admitted = admission
                            .admit(&*device, needed, Duration::from_millis(50))
                            .map_err(SplitError::OutOfMemory)?;
                        std::thread::sleep(Duration::from_micros(300));
                        Ok(chunk.to_vec())
                    };
                    assert_eq!(run_split(&lanes, &mut launch).unwrap(), lanes);
                }
            })
        })
        .collect();
    for s in slots {
        s.join().unwrap();
    }
    let peak = device.peak.load(Ordering::SeqCst);
    assert!(peak <= (64 - 7) << 20, "peak {peak} ate into the reserve");
    assert!(peak > 50 << 20, "the slots ran");
}

#[test]
fn a_launch_that_cannot_fit_even_alone_fails_clearly() {
    let device = SimDevice::new(4 << 20, 1);
    let admission = Admission::new(1 << 20);
    let mut launch = |chunk: &[u32]| -> Result<Vec<u32>, SplitError<Failed>> {
        admission
            .admit(&device, chunk.len() as u64 * (4 << 20), Duration::ZERO)
            .map_err(SplitError::OutOfMemory)?;
        Ok(chunk.to_vec())
    };
    assert!(run_split(&[1, 2, 3], &mut launch).is_err());
}

#[test]
fn estimates_count_the_shard_once() {
    let e = LaunchEstimate::new(1_000_000, 2, 128, 2, 16);
    assert_eq!(e.shard_bytes, 16_000_000);
    assert_eq!(e.lane_bytes, 128 * 18 * 8);
    assert_eq!(e.needed(true), e.lane_bytes);
    assert_eq!(e.needed(false), e.lane_bytes + e.shard_bytes);
}
