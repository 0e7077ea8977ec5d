"""The patterns written on batch Q's misses (published after its first-seen scoring), tried on
wordings that are not in the corpus and on near misses they must leave alone. With the rules
alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.reader import read_lines

LANDS = [
    # transformers' GGUF loader, vLLM's Transformers backend
    ("model-arch-unsupported", "ValueError: Architecture deepseek2 not supported"),
    (
        "model-arch-unsupported",
        "ValueError: Cannot find model module. 'KimiK26ForCausalLM' is not a registered model in "
        "the Transformers library (only relevant if the model is meant to be in Transformers)",
    ),
    # a compute-capability floor, and Ascend's operator package for another SoC
    (
        "kernel-unsupported-arch",
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
        "capability: 80. Current capability: 75.",
    ),
    (
        "kernel-unsupported-arch",
        "[ERROR] the socversion Ascend910B3 of bin package does not match the current device "
        "socverison Ascend910B1.",
    ),
    # TPU HBM in XLA's words, HAMi's virtual-GPU limit
    (
        "cuda-oom",
        "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. "
        "Ran out of memory in memory space hbm. Used 40.1G of 31.2G hbm.",
    ),
    (
        "cuda-oom",
        "E tpu_pjrt_client.cc:1889] RESOURCE_EXHAUSTED: Error allocating device buffer: "
        "Attempting to allocate 8.00G.",
    ),
    ("cuda-oom", "[HAMI-core ERROR (pid:7 thread=1 allocator.c:53)]: Device 1 OOM 9000 / 8192"),
    # a JAX mesh wider than the chips, the GPU operator's driver container, docker's CDI driver
    (
        "gpu-unavailable",
        "ValueError: Number of devices 2 must be >= the product of mesh_shape (1, 4)",
    ),
    ("gpu-unavailable", "Could not resolve Linux kernel version"),
    (
        "gpu-unavailable",
        'docker: Error response from daemon: could not select device driver "cdi" with '
        "capabilities: [[GPU]].",
    ),
    # the driver's GSP RPC timeout, and its Xid lines when every line carries NVRM's tag
    ("gpu-xid", "NVRM: GPU3 _kgspLogRpcTimeout: ********** GSP Timeout **********"),
    (
        "gpu-xid",
        "NVRM: GPU at PCI:0000:3b:00: GPU-0a1b\nNVRM: GPU Board Serial Number: 0\n"
        "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
    ),
    # a buildpacks image without a command, vLLM's speculative config, FlashInfer's dispatch
    (
        "exec-failed",
        "ERROR: failed to launch: determine start command: when there is no default process a "
        "command is required",
    ),
    (
        "spec-config-invalid",
        "ValueError: Expected both speculative_model and num_speculative_tokens to be provided, "
        "but found speculative_model='x' and num_speculative_tokens=None.",
    ),
    (
        "attention-backend-unsupported",
        "RuntimeError: BatchDecodeWithPagedKVCache failed to dispatch with dtype BFloat16",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_pattern_lands_on_another_wording(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_a_torchrun_rank_killed_by_sigkill_alone_is_not_named() -> None:
    # the corpus labels a bare exitcode -9 `unknown` (Q twice, R twice) more often than
    # host-oom-killed (N once, M once): no OOM line, no category
    line = "[ERROR] failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /usr/bin/python"
    assert classify_text(line + "\n").category == "unknown"


def test_nvrm_on_every_line_is_the_drivers_tag_not_a_prefix() -> None:
    lines = [
        "NVRM: GPU at PCI:0000:3b:00: GPU-0a1b",
        "NVRM: GPU Board Serial Number: 0",
        "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
        "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        "NVRM: GPU 0000:3b:00.0: GPU serial number is 0.",
    ]
    assert read_lines(lines).lines == lines
