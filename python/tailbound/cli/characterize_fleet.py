"""``tailbound characterize`` over a fleet of traces: in parallel, written as they end, resumable.

A *fleet run* is one given a folder of traces or ``--list FILE`` (one trace path a line), or
``--jobs N`` > 1, or a Dask scheduler (``--scheduler``, ``$DASK_SCHEDULER_ADDRESS``). Each trace
is one task of a :class:`~tailbound.executor.Runner` (the stage models and options shipped once
per worker; the trace read by the worker from its path, so a cluster's workers must see the
same files). As each trace finishes, this process writes its curves (``<stem>.<stage>.rb.csv``,
atomically) and then its **manifest** ``<stem>.rb.json``: the trace's SHA-256, a fingerprint of
every option that shapes the curves (stages, the profile's content, link bandwidth, rates,
``--exact``, ``--max-rate``, ``--prune``, ``--safety-margin``, ``--format``) and its table rows.

**Resuming.** A rerun into the same ``--out`` skips every trace whose manifest is there with the
same fingerprint, whose curves are all there, and whose content still hashes to the manifest's
SHA-256 (the hash is computed by the worker, so an interrupted run of thousands of traces
resumes where it stopped, and a trace changed in place is characterised again). The table then
shows every trace, the skipped ones from their manifests.

Unlike a plain run (all traces read and characterised before anything is written, exit status 2
and no file on bad input), a fleet run keeps going past a bad trace: it prints one line per
failed trace on stderr, writes the others, and exits with status 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.characterize import RbCurve
from tailbound.errors import TailboundError, TraceFormatError
from tailbound.stages import Stage

#: The manifest's format tag and version.
MANIFEST_FORMAT = "tailbound-characterize"
MANIFEST_VERSION = 1
#: Names a folder scan passes over: tailbound's own outputs, in case ``--out`` is that folder.
OUTPUT_SUFFIXES = (".rb.csv", ".rb.json", ".rb.png")


def trace_paths(args: argparse.Namespace) -> list[Path]:
    """The traces of a run: each ``TRACE`` argument (a folder stands for its visible regular
    files, sorted by name, tailbound's outputs excepted), then each line of ``--list`` (blank
    lines and ``#`` comments skipped; relative paths are relative to the list's folder)."""
    from tailbound.errors import ConfigError

    out: list[Path] = []
    for path in args.traces:
        if path.is_dir():
            out.extend(
                p
                for p in sorted(path.iterdir())
                if p.is_file()
                and not p.name.startswith(".")
                and not p.name.endswith(OUTPUT_SUFFIXES)
            )
        else:
            out.append(path)
    if args.list is not None:
        try:
            lines = args.list.read_text().splitlines()
        except OSError as e:
            raise ConfigError(args.list, f"cannot read the list: {e.strerror}") from None
        for line in lines:
            text = line.strip()
            if text and not text.startswith("#"):
                p = Path(text)
                out.append(p if p.is_absolute() else args.list.parent / p)
    if not out:
        raise ConfigError(None, "no trace files given (the folders are empty)", field="TRACE")
    return out


def is_fleet(args: argparse.Namespace) -> bool:
    """Whether ``args`` ask for a fleet run (module docstring)."""
    from tailbound.executor import scheduler_address

    return (
        args.jobs > 1
        or scheduler_address(args.scheduler) is not None
        or args.list is not None
        or any(p.is_dir() for p in args.traces)
    )


@dataclass(frozen=True)
class Options:
    """What shapes a trace's curves (``curve_of`` reads these attributes, as it reads ``args``)."""

    models: dict[Stage, Any]
    format: str | None
    exact: bool
    max_rate: float
    rates: int | None
    prune: int | None
    safety_margin: float
    threads: int
    fingerprint: str = ""


def options_of(args: argparse.Namespace, models: dict[Stage, Any]) -> Options:
    """The :class:`Options` of a run, with the fingerprint a manifest must match."""
    profile = None
    if args.profile is not None:
        profile = hashlib.sha256(args.profile.read_bytes()).hexdigest()
    shaping = {
        "stages": [s.value for s in models],
        "profile_sha256": profile,
        "link_bandwidth": args.link_bandwidth,
        "format": args.format,
        "exact": args.exact,
        "max_rate": repr(args.max_rate),
        "rates": args.rates,
        "prune": args.prune,
        "safety_margin": args.safety_margin,
    }
    digest = hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()
    return Options(
        models,
        args.format,
        args.exact,
        args.max_rate,
        args.rates,
        args.prune,
        args.safety_margin,
        args.threads,
        digest,
    )


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's content (hex)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@dataclass
class Done:
    """A finished trace: its curves and table rows, or why it failed, or that it was skipped
    (its manifest still holds)."""

    path: Path
    sha256: str = ""
    name: str = ""
    curves: dict[Stage, RbCurve] = field(default_factory=dict)
    rows: list[list[str]] = field(default_factory=list)
    error: str | None = None
    skipped: bool = False


def characterize_one(options: Options, task: tuple[Path, str | None]) -> Done:
    """One trace (a runner's task): skipped when its content still hashes to ``task[1]`` (the
    manifest's SHA-256), else read and characterised at every stage."""
    from tailbound.characterize import burstiness
    from tailbound.cli.characterize_curves import curve_of, row_of
    from tailbound.traces.readers import read_trace

    path, known = task
    try:
        sha = file_sha256(path)
        if known is not None and sha == known:
            return Done(path, sha, skipped=True)
        trace = read_trace(path, options.format)
        done = Done(path, sha, trace.name)
        for stage, model in options.models.items():
            try:
                done.curves[stage] = curve_of(trace, model, options)
            except TraceFormatError as e:
                raise TraceFormatError(path, e.message, line=e.line, field=e.field) from None
            done.rows.append(row_of(trace, stage, done.curves[stage], burstiness(trace, model)))
        return done
    except TailboundError as e:
        return Done(path, error=str(e))
    except OSError as e:
        return Done(path, error=f"{path}: {e.strerror or e}")


def _manifest_path(out: Path, path: Path) -> Path:
    return out / f"{path.stem}.rb.json"


def _known(out: Path, path: Path, options: Options) -> tuple[str | None, list[list[str]]]:
    """The SHA-256 and rows of ``path``'s manifest in ``out`` when it matches ``options`` and
    every curve it names is there; ``(None, [])`` otherwise."""
    manifest = _manifest_path(out, path)
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None, []
    if (
        not isinstance(doc, dict)
        or doc.get("format") != MANIFEST_FORMAT
        or doc.get("version") != MANIFEST_VERSION
        or doc.get("options") != options.fingerprint
        or not all((out / name).is_file() for name in doc.get("curves", {}).values())
        or sorted(doc.get("curves", {})) != sorted(s.value for s in options.models)
    ):
        return None, []
    return str(doc.get("trace_sha256")), list(doc.get("rows", []))


def _write(out: Path, done: Done, options: Options, plot: bool) -> None:
    """The curves, the plot if asked, then the manifest (last: it says the rest is there)."""
    from tailbound.cli.characterize_curves import plot_curves

    names = {}
    for stage, curve in done.curves.items():
        name = f"{done.path.stem}.{stage.value}.rb.csv"
        curve.to_csv(out / name)
        names[stage.value] = name
    if plot:
        plot_curves(done.curves, done.name, out / f"{done.path.stem}.rb.png")
    doc = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "trace": str(done.path),
        "trace_sha256": done.sha256,
        "options": options.fingerprint,
        "curves": names,
        "rows": done.rows,
    }
    write_text_atomic(_manifest_path(out, done.path), json.dumps(doc, indent=1) + "\n")


def run_fleet(args: argparse.Namespace, paths: list[Path], models: dict[Stage, Any]) -> int:
    """Characterise ``paths`` on the runner of ``args`` (module docstring); the exit status."""
    from tailbound.cli.characterize_curves import print_table
    from tailbound.cli.exitcodes import Exit
    from tailbound.cli.options import runner_of

    options = options_of(args, models)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = []
    rows: dict[Path, list[list[str]]] = {}
    for path in paths:
        sha, known_rows = _known(args.out, path, options)
        tasks.append((path, sha))
        rows[path] = known_rows
    written = skipped = 0
    failed: list[str] = []
    with runner_of(args) as runner:
        for _, done in runner.run(
            characterize_one, tasks, shared=options, desc="characterize", unit="trace"
        ):
            if done.error is not None:
                failed.append(done.error)
                print(f"tailbound characterize: error: {done.error}", file=sys.stderr, flush=True)
                rows.pop(done.path, None)
            elif done.skipped:
                skipped += 1
            else:
                _write(args.out, done, options, args.plot)
                rows[done.path] = done.rows
                written += len(done.curves)
    table = [row for path in paths for row in rows.get(path, [])]
    if table:
        print_table(table)
    print(
        f"wrote {written} curves to {args.out}; {skipped} traces unchanged since their "
        f"manifest (skipped); {len(failed)} failed"
    )
    return Exit.CHECK_FAILED if failed else Exit.OK
