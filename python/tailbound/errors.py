"""Errors tailbound raises for bad input: each names the file, line and field at fault.

The CLI catches :class:`TailboundError` and prints its message without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class TailboundError(Exception):
    """Base of every error caused by the user's input rather than by a bug."""


class TraceFormatError(TailboundError, ValueError):
    """A trace file that cannot be read.

    ``line`` is 1-based (a record number for binary formats), ``None`` when the problem is the
    file as a whole (empty, unknown format).
    """

    def __init__(
        self,
        path: str | Path | None,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.message = message
        where = self.path or "<trace>"
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")


class ConfigError(TailboundError, ValueError):
    """A configuration file (profile, tenants, cluster, scenario) that is malformed.

    ``field`` is a dotted path into the document, such as ``bandwidthTable[3].requestSize``.
    """

    def __init__(self, path: str | Path | None, message: str, *, field: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.field = field
        self.message = message
        where = self.path or "<config>"
        if field is not None:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")
