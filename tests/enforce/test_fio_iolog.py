"""Traces as fio iologs (``tailbound.enforce.fio_iolog``) and the NBD profiler
(``tailbound profile --nbd``), against fio and nbdkit's ``memory`` plugin started by the tests
(skipped, saying which, without ``fio`` or ``nbdkit``: ``.ci/run`` installs both)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.enforce.test_gate import nbdkit_server

from tailbound.enforce.fio_iolog import HEADER, nbd_offsets, write_fio_iolog, write_fio_job
from tailbound.errors import ConfigError
from tailbound.profiles.tokens import SsdProfile
from tailbound.traces import Trace

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]


def _need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (Debian packages fio and nbdkit; see .ci/run)")


@pytest.fixture
def nbdkit_memory() -> Iterator[str]:
    """nbdkit's memory plugin (64 MiB) on a free localhost port: its ``nbd://`` URI."""
    _need("nbdkit", "fio")
    with nbdkit_server("memory", "64M") as port:
        yield f"nbd://127.0.0.1:{port}/"


def _trace(n: int = 50, span: float = 0.5, offsets: bool = False) -> Trace:
    rng = np.random.default_rng(1)
    return Trace.from_arrays(
        time=np.sort(rng.uniform(0, span, n)),
        op=rng.integers(0, 2, n),
        size=rng.choice([512, 4096, 65536], n),
        offset=rng.integers(0, 1 << 40, n) if offsets else None,
        name="T1",
    )


@given(
    sizes=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=40),
    export_kib=st.integers(1024, 1 << 16),
    with_offsets=st.booleans(),
)
def test_offsets_fit_the_export_and_are_aligned(
    sizes: list[int], export_kib: int, with_offsets: bool
) -> None:
    n = len(sizes)
    offsets = np.arange(n, dtype=np.int64) * 7_777_777 if with_offsets else None
    t = Trace.from_arrays(time=np.arange(n, dtype=float), op=[0] * n, size=sizes, offset=offsets)
    export = export_kib * 1024
    got = nbd_offsets(t, export)
    assert np.all(got % 4096 == 0) and np.all(got >= 0)
    assert np.all(got + t.size <= export)


def test_offsets_keep_a_trace_inside_a_large_export_and_lay_out_the_others() -> None:
    t = Trace.from_arrays(
        time=[0, 1, 2], op=[0, 0, 1], size=[4096, 4096, 512], offset=[0, 8192, 40960]
    )
    assert nbd_offsets(t, 1 << 20).tolist() == [0, 8192, 40960]  # already inside: unchanged
    t = Trace.from_arrays(time=[0, 1, 2], op=[0, 0, 1], size=[4096, 8192, 512])
    assert nbd_offsets(t, 1 << 20).tolist() == [0, 4096, 12288]  # one after another
    with pytest.raises(ConfigError, match="larger than the export"):
        nbd_offsets(t, 4096)
    with pytest.raises(ConfigError, match="power of two"):
        nbd_offsets(t, 1 << 20, align=3000)


def test_iolog_lines_and_bad_input(tmp_path: Path) -> None:
    t = _trace()
    assert write_fio_iolog(t, tmp_path / "a.iolog", export_size=16 << 20) == len(t)
    lines = (tmp_path / "a.iolog").read_text().splitlines()
    assert lines[0] == HEADER and lines[1] == "0 T1 add" and lines[2] == "0 T1 open"
    body = [line.split() for line in lines[3:-1]]
    assert [int(f[0]) for f in body] == np.rint(t.time * 1e6).astype(int).tolist()
    assert [f[2] for f in body] == ["read" if o == 0 else "write" for o in t.op]
    assert [int(f[4]) for f in body] == t.size.tolist()
    assert lines[-1].split()[1:] == ["T1", "close"]
    with pytest.raises(ConfigError, match="no blanks"):
        write_fio_iolog(t, tmp_path / "b.iolog", export_size=16 << 20, file_name="a b")
    zero = Trace.from_arrays(time=[0.0], op=[0], size=[0])
    with pytest.raises(ConfigError, match="size 0"):
        write_fio_iolog(zero, tmp_path / "c.iolog", export_size=16 << 20)
    assert not (tmp_path / "b.iolog").exists() and not (tmp_path / "c.iolog").exists()
    with pytest.raises(ConfigError, match="cannot name a fio job"):
        write_fio_job({"a b": "x"}, tmp_path / "j.fio", host="127.0.0.1", port=10809)


@pytest.mark.parametrize("depth", [1, 8])
def test_fio_replays_the_iolog_at_its_timestamps(
    tmp_path: Path, nbdkit_memory: str, depth: int
) -> None:
    """fio 3.33 reads the v3 log, issues every request, and the replay lasts the trace's span:
    the timestamps are read as microseconds (as milliseconds it would last 1000 times longer).
    At depth 1 fio completes and counts every request (nbdkit's memory plugin answers in
    microseconds, so waiting for the previous one does not delay the next); at depth 8 it issues
    every request but reaps completions only when all 8 slots are busy, and the requests in
    flight at the end go uncounted (here: all of them) — why the end-to-end test replays with
    ``tailbound-replay --nbd`` and not fio."""
    t = _trace(n=60, span=0.6)
    write_fio_iolog(t, tmp_path / "T1.iolog", export_size=64 << 20)
    port = int(nbdkit_memory.rsplit(":", 1)[1].strip("/"))
    write_fio_job(
        {"T1": tmp_path / "T1.iolog"},
        tmp_path / "job.fio",
        host="127.0.0.1",
        port=port,
        iodepth=depth,
    )
    job = (tmp_path / "job.fio").read_text().replace("/T1\n", "/\n")  # nbdkit's one export: ""
    (tmp_path / "job.fio").write_text(job)
    start = time.monotonic()
    p = subprocess.run(
        ["fio", "--output-format=json", str(tmp_path / "job.fio")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout[p.stdout.index("{") :])
    job_out = out["jobs"][0]
    reads, writes = int(np.sum(t.op == 0)), int(np.sum(t.op == 1))
    assert job_out["read"]["total_ios"] == reads and job_out["write"]["total_ios"] == writes
    completed = job_out["read"]["clat_ns"]["N"] + job_out["write"]["clat_ns"]["N"]
    if depth == 1:
        assert completed == len(t)
        assert job_out["read"]["io_bytes"] == int(t.size[t.op == 0].sum())
    else:
        assert completed < len(t)
    span = float(t.time[-1])
    assert span * 0.9 <= job_out["job_runtime"] / 1e3 <= span + 1.0, job_out["job_runtime"]
    assert elapsed < 30


def test_profile_nbd_measures_the_export(tmp_path: Path, nbdkit_memory: str) -> None:
    out = tmp_path / "p.json"
    p = subprocess.run(
        [
            *TAILBOUND,
            *("profile", "--nbd", nbdkit_memory, "--sizes", "4K,64K", "--threads", "2"),
            *("--seconds-per-point", "0.3", "--latency-seconds", "0.2", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    profile = SsdProfile.load(out)  # the format gate and verify read
    assert profile.sizes.tolist() == [4096.0, 65536.0]
    assert profile.read_mpl == profile.write_mpl == 2
    assert profile.max_outstanding_read_bytes == 2 * 65536
    assert np.all(profile.read_bandwidth > 1e6) and np.all(profile.write_bandwidth > 1e6)
    unqueued = json.loads(out.read_text())["unqueuedLatency"]
    assert [u["requestSize"] for u in unqueued] == [4096, 65536]
    assert all(0 < u["readP50"] <= u["readP99"] < 0.5 for u in unqueued)
    assert "| 4096 |" in p.stdout


def test_profile_nbd_bad_input_exits_2(tmp_path: Path) -> None:
    def profile(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [*TAILBOUND, "profile", *args, "--out", str(tmp_path / "p.json")]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    p = profile("--nbd", "http://x/")
    assert p.returncode == 2 and "nbd://HOST" in p.stderr
    p = profile("--nbd", "nbd://127.0.0.1:1/x", "--sizes", "1000")
    assert p.returncode == 2 and "multiple of 512" in p.stderr
    p = profile("--nbd", "nbd://127.0.0.1:1/x", "--target", str(tmp_path / "f"))
    assert p.returncode == 2 and "not allowed with" in p.stderr
    if shutil.which("fio"):  # nothing listens on port 1: fio's error, one line
        p = profile("--nbd", "nbd://127.0.0.1:1/x", "--sizes", "4K", "--seconds-per-point", "0.1")
        assert p.returncode == 2 and "fio failed" in p.stderr
    assert not (tmp_path / "p.json").exists()


def test_replayer_nbd_mode_answers_every_request(tmp_path: Path, nbdkit_memory: str) -> None:
    """``tailbound-replay client --nbd`` against nbdkit: every request answered, NBD's wire
    bytes recorded, latency from the trace timestamp (at least the issue lag); a request beyond
    the export is refused before anything is sent (exit 2, naming the tenant)."""
    from tailbound.enforce import replay

    t = _trace(n=80, span=0.4)
    requests, out = tmp_path / "requests.csv", tmp_path / "latency.csv"
    replay.write_requests({"T1": t}, requests, export_size=64 << 20)
    assert requests.read_text().splitlines()[0] == "tenant,time_s,op,size,offset"
    address = nbdkit_memory.removeprefix("nbd://").rstrip("/")
    cmd = [str(replay.binary()), "client", "--nbd", "--requests", str(requests)]
    cmd += ["--tenant", f"T1={address},export=", "--out", str(out), "--start-delay", "0.2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    m = replay.read_latencies(out)["T1"]
    assert m.lost == 0 and len(m.latency) == len(t)
    assert np.all(m.latency >= m.issue_lag) and np.all(m.latency < 1.0)
    reads = t.op == 0
    assert np.all(m.response_bytes[reads] == 16 + t.size[reads])
    assert np.all(m.request_bytes[~reads] == 28 + t.size[~reads])
    spread_out = _trace(n=80, span=0.4, offsets=True)  # offsets over 1 GiB: beyond nbdkit's 64 MiB
    replay.write_requests({"T1": spread_out}, requests, export_size=1 << 30)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "tenant T1: request" in p.stderr
    assert "beyond the export" in p.stderr
