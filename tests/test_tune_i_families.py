"""The families written on batch I's misses, tried on wordings that are not in the corpus
(other errno languages, other packages, other loaders), and on near misses they must leave
alone: a family that takes another cause's log is worse than an unknown."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # Ray's temp dir: errno in another language, and Ray's C++ words with the path first
    (
        "ray-init-failed",
        "PermissionError: [Errno 13] Permission non accordée: '/tmp/ray/session_latest'",
    ),
    (
        "ray-init-failed",
        "[2024-01-01 10:00:00,000 C 123 123] io_service.cc:12: mkdir /tmp/ray/session_2024: Permission denied",
    ),
    # Gloo's connect, another address family and OS language
    (
        "dist-init-timeout",
        "terminate called after throwing an instance of 'gloo::IoException'\n"
        "  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [::1]:29500: Connexion refusée",
    ),
    (
        "kernel-package-mismatch",
        "AttributeError: module 'flashinfer' has no attribute 'BatchPrefillWithRaggedKVCacheWrapper'",
    ),
    (
        "kernel-package-mismatch",
        "AttributeError: module 'sgl_kernel' has no attribute 'fp8_blockwise_scaled_mm'",
    ),
    (
        "scheduler-exception",
        'Traceback (most recent call last):\n  File ".../sglang/srt/managers/schedule_batch.py", line 1, in prepare_for_decode\n'
        "    ...\nAssertionError: req_pool_indices out of range",
    ),
    (
        "lora-unsupported",
        "\tsize mismatch for base_model.model.model.layers.3.mlp.down_proj.lora_B.default.weight: copying a param with shape torch.Size([4096, 64]) from checkpoint, the shape in current model is torch.Size([4096, 16]).",
    ),
    ("model-not-found", "ValueError: Can't find 'adapter_config.json' at 'my-org/my-adapter'"),
    ("model-not-found", "OSError: Could not find 'tokenizer.model' in '/models/llama'"),
    (
        "driver-too-old",
        "dlopen: /usr/lib/x86_64-linux-gnu/libcuda.so.1: undefined symbol: cuMemCreate",
    ),
    (
        "python-import-error",
        "ImportError: gptq quantization requires auto-gptq. Please install it by `pip install auto-gptq`",
    ),
    (
        "hf-auth",
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/foo/bar\n"
        "Repository Not Found for url: https://huggingface.co/api/models/foo/bar\nInvalid credentials in Authorization header",
    ),
    ("cuda-illegal-access", "torch.AcceleratorError: CUDA error: an illegal memory access"),
]

LEFT_ALONE = [
    "AttributeError: module 'mylib' has no attribute 'foo'",
    "PermissionError: [Errno 13] Permission denied: '/tmp/raylib/x'",
    "ValueError: this feature requires a GPU. See the pip install docs",
    "ValueError: Qwen3 requires transformers. Please install transformers>=4.51 with pip install -U transformers",
    # a peer that went away mid-run is a consequence, not the ranks failing to meet
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.3]:5021",
    # a virtualenv named lora is not SGLang's lora package
    'Traceback (most recent call last):\n  File "/envs/lora/lib/python3.10/site-packages/foo/bar.py", line 3, in run\n'
    "    ...\nKeyError: 'x'",
]


@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_wording(want: str, text: str) -> None:
    assert classify_text(text).category == want


# the rules' precision: the corpus vocabulary, which reads what no rule names, is measured on
# real logs instead (tests/test_lexicon.py, `score --lexicon-crossval`)
@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize("text", LEFT_ALONE)
def test_the_family_leaves_a_near_miss_alone(text: str) -> None:
    assert classify_text(text).category == "unknown"
