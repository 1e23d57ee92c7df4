"""Synthetic workloads: an arrival process plus sizes, a read/write mix and offsets -> a Trace.

Everything is seeded and deterministic: the seed (an int or a :class:`numpy.random.Generator`)
is split into independent streams for arrivals, operations, sizes and offsets, so changing the
size distribution of a workload leaves its arrival times unchanged. The constructions are in
``docs/workloads.md``.

Examples
--------
>>> t = poisson_trace(200.0, 5.0, seed=1, sizes=FixedSize(8192), read_fraction=0.7)
>>> t.duration, 800 < len(t) < 1200, set(t.size.tolist())
(5.0, True, {8192})
>>> bool(np.array_equal(t.time, poisson_trace(200.0, 5.0, seed=1).time))
True
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from tailbound.errors import ConfigError
from tailbound.limits import MAX_SYNTHETIC_REQUESTS, MAX_TIME_S
from tailbound.traces.arrivals import (
    ArrivalProcess,
    Mmpp,
    OnOff,
    Poisson,
    empirical_c2,
    uniform_points_in_segments,
)
from tailbound.traces.sizes import (
    EmpiricalSizes,
    FixedSize,
    LognormalSizes,
    OffsetPattern,
    RandomOffsets,
    SequentialRuns,
    SizeDistribution,
    read_write_ops,
)
from tailbound.traces.trace import Trace

__all__ = [
    "ArrivalProcess",
    "EmpiricalSizes",
    "FixedSize",
    "LognormalSizes",
    "Mmpp",
    "OffsetPattern",
    "OnOff",
    "Poisson",
    "RandomOffsets",
    "SequentialRuns",
    "SizeDistribution",
    "empirical_c2",
    "mmpp_trace",
    "onoff_trace",
    "poisson_trace",
    "synthetic_trace",
    "uniform_points_in_segments",
]

#: The default request size when none is given: 4 KiB.
DEFAULT_SIZES = FixedSize(4096)

Seed = int | np.random.Generator | np.random.SeedSequence


def _streams(seed: Seed) -> list[np.random.Generator]:
    """Four independent generators (arrivals, ops, sizes, offsets) derived from ``seed``."""
    if isinstance(seed, np.random.Generator):
        return seed.spawn(4)
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [np.random.default_rng(s) for s in sequence.spawn(4)]


def synthetic_trace(
    arrivals: ArrivalProcess,
    duration_s: float,
    *,
    seed: Seed,
    sizes: SizeDistribution = DEFAULT_SIZES,
    read_fraction: float = 1.0,
    write_sizes: SizeDistribution | None = None,
    offsets: OffsetPattern | None = None,
    name: str = "",
) -> Trace:
    """A trace of ``duration_s`` seconds with the given arrivals, sizes, mix and offsets.

    Parameters
    ----------
    arrivals
        :class:`Poisson`, :class:`Mmpp`, :class:`OnOff` or any :class:`ArrivalProcess`.
    duration_s
        Length of the recording; arrivals fall in ``[0, duration_s)`` and the trace's
        ``duration_s`` is set to it.
    seed
        An int, a :class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`
        (a generator is advanced: two calls with the same generator give different traces).
    sizes, write_sizes
        Size distributions of reads (and of writes unless ``write_sizes`` is given).
    read_fraction
        Probability that a request is a read.
    offsets
        :class:`RandomOffsets`, :class:`SequentialRuns` or ``None`` for a trace without offsets.
    """
    check_size(arrivals.mean_rate, duration_s)
    rng_time, rng_op, rng_size, rng_offset = _streams(seed)
    time = arrivals.times(rng_time, duration_s)
    n = time.size
    op = read_write_ops(rng_op, n, read_fraction)
    size = sizes.sample(rng_size, n)
    if write_sizes is not None:
        is_write = op == 1
        size[is_write] = write_sizes.sample(rng_size, int(is_write.sum()))
    offset = None if offsets is None else offsets.offsets(rng_offset, size)
    return Trace(
        time=time, op=op, size=size, offset=offset, duration_s=float(duration_s), name=name
    )


def check_size(rate: float, duration_s: float) -> None:
    """Refuse a trace of more than :data:`~tailbound.limits.MAX_SYNTHETIC_REQUESTS` expected
    requests (``rate`` per second for ``duration_s`` seconds) or a duration that is not a finite
    number in [0, :data:`~tailbound.limits.MAX_TIME_S`] s, before any memory is allocated.

    >>> check_size(1e9, 600)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tailbound.errors.ConfigError: field rate: 1e+09 requests/s for 600 s is 6e+11 requests, ...
    """
    if not (math.isfinite(duration_s) and 0 <= duration_s <= MAX_TIME_S):
        raise ConfigError(
            None,
            f"expected a duration in [0, {MAX_TIME_S:g}] s, got {duration_s}",
            field="duration_s",
        )
    expected = rate * duration_s
    if not expected <= MAX_SYNTHETIC_REQUESTS:
        raise ConfigError(
            None,
            f"{rate:g} requests/s for {duration_s:g} s is {expected:.3g} requests, more than the "
            f"{MAX_SYNTHETIC_REQUESTS:.3g} a synthetic trace may have",
            field="rate",
        )


def poisson_trace(
    rate: float,
    duration_s: float,
    *,
    seed: Seed,
    sizes: SizeDistribution = DEFAULT_SIZES,
    read_fraction: float = 1.0,
    offsets: OffsetPattern | None = None,
    name: str = "",
) -> Trace:
    """Poisson arrivals at ``rate`` requests/s for ``duration_s`` seconds."""
    return synthetic_trace(
        Poisson(rate),
        duration_s,
        seed=seed,
        sizes=sizes,
        read_fraction=read_fraction,
        offsets=offsets,
        name=name,
    )


def mmpp_trace(
    rates: ArrayLike,
    generator: ArrayLike,
    duration_s: float,
    *,
    seed: Seed,
    sizes: SizeDistribution = DEFAULT_SIZES,
    read_fraction: float = 1.0,
    offsets: OffsetPattern | None = None,
    name: str = "",
) -> Trace:
    """MMPP arrivals with per-phase ``rates`` (1/s) and generator matrix ``generator`` (1/s).

    See :class:`Mmpp` (and :meth:`Mmpp.from_sojourn` for the other parametrisation).
    """
    return synthetic_trace(
        Mmpp(np.asarray(rates, dtype=np.float64), np.asarray(generator, dtype=np.float64)),
        duration_s,
        seed=seed,
        sizes=sizes,
        read_fraction=read_fraction,
        offsets=offsets,
        name=name,
    )


def onoff_trace(
    rate: float,
    c2: float,
    duration_s: float,
    *,
    seed: Seed,
    sizes: SizeDistribution = DEFAULT_SIZES,
    read_fraction: float = 1.0,
    offsets: OffsetPattern | None = None,
    name: str = "",
) -> Trace:
    """On/off bursts of mean ``rate`` requests/s and inter-arrival C² ``c2`` (see :class:`OnOff`).

    Examples
    --------
    >>> t = onoff_trace(500.0, 20.0, 2000.0, seed=3)
    >>> abs(len(t) / 2000.0 / 500.0 - 1) < 0.05, abs(empirical_c2(t.time) / 20.0 - 1) < 0.15
    (True, True)
    """
    return synthetic_trace(
        OnOff(rate, c2),
        duration_s,
        seed=seed,
        sizes=sizes,
        read_fraction=read_fraction,
        offsets=offsets,
        name=name,
    )
