"""Aequitas Figs. 17–18: two RPC channels converge to max-min fair QoS_h shares (paper: ~10 ms).

The paper (Zhang et al., SIGCOMM 2022, §6.5–6.6, Figs. 17–18): the 3-host setup of Fig. 11
(:mod:`tailbound.experiments.aequitas_fig11`: hosts 0 and 1 each issue 32 KiB RPCs at their
full line rate to host 2, WFQ 4:1, 1 MiB buffers), a QoS_h SLO of 15 µs, and the two channels
asking different QoS_h shares: Fig. 17, channel A 40% and channel B 80% (40 and 80 Gb/s of
QoS_h demand): fairness is each admitted the same rate (20% of its RPCs in the paper); Fig. 18,
A 10% (within its fair share) and B 80%: A keeps ``p_admit`` near 1 (its 1st percentile 0.82
in the paper) and 10 Gb/s, B reclaims the rest. Convergence within 10 ms (Fig. 17) and 3 ms
(Fig. 18). These are the paper's settings; the increment window is the authors' fairness run's
fixed 2 ms (``py/fairness_exp/conf_fairness.txt``, ``memory_time_duration: 2000``; that file
also has a 30 µs SLO and a 10%/70% split, not used here), with their update rules.

One CSV in long form, ``part`` per row:

- ``time``: per ``scenario`` (``fig17``, ``fig18``), ``channel`` (0 = A, 1 = B) and
  ``--window-s`` window starting at ``t_s``: ``p_admit`` (mean over the channel's QoS_h
  requests issued in it, the admit probability at issue) and ``qos_h_gbps`` (bytes of its RPCs
  issued at QoS_h in it, Gb/s);
- ``summary``: per scenario and channel: ``input_h``, ``demand_gbps``, ``fair_gbps`` (the
  max-min share of the two channels' measured total over the second half of the run),
  ``qos_h_gbps`` (the channel's over that half), ``p_admit`` (here the 1st percentile of
  ``p_admit`` at its QoS_h issues over that half), ``p999_us`` (QoS_h 99.9p RNL of the run,
  both channels), ``converge_ms`` (the end of the first 10-window moving average of its rate
  within 25% of its fair share: AIMD then keeps oscillating around it) and ``in_band`` (the
  fraction of the second half's moving averages within that band).

Exit status 1 unless, in both scenarios, each channel's final rate is within 15% of its fair
share, converges within ``--converge-ms`` (default 50: measured 10–45 ms, the paper's 10 ms
and 3 ms) and stays in the band at least half of the second half, and in Fig. 18 A's
1st-percentile ``p_admit`` is at least 0.7.

Run: ``tailbound experiment aequitas_fig17 --out DIR [--duration-s 0.5]``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.experiments import aequitas_fig11 as fig11
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.sim.network_rpc import NetworkRun, simulate_rpcs

SLO_S = 15e-6
SCENARIOS = {"fig17": (0.4, 0.8), "fig18": (0.1, 0.8)}
#: Width, in windows, of the moving average the convergence time is read from.
SMOOTH = 10
#: A channel has converged once its smoothed rate is within this fraction of its fair share.
BAND = 0.25

Row = dict[str, float | str]


def max_min(total: float, demands: Sequence[float]) -> list[float]:
    """Max-min fair shares of ``total`` among ``demands`` (water-filling)."""
    shares = [0.0] * len(demands)
    left, todo = total, sorted(range(len(demands)), key=lambda i: demands[i])
    while todo:
        each = left / len(todo)
        i = todo[0]
        if demands[i] <= each:
            shares[i] = demands[i]
            left -= demands[i]
            todo.pop(0)
        else:
            for j in todo:
                shares[j] = each
            break
    return shares


def run_scenario(
    name: str, shares: tuple[float, float], duration_s: float, window_s: float, seed: int
) -> list[Row]:
    n = int(duration_s * 2 * fig11.LINK_BPS / (8 * (fig11.RPC_BYTES + 7 * fig11.HEADER_BYTES)))
    rpcs = fig11.incast_poisson(n, seed)
    u = np.random.default_rng(seed + 1).random(len(rpcs))
    cls = np.where(u < np.asarray(shares)[rpcs.src], 0, 1).astype(np.uint8)
    rpcs = type(rpcs)(
        rpcs.time_s, rpcs.src, rpcs.dst, rpcs.size_bytes, cls, rpcs.n_hosts, rpcs.duration_s
    )
    r: NetworkRun = simulate_rpcs(rpcs, fig11.config(SLO_S, seed))
    t = rpcs.time_s
    idx = (t // window_s).astype(np.int64)
    n_win = int(idx.max()) + 1
    half = t >= t[-1] / 2
    rows: list[Row] = []
    final, series = [], []
    for ch in range(2):
        mine = rpcs.src == ch
        asked = mine & (rpcs.cls == 0)
        ran = mine & (r.class_run == 0)
        bits = np.bincount(idx[ran], weights=8.0 * rpcs.size_bytes[ran], minlength=n_win)
        gbps = bits / window_s / 1e9
        p_sum = np.bincount(idx[asked], weights=r.p_admit[asked], minlength=n_win)
        p_n = np.bincount(idx[asked], minlength=n_win)
        with np.errstate(invalid="ignore"):
            p = p_sum / p_n
        series.append(gbps)
        final.append(float(8.0 * rpcs.size_bytes[ran & half].sum() / (t[-1] - t[-1] / 2) / 1e9))
        for w in range(n_win):
            rows.append(
                {
                    "part": "time",
                    "scenario": name,
                    "channel": ch,
                    "t_s": w * window_s,
                    "p_admit": float(p[w]),
                    "qos_h_gbps": float(gbps[w]),
                }
            )
    demands = [s * fig11.LINK_BPS * fig11.SENDER_LOAD / 1e9 for s in shares]
    fair = max_min(sum(final), demands)
    p999 = r.rnl_tail(0) * 1e6
    for ch in range(2):
        asked_late = (rpcs.src == ch) & (rpcs.cls == 0) & half
        smooth = np.convolve(series[ch], np.ones(SMOOTH) / SMOOTH, mode="valid")
        near = np.abs(smooth - fair[ch]) <= BAND * fair[ch]
        first = np.nonzero(near)[0]
        converge = (first[0] + SMOOTH) * window_s * 1e3 if len(first) else math.inf
        in_band = float(near[len(near) // 2 :].mean())
        rows.append(
            {
                "part": "summary",
                "scenario": name,
                "channel": ch,
                "t_s": math.nan,
                "p_admit": float(np.quantile(r.p_admit[asked_late], 0.01)),
                "qos_h_gbps": final[ch],
                "input_h": shares[ch],
                "demand_gbps": demands[ch],
                "fair_gbps": fair[ch],
                "p999_us": p999,
                "converge_ms": converge,
                "in_band": in_band,
            }
        )
        print({k: v if isinstance(v, str) else round(v, 3) for k, v in rows[-1].items()})
    return rows


def plot(rows: list[Row], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, name in enumerate(SCENARIOS):
        for ch, label in enumerate(("A", "B")):
            sel = [
                r
                for r in rows
                if r["part"] == "time" and r["scenario"] == name and r["channel"] == ch
            ]
            ms = [1e3 * float(r["t_s"]) for r in sel]
            axes[0][col].plot(ms, [float(r["p_admit"]) for r in sel], label=f"channel {label}")
            axes[1][col].plot(ms, [float(r["qos_h_gbps"]) for r in sel], label=f"channel {label}")
        axes[0][col].set_title(f"Fig. {name[3:]}: QoS_h asked {SCENARIOS[name]}")
        axes[0][col].set_ylabel("p_admit")
        axes[1][col].set_ylabel("admitted QoS_h (Gb/s)")
        axes[1][col].set_xlabel("time (ms)")
        axes[0][col].legend()
    fig.tight_layout()
    save_plot(fig, png)


def check(rows: list[Row], converge_ms: float) -> list[str]:
    """The paper's claims as failures (sentences)."""
    bad = []
    for r in rows:
        if r["part"] != "summary":
            continue
        where = f"{r['scenario']} channel {'AB'[int(r['channel'])]}"
        got, fair = float(r["qos_h_gbps"]), float(r["fair_gbps"])
        if not abs(got - fair) <= 0.15 * fair:
            bad.append(f"{where}: {got:.1f} Gb/s, fair share {fair:.1f}")
        if not float(r["converge_ms"]) <= converge_ms:
            bad.append(f"{where}: converged only after {float(r['converge_ms']):.1f} ms")
        if not float(r["in_band"]) >= 0.5:
            bad.append(f"{where}: near its fair share only {float(r['in_band']):.0%} of the time")
        if r["scenario"] == "fig18" and r["channel"] == 0 and not float(r["p_admit"]) >= 0.7:
            bad.append(f"{where}: 1st-percentile p_admit {float(r['p_admit']):.2f} < 0.7")
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--duration-s", type=float, default=0.5, help="simulated time (s)")
    p.add_argument("--window-s", type=float, default=1e-3, help="time-series window (s)")
    p.add_argument("--converge-ms", type=float, default=50.0, help="allowed convergence time (ms)")
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    rows: list[Row] = []
    for name, shares in SCENARIOS.items():
        rows += run_scenario(name, shares, args.duration_s, args.window_s, args.seed)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{k: r.get(k, math.nan) for k in columns} for r in rows]
    write_table(args.out, "aequitas_fig17", rows, "Aequitas Figs. 17–18")
    for r in rows:
        if r["part"] == "summary":
            print({k: v if isinstance(v, str) else round(v, 3) for k, v in r.items()})
    plot(rows, args.out / "aequitas_fig17.png")
    return report_failures(check(rows, args.converge_ms))


if __name__ == "__main__":
    raise SystemExit(main())
