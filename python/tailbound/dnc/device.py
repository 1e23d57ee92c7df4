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

What stays is the device's service model; what the analysis needs from the dispatcher is in
:class:`~tailbound.plan.DispatchRule` (``low_priority_mpl = 0``), which every enforcer applies.
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
    """An SSD's dispatch limits and its work per request size (from its profile).

    ``sizes`` ascending (bytes); ``read_work``/``write_work`` seconds of exclusive service of a
    request of each size."""

    read_mpl: int
    write_mpl: int
    max_read_bytes: float
    max_write_bytes: float
    sizes: NDArray[np.float64]
    read_work: NDArray[np.float64]
    write_work: NDArray[np.float64]

    @classmethod
    def of(cls, profile: SsdProfile) -> DeviceLimits:
        """The limits and work table of ``profile``, sampled every 512 B up to its largest size
        (the work between two profile rows is not linear in the size)."""
        sizes = np.union1d(np.arange(512.0, profile.sizes[-1] + 1, 512.0), profile.sizes)
        return cls(
            read_mpl=profile.read_mpl,
            write_mpl=profile.write_mpl,
            max_read_bytes=float(profile.max_outstanding_read_bytes),
            max_write_bytes=float(profile.max_outstanding_write_bytes),
            sizes=sizes,
            read_work=sizes / np.interp(sizes, profile.sizes, profile.read_bandwidth),
            write_work=sizes / np.interp(sizes, profile.sizes, profile.write_bandwidth),
        )

    def work(self, write: bool, size: float) -> float:
        """Seconds of work of one request of ``size`` bytes: ``size / bandwidth(size)`` with the
        bandwidth interpolated between rows and held beyond the first and last (the token
        model's rule, :class:`~tailbound.profiles.tokens.SsdModel`)."""
        table = self.write_work if write else self.read_work
        bandwidth = self.sizes / table
        return float(size / np.interp(size, self.sizes, bandwidth))

    def blocking(self, largest_read: float, largest_write: float) -> float:
        """The most work (s) less important requests can have in service at once, when the
        largest of them is ``largest_read`` bytes for reads and ``largest_write`` for writes
        (0: no such requests). Per operation, the fractional knapsack of at most ``mpl``
        requests within the byte limit, of sizes up to the largest (the concave envelope of the
        work table), and at least one request of the largest size (one request is always let in,
        even past the byte limit).

        >>> p = SsdProfile.from_spec(read_overhead_s=1e-4, read_bytes_per_s=1e8,
        ...                          write_overhead_s=1e-4, write_bytes_per_s=1e8)
        >>> d = DeviceLimits.of(p)
        >>> # 4 reads of at most 4 KiB, 1 MB of room: 4 × (100 µs + 40.96 µs)
        >>> d2 = DeviceLimits(4, 0, 1e6, 0, d.sizes, d.read_work, d.write_work)
        >>> round(d2.blocking(4096, 0) * 1e6, 2)
        563.84
        """
        if not (math.isfinite(largest_read) and math.isfinite(largest_write)):
            return math.inf  # request sizes unknown: nothing bounds the work in service
        return _blocking(self, float(largest_read), float(largest_write))

    def slots(self) -> int:
        """Requests that can be in service at once."""
        return self.read_mpl + self.write_mpl


@lru_cache(maxsize=4096)
def _blocking(limits: DeviceLimits, largest_read: float, largest_write: float) -> float:
    total = 0.0
    for write, largest, mpl, room, table in (
        (False, largest_read, limits.read_mpl, limits.max_read_bytes, limits.read_work),
        (True, largest_write, limits.write_mpl, limits.max_write_bytes, limits.write_work),
    ):
        if largest <= 0 or mpl <= 0:
            continue
        one = limits.work(write, largest)
        total += max(one, _knapsack(limits.sizes, table, largest, mpl, room))
    return total


def _knapsack(
    sizes: NDArray[np.float64], work: NDArray[np.float64], largest: float, count: int, room: float
) -> float:
    """``max Σ w(s_i)`` over at most ``count`` requests of sizes ``s_i <= largest`` with
    ``Σ s_i <= room``, relaxed to fractions: ``count · ĝ(x)`` at the best mean size
    ``x <= min(largest, room / count)``, with ``ĝ`` the concave envelope of ``(s, w(s))`` through
    the origin (an upper bound on the integer optimum)."""
    keep = sizes <= largest
    xs = np.concatenate([[0.0], sizes[keep], [largest]])
    ys = np.concatenate([[0.0], work[keep], [float(np.interp(largest, sizes, work))]])
    hull_x, hull_y = _upper_hull(xs, ys)
    mean = min(largest, room / count)
    best = float(np.interp(mean, hull_x, hull_y))
    inside = hull_x <= mean
    if inside.any():
        best = max(best, float(hull_y[inside].max()))
    return count * best


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
