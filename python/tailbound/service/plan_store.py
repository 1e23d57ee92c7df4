"""How published Plan versions are stored: tenants' entries by content hash, and each version's
list of them as edits against the previous version with a full list every
:data:`SNAPSHOT_EVERY` versions (docs/service.md, "Database").

A Plan's text (:func:`tailbound.service.plans.plan_text`) is its **skeleton** — the text with
its ``tenants`` array replaced by a marker — with the marker replaced by its tenants' entries
(each entry's compact JSON text) joined by commas in brackets. An event changes the entries of
the tenants on the server it touched only, so storing every version's whole text grew with the
square of the versions (508 MB at 1,000 WorkloadCompactor versions). Here:

- ``plan_entries`` holds each distinct entry text once, keyed by its SHA-256 (shared by every
  version and cluster that holds it; never deleted, as old versions still need it);
- ``plans.skeleton`` holds the JSON list of the hashes of the skeleton's top-level fields
  (:func:`skeleton_parts`), whose texts are in ``plan_entries`` too: a skeleton carries no
  tenant but its ``inputs`` (the embedded device profile, every trace's hash) are tens of
  kilobytes, unchanged from version to version;
- ``plans.entries`` holds the version's ordered list of entry hashes: in full
  (``{"full": [h, ...]}``) when ``(version - 1) % SNAPSHOT_EVERY == 0``, otherwise as the edits
  turning version ``version - 1``'s list into it (``{"edits": [[i, j, [h, ...]], ...]}``:
  replace the items ``i:j`` of the previous list, indexes into the previous list, edits in
  increasing order).

Cost: a version stores its skeleton's list of field hashes and its changed fields (``meta``
at least, which holds the version), its edits (about one hash per changed entry) and the
entries not stored before; every :data:`SNAPSHOT_EVERY`-th version adds ``n`` hashes (65 bytes
each), so 1,000 versions of up to 1,000 tenants take about ``1000 / 64 * n * 65`` bytes of lists
beside the distinct entries, instead of ``1000 * n`` entries. Loading a version reads at most
:data:`SNAPSHOT_EVERY` rows of lists and the ``n`` entries (one query per
:data:`LOOKUP_CHUNK`), and reassembles exactly the text the API served when the version was
published (its stored SHA-256, the ETag, is of that text and unchanged in meaning).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Table, select
from sqlalchemy.orm import Session

#: A version whose ``(version - 1)`` is a multiple of this stores its full list of entries.
SNAPSHOT_EVERY = 64

#: Entries fetched per query (SQLite allows 32,766 bound parameters; PostgreSQL 65,535).
LOOKUP_CHUNK = 900

#: Stands for the tenants' entries in a skeleton: the JSON encoding of a string no Plan field
#: holds (its NUL characters are escaped in JSON).
MARKER = json.dumps("\x00tenants\x00")

#: The compact separators every stored text is encoded with.
COMPACT = (",", ":")


def entry_hash(text: str) -> str:
    """The SHA-256 (hex) of an entry's UTF-8 text."""
    return hashlib.sha256(text.encode()).hexdigest()


def join(skeleton: str, entries: Sequence[str]) -> str:
    """The Plan text of ``skeleton`` with ``entries`` in place of its marker (a skeleton with
    no marker is a whole text stored as is: see :func:`split`)."""
    if MARKER not in skeleton:
        return skeleton
    return skeleton.replace(MARKER, "[" + ",".join(entries) + "]", 1)


def skeleton_parts(skeleton: str) -> list[str]:
    """Pieces of ``skeleton`` whose concatenation is it, one per top-level field of the Plan
    document (``{"format":1`` … ``,"meta":{…}}`` and its newline), so that a field unchanged
    between versions (the inputs: the embedded profile and every trace's hash, tens of
    kilobytes) is stored once; a skeleton not in compact JSON's form is one piece."""
    try:
        document = json.loads(skeleton)
    except ValueError:
        return [skeleton]
    if not isinstance(document, dict) or not document:
        return [skeleton]
    parts = [
        ("{" if i == 0 else ",")
        + json.dumps(k)
        + ":"
        + json.dumps(v, separators=COMPACT, allow_nan=False)
        for i, (k, v) in enumerate(document.items())
    ]
    parts[-1] += "}\n"
    return parts if "".join(parts) == skeleton else [skeleton]


def split(text: str) -> tuple[str, list[str]]:
    """The skeleton and entry texts of a stored Plan text, such that ``join`` gives ``text``
    back byte for byte; a text that would not (not one written by ``plan_text``) is kept whole
    as its own skeleton with no entries."""
    document = json.loads(text)
    tenants = document.get("tenants") if isinstance(document, dict) else None
    if isinstance(tenants, list) and MARKER not in text:
        entries = [json.dumps(t, separators=COMPACT, allow_nan=False) for t in tenants]
        document["tenants"] = json.loads(MARKER)
        skeleton = json.dumps(document, separators=COMPACT, allow_nan=False) + "\n"
        if skeleton.count(MARKER) == 1 and join(skeleton, entries) == text:
            return skeleton, entries
    return text, []


def edits(before: Sequence[str], after: Sequence[str]) -> list[list[Any]]:
    """The edits turning hash list ``before`` into ``after`` (module docstring). The common
    head and tail are skipped first (an event changes one server's entries, so the matcher
    sees those only: O(tenants) comparisons instead of its O(tenants) Python steps)."""
    n = min(len(before), len(after))
    head = 0
    while head < n and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < n - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    old, new = before[head : len(before) - tail], after[head : len(after) - tail]
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        [head + i1, head + i2, list(new[j1:j2])]
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def apply(before: Sequence[str], changes: Iterable[Sequence[Any]]) -> list[str]:
    """``before`` with ``changes`` (:func:`edits`) applied."""
    out: list[str] = []
    at = 0
    for i, j, items in changes:
        out.extend(before[at:i])
        out.extend(items)
        at = j
    out.extend(before[at:])
    return out


def record(version: int, previous: Sequence[str] | None, hashes: list[str]) -> dict[str, Any]:
    """What ``plans.entries`` holds for ``version`` whose list is ``hashes``; ``previous`` is
    version ``version - 1``'s list (needed unless the version is a snapshot)."""
    if (version - 1) % SNAPSHOT_EVERY == 0:
        return {"full": hashes}
    if previous is None:
        raise ValueError(f"Plan version {version}: the previous version's entries are needed")
    return {"edits": edits(previous, hashes)}


def snapshot_of(version: int) -> int:
    """The version holding the full list that ``version``'s list is built from."""
    return version - (version - 1) % SNAPSHOT_EVERY


def hashes_from(records: Sequence[tuple[int, dict[str, Any]]], version: int) -> list[str]:
    """Version ``version``'s list of entry hashes from ``records`` ((version, ``entries``)
    pairs of versions ``snapshot_of(version)`` to ``version``, in order)."""
    current: list[str] | None = None
    expected = snapshot_of(version)
    for v, stored in records:
        if v != expected:
            raise RuntimeError(f"Plan version {v} read where version {expected} was needed")
        if "full" in stored:
            current = list(stored["full"])
        elif current is None:
            raise RuntimeError(f"Plan version {v}: edits without the full list before them")
        else:
            current = apply(current, stored["edits"])
        expected += 1
    if current is None or expected != version + 1:
        raise RuntimeError(f"Plan version {version}: its stored entries are incomplete")
    return current


# ------------------------------------------------------------------------ database access
def _tables(bind: Session | Connection) -> tuple[Table, Table]:
    from tailbound.service.db import PlanEntryRow, PlanRow

    return PlanRow.__table__, PlanEntryRow.__table__  # type: ignore[return-value]


def load_hashes(bind: Session | Connection, cluster_id: int, version: int) -> list[str]:
    """The list of entry hashes of a cluster's Plan version ``version``."""
    plans, _ = _tables(bind)
    rows = bind.execute(
        select(plans.c.version, plans.c.entries)
        .where(plans.c.cluster_id == cluster_id)
        .where(plans.c.version >= snapshot_of(version), plans.c.version <= version)
        .order_by(plans.c.version)
    ).all()
    return hashes_from([(v, e) for v, e in rows], version)


def entry_texts(bind: Session | Connection, hashes: Sequence[str]) -> list[str]:
    """The entry texts of ``hashes``, in order."""
    _, table = _tables(bind)
    found: dict[str, str] = {}
    wanted = sorted(set(hashes))
    for at in range(0, len(wanted), LOOKUP_CHUNK):
        chunk = wanted[at : at + LOOKUP_CHUNK]
        rows = bind.execute(select(table.c.sha256, table.c.text).where(table.c.sha256.in_(chunk)))
        found.update((h, t) for h, t in rows)
    missing = [h for h in wanted if h not in found]
    if missing:
        raise RuntimeError(f"plan_entries: {len(missing)} entries missing (first {missing[0]})")
    return [found[h] for h in hashes]


def stored_skeleton(parts: Sequence[str]) -> tuple[str, dict[str, str]]:
    """What ``plans.skeleton`` holds for a skeleton of ``parts`` (:func:`skeleton_parts`): the
    JSON list of their hashes; and the parts by hash, to store in ``plan_entries``."""
    by_hash = {entry_hash(p): p for p in parts}
    return json.dumps([entry_hash(p) for p in parts]), by_hash


def load_skeleton(bind: Session | Connection, stored: str) -> str:
    """The skeleton text ``plans.skeleton`` holds as ``stored`` (:func:`stored_skeleton`)."""
    return "".join(entry_texts(bind, json.loads(stored)))


def load_text(bind: Session | Connection, cluster_id: int, version: int, stored: str) -> str:
    """The text of a cluster's Plan version ``version`` whose ``plans.skeleton`` is
    ``stored``."""
    skeleton = load_skeleton(bind, stored)
    if MARKER not in skeleton:
        return skeleton
    return join(skeleton, entry_texts(bind, load_hashes(bind, cluster_id, version)))


def store_entries(bind: Session | Connection, texts: dict[str, str]) -> None:
    """Insert the entries ``texts`` (hash → text) not stored yet (concurrent writers of the
    same entry both succeed: insert-or-ignore on both dialects)."""
    if not texts:
        return
    _, table = _tables(bind)
    rows = [{"sha256": h, "text": t} for h, t in texts.items()]
    dialect = bind.get_bind().dialect.name if isinstance(bind, Session) else bind.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        bind.execute(pg_insert(table).on_conflict_do_nothing(index_elements=["sha256"]), rows)
    else:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        bind.execute(sqlite_insert(table).on_conflict_do_nothing(index_elements=["sha256"]), rows)


def version_text(bind: Session | Connection, cluster_id: int, version: int) -> str | None:
    """The text of a cluster's Plan version ``version``; None if there is no such version."""
    plans, _ = _tables(bind)
    skeleton = bind.execute(
        select(plans.c.skeleton).where(plans.c.cluster_id == cluster_id, plans.c.version == version)
    ).scalar()
    return None if skeleton is None else load_text(bind, cluster_id, version, skeleton)


def version_texts(
    bind: Session | Connection, cluster_id: int, low: int, high: int
) -> dict[int, str]:
    """The texts of a cluster's Plan versions ``low`` to ``high`` that exist, by version, read
    in one pass from the snapshot before ``low``."""
    plans, _ = _tables(bind)
    rows = bind.execute(
        select(plans.c.version, plans.c.skeleton, plans.c.entries)
        .where(plans.c.cluster_id == cluster_id)
        .where(plans.c.version >= snapshot_of(max(low, 1)), plans.c.version <= high)
        .order_by(plans.c.version)
    ).all()
    lists: dict[int, tuple[str, list[str]]] = {}
    current: list[str] | None = None
    expected = snapshot_of(max(low, 1))
    for v, skeleton, stored in rows:
        if v != expected:
            raise RuntimeError(f"Plan version {expected} is missing")
        if "full" in stored:
            current = list(stored["full"])
        elif current is None:
            raise RuntimeError(f"Plan version {v}: edits without the full list before them")
        else:
            current = apply(current, stored["edits"])
        if v >= low:
            lists[v] = (load_skeleton(bind, skeleton), current)
        expected += 1
    wanted = sorted({h for s, hs in lists.values() if MARKER in s for h in hs})
    texts = dict(zip(wanted, entry_texts(bind, wanted), strict=True))
    return {v: join(s, [texts[h] for h in hs]) for v, (s, hs) in lists.items()}
