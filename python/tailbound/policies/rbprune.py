"""Prune an r-b curve to at most ``k`` segments, conservatively.

TO BE REPLACED: the characterisation helper is adding pruning to ``RbCurve`` itself; when it lands
on main, :func:`prune` should call it (the contract is the same: the pruned curve lies on or above
the original everywhere, so every ``(r, b)`` it allows is feasible).

Dropping a point of a convex piecewise-linear curve replaces two segments by their chord, which
lies above them; so any subset of the points that keeps the first (smallest rate, the mean) and
the last point is conservative. The greedy here drops, one at a time, the point whose removal adds
the least area between the curves (the WorkloadCompactor system pruned the equivalent arrival
curve by a similar greedy on bucket differences, to 12 segments).
"""

from __future__ import annotations

import heapq

import numpy as np

from tailbound.characterize import RbCurve


def _lower_hull(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of points sorted by rate (drops non-convex wiggles by
    keeping the points that matter; chords over dropped points lie above them)."""
    hull: list[int] = []
    for i in range(len(r)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            cross = (r[i1] - r[i0]) * (b[i] - b[i0]) - (b[i1] - b[i0]) * (r[i] - r[i0])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.array(hull)


def prune(curve: RbCurve, segments: int = 12) -> RbCurve:
    """``curve`` with at most ``segments`` segments (``segments + 1`` points), on or above it.

    Examples
    --------
    >>> c = RbCurve(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.array([4.0, 2.0, 1.0, 0.5, 0.4]), 0.1)
    >>> p = prune(c, 2)
    >>> p.rates.tolist(), p.buckets.tolist()
    ([0.1, 0.3, 0.5], [4.0, 1.0, 0.4])
    """
    if segments < 1:
        raise ValueError("an r-b curve needs at least one segment")
    r, b = curve.rates, curve.buckets
    keep = _lower_hull(r, b)
    # The hull keeps points whose chords lie on or below the others; the dropped points lie on or
    # above the hull, so the hull alone would not be conservative. Put them back unless they lie
    # on the hull line within rounding.
    chord = np.interp(r, r[keep], b[keep])
    above = b > chord + 1e-12 * max(1.0, float(b[0]))
    if np.any(above):
        keep = np.arange(len(r))  # not convex: the greedy below only removes convex corners
    nodes = keep.tolist()
    if len(nodes) <= segments + 1:
        return _curve(curve, np.array(nodes))
    prev = {nodes[i]: nodes[i - 1] for i in range(1, len(nodes))}
    nxt = {nodes[i]: nodes[i + 1] for i in range(len(nodes) - 1)}

    def cost(i: int) -> float:
        a, c = prev[i], nxt[i]
        # area of the triangle (a, i, c) = what the chord a–c adds above the curve; a point above
        # the chord (a concave corner from rounding) must stay, or the chord would cut below it
        cross = (r[c] - r[a]) * (b[i] - b[a]) - (b[c] - b[a]) * (r[i] - r[a])
        return np.inf if cross > 0 else 0.5 * abs(cross)

    version = dict.fromkeys(nodes, 0)
    heap = [(cost(i), i, 0) for i in nodes[1:-1]]
    heapq.heapify(heap)
    alive = len(nodes)
    while alive > segments + 1 and heap:
        cost_i, i, v = heapq.heappop(heap)
        if v != version.get(i, -1):
            continue
        if not np.isfinite(cost_i):
            break  # only concave corners left: keep more segments rather than cut below
        a, c = prev.pop(i), nxt.pop(i)
        del version[i]
        nxt[a], prev[c] = c, a
        alive -= 1
        for j in (a, c):
            if j in prev and j in nxt:
                version[j] += 1
                heapq.heappush(heap, (cost(j), j, version[j]))
    return _curve(curve, np.array(sorted(version)))


def _curve(curve: RbCurve, idx: np.ndarray) -> RbCurve:
    return RbCurve(curve.rates[idx], curve.buckets[idx], curve.mean_rate, curve.stage, curve.name)
