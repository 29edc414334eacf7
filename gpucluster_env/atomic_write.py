"""Writing an output file whole or not at all, without ever destroying what the name pointed at.

Every file the package writes on a user's behalf (replay records, sampled traces, leaderboard records, tables)
goes through :func:`atomic_output`:

* a **regular file** (or a new name) is written to a temporary file in the same folder, flushed to disk, and
  renamed over the target, so a reader sees the old file or the new one, never half of one; an existing
  file keeps its permission bits;
* a **symbolic link** keeps the link: its target is written (as above, in the target's folder);
* a **character device or FIFO** (``/dev/null``, ``/dev/stdout``, ``/dev/full``, a named pipe) is written
  straight into, as any Unix tool does; it is never replaced by a regular file;
* a **folder, socket or block device** is refused.

Errors are one line naming the target (``/dev/full: cannot write: No space left on device``); the temporary
file is removed on any failure. Temporary names start with :data:`TEMP_PREFIX` and carry the writer's process
id, so readers of a folder can skip them (:func:`is_temporary`) and a writer can remove the ones a killed
process left behind (:func:`remove_stale_temporaries`) without touching a write still in flight.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".tmp-"
"""How every temporary file of an atomic write is named: ``.tmp-<pid>-<random>-<target name>.part`` (hidden, and
not ending like the target, so ``*.json`` never matches one)."""
STALE_AFTER_S = 600.0
"""A temporary file untouched this long whose writer process is not running on this host is stale (a
write takes well under a second; the age guards writers on other hosts sharing the folder)."""
ABANDONED_AFTER_S = 86400.0
"""A temporary file untouched this long is stale whatever its process id says (process ids are reused)."""
_TEMP_NAME = re.compile(r"\.tmp-(\d+)-[0-9a-f]{8}-")
_NAME_PART = 100  # characters of the target's name kept in the temporary name (names are at most 255 bytes)


class OutputError(OSError):
    """An output that cannot be written; the message is one line naming it."""


def is_temporary(name: str) -> bool:
    """Whether a file name is an atomic write's temporary file (in flight, or left by a killed writer)."""
    return name.startswith(TEMP_PREFIX)


def check_output(path: str | Path, inputs: tuple[str | Path | None, ...] = ()) -> None:
    """Raise :class:`OutputError` now if ``path`` cannot be an output (a folder, a socket or block device) or
    is one of the command's ``inputs`` (writing it would destroy what was read), so a long run does not end
    with nothing written and nothing is lost."""
    _check_name(path)
    real, straight = _target(Path(path))
    if straight or not real.exists():
        return
    for src in inputs:
        if src is not None and os.path.exists(src) and os.path.samefile(real, src):
            raise OutputError(f"{path}: is also the input {src}; writing it would destroy the input, write "
                              "elsewhere")


def _check_name(path: str | Path) -> None:
    """Refuse a name that cannot be a file: empty, or ending with ``/`` (a folder's name; ``Path`` would drop
    the slash and write a file of that name)."""
    text = os.fspath(path)
    if not text:
        raise OutputError("an empty file name: give the name of the file to write")
    if text.endswith(os.sep) and not os.path.isdir(text):
        raise OutputError(f"{text}: ends with '/', so it names a folder; expected a file name to write")


def _target(path: Path) -> tuple[Path, bool]:
    """Where to write for ``path`` and whether to write straight into it (a character device or FIFO)."""
    try:
        st = os.stat(path)  # follows a symbolic link to what it points at
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        return path, True
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a folder, expected a file name to write")
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "block device" if stat.S_ISBLK(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else "special file"
        raise OutputError(f"{path}: is a {kind}, not a file; refusing to write over it")
    return Path(os.path.realpath(path)), False


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[BinaryIO]:
    """A binary stream whose bytes become the file ``path`` when the ``with`` block ends without error (see
    the module docstring for what happens with links, devices and pipes). An ``OSError`` raised while
    writing becomes an :class:`OutputError` naming ``path``; a broken pipe stays a ``BrokenPipeError``."""
    _check_name(path)
    shown = Path(path)
    real, straight = _target(shown)
    if straight:
        with _errors_named(shown):
            f = open(real, "wb")  # noqa: SIM115 - closed below, where a failed flush must be reported
        try:
            with _errors_named(shown):
                yield f  # type: ignore[misc]
                f.close()
        finally:
            with contextlib.suppress(OSError):
                f.close()
        return
    if not real.parent.is_dir():
        raise OutputError(f"{shown}: cannot write: folder {real.parent} does not exist")
    tmp = real.with_name(f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{real.name[:_NAME_PART]}.part")
    with _errors_named(shown):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for any new file
    try:
        with _errors_named(shown), os.fdopen(fd, "wb") as f:
            yield f  # type: ignore[misc]
            f.flush()
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(f.fileno(), stat.S_IMODE(os.stat(real).st_mode))  # an existing file keeps its mode
            os.fsync(f.fileno())
        with _errors_named(shown):
            os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def _errors_named(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` (not a broken pipe, not one already named) into one line naming ``path``."""
    try:
        yield
    except (BrokenPipeError, OutputError):
        raise
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` with :func:`atomic_output`; returns ``path``."""
    with atomic_output(path) as f:
        f.write(data)
    return Path(path)


def remove_stale_temporaries(folder: str | Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files of writers that died in ``folder`` and return them. A temporary file is
    stale when untouched for :data:`STALE_AFTER_S` and its writer (the process id in its name) is not running
    on this host, or untouched for :data:`ABANDONED_AFTER_S`. Only writers call this; it never fails: a file
    it cannot remove (a read-only folder, a race with another cleaner) is left alone."""
    now = time.time() if now is None else now
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not is_temporary(entry.name):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            m = _TEMP_NAME.match(entry.name)
            writer_gone = m is None or not _running(int(m.group(1)))
            if age > ABANDONED_AFTER_S or (age > STALE_AFTER_S and writer_gone):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True
