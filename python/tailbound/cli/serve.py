"""``tailbound serve``: the control plane's HTTP API (docs/service.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog

#: Default largest trace upload, bytes (1 GiB).
MAX_UPLOAD_BYTES = 1 << 30


def env(name: str, default: Any) -> Any:
    """The environment's ``TAILBOUND_<NAME>``, else ``default``."""
    return os.environ.get(f"TAILBOUND_{name}", default)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the control plane: admission, Plans and measurements over HTTP",
        description=(
            "Serve the HTTP API (OpenAPI at /openapi.json, pages at /docs) over the database "
            "--db, created and migrated on start. Every option also reads the environment "
            "(TAILBOUND_DB, TAILBOUND_DATA, TAILBOUND_HOST, TAILBOUND_PORT, "
            "TAILBOUND_MAX_UPLOAD_BYTES, TAILBOUND_LOG_LEVEL). SIGTERM stops it gracefully."
        ),
        epilog=epilog(None),
    )
    parser.add_argument(
        "--db",
        default=env("DB", None),
        help="SQLAlchemy URL: sqlite:////abs/path/tb.db (default kind) or "
        "postgresql://user@/dbname?host=/socket/dir",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=env("DATA", None),
        help="folder for uploaded traces and profiles (default: beside an SQLite file, "
        "<file>.data; required for PostgreSQL)",
    )
    parser.add_argument("--host", default=env("HOST", "127.0.0.1"), help="address to listen on")
    parser.add_argument(
        "--port", type=int, default=int(env("PORT", 8750)), help="port (default 8750)"
    )
    parser.add_argument(
        "--max-upload-bytes",
        type=int,
        default=int(env("MAX_UPLOAD_BYTES", MAX_UPLOAD_BYTES)),
        help="largest trace upload (default 1 GiB)",
    )
    parser.add_argument(
        "--log-level",
        default=env("LOG_LEVEL", "info"),
        choices=("debug", "info", "warning", "error"),
    )
    parser.add_argument(
        "--graceful-s",
        type=float,
        default=30.0,
        help="seconds requests in flight get on SIGTERM (default 30)",
    )
    parser.add_argument(
        "--migrate-only", action="store_true", help="create or upgrade the database, then exit"
    )
    parser.set_defaults(run=run)


def data_folder(db: str, data: Path | None) -> Path:
    """``data``, or beside an SQLite database file (``<file>.data``)."""
    from tailbound.errors import ConfigError

    if data is not None:
        return Path(data)
    if db.startswith("sqlite:///") and not db.endswith(":memory:"):
        return Path(db.removeprefix("sqlite:///") + ".data")
    raise ConfigError(None, "--data is required with a database other than an SQLite file")


def run(args: argparse.Namespace) -> int:
    from tailbound.errors import ConfigError

    if not args.db:
        raise ConfigError(None, "--db (or TAILBOUND_DB) is required")
    data = data_folder(args.db, args.data)
    if args.migrate_only:
        from tailbound.service.migrate import upgrade

        print(f"database at revision {upgrade(args.db)}")
        return Exit.OK
    from tailbound.service.server import serve

    serve(
        args.db,
        data,
        args.host,
        args.port,
        max_upload_bytes=args.max_upload_bytes,
        log_level=args.log_level,
        graceful_s=args.graceful_s,
    )
    return Exit.OK
