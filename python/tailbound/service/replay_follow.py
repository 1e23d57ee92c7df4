"""Following a running replayer: the rows its client appends to its progress file
(``tailbound-replay client --progress FILE``, ``tailbound enforce replay --progress FILE``) read
as they come and summarised per window (docs/service.md, "Agents").

The file is the client CSV's header and then one row per answered request in completion order
(``crates/tailbound-replay/src/progress.rs``). A reading takes the complete lines after the
offset reached last time and leaves a last line cut short for the next reading (the writer may
flush mid-line); a file replaced (another inode) or shorter than the offset is read again from
its start. Each tenant's window is summarised as :func:`tailbound.service.agent.replay_summaries`
summarises a whole CSV: count, exact 0.5/0.99/0.999 percentiles, the largest latency, and the
requests sent beyond the Plan's ``net_in`` bucket — the bucket's state (tokens, time) carried from
window to window, each window's rows taken in issue order (trace time + issue lag); a row issued
before the last one the bucket saw (answered late, in an earlier window's stead) is metered at that
last time, without refill, so a request is never credited tokens twice.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The fractions an agent reports from a latency histogram or a replayer's rows.
FRACTIONS = (0.5, 0.99, 0.999)


@dataclass
class Cursor:
    """Where the last reading of a progress file stopped, and each tenant's ``net_in`` bucket:
    ``[tokens (bytes), last issue time (s)]``."""

    path: str = ""
    inode: int = -1
    offset: int = 0
    header: list[str] = field(default_factory=list)
    buckets: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "inode": self.inode,
            "offset": self.offset,
            "header": self.header,
            "buckets": self.buckets,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Cursor:
        return cls(
            str(doc.get("path", "")),
            int(doc.get("inode", -1)),
            int(doc.get("offset", 0)),
            list(doc.get("header", [])),
            {k: [float(x) for x in v] for k, v in dict(doc.get("buckets", {})).items()},
        )


def read_new(path: Path, cursor: Cursor) -> tuple[list[dict[str, str]], Cursor]:
    """The rows appended to ``path`` since ``cursor`` (complete lines only) and the cursor
    after them; ``([], cursor)`` when the file does not exist (yet)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return [], cursor
    start = cursor
    if (
        cursor.path != str(path.resolve())
        or cursor.inode != st.st_ino
        or st.st_size < cursor.offset
    ):
        start = Cursor(str(path.resolve()), st.st_ino)  # another file, or rewritten: from 0
    with open(path, "rb") as f:
        f.seek(start.offset)
        data = f.read()
    end = data.rfind(b"\n") + 1  # the complete lines; the rest waits for the next reading
    text = data[:end].decode()
    header = start.header
    lines = text.splitlines()
    if not header and lines:
        header, lines = lines[0].split(","), lines[1:]
    rows = [dict(zip(header, r, strict=False)) for r in csv.reader(io.StringIO("\n".join(lines)))]
    after = Cursor(start.path, start.inode, start.offset + end, header, dict(start.buckets))
    return [r for r in rows if r], after


def _number(text: str | None) -> float:
    try:
        return float(text) if text else math.nan
    except ValueError:
        return math.nan


def meter(
    times_s: list[float],
    sizes_bytes: list[float],
    rate_bytes_per_s: float,
    bucket: float,
    state: list[float] | None,
) -> tuple[int, list[float]]:
    """:func:`tailbound.service.agent.beyond_bucket` continued from ``state`` ``[tokens, last
    time]`` (None: a full bucket): how many of the messages found too few tokens, and the state
    after them. A time before the state's is taken as the state's (no refill).

    >>> meter([0.0, 0.0, 0.0], [100, 100, 100], 100.0, 200.0, None)
    (1, [0.0, 0.0])
    >>> meter([1.0, 2.0, 1.5], [100, 100, 100], 100.0, 200.0, [0.0, 0.0])
    (1, [0.0, 2.0])
    """
    tokens, last = (bucket, None) if state is None else (state[0], state[1])
    over = 0
    for t, size in zip(times_s, sizes_bytes, strict=True):
        if last is not None:
            t = max(t, last)
            tokens = min(bucket, tokens + (t - last) * rate_bytes_per_s)
        last = t
        if size <= tokens + 1e-9:
            tokens -= size
        else:
            over += 1
    return over, [tokens, last if last is not None else 0.0]


def summary(tenant: str, answered: Any, beyond: int) -> dict[str, Any]:
    """One tenant's measurement as posted: the count of its answered requests' latencies
    ``answered`` (s, a non-empty numpy array), their :data:`FRACTIONS` percentiles (exact: the
    order statistic at or above), the largest, and ``beyond`` requests beyond its bucket."""
    import numpy as np

    return {
        "tenant": tenant,
        "count": int(answered.size),
        "percentiles": {
            str(f): float(np.quantile(answered, f, method="higher")) for f in FRACTIONS
        },
        "max_s": float(answered.max()),
        "beyond_buckets": beyond,
    }


def summaries(
    rows: list[dict[str, str]], part: dict[str, Any], cursor: Cursor
) -> list[dict[str, Any]]:
    """Per tenant of the host's ``part`` with rows in this window: the summary posted as a
    measurement (module docstring). Updates ``cursor.buckets``."""
    import numpy as np

    from tailbound.plan import Plan
    from tailbound.stages import Stage

    by_tenant: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_tenant.setdefault(r.get("tenant", ""), []).append(r)
    out = []
    for t in Plan.from_json(part).tenants:
        mine = by_tenant.get(t.name)
        if not mine:
            continue
        latency = np.array([_number(r.get("latency_s")) for r in mine])
        answered = latency[np.isfinite(latency)]
        if not answered.size:
            continue
        lag = np.nan_to_num(np.array([_number(r.get("issue_lag_s")) for r in mine]))
        issued = np.array([_number(r.get("time_s")) for r in mine]) + lag
        sizes = np.array([_number(r.get("request_bytes")) for r in mine])
        order = np.argsort(issued, kind="stable")
        limit = t.limits.get(Stage.NET_IN)
        over = 0
        if limit is not None and limit.capacity_per_s is not None:
            over, cursor.buckets[t.name] = meter(
                issued[order].tolist(),
                sizes[order].tolist(),
                limit.rate * limit.capacity_per_s,
                limit.bucket_s * limit.capacity_per_s,
                cursor.buckets.get(t.name),
            )
        out.append(summary(t.name, answered, over))
    return out
