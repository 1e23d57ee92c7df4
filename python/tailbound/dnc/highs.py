"""The one HiGHS solver instance the LP analyses share (PriorityMeister's latency LP,
:mod:`tailbound.dnc.lp`, and WorkloadCompactor's per-server LP, :mod:`tailbound.policies.wc_lp`).

Creating a solver costs more than the small LPs it solves, so one is made on first use and
re-used (each model is passed whole, so no state leaks from one LP to the next). One per
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


def solver() -> highspy.Highs:
    """This thread's shared solver: silent, presolve off (the LPs are small, a few hundred
    rows: presolve costs more than it saves)."""
    h: highspy.Highs | None = getattr(_local, "solver", None)
    if h is None:
        with _making:
            h = _new_highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        _local.solver = h
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
