# Sourced by the device scripts (device-check.sh, device-profile.sh) on the device machine:
# prints the machine, makes the driver and NVRTC findable (both are loaded at run time) and
# unpacks gpu_bench to $bench.
echo "== device"
grep -m1 "model name" /proc/cpuinfo || true
nproc
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
    return 2
fi

