"""`deploy tune` end to end: a real systemd (PID 1) in the box, the SGLang stand-in with its
performance model (tests/standin/sglang/_perf.py) as the server, so the optimum is known.

A small sweep (4 candidates, 1 s loads) finds the best settings per concurrency, prunes what
preflight refuses before any restart, survives a candidate that dies in CUDA graph capture,
and goes back to the release it started from. Another is interrupted (SIGINT, SIGKILL) once
its first result is saved, and --resume finishes it without running that one again.
"""

from __future__ import annotations

import json
import signal
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator import profiles
from tests.box import Box
from tests.e2e import RUN_DIR, box_pid, deploy, prepare, profile, start_deploy
from tests.standin.sglang._perf import Model

pytestmark = pytest.mark.box

OUT_LEN = 32
PERF_ENV = {
    "STANDIN_PERF": "1",  # the model's defaults: 10 ms a forward up to 4 tokens, alpha 0.7
    "STANDIN_READY_DELAY_S": "1.0",
    "STANDIN_INIT_S": "0.05",
    "STANDIN_GRAPH_S": "0.1",
    "STANDIN_WARMUP_S": "0.2",
    "STANDIN_MAX_DRAFT": "6",  # 7 steps (8 draft tokens) die in graph capture
}
SPEC_KEYS = (
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_draft_attention_backend",
)


@pytest.fixture(scope="module")
def prepared(box: Box) -> Box:
    prepare(box)
    return box


@pytest.fixture
def sbox(prepared: Box, clean_box: Box) -> Box:
    """The prepared box; units the test leaves behind are stopped even when it fails."""
    return prepared


def _conversations() -> str:
    """Conversations whose answers are longer than OUT_LEN: every request generates exactly
    OUT_LEN tokens, so the levels compare like for like."""
    RUN_DIR.mkdir(exist_ok=True)
    path = RUN_DIR / "tune-conversations.jsonl"
    rows = [
        {
            "messages": [
                {"role": "user", "content": f"Explain topic number {i} in a few paragraphs."},
                {"role": "assistant", "content": "A long answer. " * 40},
            ]
        }
        for i in range(16)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def _sweep_file(box: Box, name: str) -> dict[str, Any] | None:
    out = box.run(["sh", "-c", f"cat /var/lib/deploy/{name}/tune/*.json 2>/dev/null"]).stdout
    return json.loads(out) if out.strip() else None


def _settings(steps: int, topk: int = 1, adaptive: bool = False) -> dict[str, Any]:
    return {
        "speculative_num_steps": steps,
        "speculative_eagle_topk": topk,
        "speculative_num_draft_tokens": steps + 1,
        "speculative_adaptive": adaptive,
    }


def test_sweep_finds_the_optimum_prunes_and_survives_a_failing_candidate(
    sbox: Box, box_port: int
) -> None:
    p = profile("tune-a", port=box_port, env=PERF_ENV, timeout_s=30)
    up = deploy(sbox, "up", p)
    assert up.rc == 0, up.stdout + up.stderr
    model = Model()
    baseline = RUN_DIR / "tune-a-baseline.json"
    baseline.write_text(
        json.dumps(
            {
                "profile": "tune-a-autoregressive",
                "levels": [
                    {
                        "concurrency": c,
                        "output_tok_s": round(model.throughput(c, None, None, None), 1),
                    }
                    for c in (1, 4)
                ],
                "note": "the stand-in's model without speculation",
            }
        )
    )
    written, plot = RUN_DIR / "tune-a-best.toml", RUN_DIR / "tune-a.png"
    for f in (written, plot):
        f.unlink(missing_ok=True)
    args = ["tune", p, "--steps", "1,3,5,7", "--topk", "1,2", "--draft-tokens", "4"]
    args += ["--no-adaptive", "--concurrency", "1,4", "--requests", "4"]
    args += ["--dataset", _conversations(), "--output-len", str(OUT_LEN)]
    args += ["--compare", str(baseline), "--write", str(written), "--plot", str(plot)]
    r = deploy(sbox, *args, "--json", timeout=240)
    print(f"\ntune of 8 settings (4 pruned, 4 run, 1 failing), 1 s loads: {r.seconds:.1f} s wall")
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json()

    # Pruned before any restart: on b200 trtllm_mla forces page size 64, no top-k > 1.
    assert out["grid"] == {
        "size": 8,
        "pruned": 4,
        "pruned_by_rule": {"spec-tree-page-size-backend": 3, "spec-draft-tokens-range": 1},
        "run": 4,
    }
    cands = out["candidates"]
    ran = [c for c in cands if c["outcome"] != "pruned"]
    # The deployed settings first (no restart: already serving), then by draft tokens.
    assert [c["settings"] for c in ran] == [_settings(3), _settings(1), _settings(5), _settings(7)]
    assert [c["outcome"] for c in ran] == ["measured", "measured", "measured", "failed"]
    assert ran[0]["load_s"] is None and ran[0]["release"] == 1
    assert all(c["load_s"] and c["load_s"] < 10 for c in ran[1:])
    failed = ran[3]
    assert failed["diagnosis"]["category"] == "cuda-oom", failed["reason"]
    assert "cuda-oom" in failed["reason"]
    assert {c["settings"]["speculative_eagle_topk"] for c in cands if c["outcome"] == "pruned"} == {
        2
    }

    # Each measured level is the model's: throughput within 15 % (the HTTP round trip only
    # costs), accept length exactly.
    for c in ran[:3]:
        s = c["settings"]["speculative_num_steps"]
        for lv in c["levels"]:
            want = model.throughput(lv["concurrency"], s, 1, s + 1)
            assert 0.85 * want <= lv["output_tok_s"] <= 1.03 * want, (s, lv, want)
            assert lv["accept_length"] == pytest.approx(model.accept_length(s, 1, s + 1), abs=1e-3)
            assert (lv["ok"], lv["errors"]) == (4, 0)
    # The optimum the model says, among what started: 3 steps alone, 1 step at four.
    for conc in (1, 4):
        truth = max((1, 3, 5), key=lambda s, c=conc: model.throughput(c, s, 1, s + 1))
        assert out["best"][str(conc)]["settings"] == _settings(truth)
    assert (out["best"]["1"]["settings"], out["best"]["4"]["settings"]) == (
        _settings(3),
        _settings(1),
    )
    assert out["best"]["1"]["speedup"] > 1.5 and out["best"]["4"]["speedup"] < 1.0

    # Back on the release it started from; the winner at 4 in flight written as a profile.
    assert out["end"]["action"] == "restored" and out["end"]["to_release"] == 1
    assert out["end"]["outcome"] == "healthy"
    st = deploy(sbox, "status", "tune-a", "--json").json()[0]
    assert st["health"]["status"] == 200 and st["server"]["speculative_num_steps"] == 3
    hist = deploy(sbox, "history", "tune-a", "--json").json()["releases"]
    assert [h["outcome"] for h in hist] == ["healthy", "healthy", "healthy", "failed", "healthy"]
    assert hist[-1]["note"].startswith("rollback to release 1")
    best = profiles.load(str(written))
    assert best.name == "tune-a" and best.server["speculative_num_steps"] == 1
    assert best.server["port"] == box_port  # extends the tuned profile
    raw = plot.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", raw[16:24])[0] > 200

    # The text form of the same sweep file (nothing re-run: --resume finds no unfinished one).
    again = deploy(sbox, "tune", p, "--resume")
    assert again.rc == 2 and "no unfinished sweep" in again.stderr


@pytest.mark.parametrize(
    ("sig", "conc", "apply"), [(signal.SIGINT, 1, False), (signal.SIGKILL, 4, True)]
)
def test_interrupted_sweep_resumes_without_repeating_a_candidate(
    sbox: Box, box_port: int, sig: signal.Signals, conc: int, apply: bool
) -> None:
    """SIGINT: resumed, then back to the starting release. SIGKILL: resumed with --apply at
    four in flight, where 1 step wins: the last candidate run, so nothing restarts."""
    name = f"tune-{sig.name.lower()}"
    p = profile(name, port=box_port, env=PERF_ENV, timeout_s=30)
    up = deploy(sbox, "up", p)
    assert up.rc == 0, up.stdout + up.stderr
    sbox.run(["sh", "-c", f"rm -rf /var/lib/deploy/{name}/tune"])
    base = profile(
        f"{name}-base",
        port=box_port,
        env=PERF_ENV,
        timeout_s=30,
        unset=[f"server.{k}" for k in SPEC_KEYS],
    )
    args = ["tune", p, "--steps", "1,3", "--topk", "1", "--draft-tokens", "4", "--no-adaptive"]
    args += ["--concurrency", str(conc), "--requests", str(max(2, conc))]
    args += ["--dataset", _conversations()]
    args += ["--output-len", str(OUT_LEN), "--baseline", base]
    pidfile = f"/run/{name}.pid"
    t0 = time.monotonic()
    proc = start_deploy(sbox, *args, pidfile=pidfile)
    pid = box_pid(sbox, pidfile)
    # The event: the sweep file says the baseline (the first entry) is measured.
    saved: dict[str, Any] | None = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        saved = _sweep_file(sbox, name)
        if saved and (saved.get("baseline") or {}).get("outcome") == "measured":
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    else:
        pytest.fail(f"the baseline was never saved: {saved}")
    sbox.run(["kill", f"-{sig.name.removeprefix('SIG')}", str(pid)])
    _, err = proc.communicate(timeout=60)
    assert saved is not None
    first = saved["baseline"]
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted" in err and f"deploy tune {p} --resume" in err, err
    print(f"\n{sig.name} after the baseline ({time.monotonic() - t0:.1f} s in)")

    r = deploy(sbox, "tune", p, "--resume", "--json", *(["--apply"] if apply else []), timeout=180)
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json()
    print(f"--resume finished the sweep in {r.seconds:.1f} s")
    b = out["baseline"]
    # Not run again: the same release, the same finish time, the same figures.
    assert (b["release"], b["finished_at"], b["levels"]) == (
        first["release"],
        first["finished_at"],
        first["levels"],
    )
    model = Model()
    base_tok = model.throughput(conc, None, None, None)
    assert b["levels"][0]["output_tok_s"] == pytest.approx(base_tok, rel=0.15)
    ran = out["candidates"]
    assert [c["settings"] for c in ran] == [_settings(3), _settings(1)]
    assert [c["outcome"] for c in ran] == ["measured", "measured"]
    truth = max((1, 3), key=lambda s: model.throughput(conc, s, 1, s + 1))
    assert truth == (3 if conc == 1 else 1)
    best = out["best"][str(conc)]
    assert best["settings"] == _settings(truth)
    assert best["speedup"] == pytest.approx(
        model.throughput(conc, truth, 1, truth + 1) / base_tok, rel=0.15
    )
    end = out["end"]
    assert end["outcome"] == "healthy"
    if apply:
        assert end["action"] == "applied" and end["settings"] == _settings(1)
        assert end["restarted"] is False and end["release"] == ran[1]["release"]
    else:
        assert end["action"] == "restored" and end["to_release"] == 1
    st = deploy(sbox, "status", name, "--json").json()[0]
    assert st["health"]["status"] == 200
    assert st["server"]["speculative_num_steps"] == truth
    assert Path(out["sweep_file"]).name.endswith(".json")
