"""Tenants of a full-bisection network (and optionally storage devices) as SNC flows.

Tenants come from the one tenants file (:func:`tailbound.model.load_tenants`); the SNC analyses
need each tenant's ``client_host`` and ``server_host`` and a percentile below 1
(:func:`check_tenants`). Each tenant has a request flow (client host's egress → server host's
ingress) and a response flow (server host's egress → client host's ingress), whose work is bytes
on the wire by the network token model's :class:`MessageSizes` (a read's request is
``200 + 0.025·size`` bytes, its response ``200 + 1.1·size``; a write the reverse); every host link
serves the file's ``link_bandwidth_bytes_per_s`` in each direction. A tenant with a ``device``
also has a storage flow: one queue per device serving one device-second per second, work in
device-seconds by :class:`SsdModel` on the file's ``ssd_profile`` (thesis §4.4.6: storage is one
more queue; our choice: a separate one-hop flow analysed like a network hop).

Violation probability: a tenant's ``1 - percentile`` is split evenly over its flows (two, or three
with a device) and its latency is the sum of its flows' bounds: the thesis' union bound. The
reference implementation does not split evenly: an initialisation-order slip in its ``SNC.cpp``
sets a flow's epsilon from the number of flows added so far, so the request flow gets the whole
``1 − p`` and the response ``(1 − p)/2``. With that one line of the reference corrected, our bounds
agree with it to 1e-12 on seven scenarios, dependency groups included (docs/snc.md). Priorities by
SLO: dense ranks of ``slo_s``, 0 for the tightest, at most the plan's priority levels.

Dependencies: tenants sharing a ``group`` are mutually dependent (possibly adversarially
correlated); each flow's arrival depends on its own flow and on every flow of the group's other
tenants (not on its own tenant's other direction, as in the reference implementation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.errors import ConfigError
from tailbound.model import Tenant, TenantSet
from tailbound.profiles.tokens import MessageSizes, SsdProfile
from tailbound.snc.flows import Flow, Network
from tailbound.snc.mmpp import INTERVAL_NS, MmppArrival, MmppModel, fit_mmpp
from tailbound.traces.trace import Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from tailbound.lazy import numpy as np

#: Priority levels SNC-Meister's priorities by SLO may use (real enforcers have 8 or fewer:
#: HTB has 8 class priorities); SLO classes past the last share it (conservative: equal
#: priority counts as higher).
PRIORITY_LEVELS = 8


def check_tenants(
    tset: TenantSet, who: str = "the SNC analysis", *, stochastic: bool = True
) -> TenantSet:
    """``tset`` if every tenant has what ``who`` needs: client and server hosts, a profile for a
    device and, for a ``stochastic`` bound, a percentile below 1; :class:`ConfigError` naming
    the first field at fault otherwise."""
    tset.require("client_host", who)
    tset.require("server_host", who)
    for i, t in enumerate(tset.tenants):
        if stochastic and not t.percentile < 1:
            raise ConfigError(
                tset.path,
                "SNC bounds need a percentile in (0, 1)",
                field=f"tenants[{i}].percentile",
            )
        if t.device is not None and tset.ssd_profile is None:
            raise ConfigError(
                tset.path, f"tenant {t.name} names a device but no ssd_profile", field="ssd_profile"
            )
    return tset


@lru_cache(maxsize=8)
def ssd_profile(path: Path) -> SsdProfile:
    """The SSD profile at ``path``, read once."""
    return SsdProfile.load(path)


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
#: Version of the fit stored on disk: change it whenever :func:`fit_mmpp`, the work models or
#: the stored fields change, so older files are ignored.
FIT_FORMAT = "tailbound-mmpp-1"


def default_cache_dir() -> Path:
    """``$TAILBOUND_CACHE``, else ``$XDG_CACHE_HOME/tailbound``, else ``~/.cache/tailbound``."""
    import os

    if os.environ.get("TAILBOUND_CACHE"):
        return Path(os.environ["TAILBOUND_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tailbound"


@lru_cache(maxsize=1024)
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file's bytes (memoised per process on path, size and mtime)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: str | Path) -> str:
    """SHA-256 of the file at ``path`` (its content: a renamed or copied trace hits the cache,
    an edited one misses it)."""
    p = Path(path)
    st = p.stat()
    return _file_digest(p.resolve(), st.st_size, st.st_mtime_ns)


@dataclass
class FitCache:
    """MMPP fits keyed by (trace, direction); fitting is the slow part, done once per trace.

    ``interval_ns``: the fit's interval length (:func:`~tailbound.snc.mmpp.fit_mmpp`).

    ``disk``: a folder keeping fits across processes (``tailbound bound`` uses
    :func:`default_cache_dir`): ``mmpp/<key>.fit`` with the key a SHA-256 of the trace file's
    content, the direction, the interval, the work model (for storage the SSD profile's content)
    and :data:`FIT_FORMAT`. A fit found there is the fit itself (its arrays stored exactly), so
    every bound is the same with or without it; the trace is then not even read."""

    models: dict[tuple[str, str], MmppModel] = field(default_factory=dict)
    requests: dict[str, Requests] = field(default_factory=dict)
    # Traces by ``str(spec.trace)``, read once (the fits and the measured floor both use them);
    # experiments holding their traces in memory prime it.
    traces: dict[str, Trace] = field(default_factory=dict)
    fit_seconds: float = 0.0
    # The MMPP fit's interval (the reference's 1 s); other values are a diagnostic knob only
    # (docs/results-snc.md, "Why SNC-Meister misses").
    interval_ns: int = INTERVAL_NS
    disk: Path | None = None
    disk_hits: int = 0
    # Traces read from their files by :meth:`trace` (the others in ``traces`` were primed by
    # the caller, e.g. first halves, and are not what the file holds: never cached on disk).
    _from_file: set[str] = field(default_factory=set, repr=False)
    # Network fits made in the core straight from a trace file (:meth:`_file_fits`), by trace;
    # None: the file goes through the Python reader.
    _file: dict[str, dict[str, MmppModel] | None] = field(default_factory=dict, repr=False)

    def trace(self, spec: Tenant) -> Trace:
        """``spec``'s trace, read from its file the first time."""
        key = str(spec.trace)
        if key not in self.traces:
            from tailbound.traces import read_trace

            self.traces[key] = read_trace(Path(spec.trace))
            self._from_file.add(key)
        return self.traces[key]

    def model(self, spec: Tenant, direction: str, tset: TenantSet) -> MmppModel:
        key = (str(spec.trace), direction)
        if key not in self.models:
            import time

            start = time.perf_counter()
            stored = self._disk_path(spec, direction, tset)
            model = _load_model(stored) if stored is not None else None
            if model is not None:
                self.disk_hits += 1
            else:
                from_file = self._file_fits(spec) if direction in ("in", "out") else None
                if from_file is not None:
                    model = from_file[direction]
                else:
                    if str(spec.trace) not in self.requests:
                        self.requests[str(spec.trace)] = requests_of(self.trace(spec))
                    req = self.requests[str(spec.trace)]
                    model = fit_mmpp(req.arrival_ns, work(req, direction, tset), self.interval_ns)
                if stored is not None:
                    _save_model(stored, model)
            self.models[key] = model
            self.fit_seconds += time.perf_counter() - start
        return self.models[key]

    def _file_fits(self, spec: Tenant) -> dict[str, MmppModel] | None:
        """The ``in`` and ``out`` fits of ``spec``'s trace file, both made by the Rust core from
        the file in one pass (parsed there: no :class:`Trace`, no numpy; the same fit and the
        same message sizes as :func:`fit_mmpp` on :func:`work`), or ``None`` when the file needs
        the Python reader: a trace primed by the caller, a format the core does not fit from a
        file, or a file the reader would reject (naming the fault) or sort (with its warning)."""
        key = str(spec.trace)
        if key not in self._file:
            self._file[key] = None
            path = Path(spec.trace)
            if key not in self.traces and path.is_file():
                from tailbound import _core
                from tailbound.errors import TailboundError
                from tailbound.limits import MAX_REQUEST_BYTES, MAX_TIME_S
                from tailbound.snc.bounds import STEP_S
                from tailbound.traces.detect import detect_format

                try:
                    fmt = detect_format(path)
                except TailboundError:
                    return None
                sizes = MessageSizes()
                messages = [(sizes.overhead_bytes, *sizes.factors(d)) for d in ("in", "out")]
                fits = _core.fit_trace_file(
                    path, fmt, MAX_TIME_S, MAX_REQUEST_BYTES, messages, self.interval_ns, STEP_S
                )
                if fits is not None:
                    models = [MmppModel.of_core(fit) for fit in fits]
                    self._file[key] = dict(zip(("in", "out"), models, strict=True))
        return self._file[key]

    def _disk_path(self, spec: Tenant, direction: str, tset: TenantSet) -> Path | None:
        """Where the fit of ``spec``'s trace in ``direction`` is kept on disk (``None``: no
        disk cache, or a trace that is not a file)."""
        primed = str(spec.trace) in self.traces and str(spec.trace) not in self._from_file
        if self.disk is None or primed or not Path(spec.trace).is_file():
            return None
        import hashlib

        parts = [FIT_FORMAT, file_digest(spec.trace), direction, str(self.interval_ns)]
        if direction == "storage":
            assert tset.ssd_profile is not None
            parts.append(file_digest(tset.ssd_profile))
        else:
            parts.append(repr(MessageSizes()))
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        return self.disk / "mmpp" / f"{key}.fit"


_MODEL_ARRAYS = ("transition", "p_request", "mu", "lambdas", "state_of_interval")
#: Each stored array's type: numpy's dtype string in the file, the ``array`` module's code here
#: (every array but the states is float64).
_ARRAY_TYPES = {name: ("<f8", "d") for name in _MODEL_ARRAYS} | {"state_of_interval": ("<i8", "q")}


def _load_model(path: Path) -> MmppModel | None:
    """The fit stored at ``path``, ``None`` if absent or unreadable (then it is fitted again).

    The file is one JSON line (the format, ``a``, each array's dtype and shape) and the arrays'
    bytes in that order (little-endian float64, int64 for the states): no zip archive to open
    (``np.load`` of an ``.npz`` cost more than the fit of a small trace), and read with the
    ``array`` module into the core's model (no numpy)."""
    import json
    import sys
    from array import array

    from tailbound import _core

    try:
        raw = path.read_bytes()
        head, _, body = raw.partition(b"\n")
        meta = json.loads(head)
        if meta.get("format") != FIT_FORMAT:
            return None
        values: dict[str, list[Any]] = {}
        at = 0
        for name, (dtype, shape) in zip(_MODEL_ARRAYS, meta["arrays"], strict=True):
            want, code = _ARRAY_TYPES[name]
            a = array(code)
            count = 1
            for d in shape:
                count *= int(d)
            if dtype != want or at + count * a.itemsize > len(body):
                return None
            a.frombytes(body[at : at + count * a.itemsize])
            if sys.byteorder != "little":
                a.byteswap()
            values[name] = a.tolist()
            at += count * a.itemsize
        if at != len(body):
            return None
        core = _core.Mmpp(
            values["transition"],
            values["p_request"],
            values["mu"],
            values["lambdas"],
            float(meta["a"]),
            values["state_of_interval"],
        )
        return MmppModel.of_core(core)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save_model(path: Path, model: MmppModel) -> None:
    """Store ``model`` at ``path`` (all or nothing); a cache that cannot be written is skipped."""
    import json
    import sys
    from array import array

    from tailbound.atomic import atomic_path

    core = model.core
    n = core.states
    state = core.state_of_interval
    shapes = {
        "transition": [n, n],
        "p_request": [n],
        "mu": [n],
        "lambdas": [n],
        "state_of_interval": [len(state)],
    }
    arrays = []
    for name in _MODEL_ARRAYS:
        _, code = _ARRAY_TYPES[name]
        a = array(code, getattr(core, name))
        if sys.byteorder != "little":
            a.byteswap()
        arrays.append(a)
    meta = {
        "format": FIT_FORMAT,
        "a": float(core.a),  # JSON keeps a float64 exactly (its shortest repr round-trips)
        "arrays": [[_ARRAY_TYPES[k][0], shapes[k]] for k in _MODEL_ARRAYS],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(json.dumps(meta).encode() + b"\n")
            for a in arrays:
                f.write(a.tobytes())
    except OSError:
        pass


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
        return req.size.astype(np.float64) / ssd_profile(tset.ssd_profile).bandwidth(op, req.size)
    raise ValueError(direction)


def priorities_by_slo(slos: Sequence[float], levels: int = PRIORITY_LEVELS) -> list[int]:
    """Dense ranks of the SLO latencies, 0 for the tightest (thesis §4.2), capped at
    ``levels − 1``.

    >>> priorities_by_slo([0.2, 0.05, 0.2, 0.1])
    [2, 0, 2, 1]
    >>> priorities_by_slo([0.2, 0.05, 0.2, 0.1], levels=2)
    [1, 0, 1, 1]
    """
    rank = slo_levels(slos, levels)
    return [rank[s] for s in slos]


def slo_levels(slos: Iterable[float], levels: int = PRIORITY_LEVELS) -> dict[float, int]:
    """Each distinct SLO latency's priority in :func:`priorities_by_slo`: its dense rank, 0 for
    the tightest, capped at ``levels − 1``.

    >>> slo_levels([0.2, 0.05, 0.2, 0.1])
    {0.05: 0, 0.1: 1, 0.2: 2}
    """
    return {s: min(i, levels - 1) for i, s in enumerate(sorted(set(slos)))}


@dataclass(frozen=True)
class TenantFlows:
    """The flow ids of one tenant by direction."""

    tenant: int
    flows: dict[str, int]


def flow_paths(t: Tenant) -> dict[str, tuple[str, ...]]:
    """The queues each of ``t``'s flows crosses, by direction: ``in`` (client host's egress,
    server's ingress), ``out`` (back) and, with a device, ``storage`` (the device's queue).

    >>> from pathlib import Path
    >>> from tailbound.model import Slo, Tenant
    >>> t = Tenant("a", Slo(0.1), Path("t.csv"), client_host="c0", server="s0", device="ssd0")
    >>> for direction, path in flow_paths(t).items():
    ...     print(direction, path)
    in ('c0/egress', 's0/ingress')
    out ('s0/egress', 'c0/ingress')
    storage ('s0/ssd0/device',)
    """
    paths: dict[str, tuple[str, ...]] = {
        "in": (f"{t.client_host}/egress", f"{t.server}/ingress"),
        "out": (f"{t.server}/egress", f"{t.client_host}/ingress"),
    }
    if t.device is not None:
        # A device belongs to its server: ssd0 of s0 and ssd0 of s1 are two queues (the
        # plan names them "<server>.<device>"; before, every "ssd0" shared one queue).
        paths["storage"] = (f"{t.server}/{t.device}/device",)
    return paths


def build_network(
    tset: TenantSet,
    tenants: Sequence[Tenant],
    cache: FitCache,
    priorities: Sequence[int] | None = None,
) -> tuple[Network, list[TenantFlows], list[int]]:
    """The network of ``tenants`` (a subset of ``tset``, e.g. the admitted ones): queues, flows
    with priorities by SLO (:func:`priorities_by_slo` of ``tenants``, or the ``priorities``
    given, one per tenant: those of a larger set ``tenants`` are part of) and dependency sets;
    also each tenant's flow ids and priority."""
    net = Network()
    if priorities is None:
        priorities = priorities_by_slo([t.slo_s for t in tenants])
    elif len(priorities) != len(tenants):
        raise ValueError(f"{len(priorities)} priorities for {len(tenants)} tenants")
    priorities = list(priorities)
    plan: list[tuple[int, str, tuple[str, ...]]] = []
    by_tenant: list[TenantFlows] = []
    next_id = 0
    for i, t in enumerate(tenants):
        paths = flow_paths(t)
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
