"""wait_until_healthy against a local HTTP server and a fake systemd (no box needed)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from orchestrator.systemd.install import UnitState
from orchestrator.watch.health import Progress, wait_until_healthy
from tests.helpers import say

pytestmark = pytest.mark.filterwarnings("error")

RUNNING = UnitState(
    name="sglang.service",
    load_state="loaded",
    active_state="active",
    sub_state="running",
    result="success",
    exec_main_code=0,
    exec_main_status=0,
    main_pid=4242,
    invocation_id="ab" * 16,
    n_restarts=0,
    state_change_timestamp_us=0,
    active_enter_timestamp_us=0,
    fragment_path="/etc/systemd/system/sglang.service",
)
STARTING = replace(RUNNING, active_state="activating", sub_state="start-pre", main_pid=0)
AUTO_RESTART = replace(
    RUNNING,
    active_state="activating",
    sub_state="auto-restart",
    result="exit-code",
    exec_main_code=1,
    exec_main_status=1,
    main_pid=0,
    n_restarts=1,
)


class FakeSystemd:
    """Just enough of Systemd for health: watch() yields states pushed with set()."""

    def __init__(self, state: UnitState) -> None:
        self.state = state
        self._changed: asyncio.Event | None = None
        self.watch_error: Exception | None = None

    def set(self, state: UnitState) -> None:
        self.state = state
        if self._changed is not None:
            self._changed.set()

    def later(self, delay_s: float, state: UnitState) -> None:
        asyncio.get_running_loop().call_later(delay_s, self.set, state)

    @contextlib.asynccontextmanager
    async def _watch(self) -> AsyncIterator[AsyncIterator[UnitState]]:
        self._changed = asyncio.Event()

        async def states() -> AsyncIterator[UnitState]:
            assert self._changed is not None
            if self.watch_error is not None:
                raise self.watch_error
            last = None
            while True:
                if self.state != last:
                    last = self.state
                    yield last
                await self._changed.wait()
                self._changed.clear()

        gen = states()
        try:
            yield gen
        finally:
            await gen.aclose()

    def watch(self, unit: str) -> Any:
        return self._watch()


class Server:
    """A threaded HTTP server whose /health status is `status_fn()`."""

    def __init__(self, status_fn: Callable[[], int], port: int = 0) -> None:
        self.status_fn = status_fn
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                code = outer.status_fn()
                body = b"ok" if code == 200 else b"not yet"
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/health"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def make(status_fn: Callable[[], int], port: int = 0) -> Server:
        s = Server(status_fn, port)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(coro_fn: Callable[[], Any]) -> Any:
    """Run in a fresh loop and check that nothing was left running."""

    async def wrapper() -> Any:
        result = await coro_fn()
        await asyncio.sleep(0)
        leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not leftover, f"leaked tasks: {leftover}"
        return result

    return asyncio.run(wrapper())


def test_healthy_after_503_noticed_quickly(server_factory: Callable[..., Server]) -> None:
    t_switch = time.monotonic() + 0.8
    srv = server_factory(lambda: 200 if time.monotonic() >= t_switch else 503)
    seen: list[Progress] = []

    async def go() -> Any:
        return await wait_until_healthy(
            FakeSystemd(RUNNING), "sglang.service", srv.url, timeout_s=10, on_progress=seen.append
        )

    out = run(go)
    lag = time.monotonic() - t_switch  # upper bound on the lag (includes teardown)
    print(f"healthy after {out.elapsed_s:.2f} s; 503->200 noticed within {lag * 1000:.0f} ms")
    assert out.status == "healthy", out.detail
    assert out.http_status == 200
    assert lag < 0.5
    assert 503 in [p.http_status for p in seen]
    assert seen[-1].http_status == 200
    assert "answered 200" in out.detail


def test_connection_refused_then_healthy(server_factory: Callable[..., Server]) -> None:
    port = free_port()
    seen: list[Progress] = []

    async def go() -> Any:
        loop = asyncio.get_running_loop()
        handle = loop.call_later(0.6, lambda: server_factory(lambda: 200, port))
        try:
            return await wait_until_healthy(
                FakeSystemd(RUNNING),
                "sglang.service",
                f"http://127.0.0.1:{port}/health",
                timeout_s=10,
                on_progress=seen.append,
            )
        finally:
            handle.cancel()

    out = run(go)
    assert out.status == "healthy", out.detail
    assert 0.6 <= out.elapsed_s < 1.2
    assert any("connection refused" in p.http_detail for p in seen)


def test_needs_unit_running_too(server_factory: Callable[..., Server]) -> None:
    srv = server_factory(lambda: 200)  # something answers 200 already
    sd = FakeSystemd(STARTING)

    async def go() -> Any:
        sd.later(0.5, RUNNING)
        return await wait_until_healthy(sd, "sglang.service", srv.url, timeout_s=10)

    out = run(go)
    assert out.status == "healthy"
    assert 0.5 <= out.elapsed_s < 0.9
    assert out.unit is not None and out.unit.running


def test_auto_restart_counts_as_failed_at_once(server_factory: Callable[..., Server]) -> None:
    srv = server_factory(lambda: 503)
    sd = FakeSystemd(RUNNING)

    async def go() -> Any:
        sd.later(0.3, AUTO_RESTART)
        return await wait_until_healthy(sd, "sglang.service", srv.url, timeout_s=10)

    out = run(go)
    print(f"failure seen after {out.elapsed_s:.3f} s (set at 0.300 s)")
    assert out.status == "failed"
    assert 0.3 <= out.elapsed_s < 0.4
    assert out.unit is not None and out.unit.sub_state == "auto-restart"
    assert "auto-restart" in out.detail and "exit status 1" in out.detail


def test_failed_state_and_phase_in_detail() -> None:
    sd = FakeSystemd(STARTING)
    failed = replace(AUTO_RESTART, active_state="failed", sub_state="failed", n_restarts=0)

    async def lines() -> AsyncIterator[str]:
        yield "[2025-01-01] server_args=ServerArgs(model_path='x')"
        yield "[2025-01-01 TP0] " + say("ms-load-begin", avail="70.00")
        await asyncio.sleep(3600)

    async def go() -> Any:
        sd.later(0.3, failed)
        return await wait_until_healthy(
            sd, "sglang.service", f"http://127.0.0.1:{free_port()}/", timeout_s=10, lines=lines()
        )

    out = run(go)
    assert out.status == "failed"
    assert out.phase == "load-weights"
    assert "during 'loading weights'" in out.detail


def test_stopped_after_start_is_failed() -> None:
    sd = FakeSystemd(STARTING)
    stopped = replace(RUNNING, active_state="inactive", sub_state="dead", main_pid=0)

    async def go() -> Any:
        sd.later(0.2, stopped)
        return await wait_until_healthy(
            sd, "sglang.service", f"http://127.0.0.1:{free_port()}/", timeout_s=10
        )

    out = run(go)
    assert out.status == "failed"
    assert "stopped" in out.detail


def test_timeout(server_factory: Callable[..., Server]) -> None:
    srv = server_factory(lambda: 503)

    async def go() -> Any:
        return await wait_until_healthy(
            FakeSystemd(RUNNING), "sglang.service", srv.url, timeout_s=0.7
        )

    out = run(go)
    assert out.status == "timeout"
    assert 0.7 <= out.elapsed_s < 0.9
    assert out.http_status == 503
    assert "503" in out.detail and "0.7 s" in out.detail
    assert srv.hits >= 3


def test_phases_from_lines(server_factory: Callable[..., Server]) -> None:
    ready = asyncio.Event()
    srv_ready = threading.Event()
    srv = server_factory(lambda: 200 if srv_ready.is_set() else 503)
    seen: list[Progress] = []
    log = [
        "server_args=ServerArgs(model_path='moonshotai/Kimi-K2')",
        say("ms-init-begin"),
        say("ms-load-begin", avail="70.1"),
        "some unrelated line",
        say("ms-load-end", elapsed="12.3", arch="DeepseekV3ForCausalLM", detail="avail mem=8.2 GB"),
        say("ms-kv-cache", dtype="torch.bfloat16", tokens=100000, size="40.00"),
        say("ms-graph-begin", name="target verify", detail="backend=full"),
        "Uvicorn running on http://127.0.0.1:30000",
        say("ms-ready"),
    ]

    async def lines() -> AsyncIterator[str]:
        for line in log:
            await asyncio.sleep(0.02)
            yield line
        srv_ready.set()
        ready.set()
        await asyncio.sleep(3600)  # a journal follow never ends by itself

    async def go() -> Any:
        return await wait_until_healthy(
            FakeSystemd(RUNNING),
            "sglang.service",
            srv.url,
            timeout_s=10,
            on_progress=seen.append,
            lines=lines(),
        )

    out = run(go)
    assert out.status == "healthy"
    assert out.phase == "ready"
    phases = [p.phase for p in seen]
    order = [p for i, p in enumerate(phases) if p and (i == 0 or phases[i - 1] != p)]
    assert order == [
        "args",
        "init-parallel",
        "load-weights",
        "weights-loaded",
        "kv-cache",
        "cuda-graphs",
        "http",
        "ready",
    ]
    assert seen[-1].phase_label == "ready"


def test_watch_error_propagates() -> None:
    sd = FakeSystemd(RUNNING)
    sd.watch_error = RuntimeError("bus gone")

    async def go() -> Any:
        return await wait_until_healthy(
            sd, "sglang.service", f"http://127.0.0.1:{free_port()}/", timeout_s=10
        )

    with pytest.raises(RuntimeError, match="bus gone"):
        run(go)


def test_caller_cancel_leaves_nothing_behind(server_factory: Callable[..., Server]) -> None:
    srv = server_factory(lambda: 503)

    async def go() -> None:
        t = asyncio.create_task(
            wait_until_healthy(FakeSystemd(RUNNING), "sglang.service", srv.url, timeout_s=10)
        )
        while srv.hits < 1:  # cancel while it is polling for real, not before it started
            await asyncio.sleep(0.01)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

    run(go)
