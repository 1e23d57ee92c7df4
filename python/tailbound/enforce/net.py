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
* classification by u32 filters on the tenant's addresses (and TCP port, when the hosts file
  gives one), IPv4 without options (``ihl = 5``) or IPv6 without extension headers, and its
  DSCP; DSCP marks by nftables in a table of our own (``inet tailbound_<device>``,
  postrouting on the device): level ``p`` gets class selector CS(7 − p), best effort and
  everything else CS0, so a priority-honouring switch (:func:`switch_config`) orders the
  receive side the same way.

Nothing is touched before the Plan, the hosts file and the device have been checked; a foreign
(non-default) root qdisc is never replaced; :func:`remove` deletes only our qdisc (the kernel
puts the device's default back) and our nftables table.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import math
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.errors import ConfigError, TailboundError
from tailbound.plan import Plan, TenantPlan, client_name
from tailbound.stages import Stage

if TYPE_CHECKING:
    from tailbound.profiles.tokens import MessageSizes

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
MTU = 1514  # bytes on the wire of a full Ethernet frame (what HTB charges)
#: Bytes of headers per TCP segment on the wire: Ethernet 14, IPv4 20, TCP 20 and its
#: timestamp option 12 (what an ACK without data costs too); a full segment carries MSS bytes.
HEADER = 66
MSS = MTU - HEADER
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


# ------------------------------------------------------------------------------ wire bytes
def _message_buckets(t: TenantPlan, stage: Stage, link_rate: float) -> list[tuple[float, float]]:
    if stage not in t.limits:
        return []
    out = []
    for lim in (t.limits[stage], *t.extra_limits.get(stage, ())):
        capacity = lim.capacity_per_s or link_rate
        out.append((lim.rate * capacity, lim.bucket_s * capacity))
    return out


def wire_buckets(t: TenantPlan, stage: Stage, link_rate: float) -> list[tuple[float, float]]:
    """``t``'s buckets at a network ``stage`` in bytes on the wire (rate bytes/s, burst bytes):
    what its HTB class at the sender carries and is charged for.

    The Plan's buckets count the network token model's message bytes
    (:class:`tailbound.profiles.tokens.MessageSizes`); the class also carries every segment's
    headers and the ACKs of the other direction's messages (the flow's reverse packets match the
    same addresses and ports). With ``k = 1 + HEADER/MSS``, ``a = HEADER/MSS`` and ``O`` the
    model's smallest message (its ``overhead_bytes``, 200):

    * a message of ``m`` bytes has at most ``m/MSS + 1`` segments: ``k·m + HEADER`` bytes;
    * the other direction's ``m'`` bytes are acknowledged by at most ``m'/MSS + 1`` ACKs (one per
      segment, as with quick ACKs): ``a·m' + HEADER`` bytes;
    * requests, one message each way, number at most ``α_x(τ)/O`` in any interval ``τ``, with
      ``x`` the direction whose primary bucket has the lower rate.

    So each bucket ``(r, b)`` of the stage becomes ``(k·r + a·r' + 2·HEADER·r_x/O, k·b + a·b' +
    2·HEADER·b_x/O)`` with ``(r', b')`` the other direction's primary bucket. Without buckets in
    the other direction its ACKs are not budgeted (only the per-message term of this one is).

    >>> from tailbound.model import Slo
    >>> from tailbound.plan import Bound, StageLimit
    >>> from tailbound.stages import NETWORK_PATH
    >>> lim = {Stage.NET_IN: StageLimit(0.01, 1e-4, 1e7), Stage.NET_OUT: StageLimit(0.1, 1e-3, 1e7)}
    >>> level = dict.fromkeys(NETWORK_PATH, 0)
    >>> t = TenantPlan("T", Slo(1, 1), "s", None, level, lim, Bound(1, "x"))
    >>> [(round(r), round(b)) for r, b in wire_buckets(t, Stage.NET_IN, 1e7)]
    [(216138, 2161)]
    """
    from tailbound.profiles.tokens import MessageSizes

    own = _message_buckets(t, stage, link_rate)
    if not own:
        return []
    other_stage = Stage.NET_OUT if stage is Stage.NET_IN else Stage.NET_IN
    other = _message_buckets(t, other_stage, link_rate)[:1]
    k, a = 1 + HEADER / MSS, HEADER / MSS
    per_request = 2 * HEADER / MessageSizes().overhead_bytes
    r_x, b_x = min([own[0], *other], key=lambda rb: rb[0])
    r_o, b_o = other[0] if other else (0.0, 0.0)
    return [
        (k * r + a * r_o + per_request * r_x, k * b + a * b_o + per_request * b_x) for r, b in own
    ]


def wire_messages() -> MessageSizes:
    """The token model's messages as the bytes they put on a wire on average (for the
    simulator): a message of ``m`` bytes costs ``k·m + HEADER/2`` (``k = 1 + HEADER/MSS``, half
    a segment's headers for the last, partial segment) and the other direction's ``m'`` bytes
    are acknowledged by a ``HEADER``-byte ACK every two segments (Linux's delayed ACKs),
    ``m'·HEADER/(2·MSS) + HEADER/2``: still ``overhead + factor · size``.

    >>> w = wire_messages()
    >>> round(w.overhead_bytes), round(w.small_factor, 4), round(w.large_factor, 4)
    (280, 0.0512, 1.1507)
    """
    from tailbound.profiles.tokens import MessageSizes

    m = MessageSizes()
    k, ack = 1 + HEADER / MSS, HEADER / (2 * MSS)
    return MessageSizes(
        overhead_bytes=m.overhead_bytes * (k + ack) + HEADER,
        small_factor=m.small_factor * k + m.large_factor * ack,
        large_factor=m.large_factor * k + m.small_factor * ack,
    )


def realised_plan(plan: Plan, link_rate: float) -> Plan:
    """``plan`` with every network bucket replaced by the one ``tailbound enforce net``
    enforces (:func:`wire_buckets`), as a share of the ``link_rate`` (rates capped at the link):
    the Plan as enforced, for the simulator. A simulator whose links run at the rate left to
    the messages (``link_rate · MSS / (MSS + HEADER)``) then sees every bucket scaled as the
    link is, so a tenant is shaped or demoted against the same budget as on the wire."""
    tenants = []
    for t in plan.tenants:
        limits, extra = dict(t.limits), dict(t.extra_limits)
        for stage in (Stage.NET_IN, Stage.NET_OUT):
            wire = wire_buckets(t, stage, link_rate)
            if not wire:
                continue
            as_limits = [
                dataclasses.replace(
                    t.limits[stage],
                    rate=min(r / link_rate, 1.0),
                    bucket_s=b / link_rate,
                    capacity_per_s=float(link_rate),
                )
                for r, b in wire
            ]
            limits[stage] = as_limits[0]
            if stage in extra:
                extra[stage] = tuple(as_limits[1:])
        tenants.append(dataclasses.replace(t, limits=limits, extra_limits=extra))
    return dataclasses.replace(plan, tenants=tenants)


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
    """A rule as we write it: nft lists byte rates in kbytes/mbytes when they divide evenly."""

    def unit(m: re.Match[str]) -> str:
        return f"{int(m.group(1)) * _NFT_UNITS[m.group(2)]} bytes{m.group(3) or ''}"

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


# ------------------------------------------------------------------------------ the bound
Buckets = tuple[tuple[float, float], ...]  # (rate bytes/s, burst bytes): α(t) = min(b + r·t)


@dataclass(frozen=True)
class _Member:
    """One tenant at one queue: its HTB priority and its buckets (``None``: no bucket at the
    stage, so it bounds nobody at or below its level)."""

    name: str
    prio: int
    buckets: Buckets | None


def _alpha(buckets: Buckets, t: float) -> float:
    return min(b + r * t for r, b in buckets)


def _kinks(buckets: Buckets) -> set[float]:
    return {
        (b2 - b1) / (r1 - r2)
        for i, (r1, b1) in enumerate(buckets)
        for r2, b2 in buckets[i + 1 :]
        if r1 != r2 and (b2 - b1) / (r1 - r2) > 0
    }


def _deviation(own: Buckets, others: Sequence[Buckets], link_rate: float) -> float:
    """The worst-case delay of traffic with arrival curve ``own`` at a link of ``link_rate``
    shared, in any order (strict priority above, round robin beside), with traffic of curves
    ``others``, plus two packets of blocking: the horizontal deviation between ``own`` and the
    leftover service ``β(s) = [C·s − Σ α_j(s) − 2·MTU]⁺``. Both are piecewise linear (``own``
    concave, ``β`` convex), so the deviation is attained at ``own``'s kinks or where ``own``
    reaches ``β`` at one of its kinks; it is evaluated there exactly."""
    slope = link_rate - sum(min(r for r, _ in o) for o in others)
    if min(r for r, _ in own) > slope or slope <= 0:
        return float("inf")
    points = sorted({0.0}.union(*(_kinks(o) for o in others)))

    def g(x: float) -> float:
        return link_rate * x - sum(_alpha(o, x) for o in others) - 2 * MTU

    values = [g(x) for x in points]

    def beta_inverse(y: float) -> float:  # the first s with β(s) ≥ y > 0 (g is convex)
        for k in range(1, len(points)):
            if values[k] >= y:
                x0, x1, g0, g1 = points[k - 1], points[k], values[k - 1], values[k]
                return x1 if g1 == g0 else x0 + (y - g0) * (x1 - x0) / (g1 - g0)
        return points[-1] + (y - values[-1]) / slope

    def alpha_inverse(y: float) -> float:
        return max(0.0, *((y - b) / r for r, b in own if r > 0))

    times = {0.0} | _kinks(own)
    times |= {alpha_inverse(v) for v in values if v > _alpha(own, 0.0)}
    return max(beta_inverse(max(_alpha(own, t), 1e-9)) - t for t in times)


def _queue_bounds(members: Sequence[_Member], link_rate: float) -> dict[str, float]:
    """The worst-case delay (s) of each member at one queue served by the realised discipline
    (strict priority between levels, HTB's packet round robin within one: every other member at
    the same or a higher level may go first), :func:`_deviation`. With one bucket each it is
    ``(Σ_{j: p_j ≤ p} b_j + 2·MTU) / (C − Σ_{j: p_j < p} r_j − Σ_{j ≠ i: p_j = p} r_j)``."""
    out = {}
    for m in members:
        peers = [u for u in members if u.prio <= m.prio]
        if m.buckets is None or any(u.buckets is None for u in peers):
            out[m.name] = float("inf")
            continue
        others = [u.buckets for u in peers if u is not m and u.buckets is not None]
        out[m.name] = _deviation(m.buckets, others, link_rate)
    return out


def _member(t: TenantPlan, stage: Stage, link_rate: float, delay: float = 0.0) -> _Member:
    """``t`` at a queue of ``stage``; ``delay``: its worst-case delay at an earlier queue, which
    grows each bucket's burst by ``r·delay`` (the output of a queue of bounded delay ``d``
    conforms to ``α(t + d)``)."""
    level = t.priority.get(stage)
    assert level is not None
    if stage not in t.limits or not math.isfinite(delay):
        return _Member(t.name, level, None)
    buckets = tuple((r, b + r * delay) for r, b in wire_buckets(t, stage, link_rate))
    return _Member(t.name, level, buckets)


def htb_bounds(
    plan: Plan, stage: Stage, link_rate: float, tenants: Sequence[TenantPlan] | None = None
) -> dict[str, float]:
    """The worst-case delay (s) at one queue of ``stage`` under the realised discipline, per
    tenant with a level and buckets there: non-preemptive strict priority between levels and
    HTB's packet round robin within one,
    ``(Σ_{j: p_j ≤ p} b_j + 2·MTU) / (C − Σ_{j: p_j < p} r_j − Σ_{j ≠ i: p_j = p} r_j)``
    (buckets in bytes, C the link rate): Eq. 5.1 with the tenants of the same level counted as
    interfering at their rates (FIFO within a level would not count them) and two packets of
    blocking (the packet in service, and HTB's once-per-``MTU/ASSURED_RATE`` green packet).
    With several buckets at the stage (PriorityMeister's K limiters) a tenant's arrival curve
    is their minimum and the bound the horizontal deviation (:func:`_deviation`). Tenants
    without buckets at the stage make every tenant at or below their level unbounded."""
    members = [
        _member(t, stage, link_rate)
        for t in (tenants if tenants is not None else plan.tenants)
        if t.priority.get(stage) is not None
    ]
    return _queue_bounds(members, link_rate)


def _ends(t: TenantPlan, stage: Stage) -> tuple[str, str]:
    """The sending and the receiving host of ``t``'s packets at a network stage."""
    client = client_name(t)
    return (client, t.server) if stage is Stage.NET_IN else (t.server, client)


def network_bounds(plan: Plan, link_rate: float) -> dict[str, float]:
    """Per tenant with a level at every network stage, the worst-case delay (s) over its network
    stages under the discipline ``tailbound enforce net`` realises, every link at
    ``link_rate`` bytes/s. Each stage crosses two queues: the sender's egress, shared with the
    tenants sent from the same host at that stage, and the receiver's side (the switch port
    towards it, or its IFB with ``--ingress``), shared with the tenants received by the same
    host; at the second a tenant's burst has grown by ``r·d`` with ``d`` its bound at the first
    (its output conforms to ``(r, b + r·d)``). Each queue's bound is :func:`htb_bounds`'."""
    out: dict[str, float] = {}
    for t in plan.tenants:
        if any(t.priority.get(s) is None for s in t.stages if s in (Stage.NET_IN, Stage.NET_OUT)):
            continue
        out[t.name] = 0.0
    for stage in (Stage.NET_IN, Stage.NET_OUT):
        at = [t for t in plan.tenants if stage in t.stages and t.priority.get(stage) is not None]
        first: dict[str, float] = {}
        for sender in {_ends(t, stage)[0] for t in at}:
            group = [_member(t, stage, link_rate) for t in at if _ends(t, stage)[0] == sender]
            first.update(_queue_bounds(group, link_rate))
        second: dict[str, float] = {}
        for receiver in {_ends(t, stage)[1] for t in at}:
            group = [
                _member(t, stage, link_rate, first[t.name])
                for t in at
                if _ends(t, stage)[1] == receiver
            ]
            second.update(_queue_bounds(group, link_rate))
        for name in out:
            if name in first:
                out[name] += first[name] + second[name]
    return out


@dataclass(frozen=True)
class BoundCheck:
    """A tenant's bound with its network stages served by the realised discipline, against its
    SLO and the Plan's bound.

    ``realised_s``: for a network-only tenant the network bound (worst case); for a tenant with
    storage whose Plan bound splits by stage, the Plan's bound with its network stages' parts
    replaced by the realised ones; without the split, the Plan's bound plus the realised network
    bound (an upper bound: the Plan's network part is not subtracted). A worst-case network part
    added to a bound at percentile p is still a bound at percentile p."""

    tenant: str
    slo_s: float
    plan_s: float
    network_s: float
    realised_s: float
    #: The Plan's bound's percentile: below 1 it is a stochastic bound (SNC).
    plan_percentile: float = 1.0

    @property
    def stochastic(self) -> bool:
        """The Plan's bound is stochastic (SNC, percentile below 1): a worst-case bound above it,
        or above the SLO, does not contradict it (SNC-Meister admits on statistical
        multiplexing)."""
        return self.plan_percentile < 1

    @property
    def unbounded_stochastic(self) -> bool:
        """No worst-case bound (a tenant at or above the level has no buckets) while the Plan's
        bound is stochastic (SNC-Meister plans without policing rate-limit nothing): the
        worst-case check does not apply; the Plan's analysis assumed FIFO within a level where
        HTB round-robins."""
        return not math.isfinite(self.realised_s) and self.stochastic

    @property
    def over_slo(self) -> bool:
        """The realised worst case misses the SLO that the Plan's worst-case bound met: refused.
        Not for a stochastic Plan (warned, :meth:`line`)."""
        return self.realised_s > self.slo_s and not self.stochastic

    @property
    def over_plan(self) -> bool:
        return self.realised_s > self.plan_s * (1 + 1e-9)

    def line(self) -> str:
        pct = f"(p{100 * self.plan_percentile:g}) and assumes FIFO within a level"
        if self.over_slo:
            verdict = "ABOVE THE SLO"
        elif self.unbounded_stochastic:
            verdict = f"no worst-case bound without buckets; the plan's is stochastic {pct}"
        elif self.stochastic and self.realised_s > self.slo_s:
            verdict = f"worst case above the SLO; the plan's bound is stochastic {pct}"
        elif self.over_plan:
            verdict = "above the plan's bound"
        else:
            verdict = "within the plan's bound"
        return (
            f"{self.tenant}: realised bound {_ms(self.realised_s)} (network {_ms(self.network_s)})"
            f", plan's bound {_ms(self.plan_s)}, SLO {_ms(self.slo_s)}: {verdict}"
        )


def _ms(x: float) -> str:
    return f"{1e3 * x:.3g} ms" if math.isfinite(x) else "none"


def check_bounds(
    plan: Plan, link_rate: float, tenants: Iterable[str] | None = None
) -> list[BoundCheck]:
    """:class:`BoundCheck` of ``tenants`` (all with an SLO and a network stage by default)."""
    network = network_bounds(plan, link_rate)
    wanted = set(tenants) if tenants is not None else None
    out = []
    for t in plan.tenants:
        if t.slo is None or (wanted is not None and t.name not in wanted):
            continue
        if not any(s in t.stages for s in (Stage.NET_IN, Stage.NET_OUT)):
            continue
        net_s = network.get(t.name, float("inf"))
        planned = t.bound.latency_s
        if t.device is None:
            realised = net_s
        elif not math.isfinite(planned):
            realised = planned
        elif all(s in t.bound.stages for s in (Stage.NET_IN, Stage.NET_OUT)):
            realised = planned - t.bound.stages[Stage.NET_IN] - t.bound.stages[Stage.NET_OUT]
            realised += net_s
        else:
            realised = planned + net_s
        out.append(BoundCheck(t.name, t.slo_s, planned, net_s, realised, t.bound.percentile))
    return out


def describe_flows(configs: Iterable[NetConfig]) -> str:
    return "\n".join(line for c in configs for line in c.lines(labels=True))
