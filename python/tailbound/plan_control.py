"""The one translation of a :class:`~tailbound.plan.Plan`'s controller into a device's ``control``.

A plan may give its storage stage a controller (:class:`~tailbound.plan.StageControl`, the
plan's ``control.storage``): PSLO's (Li et al., EuroSys 2016; ``docs/pslo.md``), which sets each
controlled tenant's pacing rate and IO depth at the device from its completions. The controller
is defined once, in Rust (``tailbound_core::control::pslo``, configured by
``tailbound_core::sim::control::ControlSpec``); this module is the only place that turns a plan
into its configuration, next to :mod:`tailbound.plan_queues` (the queues' schedulers):

- :func:`control_table` is the simulator scenario's ``devices[i].control`` table (the
  controlled workloads by name, ``docs/simulator.md``), which
  :func:`tailbound.sim.plan.scenario_from_plan` writes into the device it replays;
- :func:`control_config` is the core's ``ControlSpec`` in its serde form (the controlled
  workloads by index), checked by the core with every default written out: what the simulator
  reads from that table, and what :func:`tailbound.enforce.storage.gate_config` writes as the
  gateway configuration's ``control`` (workloads = export indices).

**Who is controlled**: every tenant on the device with a throughput SLO
(:attr:`tailbound.model.Slo.throughput`), with its latency SLO ``slo_s`` at ``percentile`` and
``throughput_iops``; a best-effort tenant (no SLO) is not controlled. A tenant with a latency
SLO but no throughput SLO, a throughput SLO in bytes per second (the controller counts
requests, the paper's unit), or a percentile of 1 (a budget of ``(1 − X)·N`` violations is then
none) is refused, naming the plan's field.

>>> from tailbound.model import Slo
>>> from tailbound.plan import Bound, Plan, StageControl, TenantPlan
>>> from tailbound.stages import STORAGE_PATH, Stage
>>> def tenant(name, slo):
...     return TenantPlan(name, slo, "s0", "ssd0", dict.fromkeys(STORAGE_PATH, 0), {},
...                       Bound(0.3, "pslo", 0.999))
>>> plan = Plan("pslo", 1, [tenant("A", Slo(0.3, 0.999, throughput_iops=150.0)),
...                         tenant("B", None)],
...             control={Stage.STORAGE: StageControl.pslo("LS+T", interval_completions=500)})
>>> table = control_table(plan, "s0.ssd0")
>>> table["policy"], table["interval_completions"], table["slo"]
('LS+T', 500, {'A': {'latency_s': 0.3, 'percentile': 0.999, 'throughput_iops': 150.0}})
>>> control_config(plan, "s0.ssd0", [plan.tenants[1], plan.tenants[0]])["tenants"]
[{'workload': 1, 'latency_s': 0.3, 'percentile': 0.999, 'throughput_iops': 150.0}]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.plan import Plan, TenantPlan, device_name
from tailbound.stages import Stage


def controlled(plan: Plan, device: str, *, path: str | None = None) -> list[TenantPlan]:
    """The tenants of ``plan`` on ``device`` (``<server>.<device>``) its storage controller
    controls, in plan order (module documentation); empty without a controller. A tenant that
    cannot be controlled is a :class:`~tailbound.errors.ConfigError` naming its field in
    ``path``."""
    if Stage.STORAGE not in plan.control:
        return []
    kind = plan.control[Stage.STORAGE].kind
    out = []
    for i, t in enumerate(plan.tenants):
        if t.device is None or device_name(t) != device or t.slo is None:
            continue
        where = f"tenants[{i}]"
        if t.slo.is_graduated:
            raise ConfigError(
                path,
                f"{kind}'s controller keeps one percentile per tenant, not a graduated SLO",
                field=f"{where}.slo_grades",
            )
        if t.slo.throughput_bytes_per_s is not None:
            raise ConfigError(
                path,
                f"{kind}'s controller counts requests: give {t.name}'s throughput SLO as "
                "throughput_iops",
                field=f"{where}.throughput_bytes_per_s",
            )
        if t.slo.throughput_iops is None:
            raise ConfigError(
                path,
                f"missing (the storage stage's {kind} controller needs every tenant of {device} "
                "with an SLO to have a throughput SLO)",
                field=f"{where}.throughput_iops",
            )
        out.append(t)
    return out


def control_table(plan: Plan, device: str, *, path: str | None = None) -> dict[str, Any] | None:
    """The scenario's ``control`` table of ``device`` (``None``: the plan has no controller):
    ``{"kind", "policy", <every parameter>, "slo": {name: {"latency_s", "percentile",
    "throughput_iops"}}}``, checked as :func:`control_config` checks it."""
    if Stage.STORAGE not in plan.control:
        return None
    tenants = controlled(plan, device, path=path)
    control_config(plan, device, tenants, path=path)  # the core's checks, named in the plan
    c = plan.control[Stage.STORAGE]
    slo = {}
    for t in tenants:
        assert t.slo is not None
        slo[t.name] = {
            "latency_s": t.slo.latency_s,
            "percentile": t.slo.percentile,
            "throughput_iops": t.slo.throughput_iops,
        }
    return {**c.to_json(), "slo": slo}


def control_config(
    plan: Plan,
    device: str,
    tenants: Sequence[TenantPlan] | None = None,
    *,
    path: str | None = None,
) -> dict[str, Any] | None:
    """The core's ``ControlSpec`` of ``device`` in its serde form (``None``: the plan has no
    controller): ``{"kind", "policy", <every parameter>, "tenants": [{"workload", "latency_s",
    "percentile", "throughput_iops"}]}``, a controlled tenant's ``workload`` its index in
    ``tenants`` (by default the plan's tenants on the device, in plan order; the gateway's
    export order). A value the core refuses is a :class:`~tailbound.errors.ConfigError` naming
    the plan's field (``tenants[2].percentile``, ``control.storage.threshold``) in ``path``."""
    if Stage.STORAGE not in plan.control:
        return None
    if tenants is None:
        tenants = [t for t in plan.tenants if t.device is not None and device_name(t) == device]
    index = {t.name: i for i, t in enumerate(tenants)}
    chosen = [t for t in controlled(plan, device, path=path) if t.name in index]
    if not chosen:
        raise ConfigError(
            path,
            f"the storage stage has a controller but no tenant of {device} has a throughput SLO",
            field="control.storage",
        )
    specs = []
    for t in chosen:
        assert t.slo is not None
        specs.append(
            {
                "workload": index[t.name],
                "latency_s": t.slo.latency_s,
                "percentile": t.slo.percentile,
                "throughput_iops": t.slo.throughput_iops,
            }
        )
    doc = {**plan.control[Stage.STORAGE].to_json(), "tenants": specs}
    try:
        return dict(json.loads(_core.control_config(json.dumps(doc))))
    except _core.FieldError as e:
        field, message = e.args
        raise ConfigError(
            path, f"device {device}: {message}", field=_plan_field(plan, chosen, field)
        ) from None


def _plan_field(plan: Plan, chosen: Sequence[TenantPlan], field: str) -> str:
    """The plan's field behind the core's (``tenants[0].percentile`` → the plan's index of the
    first controlled tenant; a parameter → ``control.storage.<name>``)."""
    head, _, rest = field.partition(".")
    if head.startswith("tenants[") and rest:
        k = int(head.removeprefix("tenants[").removesuffix("]"))
        i = plan.tenants.index(chosen[k])
        key = {"latency_s": "slo_s"}.get(rest, rest)
        return f"tenants[{i}].{key}"
    return "control.storage" if field == "control" else f"control.storage.{field}"
