"""Burstiness statistics of a workload: peak rates at many time scales, C² of inter-arrivals.

The thesis (§2.3.1) observes that bursts "occur at the granularity of milliseconds to seconds":
they barely move the mean load but dominate tail latency. These statistics show that at a
glance, next to the r-b curve.

Choices (the documents leave them open):

* The peak rate at time scale ``L`` is the most work (or requests) in any **sliding** window
  ``[s, s + L)`` divided by ``L``, over every real ``s``, not only over tumbling windows aligned
  to multiples of ``L`` (which miss bursts straddling a boundary, so they depend on where the
  clock started). The maximum is attained with ``s`` at an arrival, so one ``searchsorted`` per
  time scale computes it exactly.
* The mean rate is total ÷ the trace's duration (the same at every time scale), so the
  peak-to-mean ratio at a scale longer than the trace is below 1.
* C² is the squared coefficient of variation of the inter-arrival times,
  ``Var(X) / E[X]²`` with the population variance; 1 for a Poisson process, 0 for a periodic
  one. It is NaN with fewer than two inter-arrival times or a zero mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.traces.trace import Trace

#: Time scales of the summary, in seconds: 1 ms to 10 s.
DEFAULT_TIME_SCALES_S: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)


def peak_rates(
    time: ArrayLike, weights: ArrayLike, time_scales_s: ArrayLike
) -> NDArray[np.float64]:
    """``max over s of (weight arriving in [s, s + L)) / L`` for each time scale ``L`` (s).

    ``time`` in seconds, non-decreasing; ``weights`` per request (1 for request rates, tokens for
    utilisations). Returns one rate (weight per second) per scale.

    Examples
    --------
    >>> # three requests within 2 ms, then one a second later
    >>> peak_rates([0.0, 0.001, 0.002, 1.0], [1, 1, 1, 1], [0.001, 0.0025, 1.0, 10.0]).tolist()
    [1000.0, 1200.0, 3.0, 0.4]
    """
    t = np.asarray(time, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    scales = np.atleast_1d(np.asarray(time_scales_s, dtype=np.float64))
    if np.any(~(scales > 0)):
        raise ValueError("time scales must be positive")
    if t.shape[0] == 0:
        return np.zeros_like(scales)
    before = np.concatenate([[0.0], np.cumsum(w)])
    out = np.empty_like(scales)
    for k, length in enumerate(scales):  # a handful of scales; each one is vectorised
        end = np.searchsorted(t, t + length, side="left")
        out[k] = np.max(before[end] - before[:-1]) / length
    return out


def interarrival_c2(time: ArrayLike) -> float:
    """Squared coefficient of variation of the inter-arrival times (NaN if undefined).

    Examples
    --------
    >>> interarrival_c2([0.0, 1.0, 2.0, 3.0])  # periodic
    0.0
    >>> round(interarrival_c2([0.0, 1.0, 1.0, 4.0]), 12)  # gaps 1, 0, 3: mean 4/3, variance 14/9
    0.875
    """
    gaps = np.diff(np.asarray(time, dtype=np.float64))
    if gaps.shape[0] < 2:
        return float("nan")
    mean = float(gaps.mean())
    if mean <= 0:
        return float("nan")
    return float(gaps.var() / mean**2)


@dataclass(frozen=True)
class BurstinessSummary:
    """Burstiness of one workload, optionally at one stage.

    Rates are in ``unit``: ``"requests/s"`` when counting requests, ``"utilisation"`` (seconds
    of work per second) when weighing them with a stage's token model.
    """

    name: str
    requests: int
    duration_s: float
    unit: str
    mean_rate: float
    time_scales_s: tuple[float, ...]
    peak_rates: tuple[float, ...]
    interarrival_c2: float

    @property
    def peak_to_mean(self) -> tuple[float, ...]:
        """Peak rate ÷ mean rate at each time scale (NaN when the mean is zero or undefined)."""
        if not self.mean_rate > 0:
            return tuple(float("nan") for _ in self.peak_rates)
        return tuple(p / self.mean_rate for p in self.peak_rates)

    def peak_to_mean_at(self, time_scale_s: float) -> float:
        """The peak-to-mean ratio at one of :attr:`time_scales_s`."""
        try:
            return self.peak_to_mean[self.time_scales_s.index(time_scale_s)]
        except ValueError:
            raise ValueError(f"no time scale {time_scale_s} s in {self.time_scales_s}") from None


def burstiness(
    trace: Trace,
    model: object | None = None,
    time_scales_s: ArrayLike = DEFAULT_TIME_SCALES_S,
) -> BurstinessSummary:
    """Mean and peak rates of ``trace`` at ``time_scales_s`` and the C² of its inter-arrivals.

    With a token ``model`` the rates are utilisations of its stage; without, requests per second.

    Examples
    --------
    >>> t = Trace.from_arrays(time=[0.0, 0.001, 0.002, 1.0], op=[0] * 4, size=[512] * 4)
    >>> s = burstiness(t, time_scales_s=[0.001, 1.0])
    >>> s.mean_rate, s.peak_rates, s.peak_to_mean
    (4.0, (1000.0, 3.0), (250.0, 0.75))
    """
    if model is None:
        weights = np.ones(len(trace))
        unit = "requests/s"
    else:
        weights = model.tokens(trace)  # type: ignore[attr-defined]
        unit = "utilisation"
    scales = np.atleast_1d(np.asarray(time_scales_s, dtype=np.float64))
    duration = trace.duration
    mean = float(weights.sum() / duration) if duration > 0 else float("nan")
    return BurstinessSummary(
        name=trace.name,
        requests=len(trace),
        duration_s=duration,
        unit=unit,
        mean_rate=mean,
        time_scales_s=tuple(scales.tolist()),
        peak_rates=tuple(peak_rates(trace.time, weights, scales).tolist()),
        interarrival_c2=interarrival_c2(trace.time),
    )
