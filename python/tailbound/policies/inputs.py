"""Placement inputs: tenants, the cluster and arrival/departure events, read from the
WorkloadCompactor files (``../shared/data/wc62/``: tenants.json, cluster.json, events.csv).

Every error names the file and the field at fault (:class:`~tailbound.errors.ConfigError`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailbound.errors import ConfigError


@dataclass(frozen=True)
class TenantConfig:
    """One tenant: a name, a tail-latency SLO ``(slo_s, percentile)`` and its trace file."""

    name: str
    slo_s: float
    trace: Path
    percentile: float = 0.999


@dataclass(frozen=True)
class ServerConfig:
    """A storage server: its name and its devices (each a storage queue); the server's link
    carries the network stages of every tenant on any of its devices (thesis Fig. 5.11)."""

    name: str
    devices: tuple[str, ...]


@dataclass(frozen=True)
class ClientHost:
    """A client machine and its VMs (one tenant per VM)."""

    name: str
    vms: tuple[str, ...]


@dataclass(frozen=True)
class ClusterConfig:
    """Servers, client hosts and the link bandwidth of every host (bytes/s, each direction)."""

    link_bandwidth_bytes_per_s: float
    servers: tuple[ServerConfig, ...]
    client_hosts: tuple[ClientHost, ...] = ()


@dataclass(frozen=True)
class Event:
    """A tenant (index into the tenants list) arriving (``add``) or departing (``del``)."""

    tenant: int
    kind: str


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, f"not JSON: {e.msg} at line {e.lineno}") from None


def _positive(path: Path, value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(path, f"expected a positive number, got {value!r}", field=field)
    return float(value)


def load_tenants(path: str | Path) -> list[TenantConfig]:
    """Read ``{"tenants": [{"name", "slo_s", "trace"[, "percentile"]}, ...]}``; trace paths are
    relative to the tenants file.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "tenants.json")
    >>> with open(p, "w") as f:
    ...     _ = f.write('{"tenants": [{"name": "A", "slo_s": "fast", "trace": "a.txt"}]}')
    >>> try:
    ...     load_tenants(p)
    ... except ConfigError as e:
    ...     print(e.field, "|", e.message)
    tenants[0].slo_s | expected a positive number, got 'fast'
    """
    path = Path(path)
    document = _load_json(path)
    items = document.get("tenants") if isinstance(document, dict) else None
    if not isinstance(items, list) or not items:
        raise ConfigError(path, "expected a non-empty list", field="tenants")
    tenants = []
    names: set[str] = set()
    for i, item in enumerate(items):
        where = f"tenants[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(path, "expected an object", field=where)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(path, f"expected a name, got {name!r}", field=f"{where}.name")
        if name in names:
            raise ConfigError(path, f"duplicate tenant name {name!r}", field=f"{where}.name")
        names.add(name)
        slo = _positive(path, item.get("slo_s"), f"{where}.slo_s")
        percentile = item.get("percentile", 0.999)
        if (
            isinstance(percentile, bool)
            or not isinstance(percentile, int | float)
            or not (0 < percentile <= 1)
        ):
            raise ConfigError(
                path,
                f"expected a number in (0, 1], got {percentile!r}",
                field=f"{where}.percentile",
            )
        trace = item.get("trace")
        if not isinstance(trace, str) or not trace:
            raise ConfigError(path, f"expected a trace path, got {trace!r}", field=f"{where}.trace")
        tenants.append(TenantConfig(name, slo, path.parent / trace, float(percentile)))
    return tenants


def load_cluster(path: str | Path) -> ClusterConfig:
    """Read ``{"link_bandwidth_bytes_per_s", "server_hosts": [{"name", "devices"}],
    "client_hosts": [{"name", "vms"}]}``."""
    path = Path(path)
    document = _load_json(path)
    if not isinstance(document, dict):
        raise ConfigError(path, "the cluster must be a JSON object")
    bandwidth = _positive(
        path, document.get("link_bandwidth_bytes_per_s"), "link_bandwidth_bytes_per_s"
    )
    servers_doc = document.get("server_hosts")
    if not isinstance(servers_doc, list) or not servers_doc:
        raise ConfigError(path, "expected a non-empty list", field="server_hosts")
    servers = []
    for i, s in enumerate(servers_doc):
        name = s.get("name") if isinstance(s, dict) else None
        devices = s.get("devices") if isinstance(s, dict) else None
        if not isinstance(name, str) or not name:
            raise ConfigError(
                path, f"expected a name, got {name!r}", field=f"server_hosts[{i}].name"
            )
        if (
            not isinstance(devices, list)
            or not devices
            or not all(isinstance(d, str) for d in devices)
        ):
            raise ConfigError(
                path,
                "expected a non-empty list of device names",
                field=f"server_hosts[{i}].devices",
            )
        servers.append(ServerConfig(name, tuple(devices)))
    clients = []
    for i, c in enumerate(document.get("client_hosts", [])):
        name = c.get("name") if isinstance(c, dict) else None
        vms = c.get("vms") if isinstance(c, dict) else None
        if not isinstance(name, str) or not isinstance(vms, list):
            raise ConfigError(path, "expected {name, vms}", field=f"client_hosts[{i}]")
        clients.append(ClientHost(name, tuple(str(v) for v in vms)))
    return ClusterConfig(bandwidth, tuple(servers), tuple(clients))


def load_events(path: str | Path, tenant_count: int) -> list[Event]:
    """Read ``tenant_index,addClient|delClient`` lines; checks indices and that a tenant departs
    only while present and arrives only while absent."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror}") from None
    kinds = {"addClient": "add", "delClient": "del", "add": "add", "del": "del"}
    events = []
    present: set[int] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        where = f"line {number}"
        if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in kinds:
            raise ConfigError(
                path, f"expected 'index,addClient|delClient', got {line!r}", field=where
            )
        index, kind = int(parts[0]), kinds[parts[1]]
        if index >= tenant_count:
            raise ConfigError(
                path, f"tenant index {index} but only {tenant_count} tenants", field=where
            )
        if kind == "add" and index in present:
            raise ConfigError(path, f"tenant {index} arrives twice", field=where)
        if kind == "del" and index not in present:
            raise ConfigError(path, f"tenant {index} departs but is not present", field=where)
        (present.add if kind == "add" else present.discard)(index)
        events.append(Event(index, kind))
    return events
