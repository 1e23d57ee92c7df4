"""The exit status of every ``tailbound`` verb, in one place.

=====  ==============================================================================
code   meaning
=====  ==============================================================================
0      the job ran and every check held (:attr:`Exit.OK`)
1      the job ran and a check failed: an SLO missed, a bound above its SLO, a tenant
       left out where the verb promises all (:attr:`Exit.CHECK_FAILED`)
2      bad input or usage: one line on stderr names the file and the entry, line or
       field at fault, and nothing is written (:attr:`Exit.BAD_INPUT`)
130    interrupted (Ctrl-C)
=====  ==============================================================================

A verb's ``run(args)`` returns :func:`outcome` of its checks (or :attr:`Exit.OK` when it checks
nothing; an experiment's ``main``, :func:`report_failures` of its failed checks); bad input
raises :class:`~tailbound.errors.TailboundError`, which :func:`tailbound.cli.main.main` turns
into code 2, as argparse does for a bad option. A verb's parser shows the convention with
``epilog=epilog("what fails a check")``:

>>> outcome(True), outcome(False)
(<Exit.OK: 0>, <Exit.CHECK_FAILED: 1>)
>>> outcome([True, True, False]) is Exit.CHECK_FAILED
True
>>> epilog("a workload missed its SLO")[:80]
'exit status: 0 the job ran and every check held; 1 it ran and a check failed (a '
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum


class Exit(IntEnum):
    """The exit status of a verb."""

    OK = 0
    CHECK_FAILED = 1
    BAD_INPUT = 2
    INTERRUPTED = 130


def outcome(checks: bool | Iterable[bool]) -> Exit:
    """:attr:`Exit.OK` if every check held (``checks`` a bool or bools), else
    :attr:`Exit.CHECK_FAILED`."""
    held = checks if isinstance(checks, bool) else all(checks)
    return Exit.OK if held else Exit.CHECK_FAILED


def report_failures(failures: Sequence[str]) -> Exit:
    """An experiment's end: print each failed check of ``failures`` (sentences, as the
    experiments' ``check`` functions return them) as a ``FAILED: ...`` line on stdout and return
    :func:`outcome` of there being none.

    >>> report_failures([])
    <Exit.OK: 0>
    >>> report_failures(["qos_h: 31.0 > 1.25 × 20 µs/MTU"])
    FAILED: qos_h: 31.0 > 1.25 × 20 µs/MTU
    <Exit.CHECK_FAILED: 1>
    """
    for failure in failures:
        print("FAILED:", failure)
    return outcome(not failures)


def epilog(check: str | None, columns: Sequence[tuple[str, str]] = ()) -> str:
    """The ``--help`` epilog stating the convention; ``check`` says what fails a check of the
    verb (``None``: the verb checks nothing, so it never exits 1). ``columns`` is the legend of
    the table the verb prints, ``(column, meaning)`` pairs, shown first.

    >>> epilog(None, [("SLO ms", "the latency target")]).split(". exit")[0]
    'table columns: "SLO ms" the latency target'
    """
    one = (
        f"1 it ran and a check failed ({check}); "
        if check
        else "1 is not used (this verb checks nothing); "
    )
    legend = "; ".join(f'"{name}" {meaning}' for name, meaning in columns)
    return (f"table columns: {legend}. " if legend else "") + (
        f"exit status: 0 the job ran and every check held; {one}2 bad input or usage (one line "
        "on stderr names the file and the entry, line or field; nothing is written)."
    )
