"""The patterns and family words written on batch AE's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # vLLM's registry quoted by a logger, another class
    (
        "model-arch-unsupported",
        "ERROR 05-02 10:11:12 engine.py:116] Error initializing vLLM engine: "
        "Gemma3Model has no vLLM implementation and the Transformers implementation is not "
        "compatible with vLLM.",
    ),
    # the GGUF loader, another architecture
    (
        "model-arch-unsupported",
        "ValueError: GGUF model with architecture qwen3moe is not supported yet.",
    ),
    # transformers' advice on a line of its own
    (
        "model-arch-unsupported",
        "You can update Transformers with the command `pip install --upgrade transformers`. If "
        "this does not work, and the checkpoint is very new, then there may not be a release "
        "version that supports this model yet.",
    ),
    # TGI's AutoModel fallback, another scheme
    (
        "model-arch-unsupported",
        "NotImplementedError: gptq quantization is not supported for AutoModel",
    ),
    # Triton's model repository without a version, both wordings
    (
        "model-not-found",
        "E1203 10:11:12.000 model_lifecycle.cc:626] failed to load 'llama_onnx', no version is "
        "available",
    ),
    ("model-not-found", "| resnet50_trt | -       | Not loaded: No model version was found |"),
    # the NVIDIA runtime named but not installed, docker's exec of it
    (
        "gpu-unavailable",
        "docker: Error response from daemon: failed to create task for container: exec: "
        '"nvidia-container-runtime": executable file not found in $PATH: unknown.',
    ),
    (
        "gpu-unavailable",
        "Error: no valid executable found for OCI runtime "
        "/usr/local/bin/nvidia-container-runtime: invalid argument",
    ),
    # AWS Neuron's device allocator
    (
        "cuda-oom",
        "2026-Jan-02 10:11:12.000000  311:311  ERROR  TDRV:log_dev_mem  Failed to allocate "
        "2.000GB (usage: tensors) on ND 1:NC 3, current utilization:",
    ),
    ("cuda-oom", 'RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"'),
    # a kernel library's host assertion on the architecture, another source file
    (
        "kernel-unsupported-arch",
        "RuntimeError: Assertion error (/build/csrc/jit_kernels/impls/sm100_fp8_gemm.cu:88): "
        "Unsupported architecture",
    ),
    # a kernel backend refusing this GPU, another backend
    (
        "kernel-unsupported-arch",
        "ValueError: Fp8 MoE backend 'DEEPGEMM' does not support the deployment configuration "
        "since kernel does not support current device.",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_the_engines_lora_code_is_the_adapters_fit() -> None:
    # a bare assertion raised inside vLLM's LoRA package as it maps an adapter's modules
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/lora/worker_manager.py", line 139, '
        "in _load_adapter\n"
        "    lora = self._lora_model_cls.from_local_checkpoint(\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/lora/models.py", line 301, '
        "in from_local_checkpoint\n"
        "    assert module_name in expected_lora_modules\n"
        "AssertionError\n"
    )
    assert classify_text(log).category == "lora-unsupported"


@pytest.mark.usefixtures("rules_only")
def test_a_lora_path_that_is_not_there_is_no_unfit_adapter() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/lora/worker_manager.py", line 90, '
        "in _load_adapter\n"
        '    raise RuntimeError(f"LoRA adapter {path} does not exist")\n'
        "RuntimeError: LoRA adapter /srv/lora/x does not exist\n"
    )
    assert classify_text(log).category != "lora-unsupported"


@pytest.mark.usefixtures("rules_only")
def test_torchvisions_image_warning_is_not_a_broken_kernel_package() -> None:
    log = (
        "/opt/venv/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed "
        "to load image Python extension: '/opt/venv/lib/python3.10/site-packages/torchvision/"
        "image.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using "
        "image functionality from `torchvision.io`, you can ignore this warning.\n"
        "INFO 01-02 10:11:12 api_server.py:712] vLLM API server version 0.6.6\n"
    )
    assert classify_text(log).category != "kernel-package-mismatch"


@pytest.mark.usefixtures("rules_only")
def test_a_moved_rope_field_is_no_unknown_architecture() -> None:
    # transformers 5 keeps rope_theta under rope_parameters: an engine of an older release
    log = "AttributeError: 'LlamaConfig' object has no attribute 'rope_theta'\n"
    assert classify_text(log).category != "model-arch-unsupported"


@pytest.mark.usefixtures("rules_only")
def test_a_cpus_unsupported_architecture_is_no_gpu_kernels() -> None:
    # the source location makes it a kernel's: a bare one is not
    log = "RuntimeError: Unsupported architecture\n"
    assert classify_text(log).category != "kernel-unsupported-arch"


@pytest.mark.usefixtures("rules_only")
def test_no_gpu_found_is_a_fallback_behind_a_named_cause() -> None:
    # vLLM found no platform, then a package it needs would not import: the import names it
    log = (
        "INFO 05-20 20:12:25 [__init__.py:252] No platform detected, vLLM is running on "
        "UnspecifiedPlatform\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/vllm", line 5, in <module>\n'
        "    from vllm.entrypoints.cli.main import main\n"
        "ModuleNotFoundError: No module named 'cbor2'\n"
    )
    assert classify_text(log).category == "python-import-error"
    alone = 'time=2026-01-02T10:11:12Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"\n'
    assert classify_text(alone).category == "gpu-unavailable"
