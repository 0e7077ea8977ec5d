"""The structure and patterns written on batch W's misses (published after its first-seen
scoring), tried on texts that are not in the corpus and on near misses they must leave alone.
With the rules alone: the corpus vocabulary is only a lead (tests/test_lexicon.py)."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.reader import read_lines

LANDS = [
    # torch's heartbeat monitor: the NCCL watchdog itself stuck
    (
        "nccl-watchdog-timeout",
        "[rank3]:[F1207 10:00:00.000000 ProcessGroupNCCL.cpp:1224] [PG ID 0 PG GUID 0(default_pg) "
        "Rank 3] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
        "monitoring enqueued collectives.",
    ),
    # a CUDA status retyped in lower case
    ("gpu-unavailable", "RuntimeError: cuda-capable device(s) is/are busy or unavailable"),
    # a guarded import whose error stands in for the module
    (
        "python-import-error",
        "AttributeError: 'ImportError' object has no attribute 'LLM'",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS)
def test_the_family_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_a_platform_probe_is_not_a_missing_package() -> None:
    # vLLM tries each vendor's library at start and goes on without it
    log = (
        "WARNING 03-09 01:21:09 [rocm.py:25] Failed to import from amdsmi with "
        "ModuleNotFoundError(\"No module named 'amdsmi'\")\n"
        "ValueError: Expected a torch.device with a specified index or an integer, but got:cuda\n"
    )
    assert classify_text(log).category != "python-import-error"


def test_a_numbered_source_listing_is_code_not_a_prefix() -> None:
    # IPython's traceback quotes the source with line numbers: "     33 except ImportError:" is
    # code, and "     33 except " no shipper's prefix
    lines = [
        "ValueError                                Traceback (most recent call last)",
        "Cell In[1], line 3",
        "     31 try:",
        "---> 32     from outlines.fsm.json_schema import convert_json_schema_to_str",
        "     33 except ImportError:",
        "     34     pass",
        "     40 try:",
        "---> 41     nest_asyncio.apply()",
        "     42 except ImportError:",
        "     43     print('x')",
        "ValueError: Can't patch loop of type <class 'uvloop.Loop'>",
    ]
    assert read_lines(lines).lines == lines


# --- the round on Y (published after its first-seen row) ---------------------------------

LANDS_Y = [
    # the CDI hook, the driver installer unable to load the module
    (
        "gpu-unavailable",
        'Error: OCI runtime error: crun: {"msg":"error executing hook `/usr/local/bin/'
        'nvidia-cdi-hook` (exit code: 1)"}',
    ),
    ("gpu-unavailable", "ERROR: Unable to load the kernel module 'nvidia-drm.ko'."),
    # a rendezvous host name that does not resolve, under torch.distributed
    (
        "dist-init-timeout",
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/torch/distributed/rendezvous.py", line 1, in _create_c10d_store\n'
        "    return TCPStore(\n"
        "RuntimeError: Temporary failure in name resolution",
    ),
    # only a compiler's notes survived, one saying what failed
    (
        "jit-build-failed",
        "/x/site-packages/sglang/jit_kernel/csrc/norm.cuh:12:1: note:   template argument "
        "deduction/substitution failed:",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS_Y)
def test_the_y_round_lands_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


@pytest.mark.usefixtures("rules_only")
def test_sglangs_platform_probe_is_not_a_missing_package() -> None:
    log = (
        '[2026-01-02 03:04:05] Failed to import amdsmi with ModuleNotFoundError("No module '
        "named 'amdsmi'\")\n"
        "TypeError: cannot unpack non-iterable ForwardMetadata object\n"
    )
    assert classify_text(log).category != "python-import-error"


@pytest.mark.usefixtures("rules_only")
def test_a_name_outside_torch_distributed_is_not_the_rendezvous() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/requests/adapters.py", line 1, in send\n'
        "    raise ConnectionError(e)\n"
        "RuntimeError: Temporary failure in name resolution\n"
    )
    assert classify_text(log).category != "dist-init-timeout"


# --- for the tuned part's gate, after U to Y were published (misses of N) -------------------

LANDS_N = [
    # the container toolkit's requirement check cut before its condition
    ("driver-too-old", "nvidia-container-cli: requirement error: unsatisfied condition: cu"),
    # a CDI name taken for a device path by a runtime without CDI
    ("gpu-unavailable", "Error: stat amd.com/gpu=all: no such file or directory"),
    # CUDA's status by its number in a check against cudaSuccess (30: cudaErrorUnknown)
    (
        "gpu-unavailable",
        "F0101 00:00:00.000000 1 syncedmem.cpp:56] Check failed: error == cudaSuccess (30 vs. 0) "
        "unknown error",
    ),
]


@pytest.mark.usefixtures("rules_only")
@pytest.mark.parametrize(("want", "text"), LANDS_N)
def test_the_n_misses_land_on_another_text(want: str, text: str) -> None:
    d = classify_text(text + "\n")
    assert d.category == want, (d.category, d.summary)


def test_a_bare_exception_type_takes_no_message_from_the_lines_below() -> None:
    from orchestrator.diagnosis.journal import JournalLines
    from orchestrator.diagnosis.structure import tracebacks

    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/cuda_graph_runner.py", line 188, in replay\n'
        "    assert not batch.return_logprob\n"
        "AssertionError\n"
        "Exception in ControllerSingle:\n"
    )
    (tb,) = tracebacks(JournalLines(log), [0])
    assert tb.root.message == "assert not batch.return_logprob"
