"""The patterns and families written on batch AA's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # an assert on SGLang's GPU-generation probes, in another module
    (
        "kernel-unsupported-arch",
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/cutlass_moe.py", line 60, in '
        "__init__\n"
        "    assert is_blackwell_supported(), 'cutlass MoE needs Blackwell'\n"
        "AssertionError: cutlass MoE needs Blackwell\n",
    ),
    # requests' wording of a rate-limited download
    (
        "hf-hub-unreachable",
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
        "https://cdn-lfs.example.org/repos/ab/cd/model-00001-of-00004.safetensors",
    ),
    # docker's wording of the toolkit's hook missing
    (
        "gpu-unavailable",
        "docker: Error response from daemon: failed to create task for container: failed to "
        "create shim task: OCI runtime create failed: runc create failed: unable to start "
        "container process: error during container init: error running hook #1: fork/exec "
        "/usr/local/bin/nvidia-container-runtime-hook: no such file or directory: unknown.",
    ),
    # another driver call refused for want of a device
    ("gpu-unavailable", "[vgpu ERROR] cuDeviceGet failed with error 101"),
    # the device plugin's allocation refused for another reason
    (
        "gpu-unavailable",
        "  Warning  UnexpectedAdmissionError  2m  kubelet  Allocate failed due to requested "
        "number of devices unavailable for nvidia.com/gpu. Requested: 8, Available: 6, which is "
        "unexpected",
    ),
    # a TPU engine with no chips on its node
    (
        "gpu-unavailable",
        "RuntimeError: Current node has no TPU available. vLLM engine cannot start without TPU.",
    ),
    # faulthandler's dump of a process that died in another NCCL call
    (
        "nccl-error",
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Current thread 0x00007f2a1b7fe640 (most recent call first):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/distributed/'
        'device_communicators/pynccl_wrapper.py", line 402 in ncclBroadcast\n'
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/distributed/'
        'device_communicators/pynccl.py", line 210 in broadcast\n',
    ),
]


@pytest.mark.usefixtures("rules_only")
def test_an_entrypoint_not_found_is_still_the_entrypoint() -> None:
    # the same runtime error for the container's own command is exec-failed as before
    log = (
        "Error: runc: runc create failed: unable to start container process: exec: "
        '"/usr/bin/sglang-serve": no such file or directory\n'
    )
    assert classify_text(log).category == "exec-failed"


@pytest.mark.usefixtures("rules_only")
def test_other_status_codes_are_not_a_rate_limit() -> None:
    log = "httpx.HTTPStatusError: Server error '503 Service Unavailable' for url 'http://127.0.0.1:30000/health'\n"
    assert classify_text(log).category != "hf-hub-unreachable"


@pytest.mark.usefixtures("rules_only")
def test_a_driver_call_with_another_result_is_not_a_missing_gpu() -> None:
    # CUresult 2 is out of memory, not a missing device
    assert classify_text("cuMemAlloc failed with error 2\n").category != "gpu-unavailable"


@pytest.mark.usefixtures("rules_only")
def test_a_python_traceback_frame_in_nccl_is_not_a_crash() -> None:
    # a traceback's frames have a comma before "in": an exception raised under an NCCL call is
    # read as the exception it is, not as a process that died there
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/'
        'pynccl_wrapper.py", line 277, in ncclCommInitRank\n'
        "    self.NCCL_CHECK(...)\n"
        "ValueError: tensor is not contiguous\n"
    )
    d = classify_text(log)
    assert "died inside NCCL" not in d.summary, d.summary


MORE = [
    # ROCm's libraries print "Hip error": a capture refused by its code, any library
    (
        "cuda-graph-capture-failed",
        "Hip error: 'operation not permitted when stream is capturing'(900) at rocblas.cpp:88",
    ),
    # Triton's launcher reports a kernel fault as "Triton Error [CUDA]"
    (
        "cuda-illegal-access",
        "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
    ),
    # the Ascend runtime's wording of a device call that failed, for another call
    (
        "gpu-unavailable",
        "[ERROR] RUNTIME(12)  get device count failed, runtime result = 507033.",
    ),
    # nvidia-smi's wording of a MIG slice that does not fit
    (
        "gpu-unavailable",
        "Failed to create GPU instances: Insufficient Resources",
    ),
    # transformers' config without a model_type: the architecture, not a missing path
    (
        "model-arch-unsupported",
        "ValueError: Unrecognized model in /models/NewArch-7B. Should have a `model_type` key in "
        "its config.json, or contain one of the following strings in its name: albert, bart",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), [*LANDS, *MORE])
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_a_renamed_config_field_is_not_an_unknown_architecture() -> None:
    # Python's suggestion names the field under another name: model code and config of
    # different releases
    renamed = (
        "AttributeError: 'GemmaConfig' object has no attribute 'rms_norm_epsilon'. "
        "Did you mean: 'rms_norm_eps'?\n"
    )
    assert classify_text(renamed).category != "model-arch-unsupported"
    # without one, the engine does not read this config: the architecture it lacks
    missing = "AttributeError: 'NewArchConfig' object has no attribute 'num_attention_heads'\n"
    assert classify_text(missing).category == "model-arch-unsupported"
