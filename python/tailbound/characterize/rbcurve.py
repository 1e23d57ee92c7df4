"""The ``RbCurve`` type and rbGen (thesis §2.3.1, Algorithm 2.1).

The curve of a trace at a token model's stage, on a rate grid or exact, is
:func:`tailbound.characterize.compute.rb_curve`; pruning is :mod:`tailbound.characterize.prune`.

A workload's r-b curve is the set of token buckets ``(r, b)`` that never delay it: for every rate
``r`` (a utilisation of the stage) the smallest bucket ``b(r)`` (seconds of work) such that a
bucket filling with each request's tokens and draining at ``r`` never overflows. ``b`` is convex,
piecewise linear and non-increasing in ``r``; every point on or above the curve is feasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError, TraceFormatError
from tailbound.stages import Stage
from tailbound.traces.trace import Trace


def rbgen(
    time: ArrayLike, tokens: ArrayLike, rates: ArrayLike, *, threads: int = 1
) -> NDArray[np.float64]:
    """Bucket size (s of work) per rate for requests arriving at ``time`` with ``tokens``.

    Thesis Algorithm 2.1, in Rust (``crates/tailbound-core/src/rb/rbgen.rs``): one pass over the
    trace per chunk of 32 rates, vectorised over the rates. ``time`` is in seconds and
    non-decreasing, ``tokens`` in seconds of work, ``rates`` are utilisations; ``threads > 1``
    splits the rates over threads. :func:`tailbound.characterize.reference.rbgen_numpy` computes
    the same by another route.

    Examples
    --------
    >>> rbgen([0.0, 1.0, 1.5], [1.0, 1.0, 1.0], [0.5, 1.0, 4.0]).tolist()
    [2.25, 1.5, 1.0]
    """
    from tailbound import _core

    t, w = _as_f64(time), _as_f64(tokens)
    r = np.atleast_1d(_as_f64(rates))
    return _core.rbgen(t, w, r, threads)


def _as_f64(values: ArrayLike) -> NDArray[np.float64]:
    return np.ascontiguousarray(values, dtype=np.float64)


def wc_rate_grid(mean_rate: float, *, top: float = 1.0, count: int = 1000) -> NDArray[np.float64]:
    """The WorkloadCompactor system's grid: up to ``count`` rates stepping down from ``top`` by
    0.1% of it, stopping at the mean rate (which is included), in ascending order.

    Examples
    --------
    >>> wc_rate_grid(0.9955).tolist()
    [0.9955, 0.996, 0.997, 0.998, 0.999, 1.0]
    """
    step = top / 1000
    rates = top - step * np.arange(count)
    rates = rates[rates > mean_rate + 1e-12]
    return np.unique(np.round(np.append(rates, mean_rate), 12))


@dataclass(frozen=True, eq=False)
class RbCurve:
    """A workload's r-b curve at one stage: points ``(rates[i], buckets[i])``.

    ``rates`` are utilisations of the stage, strictly increasing; ``buckets`` are seconds of work,
    non-increasing. Between points the curve is the chord (above the true convex curve, so safe);
    below the smallest rate it is unknown (infinite); above the largest it stays at the last bucket.
    ``mean_rate`` is the workload's long-run utilisation (total work ÷ duration).
    """

    rates: NDArray[np.float64]
    buckets: NDArray[np.float64]
    mean_rate: float
    stage: Stage | None = None
    name: str = ""

    def __post_init__(self) -> None:
        rates = np.ascontiguousarray(self.rates, dtype=np.float64)
        buckets = np.ascontiguousarray(self.buckets, dtype=np.float64)
        if rates.ndim != 1 or rates.shape != buckets.shape or rates.shape[0] == 0:
            raise ValueError("RbCurve needs equally long, non-empty rates and buckets")
        if np.any(np.diff(rates) <= 0) or rates[0] <= 0:
            raise ValueError("RbCurve rates must be positive and strictly increasing")
        if np.any(buckets < 0) or np.any(np.diff(buckets) > 1e-12 * max(1.0, buckets[0])):
            raise ValueError("RbCurve buckets must be non-negative and non-increasing")
        rates.flags.writeable = False
        buckets.flags.writeable = False
        object.__setattr__(self, "rates", rates)
        object.__setattr__(self, "buckets", buckets)

    def __len__(self) -> int:
        return int(self.rates.shape[0])

    def bucket_at(self, rate: ArrayLike) -> NDArray[np.float64]:
        """``b(r)`` in seconds of work, linear between points, infinite below the first rate."""
        r = np.asarray(rate, dtype=np.float64)
        b = np.interp(r, self.rates, self.buckets)
        return np.where(r < self.rates[0], np.inf, b)

    def shaping_delay(self, rate: ArrayLike, bucket: float) -> NDArray[np.float64]:
        """Delay (s) of this traffic in its own token-bucket shaper ``(rate, bucket)`` at each
        ``rate`` (> 0): ``max(0, b(rate) − bucket) / rate``, the horizontal deviation of ``α``
        from ``rate·t + bucket`` (since ``b(r) = sup_t (α(t) − r t)``); infinite below the
        curve's smallest rate. The same value as :func:`tailbound.dnc.shaper_delay` on
        :meth:`arrival_curve`, in closed form.

        >>> c = RbCurve(np.array([0.1, 0.5]), np.array([0.02, 0.004]), 0.1)
        >>> round(float(c.shaping_delay(0.5, 0.001)), 6)   # (4 ms − 1 ms) / 0.5
        0.006
        >>> float(c.shaping_delay(0.05, 0.001))
        inf
        """
        r = np.asarray(rate, dtype=np.float64)
        return np.maximum(self.bucket_at(r) - bucket, 0.0) / r

    def arrival_curve(self, t: ArrayLike) -> NDArray[np.float64]:
        """``α(t) = min_i (b_i + r_i t)``: the most work (s) arriving in any window of ``t`` s."""
        t_a = np.asarray(t, dtype=np.float64)
        return np.min(self.buckets[:, None] + self.rates[:, None] * t_a.reshape(1, -1), axis=0)

    def scaled(self, margin: float) -> RbCurve:
        """The curve of the workload with ``margin`` times its work: points ``(m·r, m·b)``.

        WorkloadCompactor's safety margin (paper §5.2: "scaling the r-b curves by 1.1").
        """
        if not margin > 0:
            raise ValueError(f"safety margin must be positive, got {margin}")
        return RbCurve(
            self.rates * margin,
            self.buckets * margin,
            self.mean_rate * margin,
            self.stage,
            self.name,
        )

    @property
    def peak_rate(self) -> float:
        """The largest rate of the curve; for an exact curve the rate above which ``b`` is flat."""
        return float(self.rates[-1])

    def token_buckets(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The curve as token buckets ``(rates, buckets)``: each vertex is one bucket that lets
        the workload through undelayed; :meth:`arrival_curve` is their minimum."""
        return self.rates.copy(), self.buckets.copy()

    def segments(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The lines ``b = intercept + slope · r`` through neighbouring vertices, for LPs.

        By convexity, "on or above every line" (with ``r`` at least the first rate) is "on or
        above the curve" (WorkloadCompactor paper §2.3.1). A single-point curve gives the flat
        line through it.

        Examples
        --------
        >>> c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([2.0, 1.0, 1.0]), 0.1)
        >>> [s.tolist() for s in c.segments()]
        [[-2.5, 0.0], [2.25, 1.0]]
        """
        if len(self) == 1:
            return np.zeros(1), self.buckets.copy()
        slopes = np.diff(self.buckets) / np.diff(self.rates)
        return slopes, self.buckets[:-1] - slopes * self.rates[:-1]

    def clipped(self, max_rate: float) -> RbCurve:
        """The curve on rates up to ``max_rate``, ending at the vertex ``(max_rate, b(max_rate))``.

        Safe: ``b`` is non-increasing, so holding ``b(max_rate)`` above ``max_rate`` stays on or
        above the curve. Used to cut an exact curve, whose peak rate may be far above 1, to the
        rates a stage can grant.

        Examples
        --------
        >>> c = RbCurve(np.array([0.1, 0.5, 4.0]), np.array([2.0, 1.0, 0.5]), 0.1)
        >>> c.clipped(1.0).rates.tolist(), c.clipped(1.0).buckets.tolist()
        ([0.1, 0.5, 1.0], [2.0, 1.0, 0.9285714285714286])
        """
        if not max_rate > self.rates[0]:
            raise ValueError(f"clipped: max_rate {max_rate} is not above the first rate")
        keep = self.rates < max_rate
        if keep.all():
            return self
        rates = np.append(self.rates[keep], max_rate)
        buckets = np.append(self.buckets[keep], self.bucket_at(max_rate))
        return RbCurve(rates, buckets, self.mean_rate, self.stage, self.name)

    def to_csv(self, path: str | Path) -> None:
        """Write ``rate,bucket_s`` rows sorted by rate, atomically."""
        rows = "".join(
            f"{r!r},{b!r}\n"
            for r, b in zip(self.rates.tolist(), self.buckets.tolist(), strict=True)
        )
        write_text_atomic(path, "rate,bucket_s\n" + rows)

    @classmethod
    def from_csv(cls, path: str | Path, *, mean_rate: float | None = None) -> RbCurve:
        """Read a ``rate,bucket_s`` file written by :meth:`to_csv`."""
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as e:
            raise ConfigError(path, f"cannot read the r-b curve: {e.strerror}") from None
        if not lines or lines[0].strip() != "rate,bucket_s":
            raise ConfigError(path, "expected the header 'rate,bucket_s'", field="line 1")
        values = []
        for number, line in enumerate(lines[1:], start=2):
            try:
                rate, bucket = (float(v) for v in line.split(","))
            except ValueError:
                raise ConfigError(  # noqa: B904 - the line and field say all there is
                    path, f"expected two numbers, got {line!r}", field=f"line {number}"
                )
            values.append((rate, bucket))
        if not values:
            raise ConfigError(path, "the r-b curve has no points")
        rates, buckets = np.array(values).T
        try:
            return cls(
                rates, buckets, rates[0] if mean_rate is None else mean_rate, name=Path(path).stem
            )
        except ValueError as e:
            raise ConfigError(path, str(e)) from None

    def __repr__(self) -> str:
        return (
            f"RbCurve(name={self.name!r}, stage={self.stage}, points={len(self)}, "
            f"rates=[{self.rates[0]:.4g}..{self.rates[-1]:.4g}], "
            f"buckets=[{self.buckets[0]:.4g}..{self.buckets[-1]:.4g}] s)"
        )


def mean_rate(tokens: NDArray[np.float64], duration_s: float) -> float:
    """Total work ÷ duration (a utilisation); the total work itself for a zero-length trace."""
    total = float(tokens.sum())
    return total / duration_s if duration_s > 0 else total


def check_characterizable(trace: Trace, model: object) -> None:
    """Refuse a trace no r-b curve describes: one that lasts 0 s (every request at one instant
    and no ``duration_s``: its mean rate is undefined) or does no work at the model's stage
    (every request of size 0). The error names the trace and the field to fix.

    >>> t = Trace.from_arrays(time=[0.0, 0.0], op=[0, 0], size=[512, 512], name="t0")
    >>> check_characterizable(t, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tailbound.errors.TraceFormatError: t0, field duration_s: the trace lasts 0 s (every ...
    """
    if not trace.duration > 0:
        at = f" (every request at {trace.time[0]:g} s)" if len(trace) else ""
        raise TraceFormatError(
            trace.name or None,
            f"the trace lasts 0 s{at}: an r-b curve needs a duration; give the recording's "
            "length (duration_s)",
            field="duration_s",
        )
    if model is not None:
        tokens = model.tokens(trace)  # type: ignore[attr-defined]
        if not float(np.sum(tokens)) > 0:
            stage = getattr(getattr(model, "stage", None), "value", "this")
            raise TraceFormatError(
                trace.name or None,
                f"the trace does no work at the {stage} stage (every request of size 0)",
                field="size",
            )
