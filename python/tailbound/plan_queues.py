"""The one translation of a :class:`~tailbound.plan.Plan` into the schedulers of its queues.

A scheduler kind is defined once, in Rust: ``tailbound_core::sched::SchedulerConfig`` lists the
kinds (:data:`tailbound.plan.DISCIPLINE_KINDS` is its ``KINDS``), reads a *queue table* — the
kind, its options, and per-workload settings keyed by workload name — filling every default, and
is the serde form the simulator and the storage gateway build their scheduler from. This module
is the only place that turns a plan into queue tables, with no branch per kind:

- every queue a tenant's stages cross (:func:`~tailbound.plan.stage_queues`) gets its stage's
  discipline: ``kind``, ``mode`` (the limit mode of strict priority; ``mode`` given here
  overrides the plan's at every queue) and the class options ``class_weight`` and
  ``quantum_s`` where the plan sets them;
- per tenant, **every** per-stage parameter the plan has, whatever the kind: ``priority``
  (:func:`~tailbound.plan.enforcer_level`, larger is more important), ``buckets`` (every
  ``(rate, bucket_s)`` of the stage, at its first queue only: the sender shapes, thesis
  §2.2.1–2.2.2), ``weight``, ``deadline_s``, ``class`` and ``nested`` (:attr:`TenantPlan.weight`,
  :attr:`~TenantPlan.deadline_s`, :attr:`~TenantPlan.service_class`, the Nested QoS classes
  :attr:`~TenantPlan.nested` as ``[[sigma_s, rho, delta_s], ...]``) where the tenant has one.

A kind that does nothing useful without a per-tenant setting names it in
:data:`REQUIRED_SETTINGS`: a queue of that kind none of whose tenants gives the setting is
refused (a ``nested`` queue without classes would serve every request as best effort).

A kind reads the fields it needs and ignores the others, and the defaults are the core's: SFQ
weight 1, EDF deadline the tenant's SLO (1 s without one), DWRR class ``"default"`` of weight 1
and a 1 ms quantum. So a new kind in Rust (its module and its registration in
``sched/config.rs``) is at once a discipline a plan may ask for, a queue the simulator replays
(:func:`tailbound.sim.plan.scenario_from_plan` writes these tables into the scenario) and a
scheduler the gateway runs (:func:`tailbound.enforce.storage.gate_config` writes
:func:`scheduler_config` of the device's queue).

>>> from tailbound.model import Slo
>>> from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
>>> from tailbound.stages import STORAGE_PATH, Stage
>>> def tenant(name, level, klass):
...     return TenantPlan(name, Slo(0.05), "s0", "ssd0", dict.fromkeys(STORAGE_PATH, level),
...                       {Stage.STORAGE: StageLimit(0.5, 0.01)}, Bound(0.04, "demo"),
...                       service_class={Stage.STORAGE: klass})
>>> plan = Plan("demo", 1, [tenant("A", 0, "gold"), tenant("B", 1, "bronze")],
...             disciplines={Stage.STORAGE: Discipline("dwrr", class_weight={"gold": 3.0})})
>>> queue_tables(plan)["s0.ssd0"]  # doctest: +NORMALIZE_WHITESPACE
{'kind': 'dwrr', 'mode': 'shaping', 'class_weight': {'gold': 3.0},
 'priority': {'A': 8, 'B': 7}, 'buckets': {'A': [[0.5, 0.01]], 'B': [[0.5, 0.01]]},
 'class': {'A': 'gold', 'B': 'bronze'}}
>>> scheduler_config(plan, "s0.ssd0")  # classes by sorted name: bronze 0, gold 1
{'kind': 'dwrr', 'class': [1, 0], 'weight': [1.0, 3.0], 'quantum': 0.001}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.plan import Plan, TenantPlan, enforcer_level, stage_queues
from tailbound.stages import Stage

#: The per-stage settings of a tenant that a queue table carries as they are, by table field:
#: the :class:`~tailbound.plan.TenantPlan` attribute (a mapping of stage to value) it comes from.
#: ``priority`` and ``buckets`` are converted (:func:`queue_tables`).
TENANT_SETTINGS: dict[str, str] = {
    "weight": "weight",
    "deadline_s": "deadline_s",
    "class": "service_class",
    "nested": "nested",
}
#: Kinds whose queue needs the setting from at least one of its tenants, by table field.
REQUIRED_SETTINGS: dict[str, str] = {"nested": "nested"}
#: Where a queue table's per-tenant field lives in a plan's tenant (for error messages).
_PLAN_FIELD = {"priority": "priority", "buckets": "stages", **TENANT_SETTINGS}


def queue_tables(
    plan: Plan, *, mode: str | None = None, path: str | None = None
) -> dict[str, dict[str, Any]]:
    """The queue table of every queue ``plan``'s tenants cross, by queue name, in the order the
    tenants first reach them (see the module documentation). ``mode`` (``"shaping"`` or
    ``"demotion"``) overrides the plan's limit mode at every queue. A queue missing a setting
    its kind requires (:data:`REQUIRED_SETTINGS`) is a :class:`~tailbound.errors.ConfigError`
    naming the discipline in ``path``."""
    return _Tables(plan, mode, path).tables


def workloads(tenants: Sequence[TenantPlan]) -> list[tuple[str, float | None]]:
    """``(name, SLO latency in seconds or None)`` of each tenant, as the core reads workloads."""
    return [(t.name, None if t.slo is None else t.slo.latency_s) for t in tenants]


def scheduler_config(
    plan: Plan,
    queue: str,
    tenants: Sequence[TenantPlan] | None = None,
    *,
    mode: str | None = None,
    path: str | None = None,
) -> dict[str, Any]:
    """The core's scheduler configuration of ``queue`` (serde form, one entry per workload
    index: ``tenants`` in their order, by default the plan's tenants that cross the queue).

    A setting the core refuses is a :class:`~tailbound.errors.ConfigError` naming the plan's
    field (``tenants[2].weight.storage``, ``disciplines.storage.quantum_s``) in ``path``."""
    t = _Tables(plan, mode, path)
    if queue not in t.tables:
        raise ConfigError(path, f"no tenant of the plan crosses queue {queue!r}")
    if tenants is None:
        tenants = [p for p in plan.tenants if queue in t.members[p.name]]
    try:
        return dict(json.loads(_core.scheduler_config(t.tables[queue], workloads(tenants))))
    except _core.FieldError as e:
        field, message = e.args
        raise ConfigError(
            path, f"queue {queue}: {message}", field=_plan_field(plan, t.stage[queue], field)
        ) from None


class _Tables:
    """The queue tables of a plan, with the stage each queue belongs to and the queues each
    tenant crosses."""

    def __init__(self, plan: Plan, mode: str | None, path: str | None = None) -> None:
        if mode is not None and mode not in ("shaping", "demotion"):
            raise ValueError(f"mode must be 'shaping' or 'demotion', got {mode!r}")
        self.tables: dict[str, dict[str, Any]] = {}
        self.stage: dict[str, Stage] = {}
        self.members: dict[str, set[str]] = {}
        for t in plan.tenants:
            crossed = self.members.setdefault(t.name, set())
            for stage, names in stage_queues(t).items():
                for i, queue in enumerate(names):
                    crossed.add(queue)
                    table = self.tables.get(queue)
                    if table is None:
                        d = plan.discipline(stage)
                        table = {**d.to_json(), "mode": mode or d.mode}
                        self.tables[queue], self.stage[queue] = table, stage
                    level = enforcer_level(t.priority.get(stage), plan.priority_levels)
                    table.setdefault("priority", {})[t.name] = level
                    if i == 0 and t.buckets(stage):
                        table.setdefault("buckets", {})[t.name] = [
                            [r, b] for r, b in t.buckets(stage)
                        ]
                    for key, attribute in TENANT_SETTINGS.items():
                        values = getattr(t, attribute)
                        if stage in values:
                            table.setdefault(key, {})[t.name] = values[stage]
        for queue, table in self.tables.items():
            needed = REQUIRED_SETTINGS.get(table["kind"])
            if needed is not None and needed not in table:
                stage = self.stage[queue]
                who = sorted(name for name, crossed in self.members.items() if queue in crossed)
                raise ConfigError(
                    path,
                    f"queue {queue} is scheduled {table['kind']!r} but none of its tenants "
                    f"({', '.join(who)}) gives {TENANT_SETTINGS[needed]}.{stage}: every request "
                    "would be best effort",
                    field=f"disciplines.{stage}",
                )


def _plan_field(plan: Plan, stage: Stage, field: str) -> str:
    """The plan's field behind a queue table's ``field`` (``weight.B`` → ``tenants[1].weight.
    storage``; a discipline option → ``disciplines.<stage>.<option>``)."""
    key, _, name = field.partition(".")
    if key not in _PLAN_FIELD:
        return f"disciplines.{stage}.{field}"
    index = next((i for i, t in enumerate(plan.tenants) if t.name == name), None)
    who = "tenants" if index is None else f"tenants[{index}]"
    return f"{who}.{_PLAN_FIELD[key]}.{stage}"
