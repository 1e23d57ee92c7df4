"""Worst-case delay of two WFQ classes under a bursty load: Aequitas' closed forms.

Zhang et al., "Aequitas: Admission Control for Performance-Critical RPCs in Datacenters",
SIGCOMM 2022, §4 and Appendix B (``../shared/seeds/002_421c78be1ed1fa6a.txt``; the equations as
rebuilt in ``../shared/seeds/notes-aequitas.md``). One link of rate ``r`` served by WFQ with
weights ``φ : 1`` (QoS_h : QoS_l). Over a period normalised to 1, traffic arrives at ``ρ · r``
(``ρ ≥ 1``, the burst) for ``μ/ρ`` of the period and not at all for the rest, so the mean load
is ``μ ≤ 1``; a share ``x ∈ (0, 1]`` of it is QoS_h. A delay is the largest horizontal distance
between a class's arrival and service curves (network calculus), **as a fraction of the period**:
the "normalised delay" of the paper (multiply by the period in seconds to get seconds).

- :func:`delay_h` — Eq. (1), QoS_h's worst-case normalised delay;
- :func:`delay_l` — Eq. (8), QoS_l's;
- :func:`inversion_share` and :func:`no_inversion` — Lemma 1 (Eq. 2): no priority inversion iff
  ``a_1/φ_1 ≤ … ≤ a_N/φ_N``; for two classes ``x ≤ φ/(φ + 1)``;
- :func:`admissible` — Eq. (3): the admissible region, ``delay_h ≤ delay_l`` (two classes);
- :func:`guaranteed_admitted_share` — §4.2/§6.4: class ``i`` is served without delay while its
  mean rate is at most ``r · φ_i/Σφ · μ/ρ`` (its burst rate then within its guaranteed rate).

All functions broadcast their array arguments (numpy), and refuse bad input with
:class:`~tailbound.errors.ConfigError` naming the argument: a weight ≤ 0, a share outside
(0, 1], a load outside (0, 1], a burst ``ρ < 1`` (and, for the two-class delays, a weight
ratio ``φ < 1``: the paper orders the classes by weight).

>>> import numpy as np
>>> delay_h(np.array([0.2, 0.6, 0.9]), phi=4.0, rho=2.0, mu=0.8).round(6).tolist()
[0.0, 0.2, 0.4]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.errors import ConfigError

#: Relative slack of :func:`admissible`: at the inversion point both delays are equal in exact
#: arithmetic, and rounding must not put it outside the region.
_TIE_RTOL = 1e-9


def _array(value: ArrayLike, name: str) -> NDArray[np.float64]:
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ConfigError(None, f"must be finite, got {value!r}", field=name)
    return a


def _check(
    x: ArrayLike, phi: ArrayLike, rho: ArrayLike, mu: ArrayLike
) -> tuple[NDArray[np.float64], ...]:
    xs = _array(x, "x")
    if np.any((xs <= 0.0) | (xs > 1.0)):
        raise ConfigError(None, f"a QoS_h share must be in (0, 1], got {x!r}", field="x")
    ph = _array(phi, "phi")
    if np.any(ph < 1.0):
        # §4.1: "lower i indicates a higher WFQ weight"; Eq. (8)'s case split assumes φ ≥ 1
        raise ConfigError(
            None,
            f"the weight ratio QoS_h : QoS_l must be ≥ 1 (QoS_h the heavier), got {phi!r}",
            field="phi",
        )
    rh = _array(rho, "rho")
    if np.any(rh < 1.0):
        raise ConfigError(
            None, f"the burst load must be ≥ 1 (times the link rate), got {rho!r}", field="rho"
        )
    m = _array(mu, "mu")
    if np.any((m <= 0.0) | (m > 1.0)):
        raise ConfigError(None, f"the mean load must be in (0, 1], got {mu!r}", field="mu")
    return tuple(np.broadcast_arrays(xs, ph, rh, m))


def delay_h(x: ArrayLike, phi: ArrayLike, rho: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """QoS_h's worst-case normalised delay, Eq. (1) (Appendix B.2, cases 1–5).

    With ``q = φ/(φ + 1)`` (QoS_h's guaranteed fraction of the link) and ``c = 1 − 1/((φ + 1)ρ)``
    (above it QoS_l arrives within its guaranteed rate)::

        0                          x ≤ q/ρ                    (QoS_h within its rate)
        μ(x/q − 1/ρ)               q/ρ < x ≤ q                (both delayed, QoS_h first)
        μ(1 − x)(φ + 1 − φ/(ρx))   q < x ≤ min(c, 1/ρ)        (priority inversion)
        μ(1/ρ − 1/ρ²)/x            min(c, 1/ρ) < x ≤ 1/ρ      (QoS_l not delayed)
        μ(1 − 1/ρ)                 x > max(q, 1/ρ)            (QoS_h alone above the link)

    Parameters: ``x`` QoS_h's share of the traffic, in (0, 1]; ``phi`` the weight ratio
    QoS_h : QoS_l, ≥ 1 (§4.1: the higher class has the higher weight; the case split of Eq. (8)
    assumes it); ``rho`` the burst load (multiple of the link rate), ≥ 1; ``mu`` the mean
    load, in (0, 1]. Broadcast together. Returns the delay as a fraction of the period.

    >>> float(delay_h(0.5, 4.0, 2.0, 0.8))  # the notes' worked example: x − 0.4
    0.1
    """
    x, phi, rho, mu = _check(x, phi, rho, mu)
    q = phi / (phi + 1.0)
    c = 1.0 - 1.0 / ((phi + 1.0) * rho)
    low = np.minimum(c, 1.0 / rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        cases = [
            np.zeros_like(x),
            mu * (x / q - 1.0 / rho),
            mu * (1.0 - x) * (phi + 1.0 - phi / (rho * x)),
            mu * (1.0 / rho - 1.0 / rho**2) / x,
        ]
    delay = np.select(
        [x <= q / rho, x <= q, x <= low, x <= 1.0 / rho],
        cases,
        default=mu * (1.0 - 1.0 / rho),
    )
    return np.maximum(delay, 0.0)  # a branch's zero at its domain's end can round below 0


def delay_l(x: ArrayLike, phi: ArrayLike, rho: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """QoS_l's worst-case normalised delay, Eq. (8) (Appendix B.2), as a function of QoS_h's
    share ``x``; parameters and units as :func:`delay_h`. With ``q = φ/(φ + 1)``::

        μ(1 − 1/ρ)                       x ≤ min(1 − 1/ρ, q)
        μ(1/ρ − 1/ρ²)/(1 − x)            1 − 1/ρ < x ≤ max(q/ρ, 1 − 1/ρ)
        μ(x/φ)(φ + 1 − 1/(ρ(1 − x)))     max(q/ρ, 1 − 1/ρ) < x ≤ q
        μ((φ + 1)(1 − x) − 1/ρ)          q < x ≤ 1 − 1/((φ + 1)ρ)
        0                                x > 1 − 1/((φ + 1)ρ)

    >>> round(float(delay_l(0.6, 4.0, 2.0, 0.8)), 12)  # 0.2 x (5 − 1/(2(1 − x)))
    0.45
    """
    x, phi, rho, mu = _check(x, phi, rho, mu)
    q = phi / (phi + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cases = [
            mu * (1.0 - 1.0 / rho),
            mu * (1.0 / rho - 1.0 / rho**2) / (1.0 - x),
            mu * (x / phi) * (phi + 1.0 - 1.0 / (rho * (1.0 - x))),
            mu * ((phi + 1.0) * (1.0 - x) - 1.0 / rho),
        ]
    edge = 1.0 - 1.0 / rho
    mid = np.maximum(q / rho, edge)
    # the domains as written (each with both ends): the second and third are empty when
    # 1 − 1/ρ > q, and then the fourth follows the first directly
    delay = np.select(
        [
            x <= np.minimum(edge, q),
            (x > edge) & (x <= mid),
            (x > mid) & (x <= q),
            (x > q) & (x <= 1.0 - 1.0 / ((phi + 1.0) * rho)),
        ],
        cases,
        default=0.0,
    )
    return np.maximum(delay, 0.0)  # the fourth branch is 0 at its end, up to rounding


def inversion_share(phi: ArrayLike) -> NDArray[np.float64]:
    """The QoS_h share above which QoS_h is delayed longer than QoS_l: ``φ/(φ + 1)`` (Lemma 1,
    two classes: ``x/φ ≤ (1 − x)/1``). Independent of ``ρ`` and ``μ``.

    >>> float(inversion_share(4.0))
    0.8
    """
    ph = _array(phi, "phi")
    if np.any(ph <= 0.0):
        raise ConfigError(None, f"the weight ratio must be > 0, got {phi!r}", field="phi")
    return ph / (ph + 1.0)


def no_inversion(shares: ArrayLike, weights: Sequence[float]) -> NDArray[np.bool_]:
    """Lemma 1's condition (Eq. 2) for ``N`` classes: ``a_1/φ_1 ≤ a_2/φ_2 ≤ … ≤ a_N/φ_N``.

    ``shares`` holds the QoS-mix along its last axis (class 0 highest; each in [0, 1], any
    leading axes broadcast), ``weights`` the WFQ weights, > 0. The condition holds when every
    class is loaded beyond its guaranteed rate (the lemma's premise); returns one bool per mix.

    >>> no_inversion([[0.6, 0.3, 0.1], [0.8, 0.1, 0.1]], [8.0, 4.0, 1.0]).tolist()
    [True, False]
    """
    w = _array(weights, "weights")
    if w.ndim != 1 or len(w) < 2:
        raise ConfigError(None, f"need one weight per class, ≥ 2, got {weights!r}", field="weights")
    for i, wi in enumerate(w):
        if wi <= 0.0:
            raise ConfigError(None, f"must be > 0, got {wi}", field=f"weights[{i}]")
    s = _array(shares, "shares")
    if s.shape[-1:] != w.shape:
        raise ConfigError(
            None, f"last axis must have {len(w)} classes, got shape {s.shape}", field="shares"
        )
    if np.any((s < 0.0) | (s > 1.0)):
        raise ConfigError(None, "each share must be in [0, 1]", field="shares")
    ratio = s / w
    return np.all(np.diff(ratio, axis=-1) >= -_TIE_RTOL * np.abs(ratio[..., 1:]), axis=-1)


def admissible(x: ArrayLike, phi: ArrayLike, rho: ArrayLike, mu: ArrayLike) -> NDArray[np.bool_]:
    """The admissible region, Eq. (3), for two classes: ``delay_h(x) ≤ delay_l(x)`` (ties, as at
    the inversion point, within a relative 1e-9, admitted). Parameters as :func:`delay_h`.

    Under Eq. (1) and (8) this is ``x ≤ φ/(φ + 1)`` (Lemma 1), tested on a grid of ``φ, ρ, μ``.

    >>> admissible([0.5, 0.8, 0.85], 4.0, 2.0, 0.8).tolist()
    [True, True, False]
    """
    h = delay_h(x, phi, rho, mu)
    lo = delay_l(x, phi, rho, mu)
    return h <= lo + _TIE_RTOL * np.maximum(np.abs(h), np.abs(lo))


def guaranteed_admitted_share(
    weights: Sequence[float], rho: ArrayLike, mu: ArrayLike
) -> NDArray[np.float64]:
    """Each class's guaranteed admitted rate as a fraction of the link: ``φ_i/Σφ · μ/ρ``.

    A class whose mean rate is ``X_i`` arrives at ``X_i · ρ/μ`` during a burst; it is served
    without delay while that is within its guaranteed rate ``r · φ_i/Σφ`` (§4.1), so ``X_i ≤ r ·
    φ_i/Σφ · μ/ρ``: the admitted volume falls as ``1/ρ`` (the paper's Fig. 16). As a share of
    the offered traffic divide by ``μ`` (``φ/(φ + 1)/ρ``, Eq. (1)'s first case, for two classes).
    Returns an array with the classes on the last axis (``rho`` and ``mu`` broadcast before).

    >>> guaranteed_admitted_share([4.0, 1.0], 2.0, 0.8).round(6).tolist()
    [0.32, 0.08]
    """
    w = _array(weights, "weights")
    if w.ndim != 1 or len(w) < 2:
        raise ConfigError(None, f"need one weight per class, ≥ 2, got {weights!r}", field="weights")
    for i, wi in enumerate(w):
        if wi <= 0.0:
            raise ConfigError(None, f"must be > 0, got {wi}", field=f"weights[{i}]")
    _, _, rh, m = _check(1.0, 1.0, rho, mu)
    return (w / w.sum()) * (m / rh)[..., None]
