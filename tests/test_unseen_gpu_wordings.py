"""Round 2, group B (GPU, accelerator, host memory, network): the families batch E missed,
in wordings derived from the libraries' own message formats (CUDA's error enum, llama.cpp's
ggml-cuda, NCCL's alloc.h, the NVIDIA device plugin and pynvml, Go's and Node's net errors,
gradio, Ray's object store, bash/zsh job reports), none taken from tests/logs/real/. The
lookalikes stay where they are."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

WORDINGS: list[tuple[str, str]] = [
    ("CUDA error 2 at ggml/src/ggml-cuda/ggml-cuda.cu:2311: out of memory", "cuda-oom"),
    ("ggml_cuda_compute_forward: HIP error 2 at ggml-cuda.cu:95: out of memory", "cuda-oom"),
    (
        "[TM][ERROR] CUDA runtime error: out of memory /opt/src/turbomind/allocator.h:231",
        "cuda-oom",
    ),
    ("RuntimeError: CUDA_ERROR_OUT_OF_MEMORY: out of memory", "cuda-oom"),
    (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled cuda error, NCCL version 2.21.5\nncclUnhandledCudaError: Call to CUDA "
        "function failed.\nLast error:\nFailed to CUDA malloc 134217728 bytes",
        "cuda-oom",
    ),
    (
        "(raylet) store_runner.cc:83: System memory request exceeds memory available in "
        "/dev/shm. The request is for 2147483648 bytes, and the amount available is 67108864 "
        "bytes.",
        "host-memory-exhausted",
    ),
    ("OSError: /dev/shm is too small for the shared KV transfer buffer", "host-memory-exhausted"),
    ("listen tcp 0.0.0.0:8080: bind: address already in use", "port-in-use"),
    ("Error: listen EADDRINUSE: address already in use :::3000", "port-in-use"),
    (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 "
        "(errno: 98 - Address already in use).",
        "port-in-use",
    ),
    ("OSError: Cannot find empty port in range: 7861-7861.", "port-in-use"),
    ("Failed to initialize NVML: Unknown Error", "gpu-unavailable"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "gpu-unavailable"),
    ("E1203 nvidia.go:61] failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND", "gpu-unavailable"),
    (
        "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver",
        "driver-too-old",
    ),
    (
        "misc/argcheck.cc:39 NCCL WARN Cuda failure 'API call is not supported in the installed "
        "CUDA driver'\ninit.cc:895 NCCL WARN Cuda failure 'invalid device ordinal'",
        "driver-too-old",
    ),
    (
        "RuntimeError: FlashAttention-3 only supports Hopper GPUs or newer.",
        "kernel-unsupported-arch",
    ),
    ("AssertionError: this kernel requires sm90 or above", "kernel-unsupported-arch"),
    (
        "Loading safetensors checkpoint shards:  41% Completed | 7/17 [00:31<00:44, "
        "3.42s/it]Killed",
        "host-oom-killed",
    ),
    ("Killed", "host-oom-killed"),
    (
        "ERROR 12-03 10:00:01 [core.py:700] [3/7] /opt/rocm/bin/hipcc -c prefill.hip -o "
        "prefill.o --offload-arch=gfx942",
        "jit-build-failed",
    ),
    (
        "zsh: killed     python3 -m sglang.launch_server --model-path /models/kimi",
        "host-oom-killed",
    ),
]


@pytest.mark.parametrize(("log", "category"), WORDINGS, ids=[c for _, c in WORDINGS])
def test_batch_e_families_land_in_unseen_words(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"


LOOKALIKES: list[tuple[str, str]] = [
    # a privileged port (errno 13) is not a taken one, in c10d's per-address words too
    (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:98 "
        "(errno: 13 - Permission denied).",
        "unknown",
    ),
    # Ray falling back to /tmp is a warning, not a failure
    (
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only "
        "67108864 bytes available. This will harm performance!",
        "unknown",
    ),
    # a SIGKILL after a logged error is that error's, not the OOM killer's
    (
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "ValueError: bad config\nKilled",
        "unknown",
    ),
    # a compiler step at INFO level is a build going on, not one that failed
    (
        "INFO 12-03 10:00:01 [jit.py:80] [3/7] /usr/local/cuda/bin/nvcc -c prefill.cu -o prefill.o",
        "unknown",
    ),
    # a word "Killed" inside a sentence is no shell report
    ("INFO: Killed idle connection 7 after 60 s", "unknown"),
    # an architecture floor for a CPU feature is no GPU's
    ("RuntimeError: this build requires AVX2 or newer", "unknown"),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("log", "category"), LOOKALIKES, ids=[c for _, c in LOOKALIKES])
def test_batch_e_families_leave_lookalikes_alone(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"
