"""Run every ``benchmarks/bench_*.py`` module in turn (``make bench``).

Each module's ``main()`` prints a Markdown table of its results with the ratio against the naive
approach or the reference figure measured in the same run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    names = sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_") and (not argv or any(a in m.name for a in argv))
    )
    for name in names:
        print(f"\n## {name}\n", flush=True)
        importlib.import_module(f"benchmarks.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
