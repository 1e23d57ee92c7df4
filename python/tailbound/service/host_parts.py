"""Hosts' parts of the published Plans, cut from the stored entries instead of the whole Plan
(docs/service.md, "Load benchmark"): the same text byte for byte as
:func:`tailbound.service.plans.part_text` of the whole document, hence the same ETag.

A version is stored as its skeleton's top-level fields and its list of entry hashes
(:mod:`tailbound.service.plan_store`); entries are immutable and shared between versions. So a
server keeps, per process:

- each entry's hosts (the hosts its queues cross: :func:`tailbound.plan.stage_queues`), by the
  entry's hash, computed once from the entry's text (:func:`tailbound.plan.tenant_from_json`);
- the entry texts it served, by hash (the most recent :data:`TEXTS` of them);
- the last :data:`VERSIONS` versions' field texts and entry hashes read, per cluster.

A host's part of a version is then the skeleton's fields with ``rejected`` emptied and ``meta``
given the host and its addresses, and in place of the tenants' marker the texts of the entries
crossing the host: the work of the host's entries and one pass over the version's hashes (a
lookup each), where cutting it from the whole Plan parsed every tenant's entry on every new
version, for every host. A skeleton not in the stored fields' form (no marker, or a Plan without
``rejected`` or ``meta``) takes the whole-document path.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from tailbound.plan import stage_queues, tenant_from_json
from tailbound.service import plan_store
from tailbound.service.plans import COMPACT, Addresses, part_text, sha256

#: Versions whose field texts and entry hashes are kept (per server process, all clusters).
VERSIONS = 16

#: Entry texts kept.
TEXTS = 20_000

_DECODER = json.JSONDecoder()

#: A version's skeleton field texts, its entry hashes and its Plan format version.
_Version = tuple[list[str], list[str], int]


def field_key(text: str) -> str:
    """The key of a skeleton field's text (``{"key":…`` or ``,"key":…``)."""
    key, _ = _DECODER.raw_decode(text, 1)
    return str(key)


class HostParts:
    """Hosts' parts of one database's Plan versions (module docstring); thread-safe."""

    def __init__(self) -> None:
        #: (entry hash, Plan format version) → the entry's tenant name and hosts.
        self._hosts: dict[tuple[str, int], tuple[str, frozenset[str]]] = {}
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._versions: OrderedDict[tuple[int, int], _Version | None] = OrderedDict()
        self._lock = threading.Lock()

    def _version(self, s: Session, cluster_id: int, version: int) -> _Version | None:
        """Version ``version``'s field texts, entry hashes and format version; None for a
        stored text that is not in fields' form."""
        key = (cluster_id, version)
        with self._lock:
            if key in self._versions:
                self._versions.move_to_end(key)
                return self._versions[key]
        from tailbound.service.db import PlanRow

        stored = s.scalar(
            select(PlanRow.skeleton).where(
                PlanRow.cluster_id == cluster_id, PlanRow.version == version
            )
        )
        if stored is None:
            raise KeyError(f"no Plan version {version}")
        fields = plan_store.entry_texts(s, json.loads(stored))
        found: _Version | None = None
        keys = [field_key(f) for f in fields] if len(fields) > 1 else []
        if sum(plan_store.MARKER in f for f in fields) == 1 and {"rejected", "meta"} <= set(keys):
            hashes = plan_store.load_hashes(s, cluster_id, version)
            found = (fields, hashes, plan_version(fields))
        with self._lock:
            self._versions[key] = found
            while len(self._versions) > VERSIONS:
                self._versions.popitem(last=False)
        return found

    def _entries(self, s: Session, hashes: list[str]) -> list[str]:
        """The texts of ``hashes`` (kept ones first, the others read and kept)."""
        with self._lock:
            missing = sorted({h for h in hashes if h not in self._texts})
        read = dict(zip(missing, plan_store.entry_texts(s, missing), strict=True))
        with self._lock:
            out = []
            for h in hashes:
                text = read.get(h) or self._texts[h]
                self._texts[h] = text
                self._texts.move_to_end(h)
                out.append(text)
            while len(self._texts) > TEXTS:
                self._texts.popitem(last=False)
        return out

    def _hosts_of(
        self, s: Session, hashes: list[str], version: int
    ) -> list[tuple[str, frozenset[str]]]:
        """Each entry's tenant name and hosts, computed once per entry."""
        unknown = sorted({h for h in hashes if (h, version) not in self._hosts})
        for h, text in zip(unknown, self._entries(s, unknown), strict=True):
            self._hosts[(h, version)] = entry_hosts(text, version)
        return [self._hosts[(h, version)] for h in hashes]

    def part(
        self,
        s: Session,
        cluster_id: int,
        version: int,
        host: str,
        addresses: Addresses | None,
    ) -> tuple[str, str]:
        """The text of ``host``'s part of the cluster's Plan ``version`` and its ETag: exactly
        :func:`~tailbound.service.plans.part_text` of the version's document."""
        found = self._version(s, cluster_id, version)
        if found is None:
            text = plan_store.version_text(s, cluster_id, version)
            assert text is not None
            return part_text(json.loads(text), host, addresses)
        fields, hashes, plan_version = found
        hosts = self._hosts_of(s, hashes, plan_version)
        mine = [h for h, (_, on) in zip(hashes, hosts, strict=True) if host in on]
        return cut(fields, hosts, self._entries(s, mine), host, addresses)


def entry_hosts(text: str, version: int) -> tuple[str, frozenset[str]]:
    """The tenant name of a Plan entry's ``text`` (a Plan of format ``version``) and the hosts
    its queues cross (:func:`tailbound.plan.stage_queues`, as :func:`~tailbound.service.plans
    .host_part` reads them)."""
    tenant = tenant_from_json(json.loads(text), version)
    hosts = {q.split(".", 1)[0] for qs in stage_queues(tenant).values() for q in qs}
    return tenant.name, frozenset(hosts)


def cut(
    fields: list[str],
    hosts: list[tuple[str, frozenset[str]]],
    entries: list[str],
    host: str,
    addresses: Addresses | None,
) -> tuple[str, str]:
    """``host``'s part of the Plan whose skeleton's field texts are ``fields``
    (:func:`tailbound.service.plan_store.skeleton_parts`) and whose entries' names and hosts
    are ``hosts`` (:func:`entry_hosts`, in order), given the texts of the entries crossing
    ``host`` (in order): its text and ETag, exactly :func:`~tailbound.service.plans.part_text`'s."""
    crossed: set[str] = set().union(*(on for _, on in hosts if host in on))
    kept = {name for name, on in hosts if host in on}
    out = []
    for i, f in enumerate(fields):
        last = i == len(fields) - 1
        body = f[:-2] if last else f  # the last field ends the object: "}\n"
        lead = body[0]
        key = field_key(body)
        if plan_store.MARKER in body:
            body = body.replace(plan_store.MARKER, "[" + ",".join(entries) + "]", 1)
        elif key == "rejected":
            body = lead + '"rejected":[]'
        elif key == "meta":
            meta = {**json.loads(body[len(lead) + len('"meta":') :]), "host": host}
            if addresses is not None:
                meta["addresses"] = {
                    "hosts": {h: a for h, a in sorted(addresses.hosts.items()) if h in crossed},
                    "ports": {t: p for t, p in sorted(addresses.ports.items()) if t in kept},
                }
            body = lead + '"meta":' + json.dumps(meta, separators=COMPACT, allow_nan=False)
        out.append(body + "}\n" if last else body)
    text = "".join(out)
    return text, f'"{sha256(text)}"'


def plan_version(fields: list[str]) -> int:
    """The Plan document's ``version`` field (its format's version) from its fields."""
    for f in fields:
        body = f[:-2] if f.endswith("}\n") else f
        if field_key(body) == "version":
            return int(json.loads(body[body.index(":") + 1 :]))
    raise ValueError("a Plan skeleton without its version")
