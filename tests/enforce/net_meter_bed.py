"""Two network namespaces joined by a veth pair (client ``c0`` 198.18.9.1, server ``s0``
198.18.9.2 and 198.18.9.3, two server hosts of a Plan), for the network meter's live tests
(:mod:`tailbound.enforce.net_meter`); senders and a sink for their TCP traffic. Without root,
``ip``, ``nft`` or namespaces the caller skips, saying which (:func:`missing`). Traffic stays
inside the namespaces (198.18.0.0/15, the benchmarking range); they are deleted afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CLIENT_IP, SERVER_IP, SERVER2_IP = "198.18.9.1", "198.18.9.2", "198.18.9.3"
#: The link's rate, bytes/s (100 Mbit/s).
LINK = 12_500_000
TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]

#: ``sink PORT... SECONDS``: accept on each port and read until the peers close or time is up.
SINK = """
import socket, sys, threading, time
ports, until = [int(p) for p in sys.argv[1:-1]], time.time() + float(sys.argv[-1])
def serve(port):
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port)); ls.listen(4); ls.settimeout(max(until - time.time(), 0.1))
    try:
        c, _ = ls.accept()
    except OSError:
        return
    c.settimeout(0.5)
    while time.time() < until:
        try:
            if not c.recv(1 << 16):
                return
        except socket.timeout:
            continue
threads = [threading.Thread(target=serve, args=(p,)) for p in ports]
[t.start() for t in threads]
print("ready", flush=True)
[t.join() for t in threads]
"""

#: ``send HOST PORT BYTES GAP_S COUNT``: COUNT writes of BYTES each, GAP_S apart (0: at once,
#: one ``sendall`` of everything), with Nagle off; then close.
SEND = """
import socket, sys, time
host, port, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
gap = float(sys.argv[4])
s = socket.create_connection((host, port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
if gap == 0:
    s.sendall(b"x" * size * count)
else:
    nxt = time.monotonic()
    for _ in range(count):
        s.sendall(b"x" * size)
        nxt = max(nxt + gap, time.monotonic())
        time.sleep(max(nxt - time.monotonic(), 0))
time.sleep(0.2)
s.close()
"""


def missing() -> str | None:
    """Why the live tests cannot run here (None: they can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc, nftables)"
    for tool in ("ip", "nft", "tc"):
        if shutil.which(tool) is None:
            return f"needs {tool} (Debian packages iproute2, nftables; see .ci/run)"
    return None


def sh(*cmd: str, ns: str | None = None, timeout: float = 30, stdin: str | None = None) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    p = subprocess.run(
        full, capture_output=True, text=True, timeout=timeout, check=False, input=stdin
    )
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {p.stderr.strip()}")
    return p.stdout


@dataclass
class Pair:
    """The two namespaces' names."""

    client: str
    server: str

    def tailbound(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TAILBOUND, *args], capture_output=True, text=True, timeout=60, check=False
        )

    def traffic(
        self, sends: dict[int, tuple[str, int, float, int]], seconds: float, *also: list[str]
    ) -> None:
        """One TCP connection per port of ``sends`` from the client to the server's sink, each
        to ``(address, bytes a write, gap s, writes)`` (:data:`SEND`), and the commands ``also``
        in the client's namespace, all at once."""
        sink = subprocess.Popen(
            ["ip", "netns", "exec", self.server, sys.executable, "-c", SINK]
            + [str(p) for p in sends]
            + [str(seconds + 5)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
            senders = [
                subprocess.Popen(
                    [
                        *("ip", "netns", "exec", self.client, sys.executable, "-c", SEND),
                        *(host, str(port), str(size), str(gap), str(count)),
                    ]
                )
                for port, (host, size, gap, count) in sends.items()
            ]
            senders += [subprocess.Popen(["ip", "netns", "exec", self.client, *a]) for a in also]
            for s in senders:
                assert s.wait(timeout=seconds + 20) == 0
        finally:
            sink.communicate(timeout=seconds + 20)


@contextmanager
def pair(tag: str) -> Iterator[Pair]:
    """The namespaces ``<tag>c`` and ``<tag>s`` with the veth pair up and addressed, one MSS
    per packet (no GSO packets: docs/enforcement.md); deleted on exit. Raises RuntimeError
    when they cannot be built."""
    p = Pair(tag + "c", tag + "s")
    try:
        for ns in (p.client, p.server):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "link", "add", "c0", "netns", p.client, "type", "veth", "peer", "name", "s0",
           "netns", p.server)  # fmt: skip
        for ns, dev, ip in ((p.client, "c0", CLIENT_IP), (p.server, "s0", SERVER_IP)):
            sh("ip", "link", "set", "dev", dev, "gso_max_size", "1514", "gso_max_segs", "1", ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "addr", "add", f"{ip}/24", "dev", dev, ns=ns)
        sh("ip", "addr", "add", f"{SERVER2_IP}/24", "dev", "s0", ns=p.server)
        time.sleep(0.2)
        yield p
    finally:
        for ns in (p.client, p.server):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
