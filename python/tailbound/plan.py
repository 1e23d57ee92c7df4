"""The ``Plan``: the hand-off between deciding and doing (see ``docs/architecture.md``).

A plan says, for every tenant, where it runs (server, device, client host and VM), its priority
at each stage, its token-bucket rate limit ``(r, b)`` at each stage and the latency bound the
analysis predicts. The simulator turns a plan into a scenario; enforcers turn it into queue
configuration. It is plain data with a JSON form, read and written by :meth:`Plan.load` and
:meth:`Plan.save` (atomically).

JSON layout (``format`` ``"tailbound-plan"``, ``version`` 1)::

    {"format": "tailbound-plan", "version": 1,
     "policy": "workloadcompactor", "servers_used": 11, "safety_margin": 1.0,
     "stages": ["net_in", "storage", "net_out"],
     "tenants": [
       {"name": "C0", "slo_s": 0.2, "percentile": 0.999,
        "server": "server000", "device": "ssd0",
        "client_host": "client000", "client_vm": "0",
        "priority": {"net_in": 1, "storage": 1, "net_out": 1},
        "stages": {"net_in": {"rate": 0.0123, "bucket": 0.0008,
                              "capacity_bytes_per_s": 125000000.0,
                              "rate_bytes_per_s": 1537500.0, "bucket_bytes": 100000.0}, ...},
        "latency_bound_s": 0.187}],
     "rejected": [], "meta": {...}}

Units: ``rate`` is a utilisation of the stage's queue (0..1], ``bucket`` seconds of work at the
stage (tokens, thesis §2.3.2); network stages also give bytes per second and bytes (utilisation
× the link bandwidth). Priority 0 is the highest. ``client_host``/``client_vm`` may be ``null``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.errors import ConfigError
from tailbound.profiles.jsonio import read_json
from tailbound.stages import STORAGE_PATH, Stage

FORMAT = "tailbound-plan"
VERSION = 1


@dataclass(frozen=True)
class StageLimit:
    """A token bucket at one stage: ``rate`` (utilisation), ``bucket_s`` (seconds of work) and
    the queue's capacity in bytes/s for network stages (``None`` for storage)."""

    rate: float
    bucket_s: float
    capacity_per_s: float | None = None

    def to_json(self) -> dict[str, float]:
        out = {"rate": self.rate, "bucket": self.bucket_s}
        if self.capacity_per_s is not None:
            out["capacity_bytes_per_s"] = self.capacity_per_s
            out["rate_bytes_per_s"] = self.rate * self.capacity_per_s
            out["bucket_bytes"] = self.bucket_s * self.capacity_per_s
        return out


@dataclass(frozen=True)
class TenantPlan:
    """One tenant's placement, priorities, limits and predicted bound."""

    name: str
    slo_s: float
    server: str
    device: str
    priority: dict[Stage, int]
    limits: dict[Stage, StageLimit]
    latency_bound_s: float
    percentile: float = 0.999
    client_host: str | None = None
    client_vm: str | None = None
    #: Further buckets per stage beyond ``limits`` (PriorityMeister's multiple rate limiters:
    #: a request needs room in every bucket of its stage).
    extra_limits: dict[Stage, tuple[StageLimit, ...]] = field(default_factory=dict)

    def buckets(self, stage: Stage) -> list[tuple[float, float]]:
        """Every ``(rate, bucket_s)`` enforced at ``stage``, the primary limit first."""
        limits = (self.limits[stage], *self.extra_limits.get(stage, ()))
        return [(lim.rate, lim.bucket_s) for lim in limits]

    def to_json(self) -> dict[str, Any]:
        stages: dict[str, dict[str, Any]] = {str(s): self.limits[s].to_json() for s in STORAGE_PATH}
        for s, extra in self.extra_limits.items():
            if extra:
                stages[str(s)]["extra"] = [lim.to_json() for lim in extra]
        return {
            "name": self.name,
            "slo_s": self.slo_s,
            "percentile": self.percentile,
            "server": self.server,
            "device": self.device,
            "client_host": self.client_host,
            "client_vm": self.client_vm,
            "priority": {str(s): self.priority[s] for s in STORAGE_PATH},
            "stages": stages,
            "latency_bound_s": self.latency_bound_s,
        }


@dataclass(frozen=True)
class Plan:
    """Every tenant's placement and configuration, as decided by ``policy``."""

    policy: str
    servers_used: int
    tenants: list[TenantPlan]
    rejected: list[str] = field(default_factory=list)
    safety_margin: float = 1.0
    meta: dict[str, Any] = field(default_factory=dict)

    def tenant(self, name: str) -> TenantPlan:
        """The plan of the tenant called ``name``."""
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "policy": self.policy,
            "servers_used": self.servers_used,
            "safety_margin": self.safety_margin,
            "stages": [str(s) for s in STORAGE_PATH],
            "tenants": [t.to_json() for t in self.tenants],
            "rejected": list(self.rejected),
            "meta": self.meta,
        }

    def save(self, path: str | Path) -> None:
        """Write the plan as JSON atomically (temporary file in the same folder, then rename)."""
        write_text_atomic(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read a plan, raising :class:`ConfigError` naming the field at fault."""
        return cls.from_json(read_json(path, what="the plan"), path=str(path))

    @classmethod
    def from_json(cls, document: Any, *, path: str | None = None) -> Plan:
        """Build a plan from its parsed JSON document."""
        reader = _Reader(path)
        if not isinstance(document, dict):
            raise ConfigError(path, "a plan must be a JSON object")
        if document.get("format") != FORMAT or document.get("version") != VERSION:
            raise ConfigError(path, f"expected format {FORMAT!r} version {VERSION}", field="format")
        tenants_doc = reader.get(document, "tenants", list)
        tenants = [reader.tenant(t, f"tenants[{i}]") for i, t in enumerate(tenants_doc)]
        return cls(
            policy=reader.get(document, "policy", str),
            servers_used=reader.get(document, "servers_used", int),
            tenants=tenants,
            rejected=[str(r) for r in reader.get(document, "rejected", list)],
            safety_margin=float(reader.number(document, "safety_margin")),
            meta=dict(document.get("meta") or {}),
        )


class _Reader:
    def __init__(self, path: str | None) -> None:
        self.path = path

    def get(self, doc: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
        value = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(
                self.path, f"expected {kind.__name__}, got {value!r}", field=f"{where}{key}"
            )
        return value

    def number(self, doc: dict[str, Any], key: str, where: str = "") -> float:
        value = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(self.path, f"expected a number, got {value!r}", field=f"{where}{key}")
        return float(value)

    def tenant(self, doc: Any, where: str) -> TenantPlan:
        if not isinstance(doc, dict):
            raise ConfigError(self.path, "expected an object", field=where)
        w = where + "."
        priority_doc = self.get(doc, "priority", dict, w)
        stages_doc = self.get(doc, "stages", dict, w)
        priority = {}
        limits = {}
        extra: dict[Stage, tuple[StageLimit, ...]] = {}
        for stage in STORAGE_PATH:
            p = priority_doc.get(str(stage))
            if not isinstance(p, int) or isinstance(p, bool):
                raise ConfigError(
                    self.path, f"expected an integer, got {p!r}", field=f"{w}priority.{stage}"
                )
            priority[stage] = p
            limit = stages_doc.get(str(stage))
            lw = f"{w}stages.{stage}."
            limits[stage] = self.limit(limit, lw)
            more = limit.get("extra", []) if isinstance(limit, dict) else []
            if not isinstance(more, list):
                raise ConfigError(self.path, f"expected a list, got {more!r}", field=f"{lw}extra")
            if more:
                extra[stage] = tuple(self.limit(m, f"{lw}extra[{i}].") for i, m in enumerate(more))
        host = doc.get("client_host")
        vm = doc.get("client_vm")
        return TenantPlan(
            name=self.get(doc, "name", str, w),
            slo_s=self.number(doc, "slo_s", w),
            percentile=self.number(doc, "percentile", w),
            server=self.get(doc, "server", str, w),
            device=self.get(doc, "device", str, w),
            client_host=host if isinstance(host, str) else None,
            client_vm=vm if isinstance(vm, str) else None,
            priority=priority,
            limits=limits,
            extra_limits=extra,
            latency_bound_s=self.number(doc, "latency_bound_s", w),
        )

    def limit(self, doc: Any, where: str) -> StageLimit:
        rate = self.number(doc, "rate", where)
        bucket = self.number(doc, "bucket", where)
        capacity = None
        if isinstance(doc, dict) and "capacity_bytes_per_s" in doc:
            capacity = self.number(doc, "capacity_bytes_per_s", where)
        return StageLimit(rate, bucket, capacity)
