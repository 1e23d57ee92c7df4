"""The HiGHS solver instances the LP analyses share (PriorityMeister's latency LP,
:mod:`tailbound.dnc.lp`, and WorkloadCompactor's per-server LP, :mod:`tailbound.policies.wc_lp`,
with options of its own: :data:`OPTIONS`).

Creating a solver costs more than the small LPs it solves, so one is made per use on first use
and re-used (each model is passed whole, so no state leaks from one LP to the next). One per
thread: a Dask worker runs several tasks at once in threads of one process
(:mod:`tailbound.executor`), and two threads solving on one HiGHS instance crash it.
"""

from __future__ import annotations

import os
import sys
import threading

import highspy

_local = threading.local()
#: Held while a solver is made: the banner's redirection of file descriptor 1 is process-wide.
_making = threading.Lock()

#: Options of each use's solver on top of the shared ones (silent, presolve off).
#:
#: ``"wc"``, WorkloadCompactor's per-server LP (:mod:`tailbound.policies.wc_lp`): Dantzig
#: pricing in the dual simplex (``simplex_dual_edge_weight_strategy`` 0) instead of HiGHS's
#: default steepest edge. On the 2,921 LPs of a 2,000-tenant partition (≈ 136 rows × 25
#: columns) it cuts HiGHS's time per LP 1.2× (409 → 334 µs) and the whole placement ≈ 8 %;
#: the optimal solutions stay within 1e-11 (the same placements, limits within 3.5e-12), but
#: the Farkas rays differ and make slightly weaker certificates (2,198 → 2,102 candidates
#: refuted, 2,921 → 3,005 LPs), measured in docs/scale-out.md ("Where a tenant's CPU goes").
OPTIONS: dict[str, dict[str, int]] = {
    "default": {},
    "wc": {"simplex_dual_edge_weight_strategy": 0},
}


def solver(use: str = "default") -> highspy.Highs:
    """This thread's solver for ``use`` (a key of :data:`OPTIONS`): silent, presolve off (the
    LPs are small, a few hundred rows: presolve costs more than it saves), plus that use's
    options. One instance per use and thread, so no option leaks from one use to another."""
    made: dict[str, highspy.Highs] | None = getattr(_local, "solvers", None)
    if made is None:
        made = _local.solvers = {}
    h = made.get(use)
    if h is None:
        with _making:
            h = _new_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        for name, value in OPTIONS[use].items():
            h.setOptionValue(name, value)
        made[use] = h
    return h


def _new_highs() -> highspy.Highs:
    """A solver made with the process's stdout (file descriptor 1) pointed at /dev/null: HiGHS
    prints its "Running HiGHS ..." banner from C++ when an instance is created, before
    ``output_flag`` can be set, and stdout holds the verbs' result tables."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
