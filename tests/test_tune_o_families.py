"""The patterns written on batch O's and batch N's misses (each published after its first-seen
scoring), tried on
wordings that are not in the corpus (other hosts, ranks, packages, releases) and on near misses
they must leave alone. With the rules alone: the corpus vocabulary is measured on real logs
(tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator import sglang
from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.model import example

_SCHED = "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py"

LANDS = [
    # Ray's GCS giving a node up, in an older release's words and a newer one's
    (
        "ray-init-failed",
        "(autoscaler +2m) The node with node id: 5c3fcbef and address: 10.0.0.7 and node name: "
        "gpu-3 has been marked dead because the detector has missed too many heartbeats from it.",
    ),
    (
        "ray-init-failed",
        "[2026-01-02 10:00:00,000 E 77 77] (raylet) worker_pool.cc:601: Some workers of the "
        "worker process(4242) have not registered within the timeout. The process is still "
        "alive, probably it's hanging during start.",
    ),
    # c10d's store client: the TCPStore retry, a reset socket, a refused connect on Linux
    (
        "dist-init-timeout",
        "[W1203 10:02:11.000000000 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate "
        "to host 10.1.2.3:29500 - retrying (try=0, timeout=600000ms, delay=312ms): Connection refused",
    ),
    (
        "dist-init-timeout",
        "[rank2]:[W1203 10:02:11.0 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=9, "
        "addr=[node-1]:4242, remote=[node-0]:29500): Broken pipe",
    ),
    # NCCL's pre-2.4 line shape, another file, and with its host prefix taken off by the reader
    (
        "nccl-error",
        "node-7:4242:4300 [3] transport/net_ib.cc:789 WARN NET/IB : Got completion with error 12",
    ),
    (
        "nccl-error",
        "node-7:4242:4300 [3] include/socket.h:371 WARN Connection closed by remote peer\n"
        "node-7:4242:4300 [3] bootstrap.cc:98 WARN Bootstrap : no socket interface found",
    ),
    # Slurm's cgroup OOM in a job step of another kind
    (
        "host-oom-killed",
        "slurmstepd: error: Detected 3 oom_kill events in StepId=99.batch. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.",
    ),
    # a Hub download that arrived short (fewer digits, and the same number of digits)
    (
        "hf-hub-unreachable",
        "OSError: Consistency check failed: file should be of size 4995584848 but has size "
        "104857600 (model-00001-of-00064.safetensors).",
    ),
    # the container runtime's NVIDIA hook and CDI
    (
        "gpu-unavailable",
        "docker: Error response from daemon: failed to create task: OCI runtime create failed: "
        "nvidia-container-cli: device error: 7: unknown device: unknown.",
    ),
    (
        "gpu-unavailable",
        "Error: crun: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=0",
    ),
    ("gpu-unavailable", "0/4 nodes are available: 4 node(s) didn't have enough resources: GPUs."),
    # a kernel package built from source by pip or uv
    ("jit-build-failed", "  ERROR: Failed building wheel for flash_attn"),
    ("jit-build-failed", "  × Failed to build `sgl-kernel==0.3.21`"),
    (
        "jit-build-failed",
        "UserWarning: mamba_ssm was requested, but nvcc was not found.  Are you sure your "
        "environment has nvcc available?",
    ),
    # a kernel package of another release than its caller
    (
        "kernel-package-mismatch",
        "ImportError: cannot import name 'trtllm_batch_decode_with_kv_cache_mla' from "
        "'flashinfer.decode' (/opt/venv/lib/python3.12/site-packages/flashinfer/decode.py)",
    ),
    (
        "kernel-package-mismatch",
        "/opt/llama/bin/llama-server: symbol lookup error: /opt/llama/bin/llama-server: undefined "
        "symbol: ggml_backend_cuda_init",
    ),
    # a library's own error line that a module it needs is missing
    ("python-import-error", "2026-01-02 10:00:00 ERROR [quant] marlin_kernels not installed."),
    # the scheduler's serving-loop traceback, cut before its exception line
    (
        "scheduler-exception",
        "[2026-01-02 10:00:00 TP3] "
        + example("scheduler-exception", traceback="Traceback (most recent call last):")
        + "\n"
        f'  File "{_SCHED}", line 2900, in run_scheduler_process\n'
        "    scheduler.event_loop_normal()\n"
        f'  File "{_SCHED}", line 1011, in event_loop_normal\n'
        "    result = self.run_batch(batch)\n"
        f'  File "{_SCHED}", line 1900, in run_batch',
    ),
    # SGLang's piecewise CUDA graph wrapper, the error it wrapped not named by any rule
    (
        "cuda-graph-capture-failed",
        "[2026-01-02 10:00:00 TP0] "
        + sglang.release("0.5.11")
        .message("piecewise-graph-failed")
        .line(error="'NoneType' object has no attribute 'seq_lens'"),
    ),
    # the shell that runs the unit's script
    ("exec-failed", "sh: 1: /opt/serve/start.sh: Permission denied"),
    # (batch N) Ray's task error names the exception it wraps
    (
        "nccl-error",
        "ray.exceptions.RayTaskError(DistBackendError): ray::Worker.init_model() (pid=7, "
        "ip=10.0.0.2, actor_id=ab12)",
    ),
    # torch's enum pointer under a cut device-side assertion
    (
        "cuda-device-assert",
        "CUDA kernel errors might be asynchronously reported at some other API call.\n"
        "Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
    ),
    # a quantized layer blaming the TP size, in GPTQ's words
    (
        "tp-size-indivisible",
        "ValueError: The output size is not aligned with the quantized weight shape. This can "
        "be caused by too large tensor parallel size.",
    ),
    # the engines' own all-reduce kernel, SGLang's build
    (
        "nccl-error",
        "RuntimeError: CUDA error /sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:310 "
        "'peer access is not supported between these two devices'",
    ),
    (
        "ray-init-failed",
        "[2026-01-02 10:00:00,000 C 9 9] gcs_client.cc:180: Could not reconnect to GCS",
    ),
    ("kernel-package-mismatch", "    xFormers wasn't build with CUDA support"),
    ("model-not-found", "config file /models/kimi/config.json does not exist"),
    (
        "host-memory-exhausted",
        "  Warning  Evicted  2m  kubelet  The node was low on resource: memory. Threshold "
        "quantity: 100Mi, available: 42Mi.",
    ),
    (
        "jit-build-failed",
        "/tmp/x.cu:3:10: fatal error: cuda_fp4.h: no such file\ncompilation terminated.",
    ),
    ("gpu-unavailable", "panic: CUDA_ERROR_UNKNOWN\n\ngoroutine 1 [running]:"),
    # an attention kernel package's API called with another release's signature
    (
        "kernel-package-mismatch",
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/layers/attention/'
        'flashinfer_backend.py", line 420, in init_forward_metadata\n'
        "    self.prefill_wrapper.plan(qo_indptr, kv_indptr, kv_indices)\n"
        "TypeError: BatchPrefillWithPagedKVCacheWrapper.plan() missing 2 required positional "
        "arguments: 'num_qo_heads' and 'head_dim'",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_pattern_lands_on_another_wording(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


NEAR = [
    # a Hub mirror whose metadata is wrong: more bytes than announced, the file whole
    "OSError: Consistency check failed: file should be of size 0 but has size 2166 (hest.py).",
    # pip's notice for a package that is not there to uninstall, a warning about a fallback
    "WARNING: Skipping flash-attn as it is not installed.",
    "flash_attn is not installed. Using the fallback attention.",
    # a WARN line of another program's shape
    "2026-01-02 10:00:00 WARN config.cc:12 option deprecated",
    # the scheduler's start-up frame (not its serving loop), cut
    f'  File "{_SCHED}", line 300, in __init__\n    self.init_memory_pool()',
    # (batch N) Ray's worker that died of a system error (not the OOM killer's SIGKILL)
    "(raylet) A worker died or was killed while executing a task by an unexpected system error.",
    # a TypeError outside an attention kernel package's call
    'Traceback (most recent call last):\n  File "/app/serve.py", line 3, in main\n    run(1)\n'
    "TypeError: run() missing 1 required positional argument: 'port'",
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize("text", NEAR)
def test_the_pattern_leaves_a_near_miss_alone(text: str) -> None:
    assert classify_text(text + "\n").category == "unknown"


@pytest.mark.usefixtures("rules_only")
def test_a_name_missing_from_a_package_that_is_not_installed_stays_an_import_error() -> None:
    # "(unknown location)": a directory Python took for a namespace package, not the package
    d = classify_text(
        "ImportError: cannot import name 'dynamic_per_tensor_quant' from 'aiter' (unknown location)\n"
    )
    assert d.category == "python-import-error"
