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
use gridtest::strategy::{MAX_COLUMNS, MAX_SHARED};

mod host;
pub use host::host_harness_source;

/// Most threads per block.
pub const MAX_BLOCK_THREADS: u32 = 128;

/// Fewest threads per block: one warp.
pub const MIN_BLOCK_THREADS: u32 = 32;

/// Shared memory a block may use without opting in to more (bytes).
pub const SHARED_BYTES: usize = 48 * 1024;

/// Name of the kernel in the generated module.
pub const KERNEL_NAME: &str = "gt_run";

/// How much each block stages into shared memory per pass, and the shared memory that takes.
/// The runner launches with it and the host harness runs the kernel with it, so both share
/// one computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchPlan {
    /// Events staged per pass (beside the lookback).
    pub stage: usize,
    /// Dynamic shared memory per block: the staged window, `n_cols × (lookback + stage)`
    /// doubles, then the block's shared means over the stage, `series × stage`, their running
    /// window sums, `series`, and each staged event's fill and hold growth, `2 × stage`.
    pub shared_bytes: usize,
}

impl LaunchPlan {
    /// The plan for a feed of `n_cols` columns, a largest lookback of `lookback` events and
    /// `series` shared means per block, within `shared_limit` bytes of shared memory per
    /// block; `None` if they do not fit (see [`stage_len`]).
    ///
    /// ```
    /// use gridtest_cuda::source::{LaunchPlan, SHARED_BYTES};
    /// let plan = LaunchPlan::new(2, 1000, 0, SHARED_BYTES).unwrap();
    /// assert_eq!((plan.stage, plan.shared_bytes), (1024, (2 * 2024 + 2 * 1024) * 8));
    /// // With 22 shared means per block: fewer events per pass.
    /// let plan = LaunchPlan::new(2, 1000, 22, SHARED_BYTES).unwrap();
    /// assert_eq!((plan.stage, plan.shared_bytes), (158, (2 * 1158 + 22 * 159 + 2 * 158) * 8));
    /// ```
    #[must_use]
    pub fn new(n_cols: usize, lookback: usize, series: usize, shared_limit: usize) -> Option<Self> {
        let stage = stage_len(n_cols, lookback, series, shared_limit)?;
        Some(Self {
            stage,
            shared_bytes: 8
                * (n_cols.max(1) * (lookback + stage) + series * (stage + 1) + 2 * stage),
        })
    }
}

/// `(blocks, threads per block)` for `n_lanes` parameter sets on a device with
/// `multiprocessors` multiprocessors: blocks of [`MAX_BLOCK_THREADS`], narrowed (down to one
/// warp) while that would leave multiprocessors idle. A thread runs one parameter set over the
/// whole shard, so few sets must be spread over many multiprocessors to keep them busy.
///
/// ```
/// use gridtest_cuda::source::block_shape;
/// // The W1 grid (955 sets) on a 132-multiprocessor card: 30 blocks of one warp.
/// assert_eq!(block_shape(955, 132), (30, 32));
/// // 100 000 sets: blocks of 128 threads.
/// assert_eq!(block_shape(100_000, 132), (782, 128));
/// ```
#[must_use]
pub fn block_shape(n_lanes: usize, multiprocessors: u32) -> (u32, u32) {
    let lanes = u32::try_from(n_lanes).unwrap_or(u32::MAX).max(1);
    let mut threads = MAX_BLOCK_THREADS;
    while threads > MIN_BLOCK_THREADS && lanes.div_ceil(threads) < multiprocessors {
        threads /= 2;
    }
    (lanes.div_ceil(threads), threads)
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

/// What a strategy's device code calls besides its own functions.
const STRATEGY_API: &str = r#"
/// The lane's shared series `slot` (the order `Strategy::shared` declared them) at the current
/// event: what `Cursor::shared(slot)` reads on the CPU.
__device__ double gt_shared(const double* const* col, int slot) { return col[GT_MAX_COLS + slot][0]; }
"#;

/// The launch's constants, a lane over the events of one staged pass, and the block's shared
/// means over that pass. A staged window holds `win[c * span + lookback + j]` = column c at
/// event `base + j` (and `j` down to `-lookback` reads history, 0 before the start). Mirrors
/// `run_lane` of the CPU engine, with moment tiles closed on multiples of `GT_TILE` events.
const LANE: &str = r#"
typedef struct {
    long long n;
    int n_cols, stage, lookback, span;
    int n_series, slot_at, n_slots;
    double cost, max_lev;
    int fill_col, mark_col, intrabar;
} GtLaunch;

typedef struct {
    GtAccount acct;
    long long tile_start;
} GtLane;

/// Events `[base, base + len)` of the staged window `win` for one lane: `means` the block's
/// means over the pass (series k at `means[k * stage + j]`; the lane's slot s at `slot_base[s]`),
/// `growth` each event's fill and hold growth. Pointers over every column and slot, constant
/// bounds: they stay in registers, and those the strategy never reads are dropped.
__device__ void gt_lane_events(GtLane* lane, double* state, const double* p, const int* slot_base,
                               const double* win, const double* means, const double* growth,
                               const GtLaunch* l, long long base, int len) {
    for (int j = 0; j < len; ++j) {
        long long t = base + j;
        int at = l->lookback + j;
        if (t > 0) gt_account_step(&lane->acct, growth[j], growth[l->stage + j], l->cost, l->intrabar);
        const double* col[GT_MAX_COLS + GT_MAX_SHARED];
        for (int c = 0; c < GT_MAX_COLS; ++c) col[c] = win + (c < l->n_cols ? c : 0) * l->span + at;
        for (int s = 0; s < GT_MAX_SHARED; ++s) col[GT_MAX_COLS + s] = means + slot_base[s] + j;
        double target = gt_step(state, p, col, t);
        gt_set_target(&lane->acct, target, t, l->max_lev);
        if ((t + 1) % GT_TILE == 0 || t + 1 == l->n) {
            long long periods = (t + 1) - lane->tile_start - (lane->tile_start == 0 ? 1 : 0);
            gt_end_tile(&lane->acct, periods);
            lane->tile_start = t + 1;
        }
    }
}

/// Each event's growth, the same for every lane, once per block: `growth[j]` the fill over the
/// previous mark, `growth[stage + j]` the mark over the fill on bars (1 on ticks), as `run_lane`.
__device__ void gt_block_growth(double* growth, const double* win, const GtLaunch* l,
                                long long base, int len) {
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        int at = l->lookback + j;
        double fill = win[l->fill_col * l->span + at];
        growth[j] = base + j > 0 ? fill / win[l->mark_col * l->span + at - 1] : 1.0;
        growth[l->stage + j] = l->intrabar ? win[l->mark_col * l->span + at] / fill : 1.0;
    }
}

/// The block's shared means over the `len` events of a staged pass: series k averages column
/// `table[2k]` over `table[2k + 1]` events (0: an unused entry). First one thread per series
/// slides its window sum over the pass (the sum carries from pass to pass in `sums[k]`) and
/// stores the sums; then every thread of the block divides some of them by their window. The
/// operations of `RollingMean` in its order (the sum plus the entering value less the leaving
/// one, then divided by the window), so the means are the CPU's bit for bit; only the
/// dependent adds run one series per thread, the divisions are spread over the whole block.
__device__ void gt_block_means(const double* table, const double* win, double* means,
                               double* sums, const GtLaunch* l, int len) {
    for (int k = threadIdx.x; k < l->n_series; k += blockDim.x) {
        int w = (int)table[2 * k + 1];
        if (w <= 0) continue;
        const double* x = win + (int)table[2 * k] * l->span + l->lookback;
        double sum = sums[k];
        for (int j = 0; j < len; ++j) {
            sum += x[j] - x[j - w];
            means[k * l->stage + j] = sum;
        }
        sums[k] = sum;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < l->n_series * len; i += blockDim.x) {
        int k = i / len;
        int w = (int)table[2 * k + 1];
        if (w > 0) means[k * l->stage + i % len] /= (double)w;
    }
}
"#;

const KERNEL: &str = r#"
extern "C" __global__ void gt_run(const double* __restrict__ cols, long long n, int n_cols,
                                  int stage, int lookback, const double* __restrict__ params,
                                  int param_len, int n_lanes, const double* __restrict__ table,
                                  int n_series, int slot_at, int n_slots, double cost,
                                  double max_lev, int fill_col, int mark_col, int intrabar,
                                  double* __restrict__ out) {
    GT_SHARED_WINDOW(win);
    GtLaunch l;
    l.n = n; l.n_cols = n_cols; l.stage = stage; l.lookback = lookback;
    l.span = lookback + stage;
    l.n_series = n_series; l.slot_at = slot_at; l.n_slots = n_slots;
    l.cost = cost; l.max_lev = max_lev;
    l.fill_col = fill_col; l.mark_col = mark_col; l.intrabar = intrabar;
    double* means = win + n_cols * l.span;
    double* sums = means + n_series * stage;
    double* growth = sums + n_series;
    const double* block_table = table + (long long)blockIdx.x * n_series * 2;
    for (int k = threadIdx.x; k < n_series; k += blockDim.x) sums[k] = 0.0;
    int lane_id = blockIdx.x * blockDim.x + threadIdx.x;
    int active = lane_id < n_lanes;
    const double* p = params + (long long)(active ? lane_id : 0) * param_len;
    double state[GT_STATE_LEN];
    for (int i = 0; i < GT_STATE_LEN; ++i) state[i] = 0.0;
    GtLane lane;
    gt_account_init(&lane.acct);
    lane.tile_start = 0;
    if (active) gt_init(state, p);
    int slot_base[GT_MAX_SHARED];
    for (int s = 0; s < GT_MAX_SHARED; ++s) {
        slot_base[s] = active && s < n_slots ? (int)p[slot_at + s] * stage : 0;
    }
    for (long long base = 0; base < n; base += stage) {
        int len = (int)(n - base < (long long)stage ? n - base : (long long)stage);
        __syncthreads();
        for (int i = threadIdx.x; i < n_cols * l.span; i += blockDim.x) {
            int c = i / l.span;
            long long t = base - lookback + (i % l.span);
            win[i] = (t >= 0 && t < n) ? cols[(long long)c * n + t] : 0.0;
        }
        __syncthreads();
        gt_block_growth(growth, win, &l, base, len);
        if (n_series > 0) gt_block_means(block_table, win, means, sums, &l, len);
        __syncthreads();
        if (active) gt_lane_events(&lane, state, p, slot_base, win, means, growth, &l, base, len);
    }
    if (active) gt_account_write(&lane.acct, out + (long long)lane_id * GT_OUT_LEN);
}
"#;

fn defines(code: &GpuCode) -> String {
    format!(
        "#define GT_TILE {TILE}LL\n#define GT_STATE_LEN {}\n#define GT_OUT_LEN {}\n#define GT_MAX_COLS {MAX_COLUMNS}\n#define GT_MAX_SHARED {MAX_SHARED}\n",
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
        STRATEGY_API,
        code.source,
        LANE,
        KERNEL,
    ]
    .concat()
}

/// Events staged per block pass so that the window, `n_cols × (lookback + stage)` doubles,
/// `series` shared means over the stage with their sums, `series × (stage + 1)` doubles, and
/// the events' fill and hold growth, `2 × stage` doubles, fit in `shared_bytes` (at least 32
/// events, at most 1 024); `None` if even 32 do not fit.
#[must_use]
pub fn stage_len(
    n_cols: usize,
    lookback: usize,
    series: usize,
    shared_bytes: usize,
) -> Option<usize> {
    let cols = n_cols.max(1);
    let fixed = 8 * (cols * lookback + series);
    let per_event = 8 * (cols + series + 2);
    let stage = shared_bytes.checked_sub(fixed)? / per_event;
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
        assert!(src.contains("#define GT_MAX_SHARED 8"));
        let api = src.find("double gt_shared(").unwrap();
        assert!(src.contains("extern \"C\" __global__ void gt_run"));
        let init = src.find("gt_init(double* s").unwrap();
        let lane = src.find("gt_lane_events").unwrap();
        assert!(init < lane, "the strategy comes before its caller");
        assert!(api < init, "what the strategy calls comes before it");
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
        assert_eq!(stage_len(2, 1000, 0, 48 * 1024), Some(1024));
        // Each staged event takes a double per column and two for its growth.
        assert_eq!(stage_len(5, 1000, 0, 48 * 1024), Some(163));
        assert_eq!(stage_len(5, 1200, 0, 48 * 1024), None);
        // Shared means take a double per staged event each, and one for their sum.
        assert_eq!(stage_len(2, 1000, 22, 48 * 1024), Some(158));
        assert_eq!(stage_len(2, 1000, 100, 48 * 1024), Some(38));
        assert_eq!(stage_len(2, 1000, 200, 48 * 1024), None);
    }

    #[test]
    fn the_launch_plan_fits_shared_memory() {
        for (n_cols, lookback) in [(2, 1), (2, 1000), (5, 500), (5, 1000)] {
            for series in [0, 1, 16, 40] {
                let bytes = |stage: usize| {
                    8 * (n_cols * (lookback + stage) + series * (stage + 1) + 2 * stage)
                };
                let Some(plan) = LaunchPlan::new(n_cols, lookback, series, SHARED_BYTES) else {
                    assert!(bytes(32) > SHARED_BYTES);
                    continue;
                };
                assert!(plan.shared_bytes <= SHARED_BYTES);
                assert_eq!(plan.shared_bytes, bytes(plan.stage));
                let more = bytes(plan.stage + 1);
                assert!(
                    plan.stage == 1024 || more > SHARED_BYTES,
                    "the largest stage"
                );
            }
        }
        assert_eq!(LaunchPlan::new(5, 1200, 0, SHARED_BYTES), None);
    }

    #[test]
    fn the_block_shape_covers_every_lane() {
        for multiprocessors in [1, 16, 132] {
            for lanes in [0usize, 1, 31, 32, 127, 128, 129, 955, 1000, 100_000] {
                let (blocks, threads) = block_shape(lanes, multiprocessors);
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
}
