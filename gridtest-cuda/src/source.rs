//! CUDA C for a strategy: the engine's execution model as device functions, the strategy's
//! `gt_init`/`gt_step`, and the kernel (one thread per parameter set, the block staging each
//! stretch of events into shared memory for all its threads).
//!
//! The very same kernel text is also emitted as a host C++ program ([`host_harness_source`]):
//! a few lines of emulation give it CUDA's execution model (each block's threads are OS threads,
//! `__syncthreads()` is a barrier, the block's shared memory is a buffer of exactly the launch's
//! size), so a C++ compiler on a machine without a GPU runs the kernel itself, staging and
//! indexing included, and checks it against the CPU engine. Both forms are compiled without FMA
//! contraction (`--fmad=false`, `-ffp-contract=off`): the same IEEE operations in the same order
//! as the Rust engine give the same bits.

use gridtest::GpuCode;
use gridtest::engine::{RawAccount, TILE};
use gridtest::strategy::MAX_COLUMNS;

/// Most threads per block.
pub const MAX_BLOCK_THREADS: u32 = 128;

/// Fewest threads per block: one warp.
pub const MIN_BLOCK_THREADS: u32 = 32;

/// Shared memory a block may use without opting in to more (bytes).
pub const SHARED_BYTES: usize = 48 * 1024;

/// Name of the kernel in the generated module.
pub const KERNEL_NAME: &str = "gt_run";

/// How a chunk of parameter sets is launched: how many events each block stages into shared
/// memory per pass, and the block shape. The runner launches with it and the host harness runs
/// the kernel with it, so both share one computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchPlan {
    /// Events staged per pass (beside the lookback).
    pub stage: usize,
    /// Dynamic shared memory per block: `n_cols × (lookback + stage)` doubles.
    pub shared_bytes: usize,
}

impl LaunchPlan {
    /// The plan for a feed of `n_cols` columns and a largest lookback of `lookback` events,
    /// within `shared_limit` bytes of shared memory per block; `None` if the lookback does not
    /// fit (see [`stage_len`]).
    ///
    /// ```
    /// use gridtest_cuda::source::{LaunchPlan, SHARED_BYTES};
    /// let plan = LaunchPlan::new(2, 1000, SHARED_BYTES).unwrap();
    /// assert_eq!((plan.stage, plan.shared_bytes), (1024, 2 * 2024 * 8));
    /// // The W1 grid (955 sets) on a 132-multiprocessor card: 30 blocks of one warp.
    /// assert_eq!(plan.shape(955, 132), (30, 32));
    /// // 100 000 sets: blocks of 128 threads.
    /// assert_eq!(plan.shape(100_000, 132), (782, 128));
    /// ```
    #[must_use]
    pub fn new(n_cols: usize, lookback: usize, shared_limit: usize) -> Option<Self> {
        let stage = stage_len(n_cols, lookback, shared_limit)?;
        Some(Self {
            stage,
            shared_bytes: n_cols.max(1) * (lookback + stage) * 8,
        })
    }

    /// `(blocks, threads per block)` for `n_lanes` parameter sets on a device with
    /// `multiprocessors` multiprocessors: blocks of [`MAX_BLOCK_THREADS`], narrowed (down to one
    /// warp) while that would leave multiprocessors idle. A thread runs one parameter set over
    /// the whole shard, so few sets must be spread over many multiprocessors to keep them busy.
    #[must_use]
    pub fn shape(&self, n_lanes: usize, multiprocessors: u32) -> (u32, u32) {
        let lanes = u32::try_from(n_lanes).unwrap_or(u32::MAX).max(1);
        let mut threads = MAX_BLOCK_THREADS;
        while threads > MIN_BLOCK_THREADS && lanes.div_ceil(threads) < multiprocessors {
            threads /= 2;
        }
        (lanes.div_ceil(threads), threads)
    }
}

/// The execution model (mirrors `gridtest::engine` account.rs line by line).
const ACCOUNT: &str = r#"
typedef struct {
    double equity, weight, held, pending;
    double shift, s1, s2;
    long long active;
    long long mom_n;
    double mom_mean, mom_m2;
    double downside2;
    double peak, trough, dd_max;
    long long trades, exposed, round_trips, wins;
    double entry_equity, gross_win, gross_loss;
    long long bad_index;
    double bad_value;
} GtAccount;

__device__ void gt_account_init(GtAccount* a) {
    a->equity = 1.0; a->weight = 0.0; a->held = 0.0; a->pending = 0.0;
    a->shift = 0.0; a->s1 = 0.0; a->s2 = 0.0; a->active = 0;
    a->mom_n = 0; a->mom_mean = 0.0; a->mom_m2 = 0.0;
    a->downside2 = 0.0;
    a->peak = 1.0; a->trough = 1.0; a->dd_max = 0.0;
    a->trades = 0; a->exposed = 0; a->round_trips = 0; a->wins = 0;
    a->entry_equity = 1.0; a->gross_win = 0.0; a->gross_loss = 0.0;
    a->bad_index = -1; a->bad_value = 0.0;
}

__device__ double gt_growth(double w, double g) { return w == 1.0 ? g : 1.0 + w * (g - 1.0); }

__device__ double gt_sign(double x) { return x < 0.0 || (x == 0.0 && 1.0 / x < 0.0) ? -1.0 : 1.0; }

__device__ void gt_set_target(GtAccount* a, double target, long long index, double max_lev) {
    if (fabs(target) <= max_lev) {
        a->pending = target;
    } else if (target != target) {
        if (a->bad_index < 0) { a->bad_index = index; a->bad_value = target; }
    } else {
        a->pending = target < -max_lev ? -max_lev : (target > max_lev ? max_lev : target);
    }
}

__device__ double gt_trade(GtAccount* a, double m, double target, double cost) {
    double f = a->weight;
    double k = target > f ? (1.0 + cost * f) / (1.0 + cost * target)
                          : (1.0 - cost * f) / (1.0 - cost * target);
    double before_fee = a->equity * m;
    m = m * k;
    double after = a->equity * m;
    double held = a->held;
    if (held == 0.0) {
        a->entry_equity = before_fee;
    } else if (target == 0.0 || gt_sign(target) != gt_sign(held)) {
        double pnl = after - a->entry_equity;
        a->round_trips += 1;
        if (pnl > 0.0) { a->wins += 1; a->gross_win += pnl; } else { a->gross_loss -= pnl; }
        a->entry_equity = after;
    }
    a->trades += 1;
    a->held = target;
    a->weight = target;
    return m;
}

__device__ void gt_account_step(GtAccount* a, double g_fill, double g_hold, double cost, int intrabar) {
    double target = a->pending;
    if (a->held == 0.0 && target == 0.0) return;
    double m = 1.0;
    double w = a->weight;
    int exposed = w != 0.0;
    if (exposed) {
        m = gt_growth(w, g_fill);
        if (w != 1.0) a->weight = w * g_fill / m;
    }
    if (target != a->held) m = gt_trade(a, m, target, cost);
    if (intrabar && a->weight != 0.0) {
        exposed = 1;
        double w2 = a->weight;
        double g = gt_growth(w2, g_hold);
        if (w2 != 1.0) a->weight = w2 * g_hold / g;
        m *= g;
    }
    a->exposed += exposed;
    double equity = a->equity * m;
    a->equity = equity;
    double r = m - 1.0;
    double d = r - a->shift;
    a->s1 += d;
    a->s2 += d * d;
    double down = r < 0.0 ? r : 0.0;
    a->downside2 += down * down;
    a->active += 1;
    if (equity > a->peak) {
        double dd = 1.0 - a->trough / a->peak;
        if (dd > a->dd_max) a->dd_max = dd;
        a->peak = equity;
        a->trough = equity;
    } else if (equity < a->trough) {
        a->trough = equity;
    }
}

__device__ void gt_end_tile(GtAccount* a, long long periods) {
    if (periods == 0) return;
    double flats = (double)(periods - a->active);
    double s1 = a->s1 - flats * a->shift;
    double s2 = a->s2 + flats * a->shift * a->shift;
    double n = (double)periods;
    double mean = a->shift + s1 / n;
    double m2 = s2 - s1 * s1 / n;
    if (!(m2 > 0.0)) m2 = 0.0;
    if (a->mom_n == 0) {
        a->mom_n = periods; a->mom_mean = mean; a->mom_m2 = m2;
    } else {
        double na = (double)a->mom_n;
        double nb = (double)periods;
        double nn = na + nb;
        double delta = mean - a->mom_mean;
        a->mom_mean += delta * (nb / nn);
        a->mom_m2 += m2 + delta * delta * (na * nb / nn);
        a->mom_n += periods;
    }
    a->shift = a->mom_mean;
    a->s1 = 0.0; a->s2 = 0.0; a->active = 0;
}

__device__ void gt_account_write(const GtAccount* a, double* out) {
    out[0] = a->equity; out[1] = (double)a->mom_n; out[2] = a->mom_mean; out[3] = a->mom_m2;
    out[4] = a->downside2; out[5] = a->peak; out[6] = a->trough; out[7] = a->dd_max;
    out[8] = (double)a->trades; out[9] = (double)a->exposed; out[10] = (double)a->round_trips;
    out[11] = (double)a->wins; out[12] = a->gross_win; out[13] = a->gross_loss;
    out[14] = (double)a->bad_index; out[15] = a->bad_value; out[16] = a->held;
}
"#;

/// One lane over events `[base, base + len)` of a staged window: `win[c * span + lookback + j]`
/// is column c at event `base + j` (and `j` down to `-lookback` reads history, 0 before the
/// start). Mirrors `run_lane` of the CPU kernel, with moment tiles closed on multiples of
/// `GT_TILE` events.
const LANE: &str = r#"
typedef struct {
    GtAccount acct;
    long long tile_start;
} GtLane;

__device__ void gt_lane_events(GtLane* lane, double* state, const double* p, const double* win,
                               int span, int lookback, int n_cols, long long base, int len,
                               long long n, double cost, double max_lev, int fill_col,
                               int mark_col, int intrabar) {
    const double* col[GT_MAX_COLS];
    for (int j = 0; j < len; ++j) {
        long long t = base + j;
        int at = lookback + j;
        if (t > 0) {
            double fill = win[fill_col * span + at];
            double g_fill = fill / win[mark_col * span + at - 1];
            double g_hold = intrabar ? win[mark_col * span + at] / fill : 1.0;
            gt_account_step(&lane->acct, g_fill, g_hold, cost, intrabar);
        }
        for (int c = 0; c < n_cols; ++c) col[c] = win + c * span + at;
        double target = gt_step(state, p, col, t);
        gt_set_target(&lane->acct, target, t, max_lev);
        if ((t + 1) % GT_TILE == 0 || t + 1 == n) {
            long long periods = (t + 1) - lane->tile_start - (lane->tile_start == 0 ? 1 : 0);
            gt_end_tile(&lane->acct, periods);
            lane->tile_start = t + 1;
        }
    }
}
"#;

const KERNEL: &str = r#"
extern "C" __global__ void gt_run(const double* __restrict__ cols, long long n, int n_cols,
                                  int stage, int lookback, const double* __restrict__ params,
                                  int param_len, int n_lanes, double cost, double max_lev,
                                  int fill_col, int mark_col, int intrabar,
                                  double* __restrict__ out) {
    GT_SHARED_WINDOW(win);
    int lane_id = blockIdx.x * blockDim.x + threadIdx.x;
    int active = lane_id < n_lanes;
    const double* p = params + (long long)(active ? lane_id : 0) * param_len;
    double state[GT_STATE_LEN];
    for (int i = 0; i < GT_STATE_LEN; ++i) state[i] = 0.0;
    GtLane lane;
    gt_account_init(&lane.acct);
    lane.tile_start = 0;
    if (active) gt_init(state, p);
    int span = lookback + stage;
    for (long long base = 0; base < n; base += stage) {
        int len = (int)(n - base < (long long)stage ? n - base : (long long)stage);
        __syncthreads();
        for (int i = threadIdx.x; i < n_cols * span; i += blockDim.x) {
            int c = i / span;
            long long t = base - lookback + (i % span);
            win[i] = (t >= 0 && t < n) ? cols[(long long)c * n + t] : 0.0;
        }
        __syncthreads();
        if (active) {
            gt_lane_events(&lane, state, p, win, span, lookback, n_cols, base, len, n, cost,
                           max_lev, fill_col, mark_col, intrabar);
        }
    }
    if (active) gt_account_write(&lane.acct, out + (long long)lane_id * GT_OUT_LEN);
}
"#;

/// CUDA's execution model on the host, for the kernel text: one OS thread per CUDA thread,
/// blocks one after another, `__syncthreads()` a barrier of the block's threads, and the block's
/// dynamic shared memory a fresh heap buffer of exactly the launch's size (so an address
/// sanitizer catches any access beyond it), filled with NaN (so reading a value never staged
/// shows in the results).
const HOST_CUDA: &str = r#"
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>
#include <vector>
using std::fabs; using std::fmax; using std::fmin;
#define __device__ static
#define __global__
struct GtDim3 { unsigned x, y, z; };
static thread_local GtDim3 threadIdx;
static GtDim3 blockIdx, blockDim, gridDim;
static std::barrier<>* gt_block_barrier;
static double* gt_block_shared;
#define __syncthreads() gt_block_barrier->arrive_and_wait()
#define GT_SHARED_WINDOW(name) double* name = gt_block_shared
"#;

const HOST_DRIVER: &str = r#"
static std::vector<double> read_all(const char* path) {
    std::vector<double> v;
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    double x;
    while (std::fread(&x, sizeof x, 1, f) == 1) v.push_back(x);
    std::fclose(f);
    v.shrink_to_fit();
    return v;
}

// argv: cols.bin params.bin out.bin n n_cols stage lookback param_len n_lanes cost max_lev
//       fill_col mark_col intrabar blocks threads_per_block shared_bytes
int main(int argc, char** argv) {
    if (argc != 18) { std::fprintf(stderr, "usage: see source\n"); return 2; }
    std::vector<double> cols = read_all(argv[1]);
    std::vector<double> params = read_all(argv[2]);
    long long n = std::atoll(argv[4]);
    int n_cols = std::atoi(argv[5]), stage = std::atoi(argv[6]), lookback = std::atoi(argv[7]);
    int param_len = std::atoi(argv[8]), n_lanes = std::atoi(argv[9]);
    double cost = std::strtod(argv[10], 0), max_lev = std::strtod(argv[11], 0);
    int fill_col = std::atoi(argv[12]), mark_col = std::atoi(argv[13]), intrabar = std::atoi(argv[14]);
    unsigned blocks = (unsigned)std::atoi(argv[15]), threads = (unsigned)std::atoi(argv[16]);
    size_t shared_bytes = (size_t)std::atoll(argv[17]);
    if ((long long)cols.size() != n * n_cols || (long long)params.size() != (long long)n_lanes * param_len) {
        std::fprintf(stderr, "inputs do not match n, n_cols, n_lanes, param_len\n");
        return 2;
    }
    std::vector<double> out((size_t)n_lanes * GT_OUT_LEN, std::numeric_limits<double>::quiet_NaN());
    gridDim = GtDim3{blocks, 1, 1};
    blockDim = GtDim3{threads, 1, 1};
    for (unsigned b = 0; b < blocks; ++b) {
        blockIdx = GtDim3{b, 0, 0};
        std::vector<double> shared(shared_bytes / sizeof(double), std::numeric_limits<double>::quiet_NaN());
        gt_block_shared = shared.data();
        std::barrier<> barrier((std::ptrdiff_t)threads);
        gt_block_barrier = &barrier;
        std::vector<std::thread> team;
        for (unsigned t = 0; t < threads; ++t) {
            team.emplace_back([&, t] {
                threadIdx = GtDim3{t, 0, 0};
                gt_run(cols.data(), n, n_cols, stage, lookback, params.data(), param_len, n_lanes,
                       cost, max_lev, fill_col, mark_col, intrabar, out.data());
            });
        }
        for (std::thread& t : team) t.join();
    }
    FILE* f = std::fopen(argv[3], "wb");
    if (!f) { std::perror(argv[3]); return 2; }
    std::fwrite(out.data(), sizeof(double), out.size(), f);
    std::fclose(f);
    return 0;
}
"#;

fn defines(code: &GpuCode) -> String {
    format!(
        "#define GT_TILE {TILE}LL\n#define GT_STATE_LEN {}\n#define GT_OUT_LEN {}\n#define GT_MAX_COLS {MAX_COLUMNS}\n",
        code.state_len.max(1),
        RawAccount::DEVICE_LEN,
    )
}

/// How the kernel declares its block's staging window on the device.
const DEVICE_WINDOW: &str = "#define GT_SHARED_WINDOW(name) extern __shared__ double name[]\n";

/// The CUDA module for a strategy (compile with NVRTC, `--fmad=false`).
#[must_use]
pub fn kernel_source(code: &GpuCode) -> String {
    [
        DEVICE_WINDOW,
        defines(code).as_str(),
        ACCOUNT,
        code.source,
        LANE,
        KERNEL,
    ]
    .concat()
}

/// The same kernel as a host C++20 program (compile with `-std=c++20 -pthread
/// -ffp-contract=off`) that runs it under an emulation of CUDA's execution model (see the
/// module documentation), reading and writing raw `f64` files; see the argument list in its
/// `main`.
#[must_use]
pub fn host_harness_source(code: &GpuCode) -> String {
    [
        HOST_CUDA,
        defines(code).as_str(),
        ACCOUNT,
        code.source,
        LANE,
        KERNEL,
        HOST_DRIVER,
    ]
    .concat()
}

/// Events staged per block pass so that `n_cols × (lookback + stage)` doubles fit in
/// `shared_bytes` (at least 32); `None` if even that does not fit.
#[must_use]
pub fn stage_len(n_cols: usize, lookback: usize, shared_bytes: usize) -> Option<usize> {
    let per_event = 8 * n_cols.max(1);
    let capacity = shared_bytes / per_event;
    let stage = capacity.checked_sub(lookback)?;
    (stage >= 32).then_some(stage.min(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code() -> GpuCode {
        GpuCode {
            source: "__device__ void gt_init(double* s, const double* p) {}\n__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) { return 0.0; }\n",
            state_len: 3,
            pack: |_| Ok(Vec::new()),
        }
    }

    #[test]
    fn the_kernel_source_holds_the_strategy_and_the_constants() {
        let src = kernel_source(&code());
        assert!(src.contains("#define GT_TILE 2048LL"));
        assert!(src.contains("#define GT_STATE_LEN 3"));
        assert!(src.contains("#define GT_OUT_LEN 17"));
        assert!(src.contains("extern \"C\" __global__ void gt_run"));
        let init = src.find("gt_init(double* s").unwrap();
        let lane = src.find("gt_lane_events").unwrap();
        assert!(init < lane, "the strategy comes before its caller");
        assert!(src.contains("GT_SHARED_WINDOW(name) extern __shared__"));
        let host = host_harness_source(&code());
        assert!(host.contains("int main(int argc"));
        assert!(
            host.contains(KERNEL),
            "the host program runs the kernel itself"
        );
        assert!(!host.contains("extern __shared__"));
    }

    #[test]
    fn the_stage_fits_shared_memory() {
        assert_eq!(stage_len(2, 1000, 48 * 1024), Some(1024));
        assert_eq!(stage_len(5, 1000, 48 * 1024), Some(228));
        assert_eq!(stage_len(5, 1200, 48 * 1024), None);
    }

    #[test]
    fn the_launch_plan_covers_every_lane_within_shared_memory() {
        for (n_cols, lookback) in [(2, 1), (2, 1000), (5, 500), (5, 1000)] {
            let plan = LaunchPlan::new(n_cols, lookback, SHARED_BYTES).unwrap();
            assert!(plan.shared_bytes <= SHARED_BYTES);
            assert_eq!(plan.shared_bytes, n_cols * (lookback + plan.stage) * 8);
            for multiprocessors in [1, 16, 132] {
                for lanes in [0usize, 1, 31, 32, 127, 128, 129, 955, 1000, 100_000] {
                    let (blocks, threads) = plan.shape(lanes, multiprocessors);
                    let (blocks, threads) = (blocks as usize, threads as usize);
                    assert!(threads % 32 == 0 && (32..=128).contains(&threads));
                    assert!(blocks * threads >= lanes && blocks >= 1);
                    assert!(
                        lanes == 0 || (blocks - 1) * threads < lanes,
                        "no idle block"
                    );
                    if threads > 32 {
                        assert!(
                            blocks * 2 > multiprocessors as usize,
                            "narrower would spread"
                        );
                    }
                }
            }
        }
        assert_eq!(LaunchPlan::new(5, 1200, SHARED_BYTES), None);
    }
}
