"""Group C families (start-up, model, Hub, config and Python-package causes, and SGLang's own
serving failures) land whatever the wording, wrapper or release: the wordings here are derived
from the libraries' own message formats (the dynamic loader, huggingface_hub's errors.py and
hf_raise_for_status, text-generation-inference's and flash-attn's refusals, SGLang's Triton
attention kernels and its scheduler's serving loop), none taken from tests/logs/real/.
Lookalikes stay out."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.model import Family, example

_SCHED = "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py"
# SGLang's wrapper line as the newest release prints it, over a traceback and bare
_WRAPPED = "[2026-01-02 10:00:00 TP0] " + example(
    "scheduler-exception", traceback="Traceback (most recent call last):"
)
_WRAPPER = "[TP3] " + example("scheduler-exception", traceback="").rstrip()

WORDINGS: list[tuple[str, str]] = [
    # a library of the CUDA runtime/toolkit (or ROCm's) that the loader cannot find
    (
        "OSError: libcudart.so.13: cannot open shared object file: No such file or directory",
        "python-import-error",
    ),
    (
        "ImportError: libcublasLt.so.12: cannot open shared object file: No such file or directory",
        "python-import-error",
    ),
    (
        "ImportError: libamdhip64.so.6: cannot open shared object file: No such file or directory",
        "python-import-error",
    ),
    (
        "RuntimeError: Could not load flashinfer: libnvrtc.so.13: cannot open shared object "
        "file: No such file or directory",
        "python-import-error",
    ),
    # the Hub's refusal with the URL or repo id cut, and in huggingface_hub's own sentence
    ("Cannot access gated repo for url <redacted>", "hf-auth"),
    (
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-x)\n"
        "Access to model <your-model> is restricted and you are not in the authorized list.",
        "hf-auth",
    ),
    (
        "OSError: You are trying to access a gated repo.\nYou must have access to it and be "
        "authenticated to access it. Please log in.",
        "hf-auth",
    ),
    # the mirror HF_ENDPOINT often names refuses and fails as the Hub does
    (
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://hf-mirror.com/meta-llama/Llama-3.1-8B/resolve/main/config.json",
        "hf-auth",
    ),
    (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='hf-mirror.com', "
        "port=443): Max retries exceeded with url: /api/models/Qwen/Qwen3-8B (Caused by "
        "NameResolutionError(\"Failed to resolve 'hf-mirror.com'\"))",
        "hf-hub-unreachable",
    ),
    # a bare 401/403 re-raised under the Hub's client, whatever the message
    (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/huggingface_hub/utils/_http.py", line 409, '
        "in hf_raise_for_status\n"
        "    response.raise_for_status()\n"
        '  File "/venv/lib/python3.11/site-packages/httpx/_models.py", line 829, in '
        "raise_for_status\n"
        "    raise HTTPStatusError(message, request=request, response=self)\n"
        "httpx.HTTPStatusError: Client error '403 Forbidden'",
        "hf-auth",
    ),
    # a model or engine refusing to run without the attention implementation it needs
    (
        "NotImplementedError: Mixtral requires FlashAttention 2 enabled models on this GPU",
        "attention-backend-unsupported",
    ),
    (
        "ValueError: Sliding window attention requires the flashinfer attention backend",
        "attention-backend-unsupported",
    ),
    # an attention kernel's check of the head dimension
    (
        "AssertionError: assert head_dim in [64, 128, 256]",
        "attention-backend-unsupported",
    ),
    (
        "RuntimeError: FlashAttention forward only supports head dimension at most 256",
        "attention-backend-unsupported",
    ),
    # an engine refusing speculative decoding with another setting
    (
        "NotImplementedError: Pipeline parallelism is not supported with speculative decoding.",
        "spec-config-invalid",
    ),
    (
        "ValueError: Speculative decoding is not yet compatible with prefix caching.",
        "spec-config-invalid",
    ),
    # a speculative argument or algorithm refused, without the argument code's frames
    ("ValueError: --speculative-draft-model-path is required for EAGLE3", "spec-config-invalid"),
    (
        "NotImplementedError: EAGLE3 is not supported for model architecture Gemma3ForCausalLM",
        "spec-config-invalid",
    ),
    # torch's state-dict check naming the drafter's class
    (
        "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLMEagle3:\n\tsize "
        "mismatch for fc.weight: copying a param with shape torch.Size([4096, 12288]) from "
        "checkpoint, the shape in current model is torch.Size([5120, 15360]).",
        "drafter-mismatch",
    ),
    # ctypes' OSError for any missing shared library
    (
        "OSError: libmpi.so.40: cannot open shared object file: No such file or directory",
        "python-import-error",
    ),
    # any exception in the detokenizer's own process, without SGLang's wrapper line
    (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/sglang/srt/managers/detokenizer_manager.py", '
        "line 301, in handle_batch_token_id_out\n"
        "    s = self.decode_status[rid]\n"
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        "tokenizer-manager-died",
    ),
    # an operation torch or CUDA refuses during graph capture, under any wrapper
    (
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Cannot call CUDAGeneratorImpl::set_current_seed during CUDA graph capture.",
        "cuda-graph-capture-failed",
    ),
    (
        "RuntimeError: HIP error: operation failed due to a previous error during capture\n"
        "hipErrorStreamCaptureInvalidated",
        "cuda-graph-capture-failed",
    ),
    # a compiler's exit status in subprocess' words, quoted by whoever ran it
    (
        "Triton failed to build its launcher: Command '['/usr/bin/cc', '/tmp/x/main.c', '-O3', "
        "'-shared', '-o', '/tmp/x/hip_utils.so']' returned non-zero exit status 1.",
        "jit-build-failed",
    ),
    # any exception raised under SGLang's serving loop, any type
    (
        _WRAPPED + "\n"
        f'  File "{_SCHED}", line 2600, in run_scheduler_process\n'
        "    scheduler.event_loop_normal()\n"
        f'  File "{_SCHED}", line 900, in event_loop_normal\n'
        "    batch = self.get_next_batch_to_run()\n"
        f'  File "{_SCHED}", line 1400, in get_next_batch_to_run\n'
        "    new_batch = self.get_new_batch_prefill()\n"
        "ZeroDivisionError: division by zero",
        "scheduler-exception",
    ),
    (
        "Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler_components/output_streamer.py", '
        "line 88, in stream_output_generation\n"
        "    rids.append(req.rid)\n"
        "AttributeError: 'NoneType' object has no attribute 'rid'",
        "scheduler-exception",
    ),
    # a condensed paste: the wrapper, the exception, then where it was raised
    (
        _WRAPPER + "\n"
        "KeyError: 'req-41'\n"
        f'File "{_SCHED}", line 1200, in process_input_requests\n'
        "output = self._request_dispatcher(recv_req)",
        "scheduler-exception",
    ),
]


@pytest.mark.parametrize(("log", "category"), WORDINGS, ids=[c for _, c in WORDINGS])
def test_group_c_families_land_in_any_wording(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"


LOOKALIKES: list[tuple[str, str]] = [
    # an undefined symbol is still a package built for another torch/CUDA
    (
        "ImportError: /venv/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEa",
        "kernel-package-mismatch",
    ),
    # the driver's own library missing is no import error
    (
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "gpu-unavailable",
    ),
    # a 403 from another host, raised by requests outside the Hub's client, is not the Hub's
    (
        "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
        "https://api.example.com/v1/models",
        "unknown",
    ),
    # a GPU generation refused by the attention kernel itself is not the backend's family
    (
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
        "kernel-unsupported-arch",
    ),
    # another program's exit status is no compiler's
    (
        "subprocess.CalledProcessError: Command '['/usr/bin/git', 'clone', 'x']' returned "
        "non-zero exit status 128.",
        "unknown",
    ),
    # LoRA refused with speculative decoding is LoRA's category
    (
        "ValueError: LoRA is not supported with speculative decoding yet.",
        "lora-unsupported",
    ),
    # an exception in the scheduler's set-up (Scheduler.__init__) is not one while serving
    (
        _WRAPPED + "\n"
        f'  File "{_SCHED}", line 2600, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)\n"
        f'  File "{_SCHED}", line 300, in __init__\n'
        "    self.init_tokenizer()\n"
        "ZeroDivisionError: division by zero",
        "unknown",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("log", "category"), LOOKALIKES, ids=[c for _, c in LOOKALIKES])
def test_group_c_families_leave_lookalikes_alone(log: str, category: str) -> None:
    d = classify_text(log)
    assert d.category == category, f"{log[:90]!r}: {d.category} ({d.summary})"


def test_a_family_can_name_its_code_path_by_function() -> None:
    fam = Family((), functions=("run_batch",))
    assert fam.matches("KeyError", "'x'", ["a/b.py"], None, ["main", "run_batch"])
    assert not fam.matches("KeyError", "'x'", ["a/b.py"], None, ["main", "__init__"])
    assert not fam.matches("KeyError", "'x'", ["a/b.py"])


def test_a_missing_cuda_library_names_both_remedies() -> None:
    d = classify_text(
        "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
        "ImportError: libnvrtc.so.12: cannot open shared object file: No such file or directory"
    )
    assert d.category == "python-import-error", d.summary
    assert "nvidia-*-cu12" in d.fix and "LD_LIBRARY_PATH" in d.fix, d.fix
    assert "sgl-kernel build" in d.fix, d.fix


def test_a_drafters_shape_is_not_a_refused_setting() -> None:
    # drafter-mismatch's (its family needs the draft frames this fragment lacks), never the
    # speculative settings' family
    d = classify_text(
        "ValueError: EAGLE3 draft hidden size 4096 must match the target's hidden size 7168"
    )
    assert d.category != "spec-config-invalid", d.summary
