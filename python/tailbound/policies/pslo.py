"""The ``pslo`` policy: percentile-latency and throughput SLOs by a controller of each tenant's
rate and IO depth at its device, written as a Plan (Li et al., *PSLO*, EuroSys 2016; issue 26,
``docs/pslo.md``).

PSLO has no queueing model and no admission test: a controller in the IO path sets each
tenant's arrival-rate limit and IO depth from a violation budget it keeps (the Rust core's
``control::pslo``). The policy therefore admits every tenant and writes a Plan that makes the
controller run wherever the plan is enforced or replayed:

- the storage stage carries the controller (the plan's ``control.storage``,
  :class:`~tailbound.plan.StageControl`): the policy (``LS+T``, ``TS+L``, ``L``, ``LS+U``, ``T``
  or ``none``, Table 1) and its parameters — ``N`` completions per decision, ``H`` the forecast's
  threshold (a ratio of service times), ``τ`` and the forecast window in seconds, ``σ``, ``η``,
  ``U``, the largest depth in requests — every one written out (the core's defaults where not
  given);
- each tenant keeps its SLOs: ``slo_s`` at ``percentile`` and ``throughput_iops`` (requests per
  second, the paper's unit); :mod:`tailbound.plan_control` turns them and the controller into
  the simulator's and the gateway's ``control``;
- every queue is FIFO (PSLO's dispatch is first come, first served; the controller's gates in
  front of the device do the rest), the device keeps its profile's limits, and a tenant's
  "bound" is its SLO at its percentile (``analysis`` ``pslo``): a promise ``tailbound verify``
  checks by replaying the plan with the controller running, not a proof.

What a PSLO tenant must give, refused otherwise (:func:`check_tenants`, naming the tenants
file's field): a server and a device, a single latency SLO with a percentile in (0, 1) (the
budget ``(1 − X)·N`` of a percentile of 1 is no violation at all), and a throughput SLO in
requests per second (``throughput_iops``, positive).
"""

from __future__ import annotations

from typing import Any

from tailbound.errors import ConfigError
from tailbound.model import TenantSet
from tailbound.plan import Bound, Discipline, Plan, StageControl, TenantPlan
from tailbound.stages import STORAGE_PATH, Stage

NAME = "pslo"
#: The controller's parameters the policy takes, by their core names, with their units.
PARAMETERS = {
    "interval_completions": "N, completions per decision interval",
    "threshold": "H, the forecast's threshold on the normalised service time (> 1)",
    "window_s": "the forecast's window of mean service time, seconds",
    "enable_s": "τ, seconds a forecast keeps the depth controllers enabled",
    "sigma": "σ, the exploration gain (Eq. 10)",
    "eta": "η, the target's decay (Eq. 12)",
    "raise_at": "U, the normalised slack at which a depth grows (Eq. 14)",
    "max_depth": "the largest depth, requests",
}


def check_tenants(tset: TenantSet) -> None:
    """Raise :class:`ConfigError` naming the first tenant field PSLO cannot use (module
    documentation)."""
    tset.require("server_host", NAME)
    tset.require("device", NAME)
    for i, t in enumerate(tset.tenants):
        where = f"tenants[{i}]"
        if t.slo.is_graduated:
            raise ConfigError(
                tset.path,
                f"tenant {t.name}: {NAME} keeps one percentile per tenant, not a graduated SLO",
                field=f"{where}.slo_grades",
            )
        if not 0 < t.slo.percentile < 1:
            raise ConfigError(
                tset.path,
                f"tenant {t.name}: {NAME} needs a percentile in (0, 1), got {t.slo.percentile} "
                "(its violation budget (1 − X)·N would be zero)",
                field=f"{where}.percentile",
            )
        if t.slo.throughput_bytes_per_s is not None:
            raise ConfigError(
                tset.path,
                f"tenant {t.name}: {NAME}'s controller counts requests: give the throughput "
                "SLO as throughput_iops",
                field=f"{where}.throughput_bytes_per_s",
            )
        if t.slo.throughput_iops is None:
            raise ConfigError(
                tset.path,
                f"missing ({NAME} needs a throughput SLO, requests per second)",
                field=f"{where}.throughput_iops",
            )


class PsloPolicy:
    """PSLO (module documentation) over the tenants of ``tset``, with the controller ``control``."""

    analysis = NAME

    def __init__(self, tset: TenantSet, control: StageControl) -> None:
        self.tset = tset
        self.control = control

    def plan(self, meta: dict[str, Any] | None = None) -> Plan:
        """Every tenant admitted, the storage stage controlled (:func:`check_tenants` first)."""
        check_tenants(self.tset)
        tenants = [
            TenantPlan(
                t.name,
                t.slo,
                t.server or "",
                t.device,
                dict.fromkeys(STORAGE_PATH, 0),
                {},
                Bound(t.slo.latency_s, NAME, t.slo.percentile, {Stage.STORAGE: t.slo.latency_s}),
                client_host=t.client_host,
                client_vm=t.client_vm,
            )
            for t in self.tset.tenants
        ]
        return Plan(
            NAME,
            len({(t.server, t.device) for t in tenants}),
            tenants,
            disciplines=dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
            control={Stage.STORAGE: self.control},
            meta={"pslo_policy": self.control.policy, **(meta or {})},
        )


def pslo(tset: TenantSet, pslo_policy: str = "LS+T", **params: float) -> PsloPolicy:
    """The ``pslo`` admission policy (registry factory): ``pslo_policy`` one of
    ``_core.PSLO_POLICIES`` and the controller's ``params`` (:data:`PARAMETERS`; the core's
    defaults for the others). A parameter out of its domain is a :class:`ValueError`
    ``"<name>: <message>"``; a keyword that is no parameter a :class:`TypeError`."""
    unknown = sorted(set(params) - set(PARAMETERS))
    if unknown:
        raise TypeError(f"{NAME} got unexpected keywords {', '.join(unknown)}")
    return PsloPolicy(tset, StageControl.pslo(pslo_policy, **params))
