"""What ``tailbound bound`` imports from a cold start (issue 14: "the command users run, fast
from a cold start"): none of the heavy libraries it does not use, not even numpy (the traces are
fitted and the flows bounded in the Rust core), no other verb's module, and no tqdm when no
progress bar is shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

HEAVY = ("pyarrow", "matplotlib", "statsmodels", "highspy", "scipy")

# Runs the CLI as ``python -m tailbound.cli.main`` does, then lists the loaded modules on stdout
# (after the verb's own output, on one line of its own).
_PROBE = """
import sys
from tailbound.cli.main import main
code = main(sys.argv[1:])
print("\\nMODULES " + " ".join(sorted(sys.modules)))
"""


def loaded_modules(args: list[str], cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "TAILBOUND_CACHE"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_bound_imports_only_what_it_uses(tmp_path: Path, data_dir: Path) -> None:
    tenants = [
        {
            "name": f"T{i}",
            "slo_s": 0.05,
            "trace": str(data_dir / "wc62" / "traces" / f"trace{i:04d}.txt"),
            "client_host": f"h{i % 2}",
            "server_host": f"h{(i + 1) % 2}",
        }
        for i in range(3)
    ]
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": tenants}))
    args = ["bound", "--tenants", str(path), "--cache", str(tmp_path / "cache")]
    modules = loaded_modules([*args, "--out", str(tmp_path / "plan.json")], tmp_path)
    assert "tailbound.snc.mmpp" in modules  # the probe saw the verb run
    assert (tmp_path / "plan.json").is_file()
    top = {m.split(".")[0] for m in modules}
    assert not top & set(HEAVY), sorted(top & set(HEAVY))
    # numpy is not imported: fits from the trace files in the core, the search in the core, the
    # fit cache written without it (tailbound.lazy)
    assert "numpy" not in top
    # nor when the fits are read back from the cache
    again = loaded_modules(args, tmp_path)
    assert "numpy" not in {m.split(".")[0] for m in again}
    # stderr is not a terminal: no bar, and tqdm is not even imported
    assert "tqdm" not in top
    # only the verb's own CLI module is imported to build the parser
    others = {m for m in modules if m.startswith("tailbound.cli.")} - {
        "tailbound.cli.main",
        "tailbound.cli.bound",
        "tailbound.cli.exitcodes",
        "tailbound.cli.options",
    }
    assert not others, sorted(others)
    # network-only tenants: the DNC device model is not needed
    assert "tailbound.dnc.device" not in modules
    # nor the trace readers (the core fits the files), nor a thread pool for the deterministic
    # search when every flow took the all-flows path (they brought logging along)
    assert not {"tailbound.traces.readers", "tailbound.traces.native"} & modules
    assert not {"concurrent", "logging"} & top


def test_help_still_lists_every_verb(tmp_path: Path) -> None:
    from tailbound.cli.main import COMMANDS

    done = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    for verb in COMMANDS:
        assert verb in done.stdout
    # an unknown verb is still a usage error naming the choices (exit 2)
    bad = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", "bogus"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "bound" in bad.stderr
