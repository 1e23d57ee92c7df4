"""The storage gateway (``tailbound gate`` → ``tailbound-gate``) against real NBD clients.

Each test starts its own gateway on a free localhost port over a temporary backend directory:
conformance with ``nbdinfo`` (libnbd-bin) and fio's ``nbd`` engine, hostile input on a raw
socket, and the Plan's priority protecting a probed tenant from a flooding one compared with a
FIFO gateway. Without ``nbdinfo`` or ``fio`` (``.ci/run`` installs them) those tests are skipped
saying which; without the gateway binary (``make install`` builds it) they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tailbound.enforce.storage import find_binary
from tailbound.model import Slo
from tailbound.plan import Bound, DispatchRule, Plan, StageLimit, TenantPlan
from tailbound.stages import STORAGE_PATH, Stage

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
EXPORT = 64 * 1024 * 1024
#: 4 KiB at 4.096 MB/s: a 4 KiB request is 1 ms of device work, so with --emulate-device the
#: device serves 1000 such requests a second whatever the machine's page cache does.
PROFILE = {
    "type": "storageSSD",
    "bandwidthTable": [
        {"requestSize": 4096, "readBandwidth": 4_096_000, "writeBandwidth": 4_096_000}
    ],
    "readMPL": 8,
    "writeMPL": 8,
    "maxOutstandingReadBytes": 1048576,
    "maxOutstandingWriteBytes": 1048576,
}


def _need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (Debian packages libnbd-bin and fio; see .ci/run)")


def _tenant(name: str, level: int, limit: StageLimit | None = None, device: str = "ssd0") -> Any:
    limits = {Stage.STORAGE: limit} if limit else {}
    priority = dict.fromkeys(STORAGE_PATH, level)
    return TenantPlan(name, Slo(0.02), "s0", device, priority, limits, Bound(0.01, "test"))


def _plan(tmp: Path) -> tuple[Path, Path]:
    """H (level 0, unlimited) and L (level 1, bucket 0.5 utilisation and 10 ms) on one SSD,
    two requests in service at most, none of L beside one of H (the thesis' SSD rule)."""
    plan = Plan(
        "test",
        1,
        [_tenant("H", 0), _tenant("L", 1, StageLimit(0.5, 0.01))],
        dispatch=DispatchRule(read_mpl=2, write_mpl=2, low_priority_mpl=0),
    )
    plan.save(tmp / "plan.json")
    (tmp / "profile.json").write_text(json.dumps(PROFILE))
    return tmp / "plan.json", tmp / "profile.json"


@dataclass
class Gate:
    proc: subprocess.Popen[str]
    port: int
    metrics: str = ""

    def uri(self, export: str = "") -> str:
        return f"nbd://127.0.0.1:{self.port}/{export}"

    def stop(self) -> list[dict[str, Any]]:
        """SIGTERM; the gateway's per-export counters."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=20)
        assert self.proc.returncode == 0, err
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@contextmanager
def nbdkit_server(*plugin: str) -> Iterator[int]:
    """nbdkit serving ``plugin`` (and its arguments) on a free localhost port: the port, once it
    accepts connections; nbdkit is stopped on exit."""
    with socket.socket() as s:  # a free port for nbdkit (closed again before nbdkit binds it)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = ["nbdkit", "-f", "-i", "127.0.0.1", "-p", str(port), *plugin]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def start_gate(cmd: list[str]) -> Gate:
    """Start ``cmd`` (a ``tailbound gate`` command line listening on port 0) and wait for its
    "listening on" line (and its metrics address with ``--metrics``)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"gateway did not start: {line!r} {err}")
    gate = Gate(proc, int(line.rsplit(":", 1)[1]))
    if "--metrics" in cmd:
        gate.metrics = proc.stdout.readline().split()[-1]
    return gate


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    find_binary()  # fails, not skips, when the gateway was not built
    started: list[Gate] = []
    plan, profile = _plan(tmp_path)

    def run(*extra: str) -> Gate:
        backend = tmp_path / f"backend{len(started)}"
        cmd = [*TAILBOUND, "gate", "--plan", str(plan), "--profile", str(profile)]
        cmd += ["--backend", str(backend), "--listen", "127.0.0.1:0"]
        cmd += ["--export-size", str(EXPORT), *extra]
        started.append(start_gate(cmd))
        return started[-1]

    yield run
    for g in started:
        if g.proc.poll() is None:
            g.proc.kill()
        g.proc.communicate()


def _fio(jobfile: str, tmp: Path) -> dict[str, Any]:
    path = tmp / "job.fio"
    path.write_text(jobfile)
    p = subprocess.run(
        ["fio", "--output-format=json", str(path)],
        cwd=tmp,  # fio writes its verify state files there
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    return json.loads(out[out.index("{") :])  # the nbd engine prints a line before the JSON


def test_gate_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    plan, profile = _plan(tmp_path)

    def gate(*args: str, plan: Path = plan) -> subprocess.CompletedProcess[str]:
        cmd = [*TAILBOUND, "gate", "--plan", str(plan), "--backend", str(tmp_path / "b"), *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    disk = tmp_path / "disk.json"
    disk.write_text(json.dumps({"type": "storageDisk"}))
    p = gate("--profile", str(disk))
    assert p.returncode == 2 and "disk.json" in p.stderr
    p = gate("--profile", str(profile), "--device", "s9.ssd0")
    assert p.returncode == 2 and "no tenant is placed on device 's9.ssd0'" in p.stderr
    two = Plan("t", 1, [_tenant("A", 0), _tenant("B", 0, device="ssd1")])
    two.save(tmp_path / "two.json")
    p = gate("--profile", str(profile), plan=tmp_path / "two.json")
    assert p.returncode == 2 and "choose one with --device" in p.stderr
    Plan("t", 1, [_tenant("a/b", 0)]).save(tmp_path / "bad.json")
    p = gate("--profile", str(profile), plan=tmp_path / "bad.json")
    assert p.returncode == 2 and "cannot be an export name" in p.stderr
    assert not (tmp_path / "b").exists()
    # the configuration written is the one the binary accepts
    p = gate("--profile", str(profile), "--write-config", str(tmp_path / "c.json"))
    assert p.returncode == 0, p.stderr
    config = json.loads((tmp_path / "c.json").read_text())
    assert config["exports"] == ["H", "L"]
    assert config["scheduler"]["priority"] == [8, 7]
    assert config["limits"]["low_priority_mpl"] == 0
    check = subprocess.run(
        [str(find_binary()), "--check", str(tmp_path / "c.json")], capture_output=True, text=True
    )
    assert check.returncode == 0 and "ok: 2 exports" in check.stdout
    config["limits"]["read_mpl"] = 0
    (tmp_path / "c.json").write_text(json.dumps(config))
    check = subprocess.run(
        [str(find_binary()), "--check", str(tmp_path / "c.json")], capture_output=True, text=True
    )
    assert check.returncode == 2 and "MPL" in check.stderr


def test_nbdinfo_lists_the_plans_exports(start: Any) -> None:
    _need("nbdinfo")
    gate = start()
    listing = subprocess.run(
        ["nbdinfo", "--list", "--json", gate.uri()], capture_output=True, text=True, timeout=20
    )
    assert listing.returncode == 0, listing.stderr
    exports = {e["export-name"]: e for e in json.loads(listing.stdout)["exports"]}
    assert set(exports) == {"H", "L"}
    assert exports["H"]["export-size"] == EXPORT
    assert exports["H"]["can_flush"] and exports["H"]["can_trim"] and exports["H"]["can_fua"]
    size = subprocess.run(["nbdinfo", "--size", gate.uri("L")], capture_output=True, text=True)
    assert size.stdout.strip() == str(EXPORT)
    unknown = subprocess.run(["nbdinfo", "--size", gate.uri("nope")], capture_output=True)
    assert unknown.returncode != 0
    gate.stop()


def test_fio_writes_and_verifies_through_the_gateway(start: Any, tmp_path: Path) -> None:
    _need("fio")
    gate = start("--metrics", "127.0.0.1:0")
    out = _fio(
        f"""[global]
ioengine=nbd
uri={gate.uri("H")}
bs=64k
size=8m
iodepth=8
[write-verify]
rw=randwrite
verify=crc32c
do_verify=1
[read]
stonewall
rw=randread
""",
        tmp_path,
    )
    jobs = {j["jobname"]: j for j in out["jobs"]}
    assert all(j["error"] == 0 for j in jobs.values())
    assert jobs["write-verify"]["write"]["io_bytes"] == 8 << 20
    assert jobs["read"]["read"]["io_bytes"] == 8 << 20
    with urllib.request.urlopen(gate.metrics, timeout=10) as r:
        text = r.read().decode()
    metric = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if not line.startswith("#")
    }
    reads = metric['tailbound_gate_requests_total{export="H",op="read"}']
    writes = metric['tailbound_gate_requests_total{export="H",op="write"}']
    assert writes == 128 and reads >= 2 * 128  # the verifying reads and the read job
    assert metric['tailbound_gate_latency_seconds_count{export="H"}'] == reads + writes
    assert metric['tailbound_gate_latency_seconds_bucket{export="H",le="+Inf"}'] == reads + writes
    assert metric['tailbound_gate_requests_total{export="L",op="read"}'] == 0
    counters = {c["export"]: c for c in gate.stop()}
    # every write, every verifying read and the read job passed the dispatcher
    assert counters["H"]["requests"] >= 3 * 128
    assert counters["L"]["requests"] == 0


def _raw_go(port: int, export: bytes) -> socket.socket:
    """A raw client through the handshake (fixed newstyle, NBD_OPT_GO) to transmission."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    hello = _recv(s, 18)
    assert hello[:16] == b"NBDMAGICIHAVEOPT"
    s.sendall(struct.pack(">I", 3))  # fixed newstyle, no zeroes
    data = struct.pack(">I", len(export)) + export + struct.pack(">H", 0)
    s.sendall(b"IHAVEOPT" + struct.pack(">II", 7, len(data)) + data)
    while True:
        _, _, reply, length = struct.unpack(">QIII", _recv(s, 20))
        _recv(s, length)
        if reply == 1:  # NBD_REP_ACK
            return s
        assert reply == 3, hex(reply)  # NBD_REP_INFO


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _request(cmd: int, handle: int, offset: int, length: int, magic: int = 0x25609513) -> bytes:
    return struct.pack(">IHHQQI", magic, 0, cmd, handle, offset, length)


def test_hostile_input_closes_that_connection_only(start: Any) -> None:
    gate = start("--max-request", "1M")
    sockets: list[socket.socket] = []
    try:
        _hostile(gate, sockets)
    finally:
        for c in sockets:
            c.close()
    gate.stop()


def _hostile(gate: Gate, sockets: list[socket.socket]) -> None:
    s = _raw_go(gate.port, b"H")
    sockets.append(s)
    # out of bounds and oversize reads get errors, and the connection stays in step
    s.sendall(_request(0, 1, EXPORT - 512, 4096))
    assert struct.unpack(">IIQ", _recv(s, 16)) == (0x67446698, 22, 1)  # EINVAL
    s.sendall(_request(0, 2, 0, 2 << 20))
    assert struct.unpack(">IIQ", _recv(s, 16)) == (0x67446698, 75, 2)  # EOVERFLOW
    s.sendall(_request(1, 3, EXPORT, 4) + b"abcd")  # a write past the end: its payload dropped
    assert struct.unpack(">IIQ", _recv(s, 16)) == (0x67446698, 28, 3)  # ENOSPC
    s.sendall(_request(1, 4, 0, 4) + b"abcd")
    assert struct.unpack(">IIQ", _recv(s, 16)) == (0x67446698, 0, 4)
    s.sendall(_request(0, 5, 0, 4))  # replies may come in any order: read after the write's
    assert _recv(s, 16 + 4) == struct.pack(">IIQ", 0x67446698, 0, 5) + b"abcd"
    # a client that stops reading: many reads queued, none of their replies read
    stalled = _raw_go(gate.port, b"L")
    sockets.append(stalled)
    stalled.sendall(b"".join(_request(0, i, 0, 1 << 20) for i in range(200)))
    # bad magic: the connection is closed
    s.sendall(_request(0, 6, 0, 4, magic=0xDEADBEEF))
    with pytest.raises((ConnectionError, OSError)):
        _recv(s, 1)
    # an oversize write: closed too (its payload cannot be skipped)
    w = _raw_go(gate.port, b"H")
    sockets.append(w)
    w.sendall(_request(1, 7, 0, 4 << 20))
    with pytest.raises((ConnectionError, OSError)):
        _recv(w, 1)
    # garbage instead of a handshake
    g = socket.create_connection(("127.0.0.1", gate.port), timeout=5)
    sockets.append(g)
    _recv(g, 18)
    g.sendall(b"\xff" * 64)
    with pytest.raises((ConnectionError, OSError)):
        _recv(g, 1)
    # other clients are still served, by the same dispatcher
    ok = _raw_go(gate.port, b"H")
    sockets.append(ok)
    ok.sendall(_request(0, 8, 0, 4))
    assert struct.unpack(">IIQ", _recv(ok, 16)) == (0x67446698, 0, 8)
    assert _recv(ok, 4) == b"abcd"


def _flood_and_probe(gate: Gate, tmp: Path) -> dict[str, dict[str, float]]:
    out = _fio(
        f"""[global]
ioengine=nbd
rw=randread
bs=4k
size=16m
time_based=1
runtime=3
[flood]
uri={gate.uri("L")}
iodepth=32
[probe]
uri={gate.uri("H")}
iodepth=1
rate_iops=50
""",
        tmp,
    )
    result = {}
    for j in out["jobs"]:
        clat = j["read"]["clat_ns"]
        result[j["jobname"]] = {
            "iops": j["read"]["iops"],
            "mean_ms": clat["mean"] / 1e6,
            "p99_ms": clat["percentile"]["99.000000"] / 1e6,
        }
    return result


def test_priority_protects_the_probe_against_a_flood(start: Any, tmp_path: Path) -> None:
    """L floods at queue depth 32, H probes at 50 requests/s; each 4 KiB read is 1 ms of
    emulated device work. With the plan, L is held to its bucket (0.5 utilisation: 500 reads/s)
    and waits while H is in service; H waits at most for the requests in service. With FIFO,
    H waits behind L's queue (tens of ms)."""
    _need("fio")
    enforced = _flood_and_probe(start("--emulate-device"), tmp_path)
    fifo = _flood_and_probe(start("--emulate-device", "--fifo"), tmp_path)
    print(json.dumps({"plan": enforced, "fifo": fifo}, indent=1))
    assert enforced["flood"]["iops"] < 0.5 * 1000 * 1.1
    assert fifo["flood"]["iops"] > enforced["flood"]["iops"] * 1.3
    assert enforced["probe"]["mean_ms"] * 4 < fifo["probe"]["mean_ms"]
    assert enforced["probe"]["mean_ms"] < 10
    assert fifo["probe"]["mean_ms"] > 15


def test_find_binary_names_the_candidates(tmp_path: Path) -> None:
    from tailbound.errors import ConfigError

    with pytest.raises(ConfigError, match="no tailbound-gate binary"):
        find_binary(tmp_path / "missing")


def test_upstream_backend_in_front_of_nbdkit(start: Any, tmp_path: Path) -> None:
    """The gateway in front of nbdkit's file plugin (one file per export, ``dir=``): fio writes
    and verifies through it, and the data lands in nbdkit's file of that export."""
    _need("nbdkit", "fio")
    files = tmp_path / "files"
    files.mkdir()
    for name in ("H", "L"):
        (files / name).write_bytes(b"")
        os.truncate(files / name, 16 << 20)
    with nbdkit_server("file", f"dir={files}") as port:
        gate = start("--upstream", f"127.0.0.1:{port}")
        out = _fio(
            f"""[global]
ioengine=nbd
uri={gate.uri("L")}
bs=64k
size=4m
iodepth=8
[write-verify]
rw=randwrite
verify=crc32c
do_verify=1
""",
            tmp_path,
        )
        assert out["jobs"][0]["error"] == 0
        assert out["jobs"][0]["write"]["io_bytes"] == 4 << 20
        counters = {c["export"]: c for c in gate.stop()}
        assert counters["L"]["requests"] >= 2 * 64 and counters["H"]["requests"] == 0
        # the upstream's size, not --export-size
        assert os.path.getsize(files / "L") == 16 << 20
        assert (files / "L").read_bytes().count(0) < 16 << 20  # fio's data is in nbdkit's file
