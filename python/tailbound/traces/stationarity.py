"""Stationarity tests of a trace's arrivals: the check the thesis ran before trusting SNC (§4.3.2).

SNC bounds assume stationary arrivals: the model fitted to one stretch of a trace must describe the
next. The thesis "perform[s] standard statistical tests to verify the stationarity ... of our
traces" (the citations did not survive the text extraction). We run the two standard ones on a
trace's per-interval request **counts** and request **bytes** (``interval_s``, 1 s by default: the
reference MMPP's interval):

* the augmented Dickey–Fuller test (ADF, constant, lag order by AIC) — null hypothesis: a unit
  root. Rejecting it (``p < alpha``) is evidence of stationarity;
* the KPSS test (level, lags by Hobijn et al.'s automatic rule) — null hypothesis: stationarity
  around a constant level. Rejecting it (``p < alpha``) is evidence against.

A trace **passes** when, for both series, ADF rejects a unit root and KPSS does not reject level
stationarity at ``alpha`` (5% by default). The implementations are statsmodels'. KPSS p-values
come from a table: outside ``[0.01, 0.1]`` statsmodels clips them to the nearer end (and warns; we
silence that warning, the clipped value is the documented result).

These tests look at the level and persistence of the series. They do not look at its extreme
seconds: a trace whose rare write bursts fall in one half only can pass them (docs/results-snc.md,
"Stationarity").

Series with a constant value (e.g. exactly one request every interval) are stationary by
definition: ADF is reported as ``p = 0`` and KPSS as ``p = 1`` for them (statsmodels cannot fit a
constant series).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tailbound.traces.trace import Trace

#: Fewest intervals the tests accept: ADF's regression needs a few dozen points to mean anything.
MIN_INTERVALS = 30


@dataclass(frozen=True)
class SeriesTests:
    """ADF and KPSS p-values of one per-interval series."""

    adf_p: float
    kpss_p: float

    def passes(self, alpha: float) -> bool:
        """ADF rejects a unit root and KPSS keeps level stationarity, at ``alpha``."""
        return self.adf_p < alpha and self.kpss_p >= alpha


@dataclass(frozen=True)
class Stationarity:
    """The tests of a trace's per-interval request counts and request bytes."""

    counts: SeriesTests
    bytes: SeriesTests
    interval_s: float

    def passes(self, alpha: float = 0.05) -> bool:
        """Both series pass at ``alpha`` (module docstring)."""
        return self.counts.passes(alpha) and self.bytes.passes(alpha)


def per_interval(trace: Trace, interval_s: float = 1.0) -> tuple[NDArray, NDArray]:
    """Request counts and request bytes per ``interval_s`` (s) over ``[0, trace.duration)``; a
    request arriving exactly at the end counts in the last interval."""
    if interval_s <= 0:
        raise ValueError(f"interval_s must be positive, not {interval_s}")
    n = max(1, int(np.ceil(trace.duration / interval_s)))
    index = np.minimum((trace.time / interval_s).astype(np.int64), n - 1)
    counts = np.bincount(index, minlength=n).astype(np.float64)
    volume = np.bincount(index, weights=trace.size.astype(np.float64), minlength=n)
    return counts, volume


def series_tests(x: NDArray) -> SeriesTests:
    """ADF and KPSS p-values of the series ``x`` (module docstring)."""
    from statsmodels.tools.sm_exceptions import InterpolationWarning
    from statsmodels.tsa.stattools import adfuller, kpss

    if np.ptp(x) == 0.0:
        return SeriesTests(adf_p=0.0, kpss_p=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpolationWarning)
        kpss_p = float(kpss(x, regression="c", nlags="auto", result_object=True).pvalue)
    adf_p = float(adfuller(x, regression="c", autolag="AIC", result_object=True).pvalue)
    return SeriesTests(adf_p=adf_p, kpss_p=kpss_p)


def stationarity(trace: Trace, interval_s: float = 1.0) -> Stationarity:
    """Test ``trace``'s request counts and bytes per ``interval_s`` seconds (module docstring).

    Raises ``ValueError`` when the trace spans fewer than :data:`MIN_INTERVALS` intervals.
    """
    counts, volume = per_interval(trace, interval_s)
    if len(counts) < MIN_INTERVALS:
        raise ValueError(
            f"trace {trace.name or '<unnamed>'} spans {len(counts)} intervals of {interval_s:g} s;"
            f" the stationarity tests need at least {MIN_INTERVALS}"
        )
    return Stationarity(series_tests(counts), series_tests(volume), interval_s)
