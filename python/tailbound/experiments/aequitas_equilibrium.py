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


def admitted(run: NetworkRun, cls: int, keep: float = 0.8) -> NDArray[np.bool_]:
    """The RPCs that asked for ``cls`` and ran at it, in the middle ``keep`` by issue time."""
    return (run.rpcs.cls == cls) & (run.class_run == cls) & _middle(run, keep)


def rpcs_per_window(run: NetworkRun, cls: int, window: float, keep: float = 0.8) -> float:
    """``n_w``: admitted RPCs of ``cls`` per channel per ``window`` s, the mean over the
    channels that asked for ``cls`` (a channel is a (source, destination) pair)."""
    sel = admitted(run, cls, keep)
    mid = _middle(run, keep)
    t = run.rpcs.time_s[mid]
    span = float(t.max() - t.min()) if len(t) > 1 else 0.0
    asked = (run.rpcs.cls == cls) & mid
    pairs = run.rpcs.src[asked].astype(np.int64) * run.rpcs.n_hosts + run.rpcs.dst[asked]
    channels = len(np.unique(pairs))
    if span <= 0 or channels == 0:
        return math.nan
    return float(sel.sum()) / span / channels * window


def measured(
    run: NetworkRun, cls: int, target: float, per_mtu: bool, keep: float = 0.8
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The admitted RPCs' measure (s, or s per MTU) compared with the target, and the misses
    (the artifact's ``>``; the paper's ``≥`` differs only on exact ties)."""
    sel = admitted(run, cls, keep)
    v = np.where(np.isnan(run.rnl_s[sel]), np.inf, run.rnl_s[sel])
    if per_mtu:
        v = v / run.size_mtus[sel]
    return v, v > target


def miss_fraction(
    run: NetworkRun, cls: int, target: float, per_mtu: bool, keep: float = 0.8
) -> float:
    """``f``: of ``cls``'s admitted RPCs in the middle ``keep``, the fraction over ``target``."""
    _, miss = measured(run, cls, target, per_mtu, keep)
    return float(miss.mean()) if len(miss) else math.nan


def quantile(run: NetworkRun, cls: int, q: float, per_mtu: bool, keep: float = 0.8) -> float:
    """The inverted-CDF ``q`` quantile of ``cls``'s admitted RPCs' RNL (s, or s per MTU)."""
    v, _ = measured(run, cls, math.inf, per_mtu, keep)
    if not len(v):
        return math.nan
    return float(np.quantile(v, min(max(q, 0.0), 1.0), method="inverted_cdf"))


def equilibrium(
    run: NetworkRun, adm: NetworkAdmission, cls: int, size_mtus: float
) -> dict[str, float]:
    """For class ``cls`` of an Aequitas run: ``n_w``, the predicted miss fraction
    ``f_pred = m / n_w``, the measured ``f``, and ``q_at_f_pred_s``, the admitted RPCs' RNL
    quantile at ``1 − f_pred`` (s, or s per MTU): the equilibrium puts the target there, so the
    99.9p sits above the target when ``f_pred > 0.001`` (and ``q_at_f_pred_s`` ≈ target checks
    the prediction on the run itself)."""
    w = window_s(adm, cls)
    n_w = rpcs_per_window(run, cls, w)
    m = misses_per_window(adm.alpha, adm.beta, size_mtus, adm.rules)
    f_pred = m / n_w if n_w > 0 else math.nan
    target = adm.latency_target_s[cls]
    return {
        "window_s": w,
        "rpcs_per_window": n_w,
        "misses_per_window": m,
        "f_pred": f_pred,
        "f": miss_fraction(run, cls, target, adm.per_mtu),
        "q_at_f_pred_s": quantile(run, cls, 1.0 - f_pred, adm.per_mtu),
        "q999_s": quantile(run, cls, 0.999, adm.per_mtu),
    }
