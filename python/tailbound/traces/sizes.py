"""Request sizes and offsets for synthetic workloads.

Size distributions draw ``n`` sizes in bytes (int64, positive) from a seeded generator; offset
patterns place ``n`` requests of given sizes on a device of ``span_bytes``. All vectorised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.traces.trace import Trace


class SizeDistribution(Protocol):
    """Draws request sizes in bytes."""

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        """``n`` sizes in bytes, each positive."""
        ...

    @property
    def mean_bytes(self) -> float:
        """The distribution's mean size in bytes."""
        ...


@dataclass(frozen=True)
class FixedSize:
    """Every request has the same size.

    Examples
    --------
    >>> FixedSize(4096).sample(np.random.default_rng(0), 3).tolist()
    [4096, 4096, 4096]
    """

    size_bytes: int

    def __post_init__(self) -> None:
        if not (isinstance(self.size_bytes, int | np.integer) and self.size_bytes > 0):
            raise ConfigError(
                None, f"expected a positive integer size, got {self.size_bytes!r}", field="size"
            )

    @property
    def mean_bytes(self) -> float:
        return float(self.size_bytes)

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        return np.full(n, int(self.size_bytes), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class EmpiricalSizes:
    """Sizes drawn from ``values`` with probabilities proportional to ``weights``.

    Use :meth:`from_trace` to resample the sizes of an existing trace.

    Examples
    --------
    >>> d = EmpiricalSizes([4096, 65536], [3, 1])
    >>> d.mean_bytes
    19456.0
    >>> sorted(set(d.sample(np.random.default_rng(0), 100).tolist()))
    [4096, 65536]
    """

    values: NDArray[np.int64]
    weights: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.int64)
        if values.ndim != 1 or values.size == 0 or np.any(values <= 0):
            raise ConfigError(None, "expected a non-empty list of positive sizes", field="values")
        if self.weights is None:
            weights = np.full(values.size, 1.0 / values.size)
        else:
            weights = np.asarray(self.weights, dtype=np.float64)
            if (
                weights.shape != values.shape
                or not np.all(np.isfinite(weights))
                or np.any(weights < 0)
                or not weights.sum() > 0
            ):
                raise ConfigError(
                    None,
                    "expected one finite weight >= 0 per value, not all zero",
                    field="weights",
                )
            weights = weights / weights.sum()
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "weights", weights)

    @classmethod
    def from_trace(cls, trace: Trace) -> EmpiricalSizes:
        """The empirical size distribution of ``trace``'s requests (zero sizes dropped)."""
        sizes = trace.size[trace.size > 0]
        if sizes.size == 0:
            raise ConfigError(None, f"trace {trace.name!r} has no request of positive size")
        values, counts = np.unique(sizes, return_counts=True)
        return cls(values, counts.astype(np.float64))

    @property
    def mean_bytes(self) -> float:
        assert self.weights is not None
        return float(self.values @ self.weights)

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        return np.asarray(rng.choice(self.values, size=n, p=self.weights), dtype=np.int64)


@dataclass(frozen=True)
class LognormalSizes:
    """Lognormal sizes of a given mean and squared coefficient of variation, rounded up to
    a multiple of ``align_bytes`` and clipped to ``[align_bytes, max_bytes]``.

    A lognormal of parameters ``(μ, σ)`` has mean ``exp(μ + σ²/2)`` and ``C² = exp(σ²) − 1``, so
    ``σ² = ln(1 + C²)`` and ``μ = ln(mean) − σ²/2``. :meth:`from_sigma` takes ``σ`` instead of
    ``C²``. Rounding and clipping move the realised mean slightly (upwards by less than
    ``align_bytes`` from rounding; downwards from clipping at ``max_bytes``).

    Examples
    --------
    >>> d = LognormalSizes(mean_bytes=16384, c2=1.0)
    >>> round(d.sigma, 4)
    0.8326
    >>> s = d.sample(np.random.default_rng(0), 100_000)
    >>> bool(np.all(s % 512 == 0) and 15_500 < s.mean() < 17_500)
    True
    """

    mean_bytes: float
    c2: float
    align_bytes: int = 512
    max_bytes: int = 1 << 24

    def __post_init__(self) -> None:
        if not (self.mean_bytes > 0 and math.isfinite(self.mean_bytes)):
            raise ConfigError(
                None, f"expected a positive mean, got {self.mean_bytes}", field="mean"
            )
        if not (self.c2 >= 0 and math.isfinite(self.c2)):
            raise ConfigError(None, f"expected a C² >= 0, got {self.c2}", field="c2")
        if not (self.align_bytes >= 1 and self.max_bytes >= self.align_bytes):
            raise ConfigError(None, "need 1 <= align_bytes <= max_bytes", field="align_bytes")

    @classmethod
    def from_sigma(
        cls, mean_bytes: float, sigma: float, *, align_bytes: int = 512, max_bytes: int = 1 << 24
    ) -> LognormalSizes:
        """A lognormal given its log-space standard deviation ``σ`` (``C² = exp(σ²) − 1``)."""
        if not (sigma >= 0 and math.isfinite(sigma)):
            raise ConfigError(None, f"expected a sigma >= 0, got {sigma}", field="sigma")
        return cls(mean_bytes, math.expm1(sigma * sigma), align_bytes, max_bytes)

    @property
    def sigma(self) -> float:
        """The log-space standard deviation ``σ = sqrt(ln(1 + C²))``."""
        return math.sqrt(math.log1p(self.c2))

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        sigma = self.sigma
        mu = math.log(self.mean_bytes) - sigma * sigma / 2
        raw = rng.lognormal(mu, sigma, n)
        a = self.align_bytes
        top = (self.max_bytes // a) * a
        blocks = np.ceil(np.minimum(raw, top) / a)
        return np.clip(blocks.astype(np.int64) * a, a, top)


def read_write_ops(rng: np.random.Generator, n: int, read_fraction: float) -> NDArray[np.uint8]:
    """``n`` operations, each a read (0) with probability ``read_fraction``, else a write (1)."""
    if not 0 <= read_fraction <= 1:
        raise ConfigError(
            None, f"expected a read fraction in [0, 1], got {read_fraction}", field="read_fraction"
        )
    return (rng.random(n) >= read_fraction).astype(np.uint8)


class OffsetPattern(Protocol):
    """Places requests of given sizes on a device."""

    def offsets(self, rng: np.random.Generator, size: NDArray[np.int64]) -> NDArray[np.int64]:
        """A byte offset per request."""
        ...


def _check_span(span_bytes: int, align_bytes: int) -> None:
    if not (align_bytes >= 1 and span_bytes >= align_bytes):
        raise ConfigError(
            None,
            f"need 1 <= align_bytes ({align_bytes}) <= span_bytes ({span_bytes})",
            field="span_bytes",
        )


@dataclass(frozen=True)
class RandomOffsets:
    """Independent uniform offsets, multiples of ``align_bytes``, such that even the largest
    request of the batch fits: ``offset + max(size) <= span_bytes`` (a request larger than the
    span starts at 0).

    Examples
    --------
    >>> o = RandomOffsets(span_bytes=1 << 20).offsets(np.random.default_rng(0), np.full(5, 4096))
    >>> bool(np.all(o % 4096 == 0) and np.all(o + 4096 <= 1 << 20))
    True
    """

    span_bytes: int
    align_bytes: int = 4096

    def __post_init__(self) -> None:
        _check_span(self.span_bytes, self.align_bytes)

    def offsets(self, rng: np.random.Generator, size: NDArray[np.int64]) -> NDArray[np.int64]:
        largest = int(size.max()) if size.size else 0
        slots = max((self.span_bytes - largest) // self.align_bytes + 1, 1)
        return rng.integers(0, slots, size.size, dtype=np.int64) * self.align_bytes


@dataclass(frozen=True)
class SequentialRuns:
    """Runs of sequential requests: each request starts where the previous one of its run ended.

    Run lengths are geometric with mean ``mean_run_length`` requests (1 means every request is a
    run of its own, i.e. random). Each run starts at a uniform ``align_bytes``-aligned offset
    chosen so the whole run fits in ``span_bytes``; a run longer than the span wraps modulo the
    span (and loses its sequentiality at the wrap).

    Examples
    --------
    >>> p = SequentialRuns(span_bytes=1 << 30, mean_run_length=1e9)  # one long run
    >>> o = p.offsets(np.random.default_rng(0), np.array([4096, 8192, 4096]))
    >>> (o - o[0]).tolist()
    [0, 4096, 12288]
    """

    span_bytes: int
    mean_run_length: float = 8.0
    align_bytes: int = 4096

    def __post_init__(self) -> None:
        _check_span(self.span_bytes, self.align_bytes)
        if not self.mean_run_length >= 1:
            raise ConfigError(
                None,
                f"expected a mean run length >= 1, got {self.mean_run_length}",
                field="mean_run_length",
            )

    def offsets(self, rng: np.random.Generator, size: NDArray[np.int64]) -> NDArray[np.int64]:
        n = size.size
        if n == 0:
            return np.empty(0, dtype=np.int64)
        starts_run = rng.random(n) < 1.0 / self.mean_run_length
        starts_run[0] = True
        run = np.cumsum(starts_run) - 1
        first = np.flatnonzero(starts_run)
        before = np.cumsum(size) - size  # bytes of all earlier requests
        within = before - before[first][run]  # bytes of earlier requests in the same run
        run_bytes = np.add.reduceat(size, first)
        slots = np.maximum((self.span_bytes - run_bytes) // self.align_bytes + 1, 1)
        run_start = (rng.random(first.size) * slots).astype(np.int64) * self.align_bytes
        offsets = run_start[run] + within
        span = (self.span_bytes // self.align_bytes) * self.align_bytes
        if int(run_bytes.max()) > span:  # only runs longer than the span wrap
            offsets %= span
        return np.asarray(offsets, dtype=np.int64)
