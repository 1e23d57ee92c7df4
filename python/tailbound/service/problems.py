"""The API's error answers: one JSON shape, ``{"detail": message, "field": field}``, with the
status saying whose fault it is (docs/service.md, "Errors")."""

from __future__ import annotations

from tailbound.errors import ConfigError, TraceFormatError


class Problem(Exception):
    """An answer other than success: HTTP ``status``, the ``field`` at fault (dotted, as the
    loaders name fields: ``cluster.server_hosts[0].devices``; None when no field is) and the
    message."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field

    def body(self) -> dict[str, str | None]:
        return {"detail": self.message, "field": self.field}


def bad_input(error: ConfigError | TraceFormatError, prefix: str) -> Problem:
    """A loader's error as a 422 naming the field under ``prefix`` (the request's part: ``body``,
    ``cluster``, ``trace``); a trace's line is part of the field (``trace.line 3``)."""
    parts = [prefix]
    if isinstance(error, TraceFormatError) and error.line is not None:
        parts.append(f"line {error.line}")
    if error.field:
        parts.append(error.field)
    return Problem(422, error.message, ".".join(parts))
