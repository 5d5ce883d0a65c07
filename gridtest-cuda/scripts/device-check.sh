#!/usr/bin/env bash
# GPU device check, run once on a machine with an NVIDIA GPU (through the `device` tool, with
# .device carried; prepare it here first with device-prepare.sh). Runs gpu_bench:
#   1. W1 smoke data (2 × 6 000 ticks, 955 sets): every cell GPU vs CPU vs the W1 reference;
#   2. W1 benchmark (4 × 1 M ticks, 955 sets): the same, throughput table GPU (1 and 4 slots)
#      vs the CPU engine on every core of the same machine; then the whole sweep path with GPU
#      scorers (node agent, batched units, CPU scorers beside them) vs a CPU-only sweep; then
#      the squeeze (4 slots, a ~100 k-set grid, 8 MiB admissible beyond the reserve: launches
#      must split, cells must still match, free memory sampled throughout must stay above the
#      reserve);
#   2b. the W1 benchmark on the shared-means kernel (sma_crossover_shared: each block computes
#      each distinct mean once per staged pass): every cell vs CPU and the reference;
#   3. the momentum grid (long/short, 1 000 sets) on W1;
#   4. the breakout grid (long/short, 240 sets) on synthetic bars (4 × 100 000 bars): the
#      kernel's bar path (fill at the open, mark at the close, intrabar moves).
# Prints a summary; exit status non-zero on any disagreement. Output also under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gridtest-device}"
mkdir -p "$out"
failed=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free,clocks.sm,clocks.max.sm,temperature.gpu --format=csv || true

echo "== libraries (the driver and NVRTC are loaded at run time)"
# cudarc looks for libnvrtc.so, libnvrtc.so.12, ...: make the device's NVRTC (CUDA 13 here)
# findable under a name it tries, with its builtins library beside it.
nvrtc=$( { ldconfig -p 2>/dev/null | awk '/libnvrtc\.so/ {print $NF}';
           find /usr/local/cuda/lib64/ /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu -name 'libnvrtc.so*' 2>/dev/null;
           find /opt -maxdepth 9 -name 'libnvrtc.so*' 2>/dev/null; } \
         | grep -v builtins | head -n 1)
if [ -n "$nvrtc" ]; then
    mkdir -p /tmp/gridtest-nvrtc
    ln -sf "$nvrtc" /tmp/gridtest-nvrtc/libnvrtc.so
    export LD_LIBRARY_PATH="/tmp/gridtest-nvrtc:$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "NVRTC: $nvrtc"
else
    echo "NVRTC: not found (the GPU half will say so)"
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    driver=$(find /usr/local/nvidia /usr/lib/x86_64-linux-gnu -name 'libcuda.so.1' 2>/dev/null | head -n 1)
    [ -n "$driver" ] && export LD_LIBRARY_PATH="$(dirname "$driver")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "driver: ${driver:-not found}"
fi

bench=/tmp/gridtest-gpu_bench
if [ -f .device/gpu_bench.xz ]; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        .device/gpu_bench.xz "$bench" && chmod +x "$bench"
elif command -v cargo >/dev/null; then
    cargo build --release -p gridtest-examples --example gpu_bench && \
        cp "${CARGO_TARGET_DIR:-target}/release/examples/gpu_bench" "$bench"
else
    echo "no .device/gpu_bench.xz and no cargo: run gridtest-cuda/scripts/device-prepare.sh first"
    exit 2
fi

run() {   # name, args...
    local name=$1; shift
    echo "== $name"
    if ! "$bench" --require-gpu "$@" 2>&1 | tee "$out/$name.txt"; then
        failed=1
        echo "FAILED: $name"
    fi
}
run smoke --data tests/data/w1/smoke --reference tests/data/w1/smoke_reference.csv
run w1 --data .device/w1/default --reference .device/w1/default_reference.csv --sweep --squeeze
run w1_shared --data .device/w1/default --reference .device/w1/default_reference.csv --strategy sma_crossover_shared
run momentum --data .device/w1/default --strategy momentum
run breakout --strategy breakout

echo "== summary"
grep -h -E '^\||parity|squeeze|sweep path|reference|SKIPPED|Error|error|WARN' "$out"/smoke.txt "$out"/w1.txt "$out"/w1_shared.txt "$out"/momentum.txt "$out"/breakout.txt
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,clocks_throttle_reasons.active --format=csv || true
[ "$failed" = 0 ] && echo "DEVICE CHECK PASSED" || echo "DEVICE CHECK FAILED"
exit "$failed"
