"""A tenant as placement policies see it: its SLO and an r-b curve per stage.

:func:`characterize` turns a tenant's trace into that (thesis §2.3, §5.2): token models for the
three stages (``net_in`` and ``net_out`` on the server's link, ``storage`` on the SSD profile),
rbGen on the WorkloadCompactor rate grid, pruning to 12 segments, and the safety margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tailbound.characterize import RbCurve, rb_curve
from tailbound.characterize.prune import prune
from tailbound.model import Slo, Tenant
from tailbound.profiles import SsdProfile, stage_model
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.trace import Op, Trace

#: Segments the WorkloadCompactor system kept per r-b curve (data/README.md).
DEFAULT_SEGMENTS = 12


@dataclass(frozen=True, eq=False)
class TenantCurves:
    """A tenant to place: name, SLO and an r-b curve per stage.

    The curves are in utilisation of the stage's queue and seconds of work, already scaled by
    any safety margin and pruned.
    """

    name: str
    slo: Slo
    curves: dict[Stage, RbCurve] = field(repr=False)
    #: The largest read and write in its trace (bytes; 0 if none): what it can put into a
    #: device's service at once, the blocking term of the storage stage (``inf``: unknown).
    largest: tuple[float, float] = (math.inf, math.inf)

    @property
    def slo_s(self) -> float:
        """The SLO's latency (s)."""
        return self.slo.latency_s

    def mean(self, stage: Stage) -> float:
        """Long-run utilisation of ``stage`` (the smallest rate on its r-b curve)."""
        return float(self.curves[stage].mean_rate)

    def with_slo(self, slo_s: float, name: str | None = None) -> TenantCurves:
        """The same tenant with another SLO latency (the Fig. 5.4 experiments)."""
        return TenantCurves(
            name or self.name, Slo(slo_s, self.slo.percentile), self.curves, self.largest
        )


def characterize(
    config: Tenant,
    trace: Trace,
    *,
    profile: SsdProfile,
    link_bandwidth_bytes_per_s: float,
    safety_margin: float = 1.0,
    segments: int = DEFAULT_SEGMENTS,
) -> TenantCurves:
    """The :class:`TenantCurves` of one tenant from its trace (thesis §2.3.1, §5.2)."""
    curves = {}
    for stage in STORAGE_PATH:
        model = stage_model(
            stage, link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s, profile=profile
        )
        curve = prune(rb_curve(trace, model), segments)
        curves[stage] = curve.scaled(safety_margin) if safety_margin != 1.0 else curve
    return TenantCurves(config.name, config.slo, curves, largest_requests(trace))


def from_characterisation(
    config: Tenant,
    characterisation: Mapping[str, Any],
    *,
    safety_margin: float = 1.0,
    segments: int = DEFAULT_SEGMENTS,
) -> TenantCurves:
    """The :class:`TenantCurves` of a tenant given by its characterisation instead of a trace
    (``plan_inputs.check_characterisation``'s document: per stage the r-b curve in utilisation
    and seconds of work with its mean rate, and the largest read and write in bytes), pruned and
    scaled by ``safety_margin`` as :func:`characterize` treats a curve it computed."""
    curves = {}
    for stage in STORAGE_PATH:
        doc = characterisation["stages"][str(stage)]
        points = np.asarray(doc["points"], dtype=np.float64)
        curve = prune(
            RbCurve(points[:, 0], points[:, 1], float(doc["mean_rate"]), stage, config.name),
            segments,
        )
        curves[stage] = curve.scaled(safety_margin) if safety_margin != 1.0 else curve
    largest = (
        float(characterisation["largest_read_bytes"]),
        float(characterisation["largest_write_bytes"]),
    )
    return TenantCurves(config.name, config.slo, curves, largest)


def largest_requests(trace: Trace) -> tuple[float, float]:
    """The largest read and the largest write of ``trace`` in bytes (0 when it has none)."""
    op = np.asarray(trace.op)
    size = np.asarray(trace.size, dtype=np.float64)
    reads, writes = size[op == Op.READ], size[op != Op.READ]
    return (float(reads.max()) if reads.size else 0.0, float(writes.max()) if writes.size else 0.0)


def characterize_all(
    configs: Sequence[Tenant],
    read: Callable[[Tenant], Trace],
    *,
    profile: SsdProfile,
    link_bandwidth_bytes_per_s: float,
    safety_margin: float = 1.0,
    segments: int = DEFAULT_SEGMENTS,
    workers: int = 2,
    progress: Callable[[int], None] | None = None,
) -> list[TenantCurves]:
    """:func:`characterize` for every tenant, ``workers`` at a time (numpy releases the GIL in
    rbGen's array passes), in input order; ``progress(1)`` after each tenant."""

    def one(config: Tenant) -> TenantCurves:
        w = characterize(
            config,
            read(config),
            profile=profile,
            link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s,
            safety_margin=safety_margin,
            segments=segments,
        )
        if progress is not None:
            progress(1)
        return w

    if workers <= 1:
        return [one(c) for c in configs]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, configs))
