"""Delay bounds built from the operators: static priority at one queue, sums over stages, a
two-hop path, and the delay in a workload's own token-bucket shaper.

Rates are utilisations of a queue and buckets seconds of work, so every bound is in seconds
(thesis §5.2.1). Within one priority level requests are served first-come first-served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from tailbound.dnc.curves import Curve, RateLatency, TokenBucket, constant_rate, token_bucket_min
from tailbound.dnc.operators import (
    aggregate,
    curve_min,
    deconvolution,
    horizontal_deviation,
    leftover,
)


def static_priority_delay(buckets_at_or_above: float, rates_above: float) -> float:
    """Thesis Eq. 5.1: ``Σ_{j: p_j >= p} b_j / (1 − Σ_{j: p_j > p} r_j)``, seconds.

    The worst-case delay at a unit-rate queue of a workload at priority ``p`` when every workload
    ``j`` is shaped by ``(r_j, b_j)``: the level-``p`` traffic (bucket sum ``B``) is served by
    the leftover ``β(t) = (1 − R_H)(t − B_H/(1 − R_H))+`` of the higher levels (``R_H``,
    ``B_H``), so its delay is ``(B_H + B_p)/(1 − R_H)``. Infinite when ``R_H >= 1``.

    Examples
    --------
    >>> static_priority_delay(0.03, 0.4)  # 30 ms of buckets, 40% of the queue above
    0.05
    """
    if rates_above >= 1.0:
        return float("inf")
    return buckets_at_or_above / (1.0 - rates_above)


def static_priority_delay_general(
    level: Sequence[Curve], higher: Sequence[Curve], capacity: float = 1.0
) -> float:
    """Eq. 5.1 by the general operators: ``h(Σ level, [C t − Σ higher]+↑)``.

    ``level`` are the arrival curves of the workload's priority level (itself included),
    ``higher`` those of strictly higher levels, ``capacity`` the queue's rate. Equals
    :func:`static_priority_delay` for token buckets at a unit-rate queue.

    Examples
    --------
    >>> round(static_priority_delay_general([TokenBucket(0.1, 0.01), TokenBucket(0.1, 0.01)],
    ...                                     [TokenBucket(0.4, 0.01)]), 12)
    0.05
    """
    service = leftover(constant_rate(capacity), aggregate(list(higher)))
    return horizontal_deviation(aggregate(list(level)), service)


@dataclass(frozen=True)
class StageLoad:
    """What one workload sees at one queue: the bucket sum of its level and above (seconds of
    work) and the rate sum of strictly higher levels (utilisation)."""

    buckets_at_or_above: float
    rates_above: float

    def delay(self) -> float:
        """Eq. 5.1 for this queue."""
        return static_priority_delay(self.buckets_at_or_above, self.rates_above)


def multi_stage_delay(stages: Sequence[StageLoad]) -> float:
    """Thesis Eq. 5.5: the sum of Eq. 5.1 over the queues a request passes (``net_in``,
    ``storage``, ``net_out``). Each stage re-shapes the workload with its own ``(r, b)``, so each
    queue sees token-bucket-shaped traffic (thesis §5.2.2).

    Examples
    --------
    >>> multi_stage_delay([StageLoad(0.01, 0.5), StageLoad(0.02, 0.0), StageLoad(0.01, 0.5)])
    0.06
    """
    return float(sum(s.delay() for s in stages))


def relaxed_multi_stage_delay(stages: Sequence[StageLoad], rate_bound: float) -> float:
    """Thesis Eq. 5.6: ``Σ_stages B_s / (1 − R_p)`` with ``R_p`` at least every stage's rate sum
    above ``p``; never smaller than :func:`multi_stage_delay` (the relaxation is conservative).

    Examples
    --------
    >>> round(relaxed_multi_stage_delay([StageLoad(0.01, 0.5), StageLoad(0.02, 0.0)], 0.5), 12)
    0.06
    """
    if any(s.rates_above > rate_bound + 1e-12 for s in stages):
        raise ValueError("R_p must bound every stage's sum of higher-priority rates")
    if rate_bound >= 1.0:
        return float("inf")
    return float(sum(s.buckets_at_or_above for s in stages) / (1.0 - rate_bound))


def shaper_delay(arrival: Curve, rate: float, bucket: float) -> float:
    """Delay of a workload with arrival curve ``arrival`` in its own token-bucket shaper
    ``(r, b)``: ``h(α, σ)`` with the shaping curve ``σ(t) = r t + b`` (a greedy shaper offers
    its shaping curve as a service curve, Le Boudec & Thiran Thm 1.5.2). Zero when ``(r, b)`` is
    on or above the workload's r-b curve; the effective-bandwidth baseline (``b = 0``) pays it.

    Examples
    --------
    >>> round(shaper_delay(TokenBucket(0.1, 0.02), 0.2, 0.0), 12)  # 20 ms burst at rate 0.2
    0.1
    >>> shaper_delay(TokenBucket(0.1, 0.02), 0.1, 0.02)
    0.0
    """
    return horizontal_deviation(arrival, TokenBucket(rate, bucket), fast=False)


def rb_arrival_curve(rates: ArrayLike, buckets: ArrayLike) -> Curve:
    """A workload's arrival curve from its r-b curve points: ``α(t) = min_i (r_i t + b_i)``."""
    return token_bucket_min(np.asarray(rates), np.asarray(buckets))


@dataclass(frozen=True)
class Hop:
    """One queue of a path: its rate and the traffic that joins the path there.

    ``higher`` and ``same`` are arrival curves of the cross traffic that enters at this hop (not
    the traffic that came with the tagged flow from the previous hop) at strictly higher and at
    equal priority.
    """

    capacity: float = 1.0
    higher: Sequence[Curve] = field(default_factory=tuple)
    same: Sequence[Curve] = field(default_factory=tuple)


def two_hop_delay(
    flow: Curve,
    first: Hop,
    second: Hop,
    *,
    through_higher: Sequence[Curve] = (),
    through_same: Sequence[Curve] = (),
) -> float:
    """Delay bound of a flow through two static-priority queues in series, e.g. a client's
    link then the server's link, with competing flows at each (total-flow analysis).

    At each hop the flow's level (FIFO inside a level) is served by the leftover
    ``[C t − α_higher]+↑``; the delay is the horizontal deviation of the level's aggregate from
    it. Traffic that travels both hops with the flow (``through_*``) reaches the second hop as
    the output bound ``α ⊘ β`` of the first (burst grows by what the first hop held back), and no
    faster than the first link's rate ``C₁ t`` (line shaping). The bound is the sum of the two
    per-hop bounds.

    Examples
    --------
    >>> one = Hop(1.0, higher=[TokenBucket(0.5, 0.01)])
    >>> round(two_hop_delay(TokenBucket(0.1, 0.01), one, Hop(1.0)), 6)
    0.04
    """
    line = constant_rate(first.capacity)
    # hop 1
    higher1 = aggregate([*through_higher, *first.higher])
    level1 = aggregate([flow, *through_same, *first.same])
    service1 = leftover(line, higher1)
    delay1 = horizontal_deviation(level1, service1)
    # what travels on: output bounds, no faster than the first link
    through_level = aggregate([flow, *through_same])
    level_out = _shaped_output(through_level, leftover(service1, aggregate(list(first.same))), line)
    higher_through = aggregate(list(through_higher))
    higher_out = _shaped_output(higher_through, leftover(line, aggregate(list(first.higher))), line)
    # hop 2
    higher2 = aggregate([higher_out, *second.higher])
    level2 = aggregate([level_out, *second.same])
    service2 = leftover(constant_rate(second.capacity), higher2)
    delay2 = horizontal_deviation(level2, service2)
    return delay1 + delay2


def _shaped_output(arrival: Curve, service: Curve, line: RateLatency) -> Curve:
    """Output bound ``α ⊘ β`` capped by the link it leaves on (``C t``)."""
    out = deconvolution(arrival, service) if service.is_convex() else _not_convex(service)
    return curve_min(out, line)


def _not_convex(service: Curve) -> Curve:
    raise ValueError(f"two_hop_delay needs convex leftover service curves, got {service!r}")


@dataclass(frozen=True)
class StageShaping:
    """A workload at one stage: what its queue holds (:class:`StageLoad`), its arrival curve
    (from its r-b curve) and the token bucket ``(rate, bucket)`` it is shaped by there."""

    load: StageLoad
    arrival: Curve
    rate: float
    bucket: float


def tenant_latency(stages: Sequence[StageShaping]) -> float:
    """A tenant's predicted worst-case latency (s): the DNC bound through its queues (Eq. 5.5)
    plus the delay in its own token-bucket shaper at each stage (thesis §5.2.1; the
    WorkloadCompactor system's ``calcFlowLatency``).

    Examples
    --------
    >>> alpha = TokenBucket(0.1, 0.02)
    >>> on_curve = StageShaping(StageLoad(0.03, 0.4), alpha, 0.1, 0.02)    # 50 ms queueing
    >>> smoothed = StageShaping(StageLoad(0.0, 0.0), alpha, 0.2, 0.0)       # 100 ms shaping
    >>> round(tenant_latency([on_curve, smoothed]), 12)
    0.15
    """
    return float(sum(s.load.delay() + shaper_delay(s.arrival, s.rate, s.bucket) for s in stages))
