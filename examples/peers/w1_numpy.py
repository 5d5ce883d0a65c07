#!/usr/bin/env python3
"""W1 peer for the gridtest benchmark: the numpy approach of ../shared/data/w1/PEERS.md
(SMAs from prefix sums, one vectorised backtest per cell, 1 thread), timed on a slice of the grid
so it can run beside gridtest in the same session.

Usage: python w1_numpy.py DATA_DIR [--symbols 1] [--sets 100] [--reference CSV]
Needs numpy and pyarrow. Prints evaluations/s of the compute (loading timed apart).
"""
import argparse
import csv
import glob
import time

import numpy as np
import pyarrow.parquet as pq

C = 1e-4


def load(root, symbol):
    files = sorted(glob.glob(f"{root}/symbol={symbol}/date=*/*.parquet"))
    p = np.concatenate([pq.read_table(f, columns=["price"]).column("price").to_numpy() for f in files])
    return p, len(files)


def backtest(p, csum, fast, slow, days):
    n = len(p)
    t = np.arange(n)
    sma_f = np.full(n, np.nan)
    sma_s = np.full(n, np.nan)
    sma_f[fast - 1:] = (csum[fast:] - csum[:-fast]) / fast
    sma_s[slow - 1:] = (csum[slow:] - csum[:-slow]) / slow
    s = ((t >= slow - 1) & (sma_f > sma_s)).astype(np.int8)
    pos = np.zeros(n, dtype=np.int8)
    pos[1:] = s[:-1]
    prev, cur = pos[:-1], pos[1:]
    g = p[1:] / p[:-1]
    m = np.where((prev == 0) & (cur == 1), 1.0 / (1 + C),
        np.where((prev == 1) & (cur == 1), g,
        np.where((prev == 1) & (cur == 0), g * (1 - C), 1.0)))
    e = np.concatenate([[1.0], np.cumprod(m)])
    r = e[1:] / e[:-1] - 1
    std = r.std(ddof=1)
    sharpe = r.mean() / std * np.sqrt(252 * n / days) if std > 0 else 0.0
    dd = float(np.max(1 - e / np.maximum.accumulate(e)))
    return int(np.count_nonzero(prev != cur)), float(e[-1] - 1), dd, float(sharpe)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--symbols", type=int, default=1)
    ap.add_argument("--sets", type=int, default=100)
    ap.add_argument("--reference")
    a = ap.parse_args()
    grid = [(f, s) for f in range(5, 101, 5) for s in range(20, 1001, 20) if f < s][: a.sets]
    symbols = sorted(d.split("=")[1] for d in glob.glob(f"{a.data}/symbol=*"))[: a.symbols]
    t0 = time.perf_counter()
    data = {sym: load(a.data, sym) for sym in symbols}
    load_s = time.perf_counter() - t0
    ref = {}
    if a.reference:
        for row in csv.DictReader(open(a.reference)):
            ref[(row["symbol"], int(row["fast"]), int(row["slow"]))] = row
    evals, checked = 0, 0
    t0 = time.perf_counter()
    for sym, (p, days) in data.items():
        csum = np.concatenate([[0.0], np.cumsum(p)])
        for fast, slow in grid:
            trades, tr, dd, sh = backtest(p, csum, fast, slow, days)
            evals += len(p)
            want = ref.get((sym, fast, slow))
            if want is not None:
                assert trades == int(want["trades"]), (sym, fast, slow)
                assert abs(tr - float(want["total_return"])) <= max(1e-9 * abs(float(want["total_return"])), 1e-12)
                checked += 1
    compute_s = time.perf_counter() - t0
    print(f"numpy peer: {len(symbols)} symbols x {len(grid)} sets, load {load_s:.2f}s, "
          f"compute {compute_s:.2f}s, {evals / compute_s:.3e} evaluations/s"
          + (f", {checked} cells match the reference" if checked else ""))


if __name__ == "__main__":
    main()
