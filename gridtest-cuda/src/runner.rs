//! Running a chunk of parameter sets of one shard on one GPU: the module compiled once per
//! device (NVRTC, no FMA contraction), the shard uploaded once per device and kept within a
//! byte budget, launches admitted by free memory and split when it runs out. Each concurrent
//! run (one per GPU scorer) has its own stream, so the slots of a card overlap.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::CompileOptions;
use gridtest::GpuCode;
use gridtest::data::ShardData;
use gridtest::engine::{ExecModel, RawAccount};
use gridtest::params::ParamSet;
use gridtest::registry::StrategyEntry;
use gridtest::sweep::CellOutcome;
use sha2::{Digest, Sha256};

use crate::admission::{Admission, OutOfMemory, SplitError, run_split};
use crate::device::GpuInfo;
use crate::launch::{FeedLayout, Lanes};

mod memory;
use crate::source::{KERNEL_NAME, SHARED_BYTES, kernel_source};
use memory::CudaMemory;

/// How long a launch waits for memory held by other slots before splitting.
const PATIENCE: Duration = Duration::from_millis(200);

/// Errors of the GPU path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The driver failed.
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// NVRTC rejected the strategy's code.
    #[error("NVRTC could not compile the `{strategy}` kernel: {log}")]
    Compile {
        /// The strategy.
        strategy: String,
        /// The compiler's log.
        log: String,
    },
    /// Not even one lane fits in the device's free memory.
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
    /// The lookback does not fit in shared memory.
    #[error(
        "a lookback of {lookback} events over {n_cols} columns, with {series} shared means per \
         block of one warp, does not fit in {SHARED_BYTES} bytes of shared memory"
    )]
    Lookback {
        /// The largest lookback of the chunk.
        lookback: usize,
        /// Columns of the feed.
        n_cols: usize,
        /// Distinct shared means in the widest block.
        series: usize,
    },
    /// A parameter set declares a shared series that no device computes.
    #[error(
        "strategy `{strategy}` declares a shared series of type `{series}`: the GPU path \
         computes only `SharedMean`s (run it on CPU scorers, or declare its means as SharedMean)"
    )]
    Series {
        /// The strategy.
        strategy: String,
        /// The series' Rust type.
        series: &'static str,
    },
}

impl From<DriverError> for GpuError {
    fn from(e: DriverError) -> Self {
        Self::Driver(e.to_string())
    }
}

fn is_oom(e: &DriverError) -> bool {
    e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

/// A stream lent to one run, back to the device's pool on drop.
struct LentStream<'a> {
    device: &'a GpuDevice,
    stream: Option<Arc<CudaStream>>,
}

impl std::ops::Deref for LentStream<'_> {
    type Target = Arc<CudaStream>;

    fn deref(&self) -> &Arc<CudaStream> {
        self.stream.as_ref().expect("present until drop")
    }
}

impl Drop for LentStream<'_> {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            self.device
                .streams
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(stream);
        }
    }
}

type ShardKey = (String, String);

/// Shards resident on a device, least recently used first.
#[derive(Default)]
struct ShardCache {
    budget: u64,
    bytes: u64,
    order: VecDeque<ShardKey>,
    slices: HashMap<ShardKey, Arc<CudaSlice<f64>>>,
}

/// NVRTC options for the CPU engine's arithmetic: no fused multiply-add, IEEE division and
/// square root, no flush to zero.
pub(crate) const EXACT_MATH: [&str; 4] = [
    "--ftz=false",
    "--prec-sqrt=true",
    "--prec-div=true",
    "--fmad=false",
];

/// Compiles a strategy's kernel to PTX with NVRTC: no fused multiply-add, IEEE division and
/// square root, no flush to zero, so the device computes what the CPU engine computes. Needs
/// only `libnvrtc`, no GPU.
///
/// # Errors
/// [`GpuError::Compile`] with NVRTC's log.
pub fn compile(strategy: &str, code: &GpuCode) -> Result<cudarc::nvrtc::Ptx, GpuError> {
    cudarc::nvrtc::compile_ptx_with_opts(
        kernel_source(code),
        CompileOptions {
            options: EXACT_MATH.iter().map(|o| (*o).to_owned()).collect(),
            ..CompileOptions::default()
        },
    )
    .map_err(|e| GpuError::Compile {
        strategy: strategy.to_owned(),
        log: e.to_string(),
    })
}

/// One GPU, shared by its slots (GPU scorers).
pub struct GpuDevice {
    /// What the driver reported at start.
    pub info: GpuInfo,
    ctx: Arc<CudaContext>,
    multiprocessors: u32,
    /// Idle streams; a run takes one (or makes one) and gives it back.
    streams: Mutex<Vec<Arc<CudaStream>>>,
    admission: Admission,
    launches: AtomicU64,
    splits: AtomicU64,
    kernels: Mutex<HashMap<[u8; 32], CudaFunction>>,
    shards: Mutex<ShardCache>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl GpuDevice {
    /// Opens device `info.ordinal`, keeping `reserve` bytes free and at most `shard_budget`
    /// bytes of shards resident.
    ///
    /// # Errors
    /// [`GpuError::Driver`].
    pub fn open(info: GpuInfo, reserve: u64, shard_budget: u64) -> Result<Self, GpuError> {
        let ctx = CudaContext::new(info.ordinal)?;
        let multiprocessors = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            .try_into()
            .unwrap_or(1);
        Ok(Self {
            info,
            ctx,
            multiprocessors,
            streams: Mutex::new(Vec::new()),
            admission: Admission::new(reserve),
            launches: AtomicU64::new(0),
            splits: AtomicU64::new(0),
            kernels: Mutex::new(HashMap::new()),
            shards: Mutex::new(ShardCache {
                budget: shard_budget,
                ..ShardCache::default()
            }),
        })
    }

    /// Multiprocessors of the device.
    #[must_use]
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The device's free memory as the driver reports it now, bytes.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        self.ctx.mem_get_info().map_or(0, |(free, _)| free as u64)
    }

    /// Admission of launches on this device (its reserve can be changed).
    #[must_use]
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Kernel launches so far, and launches refused for memory (then split).
    #[must_use]
    pub fn launch_counts(&self) -> (u64, u64) {
        (
            self.launches.load(Ordering::Relaxed),
            self.splits.load(Ordering::Relaxed),
        )
    }

    fn lend_stream(&self) -> Result<LentStream<'_>, GpuError> {
        let idle = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let stream = match idle {
            Some(s) => s,
            None => self.ctx.new_stream()?,
        };
        Ok(LentStream {
            device: self,
            stream: Some(stream),
        })
    }

    fn kernel(&self, strategy: &str, code: &GpuCode) -> Result<CudaFunction, GpuError> {
        let source = kernel_source(code);
        let key: [u8; 32] = Sha256::digest(source.as_bytes()).into();
        let mut kernels = self
            .kernels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = kernels.get(&key) {
            return Ok(f.clone());
        }
        let ptx = compile(strategy, code)?;
        let function = self.ctx.load_module(ptx)?.load_function(KERNEL_NAME)?;
        tracing::info!(gpu = self.info.ordinal, strategy, "kernel compiled");
        kernels.insert(key, function.clone());
        Ok(function)
    }

    /// The shard's columns on the device (uploaded on first use, through `stream`, complete
    /// before any other run sees it).
    fn shard(
        &self,
        data: &ShardData,
        stream: &Arc<CudaStream>,
    ) -> Result<Arc<CudaSlice<f64>>, GpuError> {
        let key = (
            data.info()
                .files
                .first()
                .map(|f| f.url.clone())
                .unwrap_or_default(),
            data.shard().to_string(),
        );
        let mut cache = self
            .shards
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = cache.slices.get(&key).cloned() {
            cache.order.retain(|k| k != &key);
            cache.order.push_back(key);
            return Ok(s);
        }
        let n = usize::try_from(data.n_rows()).unwrap_or(usize::MAX);
        let n_cols = data.kind().columns().len();
        let mut host = Vec::with_capacity(n * n_cols);
        for c in 0..n_cols {
            for b in data.batches() {
                host.extend_from_slice(&b.columns()[c]);
            }
        }
        let bytes = host.len() as u64 * 8;
        while cache.bytes + bytes > cache.budget && !cache.order.is_empty() {
            if let Some(old) = cache.order.pop_front()
                && let Some(s) = cache.slices.remove(&old)
            {
                cache.bytes -= s.len() as u64 * 8;
            }
        }
        let oom = |e: DriverError| {
            if is_oom(&e) {
                GpuError::OutOfMemory(OutOfMemory { needed: bytes })
            } else {
                GpuError::from(e)
            }
        };
        let slice = Arc::new(stream.clone_htod(&host).map_err(oom)?);
        stream.synchronize().map_err(oom)?;
        cache.bytes += bytes;
        cache.order.push_back(key.clone());
        cache.slices.insert(key, Arc::clone(&slice));
        Ok(slice)
    }

    /// Runs `sets` over `data` with the strategy's device code; one outcome per set, in order.
    /// Parameter sets that do not fit the strategy fail alone; a launch that runs out of memory
    /// is split, not failed.
    ///
    /// # Errors
    /// [`GpuError`] when the device cannot run the chunk at all (the caller falls back to the
    /// CPU engine or reports the unit).
    pub fn run(
        &self,
        strategy: &StrategyEntry,
        code: &GpuCode,
        data: &ShardData,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<Vec<CellOutcome>, GpuError> {
        let mut outcomes: Vec<Option<CellOutcome>> = vec![None; sets.len()];
        let lanes = Lanes::prepare(strategy, code, sets)?;
        for (set, failure) in lanes.refused() {
            outcomes[*set] = Some(Err(failure.clone()));
        }
        if lanes.is_empty() {
            return Ok(outcomes.into_iter().flatten().collect());
        }
        let function = self.kernel(strategy.name, code)?;
        let stream = self.lend_stream()?;
        let shard = self.shard(data, &stream)?;
        let job = Job {
            lanes: &lanes,
            function: &function,
            stream: &stream,
            shard: &shard,
            n: i64::try_from(data.n_rows()).unwrap_or(i64::MAX),
            feed: FeedLayout::of(data.kind()),
            exec,
        };
        let lane_ids: Vec<usize> = (0..lanes.len()).collect();
        let raw = run_split(&lane_ids, &mut |chunk| self.launch(&job, chunk))?;
        let annual = exec.annualisation();
        for (lane, account) in raw.into_iter().enumerate() {
            let set = lanes.set_of(lane);
            outcomes[set] = Some(account.finish(data.n_rows(), data.n_days(), annual));
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("every set has an outcome"))
            .collect())
    }

    /// Launches lanes `chunk` of `job` and reads their accounts back, or says why not (out of
    /// memory: the caller splits the chunk).
    fn launch(
        &self,
        job: &Job<'_>,
        chunk: &[usize],
    ) -> Result<Vec<RawAccount>, SplitError<GpuError>> {
        let feed = job.feed;
        let launch = job
            .lanes
            .launch(chunk, feed.n_cols, self.multiprocessors, SHARED_BYTES)
            .map_err(SplitError::Other)?;
        let (params, table) = (&launch.params, &launch.table);
        let out_len = chunk.len() * RawAccount::DEVICE_LEN;
        let needed = ((params.len() + table.len() + out_len) * 8) as u64;
        let memory = CudaMemory {
            device: self,
            stream: job.stream,
        };
        let mut admitted = self
            .admission
            .admit(&memory, needed, PATIENCE)
            .map_err(|oom| {
                self.splits.fetch_add(1, Ordering::Relaxed);
                SplitError::OutOfMemory(oom)
            })?;
        let buffer = admitted.allocation().slice_mut();
        let (mut params_dev, mut rest) = buffer.split_at_mut(params.len());
        let (mut table_dev, mut out_dev) = rest.split_at_mut(table.len());
        let other = |e: DriverError| {
            if is_oom(&e) {
                self.splits.fetch_add(1, Ordering::Relaxed);
                SplitError::OutOfMemory(OutOfMemory { needed })
            } else {
                SplitError::Other(GpuError::from(e))
            }
        };
        let stream = job.stream;
        stream.memcpy_htod(params, &mut params_dev).map_err(other)?;
        stream.memcpy_htod(table, &mut table_dev).map_err(other)?;
        let config = LaunchConfig {
            grid_dim: (launch.blocks, 1, 1),
            block_dim: (launch.threads, 1, 1),
            shared_mem_bytes: u32::try_from(launch.plan.shared_bytes).unwrap_or(u32::MAX),
        };
        let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        let shape = [
            int(feed.n_cols),
            int(launch.plan.stage),
            int(launch.lookback),
        ];
        let lanes = [int(launch.param_len), int(launch.n_lanes)];
        let series = [
            int(launch.n_series),
            int(launch.slot_at),
            int(launch.n_slots),
        ];
        let (cost, max_lev) = (job.exec.cost_rate(), job.exec.max_leverage);
        let columns = [int(feed.fill), int(feed.mark), i32::from(feed.intrabar)];
        let mut builder = stream.launch_builder(job.function);
        builder.arg(job.shard.as_ref()).arg(&job.n);
        builder.arg(&shape[0]).arg(&shape[1]).arg(&shape[2]);
        builder.arg(&mut params_dev).arg(&lanes[0]).arg(&lanes[1]);
        builder
            .arg(&mut table_dev)
            .arg(&series[0])
            .arg(&series[1])
            .arg(&series[2]);
        builder.arg(&cost).arg(&max_lev);
        builder.arg(&columns[0]).arg(&columns[1]).arg(&columns[2]);
        builder.arg(&mut out_dev);
        // SAFETY: the argument list matches `gt_run`'s signature in source.rs, every buffer
        // is as long as the kernel reads (`n_cols × n` shard values, `n_lanes × param_len`
        // parameters, `blocks × n_series × 2` table entries, `n_lanes × GT_OUT_LEN`
        // results), every slot index a lane holds is below `n_series`, and the shared
        // memory requested is the plan's, which counts the staged window, the means, their
        // sums and the events' growth (`LaunchPlan::new`).
        unsafe { builder.launch(config) }.map_err(other)?;
        self.launches.fetch_add(1, Ordering::Relaxed);
        let mut out = vec![0.0f64; out_len];
        stream.memcpy_dtoh(&out_dev, &mut out).map_err(other)?;
        stream.synchronize().map_err(other)?;
        Ok(out
            .chunks(RawAccount::DEVICE_LEN)
            .map(RawAccount::from_device)
            .collect())
    }
}

/// One run's fixed parts: its lanes, the compiled kernel, the stream lent to it, the shard on
/// the device and what the kernel needs of its feed.
struct Job<'a> {
    lanes: &'a Lanes,
    function: &'a CudaFunction,
    stream: &'a Arc<CudaStream>,
    shard: &'a Arc<CudaSlice<f64>>,
    n: i64,
    feed: FeedLayout,
    exec: &'a ExecModel,
}
