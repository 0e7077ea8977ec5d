"""The patterns written on batch AC's misses (published after its first-seen scoring), tried on
texts that are not in the corpus and on near misses they must leave alone. With the rules alone:
the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text

LANDS = [
    # a Triton kernel's own device assertion (inductor-generated), another kernel
    (
        "cuda-device-assert",
        "/tmp/torchinductor_root/ab/cabcd.py:40: unknown: block: [12,0,0], thread: [3,0,0] "
        "Assertion `index out of bounds: 0 <= tmp5 < 32000` failed.",
    ),
    # a kernel library's capitalised "CUDA Error", another fault
    (
        "cuda-illegal-access",
        "CUDA Error: an illegal memory access was encountered (700) /src/attn/decode.cuh: line 88",
    ),
    # the amdgpu driver's page fault, another hub
    (
        "cuda-illegal-access",
        "[Mon Mar  2 10:00:01 2026] amdgpu 0000:05:00.0: amdgpu: [gfxhub] page fault (src_id:0 "
        "ring:24 vmid:1 pasid:32770)",
    ),
    # modprobe's own words for the module it could not load
    (
        "gpu-unavailable",
        "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
    ),
    # the NVIDIA runtime without crun
    (
        "gpu-unavailable",
        'ERRO[0000] /usr/bin/nvidia-container-runtime: find crun path: exec: "crun": executable '
        "file not found in $PATH",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_nccl_wrapper_yields_to_the_cuda_status_below_it() -> None:
    log = (
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
        "distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.26.2\n"
        "[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "[rank0]: Last error:\n"
        "[rank0]: Cuda failure 802 'system not yet initialized'\n"
    )
    assert classify_text(log).category == "gpu-unavailable"
    # without the status, NCCL's own words are the answer they always were
    alone = log.split("[rank0]: Last error:")[0]
    assert classify_text(alone).category == "nccl-error"


@pytest.mark.usefixtures("rules_only")
def test_a_python_script_line_is_no_device_assertion() -> None:
    # a traceback frame of a .py file has no block/thread coordinates
    log = (
        '  File "/opt/app/serve.py", line 62, in run\n'
        "    assert idx < n, 'index out of bounds'\n"
        "AssertionError: index out of bounds\n"
    )
    assert classify_text(log).category != "cuda-device-assert"
