"""The structure and patterns written on batches R's and T's misses (published after their
first-seen scoring), tried on wordings that are not in the corpus and on near misses they must
leave alone. With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.journal import JournalLines
from orchestrator.diagnosis.structure import tracebacks
from orchestrator.sglang import NEWEST, all_messages

# SGLang's words come from their home (orchestrator/sglang), never typed here
_OLD_NOT_ENOUGH = all_messages("not-enough-memory")[-1]
_SIGQUIT = all_messages("sigquit")[-1].text
_SCHEDULER_HIT = NEWEST.message("scheduler-exception").format(traceback="").rstrip()

LANDS = [
    # SGLang's memory messages: 0.1.x's typo, and the unbalanced check pasted without its detail
    ("cuda-oom", _OLD_NOT_ENOUGH.line()),
    (
        "cuda-oom",
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes.",
    ),
    # a KV-cache budget printed negative, in another engine's words
    ("cuda-oom", "INFO 01-02 03:04:05 [worker.py:1] KV cache size: -512.00 MiB"),
    # torch's pre-1.5 NCCL check as the C++ terminate prints it
    (
        "nccl-error",
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  NCCL Error 2: unhandled system error",
    ),
    # NCCL's network transport failing a work completion (a plugin's NET/ tag, error form)
    (
        "nccl-error",
        "NET/IBext : Got completion from peer 10.0.0.7<51234> with error 5, opcode 1, len 0, "
        "vendor err 244",
    ),
    # torch's rendezvous store could not listen, the paste cut before its errno
    (
        "port-in-use",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address.",
    ),
    # a scheduler's GPU resource of another vendor's device plugin
    (
        "gpu-unavailable",
        "Warning  FailedScheduling  10s  default-scheduler  0/4 nodes are available: 4 "
        "Insufficient example.com/vgpu.",
    ),
    # go-nvml's return code names, CDI injection, the nvidia-ctk hook, crun's missing tool
    ("gpu-unavailable", "failed to initialize NVML: ERROR_DRIVER_NOT_LOADED"),
    (
        "gpu-unavailable",
        'Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all: failed to inject devices: failed to stat CDI host device "/dev/nvidia-uvm"',
    ),
    (
        "gpu-unavailable",
        'Error: OCI runtime error: runc: {"msg":"error running hook `/usr/bin/nvidia-container-runtime-hook` (exit code: 1)"}',
    ),
    (
        "gpu-unavailable",
        "Error: crun: executable file `nvidia-smi` not found in $PATH: No such file or directory",
    ),
    # NVML lost the GPU, and a monitor's Xid without the kernel's NVRM line
    ("gpu-xid", "pynvml.NVMLError_GPUIsLost: GPU is lost"),
    (
        "gpu-xid",
        "Unable to determine the device handle for GPU 0000:17:00.0: Unknown Error",
    ),
    ("gpu-xid", 'level=error msg="Xid 48 occurred on GPU-0a1b2c"'),
    # another CPU's binary (ENOEXEC) as a shell says it
    ("exec-failed", "/bin/sh: 1: /opt/venv/bin/python3: Exec format error"),
    # a launcher's readiness timeout, in other words
    ("startup-timeout", "RuntimeError: Timed out waiting for the sglang server to be ready"),
    (
        "startup-timeout",
        "ERROR: engine did not become healthy within 600 seconds, giving up",
    ),
    # a distribution missing, by pkg_resources
    (
        "python-import-error",
        "pkg_resources.DistributionNotFound: The 'flashinfer-python>=0.2' distribution was not "
        "found and is required by this application",
    ),
    # vLLM's speculative config refused by pydantic
    (
        "spec-config-invalid",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
        "  Value error, num_speculative_tokens must be a positive integer",
    ),
    # torch's older CUDA status line
    (
        "cuda-illegal-access",
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCTensorMath.cu line=14 error=77 : "
        "an illegal memory access was encountered",
    ),
    # a JIT's missing tool and a C++ JIT's failed compiler run
    ("jit-build-failed", "RuntimeError: Could not find nvcc. Set CUDA_HOME."),
    (
        "jit-build-failed",
        "RuntimeError: Assertion error (/opt/deep_gemm/jit/compiler.hpp:120): return_code == 0",
    ),
    # an attention kernel's bare assertion on the head size, old layout
    (
        "attention-backend-unsupported",
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/sglang/srt/layers/token_attention.py", line 300, in token_attention_fwd\n'
        "    assert Lk in {16, 32, 64, 128}\n"
        "AssertionError",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_pattern_lands_on_another_wording(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


LEAVES = [
    # a listen refused for a privileged port, or an address the host does not have
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. The server socket has failed to bind to 0.0.0.0:98 (errno: 13 - "
    "Permission denied).",
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. port: 29500, useIpv6: 0, code: -99, name: EADDRNOTAVAIL, message: "
    "cannot assign requested address",
    # NCCL's transport at INFO level, and a completion without an error
    "node-1:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
    # an application Xid in a monitor's words is not a hardware fault
    'level=warning msg="Xid 13 occurred on GPU-0a1b2c"',
    # a bare assertion outside an attention kernel
    "Traceback (most recent call last):\n"
    '  File "/x/site-packages/sglang/srt/models/llama.py", line 10, in forward\n'
    "    assert head_dim in {64, 128}\n"
    "AssertionError",
    # a server that started, in a launcher's words
    "INFO: sglang server became ready after 312 seconds",
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize("text", LEAVES)
def test_a_near_miss_is_left_alone(text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category not in (
        "port-in-use",
        "nccl-error",
        "gpu-xid",
        "attention-backend-unsupported",
        "startup-timeout",
    ), (d.category, d.summary)


def test_a_skipped_extension_is_not_the_failure() -> None:
    # torchao warns at import that it skipped its C++ extension and runs on; the OOM later is
    # the cause
    log = (
        "[2025-04-20 14:03:03] Skipping import of cpp extensions: /x/torchao/_C.abi3.so: "
        "undefined symbol: _ZN3c105ErrorC2E\n"
        f"[2025-04-20 14:03:13 TP0] {_SCHEDULER_HIT} Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
        "    scheduler = Scheduler()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB. GPU 0 has a "
        "total capacity of 15.58 GiB of which 54.38 MiB is free.\n"
    )
    assert classify_text(log).category == "cuda-oom"


def test_a_logger_header_ends_an_exception_message() -> None:
    # SGLang's own log line after the exception is a new record, not the message's next line
    log = (
        f"[2025-02-14 07:01:26 TP0] {_SCHEDULER_HIT} Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/layers/linear.py", line 1, in __init__\n'
        "    raise ValueError('x')\n"
        "ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = "
        "128. Consider reducing tensor_parallel_size.\n"
        f"[2025-02-14 07:01:26] {_SIGQUIT}\n"
        "Killed\n"
    )
    entries = JournalLines(log)
    (tb,) = tracebacks(entries, [0])
    assert "sigquit" not in tb.root.message
    assert classify_text(log).category == "tp-size-indivisible"


def test_a_bare_assertion_reads_its_assert_statement() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/a.py", line 3, in f\n'
        "    assert Lq in {16, 32}\n"
        "AssertionError\n"
    )
    (tb,) = tracebacks(JournalLines(log), [0])
    assert tb.root.message == "assert Lq in {16, 32}"


def test_the_old_wording_is_sglangs_own() -> None:
    # kept in orchestrator/sglang as the 0.1.x text (read off sglang 0.1.14's model_runner.py)
    new, old = all_messages("not-enough-memory")[0].text, _OLD_NOT_ENOUGH.text
    assert old != new and old.replace("enought", "enough") == new
