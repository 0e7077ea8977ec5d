"""The failure classifier: realistic logs (tests/logs/) in -o json, -o short and -o cat."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import diagnose
from orchestrator.diagnosis.diagnose import (
    Diagnosis,
    classify,
    classify_text,
    troubleshooting_markdown,
)
from orchestrator.diagnosis.journal import JournalEntry, parse_text
from tests.helpers import said, say

LOGS = Path(__file__).resolve().parent / "logs"
ROOT = LOGS.parent.parent
EXPECTED: dict[str, str] = json.loads((LOGS / "expected.json").read_text())
SEED_FLAGS = {
    "speculative_algorithm": "EAGLE3",
    "speculative_eagle_topk": 4,
    "speculative_num_draft_tokens": 3,
}
SEED_FIX = "set --speculative-num-steps (and keep the three consistent) or drop both"
TS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def _fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", LOGS / "make_fixtures.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MF = _fixtures()


def _is_echo(msg: str) -> bool:
    return any(p.regex.search(msg) for p in R.ECHOES)


# --------------------------------------------------------------------------- every fixture


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_category(name: str) -> None:
    text = (LOGS / name).read_text()
    d = classify_text(text)
    assert d.category == EXPECTED[name], d.render_text()
    # the same through the eager path
    assert classify(parse_text(text)).category == EXPECTED[name]
    assert d.evidence, "evidence must never be empty"
    assert len(d.evidence) <= diagnose.MAX_EVIDENCE
    assert d.fix and d.summary and "\n" not in d.summary
    if d.known and d.role == R.CAUSE:
        # the line that names the cause is never an echo
        assert not _is_echo(d.evidence[-1].message), d.render_text()
    json.dumps(d.to_json())  # plain data


def test_every_category_has_a_fixture() -> None:
    """Each category is tested on a log: a fixture built here, a real one (tests/logs/real), or
    a run-time one (tests/logs/runtime, see test_runtime_rules.py)."""
    real = {e["category"] for e in json.loads((LOGS / "real" / "index.json").read_text())}
    runtime = json.loads((LOGS / "runtime" / "expected.json").read_text())
    have = set(EXPECTED.values()) | real | set(runtime.values())
    for r in R.RULES:
        assert r.id in have, f"no fixture and no real log for {r.id}"
    assert "unknown" in have


def test_fixtures_come_in_three_formats() -> None:
    suffixes = {Path(n).suffix for n in EXPECTED}
    assert suffixes == {".log", ".json", ".short"}
    for n in EXPECTED:
        first = (LOGS / n).read_text().splitlines()[0]
        if n.endswith(".json"):
            assert json.loads(first)["__REALTIME_TIMESTAMP"]
        elif n.endswith(".short"):
            assert re.match(r"^[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d\.\d{6} gpu-node-07 ", first)


def test_fixtures_are_current() -> None:
    for name, (category, lines) in MF.CASES.items():
        assert (LOGS / f"{name}.log").read_text() == MF.to_cat(lines), (
            "regenerate: python tests/logs/make_fixtures.py"
        )
        assert EXPECTED[f"{name}.log"] == category


# --------------------------------------------------------------------------- the seed


def test_seed_with_flags_gives_shared_fix() -> None:
    d = classify_text((LOGS / "seed_spec_assert.log").read_text(), flags=SEED_FLAGS)
    assert d.category == "spec-params-need-num-steps"
    assert d.fix == SEED_FIX
    assert d.summary == (
        "speculative_num_steps is unset while --speculative-eagle-topk 4 and "
        "--speculative-num-draft-tokens 3 are set: SGLang then auto-chooses all three and "
        "asserts that top-k and draft tokens are unset (a bare AssertionError)"
    )
    msgs = [e.message for e in d.evidence]
    assert msgs[0] == "Traceback (most recent call last):"
    assert msgs[-1] == "AssertionError"
    assert any("in _handle_eagle_family" in m for m in msgs)
    assert any("speculative_num_draft_tokens is None" in m for m in msgs)
    assert d.preflight_rule == "spec-params-need-num-steps"


def test_seed_text_matches_preflight() -> None:
    from orchestrator.preflight.rules.speculative import need_steps_explanation

    d = classify_text((LOGS / "seed_spec_assert.log").read_text(), flags=SEED_FLAGS)
    assert (d.summary, d.fix) == need_steps_explanation(SEED_FLAGS)
    # a saved log without flags: the generic form, still the category
    d2 = classify_text((LOGS / "seed_spec_assert.log").read_text())
    assert (d2.summary, d2.fix) == need_steps_explanation({})


def test_seed_flags_recovered_from_journal_cmdline() -> None:
    d = classify_text((LOGS / "seed_spec_assert.json").read_text())
    assert d.category == "spec-params-need-num-steps"
    assert "--speculative-eagle-topk 4" in d.summary
    assert "--speculative-num-draft-tokens 3" in d.summary
    assert d.fix == SEED_FIX


def test_flags_from_server_args_and_argv() -> None:
    f = diagnose.flags_from_server_args(MF.SERVER_ARGS)
    assert f["tp_size"] == 8 and f["speculative_eagle_topk"] == 1
    assert f["speculative_draft_attention_backend"] is None
    g = diagnose.flags_from_server_args(
        "server_args=ServerArgs(model_path='/m', speculative_eagle_topk=4, mem_fraction_static=0.85)"
    )
    assert g == {"model_path": "/m", "speculative_eagle_topk": 4, "mem_fraction_static": 0.85}
    h = diagnose.flags_from_argv(MF.CMDLINE.split())
    assert h["speculative_eagle_topk"] == 4 and h["tp_size"] == 8
    assert h["trust_remote_code"] is True and h["model_path"] == "/models/Kimi-K2.6"


def test_bare_assertion_elsewhere_is_not_the_spec_rule() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/layers/moe/fused_moe.py", line 10, in forward\n'
        "    assert (\n"
        "AssertionError\n"
    )
    assert classify_text(text).category == "unknown"


# --------------------------------------------------------------------------- ordering


def _entries(*msgs: tuple[int | None, str]) -> list[JournalEntry]:
    return [JournalEntry(ts, m) for ts, m in msgs]


def test_echoes_never_win_even_first() -> None:
    es = _entries(
        (
            1_000_000_000,
            "[2026-12-02 14:00:00] " + say("sigquit"),
        ),
        (1_000_000_001, "sglang-kimi.service: Failed with result 'exit-code'."),
        (
            1_002_000_000,
            said("not-enough-memory"),
        ),
        (
            1_003_000_000,
            "[2026-12-02 14:00:03] " + say("init-failed"),
        ),
    )
    d = classify(es)
    assert d.category == "cuda-oom"
    assert d.evidence[-1].message.startswith("RuntimeError: Not enough memory")


def test_only_echoes_is_unknown_and_says_so() -> None:
    d = classify_text((LOGS / "echoes_only.log").read_text())
    assert d.category == "unknown" and not d.known
    assert "consequences" in d.summary
    assert any("Received sigquit" in e.message for e in d.evidence)


def test_unknown_shows_last_error_lines() -> None:
    d = classify_text((LOGS / "unknown_keyerror.json").read_text())
    assert d.category == "unknown"
    assert "not guessed" in d.summary and "KeyError" in d.summary
    msgs = [e.message for e in d.evidence]
    assert any(m.startswith("KeyError:") for m in msgs)
    assert msgs[-1] == "sglang-kimi.service: Failed with result 'signal'."
    assert "cause: unknown" in d.render_text()


def test_earliest_cause_wins_then_priority_within_a_second() -> None:
    nccl = "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 178.35 GiB of which 1.00 GiB is free."
    # different seconds: the earlier wins whatever the priority
    assert classify(_entries((1_000_000_000, nccl), (2_000_000_000, oom))).category == "nccl-error"
    # same second: the rule order decides (cuda-oom before nccl-error)
    assert classify(_entries((1_000_100_000, nccl), (1_000_900_000, oom))).category == "cuda-oom"
    # no timestamps: line order
    assert classify(_entries((None, nccl), (None, oom))).category == "nccl-error"


def test_host_oom_explains_earlier_nccl_errors() -> None:
    d = classify_text((LOGS / "host_oom_killed.json").read_text())
    assert d.category == "host-oom-killed"
    assert "nccl-error" not in d.also


def test_fallbacks_lose_to_causes_and_show_the_earlier_start() -> None:
    d = classify_text((LOGS / "start_limit_after_port.log").read_text())
    assert d.category == "port-in-use" and d.detail["port"] == "30005"
    assert "start-limit-hit" in d.also


def test_sigkill_after_an_error_is_not_an_oom_hint() -> None:
    d = classify_text((LOGS / "cuda_oom_tp3.log").read_text())
    assert d.category == "cuda-oom"
    assert d.detail["gpu"] == "3" and d.detail["tried"] == "4.21 GiB"
    d2 = classify_text((LOGS / "sigkill_only.log").read_text())
    assert d2.category == "host-oom-killed" and d2.role == R.HINT
    assert "inferred" in d2.summary


# --------------------------------------------------------------------------- caller's facts


def test_systemd_result_and_deadline() -> None:
    es = parse_text((LOGS / "startup_timeout.log").read_text())[:-3]  # without systemd's lines
    d = classify(es, timed_out=True)
    assert d.category == "startup-timeout"
    assert "deadline" in d.summary and "23/62 checkpoint shards" in d.summary
    assert classify(es, systemd_result="oom-kill").category == "host-oom-killed"
    assert classify(es, systemd_result="start-limit-hit").category == "start-limit-hit"
    h = classify(es, exit_status="137")
    assert h.category == "host-oom-killed" and h.role == R.HINT
    assert classify(es).category == "unknown"
    # a real cause in the log beats the caller's fallback facts
    oom = parse_text((LOGS / "cuda_oom_tp3.log").read_text())
    assert classify(oom, timed_out=True, systemd_result="timeout").category == "cuda-oom"


def test_startup_timeout_names_the_phase() -> None:
    d = classify_text((LOGS / "startup_timeout.json").read_text())
    assert d.category == "startup-timeout"
    assert d.detail["phase"] == "loading weights, 23/62 checkpoint shards"


# --------------------------------------------------------------------------- evidence


def test_evidence_carries_timestamps() -> None:
    for name in ("cuda_oom_tp3.json", "seed_spec_assert.short", "drafter_hidden_mismatch.json"):
        d = classify_text((LOGS / name).read_text())
        assert all(e.timestamp_us is not None for e in d.evidence), name
        assert all(TS.match(e.stamp()) for e in d.evidence)
        ev = d.render_text().split("evidence:\n", 1)[1].split("\nfix:", 1)[0]
        for line in ev.splitlines():
            assert TS.match(line.strip()[:19]), line
        assert d.to_json()["evidence"][0]["when"]


def test_traceback_of_one_rank_in_interleaved_json() -> None:
    d = classify_text((LOGS / "drafter_hidden_mismatch.json").read_text())
    assert d.category == "drafter-mismatch"
    assert len({e.pid for e in d.evidence}) == 1  # one rank's traceback only
    assert any("llama_eagle3.py" in e.message for e in d.evidence)
    assert d.preflight_rule == "drafter-hidden-size"


def test_render_text_shape() -> None:
    d = classify_text((LOGS / "port_in_use.short").read_text(), flags={})
    text = d.render_text()
    assert text.startswith("cause: port-in-use: port 30000 is already in use")
    assert "\nevidence:\n  " in text and "\nfix: " in text
    assert "ss -ltnp 'sport = :30000'" in d.fix


def test_port_in_use_names_the_port_from_the_log_or_says_it_does_not() -> None:
    """The errno line alone names no port: the command line or the banner does; failing
    both, the words say so instead of printing a placeholder."""
    errno = "OSError: [Errno 98] Address already in use"
    d = classify_text("python -m sglang.launch_server --port 30123\n" + errno)
    assert d.category == "port-in-use"
    assert "port 30123" in d.summary and "sport = :30123" in d.fix
    d = classify_text(errno)
    assert d.category == "port-in-use"
    assert "?" not in d.summary and "the log does not name it" in d.summary
    assert "`ss -ltnp`" in d.fix


# --------------------------------------------------------------------------- long logs


def _long(cause: list[str], noise: int = 50_000) -> list[str]:
    decode = "[2026-12-02 14:{m:02d}:{s:02d} TP{r}] Decode batch. #running-req: 12, #token: 20480, token usage: 0.04, accept len: 2.71, cuda graph: True, gen throughput (token/s): 1042.33, #queue-req: 0"
    out = [*MF.START, MF.SERVER_ARGS, *MF.init_parallel(), *cause]
    for i in range(noise):
        m, s = divmod(10 + i // 1000, 60)
        out.append(decode.format(m=8 + m % 50, s=s, r=i % 8))
        if i % 997 == 0:
            out.append('INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK')
    out += MF.echo_tail("14:59:59", dead_rank=2, code="-9")
    return out


@pytest.fixture(scope="module")
def long_case() -> Iterator[list[str]]:
    cause = MF.sched_exc(
        "14:07:06",
        3,
        MF.OOM_FRAMES,
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.21 GiB. GPU 3 has a total capacity of 178.35 GiB of which 2.87 GiB is free."
        ],
    )
    yield _long(cause)


@pytest.mark.parametrize("fmt", ["cat", "json", "short"])
def test_cause_far_from_the_end(long_case: list[str], fmt: str) -> None:
    conv = {"cat": MF.to_cat, "json": MF.to_json, "short": MF.to_short_precise}[fmt]
    d = classify_text(conv(long_case))
    assert d.category == "cuda-oom", d.render_text()
    assert d.detail["gpu"] == "3"
    assert "scheduler died" not in d.evidence[-1].message


def test_docs_are_current() -> None:
    path = ROOT / "docs" / "troubleshooting.md"
    assert path.exists() and path.read_text() == troubleshooting_markdown(), (
        "docs/troubleshooting.md is stale: run `python -m orchestrator.diagnosis.diagnose --write-docs` "
        "(or `python -m orchestrator.docs --write`)"
    )


def test_docs_name_every_category() -> None:
    md = troubleshooting_markdown()
    for r in R.RULES:
        assert f"## {r.id}" in md
    assert "## unknown" in md


def test_docs_say_every_condition_of_a_family() -> None:
    """Each family's conditions are in its category's section of the docs: what an operator
    reads there is what the family asks of a traceback (its site modules and its functions
    were once left out)."""
    md = troubleshooting_markdown()
    for r in R.RULES:
        section = md.split(f"## {r.id}\n", 1)[1].split("\n## ", 1)[0]
        for fam in r.families:
            for part in (*fam.exceptions, *fam.frames, *fam.functions, *fam.site_frames):
                assert f"`{part}`" in section, (r.id, part)
            for word in (*fam.words, *fam.and_words, *fam.unless):
                assert f"“{word}”" in section, (r.id, word)


def test_diagnosis_is_a_plain_dataclass() -> None:
    d = Diagnosis(category="unknown", summary="s", evidence=[], fix="f", doc="d")
    assert d.to_json()["category"] == "unknown" and not d.known
