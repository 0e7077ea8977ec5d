"""The diagnosis engine's own guarantees: every rule's examples classify to that rule, no
input line costs more than linear time, and a classification never outlives its budget."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest

from orchestrator import sglang
from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import classify, classify_text, engine, journal
from orchestrator.diagnosis.journal import JournalEntry
from orchestrator.diagnosis.model import linear
from orchestrator.diagnosis.startup import STARTUP_ORDER, STARTUP_RULES
from tests.helpers import traceback as _tb

ALL_PATTERNS = [(r.id, p) for r in R.RULES for p in r.patterns] + [("echo", p) for p in R.ECHOES]


# The start-up rules' priority order as it stood when startup.py was split by failure family
# (issue 20): the order decides ties, so a reshuffle of the family modules must not change it.
# A new rule or a deliberate re-ranking edits this list in the same commit.
STARTUP_PRIORITY = (
    ("spec-params-need-num-steps", "cause"),
    ("spec-config-invalid", "cause"),
    ("drafter-mismatch", "cause"),
    ("tp-size-indivisible", "cause"),
    ("attention-backend-unsupported", "cause"),
    ("kernel-package-mismatch", "cause"),
    ("python-import-error", "cause"),
    ("exec-failed", "cause"),
    ("driver-too-old", "cause"),
    ("gpu-unavailable", "cause"),
    ("kernel-unsupported-arch", "cause"),
    ("hf-auth", "cause"),
    ("hf-hub-unreachable", "cause"),
    ("model-not-found", "cause"),
    ("model-arch-unsupported", "cause"),
    ("warmup-proxy", "cause"),
    ("port-in-use", "cause"),
    ("dist-init-timeout", "cause"),
    ("ray-init-failed", "cause"),
    ("jit-build-failed", "cause"),
    ("lora-unsupported", "cause"),
    ("host-oom-killed", "cause"),
    ("host-memory-exhausted", "cause"),
    ("disk-full", "cause"),
    ("cuda-oom", "cause"),
    ("nccl-error", "cause"),
    ("cuda-graph-capture-failed", "cause"),
    ("start-limit-hit", "fallback"),
    ("startup-timeout", "fallback"),
)


def test_the_start_up_rules_keep_their_priority_order() -> None:
    assert tuple((r.id, r.role) for r in STARTUP_RULES) == STARTUP_PRIORITY
    assert tuple(r.id for r in STARTUP_RULES) == STARTUP_ORDER
    assert R.RULES[: len(STARTUP_RULES)] == STARTUP_RULES


@pytest.mark.parametrize("rule", R.RULES, ids=lambda r: r.id)
def test_every_rule_has_examples_that_classify_to_it(rule: R.Rule) -> None:
    assert rule.examples, f"{rule.id} has no example"
    for ex in rule.examples:
        d = classify_text(ex)
        assert d.category == rule.id, f"{rule.id} example classifies as {d.category}: {ex!r}"
        # what is printed is filled in: no `{field}` of a template is left in the words
        for said_ in (d.summary, d.fix):
            assert re.search(r"\{[a-z_]+\}", said_) is None, f"{rule.id}: unfilled {said_!r}"


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


@pytest.mark.usefixtures("rules_only")
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
        # the target model's own weights of the wrong shape (an SGLang model class and a
        # checkpoint that disagree, sglang#31827) are not the drafter's: no draft frame
        _tb(
            [
                (".../sglang/srt/models/minimax_m3.py", "load_weights"),
                (".../sglang/srt/layers/moe/fused_moe_triton/layer.py", "_load_w13"),
            ],
            "RuntimeError: The size of tensor a (6144) must match the size of tensor b (3072) "
            "at non-singleton dimension 1",
        ),
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
    from orchestrator.diagnosis.journal import JournalLines

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
        S.EMBEDDED_RAISED.search(line[: journal.MAX_LINE])
        S.FRAME.match(line[: journal.MAX_LINE])
        S.event_kind(line[: journal.MAX_LINE])
        S.event_kinds(line[: journal.MAX_LINE], line[: journal.MAX_LINE], 3)
    # and every event kind (all of them run on a line) on 8 kB of its own literals
    for kws in S.EVENT_KEYWORDS.values():
        for kw in kws or ("E1226 ", "[E x.cpp:1] "):
            S.event_kinds(
                ((kw + ".c:1:") * (journal.MAX_LINE // (len(kw) + 4)))[: journal.MAX_LINE]
            )
    classify_text("\n".join(lines), budget_s=None)
    assert time.perf_counter() - t < 20


# ----------------------------------------------------------------- families widened (batch B)

_HUB = "/v/lib/python3.11/site-packages/huggingface_hub/utils/_errors.py"
_BUILD = "/v/lib/python3.11/site-packages/torch/utils/cpp_extension.py"
_WARMUP = "/v/lib/python3.11/site-packages/sglang/srt/entrypoints/http_server.py"


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # EADDRINUSE in any library's words, any exception type
        (
            _tb([("/x/app/server.py", "bind")], "zmq.error.ZMQError: Address in use"),
            "port-in-use",
        ),
        (
            "2026-01-02 10:00:00 ERROR gloo bind failed: EADDRINUSE on 0.0.0.0:29600",
            "port-in-use",
        ),
        # c10d's store/rendezvous reporting its own failure (glog E lines, elastic agent)
        (
            "[E1226 15:44:09.437224181 socket.cpp:1011] [c10d] The client socket has timed out "
            "after 600000ms while trying to connect to (node-5, 8000).",
            "dist-init-timeout",
        ),
        (
            _tb(
                [("/x/torch/distributed/elastic/rendezvous/api.py", "next_rendezvous")],
                "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: "
                "The connection to the C10d store has failed.",
            ),
            "dist-init-timeout",
        ),
        # a C/C++/CUDA compiler's error line during a JIT build, any header or syntax error
        (
            "/tmp/tmpab12/main.c:5:10: fatal error: cuda.h: No such file or directory",
            "jit-build-failed",
        ),
        (
            '/tmp/build/kernel.cu(118): error: identifier "__nv_bfloat16" is undefined',
            "jit-build-failed",
        ),
        (
            _tb(
                [(_BUILD, "_run_ninja_build")],
                "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
            ),
            "jit-build-failed",
        ),
        # the Hub's 404 for a file, any HTTP client under huggingface_hub
        (
            _tb(
                [(_HUB, "hf_raise_for_status")],
                "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
                "https://huggingface.co/org/x/resolve/main/config.json",
            ),
            "model-not-found",
        ),
        # a connection failure as another HTTP client names it, under huggingface_hub
        (
            _tb(
                [("/v/site-packages/huggingface_hub/file_download.py", "hf_hub_download")],
                "httpx.ConnectError: [Errno -3] Temporary failure in name resolution",
            ),
            "hf-hub-unreachable",
        ),
        # LoRA named with what it cannot do
        (
            "ValueError: Model MistralForCausalLM does not support LoRA yet.",
            "lora-unsupported",
        ),
        # CUDA refusing an operation during graph capture, whoever raised it
        (
            _tb(
                [("/x/sglang/srt/layers/moe/topk.py", "forward")],
                "RuntimeError: CUDA error: operation not permitted when stream is capturing",
            ),
            "cuda-graph-capture-failed",
        ),
        # the warm-up code itself raised (not deeper, in the model)
        (
            _tb(
                [(_WARMUP, "_wait_until_http_ready")],
                "RuntimeError: HTTP server did not become ready at http://127.0.0.1:30000/health",
            ),
            "warmup-proxy",
        ),
        # a supervisor's ERROR line names the failed import (no exception line of its own)
        (
            "2026-01-08 04:57:04,362 pool.worker 83 ERROR    Failed to start worker 3: "
            "cannot import name 'FooConfig' from 'transformers' (/x/transformers/__init__.py)",
            "python-import-error",
        ),
        # a CUDA error raised in an attention kernel's source, refusing its launch
        (
            "CUDA error (/src/flash-attention/hopper/flash_bwd_launch_template.h:88): invalid argument",
            "attention-backend-unsupported",
        ),
    ],
)
def test_widened_families_catch_new_wordings(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, d.render_text()


def _ignored_import() -> str:
    from orchestrator import sglang

    said = sglang.NEWEST.message("ignore-import-error").format(
        module="sglang.srt.models.foo", error="No module named 'bar'"
    )
    return f"[2026-01-02 10:00:00] ERROR {said}"


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(
    "log",
    [
        # SGLang's benign skip of an optional model module, even at ERROR level
        _ignored_import(),
        # an address-in-use note that is not an error: a server that moved on by itself
        "2026-01-02 10:00:00 INFO port 30000: Address already in use, trying 30001",
        # torch's harmless IPv6 warning on every start, and a WARNING-level c10d timeout
        "[W socket.cpp:697] [c10d] The client socket cannot be initialized to connect to "
        "[localhost]:29500 (errno: 97 - Address family not supported by protocol).",
        "[W1226 15:44:09.437 socket.cpp:1011] [c10d] The client socket has timed out after 1s, retrying",
        # a compiler warning is no build failure; an `error` that is no compiler's line
        "/tmp/tmpab12/main.c:5:10: warning: unused variable 'x' [-Wunused-variable]",
        "config.h: error handling enabled",
        # a missing optional module, said at WARNING level
        "2026-01-02 10:00:00 WARNING No module named 'vllm'; falling back to the torch kernels",
        # a 404 from another server than the Hub is no missing model
        _tb(
            [("/x/app/client.py", "fetch")],
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: http://127.0.0.1:8080/x",
        ),
        # the same connection failure to another server, outside the Hub's code
        _tb(
            [("/x/app/client.py", "fetch")],
            "httpx.ConnectError: [Errno 111] Connection refused",
        ),
        # LoRA named without a refusal (an adapter above max_lora_rank is one: lora-unsupported)
        "2026-01-02 10:00:00 INFO Loaded LoRA adapter sql: rank 64, max_lora_rank 64",
        # a CalledProcessError outside any kernel builder
        _tb(
            [("/x/app/deploy.py", "run")],
            "subprocess.CalledProcessError: Command '['git', 'pull']' returned non-zero exit status 1.",
        ),
    ],
)
def test_widened_families_do_not_claim_lookalikes(log: str) -> None:
    d = classify_text(log)
    assert d.category == "unknown", d.render_text()


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(
    ("log", "category"),
    [
        # a 401 under huggingface_hub stays the Hub's authentication, not a missing model
        (
            _tb(
                [(_HUB, "hf_raise_for_status")],
                "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
                "https://huggingface.co/meta-llama/x/resolve/main/config.json",
            ),
            "hf-auth",
        ),
        # a CUDA fault inside flash-attention while serving is an illegal access, not a backend
        (
            _tb(
                [("/x/flash_attn/flash_attn_interface.py", "_flash_attn_forward")],
                "RuntimeError: CUDA error: an illegal memory access was encountered",
            ),
            "cuda-illegal-access",
        ),
        # an OOM deep in the model during the warm-up is the OOM, not the warm-up
        (
            _tb(
                [(_WARMUP, "_execute_server_warmup"), ("/x/sglang/srt/models/llama.py", "forward")],
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            ),
            "cuda-oom",
        ),
        (
            _tb(
                [
                    (_WARMUP, "_execute_server_warmup"),
                    ("/x/sglang/srt/layers/sampler.py", "forward"),
                ],
                "RuntimeError: CUDA error: misaligned address",
            ),
            "cuda-illegal-access",
        ),
    ],
)
def test_widened_families_leave_lookalikes_to_their_own_rule(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, d.render_text()


def test_the_root_cause_is_on_the_earliest_failing_rank() -> None:
    """Two ranks interleaved under torchrun's prefix: rank 3 fails first (a missing module),
    rank 0 fails later with its own traceback (a wrapper of a rendezvous timeout): rank 3's
    root exception names the category and leads the evidence."""
    r3 = [
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/models/foo.py", line 3, in load',
        "    import frobnicate",
        "ModuleNotFoundError: No module named 'frobnicate'",
    ]
    r0 = [
        "Traceback (most recent call last):",
        '  File "/x/torch/distributed/rendezvous.py", line 9, in _wait',
        "    store.wait()",
        "TimeoutError: timed out waiting for rank 3",
    ]
    lines = []
    for a, b in zip(r3, r0, strict=True):
        lines += [f"[default3]:{a}", f"[default0]:{b}"]
    d = classify_text("\n".join(lines))
    assert d.category == "python-import-error", d.render_text()
    assert any("frobnicate" in e.text for e in d.evidence)
    assert not any("timed out" in e.text for e in d.evidence)


# ----------------------------------------------------------------- keywords come from the patterns


def test_literals_are_what_every_match_must_contain() -> None:
    from orchestrator.diagnosis.model import literals

    assert literals(r"(?P<msg>.*Gloo connectFullMesh failed.*)") == ("Gloo connectFullMesh failed",)
    # the alternatives of a mandatory group, each long enough
    assert literals(r"x (?:nvcc fatal|No CUDA toolkit found)") == (
        "nvcc fatal",
        "No CUDA toolkit found",
    )
    # an optional group is no requirement; the mandatory run is
    assert literals(r"(?:Traceback: )?address already in use") == ("address already in use",)
    # nothing long enough in some alternative, or a case-blind regex: no keywords (named by hand)
    assert literals(r"(?:Error|Exit): .*") is None
    assert literals(r".*") is None
    assert literals("oom killed", re.IGNORECASE) is None


def test_keywords_are_derived_and_named_by_hand_only_where_they_cannot_be() -> None:
    from orchestrator.diagnosis.model import literals

    for rid, p in ALL_PATTERNS:
        derived = literals(p.regex.pattern, p.regex.flags)
        if p.derived:
            assert p.keywords == derived, (rid, p.regex.pattern[:80])
        else:
            assert derived is None, f"{rid}: keywords typed by hand for a derivable pattern"


@pytest.mark.parametrize("rule", R.RULES, ids=lambda r: r.id)
def test_every_matched_example_line_holds_a_keyword(rule: R.Rule) -> None:
    """The pre-filter never hides a line its pattern matches (the derivation is sound)."""
    for ex in rule.examples:
        for line in ex.splitlines():
            for p in rule.patterns:
                if p.regex.search(line):
                    assert any(k in line for k in p.keywords), (rule.id, line, p.keywords)


def test_signals_name_known_event_kinds_and_their_lines_pass_the_prefilter() -> None:
    from orchestrator.diagnosis.structure import EVENT_KINDS

    named = {k for r in R.RULES for sg in r.signals for k in sg.kinds}
    assert named <= set(EVENT_KINDS), named - set(EVENT_KINDS)
    gates = R.gates()
    for r in R.RULES:
        for sg in r.signals:
            for kw in R.signal_keywords(sg):
                assert any(g in kw for g in gates), (r.id, kw)


# ------------------------------------------- group A families widened (batches C and D)


def _ignored_import_of(error: str) -> str:
    from orchestrator import sglang

    said = sglang.NEWEST.message("ignore-import-error").format(
        module="sglang.srt.models.foo", error=error
    )
    return f"[2026-01-02 10:00:00] WARNING {said}"


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # an exception quoted inside a user's words or a wrapper's markup still lands in its
        # family (the structure reads it wherever it stands on the line)
        ("运行时报错ModuleNotFoundError: No module named 'vllm_flash_attn'", "python-import-error"),
        (
            "启动报错RuntimeError: Failed to load LoRA adapter x: LoRA does not support embed_tokens",
            "lora-unsupported",
        ),
        # a head count and a parallel size in another engine's words, inside a wrapper
        (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig\n"
            "  Value error, Total number of attention heads (28) must be divisible by tensor parallel size (8).",
            "tp-size-indivisible",
        ),
        # a local GGUF file given where a Hub id is expected: the Hub's 404 for that "repo"
        (
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/api/models/weights/model-q4.gguf/revision/main",
            "model-not-found",
        ),
        # the Hub's 403 in a Go or Rust client's words
        (
            'panic: GET https://huggingface.co/google/gemma-3-27b-it/resolve/main/config.json: unexpected status 403 Forbidden"',
            "hf-auth",
        ),
        # an import failure told by a wrapper, with no exception line of its own (fallback)
        (
            "(EngineCore pid=7) Encountered exception while importing qwen_vl_utils: No module named 'qwen_vl_utils'",
            "python-import-error",
        ),
        # the driver's libraries absent: a container without the NVIDIA runtime
        (
            "OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
            "gpu-unavailable",
        ),
        # another runtime's loader on an architecture it does not know
        ("ValueError: Unsupported model type deepseek_v32", "model-arch-unsupported"),
        # sgl_kernel's loader listing its attempts: an ABI error in any arrangement
        (
            "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
            "2. sm90/common_ops.abi3.so: undefined symbol (torch ABI)",
            "kernel-package-mismatch",
        ),
    ],
)
def test_group_a_families_catch_new_wordings(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, d.render_text()


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(
    "log",
    [
        # a download line whose timestamp ends in .403 is no refusal
        "2026-06-01 10:00:00.403 INFO Downloading https://huggingface.co/org/name/resolve/main/config.json HTTP/1.1 200",
        # a missing optional package, said as a warning
        "WARNING 01-02 10:00:00 A matching Triton is not available, some optimizations will not be enabled. Error caught was: No module named 'triton'",
        # SGLang's benign skip of an optional model module, with an ABI error in it
        _ignored_import_of("/x/libfoo.so: undefined symbol: bar"),
        # an exception quoted in a line that no family claims
        "2026-01-02 10:00:00 INFO retrying after ValueError: queue is empty",
        # "divisible" about something else than heads and the parallel size
        "ValueError: block_size (24) must be divisible by 16",
        # a 401 for a weights file from another server than the Hub
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://files.example.com/models/x.bin",
        # an OSError that names the Hub only as where to read more is no unreachable Hub
        "OSError: Unable to load weights from pytorch checkpoint file for '/models/x'. See https://huggingface.co/docs/transformers for the supported formats.",
        # "unsupported model type" about a feature, not the architecture
        "WARNING unsupported model type for fp8 kv cache, using auto",
        "ValueError: Unsupported model type for quantization: x",
        # a CUDA runtime library of a version is no driver library
        "2026-01-02 10:00:00 INFO found libcuda.so.1 at /usr/lib/x86_64-linux-gnu",
    ],
)
def test_group_a_families_do_not_claim_lookalikes(log: str) -> None:
    d = classify_text(log)
    assert d.category == "unknown", d.render_text()


def test_a_new_release_with_the_same_graph_flags_keeps_since_when(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fix text names the older CUDA-graph flags as the ones before the release that
    renamed them (the Release data's graph_flags_since), not before the newest release."""
    before = engine._release_detail(None)["graph_max_bs"]
    assert before.endswith(f"before SGLang {sglang.NEWEST.graph_flags_since})")
    newer = dataclasses.replace(sglang.NEWEST, version="9.9.9", graph_flags_since="")
    monkeypatch.setattr(sglang, "RELEASES", {**sglang.RELEASES, "9.9.9": newer})
    assert engine._release_detail(None)["graph_max_bs"] == before


def test_a_file_name_turned_into_a_markdown_link_reads_as_the_name() -> None:
    # a log pasted into an issue, where the renderer linked "x.so" to http://x.so/
    so = "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"
    line = f"ImportError: /opt/venv/lib/python3.10/site-packages/[{so}](http://{so}/): undefined symbol: _ZN3c104cuda9SetDeviceEi"
    d = classify_text(line)
    assert d.category == "kernel-package-mismatch"
    assert f"site-packages/{so}: undefined symbol" in d.summary
    # a link to somewhere else is left as it is
    other = "[see this](https://github.com/x/y) RuntimeError: CUDA error: invalid device ordinal"
    e = classify_text(other).evidence[0]
    assert "[see this](https://github.com/x/y)" in (e.origin or "") + e.message


def test_markdown_link_repair_is_linear_on_a_long_line() -> None:
    line = "[" + "a" * 250 + "](http://" * 200
    start = time.perf_counter()
    classify_text(line + "\nRuntimeError: No CUDA GPUs are available")
    assert time.perf_counter() - start < 2.0


def test_a_fragment_pasted_without_its_indentation_keeps_its_frames() -> None:
    """A traceback fragment whose paste lost the indentation (source and caret lines at
    column 0, no "Traceback" header) still gives its exception the frames above it, so the
    serving loop's family names it; the same lines indented are the control."""
    frames = [
        'File ".../sglang/srt/constrained/xgrammar_backend.py", line 100, in fill_vocab_mask',
        "self.matcher.fill_next_token_bitmask(vocab_mask, idx)",
        'File ".../xgrammar/matcher.py", line 308, in fill_next_token_bitmask',
        "return self._handle.fill_next_token_bitmask(bitmask, index)",
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "RuntimeError: Check failed: the matcher has terminated",
    ]
    indented = [("  " if not ln.startswith("RuntimeError") else "") + ln for ln in frames]
    assert classify_text("\n".join(indented)).category == "scheduler-exception"
    assert classify_text("\n".join(frames)).category == "scheduler-exception"
    # without a frame above it the same exception is nobody's
    assert classify_text(frames[-1]).category == "unknown"
