"""wcPlacer: first-fit and fast-first-fit placement, arrivals and departures (thesis §5.2.3).

Servers are tried in order, and on each server its devices in order (a server with several
devices shares one link, Fig. 5.11). A policy decides whether the newcomer fits on a server and
returns the rate limits of every tenant there:

- :class:`WorkloadCompactorPolicy` re-solves the server's LP (:mod:`tailbound.policies.wc_lp`),
  re-optimising every co-located tenant's ``(r, b)``, and checks the result with the exact
  bound (wcLatencyChecker);
- :class:`FixedPolicy` gives each tenant the fixed ``(r, b)`` of a baseline and checks.

Fast-first-fit skips, without solving anything, a (server, device) where the configured rates of
a queue plus the newcomer's mean rate would exceed the queue's capacity (0.999, Eq. 5.4). On a
departure the policy re-configures the server the tenant left.

For the LP policy two exact screens skip servers whose LP is provably infeasible, a chunk of
candidates at a time: the cluster screen (:mod:`tailbound.policies.cluster_screen`) and the
infeasibility certificates kept from the server's earlier infeasible LPs
(:mod:`tailbound.policies.certificates`). Neither changes where a tenant lands (tested against
a plain per-server loop).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from tailbound.model import Cluster
from tailbound.model import Server as ServerConfig
from tailbound.policies import wc_lp
from tailbound.policies.baselines import Baseline, Limits
from tailbound.policies.certificate_store import CertificateStore
from tailbound.policies.certificates import Certificate
from tailbound.policies.cluster_screen import ClusterScreen
from tailbound.policies.events import Event
from tailbound.policies.rejection import why_rejected
from tailbound.policies.server import (
    RATE_CAP,
    REFERENCE,
    Placed,
    ServerModel,
    check,
    latency_bounds,
)
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

T = TypeVar("T", ClusterScreen | None, CertificateStore | None)

#: Candidate servers screened at once, at first (then twice as many each time): first-fit
#: usually stops within the first few, so screening all of them would mostly be wasted.
CHUNK = 64


class Policy(Protocol):
    """A placement policy: configures the tenants of one server, or says they do not fit
    together.

    Optional capabilities the placer uses when a policy offers them (WorkloadCompactor's): a true
    ``screen`` says ``configure`` solves the server LP of :mod:`tailbound.policies.wc_lp`, so the
    cluster screen may skip servers where that LP is provably infeasible; a true ``certify`` says
    an infeasible ``configure`` leaves its infeasibility certificates in ``certificates``.
    """

    @property
    def name(self) -> str:
        """The policy's name as the ``place`` command spells it."""
        ...

    def configure(
        self, tenants: Sequence[Placed], devices: int, newcomer: int | None = None
    ) -> Limits | None:
        """Rate limits ``(rate, bucket)``, each ``(n, 3)``, for ``tenants`` or ``None``;
        ``newcomer`` is the index of the tenant just added, if any."""
        ...


def refusal_key(workload: TenantCurves) -> Hashable:
    """What decides whether a server refuses ``workload`` besides the server's tenants: its
    curves (the shaper delays, a baseline's fixed ``(r, b)``, the LP's columns), SLO and
    largest requests (its blocking of others); not its name. A policy offering it (a
    ``refusal_key`` method) and saying a refusal was final (``refusal_final``: it holds however
    many tenants join the server) lets the :class:`Placer` remember the refusal per server,
    until a tenant leaves, instead of checking the same newcomer again (Fig. 5.4's runs draw
    the same workloads many times)."""
    return (id(workload.curves), workload.slo, workload.largest)


@dataclass
class WorkloadCompactorPolicy:
    """Joint rate limits from the server's LP, then the exact latency check.

    Before solving, :func:`~tailbound.policies.wc_lp.certainly_infeasible` looks for a cheap
    proof that the LP has no solution (exact: it never skips a feasible LP, so placements are
    the same with or without it; ``screen=False`` turns it off). With ``certify`` an infeasible
    LP leaves its infeasibility certificates in ``certificates`` (for the placer to keep).

    ``refusal_final`` says whether the last refusal came from an infeasible (or screened) LP:
    a server's LP only gains rows and terms as tenants join (every tenant's bucket and rate
    sums, the blocking by less important tenants only grow), so it stays infeasible, and the
    :class:`Placer` may remember it (:func:`refusal_key`); a feasible LP whose solution fails
    the exact check is not final (a larger set's LP may choose other limits).
    """

    name: str = "workloadcompactor"
    screen: bool = True
    certify: bool = True
    model: ServerModel = REFERENCE
    lp_solves: int = 0
    screened: int = 0
    certificates: list[Certificate] = field(default_factory=list)
    refusal_final: bool = False

    def __post_init__(self) -> None:
        # the certificates are derived for the reference LP (the screens stay exact for a
        # model's LP: its constraints are tighter, so a proof of infeasibility still holds)
        self.certify = self.certify and self.model is REFERENCE

    def configure(
        self, tenants: Sequence[Placed], devices: int, newcomer: int | None = None
    ) -> Limits | None:
        self.certificates = []
        self.refusal_final = True
        if self.screen and newcomer is not None and wc_lp.certainly_infeasible(tenants, newcomer):
            self.screened += 1
            return None
        self.lp_solves += 1
        solution, self.certificates = wc_lp.solve_certified(
            tenants, devices, certify=self.certify, model=self.model
        )
        self.refusal_final = solution is None
        if solution is None or not check(
            tenants, solution.rate, solution.bucket, devices, self.model
        ):
            return None
        return solution.rate, solution.bucket

    def refusal_key(self, workload: TenantCurves) -> Hashable:
        return refusal_key(workload)


@dataclass
class FixedPolicy:
    """Each tenant keeps the ``(r, b)`` its baseline chose alone (cached per workload)."""

    baseline: Baseline
    model: ServerModel = REFERENCE
    _cache: dict[Hashable, tuple[Limits | None, object]] = field(default_factory=dict)
    #: Every refusal is final while the server only gains tenants (:func:`refusal_key`): with
    #: every tenant's ``(r, b)`` fixed, each term of every bound (Eq. 5.1's bucket and rate sums,
    #: the blocking by less important tenants) only grows.
    refusal_final: bool = True

    @property
    def name(self) -> str:
        return self.baseline.name

    def limits(self, workload: TenantCurves) -> Limits | None:
        """The baseline's ``(r, b)`` for ``workload``, chosen once per :meth:`refusal_key` (the
        same curves and SLO drawn again under another name get the same limits)."""
        key = self.refusal_key(workload)
        if key not in self._cache:  # the curves kept alive with it: their id stays theirs
            self._cache[key] = (self.baseline.choose(workload), workload.curves)
        return self._cache[key][0]

    def refusal_key(self, workload: TenantCurves) -> Hashable:
        return refusal_key(workload)

    def configure(
        self, tenants: Sequence[Placed], devices: int, newcomer: int | None = None
    ) -> Limits | None:
        chosen = [self.limits(t.workload) for t in tenants]
        if any(c is None for c in chosen):
            return None
        rate = np.array([c[0] for c in chosen if c is not None])
        bucket = np.array([c[1] for c in chosen if c is not None])
        if not check(tenants, rate, bucket, devices, self.model):
            return None
        return rate, bucket


@dataclass
class ServerState:
    """A server's tenants and their current limits."""

    config: ServerConfig
    tenants: list[Placed] = field(default_factory=list)
    rate: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 3)))
    bucket: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def devices(self) -> int:
        return len(self.config.devices)

    def bounds(self, model: ServerModel = REFERENCE) -> NDArray[np.float64]:
        """Each tenant's predicted latency bound (s) under ``model``."""
        return latency_bounds(self.tenants, self.rate, self.bucket, model)


@dataclass
class PlacementResult:
    """Where every tenant went: the servers (in cluster order), who could not be placed, the
    peak number of servers in use, and how much work it took."""

    servers: list[ServerState]
    rejected: list[str]
    peak_servers: int
    configure_calls: int
    seconds: float
    cluster_screened: int = 0
    certified: int = 0
    #: The server model the policy analysed the servers with (their bounds are under it).
    model: ServerModel = REFERENCE
    #: Why each rejected tenant was not placed, with numbers (:mod:`.rejection`).
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def servers_used(self) -> int:
        """Servers with at least one tenant now."""
        return sum(1 for s in self.servers if s.tenants)

    def placed(self) -> dict[str, tuple[int, Placed, int]]:
        """Tenant name → (server index, placement, row in the server's limits)."""
        return {
            p.workload.name: (i, p, row)
            for i, s in enumerate(self.servers)
            for row, p in enumerate(s.tenants)
        }


class Placer:
    """Places workloads one by one onto a cluster with a policy.

    ``grow=True`` adds servers like the last one when all are full (scalability experiments);
    otherwise a workload that fits nowhere is rejected.

    ``window=N`` is bounded first-fit: a newcomer is offered only the last ``N`` servers (and,
    with ``grow``, a new one), so the screens and LPs per tenant stop growing with the cluster.
    Every placement is still configured and checked by the policy (as valid as first-fit's);
    it can use more servers, since older servers' leftover room is no longer tried (measured in
    benchmarks/README.md, "bench_scale": 16 servers cost nothing at 2,000 tenants, 4 cost 5 %).
    """

    def __init__(
        self,
        cluster: Cluster,
        policy: Policy,
        *,
        fast_first_fit: bool = False,
        grow: bool = False,
        cluster_screen: bool = True,
        remember_refusals: bool = True,
        window: int | None = None,
    ) -> None:
        if window is not None and window < 1:
            raise ValueError(f"window must be at least 1 server, got {window}")
        self.cluster = cluster
        #: Only the last ``window`` servers are tried (bounded first-fit); ``None``: all.
        self.window = window
        self.policy = policy
        self.fast_first_fit = fast_first_fit
        self.grow = grow
        self.servers = [ServerState(c) for c in cluster.servers]
        self.max_devices = max(len(c.devices) for c in cluster.servers)
        # configured rate sums per server: [net_in, net_out, storage_0..]; NaN for absent devices
        # (``sums`` views the first rows of ``_sums``, which grows by doubling as servers are added)
        self._sums = np.full((max(1, len(self.servers)), 2 + self.max_devices), np.nan)
        for i, s in enumerate(self.servers):
            self._sums[i, : 2 + s.devices] = 0.0
        self.sums = self._sums[: len(self.servers)]
        # the LP screen over all servers at once: only for a policy whose configure solves the
        # server LP and says so (``screen``: WorkloadCompactor's)
        self.screen: ClusterScreen | None = None
        if cluster_screen and getattr(policy, "screen", False):
            self.screen = ClusterScreen(self.max_devices)
            for s in self.servers:
                self.screen.add_server(s.devices)
        # kept infeasibility certificates: only for a policy that makes them (one switch, the
        # policy's ``certify``; it leaves them in its ``certificates``)
        self.certificates: CertificateStore | None = None
        if getattr(policy, "certify", False):
            self.certificates = CertificateStore(self.max_devices)
            for _ in self.servers:
                self.certificates.add_server()
        # refusals remembered per server: only for a policy that says which of its refusals
        # are final while a server only gains tenants (``refusal_key``, ``refusal_final``)
        self.refused: list[set[Hashable]] | None = None
        if remember_refusals and hasattr(policy, "refusal_key"):
            self.refused = [set() for _ in self.servers]
        self.remembered = 0
        self._pinned: dict[int, object] = {}
        self.screened = 0
        self.certified = 0
        self.where: dict[str, int] = {}
        self.rejected: list[str] = []
        self.reasons: dict[str, str] = {}
        self.peak = 0
        self.in_use = 0  # servers with tenants
        self.calls = 0

    def fork(self) -> Placer:
        """An independent copy, as ``copy.deepcopy`` would make but in O(servers) cheap steps:
        what :meth:`add` and :meth:`remove` change in place (the rate sums, the cluster screen,
        the certificate store, the remembered refusals, the bookkeeping) is copied; each
        :class:`ServerState` is copied shallowly, since its tenants and limits are replaced,
        never changed in place; the
        cluster, the policy (its caches are keyed by workload, not by placement) and the
        workloads are shared. The control plane forks the placer per decision
        (docs/service.md, "Load benchmark")."""
        new = copy.copy(self)
        new.servers = [copy.copy(s) for s in self.servers]
        new._sums = self._sums.copy()
        new.sums = new._sums[: len(new.servers)]
        new.screen = _fork_state(self.screen)
        new.certificates = _fork_state(self.certificates)
        new.where = dict(self.where)
        new.rejected = list(self.rejected)
        new.reasons = dict(self.reasons)
        # the remembered refusals are per server state: a fork's refusal on a server it has
        # filled further, or a departure clearing it, must not reach the parent (nor the reverse)
        new.refused = None if self.refused is None else [set(r) for r in self.refused]
        new._pinned = dict(self._pinned)
        return new

    # ------------------------------------------------------------------ bookkeeping
    def _add_server(self) -> None:
        template = self.cluster.servers[-1]
        config = ServerConfig(f"server{len(self.servers):03d}", template.devices)
        self.servers.append(ServerState(config))
        n = len(self.servers)
        if n > len(self._sums):
            grown = np.full((2 * len(self._sums), self._sums.shape[1]), np.nan)
            grown[: n - 1] = self._sums[: n - 1]
            self._sums = grown
        self._sums[n - 1, : 2 + len(template.devices)] = 0.0
        self.sums = self._sums[:n]
        if self.screen is not None:
            self.screen.add_server(len(template.devices))
        if self.certificates is not None:
            self.certificates.add_server()
        if self.refused is not None:
            self.refused.append(set())

    def _update(self, i: int, was_in_use: bool) -> None:
        """Server ``i``'s tenants changed (it had tenants before if ``was_in_use``)."""
        s = self.servers[i]
        row = self.sums[i]
        if s.tenants:
            devices = [t.device for t in s.tenants]
            row[0] = s.rate[:, 0].sum()
            row[1] = s.rate[:, 2].sum()
            # each device's sum in tenant order (as ``np.add.at`` adds: the same floats)
            row[2 : 2 + s.devices] = np.bincount(devices, s.rate[:, 1], minlength=s.devices)
        else:
            row[: 2 + s.devices] = 0.0
        if self.screen is not None:
            self.screen.set_server(i, s.tenants, s.devices)
        self.in_use += bool(s.tenants) - was_in_use
        self.peak = max(self.peak, self.in_use)

    def _candidates(
        self, first: int, mean: tuple[float, ...]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(server, device) pairs from server ``first`` on, in first-fit order, filtered by
        fast-first-fit (``mean``: the newcomer's mean rate per stage of
        :data:`~tailbound.stages.STORAGE_PATH`): servers and devices."""
        n, d = len(self.servers), self.max_devices
        if not self.fast_first_fit:
            pairs = [(i, k) for i in range(first, n) for k in range(self.servers[i].devices)]
            return (
                np.array([p[0] for p in pairs], dtype=np.int64),
                np.array([p[1] for p in pairs], dtype=np.int64),
            )
        sums = self.sums[first:]
        ok_net = (sums[:, 0] + mean[0] <= RATE_CAP) & (sums[:, 1] + mean[2] <= RATE_CAP)
        ok = ok_net[:, None] & (sums[:, 2:] + mean[1] <= RATE_CAP)  # NaN compares False
        flat = np.flatnonzero(ok)
        if d == 1:
            return flat + first, np.zeros(len(flat), dtype=np.int64)
        return flat // d + first, flat % d

    def _screen(
        self, workload: TenantCurves, servers: NDArray[np.int64], devices: NDArray[np.int64]
    ) -> list[tuple[int, int]]:
        """Drop the (server, device) pairs where the cluster screen or a kept certificate proves
        the LP infeasible (exact, so first-fit still finds the same server)."""
        if self.max_devices == 1:  # every pair on device 0: no grouping
            return self._screen_device(workload, 0, servers)
        keep = np.ones(len(servers), dtype=bool)
        for k in np.unique(devices).tolist():
            at = np.nonzero(devices == k)[0]
            if self.screen is not None:
                infeasible = self.screen.infeasible(workload, k, servers[at])
                self.screened += int(infeasible.sum())
                keep[at] = ~infeasible
            if self.certificates is not None:
                at = at[keep[at]]
                refuted = self.certificates.refuted(Placed(workload, k), servers[at])
                self.certified += int(refuted.sum())
                keep[at] = ~refuted
        return list(zip(servers[keep].tolist(), devices[keep].tolist(), strict=True))

    def _screen_device(
        self, workload: TenantCurves, device: int, servers: NDArray[np.int64]
    ) -> list[tuple[int, int]]:
        """:meth:`_screen` when every pair is on ``device``."""
        if self.screen is not None:
            infeasible = self.screen.infeasible(workload, device, servers)
            hits = int(np.count_nonzero(infeasible))
            if hits:
                self.screened += hits
                servers = servers[~infeasible]
        if self.certificates is not None:
            refuted = self.certificates.refuted(Placed(workload, device), servers)
            hits = int(np.count_nonzero(refuted))
            if hits:
                self.certified += hits
                servers = servers[~refuted]
        return [(i, device) for i in servers.tolist()]

    # ------------------------------------------------------------------ events
    def add(self, workload: TenantCurves) -> int | None:
        """Place ``workload`` on the first (server, device) where it fits; its server index."""
        if workload.name in self.where:
            raise ValueError(f"tenant {workload.name!r} is already placed")
        # servers before ``first`` are not tried: they refused the newcomer already, or lie
        # outside the window
        first = 0 if self.window is None else max(0, len(self.servers) - self.window)
        mean = tuple(workload.mean(s) for s in STORAGE_PATH)
        # the newcomer's refusal key, once (hashing its SLO is not free)
        refusal: Hashable = None
        if self.refused is not None:
            refusal = self.policy.refusal_key(workload)  # type: ignore[attr-defined]
        while True:
            servers, devices = self._candidates(first, mean)
            # screen the candidates a chunk at a time: first-fit usually stops in the first
            lo, size = 0, CHUNK
            while lo < len(servers):
                chunk = slice(lo, lo + size)
                for i, device in self._screen(workload, servers[chunk], devices[chunk]):
                    if self._try(workload, i, device, refusal):
                        return i
                lo, size = lo + size, 2 * size
            if not self.grow or (self.servers and not self.servers[-1].tenants):
                # an empty server did not take it: it fits nowhere
                self.rejected.append(workload.name)
                self.reasons[workload.name] = why_rejected(
                    workload,
                    self.servers,
                    self.policy,
                    len(self.cluster.servers[-1].devices),
                    getattr(self.policy, "model", REFERENCE),
                )
                return None
            # only the new server is worth trying: the others have not changed since they
            # refused (the same LPs would refuse again)
            first = len(self.servers)
            self._add_server()

    def _try(self, workload: TenantCurves, i: int, device: int, refusal: Hashable) -> bool:
        """Configure server ``i`` with ``workload`` on ``device``; place it there if it fits
        (``refusal``: the policy's :func:`refusal_key` of ``workload``, when remembered)."""
        server = self.servers[i]
        key: Hashable = None
        if self.refused is not None:
            key = (refusal, device)
            if key in self.refused[i]:
                self.remembered += 1
                return False
        tenants = [*server.tenants, Placed(workload, device)]
        self.calls += 1
        # the cluster screen already ran the per-server screen's test (and more)
        screened = self.screen is not None and self.screen.active
        newcomer = None if screened else len(tenants) - 1
        limits = self.policy.configure(tenants, server.devices, newcomer)
        if limits is None:
            if self.certificates is not None:
                self.certificates.add(i, self.policy.certificates)  # type: ignore[attr-defined]
            if self.refused is not None and getattr(self.policy, "refusal_final", False):
                self.refused[i].add(key)
                self._pinned[id(workload.curves)] = workload.curves  # the key's id stays theirs
            return False
        was_in_use = bool(server.tenants)
        server.tenants = tenants
        server.rate, server.bucket = limits
        self.where[workload.name] = i
        if self.certificates is not None:
            self.certificates.joined(i, tenants[-1])
        self._update(i, was_in_use)
        return True

    def load(
        self,
        i: int,
        tenants: Sequence[Placed],
        rate: NDArray[np.float64],
        bucket: NDArray[np.float64],
    ) -> None:
        """Put ``tenants`` with their limits on the empty server ``i``, as another placement
        left them (:mod:`tailbound.policies.partitioned` merges partitions this way)."""
        server = self.servers[i]
        if server.tenants:
            raise ValueError(f"server {server.config.name!r} is not empty")
        server.tenants, server.rate, server.bucket = list(tenants), rate, bucket
        for t in tenants:
            self.where[t.workload.name] = i
        self._update(i, False)

    def remove(self, name: str) -> None:
        """Remove a tenant and re-configure the server it left."""
        i = self.where.pop(name)
        server = self.servers[i]
        keep = [k for k, t in enumerate(server.tenants) if t.workload.name != name]
        server.tenants = [server.tenants[k] for k in keep]
        server.rate, server.bucket = server.rate[keep], server.bucket[keep]
        if self.certificates is not None:
            self.certificates.clear(i)
        if self.refused is not None:
            self.refused[i].clear()  # fewer tenants: what it refused may fit now
        if server.tenants:
            self.calls += 1
            limits = self.policy.configure(server.tenants, server.devices)
            if limits is not None:  # fewer tenants always fit; keep the old limits otherwise
                server.rate, server.bucket = limits
        self._update(i, True)

    def result(self, seconds: float) -> PlacementResult:
        return PlacementResult(
            self.servers,
            self.rejected,
            self.peak,
            self.calls,
            seconds,
            self.screened,
            self.certified,
            getattr(self.policy, "model", REFERENCE),
            dict(self.reasons),
        )


def _fork_state(state: T) -> T:
    """A copy of a :class:`ClusterScreen` or :class:`CertificateStore` (or ``None``) for
    :meth:`Placer.fork`: their ``fork`` (the Rust side shares each server's arrays until one
    copy changes them)."""
    return None if state is None else state.fork()


def place(
    workloads: Sequence[TenantCurves],
    cluster: Cluster,
    policy: Policy,
    *,
    fast_first_fit: bool = False,
    events: Sequence[Event] | None = None,
    grow: bool = False,
    progress: Callable[[int], None] | None = None,
    cluster_screen: bool = True,
    remember_refusals: bool = True,
    window: int | None = None,
) -> PlacementResult:
    """Place ``workloads`` in order (or replay ``events``, whose indices refer to
    ``workloads``); ``progress(1)`` after each event. ``remember_refusals=False`` checks a
    fixed-limit policy's refusals again (the same placement, slower: :meth:`FixedPolicy
    .refusal_key`). ``window`` tries only the last ``window`` servers (:class:`Placer`): fewer
    screens and LPs per tenant, a few more servers."""
    start = time.perf_counter()
    placer = Placer(
        cluster,
        policy,
        fast_first_fit=fast_first_fit,
        grow=grow,
        cluster_screen=cluster_screen,
        remember_refusals=remember_refusals,
        window=window,
    )
    steps = events if events is not None else [Event(i, "add") for i in range(len(workloads))]
    for event in steps:
        w = workloads[event.tenant]
        if event.kind == "add":
            placer.add(w)
        elif w.name in placer.where:
            placer.remove(w.name)
        if progress is not None:
            progress(1)
    return placer.result(time.perf_counter() - start)
