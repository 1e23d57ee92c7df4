"""The storage gateway's operations (``docs/enforcement.md``, "Storage path"): hot reload of a new
Plan under a live fio connection, graceful shutdown draining the requests in the gateway, and
direct I/O on a file of a real disk and on a loop block device.

Each test starts its own gateway (``tailbound gate``) on a free localhost port. Without fio or
nbdinfo (``.ci/run`` installs them), a filesystem with ``O_DIRECT`` or a loop device (root and
``losetup``) the tests needing them are skipped saying which; without the gateway binary
(``make install`` builds it) they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.enforce.test_gate import (
    EXPORT,
    PROFILE,
    TAILBOUND,
    Gate,
    _fio,
    _need,
    _raw_go,
    _recv,
    _request,
    _tenant,
    start_gate,
)

from tailbound.enforce.storage import find_binary
from tailbound.plan import DispatchRule, Plan, StageLimit

REPLY = 0x67446698


def _save_plan(path: Path, tenants: list[Any]) -> Path:
    Plan(
        "ops", 1, tenants, dispatch=DispatchRule(read_mpl=2, write_mpl=2, low_priority_mpl=0)
    ).save(path)
    return path


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Any]:
    """``gate(plan, backend, *extra)`` starts ``tailbound gate`` (its stdout's first lines read)."""
    find_binary()
    (tmp_path / "profile.json").write_text(json.dumps(PROFILE))
    started: list[Gate] = []

    def run(plan: Path, backend: Path, *extra: str) -> Gate:
        cmd = [*TAILBOUND, "gate", "--plan", str(plan), "--profile", str(tmp_path / "profile.json")]
        cmd += ["--backend", str(backend), "--listen", "127.0.0.1:0", *extra]
        if "--export-size" not in extra:
            cmd += ["--export-size", str(EXPORT)]
        started.append(start_gate(cmd))
        return started[-1]

    yield run
    for g in started:
        if g.proc.poll() is None:
            g.proc.kill()
        g.proc.communicate()


def _metrics(g: Gate) -> dict[str, float]:
    with urllib.request.urlopen(g.metrics, timeout=10) as r:
        text = r.read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def _reads(g: Gate, export: str) -> float:
    return _metrics(g).get(f'tailbound_gate_requests_total{{export="{export}",op="read"}}', 0.0)


def _rate(g: Gate, export: str, seconds: float) -> float:
    t0, n0 = time.monotonic(), _reads(g, export)
    time.sleep(seconds)
    return (_reads(g, export) - n0) / (time.monotonic() - t0)


def test_reload_applies_a_new_plan_under_a_live_connection(gate: Any, tmp_path: Path) -> None:
    """fio floods L (level 1, bucket 0.5 utilisation; each 4 KiB read is 1 ms of emulated
    device work, so L gets 500 reads/s). ``tailbound gate --reload`` pushes a plan where L's
    bucket is 0.2 (200 reads/s), H is gone and N is new: fio's connection goes on at the new
    rate, H's open connection is closed, N is listed. A bad configuration is then refused and
    the plan in force stays."""
    _need("fio", "nbdinfo")
    backend = tmp_path / "backend"
    plan1 = _save_plan(
        tmp_path / "plan1.json", [_tenant("H", 0), _tenant("L", 1, StageLimit(0.5, 0.01))]
    )
    plan2 = _save_plan(
        tmp_path / "plan2.json", [_tenant("N", 0), _tenant("L", 1, StageLimit(0.2, 0.01))]
    )
    g = gate(plan1, backend, "--emulate-device", "--metrics", "127.0.0.1:0")
    h = _raw_go(g.port, b"H")
    job = tmp_path / "flood.fio"
    job.write_text(
        f"[flood]\nioengine=nbd\nuri={g.uri('L')}\nrw=randread\nbs=4k\nsize=16m\n"
        "iodepth=32\ntime_based=1\nruntime=5\n"
    )
    fio = subprocess.Popen(
        ["fio", "--output-format=json", str(job)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        before = _rate(g, "L", 1.2)
        p = subprocess.run(
            [
                *TAILBOUND,
                "gate",
                "--plan",
                str(plan2),
                "--profile",
                str(tmp_path / "profile.json"),
                "--backend",
                str(backend),
                "--emulate-device",
                "--reload",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert p.returncode == 0, p.stderr
        assert f"sent SIGHUP to tailbound-gate {g.proc.pid}" in p.stdout
        time.sleep(0.3)
        after = _rate(g, "L", 1.2)
        out, err = fio.communicate(timeout=30)
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.communicate()
    print(json.dumps({"L reads/s before": before, "after": after}))
    assert fio.returncode == 0, err
    result = json.loads(out[out.index("{") :])["jobs"][0]
    assert result["error"] == 0
    assert 400 < before < 600
    assert 140 < after < 260
    m = _metrics(g)
    assert m["tailbound_gate_reloads_total"] == 1
    assert m["tailbound_gate_reload_failures_total"] == 0
    # the removed export's connection was closed; the new one is served
    with pytest.raises((ConnectionError, OSError)):
        _recv(h, 1)
    h.close()
    listing = subprocess.run(
        ["nbdinfo", "--list", "--json", g.uri()], capture_output=True, text=True, timeout=20
    )
    names = {e["export-name"] for e in json.loads(listing.stdout)["exports"]}
    assert names == {"N", "L"}
    # a bad document (read MPL 0) is refused whole: the old configuration stays in force
    config_path = backend / "tailbound-gate.json"
    config = json.loads(config_path.read_text())
    config["limits"]["read_mpl"] = 0
    config["exports"] = ["N", "L", "X"]
    config_path.write_text(json.dumps(config))
    g.proc.send_signal(signal.SIGHUP)
    for _ in range(100):
        if _metrics(g)["tailbound_gate_reload_failures_total"] == 1:
            break
        time.sleep(0.05)
    assert _metrics(g)["tailbound_gate_reload_failures_total"] == 1
    assert not (backend / "X.img").exists()
    s = _raw_go(g.port, b"N")
    s.sendall(_request(0, 9, 0, 4096))
    assert struct.unpack(">IIQ", _recv(s, 16)) == (REPLY, 0, 9)
    s.close()
    g.proc.send_signal(signal.SIGTERM)
    out, err = g.proc.communicate(timeout=20)
    assert g.proc.returncode == 0, err
    assert {json.loads(line)["export"] for line in out.splitlines()} == {"N", "L"}
    assert "reloaded" in err and 'added ["N"], removed ["H"]' in err
    assert "reload refused, the old configuration stays" in err and "MPL" in err


def test_reload_without_a_running_gateway_is_bad_input(tmp_path: Path) -> None:
    plan = _save_plan(tmp_path / "plan.json", [_tenant("H", 0)])
    (tmp_path / "profile.json").write_text(json.dumps(PROFILE))
    backend = tmp_path / "backend"
    backend.mkdir()
    cmd = [*TAILBOUND, "gate", "--plan", str(plan), "--profile", str(tmp_path / "profile.json")]
    cmd += ["--backend", str(backend), "--reload"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 2 and "no running gateway's pid file" in p.stderr
    (backend / "tailbound-gate.pid").write_text(f"{os.getpid()}\n")  # not a gateway
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 2 and "not tailbound-gate (stale pid file)" in p.stderr


def _queue_reads(port: int, n: int) -> tuple[socket.socket, int]:
    """A client on L with ``n`` 4 KiB reads sent; returns once the first reply is back, with
    its handle (two are in service at once: either may finish first)."""
    s = _raw_go(port, b"L")
    s.sendall(b"".join(_request(0, i, (i % 64) * 4096, 4096) for i in range(n)))
    magic, error, handle = struct.unpack(">IIQ", _recv(s, 16))
    assert (magic, error) == (REPLY, 0)
    _recv(s, 4096)
    time.sleep(0.1)  # every header is read by now (microseconds); most reads are still queued
    return s, handle


def test_shutdown_drains_the_requests_in_the_gateway(gate: Any, tmp_path: Path) -> None:
    """200 reads on L at 1 ms of emulated device each under L's bucket (0.5): about 0.4 s of
    work. SIGTERM right after the first reply: the gateway takes no new connection, answers
    every read already in it, closes the connection and exits 0 with all 200 counted. With a
    drain timeout shorter than the work it exits 1 saying how many it left."""
    plan = _save_plan(
        tmp_path / "plan.json", [_tenant("H", 0), _tenant("L", 1, StageLimit(0.5, 0.01))]
    )
    g = gate(plan, tmp_path / "b1", "--emulate-device")
    s, first = _queue_reads(g.port, 200)
    t0 = time.monotonic()
    g.proc.send_signal(signal.SIGTERM)
    handles = {first}
    for _ in range(199):
        magic, error, handle = struct.unpack(">IIQ", _recv(s, 16))
        assert (magic, error) == (REPLY, 0)
        _recv(s, 4096)
        handles.add(handle)
    drained = time.monotonic() - t0
    assert handles == set(range(200))
    with pytest.raises((ConnectionError, OSError)):
        _recv(s, 1)  # closed once its replies are written
    s.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", g.port), timeout=2).close()
    out, err = g.proc.communicate(timeout=20)
    assert g.proc.returncode == 0, err
    counters = {c["export"]: c for c in map(json.loads, out.splitlines())}
    assert counters["L"]["requests"] == 200
    assert drained > 0.15  # the queue was really drained under the bucket, not cut
    # a drain timeout shorter than the queued work: exit 1, the rest unanswered
    g2 = gate(plan, tmp_path / "b2", "--emulate-device", "--drain-timeout", "0.2")
    s2, _ = _queue_reads(g2.port, 2000)
    g2.proc.send_signal(signal.SIGTERM)
    _, err = g2.proc.communicate(timeout=20)
    s2.close()
    assert g2.proc.returncode == 1
    assert "drain timeout:" in err and "requests left unanswered" in err


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A directory on a real disk (``O_DIRECT`` fails on tmpfs): under /var/tmp."""
    d = Path(tempfile.mkdtemp(prefix="tailbound-gate-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _start_direct(gate: Any, plan: Path, backend: Path, *extra: str) -> Gate:
    try:
        return gate(plan, backend, "--direct", *extra)
    except AssertionError as e:
        if "does not support O_DIRECT" in str(e):
            pytest.skip(f"the filesystem of {backend} has no O_DIRECT: {e}")
        raise


def _write_verify(g: Gate, export: str, tmp: Path, size: str = "4m") -> None:
    out = _fio(
        f"[write-verify]\nioengine=nbd\nuri={g.uri(export)}\nbs=64k\nsize={size}\niodepth=8\n"
        "rw=randwrite\nverify=crc32c\ndo_verify=1\n",
        tmp,
    )
    assert out["jobs"][0]["error"] == 0
    assert out["jobs"][0]["write"]["io_bytes"] > 0


def test_direct_io_on_a_file(gate: Any, tmp_path: Path, disk_dir: Path) -> None:
    """``--direct`` on a file of the real disk: fio writes and verifies through it; the export
    advertises 4096-byte blocks; an unaligned read is served (bounce buffer), an unaligned
    write gets EINVAL and the stream stays in step."""
    _need("fio", "nbdinfo")
    plan = _save_plan(tmp_path / "plan.json", [_tenant("H", 0)])
    g = _start_direct(gate, plan, disk_dir, "--export-size", "16M")
    _write_verify(g, "H", tmp_path)
    info = subprocess.run(
        ["nbdinfo", "--json", g.uri("H")], capture_output=True, text=True, timeout=20
    )
    export = json.loads(info.stdout)["exports"][0]
    assert export["block_size_minimum"] == 4096 and export["export-size"] == 16 << 20
    s = _raw_go(g.port, b"H")
    s.sendall(_request(1, 1, 4096, 4096) + bytes(range(256)) * 16)
    assert struct.unpack(">IIQ", _recv(s, 16)) == (REPLY, 0, 1)
    s.sendall(_request(0, 2, 4096 + 3, 5))  # unaligned read: the covering block, bounced
    assert _recv(s, 16 + 5) == struct.pack(">IIQ", REPLY, 0, 2) + bytes([3, 4, 5, 6, 7])
    s.sendall(_request(1, 3, 1, 4) + b"abcd")  # unaligned write: refused, payload dropped
    assert struct.unpack(">IIQ", _recv(s, 16)) == (REPLY, 22, 3)
    s.sendall(_request(0, 4, 4096, 4096))
    assert _recv(s, 16 + 4096)[16:] == bytes(range(256)) * 16
    s.close()
    counters = {c["export"]: c for c in g.stop()}
    assert counters["H"]["backend"] == "file" and counters["H"]["block"] == 4096
    # the data is in the file, written past the page cache
    with open(disk_dir / "H.img", "rb") as f:
        f.seek(4096)
        assert f.read(4096) == bytes(range(256)) * 16


def test_direct_io_on_a_loop_block_device(gate: Any, tmp_path: Path, disk_dir: Path) -> None:
    """A block device as backend: ``<backend>/H.img`` a symlink to a loop device over a 24 MiB
    file; the export's size is the device's (not ``--export-size``), its block size the
    device's logical block size, and fio's data lands on the device."""
    _need("fio", "nbdinfo")
    if shutil.which("losetup") is None:
        pytest.skip("needs losetup (util-linux) for a loop block device")
    image = disk_dir / "loop.img"
    image.write_bytes(b"")
    os.truncate(image, 24 << 20)
    attach = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
    )
    if attach.returncode != 0:
        pytest.skip(f"cannot attach a loop device (needs root and /dev/loop*): {attach.stderr}")
    device = attach.stdout.strip()
    try:
        backend = disk_dir / "backend"
        backend.mkdir()
        (backend / "H.img").symlink_to(device)
        plan = _save_plan(tmp_path / "plan.json", [_tenant("H", 0)])
        g = _start_direct(gate, plan, backend)
        size = subprocess.run(["nbdinfo", "--size", g.uri("H")], capture_output=True, text=True)
        assert size.stdout.strip() == str(24 << 20)
        _write_verify(g, "H", tmp_path, size="8m")
        counters = {c["export"]: c for c in g.stop()}
        assert counters["H"]["backend"] == "device"
        sysfs = Path(f"/sys/class/block/{Path(device).name}/queue/logical_block_size")
        assert counters["H"]["block"] == int(sysfs.read_text())
        subprocess.run(["losetup", "--detach", device], check=True)
        device = ""
        assert image.read_bytes().count(0) < 24 << 20  # fio's data is on the device
    finally:
        if device:
            subprocess.run(["losetup", "--detach", device], check=False)
