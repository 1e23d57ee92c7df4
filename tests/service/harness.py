"""The control plane's test harness: the real server (``tailbound serve`` in a subprocess, on
uvicorn), the real databases (an SQLite file; PostgreSQL from the Debian package, initialised in
a temporary directory) and inputs from the demo's generator (``tailbound.demo.write_fleet``)."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import tailbound
from tailbound.demo import write_fleet
from tailbound.service import tokens
from tailbound.service.client import Client
from tailbound.service.db import make_engine, sessions
from tailbound.service.migrate import upgrade
from tailbound.traces.fleet import demo_fleet

#: The folder holding the ``tailbound`` package the tests import (the server runs the same).
SOURCE = Path(tailbound.__file__).resolve().parents[1]
#: Seconds a server gets to answer /health after it starts.
READY_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_token(db: str, name: str, scope: str, host: str | None = None) -> str:
    """A token created on the database directly (as ``tailbound token create`` does)."""
    upgrade(db)
    engine = make_engine(db)
    try:
        with sessions(engine).begin() as s:
            return tokens.create(s, name, scope, host)
    finally:
        engine.dispose()


class Server:
    """``tailbound serve`` on ``db`` in a subprocess: :meth:`start` waits for /health."""

    def __init__(self, db: str, data: Path, *, max_upload_bytes: int = 1 << 30) -> None:
        self.db, self.data, self.max_upload_bytes = db, data, max_upload_bytes
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data.parent / f"server-{self.port}.log"

    def start(self) -> Server:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SOURCE), os.environ.get("PYTHONPATH", "")]),
        }
        argv = [
            sys.executable,
            "-m",
            "tailbound.cli.main",
            "serve",
            "--db",
            self.db,
            "--data",
            str(self.data),
            "--port",
            str(self.port),
            "--max-upload-bytes",
            str(self.max_upload_bytes),
            "--log-level",
            "warning",
        ]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log.read_text()[-3000:]
                raise AssertionError(f"the server exited with {self.process.returncode}: {log}")
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not answer /health within {READY_S} s")

    def kill(self) -> None:
        """``kill -9`` the server."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> int:
        """SIGTERM (graceful shutdown); the exit status."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def client(self, token: str | None) -> Client:
        return Client(self.url, token)


@dataclass(frozen=True)
class Demo:
    """A generated fleet's files: tenants file entries, cluster and profile documents."""

    folder: Path
    tenants: list[dict[str, Any]]
    cluster: dict[str, Any]
    profile: dict[str, Any]

    def trace(self, name: str) -> Path:
        entry = next(t for t in self.tenants if t["name"] == name)
        return self.folder / entry["trace"]


def demo(
    folder: Path, workloads: int, *, servers: int, duration_s: float = 10.0, seed: int = 1
) -> Demo:
    paths = write_fleet(
        demo_fleet(workloads, seed=seed, duration_s=duration_s), folder, servers=servers
    )
    return Demo(
        folder,
        json.loads(paths["tenants"].read_text())["tenants"],
        json.loads(paths["cluster"].read_text()),
        json.loads(paths["profile"].read_text()),
    )


def register(
    client: Client,
    d: Demo,
    cluster: str,
    policy: str = "workloadcompactor",
    options: dict[str, Any] | None = None,
    names: list[str] | None = None,
    addresses: dict[str, str] | None = None,
    ports: dict[str, int] | None = None,
) -> list[str]:
    """Register ``cluster`` with ``d``'s cluster and profile (and hosts' ``addresses``), upload
    the traces and register the tenants (all, or ``names``; with their ``ports``); the tenant
    names."""
    client.create_cluster(cluster, policy, d.cluster, d.profile, options or {}, addresses)
    done = []
    for entry in d.tenants:
        if names is not None and entry["name"] not in names:
            continue
        stored = client.upload_trace(d.folder / entry["trace"])
        port = {"port": ports[entry["name"]]} if ports and entry["name"] in ports else {}
        client.register_tenant(cluster, {**entry, "trace": stored["sha256"], **port})
        done.append(entry["name"])
    return done


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """Eight workloads of 10 s, two servers."""
    return demo(tmp_path_factory.mktemp("demo8"), 8, servers=2)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tb.db'}"


@pytest.fixture
def server(tmp_path: Path, sqlite_url: str) -> Iterator[Server]:
    """A server on a fresh SQLite database."""
    s = Server(sqlite_url, tmp_path / "data").start()
    yield s
    s.stop()


# ------------------------------------------------------------------------------ PostgreSQL
def postgres_bin() -> Path:
    """The folder of Debian's PostgreSQL server binaries (``apt-get install postgresql``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("postgres")
    if which:
        return Path(which).resolve().parent
    raise AssertionError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server initialised in a temporary directory (as the ``postgres`` user when
    the tests run as root), on a Unix socket there; yields the URL of a fresh database's server
    (``…/postgres``): tests create their own databases with :func:`pg_database`."""
    with temporary_postgres() as url:
        yield url


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
