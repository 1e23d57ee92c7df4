"""Plain-text results: milliseconds and Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
