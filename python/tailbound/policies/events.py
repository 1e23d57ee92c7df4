"""Placement's arrival and departure events, read from WorkloadCompactor's ``events.csv``
(``../shared/data/wc62/``); tenants and the cluster are read by :mod:`tailbound.model`.

Every error names the file and the line at fault (:class:`~tailbound.errors.ConfigError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tailbound.errors import ConfigError


@dataclass(frozen=True)
class Event:
    """A tenant (index into the tenants list) arriving (``add``) or departing (``del``)."""

    tenant: int
    kind: str


def load_events(path: str | Path, tenant_count: int) -> list[Event]:
    """Read ``tenant_index,addClient|delClient`` lines; checks indices and that a tenant departs
    only while present and arrives only while absent."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror}") from None
    kinds = {"addClient": "add", "delClient": "del", "add": "add", "del": "del"}
    events = []
    present: set[int] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        where = f"line {number}"
        if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in kinds:
            raise ConfigError(
                path, f"expected 'index,addClient|delClient', got {line!r}", field=where
            )
        index, kind = int(parts[0]), kinds[parts[1]]
        if index >= tenant_count:
            raise ConfigError(
                path, f"tenant index {index} but only {tenant_count} tenants", field=where
            )
        if kind == "add" and index in present:
            raise ConfigError(path, f"tenant {index} arrives twice", field=where)
        if kind == "del" and index not in present:
            raise ConfigError(path, f"tenant {index} departs but is not present", field=where)
        (present.add if kind == "add" else present.discard)(index)
        events.append(Event(index, kind))
    return events
