"""Fetch the public trace files into the user cache (``gpucluster traces fetch NAME``): resumable HTTP
downloads
(a ``.part`` file continued with a ``Range`` request), a rich progress bar, sha256 checks (a corrupted
download
is deleted and rejected), ``.tar.gz`` members extracted, and ``--from PATH`` to import a copy already on disk.

Files land in :func:`~.registry.cache_dir` laid out like ``../shared/data``, where scenarios find them.
``base_url`` (or ``$GPUCLUSTER_TRACE_MIRROR``) replaces each file's upstream address by ``BASE/<file name>``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from gpucluster_env.traces.registry import RemoteFile, TraceSpec, cache_dir, get_trace

CHUNK = 1 << 16


class ChecksumError(ValueError):
    """A downloaded or imported file whose sha256 is not the pinned one."""


class ContentError(ValueError):
    """A downloaded or imported file without a pinned hash that does not read as its trace's format."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, expected: str | None, origin: str) -> str:
    got = sha256_of(path)
    if expected and got != expected:
        path.unlink(missing_ok=True)
        raise ChecksumError(
            f"{origin}: sha256 mismatch (expected {expected[:16]}…, got {got[:16]}…); "
            "the corrupt file was removed"
        )
    return got


@contextlib.contextmanager
def _locked(part: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``part``'s lock file, so a second concurrent fetch of the same file stops with
    a clear error instead of writing into the first one's ``.part``."""
    lock = part.with_name(part.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise OSError(f"{part}: another gpucluster fetch is writing this file; wait for it to finish") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
            lock.unlink(missing_ok=True)


def download(
    url: str, dest: Path, sha256: str | None = None, progress: bool = True, timeout: float = 30.0,
    check: Callable[[Path], None] | None = None,
) -> str:
    """Download ``url`` to ``dest`` (resuming ``dest.part`` if present), check ``sha256`` (or, for a file
    with no pinned hash, run ``check`` on the content; a failing file is deleted), rename it into place, and
    return its hash. Network faults and time-outs are ``OSError`` naming the URL."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    with _locked(part):
        _fetch_part(url, part, progress, timeout)
        got = _check(part, sha256, url)
        if check is not None and not sha256:
            _check_content(part, check, url)
        part.replace(dest)
    return got


def _check_content(path: Path, check: Callable[[Path], None], origin: str) -> None:
    try:
        check(path)
    except (ValueError, OSError) as e:
        path.unlink(missing_ok=True)
        raise ContentError(f"{origin}: not a valid trace file, nothing entered the cache "
                           f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def _fetch_part(url: str, part: Path, progress: bool, timeout: float) -> None:
    """Append the rest of ``url`` to ``part`` (the whole of it when the server ignores ``Range``)."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "gpucluster-env"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the .part is already complete
            return
        raise OSError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise OSError(f"{url}: cannot connect ({e.reason})") from None
    except (TimeoutError, OSError) as e:
        raise OSError(f"{url}: {e or type(e).__name__} (time-out {timeout:g} s)") from None
    with resp:
        if offset and resp.status != 206:
            offset = 0  # the server ignored Range: start again
        length = resp.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        with (
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                disable=not progress,
                transient=True,
            ) as bar,
            open(part, "ab" if offset else "wb") as f,
        ):
            task = bar.add_task(part.name, total=total, completed=offset)
            try:
                while block := resp.read(CHUNK):
                    f.write(block)
                    bar.advance(task, len(block))
            except (TimeoutError, OSError) as e:
                raise OSError(f"{url}: download interrupted ({e or type(e).__name__}); run the fetch again to "
                              "resume") from None


def _extract(archive: Path, member: str, dest: Path, check: Callable[[Path], None] | None = None) -> None:
    """Extract the archive member whose name ends with ``member`` to ``dest`` (through ``dest.part``, checked
    with ``check`` before it is renamed into place)."""
    part = dest.with_name(dest.name + ".part")
    try:
        with tarfile.open(archive) as tar:
            for m in tar.getmembers():
                if m.isfile() and (m.name == member or m.name.endswith("/" + member)):
                    src = tar.extractfile(m)
                    assert src is not None
                    with open(part, "wb") as out:
                        shutil.copyfileobj(src, out)
                    if check is not None:
                        _check_content(part, check, f"{archive.name}:{member}")
                    part.replace(dest)
                    return
    except (tarfile.TarError, EOFError, zlib.error) as e:
        part.unlink(missing_ok=True)
        raise ValueError(f"{archive}: not a readable tar archive ({e})") from None
    raise ValueError(f"{archive}: no member {member!r}")


def _import(src: Path, f: RemoteFile, dest: Path, check: Callable[[Path], None] | None) -> str:
    """Copy a local file for ``f`` (``src`` is the file itself, or a folder holding it by name or laid out
    like a data root) to ``dest``, checking its hash (or, unpinned, its content)."""
    cands = [src] if src.is_file() else [src / f.relpath, src / Path(f.relpath).name]
    if f.unpack:
        cands += [src / Path(f.url).name] if src.is_dir() else []
    found = next((c for c in cands if c.exists()), None)
    if found is None:
        raise FileNotFoundError(
            f"{src}: no {Path(f.relpath).name} there (looked for {', '.join(map(str, cands))})"
        )
    if not (found.is_dir() or found.is_file()):  # a device or pipe: /dev/zero would fill the disk
        raise ValueError(f"{found}: not a regular file (a device or a pipe); copy the trace into a file first")
    if found.is_dir() != _is_folder(f):
        raise ValueError(f"{found}: expected {'a folder' if _is_folder(f) else 'a file'} for {f.relpath}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if found.is_dir():
        shutil.copytree(found, dest, dirs_exist_ok=True)
        return ""
    tmp = dest.with_name(dest.name + ".part")
    shutil.copyfile(found, tmp)
    try:
        if f.unpack and tarfile.is_tarfile(tmp):
            got = _check(tmp, f.sha256, str(found))
            _extract(tmp, f.unpack, dest, check)
            return got
        got = _check(tmp, f.sha256 if not f.unpack else None, str(found))
        if check is not None and not (f.sha256 and not f.unpack):
            _check_content(tmp, check, str(found))
        tmp.replace(dest)
        return got
    finally:
        tmp.unlink(missing_ok=True)


def _is_folder(f: RemoteFile) -> bool:
    """A trace "file" that is a folder (Gavel's per-VC traces: a GitHub tree, imported with ``--from``)."""
    return "/tree/" in f.url


def content_check(spec: TraceSpec, f: RemoteFile) -> Callable[[Path], None]:
    """The check a downloaded or imported file of ``spec`` must pass before it enters the cache: the trace's
    own loader for a one-file trace; for Alibaba PAI's two tables, each read with its expected columns."""
    from gpucluster_env.traces.alibaba import PAI_JOB_COLUMNS, PAI_TASK_COLUMNS
    from gpucluster_env.traces.files import read_csv
    from gpucluster_env.traces.registry import load_file

    if len(spec.files) == 1:
        return lambda p: None if load_file(p, spec.loader) else None
    cols = PAI_TASK_COLUMNS if "task" in Path(f.relpath).name else PAI_JOB_COLUMNS
    return lambda p: None if read_csv(p, cols, names=cols) is not None else None


def fetch_trace(
    name: str,
    from_path: str | Path | None = None,
    base_url: str | None = None,
    root: Path | None = None,
    progress: bool = True,
) -> list[tuple[Path, str]]:
    """Fetch (or import ``from_path``) every file of trace ``name`` into ``root`` (default: the user cache);
    return each file's path and sha256. Files already there with the pinned hash are kept. A file without a
    pinned hash enters the cache only if it reads as the trace's format (:func:`content_check`)."""
    spec = get_trace(name)
    root = root or cache_dir()
    base_url = base_url or os.environ.get("GPUCLUSTER_TRACE_MIRROR")
    if from_path is not None and Path(from_path).is_file() and len(spec.files) > 1:
        raise ValueError(f"{name} has {len(spec.files)} files ({', '.join(Path(f.relpath).name for f in spec.files)}); "
                         f"--from a folder holding them, not the single file {from_path}")
    out = []
    for f in spec.files:
        dest = root / f.relpath
        check = None if _is_folder(f) else content_check(spec, f)
        if from_path is not None:
            out.append((dest, _import(Path(from_path), f, dest, check)))
            continue
        if dest.is_file() and f.sha256 and sha256_of(dest) == f.sha256:
            out.append((dest, f.sha256))
            continue
        if _is_folder(f):
            raise ValueError(f"{name}: {f.url} is a folder on GitHub; clone it and import with --from PATH")
        url = f"{base_url.rstrip('/')}/{Path(f.url).name}" if base_url else f.url
        if f.unpack:
            archive = dest.with_name(Path(url).name)
            try:
                got = download(url, archive, f.sha256, progress)
                _extract(archive, f.unpack, dest, check)
            finally:
                archive.unlink(missing_ok=True)  # never a corrupt or stale archive left in the cache
        else:
            got = download(url, dest, f.sha256, progress, check=check)
        out.append((dest, got))
    return out
