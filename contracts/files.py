"""Reading a file a user named: only a regular file, and only up to a size.

``/dev/zero`` as a summary or a token file read until MemoryError; a FIFO in its place blocked for ever
(issue 31). So a user's file is opened without blocking (``O_NONBLOCK``: opening a FIFO for reading
otherwise waits for a writer), checked to be a regular file on the descriptor itself (``fstat``: no
window for a swap between a check and the open), and read to at most ``limit`` bytes (a ``/proc`` file
reports size 0, so the size is checked on what was read too). Every refusal is a ``UserError`` naming the
file and what was expected.

``folder_lock`` is the one exclusive lock on a folder shared by processes of this host (the built tools'
cache, the kwok clusters' claims): a second holder waits.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from scalearena.contracts.errors import UserError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``what`` names the file's role in
    the error ("a YAML file")."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError("file not found", where=where, expected=what) from None
    except OSError as e:
        raise UserError(f"cannot open: {e.strerror or e}", where=where, expected=what) from None
    except (UnicodeEncodeError, ValueError):  # an unpaired surrogate (JSON "\\udxxx") or a NUL in the name
        raise UserError("not a usable file name (a NUL or an unpaired surrogate)", where=repr(where),
                        expected=what) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"is {_kind(mode)}, not a regular file", where=where, expected=what)
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise UserError(f"cannot read: {e.strerror or e}", where=where, expected=what) from None
    finally:
        os.close(fd)
    if size > limit:
        raise UserError(f"larger than {limit:,} bytes", where=where, expected=f"{what} of at most {limit:,} bytes")
    return b"".join(chunks)


def write_secret(path: Path, text: str) -> Path:
    """``text`` into a new file only its owner can read or write (0600 from the start, never a wider mode),
    replacing one left by an earlier run in the same folder."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder/.lock`` (made with the folder when missing) for the block; released
    when the block ends or the process does."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
