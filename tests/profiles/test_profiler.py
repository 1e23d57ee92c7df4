from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.cli.profile import parse_bytes, parse_sizes
from tailbound.profiles import SsdProfile, load_profile
from tailbound.profiles.profiler import (
    MAGIC,
    OFFSET_ALIGN,
    ProfilerError,
    ProfileSettings,
    profile_file,
)

SIZES = (512, 4096, 65536)
QUICK = ProfileSettings(sizes=SIZES, threads=2, seconds_per_point=0.03, file_size=2 << 20)


@pytest.mark.parametrize("direct", [None, False])
def test_profile_file_measures_every_size(tmp_path: Path, direct: bool | None) -> None:
    target = tmp_path / "scratch.bin"
    run = profile_file(target, QUICK, direct=direct)
    p = run.profile
    assert p.sizes.tolist() == list(SIZES)
    assert all(b > 0 for b in p.read_bandwidth) and all(b > 0 for b in p.write_bandwidth)
    assert p.read_mpl == p.write_mpl == 2
    assert p.max_outstanding_read_bytes == p.max_outstanding_write_bytes == 2 * 65536
    assert target.stat().st_size == 2 << 20
    assert target.read_bytes()[: len(MAGIC)] == MAGIC  # the header survives the writes
    if direct is False:
        assert not run.direct_io and "buffered" in run.notes[0]


def test_profile_file_reuses_its_scratch_file(tmp_path: Path) -> None:
    target = tmp_path / "scratch.bin"
    profile_file(target, QUICK)
    bigger = ProfileSettings(sizes=(4096,), threads=1, seconds_per_point=0.02, file_size=3 << 20)
    profile_file(target, bigger)
    assert target.stat().st_size == 3 << 20


def test_cli_profile_writes_loadable_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "profile.json"
    code = main(
        [
            "profile",
            "--target",
            str(tmp_path / "scratch.bin"),
            "--sizes",
            "512,4K,64K",
            "--threads",
            "2",
            "--seconds-per-point",
            "0.03",
            "--file-size",
            "2M",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    p = SsdProfile.load(out)
    assert p.sizes.tolist() == [512, 4096, 65536]
    assert all(b > 0 for b in p.read_bandwidth) and all(b > 0 for b in p.write_bandwidth)
    assert isinstance(load_profile(out), SsdProfile)
    assert json.loads(out.read_text())["type"] == "storageSSD"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["profile.json", "scratch.bin"]
    assert "| 65536 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--sizes", "1000"], "--sizes: 1000 is not a positive multiple of 512"),
        (["--sizes", "4K,4K"], "appears twice"),
        (["--threads", "0"], "--threads: expected an integer in [1, 1024]"),
        (
            ["--seconds-per-point", "0"],
            "--seconds-per-point: expected a finite number in (0, 3600]",
        ),
        (["--file-size", "64K", "--sizes", "64K"], "--file-size"),
    ],
)
def test_cli_profile_bad_settings_give_clean_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    target = tmp_path / "scratch.bin"
    code = main(["profile", "--target", str(target), "--out", str(tmp_path / "o.json"), *arguments])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not target.exists() and not (tmp_path / "o.json").exists()


def test_cli_profile_refuses_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("do not overwrite me\n")
    code = main(["profile", "--target", str(precious), "--seconds-per-point", "0.01"])
    assert code == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert precious.read_text() == "do not overwrite me\n"


def test_cli_profile_refuses_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "--target", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_cli_profile_unparsable_size_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "--target", "x", "--sizes", "4K,lots"]) == 2
    assert "not a byte count: 'lots'" in capsys.readouterr().err


def test_profile_settings_check_names_setting() -> None:
    with pytest.raises(ProfilerError, match="--sizes: give at least one"):
        ProfileSettings(sizes=()).check()
    need = OFFSET_ALIGN + 8192
    with pytest.raises(ProfilerError, match=f"use at least {need}"):
        ProfileSettings(sizes=(8192,), file_size=need - 1).check()


@pytest.mark.parametrize(
    ("text", "value"),
    [("512", 512), ("4K", 4096), ("4k", 4096), ("64KiB", 65536), ("2M", 2 << 20), ("1G", 1 << 30)],
)
def test_parse_bytes_table(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["", "4X", "-1", "1.5K", "K"])
def test_parse_bytes_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_bytes(text)


def test_parse_sizes_list() -> None:
    assert parse_sizes("512, 1K,2K") == (512, 1024, 2048)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_sizes(",")


def test_profile_file_falls_back_when_o_direct_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # simulate a file system that refuses O_DIRECT at open (as tmpfs did before Linux 6.6)
    import errno
    import os

    real_open = os.open

    def refusing_open(path: str | Path, flags: int, *args: int) -> int:
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    notes: list[str] = []
    run = profile_file(tmp_path / "scratch.bin", QUICK, on_note=notes.append)
    assert not run.direct_io and notes == run.notes
    assert "O_DIRECT refused" in notes[0] and "posix_fadvise" in notes[0]
    assert all(b > 0 for b in run.profile.read_bandwidth)
    with pytest.raises(ProfilerError, match="refuses O_DIRECT"):
        profile_file(tmp_path / "scratch.bin", QUICK, direct=True)
