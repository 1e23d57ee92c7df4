"""Aequitas Fig. 19: strict priority queueing alone against Aequitas as the QoS_h share grows.

The paper (Zhang et al., SIGCOMM 2022, §6.7, Fig. 19): the 33-host setup with the switches'
WFQ replaced by strict priority (SPQ), QoS_m fixed at 20% of the RPCs and the QoS_h share
increased: SPQ alone fails to keep the tail predictable as more RPCs are marked QoS_h (it does
not resolve the race to the top), while Aequitas keeps QoS_h and QoS_m at their SLOs.

Here: the setup of :mod:`tailbound.experiments.aequitas_33host` (32 KiB RPCs, per-pair bursts
at ρ = 1.4, mean load 0.8, 512 KiB buffers, the Swift-like window, whole-RPC SLOs 15 / 25 µs),
input mix ``(x, 0.2, 0.8 − x)``. Three modes on the same RPCs of each mix: ``spq`` (strict
priority, no admission) at every ``--shares`` point for ``--duration-s`` (0.05 s), ``aequitas``
(admission over WFQ 8:4:1) at the ``--aequitas-shares`` points (30%, 60%) and ``aequitas_spq``
(admission over strict priority; the paper does not say whether it ran this) at
``--aequitas-spq-shares`` (60%), both for ``--aequitas-duration-s`` (0.5 s, as Fig. 12: the
controller's increment windows are 15 / 25 ms, and the tails are over the middle 80% of the run,
so a shorter run keeps more of the controller's descent from ``p_admit = 1``).

One CSV row per (mode, share): ``mode``, ``qos_h_share`` (asked), ``qos_h_p999_us``,
``qos_m_p999_us``, ``qos_l_p999_us`` (99.9p RNL of the RPCs run at each class, middle 80% by
issue time), ``slo_h_us``, ``slo_m_us``, ``qos_h_run_share``, ``qos_m_run_share``, ``rpcs``,
``wall_s``, and per admitted class (``qos_h_``, ``qos_m_``; NaN without admission) the AIMD's
equilibrium as measured on the run (:mod:`~tailbound.experiments.aequitas_equilibrium`):
``rpcs_per_window`` (admitted RPCs per channel per increment window), ``miss`` (fraction of
them over the SLO), ``miss_pred`` (the equilibrium's ``ln(1 + α/(β · 7)) / rpcs_per_window``),
``q_at_miss_pred_us`` (their RNL quantile at ``1 − miss_pred``, where the equilibrium puts the
SLO) and ``p999_pred_us`` (the 99.9p it predicts: SLO × 0.999 quantile / that quantile).

Exit status 1 unless SPQ alone misses the QoS_h SLO at the largest share and its QoS_h tail
grows from the smallest share to the largest, and Aequitas over WFQ keeps QoS_h's and QoS_m's
tails stable across the shares asked (the largest share's within ``--stable`` (1.15) × the
smallest's) and each within ``--predicted`` (1.1) × the 99.9p its equilibrium predicts.

Run: ``tailbound experiment aequitas_fig19 --out DIR``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from tailbound.cli.exitcodes import report_failures
from tailbound.cli.options import add_quiet
from tailbound.experiments import aequitas_33host as setup
from tailbound.experiments import aequitas_baselines as base
from tailbound.experiments import aequitas_equilibrium as eq
from tailbound.experiments.wc_common import save_plot, write_table
from tailbound.sim.network_rpc import simulate_rpcs
from tailbound.traces.sizes import FixedSize

SIZE = 32768
SIZE_MTUS = 7
QOS_M = 0.2
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
AEQUITAS_SHARES = (0.3, 0.6)
#: Admission over strict priority (not in the paper) at the largest share only, to fit the budget.
AEQUITAS_SPQ_SHARES = (0.6,)
#: Aequitas' tail at the largest share asked may be at most this × its tail at the smallest
#: (SPQ alone: 1.7 × from 30 to 60%).
STABLE = 1.15
#: Aequitas' tail may be at most this × the 99.9p its AIMD equilibrium predicts for the run
#: (Fig. 11's tolerance for a tail tracking its target).
PREDICTED = 1.1

Row = dict[str, float | str]


def mix(x: float) -> tuple[float, float, float]:
    return (x, QOS_M, round(1.0 - QOS_M - x, 10))


def point(mode: str, x: float, duration_s: float, seed: int) -> Row:
    rpcs = setup.arrivals(FixedSize(SIZE), SIZE, mix(x), duration_s, seed)
    scheme = {"spq": "spq", "aequitas": "aequitas", "aequitas_spq": "aequitas_spq"}[mode]
    cfg = base.scheme_config(scheme, setup.N_HOSTS, seed, slos_s=setup.SLOS_S, per_mtu=False)
    start = time.perf_counter()
    r = simulate_rpcs(rpcs, cfg)
    row: Row = {
        "mode": mode,
        "qos_h_share": x,
        "qos_h_p999_us": r.rnl_tail(0) * 1e6,
        "qos_m_p999_us": r.rnl_tail(1) * 1e6,
        "qos_l_p999_us": r.rnl_tail(2) * 1e6,
        "slo_h_us": setup.SLOS_S[0] * 1e6,
        "slo_m_us": setup.SLOS_S[1] * 1e6,
        "qos_h_run_share": r.run_share(0),
        "qos_m_run_share": r.run_share(1),
        "rpcs": float(len(rpcs)),
        "wall_s": time.perf_counter() - start,
    }
    adm = cfg.admission
    for k, name in enumerate(("qos_h", "qos_m")):
        e = eq.equilibrium(r, adm, k, SIZE_MTUS) if adm is not None else {}
        nan = float("nan")
        q = e.get("q_at_f_pred_s", nan)
        slo = setup.SLOS_S[k]
        row[f"{name}_rpcs_per_window"] = e.get("rpcs_per_window", nan)
        row[f"{name}_miss"] = e.get("f", nan)
        row[f"{name}_miss_pred"] = e.get("f_pred", nan)
        row[f"{name}_q_at_miss_pred_us"] = q * 1e6
        # The 99.9p the equilibrium predicts: the run's own tail shape (its 0.999 quantile
        # over its 1 − f_pred quantile) with the SLO at the quantile 1 − f_pred.
        row[f"{name}_p999_pred_us"] = slo * e.get("q999_s", nan) / q * 1e6
    print({k: v if isinstance(v, str) else round(v, 3) for k, v in row.items()})
    return row


def run(
    shares: Sequence[float],
    duration_s: float,
    aequitas_shares: Sequence[float],
    aequitas_duration_s: float,
    seed: int,
    aequitas_spq_shares: Sequence[float] = AEQUITAS_SPQ_SHARES,
) -> list[Row]:
    rows = [point("spq", x, duration_s, seed) for x in shares]
    rows += [point("aequitas", x, aequitas_duration_s, seed) for x in aequitas_shares]
    rows += [point("aequitas_spq", x, aequitas_duration_s, seed) for x in aequitas_spq_shares]
    return rows


def plot(rows: list[Row], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, cls, slo in zip(axes, ("qos_h", "qos_m"), setup.SLOS_S, strict=True):
        for mode, style in (("spq", "o-"), ("aequitas", "s-"), ("aequitas_spq", "^--")):
            sel = [r for r in rows if r["mode"] == mode]
            ax.plot(
                [100 * float(r["qos_h_share"]) for r in sel],
                [float(r[f"{cls}_p999_us"]) for r in sel],
                style,
                label=mode,
            )
        ax.axhline(slo * 1e6, color="k", ls=":", label="SLO")
        ax.set_yscale("log")
        ax.set_xlabel("QoS_h share of the input (%), QoS_m 20%")
        ax.set_title(f"{cls} 99.9p RNL")
    axes[0].set_ylabel("99.9p RNL (µs)")
    axes[0].legend()
    fig.suptitle("Aequitas Fig. 19: strict priority alone vs Aequitas, 33 hosts")
    fig.tight_layout()
    save_plot(fig, png)


def check(rows: list[Row], stable: float, predicted: float) -> list[str]:
    """The paper's claim as failures (sentences): SPQ alone misses the QoS_h SLO at the largest
    share and its QoS_h tail grows with the share; Aequitas over WFQ keeps QoS_h's and QoS_m's
    tails stable across the shares asked (the largest share's within ``stable`` × the smallest
    share's) and each within ``predicted`` × the 99.9p its AIMD equilibrium predicts for that
    run (``*_p999_pred_us``: the run's tail shape with the SLO at the quantile of the
    predicted miss fraction, :mod:`~tailbound.experiments.aequitas_equilibrium`)."""
    bad = []
    spq = sorted((r for r in rows if r["mode"] == "spq"), key=lambda r: float(r["qos_h_share"]))
    if spq:
        lo, hi = float(spq[0]["qos_h_p999_us"]), float(spq[-1]["qos_h_p999_us"])
        if not hi > float(spq[-1]["slo_h_us"]):
            bad.append(f"SPQ alone meets the QoS_h SLO at {spq[-1]['qos_h_share']}: {hi:.1f} µs")
        if not hi > lo:
            bad.append(f"SPQ alone: QoS_h tail does not grow with the share ({lo:.1f} → {hi:.1f})")
    aeq = sorted(
        (r for r in rows if r["mode"] == base.AEQUITAS), key=lambda r: float(r["qos_h_share"])
    )
    for cls in ("qos_h", "qos_m"):
        if len(aeq) > 1:
            lo, hi = float(aeq[0][f"{cls}_p999_us"]), float(aeq[-1][f"{cls}_p999_us"])
            if not hi <= stable * lo:
                bad.append(
                    f"Aequitas: {cls} tail at {aeq[-1]['qos_h_share']} {hi:.1f} µs > {stable} × "
                    f"its {lo:.1f} µs at {aeq[0]['qos_h_share']}"
                )
        for r in aeq:
            got, pred = float(r[f"{cls}_p999_us"]), float(r[f"{cls}_p999_pred_us"])
            if not got <= predicted * pred:
                bad.append(
                    f"Aequitas at QoS_h {r['qos_h_share']}: {cls} {got:.1f} µs > {predicted} × "
                    f"{pred:.1f} µs predicted by the equilibrium"
                )
    return bad


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--shares", type=floats, default=list(SHARES), help="SPQ's QoS_h shares")
    p.add_argument("--duration-s", type=float, default=0.05, help="SPQ run (simulated s)")
    p.add_argument("--aequitas-shares", type=floats, default=list(AEQUITAS_SHARES))
    p.add_argument(
        "--aequitas-spq-shares",
        type=floats,
        default=list(AEQUITAS_SPQ_SHARES),
        help="shares of the admission-over-SPQ runs",
    )
    p.add_argument("--aequitas-duration-s", type=float, default=0.5, help="simulated s")
    p.add_argument(
        "--stable",
        type=float,
        default=STABLE,
        help="allowed Aequitas tail at the largest share / at the smallest",
    )
    p.add_argument(
        "--predicted",
        type=float,
        default=PREDICTED,
        help="allowed Aequitas tail / the 99.9p its equilibrium predicts",
    )
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    for x in [*args.shares, *args.aequitas_shares, *args.aequitas_spq_shares]:
        if not 0 < x <= 1 - QOS_M:
            p.error(f"a QoS_h share must be in (0, {1 - QOS_M}], got {x}")
    rows = run(
        args.shares,
        args.duration_s,
        args.aequitas_shares,
        args.aequitas_duration_s,
        args.seed,
        args.aequitas_spq_shares,
    )
    print(write_table(args.out, "aequitas_fig19", rows, "Aequitas Fig. 19: SPQ vs Aequitas"))
    plot(rows, args.out / "aequitas_fig19.png")
    return report_failures(check(rows, args.stable, args.predicted))


if __name__ == "__main__":
    raise SystemExit(main())
