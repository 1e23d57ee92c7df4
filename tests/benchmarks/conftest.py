"""The benchmark modules are a package at the repository's root (``python -m benchmarks.…``), not
part of the installed ``tailbound``: put the root on ``sys.path`` for their tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
