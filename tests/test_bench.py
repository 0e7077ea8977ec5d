"""`deploy bench` against the SGLang stand-in (tests/standin/), a plain subprocess (no systemd).

The stand-in sends token i of a request at (request start + i / STANDIN_TOKENS_PER_S), so the
truth is known: a request of n tokens has TTFT = 1/rate + overhead, inter-token gaps of
exactly 1/rate, decode speed (n - 1) / (latency - TTFT) = rate, and a latency of
n/rate + overhead; `concurrency` slots busy back to back give c * n / latency, i.e.
c * rate less the overhead's share (a few ms in 500 ms).
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.errors import InputError
from orchestrator.perf import bench

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "standin" / "python"
REFERENCE = ROOT / "bench" / "reference" / "kimi-k26-baseline.json"
RATE = 200.0
ACCEPT = 2.6
OUT_LEN = 100
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
LOGS: dict[str, Path] = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A stand-in EAGLE-3 server at 200 tok/s per request, accept length 2.6."""
    port = free_port()
    logs = tmp_path_factory.mktemp("standin")
    LOGS["dir"] = logs
    env = dict(
        os.environ,
        STANDIN_TOKENS_PER_S=str(RATE),
        STANDIN_ACCEPT_LEN=str(ACCEPT),
        STANDIN_READY_DELAY_S="0.6",
        STANDIN_INIT_S="0.05",
        STANDIN_GRAPH_S="0.05",
        STANDIN_WARMUP_S="0.2",
        STANDIN_EMIT_LOG=str(logs / "emit.jsonl"),
    )
    args = [
        *("--model-path", "/tmp/x", "--tp", "8", "--port", str(port)),
        *("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d"),
        *("--speculative-num-steps", "3", "--speculative-eagle-topk", "1"),
        *("--speculative-num-draft-tokens", "4"),
    ]
    with (logs / "out.log").open("wb") as o, (logs / "err.log").open("wb") as e:
        p = subprocess.Popen(
            [str(STANDIN), "-m", "sglang.launch_server", *args], stdout=o, stderr=e, env=env
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                    break
            except OSError:
                pass
            if p.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"stand-in did not become healthy:\n{(logs / 'err.log').read_text()}")
            time.sleep(0.05)
        yield url
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)


def close(x: float | None, want: float, rel: float) -> bool:
    return x is not None and abs(x - want) <= rel * want


@dataclass(frozen=True)
class Sent:
    """What the stand-in did for one level: per request, when it arrived and when each token
    went out (CLOCK_MONOTONIC, the same clock bench reads): the truth bench is held to, so
    the checks hold however slowly a loaded machine lets the stand-in emit."""

    requests: list[dict[str, Any]]

    @property
    def decode_tok_s(self) -> float:
        rates = [(len(r["sent"]) - 1) / (r["sent"][-1] - r["sent"][0]) for r in self.requests]
        return sum(rates) / len(rates)

    @property
    def tok_s(self) -> float:
        span = max(r["sent"][-1] for r in self.requests) - min(r["arrived"] for r in self.requests)
        return sum(len(r["sent"]) for r in self.requests) / span

    @property
    def gap_p50_s(self) -> float:
        return statistics.median(
            b - a for r in self.requests for a, b in itertools.pairwise(r["sent"])
        )


def _sent_during(
    emit: Path, run: Callable[[], bench.LevelResult]
) -> tuple[bench.LevelResult, Sent]:
    emit.write_text("")
    level = run()
    done = [json.loads(ln) for ln in emit.read_text().splitlines()]
    # bench.run warms the server up with one request first: the level is the last ones
    return level, Sent(done[len(done) - level.requests :])


@pytest.fixture(scope="module")
def measured(server: str) -> tuple[bench.BenchRun, dict[int, Sent]]:
    # Level 1: 4 requests back to back (2 s); level 4: 8 requests, two rounds (1 s).
    emit = LOGS["dir"] / "emit.jsonl"
    runs: dict[str, bench.BenchRun] = {}

    def one() -> bench.LevelResult:
        runs["1"] = asyncio.run(
            bench.run(server, [1], requests=4, input_len=64, output_len=OUT_LEN)
        )
        return runs["1"].levels[0]

    def four() -> bench.LevelResult:
        return asyncio.run(
            bench.run_level(
                server, model=runs["1"].model or "", concurrency=4, requests=8, input_len=64,
                output_len=OUT_LEN, on_progress=None,
            )
        )  # fmt: skip

    lv1, sent1 = _sent_during(emit, one)
    lv4, sent4 = _sent_during(emit, four)
    run = bench.BenchRun(**{**runs["1"].__dict__, "levels": (lv1, lv4)})
    return run, {1: sent1, 4: sent4}


def test_levels_match_what_the_server_sent(
    measured: tuple[bench.BenchRun, dict[int, Sent]],
) -> None:
    run, sent = measured
    assert run.model == "/tmp/x"
    assert run.speculative_algorithm == "EAGLE3"
    assert run.server["tp_size"] == 8
    assert [lv.concurrency for lv in run.levels] == [1, 4]
    for lv in run.levels:
        c, truth = lv.concurrency, sent[lv.concurrency]
        assert len(truth.requests) == lv.requests, truth
        assert (lv.ok, lv.errors) == (lv.requests, 0), lv.error_samples
        assert lv.output_tokens == lv.requests * OUT_LEN  # usage.completion_tokens, ignore_eos
        assert all(len(r["sent"]) == OUT_LEN for r in truth.requests)
        # Decode speed of one request, (n - 1) / (latency - TTFT): what the server's own send
        # times give; at most its nominal rate (sends are paced, never early).
        assert close(lv.per_request_tok_s, truth.decode_tok_s, 0.05), (truth.decode_tok_s, lv)
        assert truth.decode_tok_s <= RATE * 1.01
        # Throughput, all tokens / level wall time. The level's wall holds the server's span
        # (first request's arrival to last token sent) and the client's own edges (sending
        # before the arrival, reading after the send), so it is never faster than the server;
        # how much slower depends on how the machine schedules the client (5.2 % on a loaded
        # two-core box), so the lower bound only catches a wrong count or a wrong clock.
        assert close(lv.output_tok_s, lv.output_tokens / lv.wall_s, 0.001), lv
        assert lv.output_tok_s <= truth.tok_s * 1.001, (truth.tok_s, lv)
        assert lv.output_tok_s >= truth.tok_s * 0.75, (truth.tok_s, lv)
        assert lv.output_tok_s <= c * RATE * 1.02, lv
        # ... and never above c slots at the measured decode speed (TTFT only costs).
        assert lv.output_tok_s <= c * lv.per_request_tok_s * 1.01, lv
        # Tokens apart by what the server's gaps were (1 / rate when the machine keeps up).
        assert close(lv.itl_p50_ms, 1000.0 * truth.gap_p50_s, 0.10), (truth.gap_p50_s, lv)
        assert lv.itl_p99_ms >= lv.itl_p50_ms
        # First token no sooner than 1 / rate after the request arrives.
        assert 1000.0 / RATE <= lv.ttft_p50_ms <= lv.ttft_p99_ms, lv
        # SGLang's /server_info accept length, and sglext per request (100 tokens / 38 verifies).
        assert lv.accept_length == ACCEPT
        assert close(lv.request_accept_length, OUT_LEN / round(OUT_LEN / ACCEPT), 0.001)


def test_conversations_go_to_chat_completions_with_their_lengths(
    server: str, tmp_path: Path
) -> None:
    from orchestrator.perf import datasets

    rows = [
        {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "x" * (4 * n)}]}
        for i, n in enumerate((3, 5, 9, 40, 6, 7))
    ]  # fmt: skip
    path = tmp_path / "conv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    ds = datasets.load(str(path))
    before = (LOGS["dir"] / "out.log").read_text().count("POST /v1/chat/completions")
    run = asyncio.run(bench.run(server, [1, 2], requests=2, output_len=20, dataset=ds, seed=3))
    want = datasets.sample(ds, [2, 2], seed=3, input_len=1024, output_len=20)
    for lv, items in zip(run.levels, want, strict=True):
        assert (lv.ok, lv.errors) == (2, 0), lv.error_samples
        # ignore_eos: exactly max_tokens each, the answer's length capped at --output-len
        assert lv.output_tokens == sum(it.output_len for it in items)
    assert {it.output_len for level in want for it in level} <= {3, 5, 9, 20, 6, 7}
    assert run.dataset is not None and run.dataset["name"] == str(path) and run.seed == 3
    assert run.dataset["requests"] == 4 and run.warnings == []  # accept 2.6: no warning
    sent = (LOGS["dir"] / "out.log").read_text().count("POST /v1/chat/completions")
    assert sent - before == 5  # 4 measured + 1 warm-up, all chat
    assert bench.BenchRun.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_low_accept_length_warns_for_eagle_only() -> None:
    levels = (
        bench.LevelResult(concurrency=1, output_tok_s=10.0, accept_length=1.31),
        bench.LevelResult(concurrency=8, output_tok_s=70.0, accept_length=2.2),
    )
    run = bench.BenchRun(profile="p", levels=levels, speculative_algorithm="EAGLE3")
    (w,) = bench.accept_warnings(run)
    assert "1.31 at concurrency 1" in w and "below 1.5" in w and "drafter" in w
    assert bench.accept_warnings(bench.BenchRun(profile="p", levels=levels)) == []


def test_progress_is_reported_per_request(server: str) -> None:
    seen: list[tuple[int, int]] = []
    lv = asyncio.run(
        bench.run_level(
            server, model="x", concurrency=2, requests=2, input_len=8, output_len=10,
            on_progress=lambda done, total: seen.append((done, total)),
        )
    )  # fmt: skip
    assert seen == [(1, 2), (2, 2)]
    assert lv.ok == 2 and lv.output_tokens == 20


def test_unhealthy_or_unreachable_server_is_input_error() -> None:
    port = free_port()
    with pytest.raises(InputError) as e:
        asyncio.run(bench.run(f"http://127.0.0.1:{port}", [1]))
    assert e.value.exit_code == 2 and e.value.field == "--base-url"
    assert "not reachable" in e.value.paragraph() and "deploy up" in e.value.paragraph()

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with pytest.raises(InputError) as e:
            asyncio.run(bench.run(f"http://127.0.0.1:{srv.server_address[1]}", [1]))
        assert "not healthy (/health answered 503)" in e.value.paragraph()
    finally:
        srv.shutdown()
        srv.server_close()


# ---- save, history, compare ------------------------------------------------------------------


def test_save_and_history_round_trip(
    measured: tuple[bench.BenchRun, dict[int, Sent]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = measured[0]
    monkeypatch.setenv("DEPLOY_STATE_DIR", str(tmp_path))
    state = bench.state_dir(None)
    assert state == tmp_path
    assert bench.state_dir(tmp_path / "given") == tmp_path / "given"
    first = bench.save(run, state)
    second = bench.save(run, state)
    assert first.parent == tmp_path / "adhoc" / "bench"
    assert first.name.endswith("Z.json") and second != first
    (first.parent / "junk.json").write_text("{not json")
    runs = bench.history(state, "adhoc")
    assert runs == [run, run]
    assert bench.BenchRun.from_json(json.loads(first.read_text())) == run
    assert bench.history(state, "other") == []
    assert bench.resolve_other("adhoc", state) == run


def test_reference_baseline_file() -> None:
    ref = bench.load_file(REFERENCE)
    data = json.loads(REFERENCE.read_text())
    assert "reference box, measured by hand, not by this tool" in data["note"]
    assert ref.speculative_algorithm is None
    assert [(lv.concurrency, lv.output_tok_s) for lv in ref.levels] == [(1, 26.3), (32, 807.5)]


def _run(profile: str, algo: str | None, points: dict[int, float]) -> bench.BenchRun:
    levels = tuple(bench.LevelResult(concurrency=c, output_tok_s=t) for c, t in points.items())
    return bench.BenchRun(profile=profile, levels=levels, speculative_algorithm=algo)


def test_compare_math() -> None:
    a = _run("kimi-k26-eagle3", "EAGLE3", {1: 65.75, 8: 400.0, 32: 1211.25})
    b = bench.load_file(REFERENCE)
    assert bench.compare(a, b) == [
        {"concurrency": 1, "a_tok_s": 65.75, "b_tok_s": 26.3, "speedup": 2.5},
        {"concurrency": 8, "a_tok_s": 400.0, "b_tok_s": None, "speedup": None},
        {"concurrency": 32, "a_tok_s": 1211.25, "b_tok_s": 807.5, "speedup": 1.5},
    ]
    assert bench.compare(b, a)[0]["speedup"] == round(26.3 / 65.75, 3)


def test_percentile_matches_numpy_linear() -> None:
    assert bench.percentile([], 50) is None
    assert bench.percentile([3.0], 99) == 3.0
    assert bench.percentile([1, 2, 3, 4], 50) == 2.5
    assert bench.percentile(list(range(101)), 99) == 99
    assert bench.percentile([10, 20], 99) == pytest.approx(19.9)


# ---- plot ---------------------------------------------------------------------------------------


def test_plot_writes_a_png(tmp_path: Path) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if IN_CI:
            pytest.fail("matplotlib is missing in CI: install the bench extra (deploy[bench])")
        pytest.skip("matplotlib not installed (pip install 'deploy[bench]')")
    out = bench.plot(
        [_run("a", "EAGLE3", {1: 65.0, 8: 400.0, 32: 1200.0}), bench.load_file(REFERENCE)],
        tmp_path / "sub" / "bench.png",
    )
    raw = out.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert raw[12:16] == b"IHDR"
    width, height = struct.unpack(">II", raw[16:24])
    assert width > 200 and height > 200
    assert raw[-8:-4] == b"IEND"


def test_plot_without_matplotlib_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(InputError) as e:
        bench.plot([_run("a", None, {1: 1.0})], tmp_path / "x.png")
    assert e.value.field == "--plot"
    assert "pip install 'deploy[bench]'" in e.value.paragraph()
    assert not (tmp_path / "x.png").exists()


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "1,x", "0", "-1", "1.5", "8,,32", "5000"])
def test_bad_concurrency_names_the_option(text: str) -> None:
    with pytest.raises(InputError) as e:
        bench.parse_concurrency(text)
    assert e.value.field == "--concurrency" and e.value.exit_code == 2
    assert "--concurrency 1,8,32" in e.value.paragraph()


def test_concurrency_list_is_sorted_and_unique() -> None:
    assert bench.parse_concurrency(" 32, 1,8,8 ") == [1, 8, 32]


@pytest.mark.parametrize(
    ("levels", "requests", "input_len", "output_len", "option"),
    [
        ([1, 8, 32], 16, 1024, 256, "--requests"),
        ([1], 0, 1024, 256, "--requests"),
        ([1], 10**9, 1024, 256, "--requests"),
        ([1], None, 0, 256, "--input-len"),
        ([1], None, 10**9, 256, "--input-len"),
        ([1], None, 1024, 1, "--output-len"),
        ([1], None, 1024, -5, "--output-len"),
        ([0], None, 1024, 256, "--concurrency"),
        ([], None, 1024, 256, "--concurrency"),
    ],
)
def test_bad_numbers_name_the_option(
    levels: list[int], requests: int | None, input_len: int, output_len: int, option: str
) -> None:
    with pytest.raises(InputError) as e:
        bench.check_inputs(levels, requests, input_len, output_len)
    assert e.value.field == option
    assert e.value.paragraph().startswith(option) and "Fix:" in e.value.paragraph()


def test_bad_compare_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"levels": "no"}')
    for ref in (str(bad), str(tmp_path / "missing.json"), "no-saved-runs"):
        with pytest.raises(InputError) as e:
            bench.resolve_other(ref, tmp_path)
        assert e.value.field == "--compare"


# ---- the command --------------------------------------------------------------------------------


def _app() -> typer.Typer:
    from orchestrator.cli.bench import bench_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("bench")(bench_cmd)
    app.command("other")(lambda: None)  # two commands: `bench` stays a subcommand
    return app


def test_cli_run_compare_history_plot(server: str, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["--base-url", server, "--state-dir", str(tmp_path)]
    args = ["bench", "mybox", *common, "--concurrency", "1,2", "--requests", "2"]
    args += ["--input-len", "16", "--output-len", "20", "--compare", str(REFERENCE)]
    r = runner.invoke(_app(), [*args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert Path(out["saved"]).parent == tmp_path / "mybox" / "bench"
    assert [lv["ok"] for lv in out["run"]["levels"]] == [2, 2]
    rows = out["compare"]["rows"]
    assert [row["concurrency"] for row in rows] == [1, 2, 32]
    assert rows[0]["b_tok_s"] == 26.3 and rows[0]["speedup"] > 1
    assert "concurrency" not in r.stderr  # no progress bars with --json

    assert out["run"]["dataset"]["name"] == "sharegpt" and out["run"]["seed"] == 0

    r = runner.invoke(_app(), [*args, "--dataset", "random"])
    assert r.exit_code == 0, r.output
    assert "warning: --dataset random" in r.stdout and "not representative" in r.stdout
    head = r.stdout.splitlines()[1].split()
    assert head[:3] == ["concurrency", "ok", "out"] and "accept" in head
    assert "speedup A/B" in r.stdout and "measured by hand" in r.stdout

    hist = runner.invoke(_app(), ["bench", "mybox", "--state-dir", str(tmp_path), "--history"])
    assert hist.exit_code == 0, hist.output
    assert len(hist.stdout.strip().splitlines()) == 3  # header + two runs

    r = runner.invoke(_app(), [*args, "--dataset", str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 2 and r.stderr.startswith("deploy: --dataset"), r.output


def test_cli_bad_input_exit_2_without_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    for extra, option in (
        (["--concurrency", "1,zero"], "--concurrency"),
        (["--concurrency", "8", "--requests", "2"], "--requests"),
        (["--output-len", "0"], "--output-len"),
        (["--base-url", "localhost:1"], "--base-url"),
    ):
        args = ["bench", "mybox", "--base-url", "http://127.0.0.1:1", *extra]
        r = runner.invoke(_app(), [*args, "--state-dir", str(tmp_path)])
        assert r.exit_code == 2, (extra, r.output)
        assert r.stderr.startswith(f"deploy: {option}"), r.stderr
        assert "Traceback" not in r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)
    port = free_port()
    r = runner.invoke(
        _app(),
        ["bench", "mybox", "--base-url", f"http://127.0.0.1:{port}", "--state-dir", str(tmp_path)],
    )
    assert r.exit_code == 2 and "is not reachable" in r.stderr
    assert not (tmp_path / "mybox" / "bench").exists() or not any(
        (tmp_path / "mybox" / "bench").iterdir()
    )
