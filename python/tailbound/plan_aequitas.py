"""A Plan's Aequitas section: WFQ classes, class SLOs, DSCP marks, the controller, each RPC
tenant's class mix and the prediction — and the one translation of it for enforcers.

Aequitas (Zhang et al., SIGCOMM 2022; ``docs/aequitas.md``, "How a user states it" and "The
Plan") runs RPCs over WFQ classes with an admission controller at the senders. A plan made by
the ``aequitas`` policy (:mod:`tailbound.policies.aequitas`) carries, beside the usual tenants
(whose network stages are scheduled ``wfq`` with the classes' weights), the section::

    "aequitas": {
      "network": {"hosts": 3, "link_rate_bps": 1e11,                     # rpc_network, as given
                  "classes": [{"name": "QoS_h", "weight": 8, "slo_s": 2.5e-5,
                               "slo_unit": "rpc", "percentile": 0.999, "dscp": 46}, ...,
                              {"name": "QoS_l", "weight": 1, "dscp": 0}],
                  "controller": {"alpha": 0.01, "beta": 0.01, "floor": 0.1,
                                 "rules": "paper", "increment_window_s": null}, ...},
      "tenants": {"llm": {"class_mix": {"QoS_h": 0.7, "QoS_l": 0.3},
                          "pattern": "incast", "destination": 2, "load": 0.8, ...}},
      "prediction": {"burst_load": 2.1, "load": 0.8,
                     "offered_share": {"QoS_h": 0.7, ...},    # of the busiest link's traffic
                     "admitted_share": {"QoS_h": 0.49, ...}}} # guaranteed, of the class's RPCs

``network`` and ``tenants`` are the tenants file's ``rpc_network`` and each tenant's ``rpc``
(:mod:`tailbound.rpc_network`), every default written out. ``prediction`` is the policy's
analogue of a bound (:class:`Prediction`): not a worst-case latency but the **guaranteed
admitted share** of each class, from the closed forms (:func:`tailbound.dnc.wfq_delay.
guaranteed_admitted_share`): with traffic reaching the busiest link at ``ρ`` times its rate in
bursts and ``μ`` of it on average, WFQ serves class ``i`` without queueing up to ``φ_i/Σφ ·
μ/ρ`` of the link, so of the ``x_i · μ`` the class offers at least ``min(1, φ_i/Σφ / (ρ ·
x_i))`` can be admitted at its class with its SLO kept; the controller admits about that much
(more when the SLO absorbs some queueing: the paper's Fig. 16, ``docs/results-aequitas.md``).

**The enforcer's view** (:func:`enforcer_view`): the link rate and, per class, ``(name, weight,
dscp)`` — what HTB classes in the weights' proportion and DSCP marks need, nothing else — and
:func:`admission_config`, the controller's configuration by the core ``Config``'s names (what
``_core.AequitasAdmission`` and a live client take).

>>> from tailbound.rpc_network import network_from_json
>>> net = network_from_json({"hosts": 3, "link_rate_bps": 1e8, "classes": [
...     {"name": "h", "weight": 4, "slo_s": 0.002, "slo_unit": "rpc"},
...     {"name": "l", "weight": 1}]}, None, "rpc_network")
>>> sec = AequitasPlan(net, {}, Prediction(2.0, 0.8, {"h": 0.5}, {"h": 0.8}))
>>> view = sec.enforcer_view()
>>> view.link_rate_bps, [tuple(c) for c in view.classes]
(100000000.0, [('h', 4.0, 46), ('l', 1.0, 0)])
>>> sec.admission_config()["latency_target_s"], sec.admission_config()["per_mtu"]
([0.002], False)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from tailbound.errors import ConfigError
from tailbound.rpc_network import RpcNetwork, RpcTraffic, network_from_json, traffic_from_json

if TYPE_CHECKING:
    from tailbound.plan import Plan

_KEYS = frozenset({"network", "tenants", "prediction"})
_PREDICTION_KEYS = frozenset({"burst_load", "load", "offered_share", "admitted_share"})


class EnforcedClass(NamedTuple):
    """One WFQ class as an enforcer needs it: its ``name``, WFQ ``weight`` (HTB's guaranteed
    rate is ``weight/Σweight`` of the link, its ceiling the link) and the ``dscp`` code point
    (0–63) its packets carry."""

    name: str
    weight: float
    dscp: int


@dataclass(frozen=True)
class EnforcerView:
    """What a network enforcer applies from an Aequitas plan: the link rate (bits per second)
    and the classes, highest first (:func:`enforcer_view`)."""

    link_rate_bps: float
    classes: tuple[EnforcedClass, ...]


@dataclass(frozen=True)
class Prediction:
    """The ``aequitas`` policy's prediction (module documentation): ``burst_load`` ``ρ`` and
    ``load`` ``μ`` of the busiest link (fractions of its rate), and per class above the lowest,
    by name, ``offered_share`` (of that link's traffic, the class's share ``x_i``) and
    ``admitted_share`` (of the class's RPCs, the share guaranteed to run at the class, in
    (0, 1])."""

    burst_load: float
    load: float
    admitted_share: Mapping[str, float]
    offered_share: Mapping[str, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "burst_load": self.burst_load,
            "load": self.load,
            "offered_share": dict(self.offered_share),
            "admitted_share": dict(self.admitted_share),
        }


@dataclass(frozen=True)
class AequitasPlan:
    """A plan's ``aequitas`` section (module documentation): the ``network`` with its classes
    and controller, each RPC tenant's traffic by name, and the :class:`Prediction`."""

    network: RpcNetwork
    tenants: Mapping[str, RpcTraffic]
    prediction: Prediction

    def enforcer_view(self) -> EnforcerView:
        """The link rate and ``(name, weight, dscp)`` per class, highest first."""
        return EnforcerView(
            self.network.link_rate_bps,
            tuple(EnforcedClass(c.name, c.weight, c.dscp) for c in self.network.classes),
        )

    def admission_config(self) -> dict[str, Any]:
        """The controller's configuration by the core ``Config``'s names (``latency_target_s``,
        ``target_percentile``, ``increment_window_s``, ``alpha``, ``beta``, ``floor``,
        ``per_mtu``, ``rules``; ``increment_window_s`` absent when derived): the keyword
        arguments of ``_core.AequitasAdmission`` after its targets, and the netsim's
        ``admission``."""
        controlled = self.network.classes[:-1]
        c = self.network.controller
        out: dict[str, Any] = {
            "latency_target_s": [k.slo_s for k in controlled],
            "target_percentile": [k.percentile for k in controlled],
            "alpha": c.alpha,
            "beta": c.beta,
            "floor": c.floor,
            "per_mtu": self.network.slo_unit == "mtu",
            "rules": c.rules,
        }
        if c.increment_window_s is not None:
            out["increment_window_s"] = list(c.increment_window_s)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "network": self.network.to_json(),
            "tenants": {name: t.to_json() for name, t in self.tenants.items()},
            "prediction": self.prediction.to_json(),
        }


def enforcer_view(plan: Plan) -> EnforcerView:
    """The enforcer's view of ``plan``'s Aequitas section (:meth:`AequitasPlan.enforcer_view`);
    a plan without one is a :class:`ConfigError` naming the field ``aequitas``."""
    if plan.aequitas is None:
        raise ConfigError(
            None, f"missing (a plan of {plan.policy!r} has no Aequitas classes)", field="aequitas"
        )
    return plan.aequitas.enforcer_view()


def aequitas_from_json(doc: Any, tenant_names: list[str], path: str | Path | None) -> AequitasPlan:
    """Read a plan's ``aequitas`` section, every field checked as the tenants file's
    (:mod:`tailbound.rpc_network`) and named under ``aequitas.`` (``aequitas.network.classes[1]
    .weight``); every tenant of the section must be one of the plan's ``tenant_names``."""
    if not isinstance(doc, dict):
        raise ConfigError(path, f"expected an object, got {doc!r}", field="aequitas")
    unknown = sorted(str(k) for k in doc if k not in _KEYS)
    if unknown:
        raise ConfigError(
            path, f"unknown key (known: {', '.join(sorted(_KEYS))})", field=f"aequitas.{unknown[0]}"
        )
    network = network_from_json(doc.get("network"), path, "aequitas.network")
    tenants_doc = doc.get("tenants")
    if not isinstance(tenants_doc, dict):
        raise ConfigError(
            path, f"expected an object, got {tenants_doc!r}", field="aequitas.tenants"
        )
    tenants = {}
    for name, value in tenants_doc.items():
        where = f"aequitas.tenants.{name}"
        if name not in tenant_names:
            raise ConfigError(path, "no tenant of the plan has this name", field=where)
        tenants[str(name)] = traffic_from_json(value, network, path, where)
    return AequitasPlan(network, tenants, _prediction(doc.get("prediction"), network, path))


def _prediction(doc: Any, network: RpcNetwork, path: str | Path | None) -> Prediction:
    where = "aequitas.prediction"
    if not isinstance(doc, dict):
        raise ConfigError(path, f"expected an object, got {doc!r}", field=where)
    unknown = sorted(str(k) for k in doc if k not in _PREDICTION_KEYS)
    if unknown:
        raise ConfigError(path, "unknown key", field=f"{where}.{unknown[0]}")
    rho: Any = doc.get("burst_load")
    mu: Any = doc.get("load")
    if not _number(rho) or float(rho) < 1.0:
        raise ConfigError(path, f"expected a number >= 1, got {rho!r}", field=f"{where}.burst_load")
    if not _number(mu) or not 0 < float(mu) <= 1:
        raise ConfigError(path, f"expected a number in (0, 1], got {mu!r}", field=f"{where}.load")
    controlled = [c.name for c in network.classes[:-1]]
    shares = {}
    for key, low_open in (("admitted_share", True), ("offered_share", False)):
        part = doc.get(key)
        if not isinstance(part, dict) or set(part) - set(controlled):
            raise ConfigError(
                path,
                f"expected a share per class of {controlled}, got {part!r}",
                field=f"{where}.{key}",
            )
        for name, value in part.items():
            if not _number(value) or not (value > 0 if low_open else value >= 0) or value > 1:
                raise ConfigError(
                    path,
                    f"expected a share in {'(' if low_open else '['}0, 1], got {value!r}",
                    field=f"{where}.{key}.{name}",
                )
        shares[key] = {str(k): float(v) for k, v in part.items()}
    return Prediction(float(rho), float(mu), shares["admitted_share"], shares["offered_share"])


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
