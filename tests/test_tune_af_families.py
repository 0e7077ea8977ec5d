"""The patterns, family words and reader changes written on batch AF's misses (published after
its first-seen scoring), tried on texts that are not in the corpus and on near misses they must
leave alone. With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.journal import JournalLines
from orchestrator.diagnosis.model import example
from orchestrator.diagnosis.structure import assert_above

LANDS = [
    # the NVIDIA device plugin on a node without the toolkit
    (
        "gpu-unavailable",
        "E1203 10:11:12.000000       1 factory.go:113] If this is a GPU node, did you configure "
        "the NVIDIA Container Toolkit?",
    ),
    # the GPU operator's driver container, apt's words
    (
        "gpu-unavailable",
        "E: Unable to locate package linux-headers-6.8.0-1015-gcp",
    ),
    # CUDA's 35 by its number after another runtime call
    (
        "driver-too-old",
        'RuntimeError: CUDA error calling "cudaSetDevice(0)", code is 35',
    ),
    # nccl-tests' CUDA check on another fault
    ("cuda-illegal-access", "Cuda failure common.cu:892 'unspecified launch failure'"),
    # older torch's THC check on a device-side assertion, another file
    (
        "cuda-device-assert",
        "RuntimeError: cuda runtime error (59) : device-side assert triggered at "
        "/pytorch/aten/src/THC/generic/THCStorage.cpp:36",
    ),
    # NCCL's calloc of another size, the async form
    ("cuda-oom", "node-2:311:402 [3] NCCL WARN Failed to CUDA calloc async 65536 bytes"),
    # NVLS multicast set-up, another error code
    (
        "nccl-error",
        "gpu-7:4242:4300 [0] NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of "
        "size 1073741824 : CUDA error 801 'operation not supported'",
    ),
    # Ray's memory monitor, only the tail of its message kept
    (
        "host-oom-killed",
        "(RolloutWorker pid=311) Refer to the documentation on how to address the out of memory "
        "issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. "
        "Consider provisioning more memory on this node.",
    ),
    # a Ray task whose code ran out of GPU memory
    (
        "cuda-oom",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_generate() "
        "(pid=311, ip=10.0.0.2)",
    ),
    # SGLang's LoRA code on another module
    (
        "lora-unsupported",
        "NotImplementedError: " + example("lora-module-unsupported", module="fc1"),
    ),
    # an attention feature only FA3 has, another feature
    (
        "attention-backend-unsupported",
        "ValueError: Sliding window with sinks is only supported in FlashAttention 3.",
    ),
    # vLLM V0's block allocator, any wrapper
    (
        "kv-cache-oom-runtime",
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/vllm/core/block/cpu_gpu_block_allocator.py",'
        " line 144, in allocate_mutable_block\n"
        "    return self._allocators[device].allocate_mutable_block(\n"
        "vllm.core.block.interfaces.BlockAllocator.NoFreeBlocksError",
    ),
    # a build tool of Triton's LLVM on an older glibc
    (
        "jit-build-failed",
        "/root/.triton/llvm/llvm-86b69c31-almalinux-x64/bin/mlir-tblgen: /lib64/libc.so.6: "
        "version `GLIBC_2.34' not found (required by "
        "/root/.triton/llvm/llvm-86b69c31-almalinux-x64/bin/mlir-tblgen)",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_another_code_after_a_runtime_call_is_no_old_driver() -> None:
    log = 'RuntimeError: CUDA error calling "cudaGetDeviceCount(&devCount)", code is 350\n'
    assert classify_text(log).category != "driver-too-old"


@pytest.mark.usefixtures("rules_only")
def test_a_librarys_glibc_is_no_build_tools() -> None:
    # a Python extension needing a newer glibc is the package's, not a build that failed
    log = (
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
        "/opt/venv/lib/python3.10/site-packages/vllm/_C.abi3.so)\n"
    )
    assert classify_text(log).category != "jit-build-failed"


@pytest.mark.usefixtures("rules_only")
def test_a_kernel_fault_nccl_met_outranks_a_peers_reset() -> None:
    # the peer's reset comes first in the paste; the rank that faulted is the cause
    log = (
        "host-b:311:402 [0] include/socket.h:428 NCCL WARN Net : Call to recv from "
        "10.0.0.1<36048> failed : Connection reset by peer\n"
        "host-a:104:104 [1] init.cc:204 NCCL WARN Cuda failure 'an illegal memory access was "
        "encountered'\n"
    )
    assert classify_text(log).category == "cuda-illegal-access"


@pytest.mark.usefixtures("rules_only")
def test_rays_own_memory_kill_is_not_the_gpus() -> None:
    log = (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
    )
    assert classify_text(log).category == "host-oom-killed"


@pytest.mark.usefixtures("rules_only")
def test_rays_store_larger_than_shm_is_a_fallback() -> None:
    alone = (
        "2026-01-02 10:11:12,000\tWARNING services.py:2009 -- The configured object store size "
        "(20.24 GB) exceeds /dev/shm size (10.73 GB). This will harm performance.\n"
    )
    assert classify_text(alone).category == "host-memory-exhausted"
    named = alone + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert classify_text(named).category == "cuda-oom"


def test_a_bare_assertion_reads_the_statement_above_it_not_the_line_below() -> None:
    lines = JournalLines(
        "assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)\n"
        "AssertionError\n"
        "Process SpawnProcess-1:\n"
    )
    assert assert_above(lines, 1) == (
        "assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)"
    )
    # nothing above it but a log line: no message
    assert assert_above(JournalLines("INFO started\nAssertionError\n"), 1) == ""
