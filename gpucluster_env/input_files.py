"""Reading a user's input file once, within a size bound, as strict UTF-8 text: the one way trace files,
scenario and board files (TOML) and replay records are read.

* **Once.** A regular file may be read again; a pipe cannot (``--trace <(zcat jobs.csv.gz)``, a named
  FIFO, ``/dev/stdin``): its bytes are kept in memory the first time and every later read of the same pipe in
  this process gets them (until something writes to it again), so a pipe works wherever a file does.
* **Bounded.** At most :data:`MAX_INPUT_BYTES` are read (checked while reading, and again after gzip
  decompression), and text never holds a NUL byte: ``/dev/zero`` or ``/dev/urandom`` stop at their first
  block, an endless text stream (``yes |``) at the bound, each with one line instead of eating memory.
* **Named.** Every problem (no such file, a folder, not UTF-8, corrupt gzip, too large, too deeply nested)
  is an :class:`InputFileError` (a ``ValueError``) or ``FileNotFoundError`` whose one line names the file.

:func:`read_text` gives the whole text; :func:`input_lines` gives it a line at a time under the same rules, for
a reader that must not hold a large file (a replay record of 100,000 jobs).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tomllib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

MAX_INPUT_BYTES = 1 << 30
"""The largest input read, in bytes (1 GiB; after gzip decompression): the largest public trace table
(Alibaba PAI 2020's task table) is a few hundred MB."""
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
_STREAMS: dict[tuple[int, int, int], bytes] = {}
"""The bytes of the pipes read so far (a pipe cannot be read twice), by device, inode and time last written;
at most :data:`_STREAMS_KEPT`."""
_STREAMS_KEPT = 8


class InputFileError(ValueError):
    """An input file that cannot be read as what it should be; the message is one line naming it."""


def read_input(path: str | Path, gunzip: bool = False, limit: int | None = None) -> bytes:
    """The bytes of file ``path`` (decompressed when ``gunzip`` and the content is gzip; a name ending in
    ``.gz`` must then be gzip), read once for a pipe and never more than ``limit`` (default
    :data:`MAX_INPUT_BYTES`) bytes; a NUL byte is an error (inputs are text)."""
    p = Path(path)
    limit = MAX_INPUT_BYTES if limit is None else limit
    raw = _stored_bytes(p, _stat(p), limit, gunzip)
    if not gunzip or not _is_gzip(p, raw[:2]):
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            return _read_bounded(p, f, limit, gzip_ok=False, what="decompressed")
    except (OSError, EOFError, zlib.error) as e:
        raise InputFileError(f"{p}: corrupt gzip stream ({e})") from None


def _stored_bytes(p: Path, st: os.stat_result, limit: int, gzip_ok: bool) -> bytes:
    """The bytes of ``p`` (status ``st``) as they are stored (gzip, when ``gzip_ok``, not decompressed): a
    pipe's are read once and kept."""
    if stat.S_ISREG(st.st_mode):
        return _read_file(p, limit, gzip_ok)[0]
    if _key(st) in _STREAMS:
        return _STREAMS[_key(st)]
    raw, end = _read_file(p, limit, gzip_ok)
    while len(_STREAMS) >= _STREAMS_KEPT:
        del _STREAMS[next(iter(_STREAMS))]
    _STREAMS[_key(end)] = raw  # as it stands after the writer closed it
    return raw


def _stat(p: Path) -> os.stat_result:
    """The status of ``p``, which must exist and not be a folder."""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file") from None
    except OSError as e:
        raise InputFileError(f"{p}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFileError(f"{p}: is a folder, expected a file")
    return st


def _is_gzip(p: Path, head: bytes) -> bool:
    """Whether content starting with ``head`` is gzip; a name ending in ``.gz`` must be."""
    if head[:2] == GZIP_MAGIC:
        return True
    if p.suffix == ".gz":
        raise InputFileError(f"{p}: named .gz but is not gzip-compressed (starts with {head[:2]!r})")
    return False


def _too_large(p: Path, limit: int, what: str = "") -> InputFileError:
    return InputFileError(f"{p}: larger than {limit:,} bytes{' ' + what if what else ''} (the input limit); not a "
                          "file this reads")


def _key(st: os.stat_result) -> tuple[int, int, int]:
    """A pipe as last written to: a new writer changes the time."""
    return st.st_dev, st.st_ino, st.st_mtime_ns


def _read_file(p: Path, limit: int, gzip_ok: bool) -> tuple[bytes, os.stat_result]:
    """The bytes of ``p`` and its status once they are read."""
    try:
        with open(p, "rb") as f:
            return _read_bounded(p, f, limit, gzip_ok), os.fstat(f.fileno())
    except OSError as e:
        raise InputFileError(f"{p}: cannot read ({e.strerror or e})") from None


def _read_bounded(p: Path, f: Any, limit: int, gzip_ok: bool, what: str = "") -> bytes:
    """At most ``limit`` bytes of stream ``f``; text (no NUL byte) unless ``gzip_ok`` and it starts as gzip."""
    buf = bytearray()
    binary = False
    while chunk := f.read(_CHUNK):
        if not buf:
            binary = gzip_ok and chunk[:2] == GZIP_MAGIC
        if not binary:
            _check_nul(p, chunk, len(buf))
        buf += chunk
        if len(buf) > limit:
            raise _too_large(p, limit, what)
    return bytes(buf)


def _check_nul(p: Path, data: bytes, offset: int) -> None:
    at = data.find(b"\0")
    if at >= 0:
        raise InputFileError(f"{p}: binary data (a NUL byte at offset {offset + at:,}), expected text")


def decode_text(path: str | Path, raw: bytes) -> str:
    """``raw`` as UTF-8 text (a byte-order mark dropped); a byte that is not UTF-8 is an error naming the
    file, the line and the column, never a silently replaced character."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _not_utf8(path, raw, e.start) from None


def _not_utf8(path: str | Path, raw: bytes, at: int, first_line: int = 1) -> InputFileError:
    """The error for the byte at offset ``at`` of ``raw`` (whose first line is line ``first_line``), which is
    not UTF-8: it names the file, the line and the column."""
    line = raw.count(b"\n", 0, at) + first_line
    col = at - (raw.rfind(b"\n", 0, at) + 1) + 1
    return InputFileError(f"{path}: line {line}, column {col}: not UTF-8 text (byte 0x{raw[at]:02x})")


def input_lines(path: str | Path, gunzip: bool = False) -> Iterator[str]:
    """The lines of text file ``path``, one at a time, each with its newline, under :func:`read_text`'s rules
    (read once; within :data:`MAX_INPUT_BYTES`, before and after gzip decompression; no NUL byte; strict UTF-8,
    an error naming the line and column) but never more than one line held: a regular file is read as the
    lines are taken, a pipe once into memory as :func:`read_input` keeps it (compressed, when it is gzip)."""
    p = Path(path)
    st = _stat(p)
    try:
        f: IO[bytes] = (open(p, "rb") if stat.S_ISREG(st.st_mode) else
                        io.BytesIO(_stored_bytes(p, st, MAX_INPUT_BYTES, gunzip)))
    except OSError as e:
        raise InputFileError(f"{p}: cannot read ({e.strerror or e})") from None
    with f:
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_INPUT_BYTES:
            raise _too_large(p, MAX_INPUT_BYTES)
        zipped = gunzip and _is_gzip(p, f.read(2))
        f.seek(0)
        if not zipped:
            yield from _lines(p, f, "")
            return
        with gzip.GzipFile(fileobj=f) as z:
            try:
                yield from _lines(p, io.BufferedReader(z, _CHUNK), "decompressed")  # lines read in C
            except (OSError, EOFError, zlib.error) as e:
                raise InputFileError(f"{p}: corrupt gzip stream ({e})") from None


def _lines(p: Path, f: IO[bytes], what: str) -> Iterator[str]:
    """The lines of binary stream ``f`` as text (see :func:`input_lines`)."""
    done = 0
    n = 0
    while raw := f.readline(MAX_INPUT_BYTES - done + 1):
        if b"\0" in raw:
            _check_nul(p, raw, done)
        done += len(raw)
        if done > MAX_INPUT_BYTES:
            raise _too_large(p, MAX_INPUT_BYTES, what)
        n += 1
        try:
            text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise _not_utf8(p, raw, e.start, n) from None
        yield text


def read_text(path: str | Path, gunzip: bool = False) -> str:
    """File ``path`` as UTF-8 text, read with :func:`read_input` and :func:`decode_text`."""
    return decode_text(path, read_input(path, gunzip=gunzip))


def parse_json(text: str, source: str) -> Any:
    """JSON ``text``; a syntax error (with its line and column) or nesting too deep for the parser is one line
    naming ``source``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputFileError(f"{source}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise InputFileError(f"{source}: not valid JSON (nested too deeply)") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML ``text`` as a dict; a syntax error or nesting too deep for the parser is one line naming
    ``source``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputFileError(f"{source}: not valid TOML ({e})") from None
    except RecursionError:
        raise InputFileError(f"{source}: not valid TOML (nested too deeply)") from None
