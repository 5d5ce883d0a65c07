"""Reference values of gridtest's indicators, computed with pandas.

Usage: indicators.py INPUT.json OUTPUT.json
INPUT: {"close": [...], "high": [...], "low": [...], "window": n, "fast": f, "slow": s, "k": k}
OUTPUT: one list per indicator (null for NaN), floats exactly as pandas computed them.
"""
import json
import math
import sys

import pandas as pd


def listed(series):
    return [None if (isinstance(v, float) and math.isnan(v)) else float(v) for v in series]


def main(src, dst):
    with open(src) as f:
        spec = json.load(f)
    close = pd.Series(spec["close"], dtype="float64")
    high = pd.Series(spec["high"], dtype="float64")
    low = pd.Series(spec["low"], dtype="float64")
    n, fast, slow, k = spec["window"], spec["fast"], spec["slow"], spec["k"]

    delta = close.diff()
    gain = delta.clip(lower=0).ewm(alpha=1 / n, adjust=False).mean()
    loss = (-delta.clip(upper=0)).ewm(alpha=1 / n, adjust=False).mean()
    rsi = 100 - 100 / (1 + gain / loss)

    previous = close.shift()
    true_range = pd.concat(
        [high - low, (high - previous).abs(), (low - previous).abs()], axis=1
    ).max(axis=1)
    atr = true_range.ewm(alpha=1 / n, adjust=False).mean()

    mean = close.rolling(n).mean()
    std = close.rolling(n).std()
    out = {
        "sma_fast": listed(close.rolling(fast).mean()),
        "sma_slow": listed(close.rolling(slow).mean()),
        "ema": listed(close.ewm(span=n, adjust=False).mean()),
        "max": listed(close.rolling(n).max()),
        "min": listed(close.rolling(n).min()),
        "std": listed(std),
        "upper": listed(mean + k * std),
        "lower": listed(mean - k * std),
        "zscore": listed((close - mean) / std),
        "rsi": listed(rsi),
        "atr": listed(atr),
        "pandas": pd.__version__,
    }
    with open(dst, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
