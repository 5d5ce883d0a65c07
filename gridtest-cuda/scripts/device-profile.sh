#!/usr/bin/env bash
# Profiles the GPU kernels with Nsight Compute on the device machine (through the `device` tool,
# with .device carried, prepared by device-prepare.sh). For each strategy given (default: the
# W1 grid on the per-lane kernel and on the shared-means kernel), one full-grid launch over one
# W1 smoke shard (6 000 ticks: Nsight Compute replays the kernel some 25 times, and one launch
# over a 1 M-tick W1 shard took 120 s under it): speed of light, occupancy, warp states, and
# the stall samples per SASS instruction (CSV, for reading on the development machine).
#
#   bash gridtest-cuda/scripts/device-profile.sh [strategy...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gridtest-device}"
mkdir -p "$out"
. gridtest-cuda/scripts/device-env.sh || exit 2

ncu=$(command -v ncu || find /usr/local/cuda*/bin /opt/nvidia -maxdepth 4 -name ncu -type f 2>/dev/null | head -n 1)
[ -n "$ncu" ] || { echo "no ncu on this machine"; exit 2; }
echo "ncu: $ncu"

[ $# -gt 0 ] || set -- sma_crossover sma_crossover_shared
for strategy in "$@"; do
    echo "== $strategy"
    # Launches: one per shard with one set (warm-up), then one per shard with the whole grid.
    timeout --signal=KILL 120 "$ncu" --clock-control none -k regex:gt_run --launch-skip 2 \
        --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy \
        --section WarpStateStats --section SchedulerStats --section SourceCounters \
        --section ComputeWorkloadAnalysis --export "$out/$strategy" -f \
        "$bench" --require-gpu --data tests/data/w1/smoke --strategy "$strategy" --slots 1 \
        > "$out/${strategy}_ncu.txt" 2>&1
    echo "ncu exit $?"
    "$ncu" --import "$out/$strategy.ncu-rep" --page details > "$out/${strategy}_details.txt" 2>&1
    grep -E 'Duration|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Warp Cycles Per Issued|Registers Per|Block Size|Grid Size' \
        "$out/${strategy}_details.txt"
    "$ncu" --import "$out/$strategy.ncu-rep" --page source --csv --print-source sass \
        > "$out/${strategy}_sass.csv" 2>&1
    echo "sass rows: $(wc -l < "$out/${strategy}_sass.csv")"
done
