"""Tenants of a full-bisection network (and optionally storage devices) as SNC flows.

The tenants file extends ``wc62/tenants.json``::

    {"link_bandwidth_bytes_per_s": 125000000,          # optional, default 1 Gb/s
     "ssd_profile": "profile_ssd.json",                # needed when a tenant names a device
     "tenants": [{"name": "C0", "slo_s": 0.2, "percentile": 0.999, "trace": "traces/t0.txt",
                  "client_host": "client000", "server_host": "server003",
                  "device": "ssd3", "group": "g1"}, ...]}

Paths are relative to the tenants file. Each tenant has a request flow (client host's egress →
server host's ingress) and a response flow (server host's egress → client host's ingress), whose
work is bytes on the wire by the network token model's :class:`MessageSizes` (a read's request is
``200 + 0.025·size`` bytes, its response ``200 + 1.1·size``; a write the reverse); every host link
serves ``link_bandwidth_bytes_per_s`` in each direction. A tenant with a ``device`` also has a
storage flow: one queue per device serving one device-second per second, work in device-seconds
by :class:`SsdModel` (thesis §4.4.6: storage is one more queue; our choice: a separate one-hop
flow analysed like a network hop).

Violation probability: a tenant's ``1 - percentile`` is split evenly over its flows (two, or three
with a device) and its latency is the sum of its flows' bounds (union bound), as in the reference
implementation. Priorities by SLO: dense ranks of ``slo_s``, 0 for the tightest.

Dependencies: tenants sharing a ``group`` are mutually dependent (possibly adversarially
correlated); each flow's arrival depends on its own flow and on every flow of the group's other
tenants (not on its own tenant's other direction, as in the reference implementation).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.profiles.tokens import MessageSizes, SsdProfile
from tailbound.snc.mmpp import INTERVAL_NS, MmppArrival, MmppModel, fit_mmpp
from tailbound.snc.network import Flow, Network
from tailbound.traces.trace import Trace

LINK_BYTES_PER_S = 125_000_000.0


@dataclass(frozen=True)
class TenantSpec:
    """One tenant: SLO ``(slo_s, percentile)``, trace, hosts, optional device and group."""

    name: str
    slo_s: float
    trace: Path
    client_host: str
    server_host: str
    percentile: float = 0.999
    device: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class TenantSet:
    """A parsed tenants file."""

    tenants: tuple[TenantSpec, ...]
    link_bytes_per_s: float = LINK_BYTES_PER_S
    ssd_profile: SsdProfile | None = None
    path: Path | None = None


# ------------------------------------------------------------------------------ loading
def _field(
    doc: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str
) -> Any:
    if key not in doc:
        raise ConfigError(path, "missing", field=f"{where}.{key}")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(path, f"wrong type {type(value).__name__}", field=f"{where}.{key}")
    return value


def load_tenants(path: str | Path) -> TenantSet:
    """Parse a tenants file, raising :class:`ConfigError` naming the field at fault."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except OSError as e:
        raise ConfigError(path, f"cannot read the tenants file: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, f"not JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(document, dict) or not isinstance(document.get("tenants"), list):
        raise ConfigError(path, "expected an object with a list 'tenants'", field="tenants")
    base = path.parent
    tenants = []
    names: set[str] = set()
    for i, doc in enumerate(document["tenants"]):
        where = f"tenants[{i}]"
        if not isinstance(doc, dict):
            raise ConfigError(path, "each tenant must be an object", field=where)
        name = _field(doc, "name", str, path, where)
        if name in names:
            raise ConfigError(path, f"duplicate tenant name {name!r}", field=f"{where}.name")
        names.add(name)
        slo = float(_field(doc, "slo_s", (int, float), path, where))
        if not slo > 0:
            raise ConfigError(path, "must be positive", field=f"{where}.slo_s")
        percentile = float(doc.get("percentile", 0.999))
        if not 0 < percentile < 1:
            raise ConfigError(
                path, "SNC bounds need a percentile in (0, 1)", field=f"{where}.percentile"
            )
        device = doc.get("device")
        group = doc.get("group")
        for key, value in (("device", device), ("group", group)):
            if value is not None and not isinstance(value, str):
                raise ConfigError(path, "must be a string", field=f"{where}.{key}")
        tenants.append(
            TenantSpec(
                name=name,
                slo_s=slo,
                percentile=percentile,
                trace=base / _field(doc, "trace", str, path, where),
                client_host=_field(doc, "client_host", str, path, where),
                server_host=_field(doc, "server_host", str, path, where),
                device=device,
                group=group,
            )
        )
    link = float(document.get("link_bandwidth_bytes_per_s", LINK_BYTES_PER_S))
    if not link > 0:
        raise ConfigError(path, "must be positive", field="link_bandwidth_bytes_per_s")
    profile = None
    if "ssd_profile" in document:
        profile = SsdProfile.load(base / str(document["ssd_profile"]))
    elif any(t.device for t in tenants):
        raise ConfigError(path, "a tenant names a device but no ssd_profile", field="ssd_profile")
    return TenantSet(tuple(tenants), link, profile, path)


# ------------------------------------------------------------------------------ traces
@dataclass(frozen=True)
class Requests:
    """A trace reduced to what the SNC model needs: integer-ns arrivals, reads, sizes."""

    arrival_ns: NDArray[np.int64]
    is_read: NDArray[np.bool_]
    size: NDArray[np.int64]


def requests_of(trace: Trace) -> Requests:
    """``trace`` as arrival nanoseconds, read flags and sizes, the reference model's inputs."""
    ns = np.rint(np.asarray(trace.time) * 1e9).astype(np.int64)
    return Requests(ns, np.asarray(trace.op) == 0, np.asarray(trace.size, dtype=np.int64))


def read_requests(path: str | Path) -> Requests:
    """A trace file (any format :func:`~tailbound.traces.read_trace` reads) as
    :func:`requests_of` gives it."""
    from tailbound.traces import read_trace

    return requests_of(read_trace(Path(path)))


# ------------------------------------------------------------------------------ model building
@dataclass
class FitCache:
    """MMPP fits keyed by (trace, direction); fitting is the slow part, done once per trace.

    ``interval_ns``: the fit's interval length (:func:`~tailbound.snc.mmpp.fit_mmpp`)."""

    models: dict[tuple[str, str], MmppModel] = field(default_factory=dict)
    requests: dict[str, Requests] = field(default_factory=dict)
    # Traces by ``str(spec.trace)``, read once (the fits and the measured floor both use them);
    # experiments holding their traces in memory prime it.
    traces: dict[str, Trace] = field(default_factory=dict)
    fit_seconds: float = 0.0
    # The MMPP fit's interval (the reference's 1 s); other values are a diagnostic knob only
    # (docs/results-snc.md, "Why SNC-Meister misses").
    interval_ns: int = INTERVAL_NS

    def trace(self, spec: TenantSpec) -> Trace:
        """``spec``'s trace, read from its file the first time."""
        key = str(spec.trace)
        if key not in self.traces:
            from tailbound.traces import read_trace

            self.traces[key] = read_trace(Path(spec.trace))
        return self.traces[key]

    def model(self, spec: TenantSpec, direction: str, tset: TenantSet) -> MmppModel:
        key = (str(spec.trace), direction)
        if key not in self.models:
            import time

            start = time.perf_counter()
            if str(spec.trace) not in self.requests:
                self.requests[str(spec.trace)] = requests_of(self.trace(spec))
            req = self.requests[str(spec.trace)]
            self.models[key] = fit_mmpp(
                req.arrival_ns, work(req, direction, tset), self.interval_ns
            )
            self.fit_seconds += time.perf_counter() - start
        return self.models[key]


def work(req: Requests, direction: str, tset: TenantSet) -> NDArray[np.float64]:
    """Each request's work in a direction: bytes on the wire (``in``: request message, ``out``:
    response message) or device-seconds (``storage``)."""
    if direction == "in":
        return MessageSizes().request_bytes_of(req.is_read, req.size)
    if direction == "out":
        return MessageSizes().response_bytes_of(req.is_read, req.size)
    if direction == "storage":
        assert tset.ssd_profile is not None
        op = np.where(req.is_read, 0, 1).astype(np.uint8)
        return req.size.astype(np.float64) / tset.ssd_profile.bandwidth(op, req.size)
    raise ValueError(direction)


def priorities_by_slo(slos: Sequence[float]) -> list[int]:
    """Dense ranks of the SLO latencies, 0 for the tightest (thesis §4.2).

    >>> priorities_by_slo([0.2, 0.05, 0.2, 0.1])
    [2, 0, 2, 1]
    """
    levels = {s: i for i, s in enumerate(sorted(set(slos)))}
    return [levels[s] for s in slos]


@dataclass(frozen=True)
class TenantFlows:
    """The flow ids of one tenant by direction."""

    tenant: int
    flows: dict[str, int]


def build_network(
    tset: TenantSet, tenants: Sequence[TenantSpec], cache: FitCache
) -> tuple[Network, list[TenantFlows], list[int]]:
    """The network of ``tenants`` (a subset of ``tset``, e.g. the admitted ones): queues, flows
    with priorities by SLO and dependency sets; also each tenant's flow ids and priority."""
    net = Network()
    priorities = priorities_by_slo([t.slo_s for t in tenants])
    plan: list[tuple[int, str, tuple[str, ...]]] = []
    by_tenant: list[TenantFlows] = []
    next_id = 0
    for i, t in enumerate(tenants):
        paths: dict[str, tuple[str, ...]] = {
            "in": (f"{t.client_host}/egress", f"{t.server_host}/ingress"),
            "out": (f"{t.server_host}/egress", f"{t.client_host}/ingress"),
        }
        if t.device is not None:
            paths["storage"] = (f"{t.device}/device",)
        ids = {}
        for direction, path in paths.items():
            ids[direction] = next_id
            plan.append((i, direction, path))
            next_id += 1
        by_tenant.append(TenantFlows(i, ids))
    group_flows: dict[str, set[int]] = {}
    for t, tf in zip(tenants, by_tenant, strict=True):
        if t.group is not None:
            group_flows.setdefault(t.group, set()).update(tf.flows.values())
    for i, direction, path in plan:
        for q in path:
            net.add_queue(q, 1.0 if direction == "storage" else tset.link_bytes_per_s)
        t = tenants[i]
        flow_id = by_tenant[i].flows[direction]
        # Its own flow and the flows of the *other* tenants of its group (as the reference's
        # addDependency does): a tenant's request and response flows stay independent.
        group = group_flows[t.group] if t.group is not None else set()
        deps = {flow_id} | (group - set(by_tenant[i].flows.values()))
        arrival = MmppArrival(cache.model(t, direction, tset), deps)
        eps = (1.0 - t.percentile) / len(by_tenant[i].flows)
        net.add_flow(Flow(flow_id, i, path, arrival, priorities[i], eps))
    return net, by_tenant, priorities
