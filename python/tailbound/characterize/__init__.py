"""Characterisation of a workload's burstiness: r-b curves, arrival curves, burstiness statistics.

The r-b curve (thesis §2.3.1) lists token-bucket parameters ``(r, b)`` — ``r`` a utilisation of
the stage, ``b`` seconds of work — that each let the workload through without delay.
"""

from tailbound.characterize.rbcurve import RbCurve, rb_curve, rbgen, wc_rate_grid

__all__ = ["RbCurve", "rb_curve", "rbgen", "wc_rate_grid"]
