"""The ``aequitas`` policy: RPC classes over WFQ with admission by downgrading, written as a
Plan (Zhang et al., *Aequitas: Admission Control for Performance-Critical RPCs in Datacenters*,
SIGCOMM 2022; issue 24, ``docs/aequitas.md``, "How a user states it").

Aequitas decides admission **per RPC at run time**: a controller at each sender admits an RPC at
its requested class with probability ``p_admit`` (AIMD on the measured RNL) and otherwise
downgrades it to the lowest class; no tenant is ever rejected. The policy therefore admits every
RPC tenant and writes a Plan that makes the classes and the controller run wherever it is
enforced or replayed:

- the network stages are ``wfq`` with the classes' weights (:class:`~tailbound.plan.Discipline`,
  ``class_weight``), and the plan's ``aequitas`` section
  (:class:`~tailbound.plan_aequitas.AequitasPlan`) holds the classes (name, weight, SLO and its
  unit, percentile, DSCP), the controller by the core's names and each tenant's class mix and
  traffic, every default written out;
- the **prediction** (the analogue of a bound, :class:`~tailbound.plan_aequitas.Prediction`) is
  the guaranteed admitted share per class from the closed forms (§4.2, §6.4;
  :func:`tailbound.dnc.wfq_delay.guaranteed_admitted_share`), computed for the busiest link of
  the RPCs the plan replays (:func:`tailbound.sim.aequitas_plan.tenant_rpcs`): its mean load
  ``μ`` (clipped to 1) and burst ``ρ`` (the file's ``burst_load``, or the largest load of any
  window of ``burst_window_s`` at that link — by default the highest class's SLO as a time —,
  at least 1, and at least ``μ``), the class's share
  ``x_i`` of its bytes; the class is guaranteed ``φ_i/Σφ · μ/ρ`` of the link, so at least
  ``min(1, φ_i/Σφ / (ρ · x_i))`` of its RPCs can run at the class with the SLO kept. It is a
  steady-state share with probability in the paper's model, not a worst case: ``verify``
  compares the admitted share of a replay with it (and the 99.9p RNL with the class SLO);
- each tenant's ``bound`` is the SLO of the highest class it asks for (``analysis`` ``aequitas``):
  a promise the replay checks, not a proof.

What an Aequitas tenants file must give, refused otherwise naming the field (exit status 2 from
the CLI): the file's ``rpc_network`` (two or more classes, each with a weight > 0, every class
above the lowest an SLO > 0) and every tenant's ``rpc`` (a class mix of known classes, each share
in (0, 1], summing to 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tailbound.dnc.wfq_delay import guaranteed_admitted_share
from tailbound.errors import ConfigError
from tailbound.model import TenantSet
from tailbound.plan import Bound, Discipline, Plan, TenantPlan
from tailbound.plan_aequitas import AequitasPlan, Prediction
from tailbound.rpc_network import RpcNetwork
from tailbound.sim.aequitas_plan import TenantRpcs, read_rpc_trace, tenant_rpcs
from tailbound.stages import NETWORK_PATH, Stage

NAME = "aequitas"


def check_tenants(tset: TenantSet) -> RpcNetwork:
    """The file's network, every tenant an RPC tenant (module documentation), else a
    :class:`ConfigError` naming the field."""
    if tset.rpc_network is None:
        raise ConfigError(
            tset.path,
            f"missing ({NAME} needs the network its RPC tenants share)",
            field="rpc_network",
        )
    for i, t in enumerate(tset.tenants):
        if t.rpc is None:
            raise ConfigError(
                tset.path,
                f"missing ({NAME} needs every tenant's RPC classes)",
                field=f"tenants[{i}].rpc",
            )
    return tset.rpc_network


def predict(network: RpcNetwork, rpcs: TenantRpcs) -> Prediction:
    """The guaranteed admitted share per class (module documentation) for ``rpcs`` on
    ``network``: at every destination link, over the span of the RPCs reaching it, its load
    ``μ``, burst ``ρ`` and each class's share ``x_i`` of its bytes give ``min(1, φ_i/Σφ · μ/ρ /
    (x_i · μ))``; a class's prediction is its smallest over the links (the most loaded for it),
    and ``burst_load`` and ``load`` are those of the link deciding the highest class's."""
    r = rpcs.rpcs
    weights = [c.weight for c in network.classes]
    controlled = network.classes[:-1]
    window = network.burst_window_s
    if window is None:
        top = network.classes[0]
        assert top.slo_s is not None
        mtus = np.ceil(r.size_bytes / (network.mtu_bytes - network.header_bytes))
        window = top.slo_s * (float(mtus.mean()) if top.slo_unit == "mtu" else 1.0)
    admitted = dict.fromkeys((c.name for c in controlled), 1.0)
    offered = dict.fromkeys((c.name for c in controlled), 0.0)
    deciding: tuple[float, float] | None = None
    for d in np.unique(r.dst):
        at = r.dst == d
        time, size, cls = r.time_s[at], r.size_bytes[at], r.cls[at]
        span = float(time[-1] - time[0])
        if not span > 0:
            continue
        mu = min(1.0, 8.0 * float(size.sum()) / (network.link_rate_bps * span))
        if network.burst_load is not None:
            rho = network.burst_load
        else:
            slot = np.floor((time - time[0]) / window).astype(np.int64)
            peak = float(np.bincount(slot, weights=size).max())
            rho = 8.0 * peak / (network.link_rate_bps * window)
        rho = max(1.0, rho, mu)
        guaranteed = guaranteed_admitted_share(weights, rho, mu)  # fractions of the link
        total = float(size.sum())
        for i, c in enumerate(controlled):
            x = float(size[cls == i].sum()) / total
            if x == 0:
                continue
            share = min(1.0, float(guaranteed[i]) / (x * mu))
            if x > offered[c.name]:
                offered[c.name] = x
            if share < admitted[c.name] or (i == 0 and deciding is None):
                admitted[c.name] = share
                if i == 0:
                    deciding = (rho, mu)
    rho, mu = deciding if deciding is not None else (1.0, 1.0)
    return Prediction(float(rho), float(mu), admitted, offered)


class AequitasPolicy:
    """Aequitas (module documentation) over the RPC tenants of ``tset``."""

    analysis = NAME

    def __init__(self, tset: TenantSet) -> None:
        self.tset = tset

    def plan(self, meta: dict[str, Any] | None = None) -> Plan:
        """Every tenant admitted, the classes, controller and prediction written
        (:func:`check_tenants` first)."""
        network = check_tenants(self.tset)
        traffic = {t.name: t.rpc for t in self.tset.tenants if t.rpc is not None}
        traces = {t.name: read_rpc_trace(t.trace, None, traffic[t.name]) for t in self.tset.tenants}
        prediction = predict(network, tenant_rpcs(network, traffic, traces))
        tenants = []
        for t in self.tset.tenants:
            assert t.rpc is not None
            promised = any(
                c.slo_s is not None and t.rpc.class_mix.get(c.name, 0.0) > 0
                for c in network.classes
            )
            slo = t.slo if promised else None
            tenants.append(
                TenantPlan(
                    t.name,
                    slo,
                    t.server or "",
                    None,
                    dict.fromkeys(NETWORK_PATH, None),
                    {},
                    Bound(
                        slo.latency_s if slo is not None else float("inf"),
                        NAME,
                        slo.percentile if slo is not None else 1.0,
                    ),
                    client_host=t.client_host,
                    client_vm=t.client_vm,
                )
            )
        weights = {c.name: c.weight for c in network.classes}
        return Plan(
            NAME,
            0,
            tenants,
            disciplines={
                Stage.NET_IN: Discipline("wfq", class_weight=weights),
                Stage.STORAGE: Discipline("fifo"),
                Stage.NET_OUT: Discipline("wfq", class_weight=weights),
            },
            aequitas=AequitasPlan(network, traffic, prediction),
            meta=dict(meta or {}),
        )


def aequitas(tset: TenantSet) -> AequitasPolicy:
    """The ``aequitas`` admission policy (registry factory)."""
    return AequitasPolicy(tset)
