"""The ``RbCurve`` type and rbGen (thesis §2.3.1, Algorithm 2.1).

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

from tailbound.errors import ConfigError
from tailbound.stages import Stage
from tailbound.traces.trace import Trace


def rbgen(time: ArrayLike, tokens: ArrayLike, rates: ArrayLike) -> NDArray[np.float64]:
    """Bucket size (s of work) per rate for requests arriving at ``time`` with ``tokens``.

    Thesis Algorithm 2.1: one pass over the trace for all rates.

    Examples
    --------
    >>> rbgen([0.0, 1.0, 1.5], [1.0, 1.0, 1.0], [0.5, 1.0, 4.0]).tolist()
    [2.25, 1.5, 1.0]
    """
    from tailbound.characterize.reference import rbgen_numpy

    return rbgen_numpy(time, tokens, rates)


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

    def to_csv(self, path: str | Path) -> None:
        """Write ``rate,bucket_s`` rows sorted by rate, atomically."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        rows = "".join(
            f"{r!r},{b!r}\n"
            for r, b in zip(self.rates.tolist(), self.buckets.tolist(), strict=True)
        )
        tmp.write_text("rate,bucket_s\n" + rows)
        tmp.replace(path)

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


def rb_curve(trace: Trace, model: object, rates: ArrayLike | None = None) -> RbCurve:
    """The r-b curve of ``trace`` at the stage of ``model`` (a token model).

    ``rates`` defaults to :func:`wc_rate_grid` from 1.0 down to the mean rate.
    """
    tokens = model.tokens(trace)  # type: ignore[attr-defined]
    duration = trace.duration
    mean = float(tokens.sum() / duration) if duration > 0 else float(tokens.sum())
    grid = wc_rate_grid(mean) if rates is None else np.asarray(rates, dtype=np.float64)
    buckets = rbgen(trace.time, tokens, grid)
    # Tiny increases from floating-point rounding in rbGen would break monotonicity.
    buckets = np.minimum.accumulate(buckets)
    return RbCurve(grid, buckets, mean, getattr(model, "stage", None), trace.name)
