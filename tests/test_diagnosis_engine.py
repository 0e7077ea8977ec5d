"""The diagnosis engine's own guarantees: every rule's examples classify to that rule, no
input line costs more than linear time, and a classification never outlives its budget."""

from __future__ import annotations

import time

import pytest

from orchestrator import journal
from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import classify, classify_text
from orchestrator.diagnosis.model import linear
from orchestrator.journal import JournalEntry

ALL_PATTERNS = [(r.id, p) for r in R.RULES for p in r.patterns] + [("echo", p) for p in R.ECHOES]


@pytest.mark.parametrize("rule", R.RULES, ids=lambda r: r.id)
def test_every_rule_has_examples_that_classify_to_it(rule: R.Rule) -> None:
    assert rule.examples, f"{rule.id} has no example"
    for ex in rule.examples:
        d = classify_text(ex)
        assert d.category == rule.id, f"{rule.id} example classifies as {d.category}: {ex!r}"


def test_a_leading_dot_star_is_anchored() -> None:
    assert linear(r"(?P<msg>.*x.*)") == r"\A(?P<msg>.*x.*)"
    assert linear(r".*?x") == r"\A.*?x"
    assert linear(r"NCCL error: (?P<msg>.*)") == r"NCCL error: (?P<msg>.*)"
    for _, p in ALL_PATTERNS:
        src = p.regex.pattern
        assert not src.startswith((".*", "(?P<msg>.*")), f"unanchored leading .*: {src[:80]}"


def _vocabulary_lines(size: int) -> list[str]:
    """Lines of `size` characters made of the rules' own words: each keyword repeated, and all
    the keywords together (the inputs that make a backtracking pattern explode)."""
    kws = sorted({k for _, p in ALL_PATTERNS for k in p.keywords})
    out = [((k + " ") * (size // (len(k) + 1) + 1))[:size] for k in kws]
    everything = " ".join(kws)
    out.append(((everything + " ") * (size // len(everything) + 1))[:size])
    return out


def test_no_pattern_backtracks_on_long_lines_of_its_own_words() -> None:
    """Every pattern on 8 kB lines of every keyword (the cap): generous bounds for a busy box;
    the cubic pattern of issue 18 took minutes on one such line."""
    lines = _vocabulary_lines(journal.MAX_LINE)
    worst = 0.0
    for _, p in ALL_PATTERNS:
        for line in lines:
            t = time.perf_counter()
            p.regex.search(line)
            for c in p.context:
                c.search(line)
            worst = max(worst, time.perf_counter() - t)
    assert worst < 0.5, worst


def test_48k_lines_are_capped_before_any_pattern_runs() -> None:
    lines = _vocabulary_lines(48 * 1024)
    t = time.perf_counter()
    for line in lines[:: max(1, len(lines) // 40)]:
        classify_text(line, budget_s=None)
    spent = time.perf_counter() - t
    assert spent < 30, spent
    e = JournalEntry(None, "x" * 100_000)
    assert len(e.text) == journal.MAX_LINE


def test_the_budget_ends_in_unknown_with_a_note() -> None:
    text = "\n".join(
        ["Traceback (most recent call last):", "RuntimeError: CUDA out of memory. x"] * 5000
    )
    d = classify_text(text, budget_s=0.0)
    assert d.category == "unknown"
    assert "time budget" in d.summary and d.detail["note"] == "time budget exhausted"
    assert d.evidence
    assert classify_text("\n".join(text.split("\n")[:400])).category == "cuda-oom"


def test_the_budget_holds_for_entries_too() -> None:
    entries = [JournalEntry(None, "RuntimeError: CUDA out of memory. x")] * 200
    assert classify(entries, budget_s=0.0).category == "unknown"


def _tb(frames: list[tuple[str, str]], exc: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, func in frames:
        lines += [f'  File "{path}", line 10, in {func}', "    x()"]
    return "\n".join([*lines, exc])


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # a missing package, in wordings no pattern lists
        (
            _tb([("/app/run.py", "main")], "ModuleNotFoundError: No module named 'triton_kernels'"),
            "python-import-error",
        ),
        (
            _tb(
                [("/venv/site-packages/transformers/utils/import_utils.py", "requires_backends")],
                "ImportError: LlamaTokenizerFast requires the protobuf library but it was not found in your environment.",
            ),
            "python-import-error",
        ),
        # an unknown model_type, in whatever words a transformers release uses
        (
            _tb(
                [
                    (
                        "/venv/site-packages/transformers/models/auto/configuration_auto.py",
                        "__getitem__",
                    )
                ],
                "KeyError: 'qwen4_moe'",
            ),
            "model-arch-unsupported",
        ),
        (
            "ValueError: Unrecognized configuration class <class 'transformers_modules.x.XConfig'> for this kind of AutoModel: AutoModelForCausalLM.",
            "model-arch-unsupported",
        ),
        # a GPU out of memory, any message
        (
            "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory on the GPU",
            "cuda-oom",
        ),
        # c10d's bind failure, new words
        (
            "torch.distributed.DistNetworkError: failed to bind [::]:29500 (errno: 98 - Address already in use)",
            "port-in-use",
        ),
        # a wrapper around the root: the root wins
        (
            _tb(
                [("/x/sglang/srt/models/foo.py", "forward")],
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB",
            )
            + "\n\nThe above exception was the direct cause of the following exception:\n\n"
            + _tb(
                [("/x/sglang/srt/managers/scheduler.py", "run_scheduler_process")],
                "Exception: Scheduler hit an exception",
            ),
            "cuda-oom",
        ),
    ],
)
def test_exception_families_catch_new_wordings(log: str, category: str) -> None:
    assert classify_text(log).category == category, classify_text(log).render_text()


@pytest.mark.parametrize(
    "log",
    [
        # shape words outside the drafter's frames are not a drafter mismatch
        _tb(
            [("/x/mylib/ops.py", "forward")],
            "RuntimeError: shape '[2, 3]' is invalid for input of size 7",
        ),
        # a backend word outside attention code is not an attention backend
        _tb([("/x/app/dist.py", "setup")], "ValueError: Unknown backend 'mpi2'"),
        # a timeout outside torch.distributed is not a rendezvous timeout
        _tb([("/x/app/client.py", "wait")], "TimeoutError: timed out waiting for the queue"),
    ],
)
def test_families_do_not_claim_lookalikes(log: str) -> None:
    assert classify_text(log).category == "unknown", classify_text(log).render_text()


def test_unknown_shows_the_root_exception_and_its_frame() -> None:
    log = (
        _tb([("/x/lib/frob.py", "frob")], "FrobError: the frob broke")
        + "\n\nDuring handling of the above exception, another exception occurred:\n\n"
        + _tb(
            [("/x/sglang/srt/managers/scheduler.py", "event_loop")],
            "Exception: Scheduler hit an exception",
        )
    )
    d = classify_text(log)
    assert d.category == "unknown"
    assert d.evidence[0].text == "FrobError: the frob broke"
    assert 'File "/x/lib/frob.py", line 10, in frob' in d.evidence[1].text


def test_a_retraction_storm_is_a_hint_a_few_retractions_are_nothing() -> None:
    from orchestrator import sglang
    from orchestrator.diagnosis.runtime import RETRACT_STORM

    line = sglang.NEWEST.message("kv-retract").format(n=4, rest=", #new_token_ratio: 0.45 -> 0.70")
    few = "\n".join(f"[2026-12-02 10:00:0{i} TP0] {line}" for i in range(RETRACT_STORM - 1))
    assert classify_text(few).category == "unknown"
    storm = "\n".join(f"[2026-12-02 10:00:{i:02d} TP0] {line}" for i in range(RETRACT_STORM + 3))
    d = classify_text(storm)
    assert (d.category, d.role) == ("kv-cache-oom-runtime", "hint")
    # a real error wins over the storm
    assert (
        classify_text(
            storm + "\nRuntimeError: CUDA out of memory. Tried to allocate 2 GiB"
        ).category
        == "cuda-oom"
    )


def test_tracebacks_become_objects() -> None:
    from orchestrator.diagnosis import structure as S
    from orchestrator.journal import JournalLines

    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/v/lib/python3.12/site-packages/sglang/srt/models/foo.py", line 7, in load',
            "    w = f()",
            "ValueError: the first line",
            "and its second line",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/v/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 9, in run',
            "    load()",
            "RuntimeError: Initialization failed",
        ]
    )
    entries = JournalLines(log)
    tbs = S.tracebacks(entries, [i for i, e in enumerate(entries) if S.TRACEBACK in e.text])
    assert len(tbs) == 1
    tb = tbs[0]
    assert [r.type for r in tb.chain] == ["ValueError", "RuntimeError"]
    assert tb.root.message == "the first line\nand its second line"
    assert tb.root.site is not None and tb.root.site.function == "load"
    assert tb.root.site.module_path() == "sglang/srt/models/foo.py"
    found = S.root_exception(tbs)
    assert found is not None and found[1].type == "ValueError"


def test_lines_become_typed_events() -> None:
    from orchestrator.diagnosis.structure import event_kind, http_status

    assert event_kind("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.") == "xid"
    assert event_kind("node:1:2 [3] NCCL WARN socket closed") == "nccl"
    assert event_kind("RuntimeError: CUDA error: misaligned address") == "cuda"
    assert event_kind("u.service: Failed with result 'exit-code'.") == "systemd-result"
    access = '127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 503'
    assert event_kind(access) == "http-access" and http_status(access) == 503
    from orchestrator import sglang

    said = sglang.NEWEST.message("watchdog-timeout").format(
        who="Scheduler", timeout=300, soft=False
    )
    assert event_kind(said) == "sglang-warning"
    assert event_kind("Decode batch. #running-req: 3") is None


def test_the_reader_and_the_structure_stay_linear_on_hostile_lines() -> None:
    """48 kB lines built to hurt the reader's and the structure's own patterns: dotted names,
    nested wrappers, frame-like and time-like runs, with and without a traceback header."""
    from orchestrator.diagnosis import structure as S
    from orchestrator.diagnosis.reader import read_lines

    size = 48 * 1024
    pieces = [
        "a." * (size // 2),
        "A" * size,
        "[pod/x/" * (size // 7),
        "(pid=1) " * (size // 8),
        '  File "' + "x" * size,
        "2026-12-02T10:00:00.1Z " * (size // 23),
        "| " * (size // 2),
        "KeyError" * (size // 8),
        "Traceback (most recent call last):" + " " * size,
    ]
    lines = [p[:size] for p in pieces]
    t = time.perf_counter()
    read_lines([*lines, *lines])
    for line in lines:
        S.RAISED.match(line[: journal.MAX_LINE])
        S.FRAME.match(line[: journal.MAX_LINE])
        S.event_kind(line[: journal.MAX_LINE])
    classify_text("\n".join(lines), budget_s=None)
    assert time.perf_counter() - t < 20
