"""Where Aequitas' AIMD settles: the miss fraction its admit probability is stationary at.

The controller (Zhang et al., SIGCOMM 2022, Algorithm 1; ``docs/aequitas.md``) raises a
channel's ``p_admit`` by ``α`` at most once per increment window ``W`` and lowers it by
``β · size`` (``size`` in MTUs) per RPC that misses its target. ``p_admit`` is stationary when
the decreases of a window balance its increase, i.e. at ``m`` misses per window per channel:

- paper rules (a miss leaves the window alone; one increase per window):
  ``m = α / (β · size)``;
- artifact rules (a miss restarts the window, so an increase needs a whole window without a
  miss): with misses at rate ``λ``, the expected number of whole windows between two misses is
  ``e^{−λW} / (1 − e^{−λW})``, equal to ``β · size / α`` at balance, so
  ``m = λW = ln(1 + α / (β · size))``.

For ``α = β = 0.01`` and 7-MTU (32 KiB) RPCs: 1/7 = 0.143 and ln(8/7) = 0.134 misses per window.
A channel that completes ``n_w`` admitted RPCs of the class per window then misses a fraction
``f = m / n_w`` of them. ``W = target / (1 − pctl)`` (1000 × the target at the 99.9th
percentile) gives ``f = 1 − pctl`` only when ``n_w = m / (1 − pctl)`` (about 134 at 99.9); a
channel completing fewer settles with more than 0.1% of its RPCs over the target, and the
99.9th percentile above the target by as much as the tail's shape puts between the ``1 − f``
and the 0.999 quantiles. Over many channels the fraction of all their admitted RPCs that miss
is ``m / mean(n_w)`` (each channel misses ``m`` a window).

Measured (``docs/results-aequitas.md``, "Why the tail settles above the SLO"): the 33-host run
of Fig. 12 has ``n_w`` ≈ 40 QoS_h RPCs per channel per 15 ms window, ``f`` ≈ 0.33%, 99.9p
1.2 × SLO; Fig. 11's 3-host run ``n_w`` ≈ 140 per 2 ms window, ``f`` ≈ 0.1%, 99.9p at the SLO.

Everything here reads a :class:`~tailbound.sim.network_rpc.NetworkRun`: times in seconds, RPCs
counted over the middle ``keep`` of the run by issue time (the tails' 80%).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from tailbound.cli.exitcodes import report_failures
from tailbound.errors import ConfigError
from tailbound.sim.network_rpc import NetworkAdmission, NetworkRun

#: ``NetworkAdmission.rules`` values (the core's ``Rules`` names).
PAPER, ARTIFACT = "paper", "artifact"


def misses_per_window(alpha: float, beta: float, size_mtus: float, rules: str) -> float:
    """``m``: the misses per increment window at which ``p_admit`` is stationary (module doc)."""
    if not (alpha > 0 and beta > 0 and size_mtus > 0):
        raise ConfigError(None, "alpha, beta and size_mtus must be > 0", field="alpha")
    ratio = alpha / (beta * size_mtus)
    if rules == PAPER:
        return ratio
    if rules == ARTIFACT:
        return math.log1p(ratio)
    raise ConfigError(None, f"unknown rules {rules!r}; known: paper, artifact", field="rules")


def window_s(adm: NetworkAdmission, cls: int) -> float:
    """Class ``cls``'s increment window (s): explicit, or ``target / (1 − pctl)``."""
    if adm.increment_window_s is not None:
        return adm.increment_window_s[cls]
    pctl = adm.target_percentile[cls] if adm.target_percentile is not None else 0.999
    return adm.latency_target_s[cls] / (1.0 - pctl)


def _middle(run: NetworkRun, keep: float) -> NDArray[np.bool_]:
    t = run.rpcs.time_s
    n = len(t)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(t, kind="stable")] = np.arange(n)
    lo, hi = int(n * (1 - keep) / 2), int(n * (1 + keep) / 2)
    return (rank >= lo) & (rank < hi)


def admitted(
    run: NetworkRun, cls: int, keep: float = 0.8, size_bytes: int | None = None
) -> NDArray[np.bool_]:
    """The RPCs that asked for ``cls`` and ran at it, in the middle ``keep`` by issue time
    (only those of ``size_bytes`` when given)."""
    sel = (run.rpcs.cls == cls) & (run.class_run == cls) & _middle(run, keep)
    return sel if size_bytes is None else sel & (run.rpcs.size_bytes == size_bytes)


def rpcs_per_window(
    run: NetworkRun, cls: int, window: float, keep: float = 0.8, size_bytes: int | None = None
) -> float:
    """``n_w``: admitted RPCs of ``cls`` per channel per ``window`` s, the mean over the
    channels that asked for ``cls`` (a channel is a (source, destination) pair)."""
    sel = admitted(run, cls, keep, size_bytes)
    mid = _middle(run, keep)
    t = run.rpcs.time_s[mid]
    span = float(t.max() - t.min()) if len(t) > 1 else 0.0
    asked = (run.rpcs.cls == cls) & mid
    if size_bytes is not None:
        asked &= run.rpcs.size_bytes == size_bytes
    pairs = run.rpcs.src[asked].astype(np.int64) * run.rpcs.n_hosts + run.rpcs.dst[asked]
    channels = len(np.unique(pairs))
    if span <= 0 or channels == 0:
        return math.nan
    return float(sel.sum()) / span / channels * window


def measured(
    run: NetworkRun,
    cls: int,
    target: float,
    per_mtu: bool,
    keep: float = 0.8,
    size_bytes: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The admitted RPCs' measure (s, or s per MTU) compared with the target, and the misses
    (the artifact's ``>``; the paper's ``≥`` differs only on exact ties)."""
    sel = admitted(run, cls, keep, size_bytes)
    v = np.where(np.isnan(run.rnl_s[sel]), np.inf, run.rnl_s[sel])
    if per_mtu:
        v = v / run.size_mtus[sel]
    return v, v > target


def miss_fraction(
    run: NetworkRun,
    cls: int,
    target: float,
    per_mtu: bool,
    keep: float = 0.8,
    size_bytes: int | None = None,
) -> float:
    """``f``: of ``cls``'s admitted RPCs in the middle ``keep``, the fraction over ``target``."""
    _, miss = measured(run, cls, target, per_mtu, keep, size_bytes)
    return float(miss.mean()) if len(miss) else math.nan


def quantile(
    run: NetworkRun,
    cls: int,
    q: float,
    per_mtu: bool,
    keep: float = 0.8,
    size_bytes: int | None = None,
) -> float:
    """The inverted-CDF ``q`` quantile of ``cls``'s admitted RPCs' RNL (s, or s per MTU)."""
    v, _ = measured(run, cls, math.inf, per_mtu, keep, size_bytes)
    if not len(v):
        return math.nan
    return float(np.quantile(v, min(max(q, 0.0), 1.0), method="inverted_cdf"))


def equilibrium(
    run: NetworkRun,
    adm: NetworkAdmission,
    cls: int,
    size_mtus: float,
    size_bytes: int | None = None,
) -> dict[str, float]:
    """For class ``cls`` of an Aequitas run: ``n_w``, the predicted miss fraction
    ``f_pred = m / n_w``, the measured ``f``, and ``q_at_f_pred_s``, the admitted RPCs' RNL
    quantile at ``1 − f_pred`` (s, or s per MTU): the equilibrium puts the target there, so the
    99.9p sits above the target when ``f_pred > 0.001`` (and ``q_at_f_pred_s`` ≈ target checks
    the prediction on the run itself); ``q999_s``, the same RPCs' 99.9p, so that
    ``target · q999_s / q_at_f_pred_s`` is the 99.9p the equilibrium predicts with this run's
    tail shape. ``size_bytes``: only the channels and RPCs of that size (each of Fig. 20's
    channels sends one size)."""
    w = window_s(adm, cls)
    n_w = rpcs_per_window(run, cls, w, size_bytes=size_bytes)
    m = misses_per_window(adm.alpha, adm.beta, size_mtus, adm.rules)
    f_pred = m / n_w if n_w > 0 else math.nan
    target = adm.latency_target_s[cls]
    return {
        "window_s": w,
        "rpcs_per_window": n_w,
        "misses_per_window": m,
        "f_pred": f_pred,
        "f": miss_fraction(run, cls, target, adm.per_mtu, size_bytes=size_bytes),
        "q_at_f_pred_s": quantile(run, cls, 1.0 - f_pred, adm.per_mtu, size_bytes=size_bytes),
        "q999_s": quantile(run, cls, 0.999, adm.per_mtu, size_bytes=size_bytes),
    }


# --- The command: the relation measured on runs that vary what should move it ------------------

#: (variant, α, β, increment-window scale) for the 3-host setup of Fig. 11 (SLO 15 µs, the
#: authors' 2 ms window): shorter windows leave fewer RPCs a window, a larger α more misses.
VARIANTS_3HOST: tuple[tuple[str, float, float, float], ...] = (
    ("authors' 2 ms window", 0.01, 0.01, 1.0),
    ("window / 2", 0.01, 0.01, 0.5),
    ("window / 4", 0.01, 0.01, 0.25),
    ("window / 8", 0.01, 0.01, 0.125),
    ("alpha × 3", 0.03, 0.01, 1.0),
)
#: The same for the 33-host setup of Fig. 12 (mix 0.6/0.3/0.1, 15 / 25 µs, windows 15 / 25 ms).
VARIANTS_33HOST: tuple[tuple[str, float, float, float], ...] = (
    ("paper's parameters", 0.01, 0.01, 1.0),
    ("beta × 10", 0.01, 0.1, 1.0),
    ("beta × 0.3", 0.01, 0.003, 1.0),
    ("alpha × 3", 0.03, 0.01, 1.0),
)
#: The command's check: the measured miss fraction within this factor of the prediction.
RATIO = 2.0
#: A class is stationary when the mean ``p_admit`` of its requests moves, from the run's third
#: quarter to its fourth, by at most this × α per increment window (α a window is the fastest
#: climb, a channel that never misses); the relation is checked on stationary classes only.
STATIONARY = 0.5


def measure(setup_name: str, n: float, seed: int) -> list[dict[str, float | str]]:
    """Run the variants of ``setup_name`` (``3host``: ``n`` RPCs; ``33host``: ``n`` simulated
    seconds) and measure each admitted class: one row per (variant, class)."""
    import time
    from dataclasses import replace

    from tailbound.experiments import aequitas_33host as big
    from tailbound.experiments import aequitas_fig11 as small
    from tailbound.sim.network_rpc import simulate_rpcs
    from tailbound.traces.sizes import FixedSize

    if setup_name == "3host":
        rpcs = small.incast_poisson(int(n), seed)
        base = small.config(15e-6, seed)
        variants = VARIANTS_3HOST
    else:
        rpcs = big.arrivals(FixedSize(32768), 32768, (0.6, 0.3, 0.1), n, seed)
        base = big.config(True, seed)
        variants = VARIANTS_33HOST
    assert base.admission is not None
    rows: list[dict[str, float | str]] = []
    for name, alpha, beta, scale in variants:
        adm0 = base.admission
        windows = tuple(scale * window_s(adm0, k) for k in range(len(adm0.latency_target_s)))
        adm = replace(adm0, alpha=alpha, beta=beta, increment_window_s=windows)
        start = time.perf_counter()
        run = simulate_rpcs(rpcs, replace(base, admission=adm))
        wall = time.perf_counter() - start
        for k, target in enumerate(adm.latency_target_s):
            e = equilibrium(run, adm, k, 7)
            # The second half alone: the controller's descent from p_admit = 1 left out.
            late = _late_miss_fraction(run, k, target)
            rows.append(
                {
                    "setup": setup_name,
                    "variant": name,
                    "cls": k,
                    "alpha": alpha,
                    "beta": beta,
                    "window_ms": e["window_s"] * 1e3,
                    "slo_us": target * 1e6,
                    "rpcs_per_window": e["rpcs_per_window"],
                    "misses_per_window": e["misses_per_window"],
                    "miss_pred": e["f_pred"],
                    "miss": e["f"],
                    "miss_second_half": late,
                    "q_at_miss_pred_us": e["q_at_f_pred_s"] * 1e6,
                    "p999_us": run.rnl_tail(k) * 1e6,
                    "admitted_share": run.run_share(k),
                    "p_admit_drift_per_window": _p_admit_drift(run, k, e["window_s"]),
                    "wall_s": wall,
                }
            )
            print({k: v if isinstance(v, str) else round(v, 5) for k, v in rows[-1].items()})
    return rows


def _p_admit_drift(run: NetworkRun, cls: int, window: float) -> float:
    """Mean ``p_admit`` of ``cls``'s requests in the run's last quarter minus in its third, per
    increment ``window`` (s) of a quarter."""
    t = run.rpcs.time_s
    q = [t[0] + f * (t[-1] - t[0]) for f in (0.5, 0.75, 1.0)]
    asked = run.rpcs.cls == cls
    third = asked & (t >= q[0]) & (t < q[1])
    fourth = asked & (t >= q[1]) & (t <= q[2])
    if not (third.any() and fourth.any()):
        return math.nan
    windows = (q[1] - q[0]) / window
    return float(run.p_admit[fourth].mean() - run.p_admit[third].mean()) / windows


def _late_miss_fraction(run: NetworkRun, cls: int, target: float) -> float:
    t = run.rpcs.time_s
    sel = (run.rpcs.cls == cls) & (run.class_run == cls) & (t >= t[0] + 0.5 * (t[-1] - t[0]))
    v = np.where(np.isnan(run.rnl_s[sel]), np.inf, run.rnl_s[sel])
    return float((v > target).mean()) if len(v) else math.nan


def check(rows: list[dict[str, float | str]]) -> list[str]:
    """Failures (sentences): a stationary row (``|p_admit_drift_per_window|`` ≤
    :data:`STATIONARY` × ``alpha``; the others are still moving, e.g. climbing back after the
    start's decreases, and the relation does not hold yet) whose second-half miss fraction is
    not within :data:`RATIO` of the predicted one; a class whose 99.9p does not rise with the
    predicted fraction."""
    bad = []
    for r in rows:
        drift = abs(float(r.get("p_admit_drift_per_window", 0.0)))
        if not drift <= STATIONARY * float(r.get("alpha", 0.01)):
            continue
        ratio = float(r["miss_second_half"]) / float(r["miss_pred"])
        if not 1 / RATIO <= ratio <= RATIO:
            got, pred = float(r["miss_second_half"]), float(r["miss_pred"])
            bad.append(
                f"{r['variant']}, class {r['cls']}: miss fraction {got:.4f} vs predicted {pred:.4f}"
            )
    for cls in {int(r["cls"]) for r in rows}:
        sel = sorted((r for r in rows if r["cls"] == cls), key=lambda r: float(r["miss_pred"]))
        lo, hi = sel[0], sel[-1]
        if not float(hi["p999_us"]) > float(lo["p999_us"]):
            bad.append(f"class {cls}: 99.9p does not rise with the predicted miss fraction")
    return bad


def main(argv: list[str] | None = None) -> int:
    """``tailbound experiment aequitas_equilibrium --out DIR [--setup 3host|33host]``: writes
    ``aequitas_equilibrium.csv`` (one row per variant and class), ``.md`` and ``.png``."""
    import argparse
    from pathlib import Path

    from tailbound.cli.options import add_quiet
    from tailbound.experiments.wc_common import save_plot, write_table

    p = argparse.ArgumentParser(description="Aequitas: where the AIMD settles, measured")
    p.add_argument("--out", type=Path, default=Path("out/experiments"), help="output folder")
    p.add_argument("--setup", choices=("3host", "33host"), default="3host")
    p.add_argument("--rpcs", type=int, default=300_000, help="3host: RPCs a run")
    p.add_argument("--duration-s", type=float, default=0.3, help="33host: simulated s")
    p.add_argument("--seed", type=int, default=1)
    add_quiet(p)
    args = p.parse_args(argv)
    n = args.rpcs if args.setup == "3host" else args.duration_s
    rows = measure(args.setup, n, args.seed)
    print(write_table(args.out, "aequitas_equilibrium", rows, "Aequitas: the AIMD equilibrium"))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    pred = [float(r["miss_pred"]) for r in rows]
    ax1.loglog(pred, [float(r["miss_second_half"]) for r in rows], "o")
    ax1.plot([min(pred), max(pred)], [min(pred), max(pred)], "k--", label="measured = predicted")
    ax1.set_xlabel("predicted miss fraction m / n_w")
    ax1.set_ylabel("measured (second half)")
    ax1.legend()
    ax2.semilogx(pred, [float(r["p999_us"]) / float(r["slo_us"]) for r in rows], "s")
    ax2.axhline(1.0, color="k", ls=":")
    ax2.set_xlabel("predicted miss fraction m / n_w")
    ax2.set_ylabel("99.9p / SLO")
    fig.suptitle(f"Aequitas' AIMD equilibrium, {args.setup}")
    fig.tight_layout()
    save_plot(fig, args.out / "aequitas_equilibrium.png")
    return report_failures(check(rows))


if __name__ == "__main__":
    raise SystemExit(main())
