"""``tailbound policies``: list the registered policies by kind (the one policy registry)."""

from __future__ import annotations

import argparse

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.policies.registry import KINDS, REGISTRY


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policies",
        help="list every policy tailbound offers, by kind",
        description=(
            "List the registered policies: placement (tailbound place), admission (tailbound "
            "admit and bound), prioritization (tailbound prioritize) and scheduling."
        ),
        epilog=epilog(None),
    )
    parser.add_argument("--kind", choices=KINDS, help="only policies of this kind")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tailbound.tables import markdown_table

    rows = [[e.kind, e.name, e.summary] for e in REGISTRY if args.kind in (None, e.kind)]
    print(markdown_table(["kind", "policy", "what it does"], rows))
    return Exit.OK
