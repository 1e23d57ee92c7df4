"""Aequitas Fig. 10: the packet simulator against Eq. (1), priority inversion points included.

The paper (Zhang et al., SIGCOMM 2022, §6.1 "Validation", Fig. 10) replays its theoretical
2-QoS scenario (§4.1, Fig. 7–8) in its packet simulator: "congestion control is disabled and
the buffer size is set to a large value", WFQ weights 4:1. The authors' configuration of it
(SymbioticLab/Aequitas ``artifact-eval``, ``py/theory_verification_exp/theory_conf_30_70.txt``):
two hosts, 32 KiB RPCs at constant gaps (``disable_poisson_arrival: 1``), one burst at
``burst_load`` for the whole run then idle until the mean is ``load`` (``use_dynamic_load``,
``burst_size`` = ``num_flow`` = 200 000 RPCs), ``disable_aequitas_cc: 1``, a 10 GB buffer; their
README takes "the worst case delay in the output log" (the largest RPC latency of a class)
"and divide[s] it by the avg sending period".

Here the same on ``tailbound.sim.network_rpc`` (the packet-level ``netsim``): host 0 sends
``--rpcs`` 32 KiB RPCs to host 1, one every ``wire bits / (ρ · 100 Gb/s)`` (the 40 B headers
counted: the link serialises them), so the switch port towards host 1 receives ``ρ`` times its
rate during the burst of length ``D``; the period is ``T = D · ρ/μ``. A share ``x`` of the RPCs
asks QoS_h, spread evenly (RPC ``i`` is QoS_h when ``⌊(i + 1)x⌋ > ⌊ix⌋``: the fluid model's
constant mix, not a random one). No admission control, no congestion control (a fixed window
of 10⁹ packets: every packet enters the network at its RPC's issue), a 2⁵⁰-byte buffer (no
drop), a 10 s timeout (never fires). ``simulated_delay`` is the largest RNL of the RPCs that ran
at QoS_h divided by ``T``; ``eq1_delay`` is :func:`tailbound.dnc.wfq_delay.delay_h`; both in
Eq. (1)'s normalised units (fractions of the period). The table and plot add QoS_l against
Eq. (8) and the priority inversion point, the first ``x`` where QoS_h's simulated delay exceeds
QoS_l's, against Lemma 1's ``φ/(φ + 1)``.

What must hold (exit status 1 otherwise): at every ``x``, ``|simulated − Eq. 1| ≤ 0.1 · Eq. 1 +
0.05``, and the simulated inversion point within one grid step of ``φ/(φ + 1)``.

Run: ``tailbound experiment aequitas_fig10 --out DIR [--rpcs N] [--phi 4 --rho 2 --mu 0.8]
[--step 0.02]`` (writes ``aequitas_fig10.csv``: ``x, simulated_delay, eq1_delay``; ``.md``,
``.png``). The default is the notes' worked example (φ = 4, ρ = 2, μ = 0.8: 0 up to x = 0.4,
``x − 0.4`` to 0.8, 0.4 above); ``--rho 1.2`` is the authors' configuration.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tailbound.atomic import write_text_atomic
from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.dnc.wfq_delay import delay_h, delay_l, inversion_share
from tailbound.errors import ConfigError
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.sim.network_rpc import CongestionWindow, NetworkConfig, simulate_rpcs
from tailbound.traces.rpc_arrivals import RpcArrivals

RPC_BYTES = 32768
HEADER_BYTES = 40
MSS_BYTES = 5080
LINK_BPS = 100e9
#: Wire bits of one RPC: its 7 packets' payload and headers.
RPC_WIRE_BITS = 8.0 * (RPC_BYTES + -(-RPC_BYTES // MSS_BYTES) * HEADER_BYTES)
#: "Congestion control is disabled": every packet leaves at its RPC's issue.
NO_CC = CongestionWindow(enabled=False, init_cwnd=1e9, max_cwnd=1e9, rto_s=10.0)
#: "The buffer size is set to a large value": nothing is ever dropped.
HUGE_BUFFER_BYTES = 1 << 50
#: Tolerance of the issue: |simulated − Eq. 1| ≤ REL · Eq. 1 + ABS.
REL, ABS = 0.1, 0.05


def burst(x: float, n_rpcs: int, rho: float) -> RpcArrivals:
    """``n_rpcs`` RPCs from host 0 to host 1 at ``rho`` × the link rate (wire bytes), a share
    ``x`` of them asking QoS_h (class 0), spread evenly; the rest class 1."""
    i = np.arange(n_rpcs)
    high = np.floor((i + 1) * x) > np.floor(i * x)
    gap = RPC_WIRE_BITS / (rho * LINK_BPS)
    return RpcArrivals(
        time_s=(i * gap).astype(np.float64),
        src=np.zeros(n_rpcs, dtype=np.int32),
        dst=np.ones(n_rpcs, dtype=np.int32),
        size_bytes=np.full(n_rpcs, RPC_BYTES, dtype=np.int64),
        cls=np.where(high, 0, 1).astype(np.uint8),
        n_hosts=2,
        duration_s=n_rpcs * gap,
    )


def grid(phi: float, rho: float, step: float) -> list[float]:
    """``step, 2·step, …`` and 1, with Eq. (1)'s and Eq. (8)'s branch points added."""
    q = phi / (phi + 1.0)
    c = 1.0 - 1.0 / ((phi + 1.0) * rho)
    points = {round(k * step, 10) for k in range(1, math.floor(1.0 / step + 1e-9) + 1)} | {1.0}
    points |= {round(v, 10) for v in (q / rho, q, c, 1.0 / rho, 1.0 - 1.0 / rho) if 0 < v <= 1}
    return sorted(points)


def run(
    xs: Sequence[float], phi: float, rho: float, mu: float, n_rpcs: int
) -> list[dict[str, float]]:
    """One row per ``x``: simulated and closed-form delays of both classes (fractions of the
    period), the run's counters and wall time."""
    config = NetworkConfig(n_hosts=2, weights=(phi, 1.0), buffer_bytes=HUGE_BUFFER_BYTES, cc=NO_CC)
    period = n_rpcs * RPC_WIRE_BITS / (rho * LINK_BPS) * rho / mu
    rows = []
    for x in xs:
        rpcs = burst(x, n_rpcs, rho)
        start = time.perf_counter()
        r = simulate_rpcs(rpcs, config)
        wall = time.perf_counter() - start
        if r.counters["unfinished"] or r.counters["data_drops"] or r.counters["timeouts"]:
            raise RuntimeError(f"x = {x}: a drop, timeout or unfinished RPC ({r.counters})")
        high = r.class_run == 0
        low_rnl = r.rnl_s[~high]
        rows.append(
            {
                "x": x,
                "simulated_delay": float(r.rnl_s[high].max()) / period if high.any() else 0.0,
                "eq1_delay": float(delay_h(x, phi, rho, mu)),
                "simulated_delay_l": float(low_rnl.max()) / period if len(low_rnl) else math.nan,
                "eq8_delay": float(delay_l(x, phi, rho, mu)),
                "data_packets": r.counters["data_packets"],
                "wall_s": wall,
            }
        )
    return rows


def simulated_inversion(rows: list[dict[str, float]]) -> float:
    """The first ``x`` where QoS_h's simulated delay exceeds QoS_l's (NaN: none)."""
    for r in rows:
        if r["simulated_delay"] > r["simulated_delay_l"]:
            return r["x"]
    return math.nan


def check(rows: list[dict[str, float]], phi: float, step: float) -> list[str]:
    """The issue's conditions; the failures, as sentences."""
    bad = [
        f"x = {r['x']:g}: simulated {r['simulated_delay']:.4f} vs Eq. 1 {r['eq1_delay']:.4f}"
        for r in rows
        if not abs(r["simulated_delay"] - r["eq1_delay"]) <= REL * r["eq1_delay"] + ABS
    ]
    q = float(inversion_share(phi))
    at = simulated_inversion(rows)
    if not abs(at - q) <= step + 1e-9:
        bad.append(f"simulated inversion at x = {at:g}, Lemma 1 puts it at φ/(φ + 1) = {q:g}")
    return bad


def plot(rows: list[dict[str, float]], phi: float, rho: float, mu: float, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = np.linspace(1e-3, 1.0, 1000)
    x = [r["x"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.plot(xs, delay_h(xs, phi, rho, mu), "C0-", label="QoS_h, Eq. (1)")
    ax.plot(xs, delay_l(xs, phi, rho, mu), "C1-", label="QoS_l, Eq. (8)")
    ax.plot(x, [r["simulated_delay"] for r in rows], "C0o", ms=4, label="QoS_h, simulated")
    ax.plot(x, [r["simulated_delay_l"] for r in rows], "C1s", ms=4, label="QoS_l, simulated")
    ax.axvline(float(inversion_share(phi)), color="k", ls=":", label="φ/(φ + 1)")
    ax.set_xlabel("QoS_h share x")
    ax.set_ylabel("worst-case delay (fraction of the period)")
    ax.set_title(f"Aequitas Fig. 10: WFQ {phi:g}:1, ρ = {rho:g}, μ = {mu:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_plot(fig, png)


def markdown(rows: list[dict[str, float]], title: str) -> str:
    """The table of every column of ``rows`` (the CSV keeps the three of the issue)."""
    columns = list(rows[0])
    lines = [f"### {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(f"{r[c]:.4g}" for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--rpcs", type=int, default=10_000, help="32 KiB RPCs in the burst")
    p.add_argument("--phi", type=float, default=4.0, help="WFQ weight ratio QoS_h : QoS_l")
    p.add_argument("--rho", type=float, default=2.0, help="burst load, × the link rate")
    p.add_argument("--mu", type=float, default=0.8, help="mean load over the period")
    p.add_argument("--step", type=float, default=0.02, help="step of the QoS_h share")
    add_quiet(p)
    args = p.parse_args(argv)
    if args.rpcs < 100:
        raise ConfigError(None, f"must be ≥ 100, got {args.rpcs}", field="--rpcs")
    if not 0.0 < args.step <= 0.5:
        raise ConfigError(None, f"must be in (0, 0.5], got {args.step}", field="--step")
    delay_h(1.0, args.phi, args.rho, args.mu)  # refuses a bad --phi, --rho or --mu by name
    xs = grid(args.phi, args.rho, args.step)
    start = time.perf_counter()
    rows = run(xs, args.phi, args.rho, args.mu, args.rpcs)
    wall = time.perf_counter() - start
    title = (
        f"Aequitas Fig. 10: WFQ {args.phi:g}:1, ρ = {args.rho:g}, μ = {args.mu:g}, "
        f"{args.rpcs} RPCs a point"
    )
    keys = ("x", "simulated_delay", "eq1_delay")
    write_table(args.out, "aequitas_fig10", [{k: r[k] for k in keys} for r in rows], title)
    detail = markdown(rows, title)  # the .md adds QoS_l against Eq. (8)
    at = simulated_inversion(rows)
    summary = (
        f"\nPriority inversion: simulated first at x = {at:g}; Lemma 1: φ/(φ + 1) = "
        f"{float(inversion_share(args.phi)):g}. Largest |simulated − Eq. 1| = "
        f"{max(abs(r['simulated_delay'] - r['eq1_delay']) for r in rows):.4f}, of QoS_l vs "
        f"Eq. 8 = {np.nanmax([abs(r['simulated_delay_l'] - r['eq8_delay']) for r in rows]):.4f}."
        f" {len(rows)} points in {wall:.1f} s.\n"
    )
    write_text_atomic(args.out / "aequitas_fig10.md", detail + summary)
    print(detail + summary)
    plot(rows, args.phi, args.rho, args.mu, args.out / "aequitas_fig10.png")
    return report_failures(check(rows, args.phi, args.step))


if __name__ == "__main__":
    raise SystemExit(main())
