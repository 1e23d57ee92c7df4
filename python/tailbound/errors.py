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
    Without a file (a command-line option, a document built in memory) the message starts with
    the field, or is the message alone:

    >>> str(ConfigError("t.json", "expected a number", field="tenants[2].slo_s"))
    't.json, field tenants[2].slo_s: expected a number'
    >>> str(ConfigError(None, "--k must be at least 1"))
    '--k must be at least 1'
    """

    def __init__(self, path: str | Path | None, message: str, *, field: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.field = field
        self.message = message
        # an option or an in-memory document has no file: the message starts at the field
        parts = [p for p in (self.path, None if field is None else f"field {field}") if p]
        super().__init__(f"{', '.join(parts)}: {message}" if parts else message)
