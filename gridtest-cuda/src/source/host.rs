//! The kernel's host form: CUDA's execution model emulated in C++20 around the very same
//! kernel text, so a C++ compiler on a machine without a GPU runs the kernel (see the parent
//! module's documentation).

use gridtest::GpuCode;

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

// argv: cols.bin params.bin table.bin out.bin n n_cols stage lookback param_len n_lanes
//       n_series slot_at n_slots cost max_lev fill_col mark_col intrabar blocks
//       threads_per_block shared_bytes
int main(int argc, char** argv) {
    if (argc != 22) { std::fprintf(stderr, "usage: see source\n"); return 2; }
    std::vector<double> cols = read_all(argv[1]);
    std::vector<double> params = read_all(argv[2]);
    std::vector<double> table = read_all(argv[3]);
    long long n = std::atoll(argv[5]);
    int n_cols = std::atoi(argv[6]), stage = std::atoi(argv[7]), lookback = std::atoi(argv[8]);
    int param_len = std::atoi(argv[9]), n_lanes = std::atoi(argv[10]);
    int n_series = std::atoi(argv[11]), slot_at = std::atoi(argv[12]), n_slots = std::atoi(argv[13]);
    double cost = std::strtod(argv[14], 0), max_lev = std::strtod(argv[15], 0);
    int fill_col = std::atoi(argv[16]), mark_col = std::atoi(argv[17]), intrabar = std::atoi(argv[18]);
    unsigned blocks = (unsigned)std::atoi(argv[19]), threads = (unsigned)std::atoi(argv[20]);
    size_t shared_bytes = (size_t)std::atoll(argv[21]);
    if ((long long)cols.size() != n * n_cols || (long long)params.size() != (long long)n_lanes * param_len
        || (long long)table.size() < (long long)blocks * n_series * 2) {
        std::fprintf(stderr, "inputs do not match n, n_cols, n_lanes, param_len, n_series\n");
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
                       table.data(), n_series, slot_at, n_slots, cost, max_lev, fill_col,
                       mark_col, intrabar, out.data());
            });
        }
        for (std::thread& t : team) t.join();
    }
    FILE* f = std::fopen(argv[4], "wb");
    if (!f) { std::perror(argv[4]); return 2; }
    std::fwrite(out.data(), sizeof(double), out.size(), f);
    std::fclose(f);
    return 0;
}
"#;

/// The same kernel as a host C++20 program (compile with `-std=c++20 -pthread
/// -ffp-contract=off`) that runs it under an emulation of CUDA's execution model (see the
/// module documentation), reading and writing raw `f64` files; see the argument list in its
/// `main`.
#[must_use]
pub fn host_harness_source(code: &GpuCode) -> String {
    [
        HOST_CUDA,
        super::defines(code).as_str(),
        super::ACCOUNT,
        super::STRATEGY_API,
        code.source,
        super::LANE,
        super::KERNEL,
        HOST_DRIVER,
    ]
    .concat()
}
