"""A latency probe for the network enforcement tests: ``serve PORT SECONDS`` answers every
fixed-size message with one of the same size; ``probe IP PORT RATE SECONDS SIZE`` sends SIZE-byte
requests open loop at RATE per second (each on the one TCP connection, TCP_NODELAY) and prints
every request's round-trip time (s) as JSON. Both stop by themselves."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time


def recv_exact(sock: socket.socket, n: int) -> bool:
    got = 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            return False
        got += len(chunk)
    return True


def serve(port: int, seconds: float, size: int) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(4)
    srv.settimeout(seconds)
    print("ready", flush=True)
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        return
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.settimeout(seconds)
    reply = b"r" * size
    try:
        while recv_exact(conn, size):
            conn.sendall(reply)
    except (TimeoutError, OSError):
        pass


def probe(ip: str, port: int, rate: float, seconds: float, size: int) -> None:
    sock = socket.create_connection((ip, port), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = int(rate * seconds)
    sent = [0.0] * n
    rtts: list[float] = []

    def reader() -> None:
        for i in range(n):
            if not recv_exact(sock, size):
                return
            rtts.append(time.perf_counter() - sent[i])

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    start = time.perf_counter()
    msg = b"q" * size
    for i in range(n):  # open loop: the i-th request at start + i / rate
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        sent[i] = time.perf_counter()
        sock.sendall(msg)
    t.join(timeout=5)
    sock.close()
    print(json.dumps(rtts))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    else:
        probe(
            sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
        )
