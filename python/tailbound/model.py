"""The domain model every layer takes: :class:`Slo`, :class:`Tenant`, :class:`Cluster`.

Small immutable values with readable ``repr``s, and **one** loader for each input file:

- :func:`load_tenants` reads a tenants file into a :class:`TenantSet`;
- :func:`load_cluster` reads a cluster file into a :class:`Cluster`.

Every error is a :class:`~tailbound.errors.ConfigError` naming the file, the entry and the field
(``tenants[3].slo_s``). Unknown keys are errors too: a misspelt ``"percentil"`` must not silently
fall back to the default.

Tenants file (paths relative to the file)::

    {"link_bandwidth_bytes_per_s": 125000000,       # optional, default 1 Gb/s
     "ssd_profile": "profile_ssd.json",             # optional; needed by analyses of devices
     "tenants": [{"name": "C0", "slo_s": 0.2, "percentile": 0.999, "trace": "traces/t0.txt",
                  "client_host": "client000", "client_vm": "0",      # optional
                  "server_host": "server003", "device": "ssd3",      # optional (placement)
                  "group": "g1", "class": "gold"},                   # optional
                 {"name": "C1", "slo_grades": [[0.005, 0.9], [0.05, 0.95], [0.5, 1.0]],
                  "trace": "traces/t1.txt"},
                 {"name": "C2", "slo_s": 0.3, "percentile": 0.999, "trace": "traces/t2.txt",
                  "throughput_iops": 150}, ...]}             # optional throughput SLO

A tenant gives either ``slo_s`` (with ``percentile``, default 0.999) or ``slo_grades``, a
**graduated SLO** (Nested QoS, Wang's thesis §3.1): ``[latency_s, fraction]`` pairs, latencies
and fractions strictly increasing, fractions in (0, 1] — "90% within 5 ms, 95% within 50 ms,
all within 500 ms". A list of one pair means exactly ``slo_s``/``percentile``.

A tenant may also give a **throughput SLO** (PSLO, Li et al., EuroSys 2016, §2: "at least
``Th`` IOPS"), beside its latency SLO: ``throughput_iops`` (requests per second) or
``throughput_bytes_per_s`` (bytes per second), not both, positive and finite. It is
:attr:`Slo.throughput_iops` / :attr:`Slo.throughput_bytes_per_s`; every policy carries it into
its Plan, ``tailbound verify`` and ``tailbound enforce replay`` report the throughput achieved
against it, and the ``pslo`` policy enforces it (``docs/pslo.md``).

An **RPC tenant** (Aequitas, ``docs/aequitas.md``, "How a user states it") gives ``rpc``
instead of an SLO — its class mix over the WFQ classes of the file's ``rpc_network``, its
pattern and the load its trace is scaled to — and the file gives ``rpc_network``, the network
and classes the RPC tenants share (:mod:`tailbound.rpc_network`: hosts, link rate, classes with
weight, SLO per MTU or per RPC, percentile and DSCP, the controller); :attr:`Tenant.rpc` and
:attr:`TenantSet.rpc_network`::

    {"rpc_network": {"hosts": 3, "classes": [{"name": "QoS_h", "weight": 4, "slo_s": 25e-6,
                                              "slo_unit": "rpc"}, {"name": "QoS_l", "weight": 1}]},
     "tenants": [{"name": "search", "trace": "rpc.parquet",
                  "rpc": {"class_mix": {"QoS_h": 0.7, "QoS_l": 0.3}}}]}

What each consumer needs beyond name, SLO and trace (client and server hosts for the SNC
analyses, a device for a storage stage) it checks itself with :meth:`TenantSet.require`, so the
message names the field and says who needs it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailbound.errors import ConfigError
from tailbound.jsonio import read_json
from tailbound.rpc_network import RpcNetwork, RpcTraffic, network_from_json, traffic_from_json

#: A host link's bandwidth when a file gives none: 1 Gb/s in bytes per second.
DEFAULT_LINK_BYTES_PER_S = 125_000_000.0
#: The SLO percentile when a tenant gives none.
DEFAULT_PERCENTILE = 0.999


@dataclass(frozen=True, repr=False)
class Slo:
    """A tail-latency objective: a fraction ``percentile`` of requests within ``latency_s``.

    ``percentile`` is in (0, 1]; 1 asks for the worst case.

    A **graduated** SLO (Nested QoS, Wang's thesis §3.1) promises several fractions at several
    latencies: ``grades`` is its ``(latency_s, fraction)`` pairs, latencies and fractions strictly
    increasing, fractions in (0, 1]; build it with :meth:`graduated`. ``latency_s`` and
    ``percentile`` are then its **innermost grade** (the tightest latency, ``grades[0]``): the
    one pair every single-pair consumer (an EDF deadline, a percentile check, an admission
    analysis) reads, and the one the thesis sizes its first class for (``κ_1``, §3.3). ``grades``
    is empty for a single-pair SLO, so a one-pair list is the single pair itself.

    >>> Slo(0.05)
    Slo(latency_s=0.05, percentile=0.999)
    >>> Slo(0.05, 1.0).worst_case
    True
    >>> s = Slo.graduated([(0.005, 0.9), (0.05, 0.95), (0.5, 1.0)])
    >>> s.latency_s, s.percentile, s.is_graduated
    (0.005, 0.9, True)
    >>> Slo.graduated([(0.05, 0.99)]) == Slo(0.05, 0.99)
    True
    >>> Slo(0.3, 0.999, throughput_iops=150.0).throughput
    (150.0, 'iops')

    A **throughput SLO** (PSLO, Li et al., EuroSys 2016) may come with the latency SLO: at least
    ``throughput_iops`` requests per second, or ``throughput_bytes_per_s`` bytes per second
    (at most one of the two; ``None``: no throughput SLO), achieved over the tenant's run.
    """

    latency_s: float
    percentile: float = DEFAULT_PERCENTILE
    grades: tuple[tuple[float, float], ...] = ()
    throughput_iops: float | None = None
    throughput_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.latency_s) and self.latency_s > 0):
            raise ValueError(f"an SLO latency must be positive and finite, got {self.latency_s}")
        if not 0 < self.percentile <= 1:
            raise ValueError(f"an SLO percentile must be in (0, 1], got {self.percentile}")
        if self.grades:
            check_grades(self.grades)
            if self.grades[0] != (self.latency_s, self.percentile):
                raise ValueError(
                    f"a graduated SLO's latency_s and percentile are its first grade "
                    f"{self.grades[0]}, got ({self.latency_s}, {self.percentile})"
                )
        for name in THROUGHPUT_FIELDS:
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, int | float) and math.isfinite(value) and value > 0
            ):
                raise ValueError(f"{name} must be positive and finite, got {value!r}")
        if self.throughput_iops is not None and self.throughput_bytes_per_s is not None:
            raise ValueError("give throughput_iops or throughput_bytes_per_s, not both")

    @classmethod
    def graduated(cls, grades: Iterable[tuple[float, float]]) -> Slo:
        """The SLO of ``(latency_s, fraction)`` pairs (checked by :func:`check_grades`); one
        pair is a single-pair SLO."""
        pairs = tuple((float(latency), float(fraction)) for latency, fraction in grades)
        check_grades(pairs)
        latency, fraction = pairs[0]
        return cls(latency, fraction, pairs if len(pairs) > 1 else ())

    @property
    def is_graduated(self) -> bool:
        """Whether the SLO has more than one grade."""
        return bool(self.grades)

    @property
    def pairs(self) -> tuple[tuple[float, float], ...]:
        """Every ``(latency_s, fraction)`` the SLO promises, the innermost first (one pair for
        a single-pair SLO)."""
        return self.grades or ((self.latency_s, self.percentile),)

    @property
    def throughput(self) -> tuple[float, str] | None:
        """The throughput SLO as ``(value, unit)``, the unit ``"iops"`` (requests per second) or
        ``"bytes_per_s"``; ``None`` without one."""
        if self.throughput_iops is not None:
            return (self.throughput_iops, "iops")
        if self.throughput_bytes_per_s is not None:
            return (self.throughput_bytes_per_s, "bytes_per_s")
        return None

    def with_throughput(self, throughput: tuple[float, str] | None) -> Slo:
        """This SLO with the throughput SLO ``(value, unit)`` (:attr:`throughput`'s form;
        ``None``: none)."""
        iops = bytes_per_s = None
        if throughput is not None:
            value, unit = throughput
            if unit not in ("iops", "bytes_per_s"):
                raise ValueError(f"unknown throughput unit {unit!r} (iops or bytes_per_s)")
            iops, bytes_per_s = (value, None) if unit == "iops" else (None, value)
        return dataclasses.replace(self, throughput_iops=iops, throughput_bytes_per_s=bytes_per_s)

    @property
    def worst_case(self) -> bool:
        """Whether every request must meet the latency (percentile 1)."""
        return self.percentile == 1.0

    def met_by(self, latency_s: float) -> bool:
        """Whether a latency at this SLO's percentile meets it."""
        return latency_s <= self.latency_s

    def __repr__(self) -> str:
        grades = f", grades={self.grades!r}" if self.grades else ""
        if self.throughput is not None:
            value, unit = self.throughput
            grades += f", throughput_{unit}={value!r}"
        return f"Slo(latency_s={self.latency_s!r}, percentile={self.percentile!r}{grades})"


#: The fields of a throughput SLO, one per unit (:attr:`Slo.throughput`), as the tenants file
#: and the Plan spell them.
THROUGHPUT_FIELDS = ("throughput_iops", "throughput_bytes_per_s")


def check_grades(grades: Sequence[tuple[float, float]]) -> None:
    """Raise :class:`ValueError` unless ``grades`` is a non-empty list of ``(latency_s,
    fraction)`` with positive finite latencies and fractions in (0, 1], both strictly increasing.
    The message starts with the index of the grade at fault (``grade 2: ...``).

    >>> check_grades([(0.005, 0.9), (0.05, 0.9)])
    Traceback (most recent call last):
    ...
    ValueError: grade 1: fraction 0.9 not above 0.9 of grade 0 (fractions must increase)
    """
    if not grades:
        raise ValueError("a graduated SLO needs at least one (latency_s, fraction) pair")
    for i, (latency, fraction) in enumerate(grades):
        if not (math.isfinite(latency) and latency > 0):
            raise ValueError(f"grade {i}: latency_s must be positive and finite, got {latency}")
        if not (math.isfinite(fraction) and 0 < fraction <= 1):
            raise ValueError(f"grade {i}: fraction must be in (0, 1], got {fraction}")
        if i > 0:
            last_latency, last_fraction = grades[i - 1]
            if not latency > last_latency:
                raise ValueError(
                    f"grade {i}: latency_s {latency} not above {last_latency} of grade {i - 1} "
                    "(latencies must increase)"
                )
            if not fraction > last_fraction:
                raise ValueError(
                    f"grade {i}: fraction {fraction} not above {last_fraction} of grade {i - 1} "
                    "(fractions must increase)"
                )


@dataclass(frozen=True)
class Tenant:
    """A tenant: name, SLO, trace, and where it runs (each optional until a policy decides).

    ``client_host``/``client_vm`` is where its requests come from; ``server`` the storage or
    service host it talks to and ``device`` its volume's device there; ``group`` names tenants
    whose traffic may be correlated (SNC dependency groups); ``service_class`` a class label
    (tenant classes of the enforcers: Aequitas' RPC classes, Nested QoS' levels).
    """

    name: str
    slo: Slo
    trace: Path
    client_host: str | None = None
    client_vm: str | None = None
    server: str | None = None
    device: str | None = None
    group: str | None = None
    service_class: str | None = None
    #: An RPC tenant's traffic over the file's ``rpc_network`` (Aequitas: its class mix,
    #: pattern and trace scaling, :class:`~tailbound.rpc_network.RpcTraffic`); ``None``: not an
    #: RPC tenant. Its SLOs are its classes' (``rpc_network.classes``), and :attr:`slo` is the
    #: SLO of the highest class it asks for, in that class's unit (s per MTU or per RPC).
    rpc: RpcTraffic | None = None

    @property
    def slo_s(self) -> float:
        """The SLO's latency (s)."""
        return self.slo.latency_s

    @property
    def percentile(self) -> float:
        """The SLO's percentile."""
        return self.slo.percentile


@dataclass(frozen=True)
class TenantSet:
    """A tenants file: the tenants in file order (the arrival order of admission) and the
    settings it gives for the network and devices they share."""

    tenants: tuple[Tenant, ...]
    link_bytes_per_s: float = DEFAULT_LINK_BYTES_PER_S
    ssd_profile: Path | None = None
    path: Path | None = None
    #: The network RPC tenants share (Aequitas' WFQ classes, weights, class SLOs, controller;
    #: :class:`~tailbound.rpc_network.RpcNetwork`), the file's ``rpc_network``; ``None``: none.
    rpc_network: RpcNetwork | None = None

    def refuse_rpc(self, who: str) -> None:
        """Raise :class:`ConfigError` naming the first RPC tenant (``tenants[i].rpc``), which
        ``who`` cannot plan: only the ``aequitas`` policy plans RPC classes over WFQ."""
        for i, t in enumerate(self.tenants):
            if t.rpc is not None:
                raise ConfigError(
                    self.path,
                    f"tenant {t.name} is an RPC tenant (Aequitas' classes), which {who} cannot "
                    "plan; use tailbound admit --policy aequitas",
                    field=f"tenants[{i}].rpc",
                )

    def require(self, key: str, who: str) -> None:
        """Raise :class:`ConfigError` naming the first tenant without ``key`` (a
        :class:`Tenant` attribute spelt as in the file) that ``who`` needs."""
        attr = _ATTRIBUTE.get(key, key)
        for i, t in enumerate(self.tenants):
            if getattr(t, attr) is None:
                raise ConfigError(
                    self.path, f"missing ({who} needs it)", field=f"tenants[{i}].{key}"
                )


@dataclass(frozen=True)
class Server:
    """A server host and its devices (each a storage queue); its link carries the network stages
    of every tenant on any of its devices (thesis Fig. 5.11)."""

    name: str
    devices: tuple[str, ...]


@dataclass(frozen=True)
class ClientHost:
    """A client machine and its VMs (one tenant per VM)."""

    name: str
    vms: tuple[str, ...]


@dataclass(frozen=True)
class Cluster:
    """Servers, client hosts and the link bandwidth of every host (bytes/s, each direction)."""

    link_bytes_per_s: float
    servers: tuple[Server, ...]
    client_hosts: tuple[ClientHost, ...] = ()
    path: Path | None = None


# ------------------------------------------------------------------------------ loading
_TENANT_KEYS = (
    "name",
    "slo_s",
    "percentile",
    "slo_grades",
    "trace",
    "client_host",
    "client_vm",
    "server_host",
    "device",
    "group",
    "class",
    "throughput_iops",
    "throughput_bytes_per_s",
    "rpc",
)
_ATTRIBUTE = {"server_host": "server", "class": "service_class"}
_TENANTS_FILE_KEYS = ("tenants", "link_bandwidth_bytes_per_s", "ssd_profile", "rpc_network")
_CLUSTER_KEYS = ("link_bandwidth_bytes_per_s", "server_hosts", "client_hosts")


class _Fields:
    """Typed reads of one JSON object, errors naming file and field."""

    def __init__(self, path: Path, doc: Any, where: str, keys: Iterable[str]) -> None:
        self.path, self.where = path, where
        if not isinstance(doc, dict):
            raise ConfigError(path, f"expected an object, got {_show(doc)}", field=where or None)
        unknown = sorted(set(doc) - set(keys))
        if unknown:
            raise ConfigError(
                path,
                f"unknown key (known: {', '.join(keys)})",
                field=self.at(str(unknown[0])),
            )
        self.doc: Mapping[str, Any] = doc

    def at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.path, message, field=self.at(key))

    def text(self, key: str, *, required: bool = True) -> str | None:
        value = self.doc.get(key)
        if value is None and not required and key not in self.doc:
            return None
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, got {_show(value)}")
        return value

    def number(self, key: str, default: float | None = None) -> float:
        if key not in self.doc and default is not None:
            return default
        value = self.doc.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"expected a number, got {_show(value)}")
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number, got {value}")
        return float(value)

    def positive(self, key: str, default: float | None = None) -> float:
        value = self.number(key, default)
        if not value > 0:
            raise self.error(key, f"expected a positive number, got {_show(self.doc.get(key))}")
        return value

    def items(self, key: str, *, required: bool = True) -> list[Any]:
        value = self.doc.get(key, None if required else [])
        if not isinstance(value, list) or (required and not value):
            raise self.error(key, f"expected a non-empty list, got {_show(value)}")
        return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _tenant(
    path: Path,
    doc: Any,
    where: str,
    base: Path | None = None,
    network: RpcNetwork | None = None,
) -> Tenant:
    f = _Fields(path, doc, where, _TENANT_KEYS)
    rpc = None
    if "rpc" in f.doc:
        rpc = traffic_from_json(f.doc["rpc"], network, path, f.at("rpc"))
        assert network is not None
        slo = _rpc_slo(f, rpc, network)
    else:
        slo = _slo(f).with_throughput(_throughput(f))
    name, trace = f.text("name"), f.text("trace")
    assert name is not None and trace is not None
    return Tenant(
        name=name,
        slo=slo,
        trace=(path.parent if base is None else base) / trace,
        client_host=f.text("client_host", required=False),
        client_vm=f.text("client_vm", required=False),
        server=f.text("server_host", required=False),
        device=f.text("device", required=False),
        group=f.text("group", required=False),
        service_class=f.text("class", required=False),
        rpc=rpc,
    )


def _rpc_slo(f: _Fields, rpc: RpcTraffic, network: RpcNetwork) -> Slo:
    """An RPC tenant's :attr:`Tenant.slo`: its classes' (it states none of its own), the SLO of
    the highest class it asks for, in that class's unit (``Slo(1.0)`` if it asks only the
    lowest, best-effort class: nothing is promised)."""
    for key in ("slo_s", "percentile", "slo_grades", *THROUGHPUT_FIELDS):
        if key in f.doc:
            raise f.error(
                key, "an RPC tenant's SLOs are its classes' (rpc_network.classes[i].slo_s)"
            )
    for c in network.classes:
        if c.slo_s is not None and rpc.class_mix.get(c.name, 0.0) > 0:
            return Slo(c.slo_s, c.percentile)
    return Slo(1.0, 1.0)


def _slo(f: _Fields) -> Slo:
    """``slo_s`` with ``percentile``, or ``slo_grades`` (module docstring), not both."""
    if "slo_grades" not in f.doc:
        slo_s = f.positive("slo_s")
        percentile = f.number("percentile", DEFAULT_PERCENTILE)
        if not 0 < percentile <= 1:
            raise f.error("percentile", f"expected a number in (0, 1], got {percentile}")
        return Slo(slo_s, percentile)
    for key in ("slo_s", "percentile"):
        if key in f.doc:
            raise f.error(key, "give slo_s (with percentile) or slo_grades, not both")
    pairs = f.doc["slo_grades"]
    if not isinstance(pairs, list) or not pairs:
        raise f.error(
            "slo_grades", f"expected a non-empty list of [latency_s, fraction], got {_show(pairs)}"
        )
    grades = []
    for i, pair in enumerate(pairs):
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
        ):
            raise f.error(f"slo_grades[{i}]", f"expected [latency_s, fraction], got {_show(pair)}")
        grades.append((float(pair[0]), float(pair[1])))
    try:
        return Slo.graduated(grades)
    except ValueError as e:
        index, _, message = str(e).partition(": ")
        at = f"slo_grades[{index.removeprefix('grade ')}]" if index.startswith("grade ") else ""
        raise f.error(at or "slo_grades", message if at else str(e)) from None


def _throughput(f: _Fields) -> tuple[float, str] | None:
    """``throughput_iops`` or ``throughput_bytes_per_s`` (positive, not both), as
    ``(value, unit)``; ``None`` without either."""
    given = [key for key in THROUGHPUT_FIELDS if key in f.doc]
    if len(given) > 1:
        raise f.error(given[1], "give throughput_iops or throughput_bytes_per_s, not both")
    if not given:
        return None
    return (f.positive(given[0]), given[0].removeprefix("throughput_"))


def load_tenants(path: str | Path) -> TenantSet:
    """Read a tenants file (module docstring), raising :class:`ConfigError` naming the field.

    >>> import json, tempfile
    >>> p = Path(tempfile.mkdtemp()) / "tenants.json"
    >>> _ = p.write_text(json.dumps({"tenants": [{"name": "A", "slo_s": 0.05,
    ...     "trace": "a.txt", "percentil": 0.99}]}))
    >>> try:
    ...     load_tenants(p)
    ... except ConfigError as e:
    ...     print(e.field, "|", e.message.split(" (")[0])
    tenants[0].percentil | unknown key
    """
    path = Path(path)
    top = _Fields(
        path, read_json(path, what="the tenants file", finite=False), "", _TENANTS_FILE_KEYS
    )
    tenants: list[Tenant] = []
    seen: set[str] = set()
    network = None
    if top.doc.get("rpc_network") is not None:
        network = network_from_json(top.doc["rpc_network"], path, "rpc_network")
    for i, doc in enumerate(top.items("tenants")):
        tenant = _tenant(path, doc, f"tenants[{i}]", network=network)
        if tenant.name in seen:
            raise ConfigError(
                path, f"duplicate tenant name {tenant.name!r}", field=f"tenants[{i}].name"
            )
        seen.add(tenant.name)
        tenants.append(tenant)
    profile = top.text("ssd_profile", required=False)
    return TenantSet(
        tenants=tuple(tenants),
        link_bytes_per_s=top.positive("link_bandwidth_bytes_per_s", DEFAULT_LINK_BYTES_PER_S),
        ssd_profile=None if profile is None else path.parent / profile,
        path=path,
        rpc_network=network,
    )


def tenant_from_json(
    doc: Any,
    *,
    source: str | Path,
    traces: Path,
    where: str = "",
    network: RpcNetwork | None = None,
) -> Tenant:
    """One entry of a tenants file (module docstring) given as a JSON value rather than read
    from a file (the control plane's tenants arrive one at a time): its trace is relative to
    ``traces``; an RPC tenant's ``rpc`` is read against ``network`` (the file's
    ``rpc_network``); errors name ``source`` (what the document came from) and the field."""
    return _tenant(Path(source), doc, where, traces, network)


def load_cluster(path: str | Path) -> Cluster:
    """Read ``{"link_bandwidth_bytes_per_s", "server_hosts": [{"name", "devices"}],
    "client_hosts": [{"name", "vms"}]}``; server and client names must be unique."""
    path = Path(path)
    return cluster_from_json(read_json(path, what="the cluster file", finite=False), path)


def cluster_from_json(doc: Any, path: str | Path) -> Cluster:
    """The :class:`Cluster` of a cluster file's JSON value ``doc`` (:func:`load_cluster`);
    errors name ``path`` (the file, or what the document came from) and the field."""
    path = Path(path)
    top = _Fields(path, doc, "", _CLUSTER_KEYS)
    bandwidth = top.positive("link_bandwidth_bytes_per_s")
    servers = []
    names: set[str] = set()
    for i, doc in enumerate(top.items("server_hosts")):
        f = _Fields(path, doc, f"server_hosts[{i}]", ("name", "devices"))
        name = f.text("name")
        assert name is not None
        devices = f.items("devices")
        if not all(isinstance(d, str) and d for d in devices) or len(set(devices)) != len(devices):
            raise f.error("devices", "expected a list of distinct device names")
        _unique(f, name, names)
        servers.append(Server(name, tuple(devices)))
    clients = []
    for i, doc in enumerate(top.items("client_hosts", required=False)):
        f = _Fields(path, doc, f"client_hosts[{i}]", ("name", "vms"))
        name = f.text("name")
        assert name is not None
        vms = f.items("vms", required=False)
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in vms) or len(
            {str(v) for v in vms}
        ) != len(vms):
            raise f.error("vms", "expected a list of distinct VM names")
        _unique(f, name, names)
        clients.append(ClientHost(name, tuple(str(v) for v in vms)))
    return Cluster(bandwidth, tuple(servers), tuple(clients), path)


def _unique(f: _Fields, name: str, names: set[str]) -> None:
    if name in names:
        raise f.error("name", f"duplicate host name {name!r}")
    names.add(name)
