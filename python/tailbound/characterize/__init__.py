"""Characterisation of a workload's burstiness: r-b curves, arrival curves, burstiness statistics.

The r-b curve (thesis §2.3.1) lists token-bucket parameters ``(r, b)`` — ``r`` a utilisation of
the stage, ``b`` seconds of work — that each let the workload through without delay.
"""

from tailbound.characterize.burstiness import BurstinessSummary, burstiness, peak_rates
from tailbound.characterize.compute import rb_curve
from tailbound.characterize.exact import exact_rb_curve, exact_rb_points
from tailbound.characterize.prune import WC_SEGMENTS, prune
from tailbound.characterize.rbcurve import RbCurve, mean_rate, rbgen, wc_rate_grid

__all__ = [
    "WC_SEGMENTS",
    "BurstinessSummary",
    "RbCurve",
    "burstiness",
    "exact_rb_curve",
    "exact_rb_points",
    "mean_rate",
    "peak_rates",
    "prune",
    "rb_curve",
    "rbgen",
    "wc_rate_grid",
]
