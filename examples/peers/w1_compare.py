#!/usr/bin/env python3
"""Issue 15's measurement on one machine, in one command: gridtest's W1 benchmark, the numpy
peer, the Polars peer and gridtest again, in that order (so that a machine that drifts during
the run shows it), then the ratios against the targets: 7.5x the numpy peer per core and 15x
the Polars peer on two cores.

Usage (from the repository root, with numpy, pyarrow and polars installed):

    cargo build --release -p gridtest-examples --example w1_bench
    python examples/peers/w1_compare.py [--bench target/release/examples/w1_bench] [--runs 1]

gridtest runs `--indicators shared --repeat 2` on all of W1 with every cell checked against
`default_reference.csv` (a mismatch stops the script); the numpy peer replays 100 sets of S000
on one thread (`w1_numpy.py`); the Polars peer (`../shared/bench/peers/engine_polars.py`) all
955 sets of S000 on two threads at batch 16. Arguments after `--` go to `w1_bench` (e.g.
`-- --unit-evals 500000000`); `GRIDTEST_SIMD=avx2` in the environment lowers gridtest's vector
level. Prints the CPU, each engine's evaluations per second and a Markdown table for
`docs/benchmarks.md`.
"""
import argparse
import json
import os
import re
import subprocess
import sys

NUMPY_PER_CORE_TARGET = 7.5
POLARS_TARGET = 15.0


def cpu():
    """The CPU as /proc/cpuinfo names it, with x86 family and model, and its widest vectors."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown CPU"
    name = fields.get("model name") or fields.get("CPU part", "unknown CPU")
    flags = fields.get("flags", fields.get("Features", "")).split()
    vectors = [v for v in ("avx512f", "avx2", "fma", "asimd") if v in flags]
    family = fields.get("cpu family")
    model = fields.get("model")
    kind = f", family {family} model {model}" if family and model else ""
    return f"{name}{kind}, {os.cpu_count()} CPUs, vectors: {' '.join(vectors) or 'baseline'}"


def run(cmd, cwd=None):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def gridtest(bench, data, reference, extra):
    """gridtest's throughput and threads; exits unless every cell matches the reference."""
    out = run([bench, "--data", data, "--reference", reference,
               "--indicators", "shared", "--repeat", "2", *extra])
    rate = re.search(r"^throughput\s+([0-9.e+]+)", out, re.M)
    threads = re.search(r"(\d+) threads", out)
    matched = re.search(r"^reference\s+(\d+) cells match", out, re.M)
    level = re.search(r"^event step\s+(\S+)", out, re.M)
    if not (rate and threads and matched):
        sys.exit(f"w1_bench printed no throughput or reference check:\n{out}")
    return float(rate.group(1)), int(threads.group(1)), int(matched.group(1)), level.group(1)


def numpy_peer(data, reference):
    here = os.path.dirname(os.path.abspath(__file__))
    out = run([sys.executable, os.path.join(here, "w1_numpy.py"), data, "--symbols", "1",
               "--sets", "100", "--reference", reference])
    rate = re.search(r"([0-9.]+e[+-]?\d+) evaluations/s", out)
    if not rate or "match the reference" not in out:
        sys.exit(f"the numpy peer printed no rate or no reference match:\n{out}")
    return float(rate.group(1))


def polars_peer(peers, data):
    out = run([sys.executable, "engine_polars.py", "--data", os.path.abspath(data),
               "--symbols", "S000", "--batch", "16"], cwd=peers)
    timing = next((line for line in out.splitlines() if line.startswith("TIMING ")), None)
    if timing is None:
        sys.exit(f"the Polars peer printed no TIMING line:\n{out}")
    report = json.loads(timing[len("TIMING "):])
    return float(report["evals_per_s"]), int(report["threads"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "release", "examples", "w1_bench"))
    ap.add_argument("--data", default="../shared/data/w1/default")
    ap.add_argument("--reference", default="../shared/data/w1/default_reference.csv")
    ap.add_argument("--peers", default="../shared/bench/peers",
                    help="the folder of engine_polars.py")
    ap.add_argument("--runs", type=int, default=1, help="times to run the whole sequence")
    ap.add_argument("extra", nargs="*", help="arguments for w1_bench (after --)")
    args = ap.parse_args()
    for path in (args.bench, args.data, args.reference, os.path.join(args.peers, "engine_polars.py")):
        if not os.path.exists(path):
            sys.exit(f"{path} does not exist (run from the repository root; see --help)")
    print(f"CPU: {cpu()}")
    rows = []
    for k in range(1, args.runs + 1):
        first = gridtest(args.bench, args.data, args.reference, args.extra)
        print(f"run {k}: gridtest {first[0]:.3e} evaluations/s ({first[3]}, {first[1]} threads, "
              f"{first[2]} cells match the reference)", flush=True)
        numpy = numpy_peer(args.data, args.reference)
        print(f"run {k}: numpy peer {numpy:.3e} evaluations/s (1 thread)", flush=True)
        polars, polars_threads = polars_peer(args.peers, args.data)
        print(f"run {k}: Polars peer {polars:.3e} evaluations/s ({polars_threads} threads)",
              flush=True)
        second = gridtest(args.bench, args.data, args.reference, args.extra)
        print(f"run {k}: gridtest {second[0]:.3e} evaluations/s", flush=True)
        for g in (first, second):
            rows.append((k, g[0], g[1], g[3], numpy, polars))
    print()
    print("| run | gridtest evaluations / s | level | vs numpy per core | vs Polars |")
    print("|---|---|---|---|---|")
    met = True
    for k, rate, threads, level, numpy, polars in rows:
        per_core, vs_polars = rate / threads / numpy, rate / polars
        met &= per_core >= NUMPY_PER_CORE_TARGET and vs_polars >= POLARS_TARGET
        print(f"| {k} | {rate:.3e} ({threads} threads) | {level} | {per_core:.1f}x | {vs_polars:.1f}x |")
    print()
    print(f"targets ({NUMPY_PER_CORE_TARGET}x numpy per core, {POLARS_TARGET}x Polars): "
          f"{'met in every row' if met else 'NOT met in every row'}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
