"""The structure and patterns written on batch U's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.reader import read_lines
from orchestrator.diagnosis.structure import RAISED
from orchestrator.sglang import NEWEST
from tests.helpers import traceback


def _tb(frames: list[tuple[str, str]], last: str) -> str:
    return traceback(frames, last, site="/usr/lib/python3.10/site-packages/") + "\n"


LANDS = [
    # the overlap scheduler's forward thread (0.4.x) runs only the batches it is given
    (
        "scheduler-exception",
        _tb(
            [
                ("sglang/srt/managers/tp_worker_overlap_thread.py", "forward_thread_func_"),
                ("sglang/srt/models/qwen2.py", "forward"),
            ],
            "RuntimeError: shape '[4, -1]' is invalid for input of size 6",
        ),
    ),
    # a drafter's weights refused under the draft worker (SGLang's, vLLM's V1)
    (
        "drafter-mismatch",
        _tb(
            [
                ("sglang/srt/speculative/eagle_worker.py", "__init__"),
                ("sglang/srt/models/llama.py", "load_weights"),
            ],
            "KeyError: 'model.layers.0.mlp.gate_up_proj.weight'",
        ),
    ),
    (
        "drafter-mismatch",
        _tb(
            [
                ("vllm/v1/spec_decode/eagle.py", "load_model"),
                ("vllm/model_executor/model_loader/weight_utils.py", "default_weight_loader"),
            ],
            NEWEST.message("weight-shape-mismatch").line(
                got="torch.Size([1, 2])", want="torch.Size([2, 2])"
            ),
        ),
    ),
    # an attention kernel's own dispatch check, with its source file
    (
        "attention-backend-unsupported",
        "RuntimeError: Error in function 'BatchDecodeWithPagedKVCacheDispatched' at "
        "/opt/flashinfer/include/flashinfer/attention/decode.cuh:900: Unsupported head_dim: 80",
    ),
    # vLLM's kernel-op module without an op its caller expects
    (
        "kernel-package-mismatch",
        "AttributeError: module 'vllm._custom_ops' has no attribute 'gelu_tanh_and_mul'",
    ),
    # a crash inside NCCL in UCX's backtrace
    (
        "nccl-error",
        "[node:1234:0:1240] Caught signal 11 (Segmentation fault: address not mapped)\n"
        " 0 0x0000000000042520 __sigaction()  ???:0\n"
        " 1 0x0000000000055aa1 ncclProxyProgress()  ???:0\n",
    ),
    (
        "nccl-error",
        " 3 0x00000000000494f4 progressOps()  /build/nccl/src/proxy.cc:700\n",
    ),
    # a sticky CUDA fault, then the handler's own CUDA call failing: the fault is the cause
    (
        "cuda-illegal-access",
        _tb(
            [("sglang/srt/models/llama.py", "forward")],
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        )
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + _tb(
            [("torch/cuda/__init__.py", "set_stream")],
            "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
        ),
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text)
    assert d.category == want, (d.category, d.summary)


LEAVES = [
    # a JIT's cache file lost between two processes is not a model missing
    (
        "model-not-found",
        "FileNotFoundError: [Errno 2] No such file or directory: "
        "'/root/.triton/cache/0a1b/_fwd_kernel.json.tmp.pid_7_1'",
    ),
    # NCCL going on another way is no NCCL failure
    (
        "nccl-error",
        "node:7:7 [0] graph/search.cc:1127 NCCL WARN Could not find a path for pattern 4, "
        "falling back to simple order",
    ),
    # weights refused while the TARGET loads (no draft worker) are not the drafter's
    (
        "drafter-mismatch",
        _tb(
            [
                ("sglang/srt/model_executor/model_runner.py", "load_model"),
                ("sglang/srt/models/llama.py", "load_weights"),
            ],
            "KeyError: 'model.layers.0.mlp.gate_up_proj.weight'",
        ),
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("not_this", "text"), LEAVES)
def test_a_near_miss_is_left_alone(not_this: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category != not_this, (d.category, d.summary)


def test_a_model_file_missing_still_is() -> None:
    d = classify_text(
        "FileNotFoundError: [Errno 2] No such file or directory: '/models/kimi/config.json'\n"
    )
    assert d.category == "model-not-found"


def test_lines_padded_to_the_terminal_width_are_not_wrapped_parts() -> None:
    width = 120
    lines = [
        "Traceback (most recent call last):".ljust(width),
        '  File "/x/sglang/srt/managers/scheduler.py", line 1, in event_loop_normal'.ljust(width),
        "    result = self.run_batch(batch)".ljust(width),
        '  File "/x/sglang/srt/managers/scheduler.py", line 2, in run_batch'.ljust(width),
        "    x()".ljust(width),
        "RuntimeError: boom",
    ]
    assert len(read_lines(lines).lines) == len(lines)


def test_an_exception_class_from_an_errors_module_is_an_exception() -> None:
    m = RAISED.match("triton.runtime.errors.OutOfResources: out of resource: shared memory")
    assert m is not None and m["type"] == "triton.runtime.errors.OutOfResources"
    assert RAISED.match("the errors.Foo of a sentence") is None
