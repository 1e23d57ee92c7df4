"""Entry point of the ``tailbound`` command.

Each verb lives in ``tailbound.cli.<verb>`` and provides ``add_parser(subparsers)`` and
``run(args) -> int``. Verb modules import heavy libraries inside ``run`` so ``--help`` is fast.
Errors caused by the user's input (:class:`~tailbound.errors.TailboundError`) are printed as one
line naming the file, line and field, without a traceback. The exit status follows one convention
for every verb (:mod:`tailbound.cli.exitcodes`: 0 every check held, 1 a check failed, 2 bad input
or usage).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.errors import TailboundError

#: The verbs, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "demo",
    "characterize",
    "profile",
    "simulate",
    "place",
    "bound",
    "admit",
    "prioritize",
    "verify",
    "compare",
    "policies",
    "enforce",
    "gate",
    "export",
    "experiment",
    "serve",
    "token",
    "client",
    "agent",
)


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``tailbound VERB: error: argument --k: …``),
    exit status 2 (:attr:`Exit.BAD_INPUT`); the verbs' sub-parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(Exit.BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every verb's sub-parser, or only verb ``only``'s (each verb's
    module is imported to build its sub-parser; :func:`main` builds the one it runs, so a verb
    does not pay for importing the others — ``tailbound --help`` and unknown verbs get all)."""
    parser = Parser(
        prog="tailbound",
        description="Tail-latency SLO guarantees for workloads sharing storage and networks.",
        epilog=epilog("see each verb's --help for what its checks are"),
    )
    from tailbound import __version__

    parser.add_argument("--version", action="version", version=f"tailbound {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"tailbound.cli.{name}")
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tailbound`` command; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # The verb is the first argument not starting with "-" (the top-level options take no value).
    verb = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(verb if verb in COMMANDS else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as e:  # --help and --version (0), a usage error (2: Exit.BAD_INPUT)
        return int(e.code or 0) if not isinstance(e.code, str) else Exit.BAD_INPUT
    try:
        with quiet_libraries():
            code = args.run(args)
    except TailboundError as e:
        print(f"tailbound {args.command}: error: {e}", file=sys.stderr)
        return Exit.BAD_INPUT
    except KeyboardInterrupt:
        print(f"tailbound {args.command}: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    return int(code)


@contextmanager
def quiet_libraries() -> Iterator[None]:
    """Keep library noise off stdout, which holds the verb's result: warnings from Python and
    numpy print as one line on stderr (``tailbound: warning: …``), not with their source line."""

    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
        print(f"tailbound: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show  # type: ignore[assignment]
        yield


if __name__ == "__main__":
    sys.exit(main())
