"""Group B families (GPU, accelerator, build and network causes) land whatever the vendor,
release or errno table: the wordings here are derived from the libraries' own message formats
(torch's allocators and c10d, ROCm's HIP runtime, torch_npu, Intel XPU, Triton/ptxas, NCCL,
Windows/macOS errno tables), none taken from tests/logs/real/. Lookalikes stay out."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text, journal
from orchestrator.diagnosis.engine import classify
from orchestrator.diagnosis.model import Family
from orchestrator.diagnosis.structure import exception_message

WORDINGS: list[tuple[str, str]] = [
    # out of device memory, any accelerator
    (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
        "total capacity of 191.98 GiB of which 1.10 GiB is free.",
        "cuda-oom",
    ),
    (
        "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB (NPU 3; 60.96 GiB total "
        "capacity; 58.01 GiB already allocated; 58.01 GiB current active; 211.00 MiB free)",
        "cuda-oom",
    ),
    (
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 15.11 GiB. Of the allocated memory 13.20 GiB is allocated by PyTorch",
        "cuda-oom",
    ),
    (
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.20 GB, other allocations: "
        "1.10 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.",
        "cuda-oom",
    ),
    (
        "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)",
        "cuda-oom",
    ),
    ("torch.OutOfMemoryError: Allocation on device", "cuda-oom"),
    ("RuntimeError: HIP error: out of memory", "cuda-oom"),
    ("node-1:48213:48390 [0] NCCL WARN Cuda failure 2 'out of memory'", "cuda-oom"),
    ("RuntimeError: ACL_ERROR_RT_MEMORY_ALLOCATION: the device has no memory left", "cuda-oom"),
    ("RuntimeError: CUDA driver error: out of memory", "cuda-oom"),
    ("ggml_cuda_init: cudaMalloc failed: out of memory", "cuda-oom"),
    # no usable device, any vendor
    (
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up "
        "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
        "Setting the available devices to be zero.",
        "gpu-unavailable",
    ),
    (
        'docker: Error response from daemon: could not select device driver "" with '
        "capabilities: [[gpu]].",
        "gpu-unavailable",
    ),
    (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
        "update your driver to a newer version, or use an earlier cuda container: unknown.",
        "driver-too-old",
    ),
    ("RuntimeError: No HIP GPUs are available", "gpu-unavailable"),
    ("RuntimeError: HIP error: no ROCm-capable device is detected", "gpu-unavailable"),
    ("Failed to initialize NVML: Driver/library version mismatch", "gpu-unavailable"),
    # driver older than the runtime, by its enum name
    ("RuntimeError: cudaGetDeviceCount failed: cudaErrorInsufficientDriver", "driver-too-old"),
    ("RuntimeError: hipGetDeviceCount failed: hipErrorInsufficientDriver", "driver-too-old"),
    # no code for this GPU, or a GPU below a kernel's floor
    (
        "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nCompile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
        "kernel-unsupported-arch",
    ),
    ("RuntimeError: CUDA error: invalid device function", "kernel-unsupported-arch"),
    (
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
        "kernel-unsupported-arch",
    ),
    (
        "UserWarning: Found GPU0 Tesla K80 which is of cuda capability 3.7. PyTorch no longer "
        "supports this GPU because it is too old. The minimum cuda capability supported by this "
        "library is 5.0.",
        "kernel-unsupported-arch",
    ),
    (
        "RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton "
        "GPU compiler, which is used as the backend. Triton only supports devices of CUDA "
        "Capability >= 7.0, but your device is of CUDA Capability 6.0",
        "kernel-unsupported-arch",
    ),
    (
        "ValueError: FP8 e4m3 kernels require a GPU with compute capability 8.9 or newer; this "
        "GPU has compute capability 8.0",
        "kernel-unsupported-arch",
    ),
    (
        "ValueError: type fp8e4nv not supported on this architecture. The supported fp8 dtypes "
        "are ('fp8e4b15', 'fp8e5')",
        "kernel-unsupported-arch",
    ),
    ("RuntimeError: Unsupported SM version: 75", "kernel-unsupported-arch"),
    (
        "ERROR : Arch conditional MMA instruction used without targeting appropriate compute "
        "capability. Aborting.",
        "kernel-unsupported-arch",
    ),
    # a backend selector that finds none
    (
        "ValueError: No available attention backend for this model on this GPU: FLASHINFER "
        "(head size 576 not supported), TRITON_MLA (compute capability not supported)",
        "attention-backend-unsupported",
    ),
    # an attention kernel's own launch refused: the backend's, not the generic arch rule's
    (
        "RuntimeError: CUDA error: invalid device function (at "
        "/workspace/flash-attention/hopper/flash_fwd_launch_template.h:180)",
        "attention-backend-unsupported",
    ),
    # JIT builds: the PTX assembler, the host compilers
    (
        "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
        "`ptxas` stderr:\nptxas fatal   : Value 'sm_110a' is not defined for option 'gpu-name'",
        "jit-build-failed",
    ),
    ("collect2: error: ld returned 1 exit status", "jit-build-failed"),
    # a new wording raised by a Triton compiler stage itself
    (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/triton/backends/amd/compiler.py", line 401, '
        "in make_hsaco\n"
        "    raise RuntimeError(f'lld failed: {err}')\n"
        "RuntimeError: lld failed: ld.lld: error: unable to find library -lamdhip64",
        "jit-build-failed",
    ),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_120'", "jit-build-failed"),
    (
        "RuntimeError: NVRTC compilation failed: nvrtc: error: invalid value for "
        "--gpu-architecture (-arch)",
        "jit-build-failed",
    ),
    (
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
        "jit-build-failed",
    ),
    ("error: command '/opt/rocm/bin/hipcc' failed with exit code 1", "jit-build-failed"),
    # EADDRINUSE in every errno table
    ("OSError: [Errno 48] Address already in use", "port-in-use"),
    (
        "OSError: [WinError 10048] Only one usage of each socket address "
        "(protocol/network address/port) is normally permitted",
        "port-in-use",
    ),
    (
        "ERROR:    [Errno 10048] error while attempting to bind on address ('0.0.0.0', 30000): "
        "only one usage of each socket address (protocol/network address/port) is normally "
        "permitted",
        "port-in-use",
    ),
    # ROCm >= 6's code for a GPU the binary has no code object for
    (
        "RuntimeError: HIP error: shared object initialization failed\nHIP kernel errors might "
        "be asynchronously reported at some other API call",
        "kernel-unsupported-arch",
    ),
    # the master cannot bind its address: a wrong --dist-init-addr (EADDRNOTAVAIL)
    (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. The server socket has failed to bind to 10.9.8.7:5000 (errno: "
        "99 - Cannot assign requested address).",
        "dist-init-timeout",
    ),
    # c10d's multi-line message under a bare exception line (no traceback header)
    (
        "torch.distributed.DistNetworkError:\nThe server socket has failed to listen on any "
        "local network address.\nport: 30005, useIPv6: 0,\ncode: -98,\nname: EADDRINUSE,\n"
        "message: address already in use",
        "port-in-use",
    ),
    # the ranks could not meet
    (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
        "for key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
        "dist-init-timeout",
    ),
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms "
        "while trying to connect to (10.0.0.1, 29500).",
        "dist-init-timeout",
    ),
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
        "ifa != nullptr. Unable to find address for: ens5",
        "dist-init-timeout",
    ),
    # a proxy answered for the server's own address
    (
        'http://proxy.corp:3128 "POST http://127.0.0.1:30000/generate HTTP/1.1" 502 0',
        "warmup-proxy",
    ),
    (
        "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
        "http://localhost:30000/get_model_info",
        "warmup-proxy",
    ),
    # the NCCL watchdog, every torch release and fork
    (
        "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800523 milliseconds before "
        "timing out.",
        "nccl-watchdog-timeout",
    ),
    (
        "[rank2]:[E ProcessGroupHCCL.cpp:520] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkHCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800123 "
        "milliseconds before timing out.",
        "nccl-watchdog-timeout",
    ),
    (
        "[rank0]:[E1203 10:02:11.000000 7 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID "
        "0(default_pg) Rank 0] Timeout at NCCL work: 9, last enqueued NCCL work: 9, last "
        "completed NCCL work: 8.",
        "nccl-watchdog-timeout",
    ),
    # kernel faults and assertions on ROCm
    ("RuntimeError: HIP error: an illegal memory access was encountered", "cuda-illegal-access"),
    (
        "Memory access fault by GPU node-4 (Agent handle: 0x5581f0b2c4d0) on address "
        "0x7f1d2c000000. Reason: Page not present or supervisor privilege.",
        "cuda-illegal-access",
    ),
    ("RuntimeError: HIP error: device-side assert triggered", "cuda-device-assert"),
    # host memory, any allocator or OS
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not "
        "enough memory: you tried to allocate 17179869184 bytes.",
        "host-memory-exhausted",
    ),
    (
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. "
        'Error loading "C:\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
        "host-memory-exhausted",
    ),
    (
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.35 GiB for an array "
        "with shape (30000, 30000) and data type float32",
        "host-memory-exhausted",
    ),
]


@pytest.mark.parametrize(("log", "category"), WORDINGS, ids=[c for _, c in WORDINGS])
def test_group_b_families_land_in_any_vendors_words(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"


LOOKALIKES: list[tuple[str, str]] = [
    # torch's trailer under every CUDA/HIP error is no device assertion
    (
        "RuntimeError: CUDA error: operation not supported\nCUDA kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "unknown",
    ),
    # a kernel's shared-memory budget is no device out-of-memory
    (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "131072, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
        "unknown",
    ),
    # a CPU architecture is not a GPU's
    ("RuntimeError: Unsupported architecture: aarch64", "unknown"),
    ("RuntimeError: AVX512 instructions are not supported on this architecture", "unknown"),
    # the JVM's heap is not a GPU's memory
    ("java.lang.OutOfMemoryError: Java heap space", "unknown"),
    # a privileged port (EACCES) is neither a taken port nor a rendezvous failure
    (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. The server socket has failed to bind to 0.0.0.0:80 (errno: 13 "
        "- Permission denied).",
        "unknown",
    ),
    # a proxy-form request to another host is not the server's own warm-up
    (
        'http://proxy.corp:3128 "GET http://example.org/models HTTP/1.1" 403 12',
        "unknown",
    ),
    # a 500 from the server itself is no proxy's answer
    (
        "requests.exceptions.HTTPError: 500 Server Error: Internal Server Error for url: "
        "http://127.0.0.1:30000/generate",
        "unknown",
    ),
    # the Hub answered that the id does not exist: not an unreachable Hub
    (
        "OSError: org/no-such-model is not a local folder and is not a valid model identifier "
        "listed on 'https://huggingface.co/models'\nIf this is a private repository, make sure "
        "to pass a token having permission to this repo with `token` or log in with "
        "`hf auth login`.",
        "model-not-found",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("log", "category"), LOOKALIKES, ids=[c for _, c in LOOKALIKES])
def test_group_b_families_leave_lookalikes_alone(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"


def test_a_bare_exception_keeps_its_continuation_lines() -> None:
    text = (
        "torch.distributed.DistNetworkError:\n"
        "The server socket has failed to listen on any local network address.\n"
        "name: EADDRINUSE,\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
    )
    entries = journal.parse_text(text)
    message, after = exception_message(entries, 0, "")
    assert message == (
        "The server socket has failed to listen on any local network address.\nname: EADDRINUSE,"
    )
    assert after == 3
    assert classify(entries).category == "port-in-use"


def test_a_family_excludes_what_its_unless_words_name() -> None:
    fam = Family(("DistNetworkError",), unless=("failed to bind",))
    assert fam.matches("DistNetworkError", "Connection reset by peer", [])
    assert not fam.matches("DistNetworkError", "failed to bind to 0.0.0.0:98", [])
    assert not fam.matches("DistStoreError", "Connection reset by peer", [])


def test_a_capability_floor_is_named_in_the_fix() -> None:
    d = classify_text(
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 89. Current capability: 86."
    )
    assert d.category == "kernel-unsupported-arch"
    assert "compute capability 8.9 or newer (this GPU is 8.6)" in d.fix, d.fix
