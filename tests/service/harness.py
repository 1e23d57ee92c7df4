"""The control plane's test harness: the real server (``tailbound serve`` in a subprocess, on
uvicorn), the real databases (an SQLite file; PostgreSQL from the Debian package, initialised in
a temporary directory) and inputs from the demo's generator (``tailbound.demo.write_fleet``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from benchmarks.tempdb import free_port, pg_database, postgres_bin, temporary_postgres

import tailbound
from tailbound.demo import write_fleet
from tailbound.service import tokens
from tailbound.service.client import Client
from tailbound.service.db import make_engine, sessions
from tailbound.service.migrate import upgrade
from tailbound.traces.fleet import demo_fleet

__all__ = ["free_port", "pg_database", "postgres_bin", "temporary_postgres"]

#: The folder holding the ``tailbound`` package the tests import (the server runs the same).
SOURCE = Path(tailbound.__file__).resolve().parents[1]
#: Seconds a server gets to answer /health after it starts.
READY_S = 60.0


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


def admitted_on_server00(
    server: Server, sqlite_url: str, demo: Demo
) -> tuple[str, str, Demo, list[str]]:
    """A cluster ``c1`` of ``demo``'s first server host only, its tenants there registered and
    admitted in order: an operator's token, ``server00``'s agent token, that one-server demo and
    the tenants admitted (the live agent tests' common start)."""
    operator = make_token(sqlite_url, "op", "operator")
    token = make_token(sqlite_url, "a0", "agent", host="server00")
    one = Demo(
        demo.folder,
        demo.tenants,
        {**demo.cluster, "server_hosts": demo.cluster["server_hosts"][:1]},
        demo.profile,
    )
    names = [t["name"] for t in one.tenants if t.get("server_host") == "server00"]
    with server.client(operator) as c:
        register(c, one, "c1", names=names)
        admitted = [n for n in names if c.admit("c1", n)["admitted"]]
    return operator, token, one, admitted


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
@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server initialised in a temporary directory (as the ``postgres`` user when
    the tests run as root), on a Unix socket there; yields the URL of a fresh database's server
    (``…/postgres``): tests create their own databases with :func:`pg_database`."""
    with temporary_postgres() as url:
        yield url
