"""A throwaway PostgreSQL server for the control plane's tests and benchmark: Debian's package,
initialised in a temporary directory (as the ``postgres`` user when run as root), listening on a
Unix socket there only (``tests/service/harness.py``'s ``postgres`` fixture,
``benchmarks.bench_service --pg auto``)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bin() -> Path:
    """The folder of Debian's PostgreSQL server binaries (``apt-get install postgresql``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("postgres")
    if which:
        return Path(which).resolve().parent
    raise AssertionError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")


@contextlib.contextmanager
def temporary_postgres() -> Iterator[str]:
    """:func:`postgres` as a context manager (``benchmarks.bench_service --pg auto`` uses it):
    the server is stopped and its directory removed on exit."""
    bin_dir = postgres_bin()
    root = Path(tempfile.mkdtemp(prefix="tb-pg-", dir="/tmp"))
    data, sock = root / "data", root / "sock"
    data.mkdir()
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
        shutil.chown(sock, "postgres", "postgres")
        root.chmod(0o755)
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [
            *as_user,
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    with open(root / "postgres.log", "wb") as log:
        # the server runs as postgres itself (not under runuser), so that its signals reach it
        process = subprocess.Popen(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-k",
                str(sock),
                "-p",
                str(port),
                "-c",
                "listen_addresses=",
                "-c",
                "max_connections=200",
            ],
            stdout=log,
            stderr=log,
            user="postgres" if as_user else None,
            group="postgres" if as_user else None,
            extra_groups=[] if as_user else None,
        )
    url = f"postgresql+psycopg://postgres@/postgres?host={sock}&port={port}"
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(f"host={sock} port={port} user=postgres dbname=postgres").close()
            break
        except psycopg.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"postgres did not start: {(root / 'postgres.log').read_text()[-2000:]}"
                ) from None
            time.sleep(0.2)
    try:
        yield url
    finally:
        process.send_signal(signal.SIGINT)  # fast shutdown
        process.wait(60)
        shutil.rmtree(root, ignore_errors=True)


_databases = iter(range(1, 1_000_000))


def pg_database(server_url: str) -> str:
    """A fresh database on the PostgreSQL server of ``server_url``; its URL."""
    import psycopg

    name = f"tb{next(_databases)}_{os.getpid()}"
    query = server_url.split("?", 1)[1]
    params = dict(p.split("=", 1) for p in query.split("&"))
    with psycopg.connect(
        f"host={params['host']} port={params['port']} user=postgres dbname=postgres",
        autocommit=True,
    ) as c:
        c.execute(f"CREATE DATABASE {name}")
    return server_url.replace("/postgres?", f"/{name}?")
