//! What the device compiler reports for a strategy's kernel: registers, stack frame and spills
//! on one GPU architecture, read from ptxas's verbose log through NVRTC. Needs only
//! `libnvrtc`, no GPU, so CI checks that the kernels keep their per-event state in registers
//! (a stack frame means a local-memory array rebuilt per event, as the kernel had before its
//! column pointers moved to registers, and costs a fifth of its time on an H200).

use std::ffi::CString;

use cudarc::nvrtc::result;
use gridtest::GpuCode;

use crate::runner::{EXACT_MATH, GpuError};
use crate::source::{KERNEL_NAME, kernel_source};

/// ptxas's figures for the kernel on one architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of local memory per thread for the stack frame (arrays indexed at run time).
    pub stack_frame_bytes: u32,
    /// Bytes per thread spilled to local memory.
    pub spill_store_bytes: u32,
    /// Bytes per thread reloaded from spills.
    pub spill_load_bytes: u32,
}

/// Compiles `strategy`'s kernel for `arch` (e.g. `"sm_90"`) with the runner's options and
/// returns what ptxas reports for it.
///
/// ```no_run
/// # fn check(code: &gridtest::GpuCode) -> Result<(), gridtest_cuda::runner::GpuError> {
/// let kernel = gridtest_cuda::resources::kernel_resources("my_strategy", code, "sm_90")?;
/// assert_eq!(kernel.stack_frame_bytes, 0, "no per-event array in local memory");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`GpuError::Compile`] when NVRTC rejects the code or its log holds no report for the kernel.
pub fn kernel_resources(
    strategy: &str,
    code: &GpuCode,
    arch: &str,
) -> Result<KernelResources, GpuError> {
    let failed = |log: String| GpuError::Compile {
        strategy: strategy.to_owned(),
        log,
    };
    let source = CString::new(kernel_source(code)).map_err(|e| failed(e.to_string()))?;
    let mut options: Vec<String> = EXACT_MATH.iter().map(|o| (*o).to_owned()).collect();
    options.push(format!("--gpu-architecture={arch}"));
    options.push("--ptxas-options=--verbose".to_owned());
    let program = result::create_program(&source, None).map_err(|e| failed(e.to_string()))?;
    // SAFETY: `program` was created just above and is destroyed once, after its last use.
    let compiled = unsafe { result::compile_program(program, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(program) };
    // SAFETY: as above; nothing uses `program` after this.
    unsafe { result::destroy_program(program) }.map_err(|e| failed(e.to_string()))?;
    let log: Vec<u8> = log
        .map_err(|e| failed(e.to_string()))?
        .into_iter()
        .map(|c| c.to_ne_bytes()[0])
        .take_while(|&b| b != 0)
        .collect();
    let log = String::from_utf8_lossy(&log).into_owned();
    compiled.map_err(|e| failed(format!("{e}: {log}")))?;
    parse_report(&log).ok_or_else(|| failed(format!("no ptxas report for {KERNEL_NAME}: {log}")))
}

/// The kernel's figures from ptxas's verbose log: the line after `Function properties for
/// gt_run` (stack frame and spills) and the next `Used N registers`.
fn parse_report(log: &str) -> Option<KernelResources> {
    let mut lines = log
        .lines()
        .skip_while(|l| !l.ends_with(&format!("Function properties for {KERNEL_NAME}")))
        .skip(1);
    let frame = lines.next()?;
    let bytes_before = |label: &str| -> Option<u32> {
        let before = &frame[..frame.find(label)?];
        before.split_whitespace().last()?.parse().ok()
    };
    let used = lines.find_map(|l| l.split_once("Used "))?.1;
    Some(KernelResources {
        registers: used.split_whitespace().next()?.parse().ok()?,
        stack_frame_bytes: bytes_before(" bytes stack frame")?,
        spill_store_bytes: bytes_before(" bytes spill stores")?,
        spill_load_bytes: bytes_before(" bytes spill loads")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_read_for_the_kernel_alone() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Function properties for helper\n\
            ptxas         .     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Compiling entry function 'gt_run' for 'sm_90'\n\
            ptxas info    : Function properties for gt_run\n\
            ptxas         .     104 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads\n\
            ptxas info    : Used 98 registers, used 1 barriers, 104 bytes cumulative stack size\n";
        assert_eq!(
            parse_report(log),
            Some(KernelResources {
                registers: 98,
                stack_frame_bytes: 104,
                spill_store_bytes: 16,
                spill_load_bytes: 24,
            })
        );
        assert_eq!(parse_report("ptxas info    : 0 bytes gmem\n"), None);
    }
}
