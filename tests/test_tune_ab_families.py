"""The patterns and families written on batch AB's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # a ROCm kernel's own assertion, another kernel
    (
        "cuda-device-assert",
        "/var/lib/jenkins/pytorch/aten/src/ATen/native/hip/IndexKernel.hip:92: operator(): "
        "Device-side assertion `-sizes[i] <= index && index < sizes[i]' failed.",
    ),
    # LLVM's stack limit for another kernel
    (
        "jit-build-failed",
        "error: paged_attn.py:88:0: stack frame size (300000) exceeds limit (262136) in "
        "function 'paged_attn_decode_0d1d2d'",
    ),
    # ModelScope's hub without the model
    (
        "model-not-found",
        "modelscope.hub.errors.NotExistError: The model: acme/NoSuchModel-7B has no revision: "
        "master !",
    ),
    # a torch C++ symbol of another release, no library named
    (
        "kernel-package-mismatch",
        "undefined symbol: _ZN3c104cuda9SetDeviceEa",
    ),
    # a loader's own words for a directory without config.json
    ("model-not-found", "[ERROR] config.json does not exist: /models/qwen3-8b/"),
    # a downloader's 429
    ("hf-hub-unreachable", "download: error: HEAD failed (429): Too Many Requests"),
]


@pytest.mark.usefixtures("rules_only")
def test_a_skipped_optional_extension_is_no_mismatch() -> None:
    # torchao goes on without its C++ extension: the notice names a torch symbol, benignly
    log = (
        "Skipping import of cpp extensions: /opt/venv/lib/python3.12/site-packages/torchao/"
        "_C.abi3.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationE\n"
    )
    assert classify_text(log).category != "kernel-package-mismatch"


@pytest.mark.usefixtures("rules_only")
def test_other_http_failures_are_not_a_rate_limit() -> None:
    assert classify_text("GET failed (404): Not Found\n").category != "hf-hub-unreachable"


MORE = [
    # UCX's report of a SIGBUS with BUS_ADRERR, another process
    (
        "host-memory-exhausted",
        "[node-3:4021:0:4077] Caught signal 7 (Bus error: nonexistent physical address)",
    ),
    # another JIT's floor on its compiler
    (
        "jit-build-failed",
        "RuntimeError: CUDA toolkit version must be >= 12.8 to build sm_100a kernels",
    ),
    # vLLM's advice for a config transformers cannot read, another wrapper
    (
        "model-arch-unsupported",
        "ValueError: Failed to load the model config. If the model is a custom model not yet "
        "available in the HuggingFace transformers library, consider setting "
        "`trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI.",
    ),
    # a kernel line whose PCI address the paste elided
    (
        "gpu-xid",
        "kernel: NVRM: Xid (PCI:…): 79, pid=1234, name=python3, GPU has fallen off the bus.",
    ),
    # an Xid from NVIDIA's catalogue the table now holds
    ("gpu-xid", "NVRM: Xid (PCI:0000:3b:00): 62, pid=1, 0000(0000) 00000000 00000000"),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), [*LANDS, *MORE])
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_a_notice_at_warning_level_is_no_refusal() -> None:
    # vLLM turns async output off under speculative decoding and goes on
    notice = (
        "WARNING 01-22 09:01:35 config.py:624] Async output processing is not supported with "
        "speculative decoding currently.\n"
    )
    assert classify_text(notice).category != "spec-config-invalid"
    # the same refusal raised is the refusal it always was
    raised = (
        "NotImplementedError: Pipeline parallelism is not supported with speculative decoding.\n"
    )
    assert classify_text(raised).category == "spec-config-invalid"


@pytest.mark.usefixtures("rules_only")
def test_a_bus_error_without_its_reason_is_not_read() -> None:
    # a bare SIGBUS stays unread (the corpus labels split on it)
    log = "[node-3:4021:0:4077] Caught signal 7 (Bus error)\n"
    assert classify_text(log).category != "host-memory-exhausted"
