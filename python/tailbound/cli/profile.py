"""``tailbound profile``: measure read/write bandwidth by request size on a file, or on an NBD
export through fio's ``nbd`` engine (``tailbound-gate``'s backend through the gateway), and write
the SSD profile JSON.

Examples::

    tailbound profile --target /mnt/ssd/tailbound.scratch --threads 8 --out profile_ssd.json
    tailbound profile --nbd nbd://127.0.0.1:10809/scratch --threads 2 --out profile_gate.json
    tailbound profile --target /mnt/raid/tailbound.scratch --depth-sweep 16 --out profile_raid.json

``--depth-sweep D`` (a file only) also measures 4 KiB reads (``--sweep-size``) at depths
1, 2, 4, …, D — throughput and latency quantiles per depth — and fits the simulator's array model
to them (``tailbound.profiles.depth_sweep``, ``docs/simulator.md`` "Arrays"): the profile then
has its bandwidth table at depth 1, MPLs of D, an ``array`` section the simulator uses for every
device the profile serves, and the sweep itself (``depthSweep``).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.options import integer, number
from tailbound.limits import MAX_THREADS

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(text: str) -> int:
    """A byte count such as ``4096``, ``4K``, ``256KiB``, ``1G`` (binary multiples).

    >>> parse_bytes("4K"), parse_bytes("1GiB"), parse_bytes("512")
    (4096, 1073741824, 512)
    """
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r} (examples: 4096, 4K, 1G)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def parse_sizes(text: str) -> tuple[int, ...]:
    """A comma-separated list of byte counts.

    >>> parse_sizes("512,4K,256K")
    (512, 4096, 262144)
    """
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected a comma-separated list of sizes")
    return tuple(parse_bytes(p) for p in parts)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="measure a device's read/write bandwidth by request size (SSD profile JSON)",
        description=(
            "Measure read and write bandwidth by request size on a scratch file (created or "
            "extended to --file-size), with O_DIRECT where the file system allows it, or on an "
            "NBD export with fio's nbd engine (--nbd: random requests at queue depth --threads, "
            "and the unqueued latency at depth 1), and write an SSD profile JSON (the "
            "WorkloadCompactor profile_ssd.json format)."
        ),
        epilog=epilog(None),
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", help="scratch file to create or reuse")
    where.add_argument(
        "--nbd",
        metavar="URI",
        help="an NBD export to measure, nbd://HOST:PORT/EXPORT (its data is overwritten)",
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        help=(
            "request sizes in bytes, comma-separated, multiples of 512 (default 512,1K,...,256K; "
            "with --nbd 4K,8K,...,256K)"
        ),
    )
    parser.add_argument(
        "--threads",
        type=integer(low=1, high=MAX_THREADS),
        default=4,
        help="concurrent requests: threads, or fio's queue depth with --nbd (default 4)",
    )
    parser.add_argument(
        "--seconds-per-point",
        type=number(low=0.0, low_open=True, high=3600.0),
        default=2.0,
        metavar="SECONDS",
        help="measuring time per size and operation, in seconds (default 2)",
    )
    parser.add_argument(
        "--file-size", type=parse_bytes, default=1 << 30, help="scratch file size (default 1G)"
    )
    parser.add_argument(
        "--latency-seconds",
        type=number(low=0.0, low_open=True, high=3600.0),
        default=1.0,
        metavar="SECONDS",
        help="with --nbd: seconds per size and operation at queue depth 1 (default 1)",
    )
    parser.add_argument(
        "--depth-sweep",
        type=integer(low=1, high=256),
        metavar="D",
        help=(
            "with --target: also sweep depths 1, 2, 4, ..., D and fit the simulator's array "
            "model (knee, interference, thrash, tail shape); the bandwidth table is then "
            "measured at depth 1"
        ),
    )
    parser.add_argument(
        "--sweep-size",
        type=parse_bytes,
        default=4096,
        help="request size of the depth sweep, bytes (default 4K)",
    )
    parser.add_argument("--out", default="profile.json", help="output JSON (default profile.json)")
    parser.add_argument(
        "--seed", type=integer(low=0), default=0, help="seed of the random offsets (default 0)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.nbd is not None:
        if args.depth_sweep is not None:
            from tailbound.errors import ConfigError

            raise ConfigError(None, "only with --target (a file)", field="--depth-sweep")
        return _run_nbd(args)
    if args.depth_sweep is not None:
        return _run_sweep(args)
    from tailbound.jsonio import write_json_atomic
    from tailbound.profiles.profiler import DEFAULT_SIZES, ProfileSettings, profile_file

    settings = ProfileSettings(
        sizes=args.sizes or DEFAULT_SIZES,
        threads=args.threads,
        seconds_per_point=args.seconds_per_point,
        file_size=args.file_size,
    )
    result = profile_file(
        args.target,
        settings,
        progress=not args.quiet,
        seed=args.seed,
        on_note=lambda m: print(f"tailbound profile: note: {m}", file=sys.stderr),
    )
    write_json_atomic(args.out, result.profile.to_json(), indent=2)
    if not args.quiet:
        p = result.profile
        print(f"{args.target}: {'O_DIRECT' if result.direct_io else 'buffered'} I/O")
        print("| request size (B) | read MB/s | write MB/s |")
        print("|---:|---:|---:|")
        for s, r, w in zip(p.sizes, p.read_bandwidth, p.write_bandwidth, strict=True):
            print(f"| {int(s)} | {r / 1e6:.1f} | {w / 1e6:.1f} |")
    print(f"wrote {args.out}")
    return Exit.OK


def _run_nbd(args: argparse.Namespace) -> int:
    from tailbound.jsonio import write_json_atomic
    from tailbound.profiles.nbd import DEFAULT_NBD_SIZES, NbdProfileSettings, profile_nbd

    settings = NbdProfileSettings(
        sizes=args.sizes or DEFAULT_NBD_SIZES,
        depth=args.threads,
        seconds_per_point=args.seconds_per_point,
        latency_seconds=args.latency_seconds,
    )
    if not args.quiet:
        points = 2 * len(settings.sizes)
        seconds = points * (settings.seconds_per_point + settings.latency_seconds)
        print(f"{args.nbd}: {points} points with fio, about {seconds:.0f} s", file=sys.stderr)
    result = profile_nbd(args.nbd, settings)
    write_json_atomic(args.out, result.to_json(), indent=2)
    if not args.quiet:
        p = result.profile
        print(f"{args.nbd}: fio {result.fio_version}, queue depth {settings.depth}")
        print(
            "| request size (B) | read MB/s | write MB/s | read p50/p99 at depth 1 "
            "| write p50/p99 |"
        )
        print("|---:|---:|---:|---:|---:|")
        for s, r, w, u in zip(
            p.sizes, p.read_bandwidth, p.write_bandwidth, result.unqueued, strict=True
        ):
            print(
                f"| {int(s)} | {r / 1e6:.1f} | {w / 1e6:.1f} | "
                f"{u['readP50'] * 1e6:.0f}/{u['readP99'] * 1e6:.0f} µs | "
                f"{u['writeP50'] * 1e6:.0f}/{u['writeP99'] * 1e6:.0f} µs |"
            )
    print(f"wrote {args.out}")
    return Exit.OK


def _run_sweep(args: argparse.Namespace) -> int:
    """``--depth-sweep``: the profile at depth 1, the sweep and the array model's fit."""
    from tailbound.jsonio import write_json_atomic
    from tailbound.profiles.depth_sweep import sweep_profile
    from tailbound.profiles.profiler import DEFAULT_SIZES

    result = sweep_profile(
        args.target,
        args.depth_sweep,
        sizes=args.sizes or DEFAULT_SIZES,
        sweep_size=args.sweep_size,
        seconds_per_point=args.seconds_per_point,
        file_size=args.file_size,
        seed=args.seed,
        progress=not args.quiet,
        on_note=lambda m: print(f"tailbound profile: note: {m}", file=sys.stderr),
    )
    write_json_atomic(args.out, result.to_json(), indent=2)
    if not args.quiet:
        s, f = result.sweep, result.fit
        print(f"{args.target}: depth sweep of {s.size}-byte {s.op}s")
        print("| depth | IOPS | p50 ms | p99 ms | p99.9 ms |")
        print("|---:|---:|---:|---:|---:|")
        at = {q: s.quantiles.index(q) for q in (0.5, 0.99, 0.999)}
        for d, x, row in zip(s.depths, s.iops, s.latency_s, strict=True):
            print(
                f"| {d} | {x:.0f} | {row[at[0.5]] * 1e3:.3f} | {row[at[0.99]] * 1e3:.3f} "
                f"| {row[at[0.999]] * 1e3:.3f} |"
            )
        tail = "none" if f.tail_shape is None else f"{f.tail_shape:.3g}"
        print(
            f"array model: channels (knee) {f.channels}, interference {f.interference:.3g}, "
            f"thrash {f.thrash:.3g}, tail shape {tail}; rms log-throughput error "
            f"{f.residual:.3g}"
        )
    print(f"wrote {args.out}")
    return Exit.OK
