"""The patterns written on batch P's misses (published after its first-seen scoring), tried on
wordings that are not in the corpus and on near misses they must leave alone; and the reader's
fix that P showed: a pasted JSON object (an HTTP error body) among plain lines is a line of text,
not the sign of a `journalctl -o json` export whose other lines may be dropped. With the rules
alone: the corpus vocabulary is measured on real logs (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.journal import JournalLines, detect_format
from orchestrator.diagnosis.model import example

LANDS = [
    # CUDA 12's cudaErrorContained, and another kernel fault in the runtime's words
    (
        "cuda-illegal-access",
        "RuntimeError: CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error",
    ),
    ("cuda-illegal-access", "torch.AcceleratorError: CUDA error: hardware stack error"),
    # torch's flight recorder on the rank that timed out, and its watchdog's C++ stack
    (
        "nccl-watchdog-timeout",
        "[rank3]:[E1203 10:02:11.000 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID 0 Rank 3] "
        "Received a dump signal due to a collective timeout from this local rank and we will "
        "try our best to dump the debug info.",
    ),
    (
        "nccl-watchdog-timeout",
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:692 (most recent call first):",
    ),
    # torch's extension builder, cut below its frame; inductor's C++ codegen
    (
        "jit-build-failed",
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line '
        "2400, in _run_ninja_build",
    ),
    (
        "jit-build-failed",
        "torch._inductor.exc.InductorError: CppCompileError: C++ compile error",
    ),
    # model servers that could not find the model where they were pointed
    (
        "model-not-found",
        "E1203 10:02:11.000 1 model_lifecycle.cc:630] failed to load 'kimi' version 1: "
        "Unavailable: unable to find '/models/kimi/1/model.plan' for model instance 'kimi_0'",
    ),
    (
        "model-not-found",
        "E tensorflow_serving/sources/storage_path/file_system_storage_path_source.cc:365] "
        "FileSystemStoragePathSource encountered a filesystem access error: Could not find base "
        "path /models/resnet for servable resnet with error NOT_FOUND",
    ),
    # the GPU operator's validator, the device plugin's MIG check, containerd's handler
    ("gpu-unavailable", "chroot: failed to run command 'nvidia-smi': No such file or directory"),
    (
        "gpu-unavailable",
        "E1203 10:02:11.000 1 main.go:123] error starting plugins: No MIG devices associated "
        "with /dev/nvidia3: GPU-0a1b",
    ),
    (
        "gpu-unavailable",
        'time="2026-01-02T10:00:00Z" level=error msg="RunPodSandbox failed" error="failed to '
        'get sandbox runtime: no runtime for \\"nvidia\\" is configured"',
    ),
    (
        "gpu-unavailable",
        'Failed to create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "nvidia" '
        "not supported",
    ),
    # (the published misses the vocabulary had carried, now rules, each in other words)
    # the fabric manager's status in a program's own words, the busy device's "is/are"
    ("gpu-unavailable", "ggml_cuda_init: failed to initialize CUDA: system not yet initialized"),
    (
        "gpu-unavailable",
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    ),
    ("gpu-unavailable", "rocBLAS error: Could not initialize Tensile host: No devices found"),
    ("kernel-unsupported-arch", "RuntimeError: HIP error: Invalid device function"),
    (
        "cuda-graph-capture-failed",
        "RuntimeError: CUDA error: operation not permitted on an event last recorded in a "
        "capturing stream",
    ),
    ("cuda-oom", "[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=x.h line=9"),
    (
        "cuda-oom",
        "E pjrt_stream_executor_client.cc:1981] Execution of replica 0 failed: Resource "
        "exhausted: Failed to allocate request for 64.00MiB (67108864B) on device ordinal 0",
    ),
    ("dist-init-timeout", "RuntimeError: Gloo connectFullMesh fai"),
    (
        "model-arch-unsupported",
        example("arch-unsupported", architectures="['KimiK3ForCausalLM']", supported="[]")[
            : -len("w. Supported architectures: []")
        ],
    ),
    (
        "model-not-found",
        "ValueError: Could not detect config format for no config file found. Ensure your "
        "model has either config.json (HF format) or params.json (Mistral format).",
    ),
    (
        "model-not-found",
        "ValueError: Invalid repository ID or local directory specified: 'Kimi-K2.6-typo'.",
    ),
    (
        "model-not-found",
        "OSError: v9 is not a valid git identifier (branch name, tag name or commit id) that "
        "exists for this model name.",
    ),
    (
        "python-import-error",
        "bentoml.exceptions.MissingDependencyException: None (reason: No module named 'vllm')",
    ),
    # ROCm's HIP runtime is a CUDA event too (its capture refusals, like CUDA's)
    (
        "cuda-graph-capture-failed",
        "torch.AcceleratorError: HIP error: operation not permitted on an event last recorded "
        "in a capturing stream",
    ),
    # a GPU generation named first, then the verdict
    ("kernel-unsupported-arch", "AssertionError: Only SM 9.x and 10.x are supported"),
    # an emptyDir for /dev/shm that outgrew its limit: shared memory, not a disk
    (
        "host-memory-exhausted",
        '  Warning  Evicted  1m  kubelet  Usage of EmptyDir volume "shm-volume" exceeds the '
        'limit "2Gi".',
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_pattern_lands_on_another_wording(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_sglangs_health_check_line_cut_after_its_seconds_is_still_read() -> None:
    line = example("health-check-failed", secs=20, tic="10:00:00", last="09:59:40")
    cut = line[: line.index(" seconds.") + len(" seconds.")]
    assert classify_text(cut + "\n").category == "scheduler-unresponsive"


def test_a_json_body_among_plain_lines_keeps_every_line() -> None:
    text = (
        "[2026-01-02 10:00:00] Health check failed. the router answered:\n"
        '{"error":{"type":"Service Unavailable","code":"server_selection_failed"}}\n'
    )
    assert detect_format(text.splitlines()) == "cat"
    got = [e.text for e in JournalLines(text)]
    assert len(got) == 2
    assert got[0].endswith("Health check failed. the router answered:")
    assert got[1].startswith('{"error":')


def test_a_journal_export_with_a_stray_text_line_keeps_it() -> None:
    rec = (
        '{"__REALTIME_TIMESTAMP":"1764756131000000","_PID":"42","PRIORITY":"3",'
        '"MESSAGE":"RuntimeError: CUDA error: an illegal memory access was encountered"}'
    )
    text = f"{rec}\n{rec}\nsome text a user pasted under it\n"
    lines = list(JournalLines(text))
    assert len(lines) == 3
    assert lines[2].text == "some text a user pasted under it"
