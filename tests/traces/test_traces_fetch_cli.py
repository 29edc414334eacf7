"""``gpucluster traces fetch`` against a loopback HTTP server (checksums, a corrupted download rejected,
resume,
``--from``), and an end-to-end test of every ``gpucluster traces`` subcommand."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from gpucluster_env.traces import registry
from gpucluster_env.traces.fetch import ChecksumError, fetch_trace
from gpucluster_env.traces.registry import RemoteFile, TraceSpec

from gpucluster_env.cli.main import main

PAYLOAD = (
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    + "".join(f"2017-10-03 {h:02d}:00:00,{100 + h},1,{100 + h},vc1\n" for h in range(24))
).encode()
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Server:
    """A loopback HTTP server in a thread: serves ``files`` (name -> bytes), honours Range, records
    requests."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.ranges: list[str | None] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = outer.files.get(self.path.lstrip("/"))
                rng = self.headers.get("Range")
                outer.ranges.append(rng)
                if body is None:
                    self.send_error(404)
                    return
                start = int(rng.split("=")[1].split("-")[0]) if rng else 0
                self.send_response(206 if rng else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                self.wfile.write(body[start:])

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.timeout = 5
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as s:
        yield s


@pytest.fixture
def test_trace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    spec = TraceSpec(
        "test-philly",
        "a test trace",
        (RemoteFile("traces/philly/philly_jobs.csv", "https://example.invalid/philly_jobs.csv", SHA),),
        "philly-csv",
        "philly",
        "test",
        "CC0",
    )
    monkeypatch.setitem(registry.TRACES, spec.name, spec)
    monkeypatch.setenv("GPUCLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUCLUSTER_DATA", raising=False)
    return spec.name


def test_fetch_download_checksum_and_cache(server: Server, test_trace: str, tmp_path: Path) -> None:
    server.files["philly_jobs.csv"] = PAYLOAD
    [(path, sha)] = fetch_trace(test_trace, base_url=server.url, progress=False)
    assert path == tmp_path / "cache" / "traces/philly/philly_jobs.csv" and sha == SHA
    assert path.read_bytes() == PAYLOAD and registry.locate(test_trace) == path
    fetch_trace(test_trace, base_url=server.url, progress=False)  # already there: no new request
    assert len(server.ranges) == 1


def test_fetch_rejects_corrupted_download(server: Server, test_trace: str, tmp_path: Path) -> None:
    server.files["philly_jobs.csv"] = PAYLOAD.replace(b"vc1", b"vc2")
    with pytest.raises(ChecksumError, match="sha256 mismatch"):
        fetch_trace(test_trace, base_url=server.url, progress=False)
    assert not list((tmp_path / "cache").rglob("philly_jobs.csv*"))


def test_fetch_resumes_partial_download(server: Server, test_trace: str, tmp_path: Path) -> None:
    server.files["philly_jobs.csv"] = PAYLOAD
    part = tmp_path / "cache" / "traces/philly/philly_jobs.csv.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(PAYLOAD[:100])
    [(path, _)] = fetch_trace(test_trace, base_url=server.url, progress=False)
    assert server.ranges == ["bytes=100-"] and path.read_bytes() == PAYLOAD and not part.exists()


def test_cli_fetch_from_url_and_from_path(
    server: Server, test_trace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.files["philly_jobs.csv"] = PAYLOAD
    assert main(["traces", "fetch", test_trace, "--base-url", server.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["sha256"] == SHA
    local = tmp_path / "copy" / "philly_jobs.csv"
    local.parent.mkdir()
    local.write_bytes(PAYLOAD)
    (tmp_path / "cache").joinpath("traces/philly/philly_jobs.csv").unlink()
    assert main(["traces", "fetch", test_trace, "--from", str(local)]) == 0
    assert registry.locate(test_trace) is not None
    local.write_bytes(PAYLOAD + b"x")
    assert main(["traces", "fetch", test_trace, "--from", str(local)]) == 2
    assert "sha256 mismatch" in capsys.readouterr().err


def test_fetch_from_a_device_is_refused(test_trace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "copy"
    src.mkdir()
    (src / "philly_jobs.csv").symlink_to("/dev/zero")  # copied, it would fill the disk
    assert main(["traces", "fetch", test_trace, "--from", str(src)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{src / 'philly_jobs.csv'}: not a regular file" in err
    assert not list((tmp_path / "cache").rglob("philly_jobs.csv*"))


def test_cli_list_info_compare(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "list", "--json"]) == 0
    names = [r["name"] for r in json.loads(capsys.readouterr().out)]
    assert {"philly", "venus", "alibaba", "alibaba-gpu"} <= set(names)
    assert main(["traces", "info", "venus", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["synthetic"] == "venus"
    assert main(["traces", "compare", "venus", "--jobs", "5000", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)["stats"]
    assert stats["mean gpus"]["real"] == pytest.approx(6.736, rel=1e-3)  # published, or the 10-minute bins' 6.733
    assert main(["traces", "compare", "venus", "--jobs", "2000"]) == 0
    assert "duration p50 (s)" in capsys.readouterr().out


def test_cli_sample_synthetic_and_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.csv"
    assert (
        main(
            [
                "traces",
                "sample",
                "synthetic:philly",
                "--jobs",
                "50",
                "--window",
                "busiest",
                "--max-gpus",
                "8",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["out"] == str(out)
    assert len(out.read_text().splitlines()) == 51
    bad = tmp_path / "philly_jobs.csv"
    bad.write_text(PAYLOAD.decode().replace("2017-10-03 05:00:00", "2017-13-03 05:00:00"))
    assert main(["traces", "sample", "x", "--file", str(bad), "--jobs", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "row 6" in err and "'timestamp'" in err and str(bad) in err
    assert (
        main(
            [
                "traces",
                "sample",
                "x",
                "--file",
                str(bad),
                "--jobs",
                "10",
                "--window",
                "all",
                "--skip-bad-rows",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["skipped_bad_rows"] == 1
