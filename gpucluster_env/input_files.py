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
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tomllib
import zlib
from pathlib import Path
from typing import Any

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
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file") from None
    except OSError as e:
        raise InputFileError(f"{p}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFileError(f"{p}: is a folder, expected a file")
    if stat.S_ISREG(st.st_mode):
        raw, _ = _read_file(p, limit, gunzip)
    elif _key(st) in _STREAMS:
        raw = _STREAMS[_key(st)]
    else:
        raw, end = _read_file(p, limit, gunzip)
        while len(_STREAMS) >= _STREAMS_KEPT:
            del _STREAMS[next(iter(_STREAMS))]
        _STREAMS[_key(end)] = raw  # as it stands after the writer closed it
    if not gunzip:
        return raw
    if raw[:2] != GZIP_MAGIC:
        if p.suffix == ".gz":
            raise InputFileError(f"{p}: named .gz but is not gzip-compressed (starts with {raw[:2]!r})")
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            return _read_bounded(p, f, limit, gzip_ok=False, what="decompressed")
    except (OSError, EOFError, zlib.error) as e:
        raise InputFileError(f"{p}: corrupt gzip stream ({e})") from None


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
            raise InputFileError(f"{p}: larger than {limit:,} bytes{' ' + what if what else ''} (the input "
                                 "limit); not a file this reads")
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
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputFileError(f"{path}: line {line}, column {col}: not UTF-8 text (byte 0x{raw[e.start]:02x})") from None


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
