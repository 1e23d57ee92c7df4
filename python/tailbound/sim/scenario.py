"""Scenarios: a topology, workloads and per-queue schedulers in one TOML or JSON file.

A scenario names hosts (each has a NIC: an egress link to the non-blocking switch and an ingress
link from it), devices on server hosts, workloads (trace, SLO, client host, device or server) and
the scheduler of any queue (``<host>.egress``, ``<host>.ingress`` or a device name; unlisted
queues are FIFO). A storage request's route is ``net_in`` (client egress, server ingress), the
device (``storage``), then ``net_out`` (server egress, client ingress); a key-value workload with
a server but no device skips the device stage. Per-stage costs come from the token models:
message bytes by :class:`~tailbound.profiles.MessageSizes`, device work by
:class:`~tailbound.profiles.SsdModel` or :class:`~tailbound.profiles.disk.DiskModel` (a
``memory`` device does no work). The format is
documented with an example in ``docs/simulator.md``.

A workload may give each request a class of its own (``class``: one class name per request):
a queue whose kind has classes (``dwrr``) serves the request in that class instead of its
workload's. The classes of all queues are then numbered together (the sorted names of every
queue's classes, ``_core.scheduler_classes``), so a request's class is the same class at each
queue it crosses; a name that is no queue's class is an error naming the workload's field.

A device may carry a controller (``control``, a table with ``kind = "pslo"``): PSLO's
(``docs/pslo.md``), told of every completion at the device, sets the pacing rate and IO depth of
the workloads its ``slo`` table names (:class:`PsloControl`).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.jsonio import loads_json
from tailbound.limits import MIN_MTU_BYTES
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.profiles.tokens import MessageSizes, SsdModel, SsdProfile, TokenModel
from tailbound.sim.fields import Fields
from tailbound.sim.results import Slo
from tailbound.sim.simulator import Requests, Simulator
from tailbound.sim.sources import load_source
from tailbound.stages import Stage
from tailbound.traces.trace import Trace


@dataclass(frozen=True)
class TenantSlos:
    """A controlled workload's SLOs: ``latency_s`` seconds at ``percentile`` (a fraction in
    (0, 1); both ``None``: no latency SLO, paced for its throughput alone) and
    ``throughput_iops`` requests per second."""

    latency_s: float | None
    percentile: float | None
    throughput_iops: float


@dataclass(frozen=True)
class PsloControl:
    """PSLO's controller at a device (``tailbound_core::sim::control``, ``docs/pslo.md``).

    ``policy`` is one of ``_core.PSLO_POLICIES`` (``LS+T``, ``TS+L``, ``L``, ``LS+U``, ``T``,
    ``none``); ``params`` the controller's parameters given (``interval_completions`` N,
    ``threshold`` H, ``window_s``, ``enable_s`` τ, ``sigma`` σ, ``eta`` η, ``raise_at`` U,
    ``max_depth``; the controller's defaults otherwise); ``slo`` the controlled workloads by name.
    ``at`` is the table's dotted name in the scenario (for errors).
    """

    policy: str
    params: dict[str, float]
    slo: dict[str, TenantSlos]
    at: str

    def core_config(self, workload_index: Mapping[str, int]) -> dict[str, Any]:
        """The core's ``ControlSpec``: the tenants by workload index."""
        tenants = []
        for name, t in self.slo.items():
            tenant: dict[str, Any] = {
                "workload": workload_index[name],
                "throughput_iops": t.throughput_iops,
            }
            if t.latency_s is not None:
                tenant |= {"latency_s": t.latency_s, "percentile": t.percentile}
            tenants.append(tenant)
        return {"kind": "pslo", "policy": self.policy, **self.params, "tenants": tenants}


@dataclass(frozen=True)
class Device:
    """A device on a server host: its token model gives each request's work in seconds
    (``SsdModel``, ``DiskModel``), ``None`` for a memory device (no work); ``control`` its
    controller, if any."""

    name: str
    host: str
    model: TokenModel | None
    limits: dict[str, float]
    base_latency_s: float
    disk: dict[str, float] | None = None
    control: PsloControl | None = None
    array: dict[str, float] | None = None


@dataclass(frozen=True)
class Workload:
    """A workload: its trace, where it runs, its SLO and how it issues requests."""

    name: str
    trace: Trace
    client: str
    server: str
    device: str | None
    slo: Slo | None
    issue: Any
    #: One class name per request (``None``: every request in its workload's class).
    classes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario (see the module docstring)."""

    path: str | None
    bandwidth: dict[str, float]
    mtu: float
    propagation_s: float
    messages: MessageSizes
    hosts: tuple[str, ...]
    devices: tuple[Device, ...]
    workloads: tuple[Workload, ...]
    queues: dict[str, Fields]
    duration_s: float

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        """Read a ``.toml`` or ``.json`` scenario file."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ConfigError(path, f"cannot read the scenario: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(path, "the scenario is not UTF-8 text") from None
        if path.suffix not in (".toml", ".json"):
            raise ConfigError(path, "a scenario is a .toml or a .json file")
        if path.suffix == ".json":
            doc = loads_json(text, path)
        else:
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(path, f"not valid TOML: {e}") from None
        return cls.from_dict(doc, path=str(path), base=path.parent)

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], *, path: str | None = None, base: Path | None = None
    ) -> Scenario:
        """Build a scenario from its parsed document; relative paths resolve against ``base``."""
        top = Fields(doc, path, "")
        top.check_keys({"network", "hosts", "devices", "workloads", "queues", "duration_s"})
        base = base or Path.cwd()
        net = Fields(doc.get("network", {}), path, "network")
        net.check_keys({"bandwidth_bytes_per_s", "mtu_bytes", "propagation_s", "messages"})
        default_bw = net.number("bandwidth_bytes_per_s", 125_000_000.0, low_open=True)
        messages = MessageSizes()
        if net.has("messages"):
            m = net.table("messages")
            m.check_keys({"overhead_bytes", "small_factor", "large_factor"})
            messages = MessageSizes(
                m.number("overhead_bytes", messages.overhead_bytes),
                m.number("small_factor", messages.small_factor),
                m.number("large_factor", messages.large_factor),
            )
        hosts: list[str] = []
        bandwidth: dict[str, float] = {}
        for h in top.tables("hosts"):
            h.check_keys({"name", "bandwidth_bytes_per_s"})
            name = h.string("name")
            if name in bandwidth:
                raise h.error("name", f"duplicate host {name!r}")
            hosts.append(name)
            bandwidth[name] = h.number("bandwidth_bytes_per_s", default_bw, low_open=True)
        devices = tuple(_device(d, hosts, base) for d in top.tables("devices"))
        names = [d.name for d in devices]
        if len(set(names)) != len(names):
            raise top.error("devices", "device names must be unique")
        workloads = tuple(_workload(w, hosts, devices, base) for w in top.tables("workloads"))
        if not workloads:
            raise top.error("workloads", "a scenario needs at least one workload")
        if len({w.name for w in workloads}) != len(workloads):
            raise top.error("workloads", "workload names must be unique")
        for d in devices:
            _check_controlled(d, workloads, path)
        queue_names = {f"{h}.{d}" for h in hosts for d in ("egress", "ingress")} | set(names)
        queues: dict[str, Fields] = {}
        for q in top.tables("queues"):
            name = q.string("queue")
            if name not in queue_names:
                raise q.error("queue", f"no queue {name!r} (known: {sorted(queue_names)})")
            queues[name] = q
        return cls(
            path=path,
            bandwidth=bandwidth,
            mtu=net.number("mtu_bytes", 1500.0, low=MIN_MTU_BYTES),
            propagation_s=net.number("propagation_s", 0.0),
            messages=messages,
            hosts=tuple(hosts),
            devices=devices,
            workloads=workloads,
            queues=queues,
            duration_s=top.number("duration_s", float("inf"), low_open=True),
        )

    # ------------------------------------------------------------------------------- building
    def simulator(self) -> Simulator:
        """The configured simulation (per-stage costs from the token models, whole arrays)."""
        numbering = self._class_numbering()
        link_of = {}
        links = []
        for i, h in enumerate(self.hosts):
            for j, direction in enumerate(("egress", "ingress")):
                link_of[f"{h}.{direction}"] = 2 * i + j
                links.append(
                    {
                        "bandwidth": self.bandwidth[h],
                        "propagation": self.propagation_s,
                        "scheduler": self._scheduler(f"{h}.{direction}", numbering),
                    }
                )
        device_of = {d.name: i for i, d in enumerate(self.devices)}
        workload_index = {w.name: i for i, w in enumerate(self.workloads)}
        devices = [
            {
                **d.limits,
                "base_latency": d.base_latency_s,
                "scheduler": self._scheduler(d.name, numbering),
                **({"disk": d.disk} if d.disk is not None else {}),
                **({"array": d.array} if d.array is not None else {}),
                **({"control": d.control.core_config(workload_index)} if d.control else {}),
            }
            for d in self.devices
        ]
        specs, requests, stage_names = [], [], []
        for i, w in enumerate(self.workloads):
            route, cost, stages = self._route(w, link_of, device_of)
            specs.append({"route": route, "issue": w.issue})
            t = w.trace
            offset = None if t.offset is None else t.offset.astype(np.float64)
            classes = self._request_classes(i, numbering)
            requests.append(
                Requests(t.time, t.op, t.size.astype(np.float64), cost, offset, classes)
            )
            stage_names.append(stages)
        queues = {name: ("link", i) for name, i in link_of.items()}
        queues |= {name: ("device", i) for name, i in device_of.items()}
        config = {
            "topology": {"mtu": self.mtu, "links": links, "devices": devices},
            "workloads": specs,
        }
        try:
            return Simulator(
                config,
                requests,
                names=[w.name for w in self.workloads],
                stage_names=stage_names,
                slos=[w.slo for w in self.workloads],
                queues=queues,
            )
        except ValueError as e:
            raise ConfigError(self.path, str(e)) from None

    def _route(
        self, w: Workload, link_of: dict[str, int], device_of: dict[str, int]
    ) -> tuple[list[Any], list[np.ndarray], tuple[str, ...]]:
        t = w.trace
        net_in = [link_of[f"{w.client}.egress"], link_of[f"{w.server}.ingress"]]
        net_out = [link_of[f"{w.server}.egress"], link_of[f"{w.client}.ingress"]]
        if w.client == w.server:  # a local workload does not cross the network
            net_in, net_out = [], []
        route: list[Any] = [{"net": net_in}]
        cost = [self.messages.request_bytes(t)]
        stages = [Stage.NET_IN.value]
        if w.device is not None:
            device = self.devices[device_of[w.device]]
            route.append({"device": device_of[w.device]})
            work = device.model.tokens(t) if device.model is not None else np.zeros(len(t))
            cost.append(work)
            stages.append(Stage.STORAGE.value)
        route.append({"net": net_out})
        cost.append(self.messages.response_bytes(t))
        stages.append(Stage.NET_OUT.value)
        return route, cost, tuple(stages)

    def _scheduler(self, queue: str, classes: list[str] | None = None) -> dict[str, Any]:
        """The core's scheduler config of ``queue``: the core reads the queue's table (every
        kind and its fields are defined there, ``tailbound_core::sched::SchedulerConfig``),
        its classes numbered by ``classes`` when given (else its own, sorted)."""
        q = self.queues.get(queue)
        if q is None:
            return {"kind": "fifo"}
        fields = {k: v for k, v in q.data.items() if k != "queue"}
        try:
            config: dict[str, Any] = json.loads(
                _core.scheduler_config(fields, self._workload_infos(), classes)
            )
        except _core.FieldError as e:
            field, message = e.args
            raise q.error(field, message) from None
        return config

    def _workload_infos(self) -> list[tuple[str, float | None]]:
        return [(w.name, w.slo.latency_s if w.slo else None) for w in self.workloads]

    def _class_numbering(self) -> list[str] | None:
        """The classes of every queue, sorted, when a workload gives its requests classes of
        their own (they index this list at every queue); ``None`` otherwise."""
        if all(w.classes is None for w in self.workloads):
            return None
        names: set[str] = set()
        for q in self.queues.values():
            fields = {k: v for k, v in q.data.items() if k != "queue"}
            try:
                names.update(_core.scheduler_classes(fields, self._workload_infos()))
            except _core.FieldError as e:
                field, message = e.args
                raise q.error(field, message) from None
        return sorted(names)

    def _request_classes(self, i: int, numbering: list[str] | None) -> np.ndarray | None:
        """Workload ``i``'s request classes as indices of ``numbering``."""
        w = self.workloads[i]
        if w.classes is None or numbering is None:
            return None
        names, index = np.unique(np.asarray(w.classes, dtype=str), return_inverse=True)
        unknown = [str(n) for n in names if str(n) not in numbering]
        if unknown:
            first = w.classes.index(unknown[0])
            raise ConfigError(
                self.path,
                f"request {first} of workload {w.name!r} is in class {unknown[0]!r}, which no "
                f"queue has (the queues' classes: {numbering})",
                field=f"workloads[{i}].class",
            )
        position = np.array([numbering.index(str(n)) for n in names], dtype=np.uint32)
        return position[index]


def _profile(d: Fields, base: Path, kind: Any) -> Any:
    """A device's ``profile``: a path (relative to the scenario) or the profile's JSON inline."""
    raw = d.raw("profile")
    if isinstance(raw, Mapping):
        return kind.from_json(raw, path=f"{d.path or '<scenario>'} {d.at('profile')}")
    p = Path(d.string("profile"))
    return kind.load(p if p.is_absolute() else base / p)


def _device(d: Fields, hosts: list[str], base: Path) -> Device:
    d.check_keys(
        {
            "name",
            "host",
            "kind",
            "profile",
            "read_mpl",
            "write_mpl",
            "max_read_bytes",
            "max_write_bytes",
            "base_latency_s",
            "low_priority_mpl",
            "low_priority_bytes",
            "low_priority_work_s",
            "level_mpl",
            "batch_requests",
            "gap_bytes",
            "control",
            "array",
        }
    )
    host = d.string("host")
    if host not in hosts:
        raise d.error("host", f"no host {host!r}")
    kind = d.choice("kind", ("ssd", "disk", "memory"), "ssd")
    model: TokenModel | None = None
    defaults: dict[str, float] = {"read_mpl": 1, "write_mpl": 1}
    disk = None
    if kind == "disk":
        disk_profile = _profile(d, base, DiskProfile)
        model = DiskModel(disk_profile)
        disk = disk_rules(
            disk_profile,
            batch_requests=d.integer("batch_requests", DISK_BATCH_REQUESTS, low=1),
            gap_bytes=d.number("gap_bytes", DISK_GAP_BYTES, low=0.0),
        )
    elif d.has("batch_requests") or d.has("gap_bytes"):
        raise d.error(
            "batch_requests" if d.has("batch_requests") else "gap_bytes",
            "only a disk batches sequential writes",
        )
    if kind == "ssd":
        profile = _profile(d, base, SsdProfile)
        model = SsdModel(profile)
        defaults = {
            "read_mpl": profile.read_mpl,
            "write_mpl": profile.write_mpl,
            "max_read_bytes": profile.max_outstanding_read_bytes,
            "max_write_bytes": profile.max_outstanding_write_bytes,
        }
    limits: dict[str, float] = {}
    for key in ("read_mpl", "write_mpl"):
        limits[key] = d.integer(key, int(defaults[key]), low=1)
    for key in ("max_read_bytes", "max_write_bytes"):
        if d.has(key) or key in defaults:
            limits[key] = d.number(key, defaults.get(key), low_open=True)
    # thesis §2.2.1: less important requests allowed in service beside a more important one
    if d.has("low_priority_mpl"):
        limits["low_priority_mpl"] = d.integer("low_priority_mpl", low=0)
    if d.has("low_priority_bytes"):
        limits["low_priority_bytes"] = d.number("low_priority_bytes", low=0.0)
    # the work of levels below the device's most important one in service, at most (seconds)
    if d.has("low_priority_work_s"):
        limits["low_priority_work"] = d.number("low_priority_work_s", low=0.0)
    # requests of one level in service at once (1: a level first come first served)
    if d.has("level_mpl"):
        limits["level_mpl"] = d.integer("level_mpl", low=1)
    control = _control(d.table("control")) if d.has("control") else None
    array = _array(d.table("array")) if d.has("array") else None
    return Device(
        d.string("name"),
        host,
        model,
        limits,
        d.number("base_latency_s", 0.0),
        disk,
        control,
        array,
    )


def _array(a: Fields) -> dict[str, float]:
    """A device's ``array`` table: a disk array's service model in place of processor sharing
    (``sim/array.rs``, ``docs/simulator.md``): ``channels`` K (the knee, >= 1), ``interference``
    β in [0, 1), ``thrash`` α >= 0, ``tail_shape`` a > 1 (optional), ``seed``."""
    a.check_keys({"channels", "interference", "thrash", "tail_shape", "seed"})
    out: dict[str, float] = {"channels": a.integer("channels", low=1)}
    interference = a.number("interference", 0.0, low=0.0)
    if interference >= 1.0:
        raise a.error("interference", f"expected a number in [0, 1), got {interference!r}")
    out["interference"] = interference
    out["thrash"] = a.number("thrash", 0.0, low=0.0)
    if a.has("tail_shape"):
        out["tail_shape"] = a.number("tail_shape", low=1.0, low_open=True)
    out["seed"] = a.integer("seed", 0, low=0)
    return out


def _control(c: Fields) -> PsloControl:
    """A device's ``control`` table (PSLO's controller; ``docs/simulator.md``)."""
    c.check_keys({"kind", "policy", "slo", *_PSLO_NUMBERS, *_PSLO_INTEGERS})
    c.choice("kind", ("pslo",))
    policy = c.choice("policy", _core.PSLO_POLICIES)
    params: dict[str, float] = {}
    for key in _PSLO_INTEGERS:
        if c.has(key):
            params[key] = c.integer(key, low=1)
    for key, (low, low_open, high) in _PSLO_NUMBERS.items():
        if c.has(key):
            params[key] = c.number(key, low=low, low_open=low_open, high=high)
    slo: dict[str, TenantSlos] = {}
    table = c.table("slo")
    if not table.data:
        raise c.error("slo", "name at least one workload to control")
    for name in table.data:
        t = table.table(str(name))
        t.check_keys({"latency_s", "percentile", "throughput_iops"})
        latency_s = percentile = None
        if t.has("latency_s") or t.has("percentile"):
            latency_s = t.number("latency_s", low_open=True)
            percentile = t.number("percentile", low_open=True, high=1.0)
            if percentile >= 1.0:
                raise t.error("percentile", f"expected a fraction in (0, 1), got {percentile!r}")
        throughput = t.number("throughput_iops", low_open=True)
        slo[str(name)] = TenantSlos(latency_s, percentile, throughput)
    return PsloControl(policy, params, slo, c.where)


#: PSLO's real parameters in a ``control`` table: (lowest, lowest excluded, highest).
_PSLO_NUMBERS: dict[str, tuple[float, bool, float]] = {
    "threshold": (1.0, True, float("inf")),  # H > 1
    "window_s": (0.0, True, float("inf")),
    "enable_s": (0.0, False, float("inf")),
    "sigma": (0.0, True, float("inf")),
    "eta": (0.0, True, 1.0),
    "raise_at": (0.0, True, float("inf")),
}
#: PSLO's integer parameters (at least 1).
_PSLO_INTEGERS = ("interval_completions", "max_depth")


def _check_controlled(d: Device, workloads: tuple[Workload, ...], path: str | None) -> None:
    """Each workload a device's controller names exists and is served by that device."""
    if d.control is None:
        return
    for name in d.control.slo:
        match = [w for w in workloads if w.name == name]
        if not match or match[0].device != d.name:
            reason = "no workload" if not match else "not a workload of this device:"
            raise ConfigError(
                path,
                f"{reason} {name!r} (the device's workloads: "
                f"{[w.name for w in workloads if w.device == d.name]})",
                field=f"{d.control.at}.slo.{name}",
            )


#: Most requests in a batch of sequential writes (thesis §2.2.1 limits the batch but gives no
#: number; 8 writes of 64 KiB are about 3.5 ms at 150 MB/s, under half a 7200 rpm revolution).
DISK_BATCH_REQUESTS = 8
#: Largest forward gap in bytes for a write to count as "nearly sequential" (§2.2.1).
DISK_GAP_BYTES = 65536.0


def disk_rules(
    profile: DiskProfile,
    *,
    batch_requests: int = DISK_BATCH_REQUESTS,
    gap_bytes: float = DISK_GAP_BYTES,
) -> dict[str, float]:
    """The simulator's disk rule for sequential writes (thesis §2.2.1, ``sim/disk.rs``).

    A sequential write issued after its predecessor finished waits for its sector to come round
    (up to a revolution, ``60 / rpm``); batches of up to ``batch_requests`` sequential writes
    (gaps up to ``gap_bytes``) are written in one pass; a sequential write whose stream another
    request interrupted repositions (average seek + half a revolution). ``batch_requests = 1``
    turns batching off.

    >>> p = DiskProfile(rpm=7200, track_to_track_seek_s=0.001, average_seek_s=0.0085,
    ...                 full_stroke_seek_s=0.018, capacity_bytes=10**12, transfer_bandwidth=1.5e8)
    >>> r = disk_rules(p)
    >>> round(r["revolution"] * 1e3, 4), round(r["reposition"] * 1e3, 4), r["batch_requests"]
    (8.3333, 12.6667, 8)
    """
    return {
        "revolution": 60.0 / profile.rpm,
        "transfer_bandwidth": profile.transfer_bandwidth,
        "reposition": profile.average_seek_s + profile.rotational_latency_s,
        "batch_requests": batch_requests,
        "gap_bytes": float(gap_bytes),
    }


def _workload(w: Fields, hosts: list[str], devices: tuple[Device, ...], base: Path) -> Workload:
    w.check_keys({"name", "client", "server", "device", "trace", "slo", "issue", "class"})
    name = w.string("name")
    client = w.string("client")
    if client not in hosts:
        raise w.error("client", f"no host {client!r}")
    device = w.raw("device")
    server = w.raw("server")
    if device is not None:
        match = [d for d in devices if d.name == device]
        if not match:
            raise w.error("device", f"no device {device!r}")
        server = server or match[0].host
        if server != match[0].host:
            raise w.error("server", f"device {device!r} is on host {match[0].host!r}")
    if not isinstance(server, str) or server not in hosts:
        raise w.error("server", f"a workload needs a device or a server host, got {server!r}")
    slo = None
    if w.has("slo"):
        s = w.table("slo")
        s.check_keys({"latency_s", "percentile"})
        slo = Slo(
            s.number("latency_s", low_open=True), s.number("percentile", low_open=True, high=1.0)
        )
    issue: Any = "open"
    raw_issue = w.raw("issue", "open")
    if raw_issue != "open":
        if not isinstance(raw_issue, Mapping) or set(raw_issue) != {"closed"}:
            raise w.error(
                "issue", f'expected "open" or {{closed = {{outstanding = N}}}}, got {raw_issue!r}'
            )
        c = Fields(raw_issue["closed"], w.path, w.at("issue.closed"))
        c.check_keys({"outstanding"})
        issue = {"closed": {"outstanding": c.integer("outstanding", low=1)}}
    # A Trace object (Python API only: replaying a plan on held-out halves) or a source table.
    raw_trace = w.raw("trace")
    trace = raw_trace if isinstance(raw_trace, Trace) else load_source(w.table("trace"), base, name)
    classes = None
    if w.has("class"):
        raw = w.raw("class")
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if not isinstance(raw, list) or not all(isinstance(c, str) and c for c in raw):
            raise w.error("class", f"expected a list of class names (one per request), got {raw!r}")
        if len(raw) != len(trace):
            raise w.error(
                "class", f"{len(raw)} class names for {len(trace)} requests (one per request)"
            )
        classes = tuple(raw)
    return Workload(name, trace, client, server, device, slo, issue, classes)
