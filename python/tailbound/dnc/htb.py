"""The worst-case delay at links served as Linux HTB serves its borrowing classes: strict
priority between levels, packet round robin within a level, every flow shaped by one or several
token buckets (docs/enforcement.md, "The bound of the realised discipline").

Within a level HTB serves the classes round robin (DRR with a one-packet quantum), not first come
first served, so the other flows of the tagged flow's level interfere like the levels above: at
their rates, not only with their bursts. At one queue of rate ``C`` a flow ``i`` of level ``p_i``
is therefore served at least by the leftover (blind multiplexing, Le Boudec & Thiran Thm 6.2.1)

    β_i(s) = [C·(s − B/C)⁺ − Σ_{j ≠ i, p_j ≤ p_i} α_j(s)]⁺↑

where ``B`` is the blocking (work the queue may serve before any flow regardless of its level:
the packet in transmission, which is not preempted), and its delay is the horizontal deviation
``h(α_i, β_i)`` (L&T Thm 1.4.2). A flow's arrival curve is the minimum of its buckets,
``α(t) = min_k (b_k + r_k·t)`` (PriorityMeister's K rate limiters; thesis §3.2.3). With one
bucket per flow it is the closed form

    d_i = (Σ_{j: p_j ≤ p_i} b_j + B) / (C − Σ_{j ≠ i, p_j ≤ p_i} r_j),

Eq. 5.1 of the thesis (§5.2.1) with the level's other flows counted at their rates and the
blocking added.

Through several queues in series (feed-forward) a flow's traffic leaving a queue where its delay
is at most ``d`` conforms to ``α(t + d)``: each bucket ``(r, b)`` becomes ``(r, b + r·d)``; the
bound is the sum over its queues (total-flow analysis, as in :func:`tailbound.dnc.two_hop_delay`).

Units: any consistent ones (the network enforcer uses bytes and bytes/s); delays in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tailbound.dnc.curves import Curve, RateLatency, TokenBucket, token_bucket_min
from tailbound.dnc.operators import aggregate, curve_sum, horizontal_deviation, leftover

#: A flow's name: any hashable key (a tenant's name, or a tenant and a stage).
Name = TypeVar("Name", bound=Hashable)


@dataclass(frozen=True)
class HtbFlow(Generic[Name]):
    """One flow at HTB queues: its ``level`` (0 the most important, as HTB's class ``prio``),
    its ``buckets`` (``None``: not shaped, so it bounds no flow at or below its level) and the
    queues it crosses in order (``path``, used by :func:`path_delays`)."""

    name: Name
    level: int
    buckets: tuple[TokenBucket, ...] | None
    path: tuple[Hashable, ...] = ()

    def __post_init__(self) -> None:
        if self.buckets is not None and not self.buckets:
            raise ValueError(f"flow {self.name}: buckets must be None (unshaped) or not empty")

    def arrival(self, delay: float = 0.0) -> Curve | None:
        """``α(t + delay) = min_k (b_k + r_k·delay + r_k·t)``: the arrival curve of the flow's
        output from queues that delayed it by at most ``delay`` s (``None``: unshaped, or an
        infinite ``delay``)."""
        if self.buckets is None or not math.isfinite(delay):
            return None
        return token_bucket_min(
            [tb.r for tb in self.buckets], [tb.b + tb.r * delay for tb in self.buckets]
        )


def round_robin_delay(
    own: Curve, interfering: Sequence[Curve], capacity: float, blocking: float = 0.0
) -> float:
    """The worst-case delay (s) of a flow of arrival curve ``own`` at a queue of rate
    ``capacity`` where the flows of curves ``interfering`` (strictly higher levels and the other
    flows of its level) may be served first: ``h(α, [β_{C, B/C} − Σ α_j]⁺↑)`` with ``B`` the
    ``blocking`` (:func:`~tailbound.dnc.horizontal_deviation` of the
    :func:`~tailbound.dnc.leftover` service). Infinite when the rates reach the capacity.

    Examples
    --------
    >>> d = round_robin_delay(TokenBucket(0.1, 0.01), [TokenBucket(0.2, 0.02)], 1.0, blocking=0.002)
    >>> round(d, 12)  # (0.01 + 0.02 + 0.002) / (1 − 0.2)
    0.04
    """
    if not capacity > 0:
        raise ValueError(f"the queue's capacity must be positive, got {capacity}")
    cross = interfering[0] if len(interfering) == 1 else aggregate(list(interfering))
    return horizontal_deviation(own, leftover(RateLatency(capacity, blocking / capacity), cross))


def queue_delays(
    flows: Sequence[HtbFlow[Name]],
    capacity: float,
    blocking: float = 0.0,
    delays: Mapping[Name, float] | None = None,
) -> dict[Name, float]:
    """The worst-case delay (s) of each flow at one HTB queue of rate ``capacity``: every other
    flow at its level or a more important one may go first (:func:`round_robin_delay`). A flow
    that arrives delayed by at most ``delays[name]`` s from earlier queues brings the arrival
    curve ``α(t + delay)`` (:meth:`HtbFlow.arrival`). A flow whose curve is unknown (unshaped,
    or infinitely delayed before) makes every flow at or below its level unbounded.

    Examples
    --------
    >>> flows = [HtbFlow("A", 0, (TokenBucket(0.1, 0.01),)), HtbFlow("L", 1, (TokenBucket(0.2,
    ...     0.05),))]
    >>> {k: round(v, 12) for k, v in queue_delays(flows, 1.0, 0.002).items()}
    {'A': 0.012, 'L': 0.068888888889}
    """
    before = delays or {}
    curves = {f.name: f.arrival(before.get(f.name, 0.0)) for f in flows}
    out: dict[Name, float] = {}
    # Σ α_j of the levels above, then per flow its level's others as a prefix and a suffix sum:
    # O(n) curve sums rather than one aggregate of O(n) curves per flow
    above: Curve | None = TokenBucket(0.0, 0.0)
    for level in sorted({f.level for f in flows}):
        group = [f for f in flows if f.level == level]
        known = [curves[f.name] for f in group]
        if above is None or any(c is None for c in known):
            out.update((f.name, math.inf) for f in group)
            above = None
            continue
        level_curves = [c for c in known if c is not None]
        prefix = [above]
        for c in level_curves[:-1]:
            prefix.append(curve_sum(prefix[-1], c))
        suffix: Curve = TokenBucket(0.0, 0.0)
        for k in range(len(group) - 1, -1, -1):
            others = curve_sum(prefix[k], suffix)
            out[group[k].name] = round_robin_delay(level_curves[k], [others], capacity, blocking)
            suffix = curve_sum(suffix, level_curves[k])
        above = curve_sum(prefix[-1], level_curves[-1])
    return {f.name: out[f.name] for f in flows}


def path_delays(
    flows: Sequence[HtbFlow[Name]], capacity: float, blocking: float = 0.0
) -> dict[Name, float]:
    """The worst-case delay (s) of each flow through its ``path`` of HTB queues, each of rate
    ``capacity`` and with ``blocking``: the sum of its :func:`queue_delays` at each queue, where
    it arrives with the curve ``α(t + d)``, ``d`` its bound over the queues before. The queues
    are analysed in an order where every flow's earlier queues come first; a ``ValueError`` says
    when there is none (a cycle: the analysis is feed-forward).

    Examples
    --------
    >>> a = HtbFlow("A", 0, (TokenBucket(0.1, 0.01),), ("a.out", "s.in"))
    >>> b = HtbFlow("B", 0, (TokenBucket(0.2, 0.02),), ("b.out", "s.in"))
    >>> {k: round(v, 12) for k, v in path_delays([a, b], 1.0).items()}
    {'A': 0.05375, 'B': 0.058888888889}
    """
    names = [f.name for f in flows]
    if len(set(names)) != len(names):
        raise ValueError(f"flow names must be unique: {names!r}")
    done: dict[Name, int] = dict.fromkeys(names, 0)  # queues of each flow's path analysed
    total = dict.fromkeys(names, 0.0)
    pending = {q for f in flows for q in f.path}
    while pending:
        ready = [
            q
            for q in pending
            if all(q not in f.path[done[f.name] + 1 :] for f in flows)  # next wherever it is
        ]
        if not ready:
            raise ValueError(f"the queues {sorted(map(str, pending))} are not feed-forward")
        for q in sorted(ready, key=str):
            at = [f for f in flows if done[f.name] < len(f.path) and f.path[done[f.name]] == q]
            for name, d in queue_delays(at, capacity, blocking, total).items():
                total[name] += d
                done[name] += 1
            pending.discard(q)
    return total
