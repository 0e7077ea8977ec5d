"""The families written on batch K's misses, tried on wordings that are not in the corpus
(other packages, other releases, other inits), and on near misses they must leave alone: a
family that takes another cause's log is worse than an unknown. With the rules alone: the
corpus vocabulary is measured on real logs instead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.journal import JournalLines
from orchestrator.diagnosis.model import example, under

_WARMUP = ".../sglang/srt/entrypoints/http_server.py"
_SERVER_ERROR = (
    'AssertionError: {"object":"error","message":"Internal server error: '
    'shape mismatch in the vision tower","type":"InternalServerError","param":null,"code":500}'
)

LANDS = [
    # a runtime's own check of the model_type (mlx-lm), and its registry's dynamic import
    ("model-arch-unsupported", "ValueError: Model type glm5_moe not supported."),
    (
        "model-arch-unsupported",
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/mlx_vlm/utils.py", line 64, in get_model_and_args\n'
        '    arch = importlib.import_module(f"mlx_vlm.models.{model_type}")\n'
        '  File "/usr/lib/python3.12/importlib/__init__.py", line 90, in import_module\n'
        "    return _bootstrap._gcd_import(name[level:], package, level)\n"
        "ModuleNotFoundError: No module named 'mlx_vlm.models.kimi_vl'",
    ),
    # AWS Neuron's compiler, run by subprocess rather than by the wrapper that logs it
    (
        "jit-build-failed",
        "subprocess.CalledProcessError: Command '['neuronx-cc', 'compile', '--target=inf2', "
        "'/tmp/graph.hlo_module.pb']' returned non-zero exit status 70.",
    ),
    # torch's NCCL watchdog line cut short, another rank, another cut
    (
        "nccl-watchdog-timeout",
        "[rank0]:[E1203 10:02:11.000000 7 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective",
    ),
    # Rust's allocator aborting (tokenizers in a data-loader worker), then the shell's abort
    (
        "host-memory-exhausted",
        "memory allocation of 8589934592 bytes failed\nAborted (core dumped)",
    ),
    # the inits of docker (tini, dumb-init) and podman (catatonit) that cannot exec the command
    ("exec-failed", "[FATAL tini (7)] exec /usr/bin/entrypoint.sh failed: Permission denied"),
    ("exec-failed", "[dumb-init] /docker-entrypoint.sh: No such file or directory"),
    ("exec-failed", "ERROR (catatonit:1): failed to exec pid1: Permission denied"),
    # a compiled extension's name used after its import failed quietly
    ("python-import-error", "NameError: name 'marlin_cuda' is not defined"),
    ("python-import-error", "NameError: name 'exllama_ext' is not defined"),
    # transformers' lazy module over an error that is not Python's import words
    (
        "python-import-error",
        "RuntimeError: Failed to import transformers.models.bert.modeling_bert because of the "
        "following error (look up to see its traceback):\n"
        "'FieldInfo' object has no attribute 'default_factory_takes_data'",
    ),
    # a code path that refuses to run when torch sees no CUDA device (TGI's other models)
    (
        "gpu-unavailable",
        under(
            ".../text_generation_server/models/__init__.py",
            "get_model",
            "NotImplementedError: Sharded Falcon requires CUDA.",
        ),
    ),
    # bitsandbytes' CPU-library notice is no cause: the SIGKILL after it is
    (
        "host-oom-killed",
        ".../site-packages/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: cquantize_blockwise_fp16_nf4\n"
        "Loading checkpoint shards:   0%|          | 0/3 [00:00<?, ?it/s]\n"
        "Killed",
    ),
    # SGLang's CUDA-IPC transport of a request's multimodal features, while serving
    (
        "scheduler-exception",
        under(
            ".../sglang/srt/utils/cuda_ipc_transport_utils.py",
            "reconstruct_on_target_device",
            "RuntimeError: CUDA error: invalid argument",
        ),
    ),
    # the warm-up family stays for a body that is not the server's own error
    (
        "warmup-proxy",
        under(
            _WARMUP, "_execute_server_warmup", "AssertionError: res=<Response [502]>, res.text=''"
        ),
    ),
]

LEFT_ALONE = [
    # SGLang's warm-up got SGLang's own error JSON: the request reached SGLang, no proxy
    under(_WARMUP, "_execute_server_warmup", _SERVER_ERROR),
    "[2026-12-03 10:11:12] "
    + example("warmup-failed", error=under(_WARMUP, "_execute_server_warmup", _SERVER_ERROR)),
    # a device package's name undefined is no compiled extension of a package (batch F labels
    # ascend-sglang-86 unknown)
    "NameError: name 'torch_npu' is not defined",
    # the watchdog's words in the middle of a line, not cut at its end
    "INFO the watchdog caught collective operations: none pending",
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_wording(want: str, text: str) -> None:
    assert classify_text(text).category == want


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize("text", LEFT_ALONE)
def test_the_family_leaves_a_near_miss_alone(text: str) -> None:
    assert classify_text(text).category == "unknown"


@pytest.mark.usefixtures("rules_only")
def test_a_missing_module_outside_a_model_registry_stays_an_import_error() -> None:
    # `<pkg>.models.<x>` imported by name, not looked up by model_type: a missing package
    text = "ModuleNotFoundError: No module named 'mypkg.models.common'"
    assert classify_text(text).category == "python-import-error"


def test_the_reader_reads_frames_quoted_in_a_json_string() -> None:
    text = (
        "Failed to deserialize from CUDA IPC handle\n"
        'File \\"sglang/srt/managers/scheduler.py\\", line 1024, in event_loop_normal\n'
        "    self.process_input_requests(recv_reqs)\n"
        "KeyError: 'rid-7f3a'"
    )
    lines = [e.text for e in JournalLines(text)]
    assert 'File "sglang/srt/managers/scheduler.py", line 1024, in event_loop_normal' in lines
    # and the frame is one: the exception was raised in SGLang's serving loop
    assert classify_text(text).category == "scheduler-exception"
