"""The storage device as the worst-case analyses see it: a unit-rate server behind a dispatcher.

**The model** (docs/dnc.md, "The storage stage"). The simulator's device — and the real device a
gateway dispatches to — serves the requests *in service* by processor sharing of one second of
work per second (a request's work is the SSD profile's ``size / bandwidth(op, size)``, measured
with the device's own parallelism inside). In front of it the dispatcher (thesis §2.2.1) keeps at
most ``read_mpl`` reads and ``write_mpl`` writes in service, at most ``max_read_bytes`` /
``max_write_bytes`` of them, takes requests from its strict-priority scheduler head of line, and
applies the thesis' rule for less important requests with ``low_priority_mpl = 0``: while a
request is in service, nothing less important joins it.

Three consequences for a request of level ``p`` (0 the most important):

1. **Blocking.** Less important requests already in service when ``p``'s busy period starts stay
   in service (nothing preempts them) and share the device; no new one is dispatched until the
   busy period ends (the rule above, and head-of-line dispatch). Their work is at most
   :meth:`DeviceLimits.blocking`: the most work ``read_mpl`` reads within ``max_read_bytes``
   plus ``write_mpl`` writes within ``max_write_bytes`` can carry, for the less important tenants'
   request sizes. This is the non-preemption term Eq. 5.1 omits.
2. **Sharing inside a level.** Processor sharing serves requests of the same level *together*,
   not first come first served: a later request of the same level slows an earlier one down. So
   equal levels count with their rates, like more important ones (``Σ_{k ≤ p} r_k`` in the
   denominator), where a FIFO queue would count only their bursts.
3. Work conservation at rate 1 then bounds the level-``p`` busy period, and with it every
   request's delay: ``(B_p + Σ_{k ≤ p} b_k) / (1 − Σ_{k ≤ p} r_k)``.

**First come first served inside a level** (``level_mpl = 1``, the default of ``tailbound
place``). When the dispatcher also keeps at most one request of each level in service (a held
request stays in its scheduler's queue, so a more important one arriving later still enters), a
level's requests are served one at a time in the scheduler's order, which among the heads of one
level is arrival order, while the device still shares among levels. A request of level ``p``
arriving at ``t`` in a busy period started at ``s`` then completes once the device has done the
blocking, the more important work arriving before it completes and the level's work arriving
before ``t``; later requests of its level wait for it. With work conservation at rate 1:
``d <= (B_p + Σ_{k ≤ p} b_k) / (1 − Σ_{k < p} r_k)`` — Eq. 5.1 plus the blocking, the level's own
rates no longer in the denominator. The blocking shrinks too: each less important level (and the
demoted requests of any tenant, one level below every other) has at most one request in service,
so ``B_p`` is also at most ``L w + 2 w_d`` for ``L`` less important levels on the device, ``w``
their largest request's work and ``w_d >= w`` the largest of any tenant on the device (the demoted
one in service and the one held; :meth:`DeviceLimits.blocking` takes the smaller bound). On the
simulator's device (processor sharing of a unit rate, work measured with the device's parallelism
inside) this costs no throughput; on a real SSD a level with one request in service may see less
than the profile's bandwidth, which the profile would have to be measured for.

What stays is the device's service model; what the analysis needs from the dispatcher is in
:class:`~tailbound.plan.DispatchRule` (``low_priority_mpl = 0``, and ``level_mpl = 1`` for the
first come first served bound), which every enforcer applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from tailbound.profiles.tokens import SsdProfile

#: The dispatch rule the analysis assumes: no less important request joins one in service.
LOW_PRIORITY_MPL = 0


@dataclass(frozen=True, eq=False)
class DeviceLimits:
    """An SSD's dispatch limits and its bandwidth by request size (from its profile).

    ``sizes`` ascending (bytes), every profile row among them, so the bandwidth is linear
    between two consecutive sizes; ``read_bandwidth``/``write_bandwidth`` bytes per second at
    each size. A request of ``s`` bytes is ``s / bandwidth(s)`` seconds of work."""

    read_mpl: int
    write_mpl: int
    max_read_bytes: float
    max_write_bytes: float
    sizes: NDArray[np.float64]
    read_bandwidth: NDArray[np.float64]
    write_bandwidth: NDArray[np.float64]
    #: The dispatcher's cap on the work in service of levels below the device's most important
    #: one (seconds; ``None``: none, the MPLs and byte limits bound it).
    low_priority_work_s: float | None = None
    #: The dispatcher's limit on the requests of one level in service at once (``None``: none,
    #: the level's requests share the device). With 1 a level is served first come first served
    #: (see the module docstring, "First come first served inside a level").
    level_mpl: int | None = None

    @classmethod
    def of(
        cls,
        profile: SsdProfile,
        low_priority_work_s: float | None = None,
        level_mpl: int | None = None,
    ) -> DeviceLimits:
        """The limits and bandwidth table of ``profile``, sampled every 512 B up to its largest
        size and at every row (a fine table makes the knapsack bound below tight)."""
        sizes = np.union1d(np.arange(512.0, profile.sizes[-1] + 1, 512.0), profile.sizes)
        return cls(
            read_mpl=profile.read_mpl,
            write_mpl=profile.write_mpl,
            max_read_bytes=float(profile.max_outstanding_read_bytes),
            max_write_bytes=float(profile.max_outstanding_write_bytes),
            sizes=sizes,
            read_bandwidth=np.interp(sizes, profile.sizes, profile.read_bandwidth),
            write_bandwidth=np.interp(sizes, profile.sizes, profile.write_bandwidth),
            low_priority_work_s=low_priority_work_s,
            level_mpl=level_mpl,
        )

    def bandwidth(self, write: bool) -> NDArray[np.float64]:
        return self.write_bandwidth if write else self.read_bandwidth

    def work(self, write: bool, size: float) -> float:
        """Seconds of work of one request of ``size`` bytes: ``size / bandwidth(size)`` with the
        bandwidth interpolated between rows and held beyond the first and last (the token
        model's rule, :class:`~tailbound.profiles.tokens.SsdModel`)."""
        return float(size / np.interp(size, self.sizes, self.bandwidth(write)))

    @property
    def level_fifo(self) -> bool:
        """Whether the dispatcher serves a level's requests one at a time (first come first
        served inside a level)."""
        return self.level_mpl == 1

    def blocking(
        self,
        largest_read: float,
        largest_write: float,
        lower_levels: int | None = None,
        demoted_work: float = 0.0,
    ) -> float:
        """The most work (s) of less important requests a level's busy period can have to share
        the device with, when the largest of them is ``largest_read`` bytes for reads and
        ``largest_write`` for writes (0: no such requests), spread over ``lower_levels``
        levels (``None``: unknown).

        What is in service when the busy period starts: per operation, the fractional knapsack
        of at most ``mpl`` requests within the byte limit, of sizes up to the largest, and at
        least one request of the largest size (one request is always let in, even past the
        byte limit); with the dispatcher's work cap, at most ``max(cap, one largest request)``.
        With the dispatcher's limit of ``level_mpl`` requests per level, also at most
        ``level_mpl`` requests of each less important level, each at most the largest request's
        work, and ``level_mpl`` demoted requests (one level below every other, of any tenant on
        the device: each at most ``demoted_work`` seconds or the largest less important one).
        Plus one largest request: one less important request the dispatcher took before the
        busy period began and holds, head of line, for a free slot enters after it began.

        >>> p = SsdProfile.from_spec(read_overhead_s=1e-4, read_bytes_per_s=1e8,
        ...                          write_overhead_s=1e-4, write_bytes_per_s=1e8)
        >>> d = DeviceLimits.of(p)
        >>> # 4 reads of at most 4 KiB, 1 MB of room: 4 × (100 µs + 40.96 µs), plus one held
        >>> d2 = DeviceLimits(4, 0, 1e6, 0, d.sizes, d.read_bandwidth, d.write_bandwidth)
        >>> round(d2.blocking(4096, 0) * 1e6, 2)
        704.8
        """
        if not (math.isfinite(largest_read) and math.isfinite(largest_write)):
            return math.inf  # request sizes unknown: nothing bounds the work in service
        out = _blocking(self, float(largest_read), float(largest_write))
        if self.level_mpl is not None and lower_levels is not None and out > 0:
            one = max(
                self.work(False, largest_read) if largest_read > 0 else 0.0,
                self.work(True, largest_write) if largest_write > 0 else 0.0,
            )
            demoted = max(one, demoted_work)
            by_level = lower_levels * self.level_mpl * one + self.level_mpl * demoted + demoted
            out = min(out, by_level)
        return out

    def slots(self) -> int:
        """Requests that can be in service at once."""
        return self.read_mpl + self.write_mpl

    def blocking_by_work(self, largest_work: float) -> float:
        """:meth:`blocking` when only the largest less important request's *work* is known (s):
        every slot holding such a request, or the work cap, plus one held request."""
        if largest_work <= 0:
            return 0.0
        in_service = self.slots() * largest_work
        if self.low_priority_work_s is not None:
            in_service = min(in_service, max(self.low_priority_work_s, largest_work))
        return in_service + largest_work


@lru_cache(maxsize=4096)
def _blocking(limits: DeviceLimits, largest_read: float, largest_write: float) -> float:
    in_service = 0.0
    one = 0.0
    for write, largest, mpl, room in (
        (False, largest_read, limits.read_mpl, limits.max_read_bytes),
        (True, largest_write, limits.write_mpl, limits.max_write_bytes),
    ):
        if largest <= 0 or mpl <= 0:
            continue
        largest_work = limits.work(write, largest)
        one = max(one, largest_work)
        knapsack = _knapsack(limits.sizes, limits.bandwidth(write), largest, mpl, room)
        in_service += max(largest_work, knapsack)
    if limits.low_priority_work_s is not None:
        in_service = min(in_service, max(limits.low_priority_work_s, one))
    return in_service + one


def _knapsack(
    sizes: NDArray[np.float64],
    bandwidth: NDArray[np.float64],
    largest: float,
    count: int,
    room: float,
) -> float:
    """An upper bound on ``max Σ w(s_i)`` over at most ``count`` requests of sizes
    ``s_i <= largest`` with ``Σ s_i <= room``: the fractional relaxation, ``count · ĝ(x)`` at the
    best mean size ``x <= min(largest, room / count)``, with ``ĝ`` the concave envelope of
    points that bound the work ``w(s) = s / bandwidth(s)`` from above (:func:`_work_cover`)."""
    keep = sizes < largest
    xs = np.append(sizes[keep], largest)
    bws = np.append(bandwidth[keep], float(np.interp(largest, sizes, bandwidth)))
    cover_x, cover_y = _work_cover(xs, bws)
    hull_x, hull_y = _upper_hull(cover_x, cover_y)
    mean = min(largest, room / count)
    best = float(np.interp(mean, hull_x, hull_y))
    inside = hull_x <= mean
    if inside.any():
        best = max(best, float(hull_y[inside].max()))
    return count * best


def _work_cover(
    xs: NDArray[np.float64], bws: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Points whose piecewise-linear interpolation is at or above ``w(s) = s / bw(s)`` on
    ``[0, xs[-1]]``, for a bandwidth linear between consecutive ``xs`` and constant below the
    first: the origin, every ``(x, w(x))``, and on each interval where ``w`` is concave
    (``w = s / (a + b s)`` with ``a b > 0``) the meeting point of its tangents at both ends (a
    concave function is below its tangents). Where ``w`` is convex or linear its chord is
    above it already."""
    ws = xs / bws
    x0, x1, w0, w1 = xs[:-1], xs[1:], ws[:-1], ws[1:]
    b = (bws[1:] - bws[:-1]) / (x1 - x0)
    a = bws[:-1] - b * x0
    d0, d1 = a / bws[:-1] ** 2, a / bws[1:] ** 2  # w'(s) = a / bw(s)^2
    with np.errstate(divide="ignore", invalid="ignore"):
        meet = (w1 - w0 - d1 * x1 + d0 * x0) / (d0 - d1)
    concave = (a * b > 0) & (meet > x0) & (meet < x1)
    tent_x = meet[concave]
    tent_y = w0[concave] + d0[concave] * (tent_x - x0[concave])
    px = np.concatenate([[0.0], xs, tent_x])
    py = np.concatenate([[0.0], ws, tent_y])
    order = np.argsort(px, kind="stable")
    return px[order], py[order]


def _upper_hull(
    xs: NDArray[np.float64], ys: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The upper concave envelope of the points (``xs`` ascending), as its vertices."""
    order = np.lexsort((ys, xs))
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs[order].tolist(), ys[order].tolist(), strict=True):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) >= 0:  # not a right turn: drop
                hull.pop()
            else:
                break
        hull.append((x, y))
    return np.array([h[0] for h in hull]), np.array([h[1] for h in hull])
