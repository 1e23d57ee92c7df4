"""Warm starts of the per-server LP (:mod:`tailbound.policies.wc_lp`): HiGHS starts from the
optimal basis of the LP the server's tenants had before the newcomer, instead of from scratch.

A newcomer's LP is the incumbents' LP plus the newcomer's six columns and r-b curve rows, maybe
an ``R`` column and the Eq. 5.7 rows of a new (level, device), a capacity row for a queue no
tenant used yet, and the newcomer's coefficients in the capacity and coupling rows it joins
(:func:`~tailbound.policies.wc_lp.build_lp_laid_out` builds the rows in that order and says
which row is which: :class:`LpLayout`). The kept basis is carried over row by row and column by
column; the newcomer's columns start non-basic at their lower bounds and its new rows basic.
The old basis matrix with the new rows' slacks is non-singular (block triangular), and it stays
dual feasible: the newcomer's columns have costs >= 0 and enter only ``<=`` rows with
coefficients >= 0, whose duals are <= 0 in a minimisation, so their reduced costs are >= 0 at
their lower bounds. HiGHS's dual simplex then needs a few iterations instead of ~50 from scratch
(benchmarks/README.md, "bench_scale").

What a warm start changes: not whether the LP is feasible (a property of the LP), and a solution
is still optimal for the same LP and still goes through the exact check; where the LP has
several optimal vertices (degenerate), HiGHS may stop at another one, so a tenant's limits can
differ from a cold solve's, each meeting every bound (equally valid).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import highspy

from tailbound.policies.server import Placed

_LOWER = highspy.HighsBasisStatus.kLower
_BASIC = highspy.HighsBasisStatus.kBasic

#: Kept bases, oldest dropped first beyond this (a few KB each; first-fit over 2,000 tenants
#: touches ~460 servers, bounded first-fit only its window).
CAPACITY = 4096


@dataclass(frozen=True)
class LpLayout:
    """Which row and column of a server's LP is which: tenants in order (six columns each and
    ``curve_rows[j]`` r-b curve rows), then one capacity row per queue in ``queues``, then the
    Eq. 5.7 rows ``(level, device, kind)`` (``kind`` 0–2 the rate bound of stage ``kind``, 3
    the bucket row); the ``R`` columns are ``r_vars`` in order."""

    tenants: int
    curve_rows: tuple[int, ...]
    queues: tuple[int, ...]
    r_vars: tuple[tuple[float, int], ...]
    eq57: tuple[tuple[float, int, int], ...]


@dataclass(frozen=True)
class KeptBasis:
    """The optimal basis of one server's LP, with the tenants it was solved for (held, so
    their identities stay theirs) and its layout. The basis stays HiGHS's object until it is
    carried (reading its statuses into Python lists costs ~40 µs, and most kept bases are
    never carried: the server's next newcomer may not come)."""

    tenants: tuple[Placed, ...]
    layout: LpLayout
    basis: highspy.HighsBasis


def carry(kept: KeptBasis, layout: LpLayout) -> highspy.HighsBasis:
    """``kept``'s basis laid onto the LP of ``layout`` (its tenants plus newcomers after them):
    shared rows and columns keep their status, new columns start at their lower bound, new rows
    basic (module docstring)."""
    old = kept.layout
    n_old = old.tenants
    m_old = sum(old.curve_rows)
    col_status, row_status = kept.basis.col_status, kept.basis.row_status
    cols = col_status[: 6 * n_old] + [_LOWER] * (6 * (layout.tenants - n_old))
    r_status = dict(zip(old.r_vars, col_status[6 * n_old :], strict=True))
    cols += [r_status.get(v, _LOWER) for v in layout.r_vars]
    rows = row_status[:m_old] + [_BASIC] * (sum(layout.curve_rows) - m_old)
    end_cap = m_old + len(old.queues)
    cap = dict(zip(old.queues, row_status[m_old:end_cap], strict=True))
    rows += [cap.get(queue, _BASIC) for queue in layout.queues]
    eq57 = dict(zip(old.eq57, row_status[end_cap:], strict=True))
    rows += [eq57.get(key, _BASIC) for key in layout.eq57]
    basis = highspy.HighsBasis()
    basis.col_status = cols
    basis.row_status = rows
    basis.valid = True
    return basis


class WarmStarts:
    """The optimal bases of the servers' latest LPs, by their tenants (identity), at most
    :data:`CAPACITY` of them, least recently used dropped first. Safe to share between threads
    (each thread solves on its own HiGHS instance); a pickled or deep-copied one starts empty
    (the bases are HiGHS objects, and only speed depends on them)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[tuple[int, ...], KeptBasis] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"capacity": self.capacity}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["capacity"])  # type: ignore[misc]

    def __len__(self) -> int:
        """How many bases are kept."""
        return len(self._kept)

    def find(self, tenants: Sequence[Placed]) -> KeptBasis | None:
        """A kept basis for ``tenants`` without the last one (the newcomer), if any."""
        key = tuple(id(t) for t in tenants[:-1])
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                self.hits += 1
        return kept

    def keep(self, tenants: Sequence[Placed], layout: LpLayout, basis: highspy.HighsBasis) -> None:
        """Keep the optimal ``basis`` of the LP of ``tenants``."""
        key = tuple(id(t) for t in tenants)
        with self._lock:
            self._kept[key] = KeptBasis(tuple(tenants), layout, basis)
            self._kept.move_to_end(key)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
