"""Running the API: migrate, log, serve, stop gracefully (``tailbound serve``).

:func:`serve` upgrades the database (:func:`tailbound.service.migrate.upgrade`; a fresh SQLite
file or PostgreSQL database is ready in well under a second), builds the application and runs
it on uvicorn. SIGTERM or SIGINT stops accepting connections and lets requests in flight finish
for up to ``graceful_s`` seconds; an admission interrupted harder than that (or by ``kill -9``)
was not committed, and its transaction is rolled back by the database. Logs are one JSON object
per line on stderr (:class:`JsonFormatter`), the access log included.

Configuration: flags, or the environment (``TAILBOUND_DB``, ``TAILBOUND_DATA``,
``TAILBOUND_HOST``, ``TAILBOUND_PORT``, ``TAILBOUND_MAX_UPLOAD_BYTES``, ``TAILBOUND_LOG_LEVEL``).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

#: The attributes every log record has (the rest are a record's ``extra`` fields).
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """A log record as one JSON line: time, level, logger, message and its extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        doc.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def log_config(level: str) -> dict[str, Any]:
    """The logging configuration of the server and uvicorn: JSON lines on stderr."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "loggers": {
            name: {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
            for name in ("tailbound", "uvicorn", "uvicorn.error", "uvicorn.access", "alembic")
        },
    }


def serve(
    db: str,
    data: Path,
    host: str,
    port: int,
    *,
    max_upload_bytes: int,
    log_level: str = "info",
    graceful_s: float = 30.0,
) -> None:
    """Migrate the database at ``db``, then serve the API on ``host:port`` until stopped."""
    import logging.config

    import uvicorn

    from tailbound.service.app import Settings, create_app
    from tailbound.service.migrate import upgrade

    logging.config.dictConfig(log_config(log_level))
    log = logging.getLogger("tailbound.service")
    revision = upgrade(db)
    data.mkdir(parents=True, exist_ok=True)
    app = create_app(Settings(db, data, max_upload_bytes))
    log.info("database ready", extra={"revision": revision, "data": str(data)})
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=log_config(log_level),
        timeout_graceful_shutdown=int(graceful_s),
        lifespan="off",
    )
    server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGTERM or SIGINT, then raises the signal again for the
    # handlers it found: these, so that a graceful stop exits with status 0
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    server.run()
    app.state.tb.engine.dispose()
    log.info("stopped")
    sys.stderr.flush()
