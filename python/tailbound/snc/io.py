"""Writing results: JSON written atomically (temporary file + rename) and plain-text tables."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic


def write_json_atomic(path: str | Path, document: Any) -> None:
    """Write ``document`` as JSON to ``path`` (creating its folder) without ever leaving a
    half-written file (:func:`tailbound.atomic.write_text_atomic`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(document, indent=1, allow_nan=False) + "\n")


def fmt_ms(seconds: float | None) -> str:
    """Seconds as milliseconds with 3 decimals; ``inf`` for an infinite bound.

    >>> fmt_ms(0.0123456), fmt_ms(float("inf")), fmt_ms(None)
    ('12.346', 'inf', '-')
    """
    if seconds is None:
        return "-"
    return "inf" if not math.isfinite(seconds) else f"{seconds * 1e3:.3f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table.

    >>> print(markdown_table(["a", "b"], [[1, 2]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
