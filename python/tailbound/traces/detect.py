"""Which trace format a file holds, judged from its first bytes.

The rules, in order (``docs/traces.md`` has the reasoning):

1. ``PAR1`` magic → ``parquet``.
2. Binary content (a NUL byte in the first 64 KiB) → ``vscsi`` when
   the first (up to 8) records all carry a VSCSI version byte (1 in byte 15 of 32-byte records,
   or 2 in byte 3 of 40-byte records) and one of them a SCSI read or write opcode; anything else
   binary is an error.
3. Text, by the first non-blank line:
   ``TIMESTAMP,ContextTokens,GeneratedTokens`` header → ``azure-llm``;
   ``digits,0xHEX,DiskRead|DiskWrite|Get|Put`` → ``wc``;
   ``digits,host,digits,Read|Write,digits,digits,digits`` → ``msr``;
   ``digits,digits,digits,r|R|w|W,number[,…]`` → ``spc``;
   five blank-separated numbers ``time device lba size rw`` → ``mqsim`` when every sampled
   time is an integer (MQSim writes integer nanoseconds), else ``disksim`` (milliseconds with a
   fraction, as DiskSim and MSN-FS write them);
   any other line with a comma, or a ``.csv`` name → ``csv`` (needs a column mapping).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tailbound.errors import TraceFormatError

SNIFF_BYTES = 64 * 1024
SAMPLE_LINES = 20

_WC = re.compile(rb"^\d+,\s*0[xX][0-9a-fA-F]+,\s*(DiskRead|DiskWrite|Get|Put)\s*$", re.I)
_MSR = re.compile(rb"^\d+,[^,]*,\s*\d+,\s*(Read|Write),\s*\d+,\s*\d+,\s*\d+\s*$", re.I)
_SPC = re.compile(rb"^\d+,\s*\d+,\s*\d+,\s*[rw],\s*[\d.eE+-]+\s*(,.*)?$", re.I)
_ASCII = re.compile(rb"^\s*([\d.eE+-]+)\s+\d+\s+\d+\s+\d+\s+-?\d+\s*$")
_AZURE = re.compile(rb"^\s*TIMESTAMP\s*,\s*ContextTokens\s*,\s*GeneratedTokens\s*$", re.I)

_SCSI_DATA_OPCODES = {0x08, 0x28, 0xA8, 0x88, 0x0A, 0x2A, 0xAA, 0x8A}


def _is_binary(head: bytes) -> bool:
    # Text traces never hold NUL; binary records always do (the high bytes of their 64-bit
    # fields). Other non-ASCII bytes (a Latin-1 host name, say) do not make a file binary.
    return b"\0" in head


def _vscsi_version(head: bytes) -> int | None:
    """1 or 2 when the first (up to 8) records look like VSCSI records of that version."""
    for version, size, cmd_at, ver_at in ((1, 32, 12, 14), (2, 40, 0, 2)):
        records = [head[i : i + size] for i in range(0, min(len(head), 8 * size), size)]
        records = [r for r in records if len(r) == size]
        opcodes = [struct.unpack_from("<H", r, cmd_at)[0] for r in records]
        if (
            records
            and all(r[ver_at + 1] == version for r in records)
            and any(op in _SCSI_DATA_OPCODES for op in opcodes)
        ):
            return version
    return None


def _sample_lines(head: bytes, complete: bool) -> list[bytes]:
    lines = head.split(b"\n")
    if not complete:
        lines = lines[:-1]  # the last line of a partial read may be cut
    out = []
    for line in lines:  # stop at the sample's size (a 64 KiB head has ~2000 lines)
        if line.strip():
            out.append(line.rstrip(b"\r"))
            if len(out) == SAMPLE_LINES:
                break
    return out


def detect_format(path: str | Path) -> str:
    """The format name of the trace in ``path`` (a key of :data:`tailbound.traces.FORMATS`).

    Raises :class:`TraceFormatError` when the file is missing, empty or of no known format.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_text("564037000,0x00001000,DiskWrite\\n")
    >>> detect_format(p)
    'wc'
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES + 1)
    except OSError as e:
        raise TraceFormatError(path, f"cannot read the file: {e.strerror or e}") from None
    complete = len(head) <= SNIFF_BYTES
    head = head[:SNIFF_BYTES]
    head = head.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark, as spreadsheets write
    if not head:
        raise TraceFormatError(path, "the file is empty")
    if head.startswith(b"PAR1"):
        return "parquet"
    if _is_binary(head):
        if _vscsi_version(head) is not None:
            return "vscsi"
        raise TraceFormatError(path, "binary file of no known trace format; pass format=")
    lines = _sample_lines(head, complete)
    if not lines:
        raise TraceFormatError(path, "the file has only blank lines")
    first = lines[0]
    if _AZURE.match(first):
        return "azure-llm"
    for name, pattern in (("wc", _WC), ("msr", _MSR), ("spc", _SPC)):
        if pattern.match(first):
            return name
    if _ASCII.match(first):
        times = [m.group(1) for m in map(_ASCII.match, lines) if m]
        return "mqsim" if all(t.isdigit() for t in times) else "disksim"
    if b"," in first or path.suffix.lower() == ".csv":
        return "csv"
    raise TraceFormatError(
        path, f"cannot tell the trace format from its first line {first[:60]!r}; pass format="
    )
