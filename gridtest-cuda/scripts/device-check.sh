#!/usr/bin/env bash
# GPU device check, to run once on a machine with an NVIDIA GPU (e.g. through the `device` tool):
# builds, runs the GPU tests (kernel parity with the CPU engine on the W1 smoke data, detection),
# then the benchmark (every cell of the W1 grid on a W1-sized dataset, GPU vs CPU, and a
# momentum grid with short positions), and prints a short table. Exit status non-zero on any
# disagreement. PROFILE=release for optimised CPU figures (a longer build).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${PROFILE:-dev}"
flag=$([ "$profile" = release ] && echo --release || true)
dir=$([ "$profile" = release ] && echo release || echo debug)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

echo "== device"
nvidia-smi --query-gpu=name,memory.total,memory.free,clocks.sm,temperature.gpu --format=csv || true

echo "== build ($profile)"
time cargo build $flag -p gridtest-examples --example gpu_bench
time cargo test $flag -p gridtest-tests --test integration --no-run

echo "== GPU tests"
cargo test $flag -p gridtest-tests --test integration gpu:: -- --nocapture --test-threads 1

echo "== benchmark: SMA crossover, W1 grid (955 sets x 4 shards x 1M ticks)"
"$CARGO_TARGET_DIR/$dir/examples/gpu_bench" --strategy sma_crossover
echo "== benchmark: momentum (long/short), 1000 sets"
"$CARGO_TARGET_DIR/$dir/examples/gpu_bench" --strategy momentum
