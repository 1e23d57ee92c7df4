"""The ``Plan``: the one hand-off between deciding and doing (see ``docs/architecture.md``).

Every policy returns a plan; the simulator, :mod:`tailbound.verify`, the experiments and the
enforcers read only the plan. It says, for every admitted tenant, where it runs (server, device,
client host and VM), its priority at each stage, its token buckets ``(r, b)`` at each stage and the
latency the analysis predicts (with the analysis that predicted it); for every rejected tenant, why.
It also says how every queue is scheduled (:class:`Discipline` per stage), the device dispatch rule
to enforce (:class:`DispatchRule`) and the number of priority levels the enforcers offer
(:attr:`Plan.priority_levels`; policies respect it, :meth:`Plan.from_json` checks it).

**The plan owns its naming and priority conventions**: :func:`client_name`, :func:`device_name`
and :func:`stage_queues` name the queues a tenant's stages cross, and :func:`enforcer_level`
turns the plan's levels (0 is the most important, the thesis' convention) into the enforcers'
(larger is more important: the simulator's schedulers, HTB's inverse).

JSON layout (``format`` ``"tailbound-plan"``, ``version`` 3; versions 1 and 2 are read too)::

    {"format": "tailbound-plan", "version": 3,
     "policy": "workloadcompactor", "servers_used": 11, "safety_margin": 1.0,
     "priority_levels": 8,
     "disciplines": {"net_in": {"kind": "priority", "mode": "shaping"}, "storage": {...}, ...},
     "dispatch": {"read_mpl": null, "write_mpl": null, "low_priority_mpl": null},
     "stages": ["net_in", "storage", "net_out"],
     "tenants": [
       {"name": "C0", "slo_s": 0.2, "percentile": 0.999,
        "server": "server000", "device": "ssd0",           # device null: network only
        "client_host": "client000", "client_vm": "0",
        "priority": {"net_in": 1, "storage": 1, "net_out": 1},
        "stages": {"net_in": {"rate": 0.0123, "bucket": 0.0008,   # stages without buckets
                              "capacity_bytes_per_s": 125000000.0, # are left out
                              "rate_bytes_per_s": 1537500.0, "bucket_bytes": 100000.0,
                              "extra": [...]}, ...},
        "latency_bound_s": 0.187,
        "bound": {"analysis": "workloadcompactor", "percentile": 1.0,
                  "stages": {...}, "alone_s": null, "joint_s": null},
        "trace": {"path": "traces/t0.txt", "sha256": "3f1c…", "format": "wc"},
        "slo_grades": [[0.005, 0.9], [0.05, 0.95], [0.5, 1.0]],   # optional: graduated SLO
        "nested": {"storage": [[0.001, 0.1, 0.005], ...]},       # optional: Nested QoS classes
        "throughput_iops": 150.0}],          # optional: throughput SLO (or throughput_bytes_per_s)
     "control": {"storage": {"kind": "pslo", "policy": "LS+T", ...}},  # optional: a controller
     "aequitas": {"network": {...}, "tenants": {...}, "prediction": {...}},  # optional: Aequitas
     "inputs": {"link_bandwidth_bytes_per_s": 125000000.0, "profile": {...}},
     "rejected": [{"name": "C7", "reason": "...", "violated": ["C7"],
                   "latency_bound_s": 0.4, "bound": {...}}],
     "meta": {...}}

Units: ``rate`` is a utilisation of the stage's queue (0..1], ``bucket`` seconds of work at the
stage (tokens, thesis §2.3.2); network stages also give bytes per second and bytes (utilisation
× the link bandwidth). ``latency_bound_s`` is ``null`` when the analysis found no finite bound.

**A plan stands alone** (version 3): ``inputs`` and each tenant's ``trace`` record what it was
planned from (:class:`~tailbound.plan_inputs.PlanInputs`: traces with their SHA-256, the device
profile embedded, the link bandwidth), so its consumers need no tenants file; ``inputs`` is
``null`` (and no tenant has a ``trace``) for a plan built in memory, and in versions 1 and 2.

**Graduated SLOs and Nested QoS classes** (version 3, optional, absent when unused; issue 25):
``slo_grades`` is a tenant's graduated SLO, ``[latency_s, fraction]`` pairs
(:attr:`tailbound.model.Slo.grades`; ``slo_s`` and ``percentile`` are then its first, innermost
pair). ``nested`` gives, per stage, the tenant's nested classes ``[sigma_s, rho, delta_s]``,
innermost first (:class:`NestedClass`): in the plan's units, ``sigma_s`` seconds of work at
the stage, ``rho`` a utilisation of it, ``delta_s`` the class's deadline in seconds, each
non-decreasing outward; the ``nested`` scheduler kind reads them (``docs/nested-qos.md``).

**Throughput SLOs and controllers** (version 3, optional, absent when unused; issue 26): a
tenant's ``throughput_iops`` (requests per second) or ``throughput_bytes_per_s`` (bytes per
second) is its SLO's throughput part (:attr:`tailbound.model.Slo.throughput`; only beside a
latency SLO). ``control`` gives a stage a controller that adjusts its queues from their
completions (:class:`StageControl`; only ``storage``, where PSLO's acts at the device):
``{"kind": "pslo", "policy", "interval_completions", "threshold", "window_s", "enable_s",
"sigma", "eta", "raise_at", "max_depth"}`` — the policy as ``_core.PSLO_POLICIES`` spells it,
``N`` completions per decision, ``H`` a ratio of service times (> 1), the forecast window and
``τ`` in seconds, ``σ``, ``η`` and ``U`` dimensionless, the largest depth in requests
(``docs/pslo.md``). The controlled tenants are the device's tenants with a throughput SLO, their
SLOs their own (``slo_s``, ``percentile``, ``throughput_iops``);
:mod:`tailbound.plan_control` turns this into the simulator's and the gateway's controller.

**Aequitas** (version 3, optional, absent when unused; issue 24): ``aequitas`` holds the WFQ
classes of the network (name, weight, class SLO with its unit — per MTU or per RPC —,
percentile, DSCP), the admission controller's parameters by the core's names, each RPC
tenant's class mix and traffic, and the predicted guaranteed admitted share per class
(:class:`~tailbound.plan_aequitas.AequitasPlan`; ``docs/aequitas.md``); the network stages are
then ``wfq`` with the classes' weights, and ``verify`` replays the plan in the packet-level
network simulator.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.jsonio import read_json, write_json_atomic
from tailbound.model import THROUGHPUT_FIELDS, Slo
from tailbound.plan_aequitas import AequitasPlan, aequitas_from_json
from tailbound.plan_inputs import PlanInputs, read_inputs
from tailbound.stages import NETWORK_PATH, STORAGE_PATH, Stage

FORMAT = "tailbound-plan"
VERSION = 3
#: Priority levels real enforcers offer (HTB has 8 class priorities): the default limit.
PRIORITY_LEVELS = 8
#: Levels every enforcer can give tenants: ``tailbound enforce net`` keeps HTB's last priority for
#: best-effort and demoted traffic, so one fewer than :data:`PRIORITY_LEVELS`.
TENANT_LEVELS = PRIORITY_LEVELS - 1
#: Scheduler kinds a plan may ask for at a stage: the core's, defined once in Rust
#: (``tailbound_core::sched::KINDS``); the simulator and the gateway run each of them from the
#: plan through :mod:`tailbound.plan_queues`.
DISCIPLINE_KINDS: tuple[str, ...] = tuple(_core.SCHEDULER_KINDS)
#: What a priority queue does with traffic over its buckets: wait (``shaping``) or go on below
#: every level (``demotion``, PriorityMeister's enforcer, thesis §2.2.1).
LIMIT_MODES = ("shaping", "demotion")


class NestedClass(NamedTuple):
    """One Nested QoS class of a tenant at a stage (Wang's thesis §3.1, ``(σ_i, ρ_i, δ_i)``):
    the largest part of the tenant's requests that fits a token bucket of size ``sigma_s``
    (seconds of work at the stage) filled at ``rho`` (a utilisation of the stage) is promised
    ``delta_s`` seconds. With ``x`` seconds of work per request, the thesis' ``σ`` requests and
    ``ρ`` IOPS are ``σ · x`` and ``ρ · x``. A tuple, so a queue table carries it as the core's
    ``[sigma_s, rho, delta_s]``."""

    sigma_s: float
    rho: float
    delta_s: float


def check_nested(classes: tuple[NestedClass, ...] | list[NestedClass]) -> None:
    """Raise :class:`ValueError` unless ``classes`` (innermost first) are non-empty, every
    ``σ``, ``ρ``, ``δ`` positive and finite and each non-decreasing outward (the message names
    the class, counted from 1, as the core's ``nested`` kind does).

    >>> check_nested([NestedClass(0.02, 0.1, 0.005), NestedClass(0.01, 0.11, 0.05)])
    Traceback (most recent call last):
    ...
    ValueError: classes must be nested: class 2 has sigma_s 0.01 < 0.02 of class 1
    """
    if not classes:
        raise ValueError("expected at least one class [sigma_s, rho, delta_s]")
    for k, c in enumerate(classes, start=1):
        for name, value in zip(NestedClass._fields, c, strict=True):
            if not _positive(value):
                raise ValueError(f"class {k}: {name} must be positive and finite, got {value!r}")
        if k > 1:
            for name, inner, outer in zip(NestedClass._fields, classes[k - 2], c, strict=True):
                if outer < inner:
                    raise ValueError(
                        f"classes must be nested: class {k} has {name} {outer} < {inner} "
                        f"of class {k - 1}"
                    )


#: Controller kinds a plan's stage may carry (``tailbound_core::sim::control::ControlSpec``).
CONTROL_KINDS = ("pslo",)
#: Stages a controller may act at: PSLO's sets per-tenant limits at a device's dispatcher.
CONTROL_STAGES = (Stage.STORAGE,)


@dataclass(frozen=True)
class StageControl:
    """A controller of a stage's queues (``kind``, :data:`CONTROL_KINDS`): PSLO's (Li et al.,
    EuroSys 2016; ``docs/pslo.md``), ``policy`` one of ``_core.PSLO_POLICIES`` and ``params``
    every parameter of the controller by its core name (``interval_completions`` N,
    ``threshold`` H, ``window_s`` and ``enable_s`` τ in seconds, ``sigma`` σ, ``eta`` η,
    ``raise_at`` U, ``max_depth`` in requests). Build it with :meth:`pslo`, which checks the
    parameters as the core does and writes out its defaults.

    >>> c = StageControl.pslo("LS+T", interval_completions=500)
    >>> c.params["interval_completions"], c.params["threshold"], c.params["enable_s"]
    (500, 2.0, 0.1)
    >>> StageControl.pslo("LS+T", threshold=1.0)
    Traceback (most recent call last):
    ...
    ValueError: threshold: H must be > 1
    """

    kind: str
    policy: str
    params: Mapping[str, float] = field(default_factory=dict, hash=False)

    @classmethod
    def pslo(cls, policy: str, **params: float) -> StageControl:
        """PSLO's controller with ``params`` (the core's defaults for the others); a
        :class:`ValueError` ``"<field>: <message>"`` names a parameter out of its domain."""
        return cls("pslo", policy, dict(params)).filled()

    def filled(self) -> StageControl:
        """This controller checked by the core, every parameter written out."""
        probe = {"workload": 0, "throughput_iops": 1.0}  # the tenants are the plan's
        spec = {"kind": self.kind, "policy": self.policy, **self.params, "tenants": [probe]}
        try:
            doc = json.loads(_core.control_config(json.dumps(spec)))
        except _core.FieldError as e:
            raise ValueError(f"{e.args[0]}: {e.args[1]}") from None
        kind, policy = doc.pop("kind"), doc.pop("policy")
        doc.pop("tenants")
        return StageControl(kind, policy, doc)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "policy": self.policy, **self.params}


@dataclass(frozen=True)
class StageLimit:
    """A token bucket at one stage: ``rate`` (utilisation), ``bucket_s`` (seconds of work) and
    the queue's capacity in bytes/s for network stages (``None`` for storage)."""

    rate: float
    bucket_s: float
    capacity_per_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rate": self.rate, "bucket": self.bucket_s}
        if self.capacity_per_s is not None:
            out["capacity_bytes_per_s"] = self.capacity_per_s
            out["rate_bytes_per_s"] = self.rate * self.capacity_per_s
            out["bucket_bytes"] = self.bucket_s * self.capacity_per_s
        return out


@dataclass(frozen=True)
class Discipline:
    """How the queues of one stage are scheduled: ``kind`` (:data:`DISCIPLINE_KINDS`), for
    strict priority the ``mode`` of its token buckets (:data:`LIMIT_MODES`), and for the kinds
    that serve service classes (``dwrr``: each tenant's class is
    :attr:`TenantPlan.service_class`) the weight of each class by name (``class_weight``; a
    class not listed has weight 1) and ``quantum_s``, the work (seconds) a class of weight 1 may
    send per round (``None``: the scheduler's default, 1 ms). A kind ignores the options it does
    not read (``tailbound_core::sched::SchedulerConfig::from_table``)."""

    kind: str = "priority"
    mode: str = "shaping"
    class_weight: Mapping[str, float] = field(default_factory=dict, hash=False)
    quantum_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in DISCIPLINE_KINDS:
            raise ValueError(f"unknown discipline {self.kind!r} (known: {DISCIPLINE_KINDS})")
        if self.mode not in LIMIT_MODES:
            raise ValueError(f"unknown limit mode {self.mode!r} (known: {LIMIT_MODES})")
        for name, w in self.class_weight.items():
            if not (isinstance(name, str) and _positive(w)):
                raise ValueError(f"class weight {name!r}: expected a positive number, got {w!r}")
        if self.quantum_s is not None and not _positive(self.quantum_s):
            raise ValueError(f"quantum_s: expected a positive number, got {self.quantum_s!r}")

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "mode"}``, and the class options where set (older plans have none)."""
        out: dict[str, Any] = {"kind": self.kind, "mode": self.mode}
        if self.class_weight:
            out["class_weight"] = dict(self.class_weight)
        if self.quantum_s is not None:
            out["quantum_s"] = self.quantum_s
        return out


@dataclass(frozen=True)
class DispatchRule:
    """The device dispatch rule enforcers apply: how many reads and writes may be in service at
    once, how many less important requests may join a more important one in service (thesis
    §2.2.1), and how much work (seconds) of levels below the device's most important one may be
    in service at once (``low_priority_work_s``; one such request is let in when none is), and
    how many requests of one level may be in service at once (``level_mpl``; 1 serves a level
    first come first served while the device still shares among levels, docs/dnc.md).
    ``None`` keeps the device's own limits (its profile's MPLs; no other rule)."""

    read_mpl: int | None = None
    write_mpl: int | None = None
    low_priority_mpl: int | None = None
    low_priority_work_s: float | None = None
    level_mpl: int | None = None

    def to_json(self) -> dict[str, int | float | None]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Bound:
    """A predicted latency and where it came from.

    ``latency_s`` is at ``percentile`` (1 for a worst-case bound; ``inf`` when the analysis found
    no finite bound); ``stages`` splits it by stage when the analysis does (``net_in``,
    ``storage``, ``net_out``); ``alone_s``/``joint_s`` are the measured latencies a prediction was
    floored by (the tenant replayed alone, the tenants replayed together)."""

    latency_s: float
    analysis: str
    percentile: float = 1.0
    stages: Mapping[Stage, float] = field(default_factory=dict)
    alone_s: float | None = None
    joint_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "analysis": self.analysis,
            "percentile": self.percentile,
            "stages": {str(s): _finite(v) for s, v in self.stages.items()},
            "alone_s": _finite(self.alone_s),
            "joint_s": _finite(self.joint_s),
        }


@dataclass(frozen=True)
class TenantPlan:
    """One admitted tenant's placement, priorities, limits and predicted bound.

    A tenant with a ``device`` crosses the three stages of :data:`STORAGE_PATH`; one without
    crosses the network only (:data:`NETWORK_PATH`: a key-value or RPC tenant talking to
    ``server``). A tenant without an SLO (``slo`` ``None``) is best-effort throughput traffic;
    a stage's priority ``None`` is best effort there, below every level. ``limits`` has an entry
    for every stage with token buckets (none: unlimited at that stage); ``extra_limits`` more
    buckets at a stage (PriorityMeister's multiple rate limiters: a request needs room in every
    bucket of its stage).
    """

    name: str
    slo: Slo | None
    server: str
    device: str | None
    priority: Mapping[Stage, int | None]
    limits: Mapping[Stage, StageLimit]
    bound: Bound
    client_host: str | None = None
    client_vm: str | None = None
    extra_limits: Mapping[Stage, tuple[StageLimit, ...]] = field(default_factory=dict)
    #: SFQ weight per stage where the stage's discipline is ``sfq`` (default 1).
    weight: Mapping[Stage, float] = field(default_factory=dict)
    #: EDF relative deadline (s) per stage where the discipline is ``edf`` (default: the SLO).
    deadline_s: Mapping[Stage, float] = field(default_factory=dict)
    #: Service class per stage where the discipline serves classes (``dwrr``; default class
    #: ``"default"``): the tenants file's ``class`` (:attr:`tailbound.model.Tenant.service_class`),
    #: decided per stage.
    service_class: Mapping[Stage, str] = field(default_factory=dict)
    #: Nested QoS classes per stage where the discipline is ``nested`` (innermost first; none:
    #: every request of the tenant is best effort there).
    nested: Mapping[Stage, tuple[NestedClass, ...]] = field(default_factory=dict)

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages the tenant's requests cross, in order."""
        return STORAGE_PATH if self.device is not None else NETWORK_PATH

    @property
    def slo_s(self) -> float:
        """The SLO's latency (s); ``inf`` for best effort."""
        return self.slo.latency_s if self.slo is not None else math.inf

    @property
    def percentile(self) -> float | None:
        return self.slo.percentile if self.slo is not None else None

    @property
    def latency_bound_s(self) -> float:
        """The predicted latency (s) at the bound's percentile."""
        return self.bound.latency_s

    def buckets(self, stage: Stage) -> list[tuple[float, float]]:
        """Every ``(rate, bucket_s)`` enforced at ``stage``, the primary limit first (empty when
        the stage is unlimited)."""
        if stage not in self.limits:
            return []
        limits = (self.limits[stage], *self.extra_limits.get(stage, ()))
        return [(lim.rate, lim.bucket_s) for lim in limits]

    def to_json(self) -> dict[str, Any]:
        stages: dict[str, dict[str, Any]] = {}
        for s in self.stages:
            if s in self.limits:
                stages[str(s)] = self.limits[s].to_json()
                if self.extra_limits.get(s):
                    stages[str(s)]["extra"] = [lim.to_json() for lim in self.extra_limits[s]]
        out: dict[str, Any] = {
            "name": self.name,
            "slo_s": self.slo.latency_s if self.slo is not None else None,
            "percentile": self.slo.percentile if self.slo is not None else None,
            "server": self.server,
            "device": self.device,
            "client_host": self.client_host,
            "client_vm": self.client_vm,
            "priority": {str(s): self.priority[s] for s in self.stages},
            "stages": stages,
            "latency_bound_s": _finite(self.bound.latency_s),
            "bound": self.bound.to_json(),
        }
        if self.weight:
            out["weight"] = {str(s): w for s, w in self.weight.items()}
        if self.deadline_s:
            out["deadline_s"] = {str(s): d for s, d in self.deadline_s.items()}
        if self.service_class:
            out["service_class"] = {str(s): c for s, c in self.service_class.items()}
        if self.slo is not None and self.slo.is_graduated:
            out["slo_grades"] = [list(g) for g in self.slo.grades]
        if self.nested:
            out["nested"] = {str(s): [list(c) for c in cs] for s, cs in self.nested.items()}
        if self.slo is not None and self.slo.throughput is not None:
            value, unit = self.slo.throughput
            out[f"throughput_{unit}"] = value
        return out


@dataclass(frozen=True)
class Rejection:
    """A tenant the policy did not admit: why, the tenants that would have missed their SLOs
    with it (often itself), and the bound that decided, if one was computed."""

    name: str
    reason: str
    violated: tuple[str, ...] = ()
    bound: Bound | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reason": self.reason,
            "violated": list(self.violated),
            "latency_bound_s": None if self.bound is None else _finite(self.bound.latency_s),
            "bound": None if self.bound is None else self.bound.to_json(),
        }


@dataclass(frozen=True)
class Plan:
    """Every tenant's placement and configuration, as decided by ``policy``."""

    policy: str
    servers_used: int
    tenants: list[TenantPlan]
    rejected: list[Rejection] = field(default_factory=list)
    safety_margin: float = 1.0
    meta: dict[str, Any] = field(default_factory=dict)
    disciplines: Mapping[Stage, Discipline] = field(
        default_factory=lambda: dict.fromkeys(STORAGE_PATH, Discipline())
    )
    dispatch: DispatchRule = field(default_factory=DispatchRule)
    priority_levels: int = PRIORITY_LEVELS
    #: What the plan was decided from (traces, profile, link bandwidth); ``None``: not recorded.
    inputs: PlanInputs | None = None
    #: A controller per stage (:class:`StageControl`; only ``storage``), none by default.
    control: Mapping[Stage, StageControl] = field(default_factory=dict)
    #: Aequitas' WFQ classes, class SLOs, DSCP marks, controller and RPC tenants
    #: (:class:`~tailbound.plan_aequitas.AequitasPlan`); ``None``: not an Aequitas plan.
    aequitas: AequitasPlan | None = None
    #: The format version the plan was read from (:data:`VERSION` for a plan made here).
    version: int = field(default=VERSION, compare=False)

    def tenant(self, name: str) -> TenantPlan:
        """The plan of the tenant called ``name``."""
        for t in self.tenants:
            if t.name == name:
                return t
        raise KeyError(name)

    def discipline(self, stage: Stage) -> Discipline:
        """How ``stage``'s queues are scheduled (strict priority with shaping by default)."""
        return self.disciplines.get(stage, Discipline())

    def levels_used(self) -> int:
        """How many distinct priority levels the plan's tenants use (0 if none)."""
        return len({p for t in self.tenants for p in t.priority.values() if p is not None})

    def to_json(self, *, base: str | Path | None = None) -> dict[str, Any]:
        """The JSON document; with ``inputs``, trace paths inside the folder ``base`` (where the
        plan file is) are written relative to it (:meth:`TraceRef.to_json
        <tailbound.plan_inputs.TraceRef.to_json>`), all others absolute."""
        tenants = [t.to_json() for t in self.tenants]
        if self.inputs is not None:
            folder = None if base is None else Path(base)
            for doc in tenants:
                if doc["name"] in self.inputs.characterisations:
                    doc["characterisation"] = self.inputs.characterisations[doc["name"]]
                    continue
                if doc["name"] not in self.inputs.traces:
                    raise ValueError(f"the plan's inputs record no trace of {doc['name']!r}")
                doc["trace"] = self.inputs.traces[doc["name"]].to_json(folder)
        out = {
            "format": FORMAT,
            "version": VERSION,
            "policy": self.policy,
            "servers_used": self.servers_used,
            "safety_margin": self.safety_margin,
            "priority_levels": self.priority_levels,
            "disciplines": {str(s): d.to_json() for s, d in self.disciplines.items()},
            "dispatch": self.dispatch.to_json(),
            "stages": [str(s) for s in STORAGE_PATH],
            "tenants": tenants,
            "rejected": [r.to_json() for r in self.rejected],
            "inputs": None if self.inputs is None else self.inputs.to_json(),
            "meta": self.meta,
        }
        if self.control:
            out["control"] = {str(s): c.to_json() for s, c in self.control.items()}
        if self.aequitas is not None:
            out["aequitas"] = self.aequitas.to_json()
        return out

    def save(self, path: str | Path) -> None:
        """Write the plan as JSON atomically (temporary file in the same folder, then rename);
        trace paths inside the plan's folder are written relative to it."""
        write_json_atomic(path, self.to_json(base=Path(path).absolute().parent))

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        """Read a plan, raising :class:`ConfigError` naming the field at fault."""
        return cls.from_json(read_json(path, what="the plan"), path=str(path))

    @classmethod
    def from_json(cls, document: Any, *, path: str | None = None) -> Plan:
        """Build a plan from its parsed JSON document (version 1, 2 or 3) and check it."""
        reader = _Reader(path)
        if not isinstance(document, dict):
            raise ConfigError(path, "a plan must be a JSON object")
        version = document.get("version")
        if (
            document.get("format") != FORMAT
            or isinstance(version, bool)
            or version not in (1, 2, VERSION)
        ):
            raise ConfigError(
                path, f"expected format {FORMAT!r} version 1, 2 or {VERSION}", field="format"
            )
        reader.known(document, _PLAN_KEYS | (_V3_PLAN_KEYS if version >= 3 else frozenset()), "")
        stages_list = document.get("stages", [])
        if not isinstance(stages_list, list) or not all(
            isinstance(s, str) and s in {str(t) for t in Stage} for s in stages_list
        ):
            raise ConfigError(
                path, f"expected a list of stages, got {stages_list!r}", field="stages"
            )
        meta = document.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise ConfigError(path, f"expected an object, got {meta!r}", field="meta")
        tenants_doc = reader.get(document, "tenants", list)
        tenants = [reader.tenant(t, f"tenants[{i}]", version) for i, t in enumerate(tenants_doc)]
        inputs = read_inputs(document, tenants_doc, path) if version >= 3 else None
        rejected_doc = reader.get(document, "rejected", list)
        plan = cls(
            policy=reader.get(document, "policy", str),
            servers_used=reader.count(document, "servers_used"),
            tenants=tenants,
            rejected=[
                reader.rejection(r, f"rejected[{i}]", version) for i, r in enumerate(rejected_doc)
            ],
            safety_margin=reader.positive(document, "safety_margin"),
            meta=dict(meta or {}),
            disciplines=reader.disciplines(document.get("disciplines", {})),
            dispatch=reader.dispatch(document.get("dispatch", {})),
            priority_levels=(
                reader.get(document, "priority_levels", int) if version >= 2 else PRIORITY_LEVELS
            ),
            inputs=inputs,
            control=reader.control(document.get("control", {})),
            aequitas=(
                None
                if document.get("aequitas") is None
                else aequitas_from_json(document["aequitas"], [t.name for t in tenants], path)
            ),
            version=version,
        )
        plan.check(path)
        return plan

    def check(self, path: str | None = None) -> None:
        """Raise :class:`ConfigError` if the plan cannot be enforced as written: duplicate
        names, an SLO out of range, more priority levels than :attr:`priority_levels`."""
        seen: set[str] = set()
        entries = [("tenants", t.name) for t in self.tenants]
        entries += [("rejected", r.name) for r in self.rejected]
        for i, (where, name) in enumerate(entries):
            if name in seen:
                j = i if where == "tenants" else i - len(self.tenants)
                raise ConfigError(path, f"duplicate tenant {name!r}", field=f"{where}[{j}].name")
            seen.add(name)
        for i, t in enumerate(self.tenants):
            for s, p in t.priority.items():
                if p is not None and not 0 <= p < self.priority_levels:
                    raise ConfigError(
                        path,
                        f"level {p} outside the plan's {self.priority_levels} priority levels",
                        field=f"tenants[{i}].priority.{s}",
                    )
        if self.priority_levels < 1:
            raise ConfigError(path, "must be at least 1", field="priority_levels")


# ------------------------------------------------------------------------------ conventions
def device_name(tenant: TenantPlan) -> str:
    """The queue name of the device ``tenant`` is placed on (device names repeat across servers,
    so the server is part of it)."""
    return f"{tenant.server}.{tenant.device}"


def client_name(tenant: TenantPlan) -> str:
    """The client host ``tenant`` runs on: the plan's, else a host of its own."""
    return tenant.client_host or f"client-{tenant.name}"


def tenant_from_json(document: Any, version: int = VERSION) -> TenantPlan:
    """One entry of a Plan's ``tenants`` (a Plan of ``version``) read and checked as
    :meth:`Plan.from_json` reads it, :class:`ConfigError` naming ``tenants[0].<field>``."""
    return _Reader(None).tenant(document, "tenants[0]", version)


def stage_queues(tenant: TenantPlan) -> dict[Stage, tuple[str, ...]]:
    """The queues each of ``tenant``'s stages crosses, in order: ``net_in`` the client's egress
    and the server's ingress, ``storage`` the device, ``net_out`` the server's egress and the
    client's ingress. Buckets apply at a stage's first queue (the sender shapes, thesis §2.2.2);
    the stage's priority at all of them."""
    client, server = client_name(tenant), tenant.server
    queues = {
        Stage.NET_IN: (f"{client}.egress", f"{server}.ingress"),
        Stage.STORAGE: (device_name(tenant),),
        Stage.NET_OUT: (f"{server}.egress", f"{client}.ingress"),
    }
    return {s: queues[s] for s in tenant.stages}


def enforcer_level(level: int | None, levels: int) -> int:
    """A plan level (0 most important) as an enforcer level (larger more important), for a plan
    of ``levels`` levels: ``levels − level``, so every level stays above 0, the level of
    best-effort traffic (``None``)."""
    return 0 if level is None else levels - level


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _positive(x: Any) -> bool:
    """Whether ``x`` is a finite number > 0 (not a boolean)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0


# ------------------------------------------------------------------------------ reading
class _Reader:
    def __init__(self, path: str | None) -> None:
        self.path = path

    def error(self, message: str, field: str) -> ConfigError:
        return ConfigError(self.path, message, field=field)

    def get(self, doc: Any, key: str, kind: type, where: str = "") -> Any:
        value = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(f"expected {kind.__name__}, got {value!r}", f"{where}{key}")
        return value

    def known(self, doc: Any, keys: frozenset[str], where: str) -> None:
        """Refuse a key the format does not know (a misspelt key must not be ignored)."""
        unknown = sorted(str(k) for k in doc if k not in keys) if isinstance(doc, dict) else []
        if unknown:
            raise self.error(f"unknown key (known: {', '.join(sorted(keys))})", where + unknown[0])

    def number(
        self, doc: Any, key: str, where: str = "", *, nullable: bool = False, low: float = 0.0
    ) -> float:
        """A finite number >= ``low`` (``nullable``: ``null`` is infinity, "no bound")."""
        value = doc.get(key) if isinstance(doc, dict) else None
        if value is None and nullable:
            return math.inf
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"expected a number, got {value!r}", f"{where}{key}")
        if not (math.isfinite(value) and value >= low):
            raise self.error(f"expected a finite number >= {low:g}, got {value!r}", f"{where}{key}")
        return float(value)

    def positive(self, doc: Any, key: str, where: str = "") -> float:
        value = self.number(doc, key, where)
        if not value > 0:
            raise self.error(f"expected a positive number, got {value!r}", f"{where}{key}")
        return value

    def count(self, doc: Any, key: str) -> int:
        value = self.get(doc, key, int)
        if value < 0:
            raise self.error(f"expected a count >= 0, got {value!r}", key)
        return int(value)

    def optional(self, doc: Any, key: str, where: str) -> float | None:
        value = doc.get(key) if isinstance(doc, dict) else None
        return None if value is None else self.number(doc, key, where)

    def name(self, doc: Any, key: str, where: str) -> str | None:
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise self.error(f"expected a string or null, got {value!r}", f"{where}{key}")
        return value

    def slo(self, doc: Any, where: str) -> Slo | None:
        """The tenant's SLO: latency and percentile, graduated grades, throughput."""
        slo = self.latency_slo(doc, where)
        given = [key for key in THROUGHPUT_FIELDS if key in doc]
        if not given:
            return slo
        if slo is None:
            raise self.error(
                "a throughput SLO needs a latency SLO (slo_s, percentile)", f"{where}{given[0]}"
            )
        if len(given) > 1:
            raise self.error(
                "give throughput_iops or throughput_bytes_per_s, not both", f"{where}{given[1]}"
            )
        value = self.positive(doc, given[0], where)
        return slo.with_throughput((value, given[0].removeprefix("throughput_")))

    def control(self, doc: Any) -> dict[Stage, StageControl]:
        """The plan's controllers per stage (:class:`StageControl`), checked by the core."""
        out = {}
        for stage, value, where in self.stages(doc, "control"):
            if stage not in CONTROL_STAGES:
                raise self.error(
                    f"a controller acts at {', '.join(map(str, CONTROL_STAGES))} only", where
                )
            if not isinstance(value, dict):
                raise self.error(f"expected an object, got {value!r}", where)
            kind = value.get("kind")
            if kind not in CONTROL_KINDS:
                raise self.error(f"expected one of {CONTROL_KINDS}, got {kind!r}", f"{where}.kind")
            policy = value.get("policy")
            if not isinstance(policy, str):
                raise self.error(f"expected a policy name, got {policy!r}", f"{where}.policy")
            params = {k: v for k, v in value.items() if k not in ("kind", "policy")}
            for k, v in params.items():
                if k == "tenants":  # the plan's tenants are the controlled ones
                    raise self.error("unknown key (the tenants are the plan's)", f"{where}.{k}")
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise self.error(f"expected a finite number, got {v!r}", f"{where}.{k}")
            try:
                out[stage] = StageControl(kind, policy, params).filled()
            except ValueError as e:
                name, _, message = str(e).partition(": ")
                at = where if name == "control" else f"{where}.{name}"  # serde: no field
                raise self.error(message, at) from None
        return out

    def latency_slo(self, doc: Any, where: str) -> Slo | None:
        if doc.get("slo_s") is None and doc.get("percentile") is None:
            if "slo_grades" in doc:
                raise self.error("a graduated SLO needs slo_s and percentile", f"{where}slo_s")
            return None  # best effort
        latency = self.number(doc, "slo_s", where, low=-math.inf)
        percentile = self.number(doc, "percentile", where, low=-math.inf)
        try:
            slo = Slo(latency, percentile)
        except ValueError as e:
            key = "slo_s" if "latency" in str(e) else "percentile"
            raise self.error(str(e), f"{where}{key}") from None
        if "slo_grades" not in doc:
            return slo
        graded = self.grades(doc["slo_grades"], f"{where}slo_grades")
        if graded.pairs[0] != (latency, percentile):
            raise self.error(
                f"the first grade {list(graded.pairs[0])} must be slo_s and percentile "
                f"[{latency}, {percentile}]",
                f"{where}slo_grades[0]",
            )
        return graded

    def grades(self, doc: Any, where: str) -> Slo:
        """A graduated SLO's ``[latency_s, fraction]`` pairs (:meth:`Slo.graduated`)."""
        if not isinstance(doc, list) or not doc:
            raise self.error(f"expected a list of [latency_s, fraction], got {doc!r}", where)
        pairs = [
            self.numbers(p, 2, "[latency_s, fraction]", f"{where}[{i}]") for i, p in enumerate(doc)
        ]
        try:
            return Slo.graduated((p[0], p[1]) for p in pairs)
        except ValueError as e:
            index, _, message = str(e).partition(": ")
            if not index.startswith("grade "):
                raise self.error(str(e), where) from None
            raise self.error(message, f"{where}[{index.removeprefix('grade ')}]") from None

    def numbers(self, doc: Any, n: int, what: str, where: str) -> list[float]:
        """A list of ``n`` finite numbers."""
        if not (
            isinstance(doc, list)
            and len(doc) == n
            and all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                for x in doc
            )
        ):
            raise self.error(f"expected {what} (finite numbers), got {doc!r}", where)
        return [float(x) for x in doc]

    def nested(self, doc: Any, where: str) -> dict[Stage, tuple[NestedClass, ...]]:
        """Nested QoS classes per stage, each ``[sigma_s, rho, delta_s]`` (:func:`check_nested`)."""
        out = {}
        for stage, value, w in self.stages(doc, where):
            if not isinstance(value, list):
                raise self.error(f"expected a list of [sigma_s, rho, delta_s], got {value!r}", w)
            classes = tuple(
                NestedClass(*self.numbers(c, 3, "[sigma_s, rho, delta_s]", f"{w}[{i}]"))
                for i, c in enumerate(value)
            )
            try:
                check_nested(classes)
            except ValueError as e:
                raise self.error(str(e), w) from None
            out[stage] = classes
        return out

    def tenant(self, doc: Any, where: str, version: int) -> TenantPlan:
        if not isinstance(doc, dict):
            raise self.error("expected an object", where)
        w = where + "."
        self.known(doc, _TENANT_KEYS | (_V3_TENANT_KEYS if version >= 3 else frozenset()), w)
        device = self.get(doc, "device", str, w) if version == 1 else self.name(doc, "device", w)
        stages = STORAGE_PATH if device is not None else NETWORK_PATH
        priority_doc = self.get(doc, "priority", dict, w)
        stages_doc = self.get(doc, "stages", dict, w)
        on_path = frozenset(str(s) for s in stages)
        self.known(priority_doc, on_path, f"{w}priority.")
        self.known(stages_doc, on_path, f"{w}stages.")
        priority: dict[Stage, int | None] = {}
        limits: dict[Stage, StageLimit] = {}
        extra: dict[Stage, tuple[StageLimit, ...]] = {}
        for stage in stages:
            p = priority_doc.get(str(stage), "missing")
            if (p is not None or version == 1) and (not isinstance(p, int) or isinstance(p, bool)):
                raise self.error(
                    f"expected an integer or null (best effort), got {p!r}", f"{w}priority.{stage}"
                )
            priority[stage] = p
            limit = stages_doc.get(str(stage))
            lw = f"{w}stages.{stage}."
            if limit is None and version >= 2:
                continue
            limits[stage] = self.limit(limit, lw)
            more = limit.get("extra", []) if isinstance(limit, dict) else []
            if not isinstance(more, list):
                raise self.error(f"expected a list, got {more!r}", f"{lw}extra")
            if more:
                extra[stage] = tuple(self.limit(m, f"{lw}extra[{i}].") for i, m in enumerate(more))
        slo = self.slo(doc, w)
        latency = self.number(doc, "latency_bound_s", w, nullable=version >= 2)
        return TenantPlan(
            name=self.get(doc, "name", str, w),
            slo=slo,
            server=self.get(doc, "server", str, w),
            device=device,
            client_host=self.name(doc, "client_host", w),
            client_vm=self.name(doc, "client_vm", w),
            priority=priority,
            limits=limits,
            extra_limits=extra,
            bound=self.bound(doc.get("bound"), latency, f"{w}bound.", policy_default=""),
            weight=self.per_stage(doc.get("weight", {}), f"{w}weight"),
            deadline_s=self.per_stage(doc.get("deadline_s", {}), f"{w}deadline_s"),
            service_class=self.per_stage_names(doc.get("service_class", {}), f"{w}service_class"),
            nested=self.nested(doc.get("nested", {}), f"{w}nested"),
        )

    def bound(self, doc: Any, latency: float, where: str, *, policy_default: str) -> Bound:
        if doc is None:
            return Bound(latency, policy_default)
        if not isinstance(doc, dict):
            raise self.error(f"expected an object, got {doc!r}", where.rstrip("."))
        self.known(doc, _BOUND_KEYS, where)
        stages_doc = doc.get("stages", {})
        stages = {}
        for stage, _, _ in self.stages(stages_doc, f"{where}stages"):
            stages[stage] = self.number(stages_doc, stage.value, f"{where}stages.", nullable=True)
        return Bound(
            latency_s=latency,
            analysis=self.get(doc, "analysis", str, where),
            percentile=self.percentile(doc, where),
            stages=stages,
            alone_s=self.optional(doc, "alone_s", where),
            joint_s=self.optional(doc, "joint_s", where),
        )

    def percentile(self, doc: Any, where: str) -> float:
        value = self.number(doc, "percentile", where)
        if not 0 < value <= 1:
            raise self.error(f"expected a number in (0, 1], got {value!r}", f"{where}percentile")
        return value

    def per_stage(self, doc: Any, where: str) -> dict[Stage, float]:
        out = {}
        for stage, _, w in self.stages(doc, where):
            value = self.number(doc, stage.value, f"{where}.")
            if not (value > 0 and math.isfinite(value)):
                raise self.error(f"expected a positive number, got {value}", w)
            out[stage] = value
        return out

    def per_stage_names(self, doc: Any, where: str) -> dict[Stage, str]:
        out = {}
        for stage, value, w in self.stages(doc, where):
            if not isinstance(value, str) or not value:
                raise self.error(f"expected a name, got {value!r}", w)
            out[stage] = value
        return out

    def stages(self, doc: Any, where: str) -> Iterator[tuple[Stage, Any, str]]:
        """``doc``'s entries keyed by stage name, in order: ``(stage, value, where.key)``.
        ``doc`` not an object is an error at ``where``, a key that names no stage one at
        ``where.key`` (raised when the iteration reaches it, after the entries before it)."""
        if not isinstance(doc, dict):
            raise self.error(f"expected an object, got {doc!r}", where)
        for key, value in doc.items():
            try:
                stage = Stage(key)
            except ValueError:
                raise self.error("unknown stage", f"{where}.{key}") from None
            yield stage, value, f"{where}.{key}"

    def rejection(self, doc: Any, where: str, version: int) -> Rejection:
        if isinstance(doc, str) and version == 1:  # version 1: names only
            return Rejection(doc, "not placed")
        if not isinstance(doc, dict):
            raise self.error("expected an object", where)
        w = where + "."
        self.known(doc, _REJECTION_KEYS, w)
        violated = doc.get("violated", [])
        if not isinstance(violated, list) or not all(isinstance(v, str) for v in violated):
            raise self.error(f"expected a list of names, got {violated!r}", f"{w}violated")
        bound = None
        if doc.get("bound") is not None:
            latency = self.number(doc, "latency_bound_s", w, nullable=True)
            bound = self.bound(doc["bound"], latency, f"{w}bound.", policy_default="")
        return Rejection(
            name=self.get(doc, "name", str, w),
            reason=self.get(doc, "reason", str, w),
            violated=tuple(violated),
            bound=bound,
        )

    def disciplines(self, doc: Any) -> dict[Stage, Discipline]:
        out = dict.fromkeys(STORAGE_PATH, Discipline())
        for stage, value, where in self.stages(doc, "disciplines"):
            if not isinstance(value, dict):
                raise self.error(f"expected an object, got {value!r}", where)
            self.known(value, _DISCIPLINE_KEYS, where + ".")
            class_weight = value.get("class_weight", {})
            if not isinstance(class_weight, dict):
                raise self.error(
                    f"expected an object, got {class_weight!r}", f"{where}.class_weight"
                )
            for name in class_weight:
                self.positive(class_weight, name, f"{where}.class_weight.")
            quantum = (
                None if "quantum_s" not in value else self.positive(value, "quantum_s", where + ".")
            )
            try:
                out[stage] = Discipline(
                    str(value.get("kind", "priority")),
                    str(value.get("mode", "shaping")),
                    class_weight={str(k): float(v) for k, v in class_weight.items()},
                    quantum_s=quantum,
                )
            except ValueError as e:
                raise self.error(str(e), where) from None
        return out

    def dispatch(self, doc: Any) -> DispatchRule:
        if not isinstance(doc, dict):
            raise self.error(f"expected an object, got {doc!r}", "dispatch")
        unknown = sorted(set(doc) - {f.name for f in dataclasses.fields(DispatchRule)})
        if unknown:
            raise self.error("unknown key", f"dispatch.{unknown[0]}")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(DispatchRule):
            v = doc.get(f.name)
            if f.name.endswith("_s"):
                bad = v is not None and (
                    isinstance(v, bool)
                    or not isinstance(v, int | float)
                    or not (math.isfinite(v) and v >= 0)
                )
                what = "a number of seconds >= 0 or null"
            else:
                low = 1 if f.name == "level_mpl" else 0
                bad = v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < low)
                what = f"a count >= {low} or null"
            if bad:
                raise self.error(f"expected {what}, got {v!r}", f"dispatch.{f.name}")
            values[f.name] = v
        return DispatchRule(**values)

    def limit(self, doc: Any, where: str) -> StageLimit:
        if not isinstance(doc, dict):
            raise self.error(f"expected an object, got {doc!r}", where.rstrip("."))
        self.known(doc, _LIMIT_KEYS, where)
        rate = self.number(doc, "rate", where)
        bucket = self.number(doc, "bucket", where)
        for derived in ("rate_bytes_per_s", "bucket_bytes"):  # written for people; recomputed
            if derived in doc:
                self.number(doc, derived, where)
        capacity = None
        if "capacity_bytes_per_s" in doc:
            capacity = self.positive(doc, "capacity_bytes_per_s", where)
        return StageLimit(rate, bucket, capacity)


_PLAN_KEYS = frozenset(
    {"format", "version", "policy", "servers_used", "safety_margin", "priority_levels"}
    | {"disciplines", "dispatch", "stages", "tenants", "rejected", "meta"}
)
#: Keys version 3 adds to the plan and to a tenant's entry (:mod:`tailbound.plan_inputs`).
_V3_PLAN_KEYS = frozenset({"inputs", "control", "aequitas"})
_V3_TENANT_KEYS = frozenset(
    {"trace", "characterisation", "slo_grades", "nested", *THROUGHPUT_FIELDS}
)
_TENANT_KEYS = frozenset(
    {"name", "slo_s", "percentile", "server", "device", "client_host", "client_vm"}
    | {"priority", "stages", "latency_bound_s", "bound", "weight", "deadline_s", "service_class"}
)
_DISCIPLINE_KEYS = frozenset({"kind", "mode", "class_weight", "quantum_s"})
_BOUND_KEYS = frozenset({"analysis", "percentile", "stages", "alone_s", "joint_s"})
_REJECTION_KEYS = frozenset({"name", "reason", "violated", "latency_bound_s", "bound"})
_LIMIT_KEYS = frozenset(
    {"rate", "bucket", "capacity_bytes_per_s", "rate_bytes_per_s", "bucket_bytes", "extra"}
)
