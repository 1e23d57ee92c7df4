"""How RPC tenants and the network they share are stated: Aequitas' classes, weights and SLOs.

Aequitas (Zhang et al., *Aequitas: Admission Control for Performance-Critical RPCs in
Datacenters*, SIGCOMM 2022; ``docs/aequitas.md``, "How a user states it") gives RPC priority
classes a tail SLO on their RPC network latency (RNL), over WFQ classes of the network, and keeps
it by admitting RPCs at their class with a probability an AIMD controller adjusts (the rest are
downgraded to the lowest class). Its SLOs belong to **classes**, not to tenants: every RPC of a
class shares its WFQ queue, so they share its promise. Hence two places in the tenants file
(:func:`tailbound.model.load_tenants`):

- the file's ``rpc_network`` (:class:`RpcNetwork`): the network the RPC tenants share — its
  hosts, link rate, the WFQ classes (highest first) with their weights, per-class SLOs and DSCP
  code points, and the controller's parameters (:class:`ControllerParams`, the core ``Config``'s
  names);
- each RPC tenant's ``rpc`` (:class:`RpcTraffic`): the share of its RPCs asking each class (its
  class mix), who sends to whom (all-to-all or an incast), and how its trace becomes RPCs (the
  load the trace is scaled to, bytes per token of an Azure LLM trace). The tenant's ``trace`` is
  its RPC trace: each request one RPC at its time, its size the RPC's bytes (tokens × bytes per
  token for ``azure-llm``).

Units: seconds, bytes, bits per second for ``link_rate_bps`` (the netsim's unit), a class SLO
``slo_s`` in seconds per MTU (``slo_unit`` ``"mtu"``, the paper's size-normalised RNL) or per
whole RPC (``"rpc"``, the authors' configurations with ``normalized_lat: 0``) at ``percentile``;
shares are fractions in (0, 1]. The same JSON objects are the Plan's ``aequitas`` section
(:mod:`tailbound.plan_aequitas`), so what the user wrote is what the enforcer and ``verify`` read.

>>> net = network_from_json({"hosts": 3, "classes": [
...     {"name": "h", "weight": 4, "slo_s": 25e-6, "slo_unit": "rpc"},
...     {"name": "l", "weight": 1}]}, "t.json", "rpc_network")
>>> [(c.name, c.weight, c.dscp) for c in net.classes], net.link_rate_bps
([('h', 4.0, 46), ('l', 1.0, 0)], 100000000000.0)
>>> try:
...     network_from_json({"hosts": 3, "classes": [{"name": "h", "weight": 0, "slo_s": 1e-5},
...         {"name": "l", "weight": 1}]}, "t.json", "rpc_network")
... except ConfigError as e:
...     print(e.field, "|", e.message)
rpc_network.classes[0].weight | expected a number > 0 (the class's WFQ weight), got 0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailbound.errors import ConfigError

#: Units of a class SLO: seconds per MTU of the RPC (the paper's) or seconds per whole RPC.
SLO_UNITS = ("mtu", "rpc")
#: The controller's rule sets (``_core.AequitasAdmission``'s ``rules``, docs/aequitas.md).
RULES = ("paper", "artifact")
#: Traffic patterns of an RPC tenant (:mod:`tailbound.traces.rpc_arrivals`).
PATTERNS = ("all_to_all", "incast")
#: What an Azure LLM request's size counts (``tailbound.traces.rpc_arrivals.azure_llm_rpcs``).
TOKEN_COUNTS = ("context", "generated", "total")
#: DSCP code points given to the classes by rank when the file gives none: EF, AF41, AF31,
#: AF21, AF11 for the classes above the lowest, CS0 (best effort) for the lowest (RFC 4594).
DEFAULT_DSCP = (46, 34, 26, 18, 10)

_CLASS_KEYS = ("name", "weight", "slo_s", "slo_unit", "percentile", "dscp")
_CONTROLLER_KEYS = ("alpha", "beta", "floor", "rules", "increment_window_s")
_NETWORK_KEYS = (
    "hosts",
    "link_rate_bps",
    "classes",
    "controller",
    "burst_load",
    "burst_window_s",
    "buffer_bytes",
    "propagation_s",
    "mtu_bytes",
    "header_bytes",
    "seed",
)
_TRAFFIC_KEYS = (
    "class_mix",
    "pattern",
    "destination",
    "load",
    "bytes_per_token",
    "tokens",
    "onoff",
)
_ONOFF_KEYS = (
    "burst_load",
    "load",
    "burst_rpcs",
    "burst_bytes",
    "bursts_per_on",
    "process",
    "poisson",
    "duration_s",
)
#: How on/off arrivals are generated (:class:`OnOff`): per destination link
#: (``traces.rpc_arrivals.OnOffRpcs``) or per (source, destination) pair as the authors'
#: simulator (``PairOnOffRpcs``).
ONOFF_PROCESSES = ("destination", "pair")


@dataclass(frozen=True)
class RpcClass:
    """A WFQ class of the network: ``name``, its WFQ ``weight`` (> 0), its SLO — the
    ``percentile`` RNL within ``slo_s`` seconds per MTU or per RPC (``slo_unit``); ``None`` for
    the lowest class, best effort, where downgraded RPCs run — and the ``dscp`` code point its
    packets carry (0–63), so an enforcer can classify them."""

    name: str
    weight: float
    slo_s: float | None
    slo_unit: str
    percentile: float
    dscp: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "weight": self.weight}
        if self.slo_s is not None:
            out |= {"slo_s": self.slo_s, "slo_unit": self.slo_unit, "percentile": self.percentile}
        out["dscp"] = self.dscp
        return out


@dataclass(frozen=True)
class ControllerParams:
    """Aequitas' controller by the core ``Config``'s names (``control::aequitas``,
    docs/aequitas.md "Units and parameters"): ``alpha`` the additive increase (a probability),
    ``beta`` the decrease per MTU of a missing RPC, ``floor`` the lowest admit probability,
    ``rules`` ``"paper"`` or ``"artifact"``, ``increment_window_s`` the increase windows in
    seconds, one per class above the lowest (``None``: derived, ``target / (1 − percentile)``,
    the paper's rule). The targets and percentiles are the classes'."""

    alpha: float = 0.01
    beta: float = 0.01
    floor: float = 0.1
    rules: str = "paper"
    increment_window_s: tuple[float, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "beta": self.beta,
            "floor": self.floor,
            "rules": self.rules,
            "increment_window_s": (
                None if self.increment_window_s is None else list(self.increment_window_s)
            ),
        }


@dataclass(frozen=True)
class RpcNetwork:
    """The network RPC tenants share: one big switch of ``hosts`` hosts (numbered from 0), each
    link ``link_rate_bps`` bits per second, WFQ ``classes`` at every port (the highest first;
    the last is the lowest, without an SLO), the ``controller``, and the packet simulator's
    facts ``verify`` replays with (``buffer_bytes`` per port, ``propagation_s`` per link,
    ``mtu_bytes`` and ``header_bytes``; the authors' values by default) and its ``seed``.

    ``burst_load`` is the burst ``ρ`` of the closed forms (traffic reaching a link at ``ρ`` times
    its rate in bursts); ``None``: measured from the traces, the busiest window of
    ``burst_window_s`` at the busiest destination (:mod:`tailbound.policies.aequitas`), by
    default (``None``) the time scale of the tightest SLO: the highest class's ``slo_s`` (per
    RPC) or ``slo_s`` times the mean RPC size in MTUs (per MTU) — the queueing a class must
    absorb within its SLO."""

    hosts: int
    classes: tuple[RpcClass, ...]
    link_rate_bps: float = 100e9
    controller: ControllerParams = field(default_factory=ControllerParams)
    burst_load: float | None = None
    burst_window_s: float | None = None
    buffer_bytes: int = 512 * 1024
    propagation_s: float = 0.2e-6
    mtu_bytes: int = 5120
    header_bytes: int = 40
    seed: int = 0

    def index(self, name: str) -> int:
        """The rank of the class called ``name`` (0 highest)."""
        for i, c in enumerate(self.classes):
            if c.name == name:
                return i
        raise KeyError(name)

    @property
    def slo_unit(self) -> str:
        """The unit every class SLO is in (:data:`SLO_UNITS`; one for the whole network, as the
        core's ``per_mtu``)."""
        return self.classes[0].slo_unit

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": self.hosts,
            "link_rate_bps": self.link_rate_bps,
            "classes": [c.to_json() for c in self.classes],
            "controller": self.controller.to_json(),
            "burst_load": self.burst_load,
            "burst_window_s": self.burst_window_s,
            "buffer_bytes": self.buffer_bytes,
            "propagation_s": self.propagation_s,
            "mtu_bytes": self.mtu_bytes,
            "header_bytes": self.header_bytes,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class OnOff:
    """An RPC tenant's arrivals generated by the on/off process the simulator's experiments use
    (:mod:`tailbound.traces.rpc_arrivals`, docs/aequitas.md "RPC arrivals") instead of its
    trace's times: every destination link of its pattern receives its RPCs at ``burst_load``
    (ρ, a fraction of the network's link rate, may exceed 1) while ON and ``load`` (μ, in
    (0, ρ]) on average; a burst is ``burst_rpcs`` RPCs of one sender (or, with ``burst_bytes``
    given instead, as many RPCs as make that many bytes on average, at least one);
    ``bursts_per_on`` bursts from distinct senders per ON period (``process`` ``"destination"``,
    ``OnOffRpcs``), or every (source, destination) pair on and off by itself (``"pair"``,
    ``PairOnOffRpcs``, the authors' "dynamic load"; ``poisson`` gaps or constant ones). The
    RPCs' sizes are drawn from the trace's sizes (bytes; its empirical distribution), their
    classes from the class mix; ``duration_s`` seconds of them (``None``: the trace's span).
    ``load`` ``None``: the tenant's ``load``."""

    burst_load: float
    load: float | None = None
    burst_rpcs: int | None = 4
    burst_bytes: float | None = None
    bursts_per_on: int = 1
    process: str = "destination"
    poisson: bool = True
    duration_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "burst_load": self.burst_load,
            "load": self.load,
            "burst_rpcs": self.burst_rpcs,
            "burst_bytes": self.burst_bytes,
            "bursts_per_on": self.bursts_per_on,
            "process": self.process,
            "poisson": self.poisson,
            "duration_s": self.duration_s,
        }


@dataclass(frozen=True)
class RpcTraffic:
    """An RPC tenant's traffic: ``class_mix`` the share of its RPCs asking each class (by name,
    each in (0, 1], summing to 1; a class not listed gets none), ``pattern`` ``"all_to_all"``
    (every host of the network sends to every other) or ``"incast"`` (every other host sends to
    ``destination``); each RPC of the trace gets a destination of the pattern and one of its
    senders uniformly, and its class from the mix, seeded. ``load``: the trace's time is scaled
    by one factor so that the mean load per destination is this fraction of a link (``None``:
    the trace's own times); ``bytes_per_token`` and ``tokens`` make an Azure LLM trace's sizes
    bytes (tokens × bytes per token; ignored for traces whose sizes are bytes)."""

    class_mix: Mapping[str, float]
    pattern: str = "all_to_all"
    destination: int | None = None
    load: float | None = None
    bytes_per_token: int = 4
    tokens: str = "context"
    onoff: OnOff | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "class_mix": dict(self.class_mix),
            "pattern": self.pattern,
            "destination": self.destination,
            "load": self.load,
            "bytes_per_token": self.bytes_per_token,
            "tokens": self.tokens,
        }
        if self.onoff is not None:
            out["onoff"] = self.onoff.to_json()
        return out

    @property
    def mean_load(self) -> float | None:
        """The generated arrivals' average load μ (``onoff.load``, else ``load``); ``None``
        without ``onoff``."""
        if self.onoff is None:
            return None
        return self.onoff.load if self.onoff.load is not None else self.load

    def mix(self, network: RpcNetwork) -> tuple[float, ...]:
        """The class mix as one share per class of ``network``, in class order."""
        return tuple(float(self.class_mix.get(c.name, 0.0)) for c in network.classes)


# ------------------------------------------------------------------------------ reading
class _Doc:
    """Typed reads of one JSON object; errors name ``path`` and ``where.key``."""

    def __init__(self, path: str | Path | None, doc: Any, where: str, keys: Iterable[str]) -> None:
        self.path, self.where = path, where
        if not isinstance(doc, dict):
            raise ConfigError(path, f"expected an object, got {_show(doc)}", field=where)
        known = tuple(keys)
        unknown = sorted(str(k) for k in doc if k not in known)
        if unknown:
            raise self.error(unknown[0], f"unknown key (known: {', '.join(known)})")
        self.doc: Mapping[str, Any] = doc

    def at(self, key: str) -> str:
        return f"{self.where}.{key}"

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.path, message, field=self.at(key))

    def given(self, key: str) -> bool:
        return self.doc.get(key) is not None

    def number(
        self,
        key: str,
        *,
        low: float = 0.0,
        open_low: bool = True,
        high: float = math.inf,
        what: str | None = None,
    ) -> float:
        value = self.doc.get(key)
        if value is None:
            raise self.error(key, f"missing (expected {what or _range(low, open_low, high)})")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise self.error(key, f"expected a finite number, got {_show(value)}")
        if (value <= low if open_low else value < low) or value > high:
            raise self.error(
                key, f"expected a number {what or _range(low, open_low, high)}, got {_show(value)}"
            )
        return float(value)

    def integer(self, key: str, low: int, high: int | None = None) -> int:
        value = self.doc.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < low
            or (high is not None and value > high)
        ):
            span = f">= {low}" if high is None else f"in {low}..{high}"
            raise self.error(key, f"expected an integer {span}, got {_show(value)}")
        return int(value)

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.doc.get(key, default)
        if value not in choices:
            raise self.error(key, f"expected one of {', '.join(choices)}, got {_show(value)}")
        return str(value)


def _range(low: float, open_low: bool, high: float) -> str:
    if math.isinf(high):
        return f"{'>' if open_low else '>='} {low:g}"
    return f"in {'(' if open_low else '['}{low:g}, {high:g}]"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def network_from_json(doc: Any, path: str | Path | None, where: str) -> RpcNetwork:
    """The :class:`RpcNetwork` of a tenants file's ``rpc_network`` (or a Plan's
    ``aequitas.network``) at ``where``; every bad field a :class:`ConfigError` naming ``path``
    and the field (``rpc_network.classes[1].weight``): a weight ≤ 0 or missing, an SLO ≤ 0 or
    missing above the lowest class, a percentile outside (0, 1), units differing between
    classes, a DSCP outside 0–63 or repeated, duplicate names, fewer than two classes."""
    f = _Doc(path, doc, where, _NETWORK_KEYS)
    items = f.doc.get("classes")
    if not isinstance(items, list) or len(items) < 2:
        raise f.error(
            "classes",
            f"expected a list of at least two classes (the lowest last), got {_show(items)}",
        )
    classes = []
    for i, item in enumerate(items):
        classes.append(_class(path, item, f.at(f"classes[{i}]"), i, len(items)))
    names = [c.name for c in classes]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise f.error(f"classes[{i}].name", f"duplicate class name {name!r}")
    dscps = [c.dscp for c in classes]
    for i, d in enumerate(dscps):
        if d in dscps[:i]:
            raise f.error(f"classes[{i}].dscp", f"DSCP {d} already marks class {dscps.index(d)}")
    units = {c.slo_unit for c in classes[:-1]}
    if len(units) > 1:
        at = next(i for i, c in enumerate(classes) if c.slo_unit != classes[0].slo_unit)
        raise f.error(
            f"classes[{at}].slo_unit",
            "every class SLO must be in one unit (the "
            "controller compares per MTU or per RPC for the whole network)",
        )
    controller = _controller(
        path, f.doc.get("controller", {}), f.at("controller"), len(classes) - 1
    )
    return RpcNetwork(
        hosts=f.integer("hosts", 2),
        classes=tuple(classes),
        link_rate_bps=f.number("link_rate_bps") if f.given("link_rate_bps") else 100e9,
        controller=controller,
        burst_load=f.number("burst_load", low=1.0, open_low=False)
        if f.given("burst_load")
        else None,
        burst_window_s=f.number("burst_window_s") if f.given("burst_window_s") else None,
        buffer_bytes=f.integer("buffer_bytes", 1) if f.given("buffer_bytes") else 512 * 1024,
        propagation_s=f.number("propagation_s", open_low=False)
        if f.given("propagation_s")
        else 0.2e-6,
        mtu_bytes=f.integer("mtu_bytes", 2) if f.given("mtu_bytes") else 5120,
        header_bytes=f.integer("header_bytes", 0) if f.given("header_bytes") else 40,
        seed=f.integer("seed", 0) if f.given("seed") else 0,
    )


def _class(path: str | Path | None, doc: Any, where: str, rank: int, n: int) -> RpcClass:
    f = _Doc(path, doc, where, _CLASS_KEYS)
    name = f.doc.get("name")
    if not isinstance(name, str) or not name:
        raise f.error("name", f"expected a non-empty string, got {_show(name)}")
    weight = f.number("weight", what="> 0 (the class's WFQ weight)")
    lowest = rank == n - 1
    if lowest:
        for key in ("slo_s", "percentile", "slo_unit"):
            if key in f.doc:
                raise f.error(
                    key,
                    "the lowest class is best effort (downgraded RPCs run there): it has no SLO",
                )
        slo, percentile = None, 0.999
    else:
        slo = f.number("slo_s", what="> 0 (seconds per MTU or per RPC, slo_unit)")
        percentile = f.number("percentile", high=1.0) if f.given("percentile") else 0.999
        if percentile >= 1.0:
            raise f.error("percentile", f"expected a number in (0, 1), got {percentile}")
    unit = f.choice("slo_unit", SLO_UNITS, "mtu")
    default = DEFAULT_DSCP[rank] if not lowest and rank < len(DEFAULT_DSCP) else 0
    if not lowest and rank >= len(DEFAULT_DSCP) and "dscp" not in f.doc:
        raise f.error("dscp", f"missing (no default DSCP for class rank {rank})")
    dscp = f.integer("dscp", 0, 63) if "dscp" in f.doc else default
    return RpcClass(name, weight, slo, unit, percentile, dscp)


def _controller(path: str | Path | None, doc: Any, where: str, controlled: int) -> ControllerParams:
    f = _Doc(path, doc, where, _CONTROLLER_KEYS)
    d = ControllerParams()
    windows = f.doc.get("increment_window_s")
    if windows is not None:
        if not isinstance(windows, list) or len(windows) != controlled:
            raise f.error(
                "increment_window_s",
                f"expected {controlled} windows (s), one per "
                f"class above the lowest, got {_show(windows)}",
            )
        for i in range(controlled):
            if (
                isinstance(windows[i], bool)
                or not isinstance(windows[i], int | float)
                or not (math.isfinite(windows[i]) and windows[i] >= 0)
            ):
                raise f.error(
                    f"increment_window_s[{i}]", f"expected a number >= 0, got {_show(windows[i])}"
                )
    return ControllerParams(
        alpha=f.number("alpha", high=1.0) if f.given("alpha") else d.alpha,
        beta=f.number("beta") if f.given("beta") else d.beta,
        floor=f.number("floor", high=1.0) if f.given("floor") else d.floor,
        rules=f.choice("rules", RULES, d.rules),
        increment_window_s=None if windows is None else tuple(float(w) for w in windows),
    )


def traffic_from_json(
    doc: Any, network: RpcNetwork | None, path: str | Path | None, where: str
) -> RpcTraffic:
    """The :class:`RpcTraffic` of a tenant's ``rpc`` (or a Plan's ``aequitas.tenants.<name>``)
    at ``where``, checked against ``network`` (``None``: the file states no ``rpc_network``, an
    error): a class the network does not have, a share outside (0, 1], shares not summing to 1,
    a destination that is no host, a load outside (0, 1]."""
    f = _Doc(path, doc, where, _TRAFFIC_KEYS)
    if network is None:
        raise ConfigError(
            path,
            "an RPC tenant needs the network it runs on: give the file's rpc_network",
            field=where,
        )
    mix_doc = f.doc.get("class_mix")
    if not isinstance(mix_doc, dict) or not mix_doc:
        raise f.error("class_mix", f"expected an object of class name: share, got {_show(mix_doc)}")
    known = [c.name for c in network.classes]
    mix: dict[str, float] = {}
    m = _Doc(path, mix_doc, f.at("class_mix"), known)
    for name in mix_doc:
        mix[str(name)] = m.number(str(name), high=1.0, what="in (0, 1] (a share of its RPCs)")
    total = sum(mix.values())
    if abs(total - 1.0) > 1e-9:
        raise f.error("class_mix", f"the shares must sum to 1, got {total:g}")
    pattern = f.choice("pattern", PATTERNS, "all_to_all")
    destination = None
    if pattern == "incast":
        destination = f.integer("destination", 0, network.hosts - 1)
    elif "destination" in f.doc and f.doc["destination"] is not None:
        raise f.error("destination", "only with pattern incast")
    load = f.number("load", high=1.0) if f.given("load") else None
    onoff = None
    if f.given("onoff"):
        onoff = _onoff(path, f.doc["onoff"], f.at("onoff"), load, network.hosts - 1)
    return RpcTraffic(
        class_mix=mix,
        pattern=pattern,
        destination=destination,
        load=load,
        bytes_per_token=f.integer("bytes_per_token", 1) if f.given("bytes_per_token") else 4,
        tokens=f.choice("tokens", TOKEN_COUNTS, "context"),
        onoff=onoff,
    )


def _onoff(
    path: str | Path | None, doc: Any, where: str, load: float | None, senders: int
) -> OnOff:
    """The :class:`OnOff` at ``where``; its average load is its own ``load`` or the tenant's
    (``load``), one of them; ``senders`` is every destination's number of senders."""
    f = _Doc(path, doc, where, _ONOFF_KEYS)
    rho = f.number("burst_load", what="> 0 (the load while ON, a fraction of a link)")
    mu = f.number("load", high=1.0) if f.given("load") else None
    if mu is not None and load is not None:
        raise f.error("load", "given twice: here and as the tenant's load; give one")
    if mu is None and load is None:
        raise f.error("load", "missing (the average load μ in (0, 1]; or the tenant's load)")
    average = mu if mu is not None else load
    assert average is not None
    if average > rho:
        raise f.error(
            "load" if mu is not None else "burst_load",
            f"the average load μ={average:g} exceeds the burst load ρ={rho:g}",
        )
    if f.given("burst_rpcs") and f.given("burst_bytes"):
        raise f.error("burst_bytes", "give burst_rpcs or burst_bytes, not both")
    rpcs: int | None = f.integer("burst_rpcs", 1) if f.given("burst_rpcs") else None
    size = f.number("burst_bytes") if f.given("burst_bytes") else None
    if rpcs is None and size is None:
        rpcs = 4
    bursts = f.integer("bursts_per_on", 1, senders) if f.given("bursts_per_on") else 1
    process = f.choice("process", ONOFF_PROCESSES, "destination")
    poisson = f.doc.get("poisson", True)
    if not isinstance(poisson, bool):
        raise f.error("poisson", f"expected true or false, got {_show(poisson)}")
    if bursts != 1 and process != "destination":
        raise f.error("bursts_per_on", "only with process destination")
    if not poisson and process != "pair":
        raise f.error("poisson", "only with process pair")
    return OnOff(
        burst_load=rho,
        load=mu,
        burst_rpcs=rpcs,
        burst_bytes=size,
        bursts_per_on=bursts,
        process=process,
        poisson=poisson,
        duration_s=f.number("duration_s") if f.given("duration_s") else None,
    )
