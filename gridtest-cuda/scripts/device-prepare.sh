#!/usr/bin/env bash
# Prepares the GPU device check on this (CPU) machine: the device machine has the CUDA driver,
# NVRTC and Python but no Rust toolchain and no network, so everything it runs is built here.
#
#   gridtest-cuda/scripts/device-prepare.sh        # then, on the device machine:
#   bash gridtest-cuda/scripts/device-check.sh     # carrying .device (see the last line printed)
#
# Writes .device/ (ignored by git, about 56 MB): gpu_bench and w1_bench (release, stripped,
# xz-compressed; w1_bench measures the device machine's CPU against the numpy peer) and
# the W1 benchmark dataset re-encoded losslessly to fit the transfer (zstd, delta-coded
# timestamps, byte-stream-split floats: 46 -> 24 MB; gpu_bench checks it against the W1 reference
# on both machines). W1 comes from ../shared/data/w1 (GRIDTEST_W1 to override).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gridtest-target}"
tools="${GRIDTEST_TOOLS:-$HOME/.cache/gridtest-tools}"
w1="${GRIDTEST_W1:-../shared/data/w1}"
out=.device
mkdir -p "$out"

echo "== gpu_bench and w1_bench (release)"
cargo build --release -p gridtest-examples --example gpu_bench --example w1_bench
for bin in gpu_bench w1_bench; do
    cp "$CARGO_TARGET_DIR/release/examples/$bin" "$out/$bin"
    strip "$out/$bin"
    xz -T0 -9e -f "$out/$bin"
done

echo "== W1 dataset, re-encoded"
if [ ! -x "$tools/pyarrow/bin/python" ]; then
    python3 -m venv "$tools/pyarrow"
    "$tools/pyarrow/bin/pip" install --quiet 'pyarrow>=15'
fi
rm -rf "$out/w1"
"$tools/pyarrow/bin/python" - "$w1/default" "$out/w1/default" <<'PY'
import glob, os, shutil, sys
import pyarrow.parquet as pq
src, dst = sys.argv[1], sys.argv[2]
for f in sorted(glob.glob(f"{src}/symbol=*/date=*/*.parquet")):
    table = pq.read_table(f).select(["ts", "price", "size"])
    target = dst + f[len(src):]
    os.makedirs(os.path.dirname(target), exist_ok=True)
    pq.write_table(table, target, compression="zstd", compression_level=19,
                   use_dictionary=False, row_group_size=1 << 20,
                   column_encoding={"ts": "DELTA_BINARY_PACKED", "price": "BYTE_STREAM_SPLIT",
                                    "size": "BYTE_STREAM_SPLIT"})
shutil.copy(f"{src}/manifest.json", dst)
PY
cp "$w1/default_reference.csv" "$out/w1/"

echo "== the re-encoded dataset reproduces the W1 reference here"
"$CARGO_TARGET_DIR/release/examples/gpu_bench" --data "$out/w1/default" \
    --reference "$out/w1/default_reference.csv"

du -sh "$out"
echo "ready: device run with command 'bash gridtest-cuda/scripts/device-check.sh', carry [\".device\"], timeout_s 420 (about 90 s on an H200)"
