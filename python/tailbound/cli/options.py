"""Command-line option types shared by the verbs: numbers checked when argparse reads them.

A bad value is argparse's usage error (``tailbound VERB: error: argument --k: …``, exit code 2)
before any work starts. Every number must be finite (``nan``, ``inf`` are refused unless the
option says ``infinite_ok``) and inside its stated range; the help of every option gives its unit.

>>> number(low=0, low_open=True)("0.5")
0.5
>>> number(low=0, low_open=True)("nan")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a finite number > 0, got 'nan'
>>> integer(low=1, high=64)("65")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected an integer in [1, 64], got '65'
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any


def _range(low: float | None, high: float | None, low_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"<= {high:g}"
    return ""


def number(
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    infinite_ok: bool = False,
) -> Callable[[str], float]:
    """An argparse type: a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``);
    ``infinite_ok`` also accepts ``inf``."""
    what = f"a finite number {_range(low, high, low_open)}".rstrip()

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        ok = (math.isfinite(value) or (infinite_ok and value == math.inf)) and not (
            (low is not None and (value < low or (low_open and value == low)))
            or (high is not None and value > high)
        )
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def integer(*, low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]``."""
    bounds = (
        f"in [{low}, {high}]" if low is not None and high is not None else _range(low, high, False)
    )
    what = f"an integer {bounds}".rstrip()

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def add_span(parser: argparse.ArgumentParser, verb: str = "replay") -> None:
    """The ``--half`` and ``--window`` options of the verbs that replay traces: which part of each
    trace they use (:func:`span_of`; check ``--window`` with :func:`check_window`)."""
    parser.add_argument(
        "--half",
        choices=("first", "second"),
        help=f"{verb} one half of each trace (default: the whole trace)",
    )
    add_window(parser)


def span_of(trace: Any, args: argparse.Namespace) -> Any:
    """The part of ``trace`` that :func:`add_span`'s options select: the half, then the window
    (its times are the trace's, so a window of the second half starts after its midpoint)."""
    if args.half == "first":
        trace = trace.first_half()
    elif args.half == "second":
        trace = trace.second_half()
    if args.window is not None:
        trace = trace.slice_time(*args.window)
    return trace


def add_window(parser: argparse.ArgumentParser) -> None:
    """The ``--window START_S END_S`` option of the verbs that replay traces; check it with
    :func:`check_window`."""
    parser.add_argument(
        "--window",
        nargs=2,
        type=float,
        metavar=("START_S", "END_S"),
        help="replay the requests between these times of each trace, in seconds",
    )


def check_window(args: argparse.Namespace) -> None:
    """Refuse a ``--window`` that is not ``0 <= START_S < END_S < inf`` (a ConfigError)."""
    if args.window is not None and not (0 <= args.window[0] < args.window[1] < math.inf):
        from tailbound.errors import ConfigError

        raise ConfigError(None, f"--window needs 0 <= START_S < END_S, got {args.window}")


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The ``--quiet`` option: no progress bars (they go to stderr, and only to a terminal)."""
    parser.add_argument(
        "--quiet", action="store_true", help="no progress on stderr (none when not a terminal)"
    )


def progress_disabled(args: argparse.Namespace | bool) -> bool:
    """Whether progress bars are off: ``--quiet`` (``args.quiet``, or ``args`` itself when a
    library function is handed the flag alone), or stderr is not a terminal."""
    quiet = args if isinstance(args, bool) else getattr(args, "quiet", False)
    return bool(quiet) or not sys.stderr.isatty()


class _Silent:
    """What a disabled progress bar does (nothing), without importing tqdm: the import costs
    ~15 ms of a verb's cold start (tqdm reads its version through ``importlib.metadata``)."""

    def __init__(self, iterable: Any = None, **_: Any) -> None:
        self.iterable = iterable
        self.n: float = 0

    def __iter__(self) -> Any:
        return iter(self.iterable)

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def update(self, n: float = 1) -> None:
        self.n += n

    def refresh(self) -> None:
        return None

    def set_postfix_str(self, *_: Any, **__: Any) -> None:
        return None

    def close(self) -> None:
        return None


def progress(args: argparse.Namespace | bool, **options: Any) -> Any:
    """A tqdm progress bar on stderr; under :func:`progress_disabled` a silent stand-in with
    the same methods (``update``, ``n``, ``refresh``, ``set_postfix_str``, iteration, ``with``)
    and tqdm is not imported."""
    if progress_disabled(args):
        return _Silent(**options)
    from tqdm import tqdm

    return tqdm(file=sys.stderr, **options)


def add_executor(parser: argparse.ArgumentParser, what: str = "tasks") -> None:
    """The ``--jobs N`` and ``--scheduler ADDRESS`` options of the verbs whose ``what`` are
    independent: a local pool of N processes, or a Dask cluster (:mod:`tailbound.executor`;
    docs/scale-out.md). Build the runner with :func:`runner_of`."""
    parser.add_argument(
        "--jobs",
        type=integer(low=1),
        default=1,
        metavar="N",
        help=f"run the {what} in N local worker processes (default 1: in this process)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help=f"run the {what} on the Dask cluster whose scheduler is at ADDRESS "
        "(tcp://host:8786; default: $DASK_SCHEDULER_ADDRESS if set, else locally)",
    )


def runner_of(args: argparse.Namespace) -> Any:
    """The :class:`tailbound.executor.Runner` of :func:`add_executor`'s options, with a progress
    bar unless :func:`progress_disabled`."""
    from tailbound.executor import Runner

    return Runner(
        jobs=args.jobs,
        scheduler=getattr(args, "scheduler", None),
        progress=not progress_disabled(args),
    )
