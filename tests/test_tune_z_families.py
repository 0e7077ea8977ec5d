"""The structure and patterns written on batch Z's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

# a caller's frame quotes a GPU-generation check on its way to a probe that raised
_PROBE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 900, in __init__\n'
    "    self.attn_backend = pick_backend(\n"
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/attention/selector.py", line 120, in pick_backend\n'
    "    if current_platform.get_device_capability()[0] < 8:\n"
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/platforms/interface.py", line 31, in get_device_capability\n'
    "    raise NotImplementedError\n"
    "NotImplementedError\n"
)


@pytest.mark.usefixtures("rules_only")
def test_code_in_a_callers_frame_names_no_cause() -> None:
    d = classify_text(_PROBE)
    assert d.category == "gpu-unavailable", (d.category, d.summary)
    assert "kernel-unsupported-arch" not in d.also
    assert "get_device_capability" in d.summary


@pytest.mark.usefixtures("rules_only")
def test_the_statement_that_failed_still_says_why() -> None:
    # the innermost frame's own assertion on the GPU generation is the cause it always was
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/deep_gemm/jit/compiler.py", line 50, in build\n'
        "    check()\n"
        '  File "/opt/venv/lib/python3.11/site-packages/deep_gemm/utils.py", line 12, in check\n'
        "    assert arch_major == 10\n"
        "AssertionError\n"
    )
    assert classify_text(log).category == "kernel-unsupported-arch"


@pytest.mark.usefixtures("rules_only")
def test_a_probe_elsewhere_is_not_a_missing_gpu() -> None:
    # the same bare exception raised by a model's own code is no platform probe
    log = _PROBE.replace("vllm/platforms/interface.py", "mypkg/models/llama.py")
    assert classify_text(log).category != "gpu-unavailable"


LANDS = [
    # a bare assertion that is the divisibility check itself, in another dimension
    (
        "tp-size-indivisible",
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/engine/layers/linear.py", line 40, in __init__\n'
        "    assert self.intermediate_size % self.tp_size == 0\n"
        "AssertionError\n",
    ),
    # a speculative step refused by another engine's executor
    (
        "spec-config-invalid",
        "NotImplementedError: Drafting is not supported with the overlap scheduler; disable it "
        "to use speculative decoding.",
    ),
    # vLLM's registry for a model class it does not implement
    (
        "model-arch-unsupported",
        "ValueError: GemmaForTokenClassification has no vLLM implementation and the Transformers "
        "implementation is not compatible with vLLM.",
    ),
    # ninja's failed step, the compiler killed by a signal before it printed anything
    (
        "jit-build-failed",
        "[1/3] /usr/local/cuda/bin/nvcc -c moe.cu -o moe.cuda.o\n"
        "FAILED: [code=139] moe.cuda.o \n"
        "/usr/local/cuda/bin/nvcc -c moe.cu -o moe.cuda.o\n",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_an_assertion_on_another_remainder_is_not_a_tp_size() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/engine/kv.py", line 40, in __init__\n'
        "    assert self.page_size % 16 == 0\n"
        "AssertionError\n"
    )
    assert classify_text(log).category != "tp-size-indivisible"


@pytest.mark.usefixtures("rules_only")
def test_a_compiler_error_above_ninja_is_the_answer_it_was() -> None:
    # ninja's FAILED line is a fallback: the compiler's own error line says more
    log = 'FAILED: moe.cuda.o \nmoe.cu(12): error: identifier "__nv_fp8_e4m3" is undefined\n'
    d = classify_text(log)
    assert d.category == "jit-build-failed"
    assert "identifier" in d.evidence[-1].message


@pytest.mark.usefixtures("rules_only")
def test_a_store_closed_by_its_crashed_owner_is_no_rendezvous_failure() -> None:
    # rank 0's process (which holds the TCPStore) exited: the other rank's recv got 0 bytes
    closed = (
        "[rank1]:[W1119 17:59:26.271588084 TCPStore.cpp:125] [c10d] recvValue failed on "
        "SocketImpl(fd=61, addr=[localhost]:33850, remote=[localhost]:30005): Failed to recv, "
        "got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n"
    )
    assert classify_text(closed).category != "dist-init-timeout"
    # a socket the network reset is the rendezvous failure it always was
    reset = (
        "[rank1]:[E1119 17:59:26.271588084 TCPStore.cpp:125] [c10d] recvValue failed on "
        "SocketImpl(fd=61, addr=[10.0.0.2]:33850, remote=[10.0.0.1]:30005): Connection reset "
        "by peer\n"
    )
    assert classify_text(reset).category == "dist-init-timeout"


def _sgl_kernel_assert(module: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/flashmla_backend.py", '
        "line 300, in forward_decode\n"
        "    o = flash_mla_with_kvcache(\n"
        f'  File "/opt/conda/lib/python3.11/site-packages/sgl_kernel/{module}", line 40, in '
        "flash_mla_with_kvcache\n"
        "    assert num_heads_q % 64 == 0, f'num_heads_q must be a multiple of 64, got {num_heads_q}'\n"
        "AssertionError: num_heads_q must be a multiple of 64, got 8\n"
    )


@pytest.mark.usefixtures("rules_only")
def test_an_attention_ops_own_shape_check_is_the_backend() -> None:
    d = classify_text(_sgl_kernel_assert("flash_mla.py"))
    assert d.category == "attention-backend-unsupported", (d.category, d.summary)
    assert "num_heads_q" in d.fix


@pytest.mark.usefixtures("rules_only")
def test_the_same_check_in_another_op_is_not_the_attention_backend() -> None:
    d = classify_text(_sgl_kernel_assert("moe.py"))
    assert d.category != "attention-backend-unsupported", (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize("prefix", ["[1,0]<stderr>:", "<14>1 2026-12-07T10:00:00Z host app 1 - - "])
def test_a_builds_last_words_keep_their_category_under_any_prefix(prefix: str) -> None:
    # ninja's failed step and gcc's last words are not anchored at the line's start: a
    # shipper's prefix the reader did not take off leaves them where they are
    for words in ("FAILED: [code=1] cuda_0.o ", "compilation terminated."):
        d = classify_text(f"{prefix}{words}\n")
        assert d.category == "jit-build-failed", (words, d.category)
