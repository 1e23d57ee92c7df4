"""Aequitas Fig. 20: half the channels issue 32 KiB RPCs, half 64 KiB, against size-normalised SLOs.

The paper (Zhang et al., SIGCOMM 2022, §6.8, Fig. 20): in the 33-host setup
(:mod:`tailbound.experiments.aequitas_33host`), half the channels keep issuing 32 KiB RPCs and the
other half issue 64 KiB RPCs; with SLOs on the RNL per MTU (Algorithm 1 compares
``latency / size`` with the target and scales each decrease by the size) Aequitas meets the
normalised SLOs for both sizes. The paper gives neither the split nor the SLO values: here, at
every destination, its senders of even rank (16) send 32 KiB RPCs and those of odd rank (16)
64 KiB RPCs, every (source, destination) pair offering the same bytes at the burst and average
loads of the setup (two :class:`~tailbound.traces.rpc_arrivals.PairOnOffRpcs` over the two halves,
each at half of ρ = 1.4 and μ = 0.8); the mix is Fig. 12's 0.6/0.3/0.1 and the SLOs are Fig. 12's
15 µs / 25 µs for a 32 KiB RPC (7 MTUs) per MTU: 15/7 and 25/7 µs per MTU (64 KiB = 13 MTUs),
with Fig. 12's increment windows (``WINDOWS_S``).

One CSV row per (mode, size, class): ``mode`` (``wfq``, ``aequitas``), ``size_bytes``, ``cls``,
``slo_us_per_mtu`` (NaN for QoS_l), ``p999_us_per_mtu`` (RNL / size in MTUs, 99.9p over the middle
80% by issue time of the RPCs of that size run at the class), ``run_share`` (of that size's
RPCs, the fraction run at the class). Exit status 1 unless, with Aequitas, QoS_h and QoS_m of
both sizes are within ``--tolerance`` × their normalised SLO (default 1.25, as Fig. 12).

Run: ``tailbound experiment aequitas_fig20 --out DIR [--duration-s 0.5]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound import _core
from tailbound.experiments import aequitas_33host as setup
from tailbound.experiments.wc_common import save_plot
from tailbound.sim.network_rpc import NetworkRun, simulate_rpcs
from tailbound.traces.rpc_arrivals import PairOnOffRpcs, Pattern, RpcArrivals, all_to_all
from tailbound.traces.sizes import FixedSize

SIZES = (32768, 65536)
MIX = (0.6, 0.3, 0.1)
MTUS_32K = 7
SLOS_PER_MTU_S = tuple(s / MTUS_32K for s in setup.SLOS_S)
#: The increment windows of Fig. 12's whole-RPC SLOs (1000 × 15 µs, 1000 × 25 µs): derived
#: from the per-MTU targets they would be 7 times shorter, and the controller would increase
#: 7 times as often and settle at a tail about twice the SLO (measured: 4.15 µs/MTU for 2.14).
WINDOWS_S = (15e-3, 25e-3)
NAMES = ("QoS_h", "QoS_m", "QoS_l")

Row = dict[str, float | str]


def arrivals(duration_s: float, seed: int) -> RpcArrivals:
    """Senders of even rank at each destination send 32 KiB RPCs, those of odd rank 64 KiB;
    each pair at the setup's per-pair burst rate, the two halves merged by issue time."""
    full = all_to_all(setup.N_HOSTS)
    parts = []
    for half, size in enumerate(SIZES):
        pattern = Pattern(full.n_hosts, full.dests, tuple(s[half::2] for s in full.senders))
        frac = sum(len(s[half::2]) for s in full.senders) / sum(len(s) for s in full.senders)
        gen = PairOnOffRpcs(
            setup.BURST_LOAD * frac,
            setup.LOAD * frac,
            FixedSize(size),
            class_mix=MIX,
            rpcs_per_burst=setup.RPCS_PER_BURST,
            link_rate_bps=setup.LINK_BPS * size / setup.wire_bytes(size),
        )
        parts.append(gen.generate(pattern, duration_s, seed=seed + half))
    order = np.argsort(np.concatenate([p.time_s for p in parts]), kind="stable")

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])[order]

    return RpcArrivals(
        time_s=cat("time_s"),
        src=cat("src"),
        dst=cat("dst"),
        size_bytes=cat("size_bytes"),
        cls=cat("cls"),
        n_hosts=setup.N_HOSTS,
        duration_s=duration_s,
    )


def tail_per_mtu(r: NetworkRun, cls: int, size: int) -> float:
    """99.9p of RNL per MTU (s) over the middle 80% of the ``size`` RPCs run at ``cls``."""
    m = (r.class_run == cls) & (r.rpcs.size_bytes == size)
    if not m.any():
        return math.nan
    v = np.where(np.isnan(r.rnl_s[m]), np.inf, r.rnl_s[m]) / r.size_mtus[m]
    return float(_core.rnl_tail(r.rpcs.time_s[m], v, 0.999, 0.8))


#: The two runs: WFQ alone, and WFQ with Aequitas' admission control (the CSV's ``mode``; the
#: experiment's own labels, not policy names).
MODES = ("wfq", "aequitas")
WFQ, AEQUITAS = MODES


def run(duration_s: float, seed: int) -> list[Row]:
    rpcs = arrivals(duration_s, seed)
    rows: list[Row] = []
    for mode in MODES:
        cfg = setup.config(
            mode == AEQUITAS,
            seed,
            slos_s=SLOS_PER_MTU_S,
            per_mtu=True,
            increment_window_s=WINDOWS_S,
        )
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, cfg)
        wall = time.perf_counter() - start
        for size in SIZES:
            of_size = r.rpcs.size_bytes == size
            for cls in range(3):
                rows.append(
                    {
                        "mode": mode,
                        "size_bytes": size,
                        "cls": cls,
                        "slo_us_per_mtu": SLOS_PER_MTU_S[cls] * 1e6 if cls < 2 else math.nan,
                        "p999_us_per_mtu": tail_per_mtu(r, cls, size) * 1e6,
                        "run_share": float((r.class_run[of_size] == cls).mean()),
                        "rpcs": float(of_size.sum()),
                        "unfinished": r.counters["unfinished"],
                        "wall_s": wall,
                    }
                )
                print({k: v if isinstance(v, str) else round(v, 3) for k, v in rows[-1].items()})
    return rows


def plot(rows: list[Row], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    x = np.arange(3)
    for ax, size in zip(axes, SIZES, strict=True):
        for i, mode in enumerate(MODES):
            sel = [r for r in rows if r["mode"] == mode and r["size_bytes"] == size]
            ax.bar(x + 0.4 * i, [float(r["p999_us_per_mtu"]) for r in sel], 0.4, label=mode)
        ax.plot(x[:2] + 0.2, [s * 1e6 for s in SLOS_PER_MTU_S], "k_", markersize=30, label="SLO")
        ax.set_xticks(x + 0.2, NAMES)
        ax.set_yscale("log")
        ax.set_title(f"{size // 1024} KiB RPCs")
        ax.legend()
    axes[0].set_ylabel("99.9p RNL per MTU (µs)")
    fig.suptitle("Aequitas Fig. 20: half the channels 32 KiB, half 64 KiB")
    fig.tight_layout()
    save_plot(fig, png)


def check(rows: list[Row], tolerance: float) -> list[str]:
    """The paper's claim as failures (sentences)."""
    bad = []
    for r in rows:
        if r["mode"] != AEQUITAS or int(r["cls"]) == 2:
            continue
        got, slo = float(r["p999_us_per_mtu"]), float(r["slo_us_per_mtu"])
        if not got <= tolerance * slo:
            name = NAMES[int(r["cls"])]
            bad.append(f"{name} {r['size_bytes']} B: {got:.2f} µs/MTU > {tolerance} × {slo:.2f}")
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    return setup.main_of(
        argv,
        name="aequitas_fig20",
        title="Aequitas Fig. 20: mixed sizes",
        description=(__doc__ or "").splitlines()[0],
        run=run,
        plot=plot,
        check=check,
    )


if __name__ == "__main__":
    raise SystemExit(main())
