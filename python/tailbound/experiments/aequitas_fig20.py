"""Aequitas Fig. 20: half the channels issue 32 KiB RPCs, half 64 KiB, against size-normalised SLOs.

The paper (Zhang et al., SIGCOMM 2022, §6.8, Fig. 20): in the 33-host setup
(:mod:`tailbound.experiments.aequitas_33host`), half the channels keep issuing 32 KiB RPCs and the
other half issue 64 KiB RPCs; with SLOs on the RNL per MTU (Algorithm 1 compares
``latency / size`` with the target and scales each decrease by the size) Aequitas meets the
normalised SLOs for both sizes. The paper gives neither the split nor the SLO values: here, at
every destination, its senders of even rank (16) send 32 KiB RPCs and those of odd rank (16)
64 KiB RPCs, every (source, destination) pair offering the same bytes at the burst and average
loads of the setup (two :class:`~tailbound.traces.rpc_arrivals.PairOnOffRpcs` over the two halves,
each at half of ρ = 1.4 and μ = 0.8); the mix is Fig. 12's 0.6/0.3/0.1.

**The SLOs.** The paper states none for Fig. 20. It does say how it sets SLOs (§6.11, footnote
7): "as per a QoS-mix of (0.2, 0.3, 0.5)", the 99.9p RNL observed when the input mix is that
target mix. So by default the command first runs WFQ alone at the target mix
(``--target-mix``, 0.2/0.3/0.5) on the same setup and sizes (``--calibration-duration-s``), and
sets each class's per-MTU SLO to the largest of the two sizes' per-MTU 99.9p there, so that
both sizes can meet it; ``--slo-per-mtu H,M`` (µs per MTU) gives them instead. The increment
windows are those a 32 KiB RPC's whole-RPC target would derive, ``7 × SLO per MTU / (1 − 0.999)``
(Fig. 12's rule: 15 µs a 32 KiB RPC → 15 ms; derived from the per-MTU target they would be 7
times shorter, and the AIMD's equilibrium miss fraction 7 times larger,
:mod:`~tailbound.experiments.aequitas_equilibrium`).

One CSV row per (mode, size, class): ``mode`` (``calibration``: WFQ alone at the target mix,
when the SLOs are calibrated; ``wfq``; ``aequitas``), ``size_bytes``, ``cls``,
``slo_us_per_mtu`` (NaN for QoS_l), ``slo_source`` (``calibrated`` or ``given``),
``p999_us_per_mtu`` (RNL / size in MTUs, 99.9p over the middle 80% by issue time of the RPCs of
that size run at the class), ``run_share`` (of that size's RPCs, the fraction run at the
class), ``rpcs``, ``unfinished``, ``wall_s``, and for Aequitas' QoS_h and QoS_m (NaN elsewhere)
on that size's channels: ``rpcs_per_window``, ``miss`` (fraction of the admitted RPCs over the
SLO), ``miss_pred`` (the AIMD equilibrium's, :mod:`~tailbound.experiments.aequitas_equilibrium`),
``p_admit_first_tenth`` and ``p_admit_last_tenth`` (mean ``p_admit`` at issue in the first and
last tenth of the run). Exit status 1 unless, with Aequitas, QoS_h and
QoS_m of both sizes are within ``--tolerance`` × their normalised SLO (default 1.25, as
Fig. 12).

Run: ``tailbound experiment aequitas_fig20 --out DIR [--duration-s 0.5] [--slo-per-mtu H,M]``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound import _core
from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.experiments import aequitas_33host as setup
from tailbound.experiments import aequitas_equilibrium as eq
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.sim.network_rpc import NetworkAdmission, NetworkRun, simulate_rpcs
from tailbound.traces.rpc_arrivals import PairOnOffRpcs, Pattern, RpcArrivals, all_to_all
from tailbound.traces.sizes import FixedSize

SIZES = (32768, 65536)
MIX = (0.6, 0.3, 0.1)
#: The paper's target mix, at which its SLOs are the observed 99.9p (§6.11, footnote 7).
TARGET_MIX = (0.2, 0.3, 0.5)
#: The increment windows are those of a 32 KiB (7-MTU) RPC's whole-RPC target.
WINDOW_MTUS = 7
PCTL = 0.999
NAMES = ("QoS_h", "QoS_m", "QoS_l")

Row = dict[str, float | str]


def arrivals(duration_s: float, seed: int, mix: tuple[float, ...] = MIX) -> RpcArrivals:
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
            class_mix=mix,
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
#: The calibration run's ``mode``: WFQ alone at the target mix.
CALIBRATION = "calibration"


def windows_s(slos_per_mtu_s: tuple[float, ...]) -> tuple[float, ...]:
    """The increment windows (s) of per-MTU SLOs: ``WINDOW_MTUS × SLO / (1 − PCTL)``."""
    return tuple(WINDOW_MTUS * s / (1 - PCTL) for s in slos_per_mtu_s)


def p_admit_at(r: NetworkRun, cls: int, size: int, part: int) -> float:
    """The mean ``p_admit`` of the ``size`` channels' ``cls`` requests issued in the first
    (``part`` 0) or last (1) tenth of the run: whether those channels are still moving."""
    t = r.rpcs.time_s
    lo, hi = (
        (t[0], t[0] + 0.1 * (t[-1] - t[0])) if part == 0 else (t[-1] - 0.1 * (t[-1] - t[0]), t[-1])
    )
    m = (r.rpcs.cls == cls) & (r.rpcs.size_bytes == size) & (t >= lo) & (t <= hi)
    return float(r.p_admit[m].mean()) if m.any() else math.nan


def rows_of(
    mode: str,
    r: NetworkRun,
    slos: tuple[float, ...],
    source: str,
    wall: float,
    adm: NetworkAdmission | None = None,
) -> list[Row]:
    """One row per (size, class) of run ``r``; with ``adm`` (an Aequitas run) each controlled
    class's AIMD equilibrium on that size's channels
    (:func:`~tailbound.experiments.aequitas_equilibrium.equilibrium`) and its ``p_admit`` at
    the start and the end (NaN otherwise)."""
    rows: list[Row] = []
    for size in SIZES:
        of_size = r.rpcs.size_bytes == size
        for cls in range(3):
            e = (
                eq.equilibrium(
                    r, adm, cls, _core.rpc_size_mtus(size, setup.MSS_BYTES), size_bytes=size
                )
                if adm is not None and cls < 2
                else {}
            )
            ctl = adm is not None and cls < 2
            rows.append(
                {
                    "mode": mode,
                    "size_bytes": size,
                    "cls": cls,
                    "slo_us_per_mtu": slos[cls] * 1e6 if cls < 2 else math.nan,
                    "slo_source": source,
                    "p999_us_per_mtu": tail_per_mtu(r, cls, size) * 1e6,
                    "run_share": float((r.class_run[of_size] == cls).mean()),
                    "rpcs": float(of_size.sum()),
                    "unfinished": r.counters["unfinished"],
                    "wall_s": wall,
                    "rpcs_per_window": e.get("rpcs_per_window", math.nan),
                    "miss": e.get("f", math.nan),
                    "miss_pred": e.get("f_pred", math.nan),
                    "p_admit_first_tenth": p_admit_at(r, cls, size, 0) if ctl else math.nan,
                    "p_admit_last_tenth": p_admit_at(r, cls, size, 1) if ctl else math.nan,
                }
            )
            print({k: v if isinstance(v, str) else round(v, 3) for k, v in rows[-1].items()})
    return rows


def calibrate(
    duration_s: float, seed: int, target_mix: tuple[float, ...]
) -> tuple[tuple[float, ...], list[Row]]:
    """The per-MTU SLOs (s) as the paper sets its SLOs: WFQ alone at ``target_mix``, per class
    the largest of the sizes' per-MTU 99.9p; and that run's rows (mode ``calibration``)."""
    rpcs = arrivals(duration_s, seed, target_mix)
    start = time.perf_counter()
    r = simulate_rpcs(rpcs, setup.config(False, seed))
    wall = time.perf_counter() - start
    slos = tuple(max(tail_per_mtu(r, cls, size) for size in SIZES) for cls in range(2))
    for cls, s in enumerate(slos):
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"calibration: no finite 99.9p for {NAMES[cls]} at {target_mix}")
    return slos, rows_of(CALIBRATION, r, (*slos, math.nan), "calibrated", wall)


def run(
    duration_s: float,
    seed: int,
    slos_per_mtu_s: tuple[float, ...] | None = None,
    calibration_duration_s: float = 0.25,
    target_mix: tuple[float, ...] = TARGET_MIX,
) -> list[Row]:
    """Calibrate the SLOs (unless given), then WFQ alone and Aequitas at :data:`MIX`."""
    rows: list[Row] = []
    if slos_per_mtu_s is None:
        slos, rows = calibrate(calibration_duration_s, seed, target_mix)
        source = "calibrated"
    else:
        slos, source = slos_per_mtu_s, "given"
    rpcs = arrivals(duration_s, seed)
    for mode in MODES:
        cfg = setup.config(
            mode == AEQUITAS,
            seed,
            slos_s=slos,
            per_mtu=True,
            increment_window_s=windows_s(slos),
        )
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, cfg)
        wall = time.perf_counter() - start
        rows += rows_of(mode, r, (*slos, math.nan), source, wall, cfg.admission)
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
        slos = [float(r["slo_us_per_mtu"]) for r in rows if r["mode"] == AEQUITAS][:2]
        ax.plot(x[:2] + 0.2, slos, "k_", markersize=30, label="SLO")
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


def floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--duration-s", type=float, default=0.5, help="simulated time (s)")
    p.add_argument(
        "--slo-per-mtu",
        type=floats,
        help="QoS_h,QoS_m SLOs in µs per MTU (default: calibrated at --target-mix)",
    )
    p.add_argument(
        "--target-mix",
        type=floats,
        default=TARGET_MIX,
        help="the mix whose WFQ-alone 99.9p are the SLOs (h,m,l)",
    )
    p.add_argument("--calibration-duration-s", type=float, default=0.25, help="simulated time (s)")
    p.add_argument("--tolerance", type=float, default=1.25, help="allowed tail / SLO")
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    slos = args.slo_per_mtu
    if slos is not None:
        if len(slos) != 2 or not all(math.isfinite(v) and v > 0 for v in slos):
            p.error(f"--slo-per-mtu: two SLOs > 0 µs per MTU (QoS_h,QoS_m), got {slos}")
        slos = tuple(v * 1e-6 for v in slos)
    mix = args.target_mix
    if len(mix) != 3 or any(v < 0 for v in mix) or abs(sum(mix) - 1) > 1e-9:
        p.error(f"--target-mix: three shares ≥ 0 summing to 1, got {mix}")
    rows = run(args.duration_s, args.seed, slos, args.calibration_duration_s, mix)
    title = "Aequitas Fig. 20: mixed sizes"
    print(write_table(args.out, "aequitas_fig20", rows, title))
    plot(rows, args.out / "aequitas_fig20.png")
    return report_failures(check(rows, args.tolerance))


if __name__ == "__main__":
    raise SystemExit(main())
