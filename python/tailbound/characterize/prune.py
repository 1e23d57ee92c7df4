"""Pruning an r-b curve to at most ``k`` segments, never below the original.

The r-b curve is convex, so the chord between two of its vertices lies on or above it: keeping
a subset of the vertices (both end points always) only raises the curve, and every kept vertex
is still a feasible token bucket. The Rust core (``crates/tailbound-core/src/rb/prune.rs``)
chooses the subset that minimises the area added between the two curves, exactly by dynamic
programming over the vertices (after greedy thinning when there are more than 1,500).
WorkloadCompactor keeps at most 12 segments.

Curves from rbGen are convex; a curve read from a file need not be. For those, any point that a
kept chord would pass below is put back (and the check repeated), so the result is never below
the input even then, at the price of more than ``k`` segments.
"""

from __future__ import annotations

import numpy as np

from tailbound.characterize.rbcurve import RbCurve

#: WorkloadCompactor's limit on the segments of a curve.
WC_SEGMENTS = 12


def prune(curve: RbCurve, k: int = WC_SEGMENTS) -> RbCurve:
    """``curve`` with at most ``k`` segments (``k + 1`` points), never below it.

    Examples
    --------
    >>> import numpy as np
    >>> c = RbCurve(np.array([0.1, 0.2, 0.3, 0.5, 1.0]), np.array([10.0, 5, 3, 2, 1.5]), 0.1)
    >>> prune(c, 2).rates.tolist()
    [0.1, 0.3, 1.0]
    """
    from tailbound import _core

    if k < 1:
        raise ValueError(f"prune needs at least one segment, got k={k}")
    keep = np.asarray(_core.prune_rb_curve(curve.rates, curve.buckets, int(k)), dtype=np.int64)
    while True:
        chords = np.interp(curve.rates, curve.rates[keep], curve.buckets[keep])
        below = np.flatnonzero(chords < curve.buckets - 1e-12 * np.maximum(1.0, curve.buckets))
        if below.size == 0:
            break
        keep = np.union1d(keep, below)
    return RbCurve(curve.rates[keep], curve.buckets[keep], curve.mean_rate, curve.stage, curve.name)
