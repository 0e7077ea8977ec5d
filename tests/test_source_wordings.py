"""SGLang's own refusals land in their categories whatever the release: the messages here are
taken from SGLang's sources (the `raise`/`assert` sites of sglang/srt in releases 0.3.6.post3,
0.4.6.post5, 0.4.10.post2, 0.5.11 and 0.5.23, their placeholders filled in), and a few from the
libraries under it (torch 2.13's torch.cuda, transformers 5.19, vLLM 0.11.0), each raised from
the file that raises it. None is taken from tests/logs/real/. They hold the exception families
that carry a cause over to wordings no pattern knows: a feature that needs another GPU
generation, a package named as missing in the code's own words, a memory pool with no room
left, a TP shard that is not whole, a platform probe that finds no accelerator, a model
directory without weights. The lookalikes (the same words, another cause) stay out."""

from __future__ import annotations

import re
import time

import pytest

from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.model import under

_SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"


def _raised(path: str, exc: str, msg: str) -> str:
    """What SGLang prints when `path` raises: the traceback's last frame, then the line."""
    return under(_SITE + path, "__init__", f"{exc}: {msg}", line=120)


SOURCE: list[tuple[str, str, str, str]] = [
    # a feature that needs another GPU generation (arg hooks, quantisation methods, MoE runners)
    (
        "layers/quantization/mxfp4.py",
        "RuntimeError",
        "MXFP4 Marlin requires SM90+.",
        "kernel-unsupported-arch",
    ),
    (
        "arg_groups/kv_cache_hook.py",
        "RuntimeError",
        "--kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120. Use --kv-cache-dtype=fp4_mx_block16 for the block-size-16 FP4 recipe.",
        "kernel-unsupported-arch",
    ),
    (
        "arg_groups/overrides.py",
        "ValueError",
        "--quantization nvfp4_online is supported only on NVIDIA Blackwell SM100/SM103 GPUs.",
        "kernel-unsupported-arch",
    ),
    (
        "layers/quantization/compressed_tensors/schemes/compressed_tensors_w4a4_nvfp4_moe.py",
        "ValueError",
        "Current platform does not support NVFP4 quantization. Please use Blackwell and above.",
        "kernel-unsupported-arch",
    ),
    (
        "layers/moe/moe_runner/runner.py",
        "ValueError",
        "--moe-runner-backend hpc_ops requires an SM90 (Hopper) GPU (the HPC-Ops kernels ship sm90a only), got sm80.",
        "kernel-unsupported-arch",
    ),
    (
        "layers/quantization/fp8.py",
        "AssertionError",
        "cutlass_fp8 MoE requires SM90, SM100, or SM120 GPUs",
        "kernel-unsupported-arch",
    ),
    (
        "utils.py",
        "AssertionError",
        "SGlang only supports sm 75 and above",
        "kernel-unsupported-arch",
    ),
    # ... an attention backend that needs another GPU generation
    (
        "arg_groups/deepseek_v4_hook.py",
        "AssertionError",
        "--dsv4-attn-backend trtllm requires an SM100/SM103 (Blackwell) GPU.",
        "attention-backend-unsupported",
    ),
    (
        "layers/attention/dsa_backend.py",
        "ValueError",
        "triton_sparse_mla requires SM90 (Hopper) or newer; got sm_major=8.",
        "attention-backend-unsupported",
    ),
    # a package named as missing, in the code's own words
    (
        "layers/quantization/petit_utils.py",
        "ValueError",
        "Petit is not installed. Please install it with `pip install petit-kernel`.",
        "python-import-error",
    ),
    (
        "arg_groups/serving_hook.py",
        "ValueError",
        "--enable-http2 requires the 'granian' package. Install it with: pip install \"sglang[http2]\"",
        "python-import-error",
    ),
    (
        "mem_cache/storage/lmcache/lmc_radix_cache.py",
        "RuntimeError",
        "LMCache is not installed. Please install it by running `pip install lmcache`",
        "python-import-error",
    ),
    (
        "multimodal/processors/mimo_audio.py",
        "RuntimeError",
        "torchcodec is required for audio decoding; install with `pip install torchcodec`.",
        "python-import-error",
    ),
    # SGLang's memory pools with no room left on the GPU after the weights
    (
        "model_executor/pool_configurator.py",
        "RuntimeError",
        "SWA pool cap (65536 tokens, 3.5 GiB) leaves no room for the full KV pool within the available 2.1 GiB. Reduce --max-running-requests, lower SGLANG_SWA_EVICTION_RATIO",
        "cuda-oom",
    ),
    (
        "mem_cache/memory_pool.py",
        "AssertionError",
        "Not enough space for mamba cache, try to increase --mamba-full-memory-ratio or --max-mamba-cache-size.",
        "cuda-oom",
    ),
    # a TP shard that is not whole
    (
        "configs/inkling.py",
        "AssertionError",
        "hidden_size 7168 not divisible by attn tp 6",
        "tp-size-indivisible",
    ),
    (
        "model_executor/model_runner.py",
        "ValueError",
        "For quantized MoE models, please make sure (moe_intermediate_size=1536 / moe_tp_size=8) % weight_block_size_n=128 == 0 where moe_tp_size is equal to tp_size or tp_size divided by ep_size.",
        "tp-size-indivisible",
    ),
    # a platform probe that finds no accelerator
    (
        "utils/common.py",
        "RuntimeError",
        "No supported accelerator (CUDA/XPU) available",
        "gpu-unavailable",
    ),
    (
        "utils/common.py",
        "RuntimeError",
        "torch_npu detected, but NPU device is not available or visible.",
        "gpu-unavailable",
    ),
    (
        "utils.py",
        "RuntimeError",
        "nvidia-smi not found. Ensure NVIDIA drivers are installed and accessible.",
        "gpu-unavailable",
    ),
    # ... and from the libraries under it (torch.cuda, transformers' quantizers)
    (
        "../torch/cuda/__init__.py",
        "RuntimeError",
        "device 3 is not visible (CUDA_VISIBLE_DEVICES=0,1)",
        "gpu-unavailable",
    ),
    (
        "../torch/cuda/__init__.py",
        "RuntimeError",
        "cuda driver can't be loaded, is cuda enabled?",
        "gpu-unavailable",
    ),
    (
        "../transformers/quantizers/quantizer_finegrained_fp8.py",
        "RuntimeError",
        "No GPU or XPU found. A GPU or XPU is needed for FP8 quantization.",
        "gpu-unavailable",
    ),
    # an allocation the engine blames on memory (vLLM's linear layers)
    (
        "../vllm/model_executor/layers/linear.py",
        "RuntimeError",
        "Failed to create unquantized linear weights. This may be caused by insufficient memory to allocate the weight.",
        "cuda-oom",
    ),
    # an adapter above the rank the server reserved for LoRA
    (
        "lora/lora_manager.py",
        "ValueError",
        "LoRA adapter sql with rank 128 is incompatible with the current LoRA memory pool configuration. Please ensure that the LoRA adapter's rank is within the configured `--max-lora-rank` and that the target modules are included in `--lora-target-modules`.",
        "lora-unsupported",
    ),
    # a model directory without weights
    (
        "model_loader/loader.py",
        "RuntimeError",
        "No model weights found in: `/models/Kimi-K2.6`",
        "model-not-found",
    ),
]


@pytest.mark.parametrize(("path", "exc", "msg", "category"), SOURCE, ids=lambda v: str(v)[:48])
def test_sglang_refusals_from_its_sources_land_in_their_category(
    path: str, exc: str, msg: str, category: str
) -> None:
    d = classify_text(_raised(path, exc, msg))
    assert d.category == category, (d.category, d.summary)
    # the answer quotes the message: the fix can use what the log says
    assert msg[:40] in d.summary + " ".join(e.message for e in d.evidence)


LOOKALIKES: list[tuple[str, str, str]] = [
    # a GPU generation named, but not as what the feature needs (a checkpoint's missing scales)
    (
        "layers/moe/moe_runner/flashinfer_cutlass.py",
        "ValueError",
        "SM90 Humming MXFP4 MoE requires both expert residual scales and the FC2 activation scale.",
    ),
    (
        "layers/quantization/mxfp4_flashinfer_cutlass_moe.py",
        "ValueError",
        "SM120 FlashInfer MXFP4 weights must be contiguous.",
    ),
    # an install hint for another version is a version mismatch, not a missing package
    (
        "distributed/device_communicators/mooncake_transfer_engine.py",
        "RuntimeError",
        "Mooncake's batch transfer requires mooncake-transfer-engine >= 0.3.4.post2. Please upgrade Mooncake by 'pip install mooncake-transfer-engine --upgrade'",
    ),
    # the host's memory, not the GPU's
    (
        "mem_cache/memory_pool_host.py",
        "ValueError",
        "Not enough host memory for NSA indexer hierarchical cache. Requesting 120 GB but only have 64 GB free.",
    ),
    # divisible, but not by a parallel size
    (
        "arg_groups/validation_hook.py",
        "AssertionError",
        "chunked_prefill_size must be divisible by page_size",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("path", "exc", "msg"), LOOKALIKES, ids=lambda v: str(v)[:48])
def test_lookalikes_stay_out(path: str, exc: str, msg: str) -> None:
    d = classify_text(_raised(path, exc, msg))
    assert d.category not in {
        "kernel-unsupported-arch",
        "attention-backend-unsupported",
        "python-import-error",
        "cuda-oom",
        "tp-size-indivisible",
    }, (d.category, d.summary)


def test_family_shapes_stay_linear_on_long_lines() -> None:
    """Every family's shape on 48 kB lines of its own vocabulary (requirement words, GPU
    generations, their run-up characters), capped as the reader caps a line."""
    shapes = {f.shape for r in R.RULES for f in r.families if f.shape}
    assert shapes, "no family has a shape"
    parts = [
        "requires ",
        "SM90",
        "SM ",
        "sm_",
        "Blackwell ",
        "needs ",
        "and ",
        "or ",
        "- ",
        "(",
        "a" * 39,
    ]
    size = 48 * 1024
    lines = [((p * (size // len(p) + 1))[:size]) for p in parts]
    lines.append(("".join(parts) * (size // len("".join(parts)) + 1))[:size])
    worst = 0.0
    for shape in shapes:
        rx = re.compile(shape)
        for line in lines:
            t = time.perf_counter()
            rx.search(line)
            worst = max(worst, time.perf_counter() - t)
    assert worst < 0.5, worst


@pytest.mark.usefixtures("rules_only")
def test_a_model_configs_own_head_check_is_not_a_tp_size() -> None:
    """transformers checks hidden_size against the head count in dozens of model classes
    (configuration and modeling files): a malformed config, whatever the TP size. The rules
    leave it alone (the corpus vocabulary may still read it by its words, as a reading)."""
    for path, msg in (
        (
            "transformers/models/bloom/modeling_bloom.py",
            "`hidden_size` must be divisible by num_heads (got `hidden_size`: 4096 and `num_heads`: 30).",
        ),
        (
            "transformers/models/gpt_neox/configuration_gpt_neox.py",
            "The hidden size is not divisible by the number of attention heads! Make sure to update them!",
        ),
    ):
        text = under(
            f"/usr/local/lib/python3.12/dist-packages/{path}", "__init__", f"ValueError: {msg}"
        )
        assert classify_text(text).category != "tp-size-indivisible", msg
    # a parallel size named still is one
    assert (
        classify_text(
            "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (6)."
        ).category
        == "tp-size-indivisible"
    )


def test_sglangs_argument_parser_refusing_a_flag_gets_a_fix_from_the_flag_tables() -> None:
    """argparse's refusal has no category (an unknown answer), but the flag tables of the
    releases deploy knows say where a flag lives: the fix names them, or the nearest spelling."""
    d = classify_text(
        "usage: launch_server.py [-h] --model-path MODEL_PATH\n"
        "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2"
    )
    assert d.category == "unknown"
    assert "--reasoning_parser is no flag of any SGLang release deploy knows" in d.fix
    assert "nearest: --reasoning-parser" in d.fix
    d = classify_text(
        "launch_server.py: error: unrecognized arguments: --served-model-name minimax-h3"
    )
    assert "--served-model-name is a flag of other SGLang releases" in d.fix
    d = classify_text(
        "sglang: error: argument --attention-backend: invalid choice: 'torch_sdpa' "
        "(choose from 'triton', 'torch_native')"
    )
    assert "'torch_sdpa' is not among the values --attention-backend takes" in d.fix
    d = classify_text(
        "sglang: error: argument --attention-backend: invalid choice: 'fa3' "
        "(choose from 'triton', 'torch_native')"
    )
    assert "--attention-backend fa3 is a choice of other SGLang releases" in d.fix
    # another program's parser: SGLang's tables say nothing of its flags
    d = classify_text("mlx_vlm.server: error: unrecognized arguments: --trust-remote-code")
    assert "SGLang" not in d.fix


@pytest.mark.parametrize(
    "line",
    [
        # NCCL's result strings (ncclGetErrorString), in wrappers no rule names
        "E1203 10:00:00.1 123 comm.cc:88] NCCL op allreduce failed: remote process exited or "
        "there was a network error",
        "Error: NCCL error in broadcast: invalid usage (run with NCCL_DEBUG=WARN for details)",
        "engine: collective failed: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ],
)
def test_nccls_own_result_strings_land_whatever_wraps_them(line: str) -> None:
    assert classify_text(line).category == "nccl-error"


def test_the_printed_line_wins_over_the_source_line_a_traceback_quotes() -> None:
    """A frame's quoted source line holds the message's template (`raise RuntimeError(f"NCCL
    error: {error_str}")`): the summary and the evidence quote what the program printed."""
    d = classify_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/distributed/'
        'device_communicators/pynccl_wrapper.py", line 392, in NCCL_CHECK\n'
        '    raise RuntimeError(f"NCCL error: {error_str}")\n'
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    assert d.category == "nccl-error"
    assert "{error_str}" not in d.summary and "unhandled system error" in d.summary
    assert d.evidence[-1].text.startswith("RuntimeError: NCCL error: unhandled system error")
    # a paste cut right after the quoted line: that line is all there is, and still read
    d = classify_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/triton/runtime/build.py", line 32, in _build\n'
        '    raise RuntimeError("Failed to find C compiler. Please specify via CC environment variable.")\n'
    )
    assert d.category == "jit-build-failed"
