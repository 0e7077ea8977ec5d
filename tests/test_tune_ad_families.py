"""The patterns and family words written on batch AD's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # a C++ server's own bind error, another socket
    (
        "port-in-use",
        "[server] Failed to bind listen socket to endpoint tcp://*:5557: Address already in use",
    ),
    # the CUDA driver API's 999 at another library's discovery
    ("gpu-unavailable", 'msg="Unable to load cudart" error="cudart init failure: 999"'),
    # the TPU runtime failing to start, another wrapper
    (
        "gpu-unavailable",
        "RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: No ba16c7433 "
        "device found.",
    ),
]


@pytest.mark.usefixtures("rules_only")
def test_other_init_failures_are_not_a_missing_gpu() -> None:
    # a CUDA out-of-memory status (2) at init is not the unknown error (999)
    log = 'msg="Unable to load cudart" error="cudart init failure: 2"\n'
    assert classify_text(log).category != "gpu-unavailable"


@pytest.mark.usefixtures("rules_only")
def test_another_bind_error_is_not_a_port_in_use() -> None:
    log = "Error binding socket to endpoint tcp://*:5557: Permission denied\n"
    assert classify_text(log).category != "port-in-use"


MORE = [
    # CUDA's invalid-image status from another kernel loader
    ("driver-too-old", "RuntimeError: CUDA error: device kernel image is invalid"),
    # an older llama.cpp's line for a GGUF path that is not there
    (
        "model-not-found",
        "gguf_init_from_file: failed to open GGUF file '/srv/models/qwen2.5-7b-q4_k_m.gguf'",
    ),
    # an OCI hook that failed with no narrower cause in its words
    (
        "gpu-unavailable",
        "Error: crun: createContainer hook #2: exit status 1: OCI runtime error",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), [*LANDS, *MORE])
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_a_hooks_own_words_outrank_the_hook_failure() -> None:
    # the toolkit's hook says why: a CUDA requirement the driver does not meet
    log = (
        "docker: Error response from daemon: OCI runtime create failed: container_linux.go:349: "
        'starting container process caused "process_linux.go:449: container init caused \\"'
        'process_linux.go:432: running prestart hook 0 caused \\\\\\"error running hook: exit '
        "status 1, stdout: , stderr: nvidia-container-cli: requirement error: unsatisfied "
        'condition: cuda>=12.4, please update your driver to a newer version\\\\\\"\\"": '
        "unknown.\n"
    )
    assert classify_text(log).category == "driver-too-old"


@pytest.mark.usefixtures("rules_only")
def test_a_vision_towers_missing_field_is_no_unknown_architecture() -> None:
    log = "AttributeError: 'SiglipVisionConfig' object has no attribute 'vision_use_head'\n"
    assert classify_text(log).category != "model-arch-unsupported"


@pytest.mark.usefixtures("rules_only")
def test_a_gguf_path_with_another_errno_is_not_missing() -> None:
    log = (
        "gguf_init_from_file: failed to open GGUF file '/srv/models/x.gguf' "
        "(errno Permission denied)\n"
    )
    assert classify_text(log).category != "model-not-found"
