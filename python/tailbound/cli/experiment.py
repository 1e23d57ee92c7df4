"""``tailbound experiment``: list or run the reproductions in :mod:`tailbound.experiments`.

An experiment is any public module of that package with a ``main(argv) -> int`` function (modules
whose name starts with ``_`` are helpers); its name is
the module name and its description the first line of its docstring. ``LIST`` prints them;
``NAME [ARGS...]`` runs one with the remaining arguments.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "experiment",
        help="list (LIST) or run (NAME [ARGS...]) the reproduced experiments",
        description=(
            "Run one of the reproductions of the documents' figures, each writing a table and a "
            "plot. `tailbound experiment LIST` lists them; arguments after NAME go to the "
            "experiment (try `tailbound experiment NAME --help`)."
        ),
        epilog=epilog("the experiment's own check failed (see its --help)"),
    )
    parser.add_argument("name", metavar="LIST|NAME", help="LIST, or the experiment to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the experiment's arguments")
    parser.set_defaults(run=run)


def discover() -> dict[str, str]:
    """Experiment name → first docstring line, for every module with a ``main``."""
    import tailbound.experiments as package

    found = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue  # shared helpers, not experiments
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if callable(getattr(module, "main", None)):
            doc = (module.__doc__ or "").strip().splitlines()
            found[info.name] = doc[0] if doc else ""
    return found


def run(args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError

    experiments = discover()
    if args.name.upper() == "LIST":
        width = max(map(len, experiments), default=0)
        for name, doc in experiments.items():
            print(f"{name:<{width}}  {doc}")
        return 0
    if args.name not in experiments:
        raise ConfigError(
            None, f"no experiment {args.name!r} (known: {', '.join(experiments)}; try LIST)"
        )
    module = importlib.import_module(f"tailbound.experiments.{args.name}")
    # the experiment's own parser names itself in its usage and errors after argv[0]
    argv0 = sys.argv[0]
    sys.argv[0] = f"tailbound experiment {args.name}"
    try:
        return int(module.main(list(args.args)) or Exit.OK)
    finally:
        sys.argv[0] = argv0
