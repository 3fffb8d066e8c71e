"""Command-line values every command reads the same way: ``--jobs``, ``--out`` and ``KEY=VALUE`` flags.

``--jobs N`` forks or starts N workers at once; ``report --jobs 100000`` drove a machine's load to 511
(issue 31). So N is capped at ``JOBS_PER_CORE`` workers per core of the machine the command runs on
(``JOBS``); with ``--executor ray`` the runs go to a cluster's CPUs, so there only ``MAX_REMOTE_JOBS``
applies (``ANY_JOBS``, then ``check_jobs`` once the executor is known).
``--out ""`` used to mean the current folder; an output folder must be named.
"""
from __future__ import annotations

import os
from typing import Any

import click

from scalearena.contracts.errors import UserError

JOBS_PER_CORE = 4  # parallel runs per core: more only queue on the CPU and multiply memory
MAX_REMOTE_JOBS = 4096  # runs in flight on a Ray cluster


def key_values(items: tuple[str, ...] | list[str], flag: str, expected: str, *, empty: bool = True,
               strip: bool = False) -> dict[str, str]:
    """Repeatable ``KEY=VALUE`` flags as a mapping (a later KEY wins); an item without ``=`` or a key, or with an
    empty value where ``empty`` is off, is one error naming the flag. ``strip``: the value without surrounding
    blanks (keys always are)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not (empty or value.strip()):
            raise UserError(f"{flag} {item!r}", where=flag, expected=expected)
        out[key.strip()] = value.strip() if strip else value
    return out


def max_jobs() -> int:
    return JOBS_PER_CORE * (os.cpu_count() or 1)


def _cap_text(n: int) -> str | None:
    cap = max_jobs()
    if 1 <= n <= cap:
        return None
    return f"{n} is outside 1..{cap} ({JOBS_PER_CORE} per core, {os.cpu_count() or 1} cores here)"


class Jobs(click.ParamType):
    """A worker count in [1, ``max_jobs()``], or with ``remote`` in [1, ``MAX_REMOTE_JOBS``]."""

    name = "N"

    def __init__(self, remote: bool = False) -> None:
        self.remote = remote

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            try:
                n = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if self.remote:
            if not 1 <= n <= MAX_REMOTE_JOBS:
                self.fail(f"{n} is outside 1..{MAX_REMOTE_JOBS}", param, ctx)
        elif (problem := _cap_text(n)) is not None:
            self.fail(problem, param, ctx)
        return n


def check_jobs(jobs: int | None, executor_kind: str) -> None:
    """``--jobs`` of a command with ``--executor``: at most the local cap unless the runs go to Ray (a
    ``UserError``: one ``error:`` line, exit 2). Below 1 is the option type's or the command's to refuse."""
    if jobs is not None and jobs > MAX_REMOTE_JOBS:
        raise UserError(f"--jobs {jobs}: {jobs} is outside 1..{MAX_REMOTE_JOBS}", expected="runs in flight on a Ray "
                        f"cluster (--executor ray), at most {max_jobs()} here")
    if jobs is not None and jobs > max_jobs() and executor_kind != "ray":
        raise UserError(f"--jobs {jobs}: {_cap_text(jobs)}",
                        expected=f"at most {max_jobs()} here, or up to {MAX_REMOTE_JOBS} with --executor ray")


class OutDir(click.Path):
    """A results folder: a named path that is not an existing file (``--out ""`` is refused)."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path; name the results folder (an empty one would mean the current folder)",
                      param, ctx)
        return super().convert(value, param, ctx)


JOBS = Jobs()
ANY_JOBS = Jobs(remote=True)
