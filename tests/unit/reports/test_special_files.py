"""A user's file is read only if it is a regular file, and only up to a size (contracts/files.py, issue 31
item 3): a FIFO, /dev/zero or a directory in place of a scenario, a summary or a token file is one error
naming it, at once (before: a FIFO blocked for ever, /dev/zero read until MemoryError)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular
from tests.unit.harness.cli.test_cli import scalearena

ROOT = Path(__file__).resolve().parents[3]


def test_regular_files_only_each_kind_named(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: an open for reading without O_NONBLOCK would wait for ever
    with pytest.raises(UserError, match="is a FIFO, not a regular file"):
        read_regular(fifo, 100, "a YAML file")
    with pytest.raises(UserError, match="is a character device, not a regular file"):
        read_regular("/dev/zero", 100, "a YAML file")
    with pytest.raises(UserError, match="is a directory, not a regular file"):
        read_regular(tmp_path, 100, "a YAML file")
    with pytest.raises(UserError, match="file not found"):
        read_regular(tmp_path / "nope", 100, "a YAML file")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(UserError, match="larger than 100 bytes"):
        read_regular(big, 100, "a YAML file")
    assert read_regular(big, 101, "a YAML file") == b"x" * 101
    # a /proc file reports size 0 but has content: read up to the limit, not by the size it reports
    assert read_regular("/proc/self/status", 1 << 20, "a file").startswith(b"Name:")
    with pytest.raises(UserError, match="larger than 10 bytes"):
        read_regular("/proc/self/status", 10, "a file")


def test_validate_and_report_refuse_special_files_with_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    r = scalearena("validate", str(fifo))
    assert r.returncode == 2 and "scenario.yaml: is a FIFO, not a regular file" in r.stderr
    # a results folder whose summary.json is /dev/zero (a symlink) and another whose summary.json is a FIFO
    for name, make in (("zero", lambda p: p.symlink_to("/dev/zero")), ("fifo", lambda p: os.mkfifo(p))):
        out = tmp_path / name
        shutil.copytree(ROOT / "baselines" / "sim" / "exp1-staircase" / "hpa", out / "exp1-staircase" / "hpa")
        (out / "exp1-staircase" / "hpa" / "summary.json").unlink()
        make(out / "exp1-staircase" / "hpa" / "summary.json")
        r = scalearena("report", str(out))
        assert r.returncode == 2, r.stderr
        assert "summary.json: is a " in r.stderr and "not a regular file" in r.stderr


def test_an_output_path_that_is_a_fifo_or_device_is_refused_before_any_work(tmp_path: Path) -> None:
    """compare --html /dev/full (as root) replaced the device with a regular file, and --html onto a FIFO replaced
    the FIFO (issue 31 item 3): outputs go only to new paths or regular files, checked before comparing."""
    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    base = str(ROOT / "baselines" / "sim")
    r = scalearena("compare", base, base, "--html", str(fifo))
    assert r.returncode == 2 and "out.html: is not a regular file; refusing to replace it" in r.stderr
    assert r.stdout == ""  # refused before the comparison printed anything
    assert fifo.is_fifo()  # still the FIFO
    from scalearena.reports.results import atomic_write_bytes

    with pytest.raises(UserError, match="is not a regular file"):
        atomic_write_bytes(fifo, b"x")
    atomic_write_bytes(tmp_path / "new.html", b"x")  # a new path and a regular file are fine
    atomic_write_bytes(tmp_path / "new.html", b"y")
    assert (tmp_path / "new.html").read_bytes() == b"y"


@pytest.mark.parametrize("name", ["objects-\udc00.yaml", "a\x00b.yaml"])
def test_a_file_name_the_os_cannot_take_is_a_user_error(name: str) -> None:
    """``--set autoscalers.N.objects.0="\\ud909..."`` (an unpaired surrogate from JSON) made os.open raise
    UnicodeEncodeError, an internal error found by make fuzz's autoscaler parameter family; a NUL, ValueError."""
    with pytest.raises(UserError, match="not a usable file name"):
        read_regular(name, 100, "a YAML file")
