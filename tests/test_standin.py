"""Tests for the SGLang stand-in (tests/standin/), run as a plain subprocess (no systemd)."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import lead, said, say

STANDIN = Path(__file__).resolve().parent / "standin" / "python"
SEED_SPEC = [
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-draft-model-path",
    "/d",
    "--speculative-num-draft-tokens",
    "3",
    "--speculative-eagle-topk",
    "4",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    def __init__(self, args: list[str], tmp_path: Path, **env: str) -> None:
        self.out = tmp_path / f"out-{id(self)}.log"
        self.err = tmp_path / f"err-{id(self)}.log"
        e = dict(os.environ, **env)
        self.t0 = time.monotonic()
        with self.out.open("wb") as o, self.err.open("wb") as r:
            self.p = subprocess.Popen(
                [str(STANDIN), "-m", "sglang.launch_server", *args], stdout=o, stderr=r, env=e
            )

    def stderr(self) -> str:
        return self.err.read_text()

    def wait_for_line(self, text: str, timeout: float = 20.0) -> None:
        """Block until the stand-in has logged `text` (an event, not a guess at timing)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr():
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"stand-in never logged {text!r}:\n{self.stderr()}")
            time.sleep(0.01)

    def stop(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        return self.p.wait(timeout=10)


def get(port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def stream_completion(port: int, max_tokens: int) -> tuple[float, list[float], dict]:
    """POST a streaming completion; (request time, arrival time of each token, usage)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = {
        "model": "x",
        "prompt": "Hello there",
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    t_req = time.monotonic()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    arrivals: list[float] = []
    usage: dict = {}
    done = False
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if chunk["choices"]:
            arrivals.append(time.monotonic())
        if chunk.get("usage"):
            usage = chunk["usage"]
    c.close()
    assert done
    return t_req, arrivals, usage


def test_start_health_and_generation(tmp_path: Path) -> None:
    port = free_port()
    rate = 200.0
    p = Proc(
        ["--model-path", "/tmp/x", "--tp", "8", "--port", str(port), *SEED_SPEC[:4]],
        tmp_path,
        STANDIN_INIT_S="0.1",
        STANDIN_LOAD_S="1.2",
        STANDIN_GRAPH_S="0.3",
        STANDIN_WARMUP_S="1.0",
        STANDIN_TOKENS_PER_S=str(rate),
    )
    try:
        # Port not bound while weights load (1.2 s from this line on).
        p.wait_for_line(say("ms-load-begin", avail="138.96"))
        with pytest.raises(ConnectionRefusedError):
            get(port, "/health")
        # First answer is 503 (warm-up), then 200.
        seen: list[int] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                code, _ = get(port, "/health")
            except ConnectionRefusedError:
                time.sleep(0.05)
                continue
            if not seen or seen[-1] != code:
                seen.append(code)
            if code == 200:
                break
            time.sleep(0.05)
        assert seen == [503, 200]

        code, body = get(port, "/server_info")
        info = json.loads(body)
        assert code == 200
        assert info["model_path"] == "/tmp/x"
        assert info["tp_size"] == 8
        assert info["speculative_algorithm"] == "EAGLE3"
        # Nothing set: SGLang auto-chooses (3, 1, 4) for the DeepSeek-V3 family.
        assert (
            info["speculative_num_steps"],
            info["speculative_eagle_topk"],
            info["speculative_num_draft_tokens"],
        ) == (3, 1, 4)
        assert info["internal_states"][0]["avg_spec_accept_length"] == 2.6
        assert info["version"] == "0.5.23"
        code, body = get(port, "/v1/models")
        assert code == 200 and json.loads(body)["data"][0]["id"] == "/tmp/x"

        # Two concurrent streams, each at the configured rate.
        results: list[tuple[float, list[float], dict]] = []
        ts = [
            threading.Thread(target=lambda: results.append(stream_completion(port, 100)))
            for _ in range(2)
        ]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(results) == 2
        for t_req, arrivals, usage in results:
            assert len(arrivals) == 100
            assert usage["completion_tokens"] == 100
            measured = len(arrivals) / (arrivals[-1] - t_req)
            assert abs(measured - rate) / rate < 0.05, measured
    finally:
        rc = p.stop()
    assert rc == 0
    err = p.stderr()
    order = [
        "server_args={'model_path': '/tmp/x'",
        "TP7] " + say("ms-init-begin"),
        "TP0] " + lead("ms-load-begin"),
        "TP0] " + lead("ms-load-end"),
        "TP0] " + lead("ms-kv-cache", dtype="torch.bfloat16"),
        "TP0] " + lead("ms-memory-pool"),
        "TP0] " + lead("ms-graph-begin", name="target verify"),
        "TP0] " + lead("ms-graph-begin", name="draft decode"),
        "TP0] " + lead("ms-graph-end", name="draft extend"),
        "INFO:     Uvicorn running on http://127.0.0.1:",
        say("ms-ready"),
        "INFO:     Finished server process",
    ]
    pos = [err.find(s) for s in order]
    assert all(x >= 0 for x in pos), list(zip(order, pos, strict=True))
    assert pos == sorted(pos)


def test_unknown_flag_exits_2(tmp_path: Path) -> None:
    p = Proc(["--model-path", "/tmp/x", "--no-such-flag"], tmp_path)
    assert p.p.wait(timeout=10) == 2
    assert "sglang serve: error: unrecognized arguments: --no-such-flag" in p.stderr()


def test_seed_flags_assertion(tmp_path: Path) -> None:
    p = Proc(["--model-path", "/tmp/x", "--tp", "8", *SEED_SPEC], tmp_path)
    assert p.p.wait(timeout=10) == 1
    assert time.monotonic() - p.t0 < 1.0
    err = p.stderr()
    assert err.rstrip("\n").endswith("\nAssertionError")
    assert "Traceback (most recent call last):" in err
    assert '/sglang/srt/arg_groups/speculative_hook.py", line 1162, in _handle_eagle_family' in err
    assert "server_args=" not in err  # resolution fails before the engine starts


@pytest.mark.parametrize(
    ("extra", "last"),
    [
        (
            ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"],
            said("spec-steps-need-topk"),
        ),
        (
            ["--speculative-algorithm", "bogus"],
            said("spec-unknown-algorithm", name="BOGUS"),
        ),
    ],
)
def test_other_spec_rejections(tmp_path: Path, extra: list[str], last: str) -> None:
    p = Proc(["--model-path", "/tmp/x", *extra], tmp_path)
    assert p.p.wait(timeout=10) == 1
    assert p.stderr().rstrip("\n").endswith(last)


def test_oom_dies_by_sigkill(tmp_path: Path) -> None:
    p = Proc(
        ["--model-path", "/tmp/x", "--tp", "8", "--port", str(free_port())],
        tmp_path,
        STANDIN_FAIL="oom",
        STANDIN_LOAD_S="0.2",
    )
    assert p.p.wait(timeout=10) == -signal.SIGKILL
    err = p.stderr()
    assert "TP7] Load weight end." in err
    assert (
        "TP3] " + say("scheduler-exception", traceback="Traceback (most recent call last):") in err
    )
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in err
    assert "GPU 3 has a total capacity of" in err
    assert say("sigquit") in err
    assert err.rstrip().endswith(f"include_parent=True, pid={p.p.pid}")


def test_hang_never_binds(tmp_path: Path) -> None:
    port = free_port()
    p = Proc(["--model-path", "/tmp/x", "--port", str(port)], tmp_path, STANDIN_FAIL="hang")
    try:
        p.wait_for_line(say("ms-load-begin", avail="138.96"))
        assert p.p.poll() is None
        with pytest.raises(ConnectionRefusedError):
            get(port, "/health")
        assert p.stderr().rstrip().endswith(say("ms-load-begin", avail="138.96"))
    finally:
        p.p.kill()
        p.p.wait()


def test_graph_failure(tmp_path: Path) -> None:
    p = Proc(
        ["--model-path", "/tmp/x", "--tp", "4", "--port", str(free_port())],
        tmp_path,
        STANDIN_FAIL="graph",
        STANDIN_LOAD_S="0.1",
    )
    assert p.p.wait(timeout=10) == -signal.SIGKILL
    err = p.stderr()
    assert lead("ms-graph-begin", name="target decode") in err
    assert said("cuda-graph-capture-failed", error="CUDA error: out of memory") in err
    assert "During handling of the above exception, another exception occurred:" in err


# ---- the performance model (STANDIN_PERF) ------------------------------------------------------


def _spec_args(port: int, steps: int, topk: int, draft: int) -> list[str]:
    return [
        *("--model-path", "/tmp/x", "--tp", "8", "--port", str(port)),
        *("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d"),
        *("--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk)),
        *("--speculative-num-draft-tokens", str(draft)),
    ]


def test_performance_model_math() -> None:
    from tests.standin.sglang._perf import Model

    m = Model()  # alpha 0.7 to depth 3, then 0.35; 10 ms forward up to 4 tokens; 1 ms a draft step
    assert m.accept_length(None, None, None) == 1.0
    assert m.accept_length(3, 1, 4) == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    assert m.accept_length(5, 1, 6) == pytest.approx(2.533 + 0.343 * 0.35 + 0.343 * 0.35**2)
    # a tree offers more candidates per depth: more accepted than the chain of the same depth
    assert m.accept_length(3, 2, 7) > m.accept_length(3, 1, 4)
    assert m.step_ms(1, 3, 1, 4) == pytest.approx(10 + 3 * 1)
    assert m.step_ms(4, 3, 1, 4) == pytest.approx(10 * 4 + 3 * 1)  # 16 verify tokens: 4x
    assert m.tokens_per_s(1, None, None, None) == pytest.approx(100.0)
    # One request: 3 steps win; four in flight: the verify cost grows, 1 step wins, and
    # without speculation it is faster still (what a tune is for).
    assert max((1, 3, 5), key=lambda s: m.throughput(1, s, 1, s + 1)) == 3
    assert max((1, 3, 5), key=lambda s: m.throughput(4, s, 1, s + 1)) == 1
    assert m.throughput(4, None, None, None) > m.throughput(4, 1, 1, 2)
    assert Model.from_env({"STANDIN_PERF_ALPHA": "0.9", "STANDIN_PERF_KNEE": "8"}) == Model(
        alpha=0.9, knee=8.0
    )


def test_perf_model_serves_the_models_speed_and_accept_length(tmp_path: Path) -> None:
    from tests.standin.sglang._perf import Model

    port = free_port()
    p = Proc(
        _spec_args(port, 3, 1, 4),
        tmp_path,
        STANDIN_PERF="1",
        STANDIN_READY_DELAY_S="0.3",
        STANDIN_WARMUP_S="0.1",
    )
    try:
        while True:
            try:
                if get(port, "/health")[0] == 200:
                    break
            except ConnectionRefusedError:
                pass
            assert p.p.poll() is None, p.stderr()
            time.sleep(0.05)
        info = json.loads(get(port, "/server_info")[1])
        want = Model().accept_length(3, 1, 4)
        assert info["internal_states"][0]["avg_spec_accept_length"] == pytest.approx(want, abs=1e-4)
        _, arrivals, usage = stream_completion(port, 40)
        assert usage["completion_tokens"] == 40
        gaps = sorted(b - a for a, b in itertools.pairwise(arrivals))
        rate = 1.0 / gaps[len(gaps) // 2]  # one request in flight: the model's batch-1 speed
        assert rate == pytest.approx(Model().tokens_per_s(1, 3, 1, 4), rel=0.1)
    finally:
        p.stop()


def test_too_many_draft_tokens_die_in_graph_capture(tmp_path: Path) -> None:
    p = Proc(
        _spec_args(free_port(), 7, 1, 8),
        tmp_path,
        STANDIN_MAX_DRAFT="6",
        STANDIN_LOAD_S="0.1",
    )
    assert p.p.wait(timeout=10) == -signal.SIGKILL
    err = p.stderr()
    assert (
        say("ms-graph-begin", name="target verify", detail="backend=full, num_tokens_per_req=8")
        in err
    )
    assert said("cuda-graph-capture-failed", error="CUDA error: out of memory") in err


def test_seed_flags_on_the_older_release(tmp_path: Path) -> None:
    """STANDIN_SGLANG_VERSION picks the imitated release: 0.5.11 asserts in server_args.py's
    _handle_speculative_decoding, while parsing (no resolve_once), and deploy's classifier
    names the same cause from that traceback."""
    from orchestrator.diagnosis.diagnose import classify_text

    p = Proc(
        ["--model-path", "/tmp/x", "--tp", "8", *SEED_SPEC],
        tmp_path,
        STANDIN_SGLANG_VERSION="0.5.11",
    )
    assert p.p.wait(timeout=10) == 1
    err = p.stderr()
    assert err.rstrip("\n").endswith("\nAssertionError")
    assert '/sglang/srt/server_args.py", line 3521, in _handle_speculative_decoding' in err
    assert "resolve_once" not in err and "speculative_hook.py" not in err
    assert classify_text(err).category == "spec-params-need-num-steps"
