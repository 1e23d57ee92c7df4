"""The network meter: per tenant whose network stage this host sends, the packets (and bytes) it
sent beyond the Plan's token bucket, counted by the kernel in ``tailbound enforce net``'s own
path (issue 27: the API flags a tenant whose load left its characterisation; the storage
gateway's counterpart is ``crates/tailbound-gate/src/conform.rs``).

**Where.** Two nftables rules per metered flow, at the top of the postrouting chain of the
device's table (``inet tailbound_<device>``, :func:`tailbound.enforce.net.host_config`), before
the DSCP marks, without a verdict (every packet goes on to the marks and the HTB tree unchanged):

* ``<flow> counter comment "tailbound sent T STAGE"``: every packet of the flow;
* ``<flow> limit rate over R bytes/second burst B bytes counter comment "tailbound meter T
  STAGE"``: the packets the limiter finds beyond its bucket.

The flow is the tenant's match of the marks (``oifname``, addresses, TCP port); the bucket is
the tenant's **primary** bucket at the stage in bytes on the wire
(:func:`tailbound.enforce.realised.wire_buckets`' first, the one the HTB leaf's ``ceil``
carries); extra buckets are not metered. Packets are judged where they leave the host's stack,
before the HTB queue: their arrival times, not the times the shaper releases them.

**Why nftables, not a tc ``police`` action.** The gateway-like rule "a packet conforms when the
bucket holds its bytes, and is then charged; one beyond is counted and not charged" is what
``act_police`` with ``conform-exceed ok/pipe`` does, exactly; but it needs the kernel's
``CONFIG_NET_ACT_POLICE`` (and ``act_gact`` for the bytes), and the kernels this project runs on
(Firecracker guests, 6.18) have neither: ``tc ... action police`` fails with "Failed to load TC
action module". nftables' ``limit`` is built in (``CONFIG_NFT_LIMIT``) and has the same rule
(a packet under the limit takes its tokens; one over takes none), with one difference:

**The byte limiter's bucket is one second of its rate plus its burst.** nftables sizes a byte
limiter's bucket ``rate · 1 s + burst`` bytes (``nft_limit_init``: ``tokens_max = unit ·
(rate + burst) / rate``, the unit being at least a second); measured here, a fresh ``limit rate
over 100000 bytes/second burst 10000 bytes`` let 110 of 300 back-to-back 1,000-byte packets
through, not 10. So the meter's rule asks for ``burst = b − R`` (:func:`meter_burst`) and meters
the bucket ``(R, max(b, R · 1 s))``:

* exact when the Plan's bucket holds at least one second of its rate (``b ≥ R · 1 s``);
* otherwise a bucket larger than the Plan's: a stream that conforms to ``(R, b)`` conforms to
  it (while every packet passes both, the larger bucket never holds fewer tokens), so a count
  above zero always means the tenant sent beyond its Plan's bucket (**no false flag**), but a
  burst between ``b`` and ``R · 1 s`` bytes is not counted (a lower bound).

nftables counts a packet's bytes from its IP header (no Ethernet header), HTB and the wire
buckets from the frame: 14 bytes fewer per packet, so again more room, never a false count.
The same limiter realises ``demotion`` mode's marks (:func:`~tailbound.enforce.net.host_config`),
whose buckets are therefore also ``R · 1 s`` larger than the Plan's (docs/enforcement.md).

**Reading.** :func:`read` lists the table as JSON (``nft -j``) and returns each metered flow's
:class:`Counts` (cumulative since the table was installed: re-applying a changed Plan, which
replaces the table, starts them from zero). ``tailbound enforce net --meter`` prints them;
``tailbound agent --net-meter`` posts each window's difference (``service.agent``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

#: The comment prefixes of the meter's rules (followed by the tenant's name and the stage).
SENT = "tailbound sent"
BEYOND = "tailbound meter"


def meter_burst(rate: int, bucket: float) -> int:
    """The ``burst`` (bytes) of the nftables byte limiter metering the bucket ``(rate bytes/s,
    bucket bytes)``: nftables adds one second of the rate to it (module text), so ``bucket −
    rate``, and 0 (a bucket of one second of the rate, larger than asked) when the bucket is
    smaller than that.

    >>> meter_burst(100_000, 250_000), meter_burst(100_000, 10_000)
    (150000, 0)
    """
    return max(int(bucket) - int(rate), 0)


def meter_rules(match: str, tenant: str, stage: str, rate: int, bucket: float) -> list[str]:
    """The two rules metering the flow ``match`` (an nftables match) of ``tenant`` at ``stage``
    against the bucket ``(rate bytes/s, bucket bytes)``, as ``nft`` lists them (so readback
    compares them as text; counters are compared without their values).

    >>> meter_rules('oifname "c0"', "T", "net_in", 1000, 500)[1]
    'oifname "c0" limit rate over 1000 bytes/second counter comment "tailbound meter T net_in"'
    """
    burst = meter_burst(rate, bucket)
    limit = f"limit rate over {int(rate)} bytes/second" + (f" burst {burst} bytes" if burst else "")
    return [
        f'{match} counter comment "{SENT} {tenant} {stage}"',
        f'{match} {limit} counter comment "{BEYOND} {tenant} {stage}"',
    ]


@dataclass(frozen=True)
class Counts:
    """One metered flow's counters since its rules were installed: every packet and byte it
    sent (IP bytes), and those beyond its bucket."""

    tenant: str
    stage: str
    packets: int = 0
    bytes: int = 0
    beyond_packets: int = 0
    beyond_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse(listing: str) -> dict[str, Counts]:
    """The meter's counters in ``nft -j list table ...`` output, keyed ``"TENANT STAGE"``.

    >>> doc = {"nftables": [{"rule": {"comment": "tailbound meter T net_in",
    ...     "expr": [{"limit": {}}, {"counter": {"packets": 3, "bytes": 4500}}]}}]}
    >>> parse(json.dumps(doc))["T net_in"].beyond_bytes
    4500
    """
    found: dict[str, dict[str, int]] = {}
    for item in json.loads(listing).get("nftables", []):
        rule = item.get("rule")
        if not isinstance(rule, dict):
            continue
        comment = str(rule.get("comment", ""))
        for prefix, kind in ((SENT, ""), (BEYOND, "beyond_")):
            if not comment.startswith(prefix + " "):
                continue
            key = comment[len(prefix) + 1 :]
            counter = next((e["counter"] for e in rule.get("expr", []) if "counter" in e), None)
            if counter is None:
                continue
            row = found.setdefault(key, {})
            row[kind + "packets"] = int(counter.get("packets", 0))
            row[kind + "bytes"] = int(counter.get("bytes", 0))
    out = {}
    for key, row in found.items():
        tenant, _, stage = key.rpartition(" ")
        out[key] = Counts(tenant, stage, **row)
    return out


def read(host: Any, table: str) -> dict[str, Counts]:
    """The meter's counters in the nftables table ``inet TABLE`` (a device's:
    :func:`tailbound.enforce.net.nft_table`) of ``host`` (a :class:`tailbound.enforce.net.Host`);
    empty when the table is not there."""
    if host.nft_rules(table) is None:
        return {}
    return parse(host.nft(None, "-j", "list", "table", "inet", table))
