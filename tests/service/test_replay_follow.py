"""Reading a replayer's progress file as it grows (:mod:`tailbound.service.replay_follow`):
complete lines only, a line cut short kept for the next reading, a replaced file read again."""

from __future__ import annotations

import os
from pathlib import Path

from tailbound.service.replay_follow import Cursor, read_new

HEADER = "tenant,seq,time_s,op,size,request_bytes,response_bytes,issue_lag_s,latency_s\n"


def test_read_new_takes_complete_lines_and_keeps_a_cut_one(tmp_path: Path) -> None:
    p = tmp_path / "progress.csv"
    assert read_new(p, Cursor()) == ([], Cursor())  # not there yet
    p.write_text(HEADER + "A,0,0.1,R,4096,100,4196,0.0001,0.002\nA,1,0.2,R,40")
    rows, c = read_new(p, Cursor())
    assert [r["seq"] for r in rows] == ["0"] and rows[0]["latency_s"] == "0.002"
    assert c.offset == len(HEADER) + len("A,0,0.1,R,4096,100,4196,0.0001,0.002\n")
    with open(p, "a") as f:
        f.write("96,100,4196,,0.003\n")
    rows, c = read_new(p, c)
    assert rows == [
        dict(
            zip(HEADER.strip().split(","), "A,1,0.2,R,4096,100,4196,,0.003".split(","), strict=True)
        )
    ]
    assert read_new(p, c) == ([], c)  # nothing new
    # the file replaced (a new replay): read from its start again, header included
    p.unlink()
    p.write_text(HEADER + "B,0,0.5,W,512,600,100,0.0,0.004\n")
    rows, c2 = read_new(p, c)
    assert [r["tenant"] for r in rows] == ["B"] and c2.inode == os.stat(p).st_ino
    assert Cursor.from_json(c2.to_json()) == c2
