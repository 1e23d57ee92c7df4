"""An Aequitas Plan replayed on real links: its RPC tenants' traffic sent by ``tailbound-replay
rpc`` with the Plan's classes and controller, and checked by ``verify``'s Aequitas checks
(``docs/aequitas.md``, "A Plan replayed live").

The RPCs are the ones ``tailbound verify`` replays in the simulator
(:func:`tailbound.sim.aequitas_plan.tenant_rpcs`: the same times, sizes, destinations and
requested classes, from the network's ``seed``); each is sent from this host, open loop at its
time, to the RPC server of its destination host, on the connection of its (destination, class
run) marked with the class's DSCP, its class decided by the core's controller configured as
the Plan's (:meth:`~tailbound.plan_aequitas.AequitasPlan.admission_config`). With ``source`` only
the RPCs the Plan sends from that host are replayed (several sender hosts, one per source);
without it every RPC is sent from this host, the Plan's senders merged into one (one shaped
egress link, its controller's channels per destination and class, not per source). A size in
MTUs is ``⌈size / 1448⌉`` here (TCP's payload per 1500-byte frame), not the Plan's
``mtu_bytes``: per-MTU SLOs are per MTU of the live link.

The measurements are checked by :func:`tailbound.verify_aequitas.check_rpcs`, the checks
``verify`` applies to the simulator's run: per class, and per tenant and class, the RNL at the
class's percentile of the RPCs that ran there (middle 80 % by issue time) against the SLO, and
the admitted share against the prediction.

The Plan's times are the live link's: the tenants file states the network at the rate of the
shaped link (``link_rate_bps``, e.g. 50e6) with SLOs of milliseconds, so the Plan, its
prediction and the live run share one time scale (no scaling of microsecond SLOs).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tailbound.atomic import atomic_path
from tailbound.enforce.net import Addresses
from tailbound.enforce.rpc_replay import RpcClass, RpcResults, Rpcs, client_config, run_rpcs
from tailbound.errors import ConfigError
from tailbound.plan import Plan
from tailbound.plan_aequitas import AequitasPlan
from tailbound.sim.aequitas_plan import TenantRpcs, tenant_rpcs
from tailbound.traces.trace import Trace
from tailbound.verify_aequitas import ClassChecks, check_rpcs

#: TCP's payload per 1500-byte Ethernet frame with timestamps: a live MTU, in bytes.
MSS_BYTES = 1448.0
#: The columns of :meth:`LiveAequitas.write_rpcs`, one row per RPC sent.
RPC_COLUMNS = (
    "tenant",
    "time_s",
    "dst",
    "class",
    "class_run",
    "downgraded",
    "p_admit",
    "size_bytes",
    "size_mtus",
    "issue_lag_s",
    "latency_s",
)
#: The replayer's smallest request (its header), bytes: smaller RPCs are sent at this size.
MIN_RPC_BYTES = 32


@dataclass(frozen=True)
class LiveAequitas(ClassChecks):
    """An Aequitas plan replayed live: the plan's ``rpcs`` (with their tenants), the mask of
    those this host ``sent``, what the client ``measured`` (one entry per RPC sent, in the same
    order) and the checks."""

    rpcs: TenantRpcs
    sent: np.ndarray  # bool: which of ``rpcs`` this host sent
    measured: RpcResults

    def write_rpcs(self, path: str | Path) -> None:
        """Every RPC sent, one CSV row: ``tenant, time_s, dst, class`` (requested),
        ``class_run, downgraded, p_admit, size_bytes, size_mtus, issue_lag_s, latency_s``
        (seconds; empty: never issued or unanswered), written atomically."""
        m, names = self.measured, self.rpcs.names
        tenants = [names[k] for k in self.rpcs.tenant[self.sent].tolist()]
        dst = self.rpcs.rpcs.dst[self.sent].tolist()
        num = [m.p_admit, m.issue_lag_s, m.latency_s]
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(RPC_COLUMNS)
            for i, t in enumerate(tenants):
                p, lag, lat = (repr(float(x[i])) if np.isfinite(x[i]) else "" for x in num)
                row = (t, repr(float(m.time_s[i])), dst[i], m.cls[i], m.class_run[i])
                more = (int(m.downgraded[i]), p, int(m.size_bytes[i]), int(m.size_mtus[i]))
                w.writerow((*row, *more, lag, lat))

    @property
    def lost(self) -> int:
        """RPCs left unanswered."""
        return self.measured.lost

    @property
    def all_held(self) -> bool:
        """Every class met its SLO and held its share, and every RPC was answered."""
        return super().all_held and self.lost == 0


def section_of(plan: Plan) -> AequitasPlan:
    """``plan``'s Aequitas section (refused, naming the field, when it has none)."""
    if plan.aequitas is None:
        raise ConfigError(None, "missing (not an Aequitas plan)", field="aequitas")
    return plan.aequitas


def live_rpcs(
    plan: Plan, traces: Mapping[str, Trace], *, source: int | None = None
) -> tuple[TenantRpcs, np.ndarray]:
    """The Plan's RPCs (``traces`` by tenant, sizes in bytes) as ``verify`` replays them, and
    the mask of those this host sends (``source``: the Plan's host it is; ``None``: all)."""
    section = section_of(plan)
    names = [n for n in section.tenants if n in traces]
    if not names:
        raise ConfigError(None, "no RPC tenant to replay", field="tenants")
    network = section.network
    if source is not None and not 0 <= source < network.hosts:
        raise ConfigError(
            None, f"host {source} is not one of the network's {network.hosts}", field="--host"
        )
    rpcs = tenant_rpcs(network, {n: section.tenants[n] for n in names}, traces)
    mine = np.ones(len(rpcs.rpcs), dtype=bool) if source is None else rpcs.rpcs.src == source
    return rpcs, mine


def destinations(hosts: Sequence[int], addresses: Addresses) -> dict[str, str]:
    """The client's destinations: each of the Plan's ``hosts`` (by number) at the address of
    ``addresses.hosts[str(host)]`` and the port ``addresses.ports[str(host)]`` (an Aequitas
    hosts file names the network's hosts by number, and gives each destination's RPC server
    one port: a connection per destination and class, not per tenant)."""
    out = {}
    for h in sorted(set(int(x) for x in hosts)):
        key = str(h)
        if key not in addresses.hosts:
            raise ConfigError(addresses.path, f"no address for host {h}", field=f"hosts.{key}")
        if key not in addresses.ports:
            raise ConfigError(addresses.path, f"no port for host {h}", field=f"ports.{key}")
        ip = addresses.hosts[key]
        out[key] = f"[{ip}]:{addresses.ports[key]}" if ":" in ip else f"{ip}:{addresses.ports[key]}"
    return out


def client_of(plan: Plan, addresses: Mapping[str, str]) -> dict:
    """The ``tailbound-replay rpc`` configuration of ``plan``: the classes (name, DSCP, SLO),
    the controller (:meth:`~tailbound.plan_aequitas.AequitasPlan.admission_config` but the
    targets, which the classes carry), the network's seed, the destinations ``addresses``."""
    section = section_of(plan)
    admission = dict(section.admission_config())
    del admission["latency_target_s"]
    classes = [RpcClass(c.name, c.dscp, c.slo_s) for c in section.network.classes]
    return client_config(
        addresses, classes, admission, mss_bytes=MSS_BYTES, seed=section.network.seed
    )


def replay_live(
    plan: Plan,
    traces: Mapping[str, Trace],
    addresses: Addresses,
    *,
    source: int | None = None,
    drain_s: float = 5.0,
    start_delay_s: float = 0.5,
    prefix: Sequence[str] = (),
    workdir: str | Path | None = None,
) -> LiveAequitas:
    """Replay ``plan``'s RPC tenants (``traces`` by name, bytes) from this host through
    ``tailbound-replay rpc`` (behind ``prefix``, e.g. ``ip netns exec NS``) to the servers of
    ``addresses`` (:func:`destinations`) and check them (module documentation)."""
    section = section_of(plan)
    rpcs, mine = live_rpcs(plan, traces, source=source)
    if not mine.any():
        raise ConfigError(None, f"host {source} sends no RPC of the plan", field="--host")
    arrivals = rpcs.rpcs
    dst = arrivals.dst[mine]
    config = client_of(plan, destinations(dst.tolist(), addresses))
    names = [c.name for c in section.network.classes]
    sent = Rpcs(
        time_s=arrivals.time_s[mine],
        dst=[str(d) for d in dst.tolist()],
        cls=[names[c] for c in arrivals.cls[mine].tolist()],
        size_bytes=np.maximum(arrivals.size_bytes[mine], MIN_RPC_BYTES),
    )
    measured = run_rpcs(
        config, sent, drain_s=drain_s, start_delay_s=start_delay_s, prefix=prefix, workdir=workdir
    )
    if len(measured.time_s) != len(sent):
        raise ConfigError(
            None, f"the client reported {len(measured.time_s)} RPCs of {len(sent)} sent"
        )
    index = {n: i for i, n in enumerate(names)}
    ran = np.array([index.get(str(c), -1) for c in measured.class_run], dtype=np.int64)
    checks = check_rpcs(
        plan,
        rpcs.names,
        tenant=rpcs.tenant[mine],
        time_s=sent.time_s,
        asked=arrivals.cls[mine].astype(np.int64),
        ran=ran,
        rnl_s=measured.latency_s,
        size_mtus=measured.size_mtus,
    )
    return LiveAequitas(checks=checks, rpcs=rpcs, sent=mine, measured=measured)


def serve_ports(plan: Plan, host: str, addresses: Addresses) -> list[int]:
    """The port host ``host`` (a number of the Plan's network) serves RPCs on."""
    section = section_of(plan)
    if not (host.isdigit() and int(host) < section.network.hosts):
        raise ConfigError(
            None, f"{host!r} is not a host number below {section.network.hosts}", field="--host"
        )
    if host not in addresses.ports:
        raise ConfigError(addresses.path, f"no port for host {host}", field=f"ports.{host}")
    return [addresses.ports[host]]


def summary(run: LiveAequitas) -> str:
    """One line: classes, misses, RPCs, downgrades and unanswered RPCs."""
    m = run.measured
    return (
        f"{len(run.classes)} classes replayed live: {len(run.violations)} SLOs missed, "
        f"{len(run.shares_missed)} admitted shares below the prediction; {len(m.time_s)} RPCs, "
        f"{int(m.downgraded.sum())} downgraded, {run.lost} unanswered"
        + (
            ""
            if not len(m.issue_lag_s) or not np.isfinite(m.issue_lag_s).any()
            else f"; pacer lag max {1e3 * float(np.nanmax(m.issue_lag_s)):.2f} ms"
        )
    )
