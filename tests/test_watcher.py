"""The liveness watcher watched: its writes on a full disk, bounded HTTP bodies, the sandbox it
runs in (what it can see, how exposed it is), and what `status` and `up` say about it."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import files, liveness
from orchestrator.errors import InputError


def _enospc(fd: int, data: bytes) -> int:
    """os.write on a full disk."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _cfg(root: Path) -> liveness.Config:
    return liveness.Config(
        name="k",
        state_root=root,
        url="http://127.0.0.1:1/health",
        interval_s=1,
        failures=2,
        timeout_s=1,
        restarts_per_hour=3,
    )


def test_watcher_state_on_a_full_disk_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _cfg(tmp_path)
    liveness._write_state(cfg, {"failures_in_a_row": 0})
    before = (tmp_path / "k" / "liveness.json").read_text()
    monkeypatch.setattr(os, "write", _enospc)
    for _ in range(3):  # three probes on a full disk
        liveness._write_state(cfg, {"failures_in_a_row": 1})
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["liveness.json"]
    assert (tmp_path / "k" / "liveness.json").read_text() == before  # the last good state
    out = capsys.readouterr().out
    assert out.count("No space left on device") == 1  # said once, not on every probe


def test_write_atomically_cleans_up_on_any_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.service").write_text("old a\n")
    # A full disk while writing: refused, nothing changed, no temp file.
    monkeypatch.setattr(os, "write", _enospc)
    with pytest.raises(files.InputError, match="No space left on device; nothing was changed"):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.service"]
    # An interrupt half-way (after the first temp file): no temp file either.
    real_fsync, calls = os.fsync, []

    def interrupted_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.service"]
    # A rename that fails: the temp files not yet renamed go too.
    real_replace = os.replace

    def failing_replace(src: str, dst: object) -> None:
        if str(dst).endswith("b.service"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


# --------------------------------------------------------------------------- bounded bodies

HUGE = 64 << 20  # what the hostile server would send if the client kept reading


class Flood:
    """A loopback server whose every answer is 200 with a HUGE body (one endless line); it
    counts what it managed to send before the client hung up."""

    def __init__(self) -> None:
        import http.server
        import threading

        flood = self
        self.sent = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(HUGE))
                self.end_headers()
                block = b"x" * 65536
                try:
                    for _ in range(HUGE // len(block)):
                        self.wfile.write(block)
                        flood.sent += len(block)
                except OSError:  # the client stopped reading and closed: what a cap does
                    pass
                self.close_connection = True

            do_GET = do_POST = _answer

            def log_message(self, *a: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def flood() -> Iterator[Flood]:
    f = Flood()
    yield f
    f.close()


# The cap (1 MiB) plus what the kernel's loopback socket buffers hold: far below HUGE.
READ_BOUND = 16 << 20


def test_watcher_probe_reads_a_bounded_body(flood: Flood) -> None:
    p = liveness.probe(flood.url + "/health", 10)
    assert p.ok and "body cut at" in p.detail
    assert flood.sent < READ_BOUND


def test_status_reads_bounded_bodies(flood: Flood) -> None:
    from orchestrator.deployer import _get_json

    code, data, words = _get_json(flood.url + "/server_info", 10)
    assert (code, data) == (200, None) and "not read" in words
    assert flood.sent < READ_BOUND


def test_httpx_clients_read_bounded_bodies(flood: Flood) -> None:
    import asyncio

    from orchestrator import bench
    from orchestrator.deployer import _healthy_now

    assert asyncio.run(_healthy_now(flood.url + "/health")) is False
    assert flood.sent < READ_BOUND

    async def one() -> bench.RequestResult:
        async with bench._client(1) as client:
            return await bench._one_request(client, flood.url, {}, time.monotonic)

    r = asyncio.run(one())
    assert not r.ok and "longer than" in r.error
    assert flood.sent < 2 * READ_BOUND
    with pytest.raises(InputError, match="not reachable"):
        asyncio.run(bench.server_facts(flood.url))
    assert flood.sent < 3 * READ_BOUND
