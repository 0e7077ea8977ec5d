"""The stand-in's failures after "ready" (tests/standin/sglang/_day2.py), as a plain subprocess:
each run-time crash prints SGLang's text and dies by SIGKILL, and the classifier names it; a
hang stops answering /health; a zombie answers 503 after its health-check timeout."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from orchestrator import sglang
from orchestrator.diagnosis.diagnose import classify_text
from tests.test_standin import Proc, free_port, get

READY = sglang.release().message("ms-ready").format()  # SGLang's ready line
FAST = {"STANDIN_READY_DELAY_S": "0.5"}


def _args(port: int) -> list[str]:
    return ["--model-path", "/m", "--tp-size", "8", "--port", str(port)]


def _wait_ready(p: Proc, port: int, deadline_s: float = 60.0) -> None:
    t = time.monotonic()
    while READY not in p.stderr():
        assert p.p.poll() is None, p.stderr()[-2000:]
        assert time.monotonic() - t < deadline_s, "the stand-in never became ready"
        time.sleep(0.05)
    assert get(port, "/health")[0] == 200


@pytest.mark.parametrize(
    ("kind", "category"),
    [
        ("illegal-memory", "cuda-illegal-access"),
        ("device-assert", "cuda-device-assert"),
        ("kv-oom", "kv-cache-oom-runtime"),
        ("nccl-timeout", "nccl-watchdog-timeout"),
        ("sglang-watchdog", "sglang-watchdog-timeout"),
        ("detokenizer", "tokenizer-manager-died"),
        ("scheduler-exception", "scheduler-exception"),
    ],
)
def test_crash_after_serving(tmp_path: Path, kind: str, category: str) -> None:
    port = free_port()
    p = Proc(_args(port), tmp_path, STANDIN_CRASH_AFTER_S="0.3", STANDIN_CRASH=kind, **FAST)
    _wait_ready(p, port)
    rc = p.p.wait(timeout=60)
    assert rc == -signal.SIGKILL  # SGLang's SIGQUIT handler kills the tree, itself included
    err = p.stderr()
    assert err.index(READY) < err.index("SIGQUIT received.")
    d = classify_text(err)
    print(f"\n{kind}: {d.category}: {d.summary}")
    assert d.category == category, d.render_text()


def test_hang_never_answers_health(tmp_path: Path) -> None:
    port = free_port()
    p = Proc(_args(port), tmp_path, STANDIN_HANG_AFTER_S="0.2", **FAST)
    try:
        _wait_ready(p, port)
        t = time.monotonic()
        while True:  # the flip happens 0.2 s after ready: until then /health is still 200
            try:
                code, _ = get(port, "/health", timeout=1.0)
            except TimeoutError:
                break
            assert code == 200
            assert time.monotonic() - t < 30, "/health kept answering"
        assert p.p.poll() is None  # alive: only a liveness probe notices
    finally:
        t = time.monotonic()
        assert p.stop() == 0  # SIGTERM still ends it, promptly, blocked handlers and all
        assert time.monotonic() - t < 10


def test_hang_with_503(tmp_path: Path) -> None:
    port = free_port()
    p = Proc(_args(port), tmp_path, STANDIN_HANG_AFTER_S="0.2", STANDIN_HANG_HEALTH="503", **FAST)
    try:
        _wait_ready(p, port)
        t = time.monotonic()
        while get(port, "/health")[0] == 200:
            assert time.monotonic() - t < 30
        assert get(port, "/health")[0] == 503
    finally:
        p.stop()


def test_zombie_health_fails_after_timeout(tmp_path: Path) -> None:
    port = free_port()
    p = Proc(
        _args(port),
        tmp_path,
        STANDIN_ZOMBIE_AFTER_S="0.2",
        SGLANG_HEALTH_CHECK_TIMEOUT="1",
        **FAST,
    )
    try:
        _wait_ready(p, port)
        t = time.monotonic()
        while "Watchdog caught collective operation timeout" not in p.stderr():
            assert time.monotonic() - t < 30
            time.sleep(0.05)
        assert get(port, "/health", timeout=10)[0] == 503
        assert get(port, "/v1/models")[0] == 200  # the HTTP server itself is up
        err = p.stderr()
        assert "Health check failed. Server couldn't get a response from detokenizer" in err
        assert classify_text(err).category == "nccl-watchdog-timeout"
    finally:
        p.stop()
