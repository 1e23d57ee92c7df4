"""Run every ``benchmarks/bench_*.py`` module in turn (``make bench``).

Each module's ``main()`` prints a Markdown table of its results with the ratio against the naive
approach or the reference figure measured in the same run. ``python -m benchmarks.run [--quick]
[NAME ...]``: only the modules whose name contains one of the ``NAME``s; ``--quick`` passes
``--quick`` to each (small inputs, seconds each: what ``tests/benchmarks/test_quick_modes.py``
runs). A module that raises or returns a non-zero status is reported and the others still run;
the exit status is 1 if any failed.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback
from pathlib import Path


def modules() -> list[str]:
    """The benchmark modules' names (``bench_*``), sorted."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    wanted = [a for a in argv if a != "--quick"]
    names = [n for n in modules() if not wanted or any(a in n for a in wanted)]
    failed = []
    for name in names:
        print(f"\n## {name}\n", flush=True)
        start = time.perf_counter()
        try:
            # each module's own arguments only: never this command line's
            status = importlib.import_module(f"benchmarks.{name}").main(
                ["--quick"] if quick else []
            )
        except Exception:  # report it and run the others
            traceback.print_exc()
            status = "raised"
        if status not in (None, 0):
            failed.append(f"{name} ({status})")
        print(f"\n({name}: {time.perf_counter() - start:.1f} s)", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
