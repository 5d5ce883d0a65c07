"""backtesting.py (0.6.x, from PyPI) on the GOOG daily bars it ships: the README's SmaCross, its
optimiser grid, and three strategies with stop-loss, take-profit, stop-limit and limit entries.

Writes JSON to argv[1]: the bars and, per run, every closed trade and the statistics. Floats are
written as their IEEE-754 bits (so the Rust side reads exactly the same doubles).

The strategies are written as the library's docs write them; `tests/backtesting_py.rs` holds
the same strategies for gridtest.
"""

import json
import struct
import sys
import warnings

import numpy as np
from backtesting import Backtest, Strategy
from backtesting.lib import crossover
from backtesting.test import GOOG, SMA

warnings.simplefilter("ignore")


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


class SmaCross(Strategy):
    n1 = 10
    n2 = 20

    def init(self):
        close = self.data.Close
        self.ma1 = self.I(SMA, close, self.n1)
        self.ma2 = self.I(SMA, close, self.n2)

    def next(self):
        if crossover(self.ma1, self.ma2):
            self.buy()
        elif crossover(self.ma2, self.ma1):
            self.sell()


class Brackets(Strategy):
    """Long and short at market with a stop-loss and a take-profit; a cross the other way
    closes the position first."""

    n1 = 10
    n2 = 20
    sl = 0.05
    tp = 0.10

    def init(self):
        close = self.data.Close
        self.ma1 = self.I(SMA, close, self.n1)
        self.ma2 = self.I(SMA, close, self.n2)

    def next(self):
        c = self.data.Close[-1]
        if crossover(self.ma1, self.ma2):
            if self.position.is_short:
                self.position.close()
            if not self.position.is_long:
                self.buy(sl=c * (1 - self.sl), tp=c * (1 + self.tp))
        elif crossover(self.ma2, self.ma1):
            if self.position.is_long:
                self.position.close()
            if not self.position.is_short:
                self.sell(sl=c * (1 + self.sl), tp=c * (1 - self.tp))


class Entries(Strategy):
    """Stop-limit entries long (above the high), limit entries short (above the close), each
    with exits; a cross the other way cancels the waiting entry and closes the position."""

    n1 = 10
    n2 = 20

    def init(self):
        close = self.data.Close
        self.ma1 = self.I(SMA, close, self.n1)
        self.ma2 = self.I(SMA, close, self.n2)

    def cancel_entries(self):
        for order in self.orders:
            if not order.is_contingent:
                order.cancel()

    def next(self):
        h, l, c = self.data.High[-1], self.data.Low[-1], self.data.Close[-1]
        if crossover(self.ma1, self.ma2):
            self.cancel_entries()
            self.position.close()
            self.buy(stop=h * 1.002, limit=h * 1.01, sl=l * 0.96, tp=h * 1.06)
        elif crossover(self.ma2, self.ma1):
            self.cancel_entries()
            self.position.close()
            self.sell(limit=c * 1.003, sl=c * 1.05, tp=c * 0.94)


def run(bt, **params):
    stats = bt.run(**params)
    trades = stats["_trades"]
    return {
        "params": params,
        "trades": [
            {
                "size": bits(t.Size),
                "entry_bar": int(t.EntryBar),
                "exit_bar": int(t.ExitBar),
                "entry_price": bits(t.EntryPrice),
                "exit_price": bits(t.ExitPrice),
                "pnl": bits(t.PnL),
                "ret": bits(t.ReturnPct),
            }
            for t in trades.itertuples()
        ],
        "stats": {
            "return": bits(stats["Return [%]"] / 100),
            "max_drawdown": bits(stats["Max. Drawdown [%]"] / 100),
            "sharpe": bits(stats["Sharpe Ratio"]),
            "sortino": bits(stats["Sortino Ratio"]),
            "win_rate": bits(stats["Win Rate [%]"] / 100),
            "profit_factor": bits(stats["Profit Factor"]),
            "trades": int(stats["# Trades"]),
            "exposure": bits(stats["Exposure Time [%]"] / 100),
            "equity_final": bits(stats["Equity Final [$]"]),
        },
    }


def main():
    out = {
        "bars": {
            "date": [d.strftime("%Y-%m-%d") for d in GOOG.index],
            **{c.lower(): [bits(x) for x in GOOG[c]] for c in ["Open", "High", "Low", "Close", "Volume"]},
        }
    }
    cross = Backtest(GOOG, SmaCross, cash=10_000, commission=0.002, exclusive_orders=True)
    out["readme"] = run(cross)
    out["grid"] = [
        run(cross, n1=n1, n2=n2)
        for n1 in range(5, 30, 5)
        for n2 in range(10, 70, 5)
        if n1 < n2
    ]
    best = cross.optimize(
        n1=range(5, 30, 5),
        n2=range(10, 70, 5),
        maximize="Equity Final [$]",
        constraint=lambda p: p.n1 < p.n2,
    )
    out["optimised"] = {"n1": int(best._strategy.n1), "n2": int(best._strategy.n2)}
    brackets = Backtest(GOOG, Brackets, cash=10_000, commission=0.002)
    out["brackets"] = [run(brackets, n1=n1, n2=n2) for n1, n2 in [(10, 20), (5, 30), (15, 40)]]
    entries = Backtest(GOOG, Entries, cash=10_000, commission=0.002)
    out["entries"] = [run(entries, n1=n1, n2=n2) for n1, n2 in [(10, 20), (5, 30), (15, 40)]]
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
