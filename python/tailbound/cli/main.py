"""Entry point of the ``tailbound`` command.

Each verb lives in ``tailbound.cli.<verb>`` and provides ``add_parser(subparsers)`` and
``run(args) -> int``. Verb modules import heavy libraries inside ``run`` so ``--help`` is fast.
Errors caused by the user's input (:class:`~tailbound.errors.TailboundError`) are printed as one
line naming the file, line and field, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
    "policies",
    "enforce",
    "experiment",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every verb's sub-parser."""
    parser = argparse.ArgumentParser(
        prog="tailbound",
        description="Tail-latency SLO guarantees for workloads sharing storage and networks.",
    )
    from tailbound import __version__

    parser.add_argument("--version", action="version", version=f"tailbound {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"tailbound.cli.{name}")
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tailbound`` command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except TailboundError as e:
        print(f"tailbound {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tailbound {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
