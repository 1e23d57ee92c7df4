"""The r-b curve of a trace at a token model's stage: rbGen over a rate grid
(:mod:`tailbound.characterize.rbcurve`, thesis §2.3.1) or the exact curve
(:mod:`tailbound.characterize.exact`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tailbound.characterize.exact import exact_rb_curve
from tailbound.characterize.rbcurve import (
    RbCurve,
    check_characterizable,
    mean_rate,
    rbgen,
    wc_rate_grid,
)
from tailbound.traces.trace import Trace


def rb_curve(
    trace: Trace,
    model: object,
    rates: ArrayLike | None = None,
    *,
    exact: bool = False,
    threads: int = 1,
) -> RbCurve:
    """The r-b curve of ``trace`` at the stage of ``model`` (a token model).

    ``rates`` defaults to :func:`~tailbound.characterize.rbcurve.wc_rate_grid` from 1.0 down to
    the mean rate. With ``exact=True`` the curve is
    :func:`~tailbound.characterize.exact.exact_rb_curve` instead (``rates`` must then be
    ``None``).
    """
    check_characterizable(trace, model)
    if exact:
        if rates is not None:
            raise ValueError("rb_curve: give either rates or exact=True, not both")
        return exact_rb_curve(trace, model, threads=threads)
    tokens = model.tokens(trace)  # type: ignore[attr-defined]
    mean = mean_rate(tokens, trace.duration)
    grid = wc_rate_grid(mean) if rates is None else np.asarray(rates, dtype=np.float64)
    buckets = rbgen(trace.time, tokens, grid, threads=threads)
    # Tiny increases from floating-point rounding in rbGen would break monotonicity.
    buckets = np.minimum.accumulate(buckets)
    return RbCurve(grid, buckets, mean, getattr(model, "stage", None), trace.name)
