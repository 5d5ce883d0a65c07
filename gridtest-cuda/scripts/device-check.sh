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
#      kernel's bar path (fill at the open, mark at the close, intrabar moves);
#   5. the device machine's CPU (a machine kind of its own): w1_bench on two cores against the
#      numpy peer on a third, in one script (issue 15's ratio).
# Each step runs under its own time limit. Prints a summary; exit status non-zero on any
# disagreement. Output also under $OUT. About 90 s on an H200 (2026-12-04).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gridtest-device}"
mkdir -p "$out"
failed=0

. gridtest-cuda/scripts/device-env.sh || exit 2

run() {   # name, seconds allowed, args...: a step that hangs is killed and the next one runs
    local name=$1 limit=$2; shift 2
    echo "== $name"
    if ! timeout --signal=KILL "$limit" "$bench" --require-gpu "$@" 2>&1 | tee "$out/$name.txt"; then
        failed=1
        echo "FAILED: $name"
    fi
}
run smoke 45 --data tests/data/w1/smoke --reference tests/data/w1/smoke_reference.csv
run w1 150 --data .device/w1/default --reference .device/w1/default_reference.csv --sweep --squeeze
run w1_shared 75 --data .device/w1/default --reference .device/w1/default_reference.csv --strategy sma_crossover_shared
run momentum 75 --data .device/w1/default --strategy momentum
run breakout 75 --strategy breakout

# Issue 15 on the device machine's CPU (another machine kind): the W1 benchmark on two cores
# against the numpy peer on one, in the same run (both pinned when taskset is there).
if [ -f .device/w1_bench.xz ]; then
    echo "== cpu_w1"
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        .device/w1_bench.xz /tmp/gridtest-w1_bench && chmod +x /tmp/gridtest-w1_bench
    two=(); one=()
    command -v taskset >/dev/null && { two=(taskset -c 0,1); one=(taskset -c 2); }
    if ! (
        rc=0
        timeout --signal=KILL 60 "${two[@]}" /tmp/gridtest-w1_bench --data .device/w1/default \
            --reference .device/w1/default_reference.csv --threads 2 --indicators shared --repeat 2 || rc=1
        timeout --signal=KILL 60 "${one[@]}" python3 examples/peers/w1_numpy.py .device/w1/default \
            --symbols 1 --sets 100 --reference .device/w1/default_reference.csv || rc=1
        timeout --signal=KILL 60 "${two[@]}" /tmp/gridtest-w1_bench --data .device/w1/default \
            --reference .device/w1/default_reference.csv --threads 2 --indicators shared --repeat 2 || rc=1
        exit "$rc"
    ) 2>&1 | tee "$out/cpu_w1.txt"; then
        failed=1
        echo "FAILED: cpu_w1"
    fi
fi

echo "== summary"
grep -h -E '^\||parity|squeeze|sweep path|reference|kernel for|SKIPPED|Error|error|WARN' "$out"/smoke.txt "$out"/w1.txt "$out"/w1_shared.txt "$out"/momentum.txt "$out"/breakout.txt
[ -f "$out/cpu_w1.txt" ] && grep -h -i -E 'throughput|numpy peer|reference|simd|threads|error' "$out/cpu_w1.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,clocks_throttle_reasons.active --format=csv || true
[ "$failed" = 0 ] && echo "DEVICE CHECK PASSED" || echo "DEVICE CHECK FAILED"
exit "$failed"
