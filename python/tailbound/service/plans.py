"""Published Plans: their text, each host's part, its ETag, and the diff between versions.

A Plan version's text is :func:`plan_text`'s (the same document ``Plan.save`` writes, with
absolute trace paths, in JSON's compact form), published once and never changed; it is stored
as a skeleton and its tenants' entries (:mod:`tailbound.service.plan_store`). A **host's part**
is the Plan restricted to the tenants whose queues cross that host
(:func:`tailbound.plan.stage_queues`: its client host's egress and ingress, its server's
ingress, device and egress), with every plan-wide field kept, so it loads as a Plan and
``enforce net --host H`` or ``gate`` reads it unchanged; its ``meta.addresses`` holds what
``enforce net`` needs beside it, in its hosts file's layout (``{"hosts": {host: address},
"ports": {tenant: port}}``: the addresses of the hosts its tenants cross and the tenants' ports,
as the cluster and tenant documents give them). Its ETag is the SHA-256 of its text: an
agent polling with ``If-None-Match`` gets 304 while its part is unchanged, even when other
hosts' parts changed in a newer version.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tailbound.plan import Plan, stage_queues
from tailbound.service import plan_store

#: Compact JSON: without ``indent`` the standard library encodes in C; with it, in Python, which
#: took 190 ms per admission of a Plan of 885 tenants under cProfile (which inflates its many
#: calls; end to end the gain is within noise: docs/service.md, "Load benchmark").
COMPACT = (",", ":")


def plan_text(plan: Plan) -> str:
    """The JSON text of ``plan`` as stored and served, compact (:data:`COMPACT`; NaN and
    infinity refused)."""
    return json.dumps(plan.to_json(), separators=COMPACT, allow_nan=False) + "\n"


#: Stands for the tenants' entries in a Plan's text while the rest is encoded
#: (:data:`tailbound.service.plan_store.MARKER` encoded).
_TENANTS = json.loads(plan_store.MARKER)


class PlanWriter:
    """The text of successive Plans of one cluster, exactly :func:`plan_text`'s, with each
    tenant's entry encoded once while it is unchanged: a Plan of ``n`` tenants costs the encoding
    of the entries that changed (the server the event touched) and the joining of the others'
    text, not ``n`` encodings (docs/service.md, "Load benchmark"). Keeps the last Plan's entries
    only."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Any, Any, str, str]] = {}
        #: The last Plan's entries' SHA-256 (hex), in order (each computed once per entry).
        self.hashes: list[str] = []

    def text(self, plan: Plan) -> str:
        """The text of ``plan`` (exactly :func:`plan_text`'s)."""
        skeleton, entries = self.parts(plan)
        return plan_store.join(skeleton, entries)

    def parts(self, plan: Plan) -> tuple[str, list[str]]:
        """The skeleton and entry texts of ``plan``'s text (:mod:`tailbound.service.plan_store`:
        ``join`` gives the text)."""
        entries = []
        hashes = []
        kept: dict[str, tuple[Any, Any, str, str]] = {}
        for t in plan.tenants:
            source: Any = None
            if plan.inputs is not None:
                source = plan.inputs.characterisations.get(t.name) or plan.inputs.traces[t.name]
            hit = self._entries.get(t.name)
            if hit is None or not (hit[0] is t or hit[0] == t) or hit[1] != source:
                (doc,) = dataclasses.replace(plan, tenants=[t]).to_json()["tenants"]
                entry = json.dumps(doc, separators=COMPACT, allow_nan=False)
                hit = (t, source, entry, plan_store.entry_hash(entry))
            kept[t.name] = hit
            entries.append(hit[2])
            hashes.append(hit[3])
        self._entries = kept
        self.hashes = hashes
        skeleton = dataclasses.replace(plan, tenants=[]).to_json()
        skeleton["tenants"] = _TENANTS
        text = json.dumps(skeleton, separators=COMPACT, allow_nan=False) + "\n"
        assert text.count(plan_store.MARKER) == 1
        return text, entries


def sha256(text: str) -> str:
    """The SHA-256 (hex) of ``text``'s UTF-8 bytes."""
    return hashlib.sha256(text.encode()).hexdigest()


def hosts_of(document: dict[str, Any]) -> set[str]:
    """Every host a Plan document's tenants cross (clients and servers)."""
    plan = Plan.from_json(document)
    return {q.split(".", 1)[0] for t in plan.tenants for qs in stage_queues(t).values() for q in qs}


def host_part(
    document: dict[str, Any], host: str, addresses: Addresses | None = None
) -> dict[str, Any]:
    """The part of a Plan document for ``host``: the tenants one of whose queues is on it (and
    the rejected entries none: they are nobody's part); with ``addresses`` (the cluster's hosts
    and tenants' ports), those of its tenants and the hosts they cross in ``meta.addresses``
    (module docstring)."""
    plan = Plan.from_json(document)
    keep: set[str] = set()
    crossed: set[str] = set()
    for t in plan.tenants:
        hosts = {q.split(".", 1)[0] for qs in stage_queues(t).values() for q in qs}
        if host in hosts:
            keep.add(t.name)
            crossed |= hosts
    part = dict(document)
    part["tenants"] = [t for t in document["tenants"] if t["name"] in keep]
    part["rejected"] = []
    part["meta"] = {**document.get("meta", {}), "host": host}
    if addresses is not None:
        part["meta"]["addresses"] = {
            "hosts": {h: a for h, a in sorted(addresses.hosts.items()) if h in crossed},
            "ports": {t: p for t, p in sorted(addresses.ports.items()) if t in keep},
        }
    return part


@dataclass(frozen=True)
class Addresses:
    """A cluster's hosts' addresses (host → IPv4 or IPv6) and its tenants' ports (tenant → TCP
    port), as the cluster and tenant documents give them."""

    hosts: dict[str, str]
    ports: dict[str, int]


def part_text(
    document: dict[str, Any], host: str, addresses: Addresses | None = None
) -> tuple[str, str]:
    """The text of ``host``'s part and its ETag (quoted SHA-256, as HTTP writes ETags)."""
    part = host_part(document, host, addresses)
    text = json.dumps(part, separators=COMPACT, allow_nan=False) + "\n"
    return text, f'"{sha256(text)}"'


def diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What changed from Plan document ``old`` to ``new``: tenants added and removed, and per
    tenant present in both the fields whose values differ; plan-wide fields that differ.

    >>> a = {"policy": "p", "tenants": [{"name": "A", "server": "s0"}], "meta": {}}
    >>> b = {"policy": "p", "tenants": [{"name": "A", "server": "s1"}, {"name": "B"}], "meta": {}}
    >>> diff(a, b)
    {'added': ['B'], 'removed': [], 'changed': {'A': ['server']}, 'plan': []}
    """
    before = {t["name"]: t for t in old.get("tenants", [])}
    after = {t["name"]: t for t in new.get("tenants", [])}
    changed = {
        name: sorted(
            k
            for k in set(before[name]) | set(after[name])
            if before[name].get(k) != after[name].get(k)
        )
        for name in before
        if name in after and before[name] != after[name]
    }
    plan_keys = (set(old) | set(new)) - {"tenants", "rejected", "meta"}
    return {
        "added": [n for n in after if n not in before],
        "removed": [n for n in before if n not in after],
        "changed": changed,
        "plan": sorted(k for k in plan_keys if old.get(k) != new.get(k)),
    }
