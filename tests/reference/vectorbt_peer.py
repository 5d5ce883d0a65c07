"""vectorbt's portfolio and ratios on the fills of gridtest cells (tests/vectorbt.rs).

    vectorbt_peer.py IN.json OUT.json

IN: {"prices": [...], "per_year": A, "cells": [{"name": ..., "orders": [[index, weight], ...]}]}:
a tick's price series and, per cell, the events where gridtest's targets path filled and the
target weight it filled to. vectorbt fills each order at that event's price
(`Portfolio.from_orders(size_type="targetpercent")`, no fees, initial cash 1), so its value
series is gridtest's equity after every event; its `returns()` start with the first event's
return (0), and its Sharpe and Sortino ratios are annualised with A periods a year.

OUT: per cell, the bits of vectorbt's total return, max drawdown, Sharpe and Sortino ratios
(NaN and ±inf kept), and its number of returns.
"""

import json
import struct
import sys

import numpy as np
import pandas as pd
import vectorbt as vbt


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def main():
    spec = json.load(open(sys.argv[1]))
    prices = pd.Series(spec["prices"], dtype="float64")
    year = pd.Timedelta(seconds=spec["per_year"])
    out = {}
    for cell in spec["cells"]:
        size = pd.Series(np.nan, index=prices.index)
        for index, weight in cell["orders"]:
            size.iloc[index] = weight
        with np.errstate(divide="ignore", invalid="ignore"):
            pf = vbt.Portfolio.from_orders(
                prices,
                size=size,
                size_type="targetpercent",
                init_cash=1.0,
                fees=0.0,
                freq="1s",
            )
            returns = pf.returns()
            acc = returns.vbt.returns(freq="1s", year_freq=year)
            out[cell["name"]] = {
                "total_return": bits(pf.total_return()),
                "max_drawdown": bits(-pf.max_drawdown()),
                "sharpe": bits(acc.sharpe_ratio()),
                "sortino": bits(acc.sortino_ratio()),
                "returns": int(len(returns)),
                "first": bits(returns.iloc[0]),
            }
    json.dump(out, open(sys.argv[2], "w"))


main()
