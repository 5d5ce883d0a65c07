#!/usr/bin/env python3
"""Independent reference for gridtest::research, written from the papers with numpy/scipy.

Bailey & López de Prado (2014), "The Deflated Sharpe Ratio"; Bailey, Borwein, López de Prado &
Zhu (2017), "The Probability of Backtest Overfitting". Conventions shared with the Rust code (and
documented there): Sharpe = mean / std (ddof 1), 0 without variance; skewness and kurtosis from
population moments (scipy's defaults, kurtosis not excess); V[SR] with ddof 1; CSCV drops the
first T mod S periods, ranks with average ties, PBO = share of splits with logit <= 0;
effective trials = participation ratio of the correlation matrix of (at most 1000) evenly spaced
non-constant sets, its mean squared correlation less the 1/(T-1) of sampling noise, extrapolated
to N.

Usage: overfitting.py RETURNS.f64 N_PERIODS N_TRIALS BLOCKS TRAIN TEST ANCHORED(0|1)
RETURNS.f64 holds little-endian float64 returns, set by set. Prints one JSON object.
"""
import itertools
import json
import sys

import numpy as np
from scipy import stats

EULER_GAMMA = 0.5772156649015329


def sharpe(x):
    sd = np.std(x, ddof=1) if len(x) > 1 else 0.0
    return float(np.mean(x) / sd) if sd > 0 else 0.0


def sharpe_rows(a):
    """Sharpe ratio of each row of `a`."""
    sd = np.std(a, axis=1, ddof=1)
    safe = np.where(sd > 0, sd, 1.0)
    return np.where(sd > 0, np.mean(a, axis=1) / safe, 0.0)


def series_stats(x):
    constant = np.all(x == x[0])
    return {
        "mean": float(np.mean(x)),
        "std": float(np.std(x, ddof=1)),
        "skew": 0.0 if constant else float(stats.skew(x)),
        "kurtosis": 3.0 if constant else float(stats.kurtosis(x, fisher=False)),
        "sharpe": sharpe(x),
    }


def psr(s, periods, benchmark):
    sr = s["sharpe"]
    v = 1.0 - s["skew"] * sr + (s["kurtosis"] - 1.0) / 4.0 * sr * sr
    if periods < 2 or v <= 0:
        return float("nan")
    return float(stats.norm.cdf((sr - benchmark) * np.sqrt(periods - 1) / np.sqrt(v)))


def expected_max(n, variance):
    if n <= 1:
        return 0.0
    return float(np.sqrt(variance) * ((1 - EULER_GAMMA) * stats.norm.ppf(1 - 1 / n)
                                      + EULER_GAMMA * stats.norm.ppf(1 - 1 / (n * np.e))))


def effective_trials(m, n_trials):
    n = m.shape[0]
    k = min(n, 1000)
    picked = [m[i * n // k] for i in range(k)]
    picked = np.array([x for x in picked if not np.all(x == x[0])])
    if len(picked) < 2:
        return float(n_trials)
    eig = np.linalg.eigvalsh(np.corrcoef(picked))
    k = len(picked)
    participation = eig.sum() ** 2 / (eig ** 2).sum()   # = k / (1 + (k-1) * mean rho^2)
    measured = (k / participation - 1) / (k - 1)
    noise = 1 / (m.shape[1] - 1)   # E[rho^2] of independent series over T periods
    mean_square = max(0.0, (measured - noise) / (1 - noise))
    return float(n_trials / (1 + (n_trials - 1) * mean_square))


def cscv(m, blocks):
    n, t = m.shape
    size = t // blocks
    used = m[:, t - blocks * size:]
    parts = [used[:, b * size:(b + 1) * size] for b in range(blocks)]
    out = {"logits": [], "chosen": [], "in_sample": [], "out_of_sample": []}
    for train in itertools.combinations(range(blocks), blocks // 2):
        test = [b for b in range(blocks) if b not in train]
        is_rows = np.hstack([parts[b] for b in train])
        oos_rows = np.hstack([parts[b] for b in test])
        is_sr = sharpe_rows(is_rows)
        oos_sr = sharpe_rows(oos_rows)
        best = int(np.argmax(is_sr))
        omega = stats.rankdata(oos_sr)[best] / (n + 1)
        out["logits"].append(float(np.log(omega / (1 - omega))))
        out["chosen"].append(best)
        out["in_sample"].append(float(is_sr[best]))
        out["out_of_sample"].append(float(oos_sr[best]))
    logits, ins, oos = (np.array(out[k]) for k in ("logits", "in_sample", "out_of_sample"))
    out["probability"] = float(np.mean(logits <= 0))
    out["probability_of_loss"] = float(np.mean(oos < 0))
    if np.var(ins) > 0:
        slope, intercept = np.polyfit(ins, oos, 1)
    else:
        slope, intercept = 0.0, float(np.mean(oos))
    out["degradation_slope"], out["degradation_intercept"] = float(slope), float(intercept)
    return out


def walk_forward(m, train, test, anchored):
    n, t = m.shape
    windows, oos = [], []
    start = train
    while start < t:
        end = min(start + test, t)
        lo = 0 if anchored else start - train
        is_sr = sharpe_rows(m[:, lo:start])
        best = int(np.argmax(is_sr))
        oos.extend(m[best, start:end])
        windows.append({"chosen": best, "in_sample_sharpe": float(is_sr[best]),
                        "out_of_sample_sharpe": sharpe(m[best, start:end])})
        start = end
    winner = int(np.argmax(sharpe_rows(m)))
    return {"windows": windows, "out_of_sample_sharpe": sharpe(np.array(oos)),
            "full_sample_winner": winner,
            "full_sample_winner_sharpe": sharpe(m[winner, train:])}


def main():
    path, periods, n_trials, blocks, train, test, anchored = sys.argv[1:8]
    periods, n_trials, blocks, train, test = map(int, (periods, n_trials, blocks, train, test))
    m = np.fromfile(path, dtype="<f8").reshape(-1, periods)
    per_set = [series_stats(row) for row in m]
    variance = float(np.var([s["sharpe"] for s in per_set], ddof=1))
    n_trials = max(n_trials, m.shape[0])
    benchmark = expected_max(n_trials, variance)
    print(json.dumps({
        "stats": per_set,
        "sharpe_variance": variance,
        "benchmark": benchmark,
        "dsr": [psr(s, periods, benchmark) for s in per_set],
        "effective_trials": effective_trials(m, n_trials),
        "pbo": cscv(m, blocks),
        "walk_forward": walk_forward(m, train, test, anchored == "1"),
    }))


if __name__ == "__main__":
    main()
