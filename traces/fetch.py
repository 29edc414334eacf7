"""Fetch the public trace files into the user cache (``gpucluster traces fetch NAME``): resumable HTTP
downloads
(a ``.part`` file continued with a ``Range`` request), a rich progress bar, sha256 checks (a corrupted
download
is deleted and rejected), ``.tar.gz`` members extracted, and ``--from PATH`` to import a copy already on disk.

Files land in :func:`~.registry.cache_dir` laid out like ``../shared/data``, where scenarios find them.
``base_url`` (or ``$GPUCLUSTER_TRACE_MIRROR``) replaces each file's upstream address by ``BASE/<file name>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from .registry import RemoteFile, cache_dir, get_trace

CHUNK = 1 << 16


class ChecksumError(ValueError):
    """A downloaded or imported file whose sha256 is not the pinned one."""


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


def download(
    url: str, dest: Path, sha256: str | None = None, progress: bool = True, timeout: float = 30.0
) -> str:
    """Download ``url`` to ``dest`` (resuming ``dest.part`` if present), check ``sha256``, return the hash."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "gpucluster-env"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the .part is already complete
            got = _check(part, sha256, url)
            part.replace(dest)
            return got
        raise OSError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise OSError(f"{url}: cannot connect ({e.reason})") from None
    with resp:
        if offset and resp.status != 206:
            offset = 0  # the server ignored Range: start again
        length = resp.headers.get("Content-Length")
        total = offset + int(length) if length else None
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
            task = bar.add_task(dest.name, total=total, completed=offset)
            while block := resp.read(CHUNK):
                f.write(block)
                bar.advance(task, len(block))
    got = _check(part, sha256, url)
    part.replace(dest)
    return got


def _extract(archive: Path, member: str, dest: Path) -> None:
    """Extract the archive member whose name ends with ``member`` to ``dest``."""
    try:
        with tarfile.open(archive) as tar:
            for m in tar.getmembers():
                if m.isfile() and (m.name == member or m.name.endswith("/" + member)):
                    src = tar.extractfile(m)
                    assert src is not None
                    with open(dest, "wb") as out:
                        shutil.copyfileobj(src, out)
                    return
    except tarfile.TarError as e:
        raise ValueError(f"{archive}: not a readable tar archive ({e})") from None
    raise ValueError(f"{archive}: no member {member!r}")


def _import(src: Path, f: RemoteFile, dest: Path) -> str:
    """Copy a local file for ``f`` (``src`` is the file itself, or a folder holding it by name or laid out
    like a
    data root) to ``dest``, checking its hash."""
    cands = [src] if src.is_file() else [src / f.relpath, src / Path(f.relpath).name]
    if f.unpack:
        cands += [src / Path(f.url).name] if src.is_dir() else []
    found = next((c for c in cands if c.exists()), None)
    if found is None:
        raise FileNotFoundError(
            f"{src}: no {Path(f.relpath).name} there (looked for {', '.join(map(str, cands))})"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    if found.is_dir():
        shutil.copytree(found, dest, dirs_exist_ok=True)
        return ""
    tmp = dest.with_name(dest.name + ".part")
    shutil.copyfile(found, tmp)
    if f.unpack and tarfile.is_tarfile(tmp):
        got = _check(tmp, f.sha256, str(found))
        _extract(tmp, f.unpack, dest)
        tmp.unlink()
        return got
    got = _check(tmp, f.sha256 if not f.unpack else None, str(found))
    tmp.replace(dest)
    return got


def fetch_trace(
    name: str,
    from_path: str | Path | None = None,
    base_url: str | None = None,
    root: Path | None = None,
    progress: bool = True,
) -> list[tuple[Path, str]]:
    """Fetch (or import ``from_path``) every file of trace ``name`` into ``root`` (default: the user cache);
    return each file's path and sha256. Files already there with the pinned hash are kept."""
    spec = get_trace(name)
    root = root or cache_dir()
    base_url = base_url or os.environ.get("GPUCLUSTER_TRACE_MIRROR")
    out = []
    for f in spec.files:
        dest = root / f.relpath
        if from_path is not None:
            out.append((dest, _import(Path(from_path), f, dest)))
            continue
        if dest.is_file() and f.sha256 and sha256_of(dest) == f.sha256:
            out.append((dest, f.sha256))
            continue
        url = f"{base_url.rstrip('/')}/{Path(f.url).name}" if base_url else f.url
        if "/tree/" in url:
            raise ValueError(f"{name}: {url} is a folder on GitHub; clone it and import with --from PATH")
        if f.unpack:
            archive = dest.with_name(Path(url).name)
            got = download(url, archive, f.sha256, progress)
            _extract(archive, f.unpack, dest)
            archive.unlink()
        else:
            got = download(url, dest, f.sha256, progress)
        out.append((dest, got))
    return out
