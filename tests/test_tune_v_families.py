"""The structure and patterns written on batch V's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.journal import JournalLines
from orchestrator.diagnosis.structure import RAISED, tracebacks
from orchestrator.sglang import all_messages
from tests.helpers import traceback

_OLD_TOKENIZER = all_messages("tokenizer-exception")[-1].text.format(traceback="")


def _tb(frames: list[tuple[str, str]], last: str) -> str:
    return traceback(frames, last, site="/usr/lib/python3.10/site-packages/") + "\n"


LANDS = [
    # a CUDA status that names its own cause, met by the engines' own all-reduce
    (
        "cuda-illegal-access",
        "Failed: Cuda error /sgl-workspace/csrc/allreduce/custom_all_reduce.cuh:410 "
        "'an illegal instruction was encountered'",
    ),
    (
        "gpu-ecc-uncorrectable",
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cu:90 'uncorrectable ECC error "
        "encountered'",
    ),
    # a kernel library quoting CUDA's status after its own function
    (
        "cuda-oom",
        "RuntimeError: BatchPrefillWithPagedKVCache failed with error: out of memory",
    ),
    # the NVIDIA container toolkit's other requirement forms
    (
        "driver-too-old",
        "nvidia-container-cli: requirement error: unsatisfied condition: driver >= 450, "
        "please update your driver to a newer version, or use an earlier cuda container",
    ),
    (
        "driver-too-old",
        "nvidia-container-cli: requirement error: unsatisfied condition: brand = tesla",
    ),
    # a package missing, named between a framework's words
    (
        "python-import-error",
        "RuntimeError: The 'aiohttp' extra requires \"aiohttp\" to be installed.",
    ),
    # a registered op called with another schema than the compiled build
    (
        "kernel-package-mismatch",
        _tb(
            [
                ("sglang/srt/layers/moe/topk.py", "select_experts"),
                ("torch/_ops.py", "__call__"),
            ],
            "RuntimeError: sgl_kernel::topk_softmax() expected at most 4 argument(s) but "
            "received 5 argument(s).",
        ),
    ),
    # 0.1.x's tokenizer manager: its words, then the traceback on the lines below
    (
        "tokenizer-manager-died",
        _OLD_TOKENIZER
        + "\n"
        + _tb([("sglang/srt/managers/tokenizer_manager.py", "generate_request")], "KeyError: 3"),
    ),
    # the base class itself, raised under the serving loop
    (
        "scheduler-exception",
        _tb(
            [("sglang/srt/managers/scheduler.py", "event_loop_normal")],
            "Exception: 3 errors happen:",
        ),
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


LEAVES = [
    # the all-reduce's own failure stays the collectives'
    (
        "cuda-illegal-access",
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'peer access is not "
        "supported between these two devices'",
    ),
    # a schema mismatch outside torch's op dispatcher is not named a kernel package's
    (
        "kernel-package-mismatch",
        _tb(
            [("myapp/server.py", "handle")],
            "TypeError: handle() takes 2 positional arguments but 3 were given",
        ),
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("not_this", "text"), LEAVES)
def test_a_near_miss_is_left_alone(not_this: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category != not_this, (d.category, d.summary)


def test_the_base_exception_class_is_an_exception_line() -> None:
    assert RAISED.match("Exception: 2 errors happen:") is not None
    assert RAISED.match("builtins.BaseException: x") is not None
    log = _tb([("a.py", "f")], "Exception: boom")
    (tb,) = tracebacks(JournalLines(log), [0])
    assert tb.root.type == "Exception" and tb.root.message == "boom"
