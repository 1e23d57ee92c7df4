"""The one HiGHS solver instance the LP analyses share (PriorityMeister's latency LP,
:mod:`tailbound.dnc.lp`, and WorkloadCompactor's per-server LP, :mod:`tailbound.policies.wc_lp`).

Creating a solver costs more than the small LPs it solves, so one is made on first use and
re-used (each model is passed whole, so no state leaks from one LP to the next).
"""

from __future__ import annotations

import os
import sys

import highspy

_solver: highspy.Highs | None = None


def solver() -> highspy.Highs:
    """The shared solver: silent, presolve off (the LPs are small, a few hundred rows:
    presolve costs more than it saves)."""
    global _solver
    if _solver is None:
        _solver = _new_highs()
        _solver.setOptionValue("output_flag", False)
        _solver.setOptionValue("presolve", "off")
    return _solver


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
