"""Network enforcement: a :class:`~tailbound.plan.Plan`'s network stages as Linux traffic control
(HTB through netlink with pyroute2) and DSCP marks (nftables), for one host and device.

The design and why it realises the bound the Plan promises are in ``docs/enforcement.md``. In
short, on the device's egress:

* one HTB qdisc (handle ``7462:``, "tb") whose root class ``7462:1`` runs at the **link rate**
  (rate = ceil = the link's bytes/s), so the queue that matters forms here, in our tree;
* per tenant whose stage starts on this host (``net_in`` at its client, ``net_out`` at its
  server: the sender shapes, :func:`tailbound.plan.stage_queues`) a leaf class with a negligible
  assured rate (:data:`ASSURED_RATE`): every packet is sent by **borrowing** from the root, and
  HTB serves borrowers strictly by class ``prio`` (its level-1 row), which is the non-preemptive
  strict priority of Eq. 5.1 with the Plan's level as ``prio`` (0 most important);
* the Plan's token bucket ``(r, b)`` in bytes: in ``shaping`` mode the leaf's ``ceil`` = r and
  ``cburst`` = b − one packet (HTB lets a class send while its tokens are ≥ 0, so it admits one
  packet more than ``cburst``); extra buckets are nested parent classes (HTB checks every
  ancestor's ceil before a borrow); in ``demotion`` mode nftables' byte limiter marks the packets
  over the bucket best effort (DSCP CS0) and the tenant's filter, which also matches its DSCP,
  no longer takes them: they fall to the best-effort class, below every level;
* a meter (:mod:`tailbound.enforce.net_meter`): per tenant with a bucket, nftables counters of
  its packets and of those beyond its primary bucket, read by ``enforce net --meter``;
* classification by u32 filters on the tenant's addresses (and TCP port, when the hosts file
  gives one), IPv4 without options (``ihl = 5``) or IPv6 without extension headers, and its
  DSCP; DSCP marks by nftables in a table of our own (``inet tailbound_<device>``,
  postrouting on the device): level ``p`` gets class selector CS(7 − p), best effort and
  everything else CS0, so a priority-honouring switch (:func:`switch_config`) orders the
  receive side the same way.

Nothing is touched before the Plan, the hosts file and the device have been checked; a foreign
(non-default) root qdisc is never replaced; :func:`remove` deletes only our qdisc (the kernel
puts the device's default back) and our nftables table.

This module configures and talks to the host only. The buckets it installs, in bytes on the
wire, are :func:`tailbound.enforce.realised.wire_buckets`' (the byte arithmetic in
:mod:`tailbound.profiles.wire`); the bound of the discipline it realises is
:mod:`tailbound.dnc.htb`'s, checked against the Plan by :mod:`tailbound.enforce.bounds_check`.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailbound.enforce import net_meter
from tailbound.enforce.realised import wire_buckets
from tailbound.errors import ConfigError, TailboundError
from tailbound.plan import Plan, TenantPlan, client_name
from tailbound.profiles.wire import MTU
from tailbound.stages import Stage

#: Our HTB qdisc's major handle ("tb"); leaf pfifo qdiscs get majors from :data:`LEAF_MAJOR` on.
MAJOR = 0x7462
LEAF_MAJOR = 0x7500
ROOT = MAJOR << 16
LINK_CLASS = ROOT | 0x1
BEST_EFFORT_CLASS = ROOT | 0x2
#: The assured rate (bytes/s) of every non-root class: small enough that a class is almost never
#: "green" (sending on its own tokens, which would skip the priority order of the borrowers):
#: with a burst of one packet it can be green for at most one packet every MTU/ASSURED_RATE s.
ASSURED_RATE = 100
#: HTB's class priorities are 0..7; the last is kept for best-effort and demoted traffic.
HTB_PRIOS = 8
BEST_EFFORT_PRIO = HTB_PRIOS - 1
LEAF_LIMIT = 1000  # packets in each leaf's pfifo
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
#: nftables table names: [a-zA-Z0-9_] only.
_NFT_SAFE = re.compile(r"[^A-Za-z0-9_]")
#: Root qdiscs the kernel installs by itself; anything else belongs to someone and is kept.
DEFAULT_QDISCS = frozenset({"noqueue", "pfifo_fast", "mq", "fq_codel", "noop"})


class EnforceError(TailboundError):
    """The host cannot take the configuration (missing device, foreign qdisc, readback failed)."""


def dscp_of(prio: int) -> int:
    """The DSCP a packet of HTB priority ``prio`` carries: class selector CS(7 − prio), so the
    most important level is CS7 and best effort (prio 7) CS0.

    >>> [dscp_of(p) for p in (0, 3, 7)]
    [56, 32, 0]
    """
    return 8 * (BEST_EFFORT_PRIO - prio)


# ------------------------------------------------------------------------------ hosts file
@dataclass(frozen=True)
class Addresses:
    """Where the Plan's hosts are: ``hosts`` maps a client host or server name to its IPv4
    address, ``ports`` a tenant to the TCP port its server listens on (optional: without one a
    tenant is every packet between its client and server, so two tenants of one pair need ports).

    File layout: ``{"hosts": {"client0": "198.18.0.1", ...}, "ports": {"T0": 5000, ...}}``."""

    hosts: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)
    path: str | None = None

    @classmethod
    def load(cls, path: str | Path) -> Addresses:
        try:
            doc = json.loads(Path(path).read_text())
        except OSError as e:
            raise ConfigError(path, f"cannot read the hosts file: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ConfigError(path, f"not JSON: {e.msg} (line {e.lineno})") from None
        return cls.from_json(doc, path=str(path))

    @classmethod
    def from_json(cls, doc: Any, *, path: str | None = None) -> Addresses:
        if not isinstance(doc, dict):
            raise ConfigError(path, "expected an object with 'hosts' and 'ports'")
        unknown = set(doc) - {"hosts", "ports"}
        if unknown:
            raise ConfigError(path, "unknown key", field=sorted(unknown)[0])
        hosts_doc, ports_doc = doc.get("hosts"), doc.get("ports", {})
        if not isinstance(hosts_doc, dict):
            raise ConfigError(path, f"expected an object, got {hosts_doc!r}", field="hosts")
        if not isinstance(ports_doc, dict):
            raise ConfigError(path, f"expected an object, got {ports_doc!r}", field="ports")
        hosts = {}
        for name, ip in hosts_doc.items():
            try:
                hosts[name] = str(ipaddress.ip_address(ip))
            except (ipaddress.AddressValueError, ValueError, TypeError):
                raise ConfigError(
                    path, f"expected an IPv4 or IPv6 address, got {ip!r}", field=f"hosts.{name}"
                ) from None
        ports = {}
        for name, port in ports_doc.items():
            if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                raise ConfigError(path, f"expected a TCP port, got {port!r}", field=f"ports.{name}")
            ports[name] = port
        return cls(hosts, ports, path)

    def ip(self, host: str, tenant: str, where: str) -> str:
        if host not in self.hosts:
            raise ConfigError(
                self.path, f"no address for host {host!r} (tenant {tenant}, {where})", field="hosts"
            )
        return self.hosts[host]


# ------------------------------------------------------------------------------ the objects
@dataclass(frozen=True, order=True)
class HtbClass:
    """One HTB class; rates in bytes/s, bursts in bytes (as the kernel stores them, see
    :func:`stored_burst`)."""

    classid: int
    parent: int
    rate: int
    ceil: int
    burst: int
    cburst: int
    prio: int
    quantum: int
    label: str = field(default="", compare=False)

    def line(self) -> str:
        return (
            f"class htb {_h(self.classid)} parent {_h(self.parent)} rate {self.rate}B/s "
            f"ceil {self.ceil}B/s burst {self.burst}B cburst {self.cburst}B prio {self.prio} "
            f"quantum {self.quantum}"
        )


@dataclass(frozen=True, order=True)
class Leaf:
    """The pfifo qdisc under a leaf class."""

    handle: int
    parent: int
    limit: int

    def line(self) -> str:
        return f"qdisc pfifo {_h(self.handle)} parent {_h(self.parent)} limit {self.limit}"


@dataclass(frozen=True, order=True)
class Filter:
    """A u32 filter: ``match`` is a tuple of ``(byte offset in the IP header, value, mask)``
    bytes (a byte-wise normal form, so what we ask and what the kernel stores compare equal)."""

    pref: int
    classid: int
    match: tuple[tuple[int, int, int], ...]
    label: str = field(default="", compare=False)
    #: The packets' ethertype: IPv4 (offsets in the IPv4 header) or IPv6 (in the IPv6 header).
    protocol: int = ETH_P_IP

    def line(self) -> str:
        m = " ".join(f"{o}:{v:02x}/{k:02x}" for o, v, k in self.match)
        family = "ip" if self.protocol == ETH_P_IP else "ipv6"
        return f"filter u32 {family} pref {self.pref} classid {_h(self.classid)} match {m}"

    def keys(self) -> list[str]:
        """The keys as pyroute2 takes them: ``0xVALUE/0xMASK+OFFSET``, 32-bit aligned."""
        words: dict[int, tuple[int, int]] = {}
        for off, value, mask in self.match:
            base, shift = off - off % 4, 8 * (3 - off % 4)
            v, k = words.get(base, (0, 0))
            words[base] = (v | value << shift, k | mask << shift)
        return [f"0x{v:08x}/0x{k:08x}+{base}" for base, (v, k) in sorted(words.items())]


@dataclass(frozen=True)
class NetConfig:
    """Everything one device gets: the HTB tree, its filters and the nftables rules."""

    device: str
    link_rate: int
    classes: tuple[HtbClass, ...]
    leaves: tuple[Leaf, ...]
    filters: tuple[Filter, ...]
    nft_rules: tuple[str, ...] = ()
    default_class: int = BEST_EFFORT_CLASS

    @property
    def nft_table(self) -> str:
        return nft_table(self.device)

    def lines(self, *, labels: bool = False) -> list[str]:
        """The configuration as text, one object a line (what ``--dry-run`` prints and
        ``--diff`` compares)."""
        out = [f"qdisc htb {_h(ROOT)} root default {_h(self.default_class)}"]
        for c in sorted(self.classes):
            out.append(c.line() + (f"  # {c.label}" if labels and c.label else ""))
        out += [leaf.line() for leaf in sorted(self.leaves)]
        for f in sorted(self.filters):
            out.append(f.line() + (f"  # {f.label}" if labels and f.label else ""))
        out += [f"nft {self.nft_table}: {r}" for r in self.nft_rules]
        return out


def _h(handle: int) -> str:
    major, minor = handle >> 16, handle & 0xFFFF
    return f"{major:x}:" if minor == 0 else f"{major:x}:{minor:x}"


def nft_table(device: str) -> str:
    return "tailbound_" + _NFT_SAFE.sub("_", device)


# ------------------------------------------------------------------------------ HTB arithmetic
def _tick_in_usec() -> float:
    from pyroute2.netlink.rtnl.tcmsg import common

    return float(common.tick_in_usec)


def stored_burst(rate: int, burst: int) -> int:
    """The burst (bytes) HTB keeps for ``burst`` at ``rate``: the kernel stores a burst as the
    time to send it, in psched ticks (``buffer``, computed as pyroute2 and tc do), so the bytes
    come back rounded; configurations are compared in these terms.

    >>> 1500 <= stored_burst(12_500_000, 1514) <= 1514
    True
    """
    from pyroute2.netlink.rtnl.tcmsg.common import calc_xmittime

    return _burst_from_ticks(rate, int(calc_xmittime(rate, burst)))


def _burst_from_ticks(rate: int, ticks: int) -> int:
    return round(ticks / _tick_in_usec() / 1e6 * rate)


def htb_class(
    classid: int,
    parent: int,
    *,
    rate: int,
    ceil: int,
    burst: int,
    cburst: int,
    prio: int,
    label: str = "",
) -> HtbClass:
    """An HTB class with a one-packet quantum (the DRR among classes of one priority then
    alternates packets)."""
    return HtbClass(
        classid,
        parent,
        rate,
        ceil,
        burst,
        cburst,
        prio,
        MTU,
        label,
    )


def shaping_burst(bucket_bytes: float) -> int:
    """HTB's ``cburst`` for a token bucket of ``bucket_bytes``: HTB sends while a class's tokens
    are ≥ 0 and charges the packet after, so it admits ``cburst`` plus one packet; a bucket
    smaller than a packet is enforced as one packet.

    >>> shaping_burst(100_000), shaping_burst(1000)
    (98486, 0)
    """
    return max(int(bucket_bytes) - MTU, 0)


# ------------------------------------------------------------------------------ building
@dataclass(frozen=True)
class _Flow:
    tenant: TenantPlan
    index: int
    stage: Stage
    src: str
    dst: str
    sport: int | None
    dport: int | None


def _base(link_rate: int) -> list[HtbClass]:
    return [
        htb_class(
            LINK_CLASS,
            ROOT,
            rate=link_rate,
            ceil=link_rate,
            burst=MTU,
            cburst=MTU,
            prio=0,
            label="the link",
        ),
        htb_class(
            BEST_EFFORT_CLASS,
            LINK_CLASS,
            rate=ASSURED_RATE,
            ceil=link_rate,
            burst=MTU,
            cburst=MTU,
            prio=BEST_EFFORT_PRIO,
            label="best effort, demoted and unclassified",
        ),
    ]


def _is_v6(address: str) -> bool:
    return ipaddress.ip_address(address).version == 6


def _match(src: str, dst: str, sport: int | None, dport: int | None, dscp: int | None):
    if _is_v6(src):
        return _match_v6(src, dst, sport, dport, dscp)
    m: list[tuple[int, int, int]] = [(0, 0x45, 0xFF)]  # IPv4, header without options
    if dscp is not None:
        m.append((1, dscp << 2, 0xFC))
    if sport is not None or dport is not None:
        m.append((9, 6, 0xFF))  # TCP
    m += [(12 + i, b, 0xFF) for i, b in enumerate(ipaddress.IPv4Address(src).packed)]
    m += [(16 + i, b, 0xFF) for i, b in enumerate(ipaddress.IPv4Address(dst).packed)]
    for off, port in ((20, sport), (22, dport)):
        if port is not None:
            m += [(off, port >> 8, 0xFF), (off + 1, port & 0xFF, 0xFF)]
    return tuple(m)


def _dscp_v6(dscp: int) -> list[tuple[int, int, int]]:
    """IPv6's traffic class (DSCP << 2) spans the low nibble of byte 0 and the high one of byte
    1: the DSCP's top four bits and its last two."""
    return [(0, 0x60 | dscp >> 2, 0xFF), (1, (dscp & 3) << 6, 0xC0)]


def _match_v6(src: str, dst: str, sport: int | None, dport: int | None, dscp: int | None):
    """The IPv6 match: version 6, DSCP, next header TCP (no extension headers), addresses at
    bytes 8 and 24, ports at 40 and 42."""
    m = _dscp_v6(dscp) if dscp is not None else [(0, 0x60, 0xF0)]
    if sport is not None or dport is not None:
        m.append((6, 6, 0xFF))
    m += [(8 + i, b, 0xFF) for i, b in enumerate(ipaddress.IPv6Address(src).packed)]
    m += [(24 + i, b, 0xFF) for i, b in enumerate(ipaddress.IPv6Address(dst).packed)]
    for off, port in ((40, sport), (42, dport)):
        if port is not None:
            m += [(off, port >> 8, 0xFF), (off + 1, port & 0xFF, 0xFF)]
    return tuple(m)


def _family(f: _Flow) -> str:
    return "ip6" if _is_v6(f.src) else "ip"


def _nft_match(device: str, f: _Flow) -> str:
    fam = _family(f)
    out = f'oifname "{device}" {fam} saddr {f.src} {fam} daddr {f.dst}'
    if f.sport is not None:
        out += f" tcp sport {f.sport}"
    if f.dport is not None:
        out += f" tcp dport {f.dport}"
    return out


def host_flows(
    plan: Plan, host: str, addresses: Addresses, *, receive: bool = False
) -> list[_Flow]:
    """The tenants' network stages whose first queue is ``host``'s egress (``receive``: whose
    second queue is ``host``'s receive side), with their packets' addresses and ports
    (``net_in``: client → server, to the tenant's port; ``net_out``: server → client, from
    it)."""
    flows = []
    for i, t in enumerate(plan.tenants):
        client = client_name(t)
        sender = {Stage.NET_IN: client, Stage.NET_OUT: t.server}
        receiver = {Stage.NET_IN: t.server, Stage.NET_OUT: client}
        for stage in t.stages:
            if stage not in sender or (receiver if receive else sender)[stage] != host:
                continue
            if stage is Stage.NET_IN:
                src, dst = (
                    addresses.ip(client, t.name, "net_in"),
                    addresses.ip(t.server, t.name, "net_in"),
                )
                port = addresses.ports.get(t.name)
                flows.append(_Flow(t, i, stage, src, dst, None, port))
            else:
                src, dst = (
                    addresses.ip(t.server, t.name, "net_out"),
                    addresses.ip(client, t.name, "net_out"),
                )
                port = addresses.ports.get(t.name)
                flows.append(_Flow(t, i, stage, src, dst, port, None))
    seen: dict[tuple[str, str, int | None, int | None], str] = {}
    for f in flows:
        key = (f.src, f.dst, f.sport, f.dport)
        wild = (f.src, f.dst, None, None)
        other = seen.get(key) or (seen.get(wild) if f.sport or f.dport else None)
        if other is None and f.sport is None and f.dport is None:
            other = next((n for k, n in seen.items() if k[:2] == key[:2]), None)
        if other is not None:
            raise ConfigError(
                addresses.path,
                f"tenants {other} and {f.tenant.name} share {f.src} → {f.dst}: give each a port",
                field=f"ports.{f.tenant.name}",
            )
        seen[key] = f.tenant.name
    return flows


def host_config(
    plan: Plan,
    host: str,
    device: str,
    addresses: Addresses,
    *,
    link_rate: int | None = None,
    plan_path: str | None = None,
    receive: bool = False,
) -> NetConfig:
    """The configuration of ``host``'s ``device`` for ``plan`` (see the module's text).

    ``link_rate`` (bytes/s) defaults to the capacity the Plan's network buckets were computed
    for. With ``receive`` the tree of the packets ``host`` receives, for the IFB device that
    ``device``'s ingress is redirected to (:func:`ifb_name`): per tenant a class at its level
    matching its addresses, ports and DSCP, no buckets (the sender shapes) and no marks.
    Raises :class:`ConfigError` naming the Plan's or the hosts file's field at fault."""
    flows = host_flows(plan, host, addresses, receive=receive)
    if receive:
        device = ifb_name(device)
    if link_rate is None:
        capacities = {
            lim.capacity_per_s
            for f in flows
            for lim in (f.tenant.limits.get(f.stage),)
            if lim is not None and lim.capacity_per_s
        }
        if not capacities:
            raise ConfigError(
                plan_path, "no link capacity in the plan: give --link-rate", field="tenants"
            )
        link_rate = int(max(capacities))
    if link_rate <= ASSURED_RATE * 16:
        raise ConfigError(plan_path, f"link rate {link_rate} B/s is too small", field="link_rate")
    classes = _base(link_rate)
    leaves = [Leaf(LEAF_MAJOR << 16, BEST_EFFORT_CLASS, LEAF_LIMIT)]
    filters: list[Filter] = []
    rules: list[str] = []
    meters: list[str] = []
    for k, f in enumerate(flows):
        t, where = f.tenant, f"tenants[{f.index}]"
        level = t.priority.get(f.stage)
        mode = plan.discipline(f.stage)
        label = f"{t.name} {f.stage}"
        match = _nft_match(device, f)
        if level is None:  # best effort at this stage: the default class, marked CS0
            rules.append(f"{match} {_family(f)} dscp set cs0 accept")
            continue
        if mode.kind != "priority":
            raise ConfigError(
                plan_path,
                f"the network enforcer realises strict priority, not {mode.kind!r}",
                field=f"disciplines.{f.stage}",
            )
        if level >= BEST_EFFORT_PRIO:
            raise ConfigError(
                plan_path,
                f"level {level}: HTB has {HTB_PRIOS} priorities and the last is best effort's; "
                f"re-plan with at most {BEST_EFFORT_PRIO} levels",
                field=f"{where}.priority.{f.stage}",
            )
        for j, lim in enumerate(
            (t.limits[f.stage], *t.extra_limits.get(f.stage, ())) if f.stage in t.limits else ()
        ):
            if not (0 < lim.rate <= 1 and lim.bucket_s >= 0):
                field_ = f"{where}.stages.{f.stage}" + (f".extra[{j - 1}]" if j else "")
                raise ConfigError(
                    plan_path, f"bucket ({lim.rate}, {lim.bucket_s}) out of range", field=field_
                )
        buckets = [
            (min(max(int(r), 1), link_rate), b) for r, b in wire_buckets(t, f.stage, link_rate)
        ]
        if receive:  # the sender shaped: only the order here
            buckets = []
        if buckets:  # the meter of the primary bucket (net_meter), before every mark
            meters += net_meter.meter_rules(match, t.name, f.stage.value, *buckets[0])
        dscp = dscp_of(level)
        base = ROOT | (0x100 + 0x10 * k)
        if mode.mode == "shaping" and buckets:
            # the primary bucket on the leaf, each extra one a parent around it
            chain = list(reversed(buckets))  # outermost first
        else:
            chain = [(link_rate, float(MTU))]
            for r, b in buckets:  # demotion: nftables marks what exceeds a bucket CS0
                rules.append(
                    f"{match} limit rate over {r} bytes/second burst {int(b)} bytes "
                    f"{_family(f)} dscp set cs0 accept"
                )
        parent = LINK_CLASS
        for depth, (r, b) in enumerate(chain):
            cid = base + depth
            is_leaf = depth == len(chain) - 1
            cburst = MTU if (r, b) == (link_rate, float(MTU)) else shaping_burst(b)
            classes.append(
                htb_class(
                    cid,
                    parent,
                    rate=ASSURED_RATE,
                    ceil=r,
                    burst=MTU,
                    cburst=cburst,
                    prio=level,
                    label=f"{label} level {level}" + ("" if is_leaf else " (outer bucket)"),
                )
            )
            parent = cid
        leaves.append(Leaf((LEAF_MAJOR + 1 + k) << 16, parent, LEAF_LIMIT))
        proto = ETH_P_IPV6 if _is_v6(f.src) else ETH_P_IP
        m = _match(f.src, f.dst, f.sport, f.dport, dscp)
        filters.append(Filter(100 + k, parent, m, label, proto))
        rules.append(f"{match} {_family(f)} dscp set cs{BEST_EFFORT_PRIO - level} accept")
    rules.append(f'oifname "{device}" ip dscp set cs0')
    if any(_is_v6(f.src) for f in flows):
        rules.append(f'oifname "{device}" ip6 dscp set cs0')
    if receive:  # the packets arrive marked by their sender
        rules = []
    rules = meters + rules
    return NetConfig(device, link_rate, tuple(classes), tuple(leaves), tuple(filters), tuple(rules))


def switch_config(device: str, link_rate: int) -> NetConfig:
    """A switch port's egress that honours DSCP by strict priority: one class per HTB priority
    p, taking DSCP CS(7 − p), every class borrowing from the link-rate root (the receive side
    of a network stage, the second queue of :func:`tailbound.plan.stage_queues`)."""
    classes = _base(link_rate)
    leaves = [Leaf(LEAF_MAJOR << 16, BEST_EFFORT_CLASS, LEAF_LIMIT)]
    filters = []
    for p in range(BEST_EFFORT_PRIO):
        cid = ROOT | (0x10 + p)
        classes.append(
            htb_class(
                cid,
                LINK_CLASS,
                rate=ASSURED_RATE,
                ceil=link_rate,
                burst=MTU,
                cburst=MTU,
                prio=p,
                label=f"DSCP CS{BEST_EFFORT_PRIO - p}",
            )
        )
        leaves.append(Leaf((LEAF_MAJOR + 1 + p) << 16, cid, LEAF_LIMIT))
        filters.append(Filter(100 + p, cid, ((0, 0x45, 0xFF), (1, dscp_of(p) << 2, 0xFC))))
        v6 = tuple(_dscp_v6(dscp_of(p)))
        filters.append(Filter(200 + p, cid, v6, protocol=ETH_P_IPV6))
    return NetConfig(device, link_rate, tuple(classes), tuple(leaves), tuple(filters))


def link_config(device: str, link_rate: int) -> NetConfig:
    """The link alone: the link-rate root and one FIFO, no priorities (an unenforced host)."""
    return NetConfig(
        device,
        link_rate,
        tuple(_base(link_rate)),
        (Leaf(LEAF_MAJOR << 16, BEST_EFFORT_CLASS, LEAF_LIMIT),),
        (),
    )


# ------------------------------------------------------------------------------ the host
class Host:
    """Netlink (pyroute2) and nftables access to one network namespace (``None``: ours)."""

    def __init__(self, netns: str | None = None) -> None:
        from pyroute2 import IPRoute

        self.netns = netns
        try:
            self.ipr = IPRoute(netns=netns) if netns else IPRoute()
        except Exception as e:  # pyroute2 raises OSError or its own errors
            raise EnforceError(f"cannot open netlink in netns {netns!r}: {e}") from None

    def close(self) -> None:
        self.ipr.close()

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index(self, device: str) -> int:
        found = self.ipr.link_lookup(ifname=device)
        if not found:
            raise EnforceError(
                f"no device {device!r}" + (f" in netns {self.netns}" if self.netns else "")
            )
        return int(found[0])

    # -------------------------------------------------------------- nftables
    def nft(self, script: str | None = None, *args: str) -> str:
        exe = shutil.which("nft")
        if exe is None:
            raise EnforceError("nft (the nftables package) is needed for DSCP marks")
        cmd = [exe, *args] if script is None else [exe, "-f", "-"]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        p = subprocess.run(cmd, input=script, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise EnforceError(f"nft {' '.join(args) or '-f -'}: {p.stderr.strip()}")
        return p.stdout

    def nft_rules(self, table: str) -> tuple[str, ...] | None:
        """Our table's rules as nft lists them, or ``None`` if the table does not exist."""
        listing = self.nft(None, "list", "tables", "inet")
        if f"table inet {table}" not in listing.splitlines():
            return None
        text = self.nft(None, "list", "table", "inet", table)
        rules = []
        for line in text.splitlines():
            s = line.strip()
            if not s or s.startswith(("table ", "chain ", "type ", "}")):
                continue
            rules.append(_normal_nft(s))
        return tuple(rules)

    # -------------------------------------------------------------- tc readback
    def root_qdisc(self, idx: int) -> tuple[str, int] | None:
        for q in self.ipr.get_qdiscs(idx):
            if q["parent"] == 0xFFFFFFFF:
                return str(q.get_attr("TCA_KIND")), int(q["handle"])
        return None

    def installed(self, device: str) -> NetConfig | None:
        """What our tree on ``device`` holds now, read back through netlink (``None``: no tree
        of ours)."""
        idx = self.index(device)
        root = self.root_qdisc(idx)
        if root is None or root != ("htb", ROOT):
            return None
        default = BEST_EFFORT_CLASS
        for q in self.ipr.get_qdiscs(idx):
            if q["handle"] == ROOT:
                g = q.get_nested("TCA_OPTIONS", "TCA_HTB_INIT")
                if g is not None:
                    default = ROOT | int(g["defcls"])
        leaves = tuple(
            Leaf(int(q["handle"]), int(q["parent"]), int(q.get_attr("TCA_OPTIONS")["limit"]))
            for q in self.ipr.get_qdiscs(idx)
            if q.get_attr("TCA_KIND") == "pfifo" and q["parent"] >> 16 == MAJOR
        )
        classes = []
        for c in self.ipr.get_classes(idx):
            if c.get_attr("TCA_KIND") != "htb" or c["handle"] >> 16 != MAJOR:
                continue
            p = c.get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")
            rate = c.get_nested("TCA_OPTIONS", "TCA_HTB_RATE64") or p["rate"]
            ceil = c.get_nested("TCA_OPTIONS", "TCA_HTB_CEIL64") or p["ceil"]
            classes.append(
                HtbClass(
                    int(c["handle"]),
                    ROOT if c["parent"] == 0xFFFFFFFF else int(c["parent"]),
                    int(rate),
                    int(ceil),
                    _burst_from_ticks(rate, p["buffer"]),
                    _burst_from_ticks(ceil, p["cbuffer"]),
                    int(p["prio"]),
                    int(p["quantum"]),
                )
            )
        filters = []
        for f in self.ipr.get_filters(idx, parent=ROOT):
            sel = f.get_nested("TCA_OPTIONS", "TCA_U32_SEL")
            classid = f.get_nested("TCA_OPTIONS", "TCA_U32_CLASSID")
            if sel is None or classid is None:
                continue
            proto = socket.ntohs(int(f["info"]) & 0xFFFF)
            filters.append(
                Filter(int(f["info"]) >> 16, int(classid), _u32_match(sel), protocol=proto)
            )
        rules = self.nft_rules(nft_table(device)) or ()
        link = next((c.rate for c in classes if c.classid == LINK_CLASS), 0)
        return NetConfig(device, link, tuple(classes), leaves, tuple(filters), rules, default)


def _u32_match(sel: Any) -> tuple[tuple[int, int, int], ...]:
    """A u32 selector (struct tc_u32_sel and its keys, read raw: 16 bytes of header, then per key
    mask and value in network order, offset and offmask) in the byte-wise normal form."""
    raw = bytes(sel.data[sel.offset + 4 : sel.offset + sel.length])
    nkeys = raw[2]
    out = []
    for k in range(nkeys):
        key = raw[16 + 16 * k : 32 + 16 * k]
        mask, value = key[0:4], key[4:8]
        off = int.from_bytes(key[8:12], "little", signed=True)
        out += [(off + i, value[i], mask[i]) for i in range(4) if mask[i]]
    return tuple(sorted(out))


_NFT_UNITS = {"bytes": 1, "kbytes": 1024, "mbytes": 1024**2}


def _normal_nft(rule: str) -> str:
    """A rule as we write it: nft lists byte rates in kbytes/mbytes when they divide evenly, and
    a counter with its values (the meter's, :mod:`tailbound.enforce.net_meter`)."""

    def unit(m: re.Match[str]) -> str:
        return f"{int(m.group(1)) * _NFT_UNITS[m.group(2)]} bytes{m.group(3) or ''}"

    rule = re.sub(r"\bcounter packets \d+ bytes \d+", "counter", rule)
    return re.sub(r"(\d+) (bytes|kbytes|mbytes)(/second)?", unit, rule)


# ------------------------------------------------------------------------------ operations
def _stored(c: HtbClass) -> HtbClass:
    return dataclasses.replace(
        c, burst=stored_burst(c.rate, c.burst), cburst=stored_burst(c.ceil, c.cburst)
    )


def _normal(config: NetConfig, *, installed: bool = False) -> NetConfig:
    """``config`` in the form readback gives: sorted, bursts as the kernel stores them (an
    ``installed`` configuration has them so already), u32 matches and nft rules normalised."""
    return NetConfig(
        config.device,
        config.link_rate,
        tuple(sorted(c if installed else _stored(c) for c in config.classes)),
        tuple(sorted(config.leaves)),
        tuple(
            sorted(
                Filter(f.pref, f.classid, tuple(sorted(f.match)), protocol=f.protocol)
                for f in config.filters
            )
        ),
        tuple(_normal_nft(r) for r in config.nft_rules),
        config.default_class,
    )


def diff(host: Host, config: NetConfig) -> list[str]:
    """What differs between ``config`` and what ``config.device`` holds (unified diff lines;
    empty when equal)."""
    host.index(config.device)
    now = host.installed(config.device)
    have = _normal(now, installed=True).lines() if now is not None else []
    if now is None:
        rules = host.nft_rules(config.nft_table)
        have += [f"nft {config.nft_table}: {r}" for r in rules or ()]
    want = _normal(config).lines()
    return list(difflib.unified_diff(have, want, "installed", "plan", lineterm="", n=0))


def apply(host: Host, config: NetConfig) -> bool:
    """Install ``config`` on its device unless it is there already (idempotent); returns whether
    anything changed. Raises :class:`EnforceError` (nothing touched) if the device is missing or
    holds a root qdisc that is not ours, and if the readback after installing differs."""
    idx = host.index(config.device)
    if not diff(host, config):
        return False
    root = host.root_qdisc(idx)
    if root is not None and root != ("htb", ROOT) and root[0] not in DEFAULT_QDISCS:
        raise EnforceError(
            f"{config.device} has a root qdisc {root[0]} {_h(root[1])} that tailbound did not "
            "install; remove it first (tailbound never replaces a foreign configuration)"
        )
    try:
        if root == ("htb", ROOT):
            host.ipr.tc("del", "htb", idx, ROOT, root=True)
        _install_tc(host, idx, config)
        _install_nft(host, config)
    except Exception:
        remove(host, config.device)
        raise
    left = diff(host, config)
    if left:
        remove(host, config.device)
        raise EnforceError("readback differs from the plan (removed again):\n" + "\n".join(left))
    return True


def _install_tc(host: Host, idx: int, config: NetConfig) -> None:
    ipr = host.ipr
    ipr.tc("add", "htb", idx, ROOT, default=config.default_class & 0xFFFF)
    for c in config.classes:  # parents before children: the order they were built in
        ipr.tc(
            "add-class",
            "htb",
            idx,
            c.classid,
            parent=c.parent,
            rate=c.rate,
            ceil=c.ceil,
            burst=c.burst,
            cburst=c.cburst,
            prio=c.prio,
            quantum=c.quantum,
        )
    for leaf in config.leaves:
        ipr.tc("add", "pfifo", idx, leaf.handle, parent=leaf.parent, limit=leaf.limit)
    for f in config.filters:
        ipr.tc(
            "add-filter",
            "u32",
            idx,
            parent=ROOT,
            prio=f.pref,
            protocol=f.protocol,
            target=f.classid,
            keys=f.keys(),
        )


def _install_nft(host: Host, config: NetConfig) -> None:
    t = config.nft_table
    body = "\n".join(f"    {r}" for r in config.nft_rules)
    script = (
        f"table inet {t}\ndelete table inet {t}\n"
        f"table inet {t} {{\n  chain tb_marks {{\n    type filter hook postrouting priority 0; "
        f"policy accept;\n{body}\n  }}\n}}\n"
    )
    if config.nft_rules:
        host.nft(script)
    elif host.nft_rules(t) is not None:
        host.nft(f"delete table inet {t}\n")


def remove(host: Host, device: str) -> list[str]:
    """Remove what tailbound installed on ``device`` (the kernel restores the default root
    qdisc); returns what was removed."""
    idx = host.index(device)
    done = []
    if host.root_qdisc(idx) == ("htb", ROOT):
        host.ipr.tc("del", "htb", idx, ROOT, root=True)
        done.append(f"qdisc htb {_h(ROOT)} on {device}")
    if host.nft_rules(nft_table(device)) is not None:
        host.nft(f"delete table inet {nft_table(device)}\n")
        done.append(f"nftables table inet {nft_table(device)}")
    return done


# ------------------------------------------------------------------------------ receive side
INGRESS = 0xFFFF0000  # the ingress qdisc's handle (ffff:) and its filters' parent
TC_H_INGRESS = 0xFFFFFFF1
ETH_P_ALL = 0x0003
TCA_EGRESS_REDIR = 1


def ifb_name(device: str) -> str:
    """The IFB device that ``device``'s received packets are redirected to (at most 15
    characters, Linux's limit)."""
    return ("tbi" + re.sub(r"[^A-Za-z0-9_.-]", "", device))[:15]


def _redirect(host: Host, idx: int) -> str | None:
    """The device ``idx``'s ingress qdisc redirects every packet to (our one u32 filter with a
    mirred egress redirect); ``""`` if it has an ingress qdisc that is not that; ``None`` if it
    has none."""
    if not any(q["parent"] == TC_H_INGRESS for q in host.ipr.get_qdiscs(idx)):
        return None
    targets = []
    for f in host.ipr.get_filters(idx, parent=INGRESS):
        act = f.get_nested("TCA_OPTIONS", "TCA_U32_ACT")
        if act is None:
            continue
        for k in range(33):
            for a in act.get_attrs(f"TCA_ACT_PRIO_{k}"):
                parms = a.get_nested("TCA_ACT_OPTIONS", "TCA_MIRRED_PARMS")
                if a.get_attr("TCA_ACT_KIND") == "mirred" and parms is not None:
                    if parms["eaction"] == TCA_EGRESS_REDIR:
                        targets.append(int(parms["ifindex"]))
    if len(targets) != 1:
        return ""
    link = host.ipr.get_links(targets[0])
    return str(link[0].get_attr("IFLA_IFNAME")) if link else ""


def ingress_line(device: str, ifb: str) -> str:
    return f"qdisc ingress ffff: on {device}: u32 any → mirred egress redirect {ifb}"


def ingress_diff(host: Host, device: str, config: NetConfig) -> list[str]:
    """:func:`diff` of the receive side: the redirect of ``device``'s ingress to its IFB, and
    the IFB's tree (``config``, from :func:`host_config` with ``receive``)."""
    idx = host.index(device)
    have: list[str] = []
    if _redirect(host, idx) == config.device:
        have.append(ingress_line(device, config.device))
    if host.ipr.link_lookup(ifname=config.device):
        now = host.installed(config.device)
        have += _normal(now, installed=True).lines() if now is not None else []
    want = [ingress_line(device, config.device), *_normal(config).lines()]
    return list(difflib.unified_diff(have, want, "installed", "plan", lineterm="", n=0))


def apply_ingress(host: Host, device: str, config: NetConfig) -> bool:
    """Install the receive side (idempotent; whether anything changed): create the IFB device
    ``config.device`` if missing, install ``config`` on it (:func:`apply`), and redirect every
    packet ``device`` receives to it (an ingress qdisc with one u32 filter and a mirred
    action). Refuses (nothing touched) if ``device`` has an ingress qdisc that is not ours."""
    idx = host.index(device)
    if not ingress_diff(host, device, config):
        return False
    redirect = _redirect(host, idx)
    if redirect is not None and redirect != config.device:
        raise EnforceError(
            f"{device} has an ingress qdisc that tailbound did not install; remove it first"
        )
    created = not host.ipr.link_lookup(ifname=config.device)
    try:
        if created:
            host.ipr.link("add", ifname=config.device, kind="ifb")
        ifb = host.index(config.device)
        host.ipr.link("set", index=ifb, state="up")
        apply(host, config)
        if redirect is None:
            host.ipr.tc("add", "ingress", idx, INGRESS)
            host.ipr.tc(
                "add-filter",
                "u32",
                idx,
                parent=INGRESS,
                prio=1,
                protocol=ETH_P_ALL,
                keys=["0x0/0x0+0"],
                target=INGRESS | 1,
                action=[
                    {"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": ifb}
                ],
            )
    except Exception:
        remove_ingress(host, device)
        raise
    left = ingress_diff(host, device, config)
    if left:
        remove_ingress(host, device)
        raise EnforceError("readback differs from the plan (removed again):\n" + "\n".join(left))
    return True


def remove_ingress(host: Host, device: str) -> list[str]:
    """Remove the receive side tailbound installed on ``device``: its ingress qdisc if it
    redirects to our IFB, and the IFB device (with its tree)."""
    idx = host.index(device)
    ifb, done = ifb_name(device), []
    if _redirect(host, idx) == ifb:
        host.ipr.tc("del", "ingress", idx, INGRESS)
        done.append(f"ingress qdisc on {device}")
    found = host.ipr.link_lookup(ifname=ifb)
    if found:
        host.ipr.link("del", index=found[0])
        done.append(f"ifb device {ifb}")
    return done


def describe_flows(configs: Iterable[NetConfig]) -> str:
    return "\n".join(line for c in configs for line in c.lines(labels=True))
