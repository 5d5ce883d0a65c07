//! # gridtest-cuda
//!
//! GPU scorers for gridtest, on [cudarc] with dynamic loading and NVRTC: binaries build and
//! start on machines without CUDA, GPUs are found at run time ([`device::detect`]), and a
//! machine without a driver simply has no GPU scorers.
//!
//! * [`source`]: the strategy's CUDA C (see `gridtest::GpuCode` for the ABI) inside a kernel
//!   that runs the CPU engine's execution model, one thread per parameter set, each block
//!   staging the events into shared memory for all its threads.
//! * [`runner`]: compile once per device (NVRTC, no FMA contraction, so results equal the CPU
//!   engine's), upload each shard once per device (byte budget), launch, read back the
//!   accumulators and finish them with the CPU's code.
//! * [`resources`]: registers, stack frame and spills of a strategy's kernel on an
//!   architecture, as ptxas reports them (NVRTC only, no GPU).
//! * [`admission`]: several scorers per card admitted by real free memory minus a reserve;
//!   out-of-memory splits the launch instead of failing cells.
//!
//! Use it by linking it into the sweep binary: `use gridtest_cuda as _;` registers the GPU
//! scorer provider with gridtest's node agents (see [`provider`]).

#![allow(
    unsafe_code,
    reason = "probing for libcuda, launching kernels and reading NVRTC's log go through cudarc's unsafe API; each use has a SAFETY note"
)]

pub mod admission;
pub mod device;
pub mod launch;
pub mod provider;
pub mod resources;
pub mod runner;
pub mod source;
pub mod telemetry;

pub use device::{GpuInfo, NoGpu, detect};
