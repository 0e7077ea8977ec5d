"""deploy's verdicts beside SGLang's real ones: sglang 0.5.23's own argument resolution.

Needs a venv built by `scripts/sglang-cpu-venv DIR`, named by SGLANG_CPU_VENV=DIR. Without it
these tests skip, except in CI (CI=true), where a missing or broken venv fails them.

The venv has CPU torch and no GPU is visible to the probe, so `_PROBE` resolves for
`--device cuda` on a GPU SGLang cannot see: everything the speculative parameters need is
resolved as on the box, but GPU-dependent defaults are not (see test_gpu_dependent_blind_spot).
Each SGLang call is one interpreter start, ~8 s.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import preflight, profiles
from orchestrator.cli import app
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, checkpoint, said, write_profile

SPEC = [
    "server.speculative_num_steps",
    "server.speculative_eagle_topk",
    "server.speculative_num_draft_tokens",
]
SPECULATIVE_HOOK = "sglang/srt/arg_groups/speculative_hook.py"


@pytest.fixture(scope="module")
def venv_python() -> str:
    where = os.environ.get("SGLANG_CPU_VENV")
    in_ci = os.environ.get("CI") == "true"
    if not where:
        if in_ci:
            pytest.fail("SGLANG_CPU_VENV is not set: CI builds it with scripts/sglang-cpu-venv DIR")
        pytest.skip("SGLANG_CPU_VENV is not set (build one with scripts/sglang-cpu-venv DIR)")
    python = Path(where) / "bin" / "python"
    if not os.access(python, os.X_OK):
        pytest.fail(
            f"SGLANG_CPU_VENV={where} has no bin/python: run scripts/sglang-cpu-venv {where}"
        )
    return str(python)


def checked(tmp_path: Path, venv_python: str, name: str, data: dict[str, Any]) -> preflight.Report:
    """deploy's report on the profile, with SGLang's verdict from the venv beside it."""
    base = checkpoint(tmp_path / "kimi", KIMI_K26_CONFIG)
    draft = checkpoint(tmp_path / "drafter", EAGLE3_DRAFTER_CONFIG)
    data = {**data, "unit": {"python": venv_python}}
    data["server"] = {
        **data.get("server", {}),
        "model_path": str(base),
        "speculative_draft_model_path": str(draft),
    }
    spec = profiles.load(str(write_profile(tmp_path, name, **data)))
    r = replace(preflight.run(spec), sglang=preflight.sglang_verdict(spec))
    assert r.sglang is not None and r.sglang.available, r.sglang
    return r


def errors(r: preflight.Report) -> set[str]:
    return {f.rule for f in r.errors}


def test_seed_no_num_steps_rejected_by_both(tmp_path: Path, venv_python: str) -> None:
    """Top-k and draft tokens without steps: SGLang's bare `assert` in _handle_eagle_family."""
    r = checked(
        tmp_path,
        venv_python,
        "seed",
        {
            "unset": SPEC[:1],
            "server": {"speculative_eagle_topk": 4, "speculative_num_draft_tokens": 3},
        },
    )
    assert r.sglang is not None and r.sglang.accepted is False
    assert r.sglang.detail.startswith("AssertionError ("), r.sglang.detail
    assert SPECULATIVE_HOOK in r.sglang.detail and "in _handle_eagle_family" in r.sglang.detail
    assert "spec-params-need-num-steps" in errors(r)
    assert r.disagreement is None


def test_draft_tokens_only_rejected_by_both(tmp_path: Path, venv_python: str) -> None:
    r = checked(
        tmp_path,
        venv_python,
        "draft-only",
        {"unset": SPEC[:2], "server": {"speculative_num_draft_tokens": 3}},
    )
    assert r.sglang is not None and r.sglang.accepted is False
    assert r.sglang.detail.startswith("AssertionError ("), r.sglang.detail
    assert "in _handle_eagle_family" in r.sglang.detail
    assert errors(r) == {"spec-params-need-num-steps"}
    assert r.disagreement is None


def test_nothing_set_accepted_by_both(tmp_path: Path, venv_python: str) -> None:
    """All three unset: SGLang auto-chooses (3, 1, 4).

    _auto_choose_speculative_params keys on the target's architecture only (no GPU, no
    device): KimiK25ForConditionalGeneration is not in any of its lists and takes the
    default (3, 1, 4), the same as DeepseekV3ForCausalLM's explicit entry. So the CPU probe
    resolves what the box would.
    """
    r = checked(tmp_path, venv_python, "nothing", {"unset": SPEC})
    assert r.sglang is not None and r.sglang.accepted is True, r.sglang.detail
    got = r.sglang.resolved
    assert (
        got["speculative_num_steps"],
        got["speculative_eagle_topk"],
        got["speculative_num_draft_tokens"],
    ) == (3, 1, 4)
    assert got["device"] == "cuda"  # the probe's default: the GPUs are hidden from it
    assert r.ok and r.disagreement is None


def test_steps_without_topk_type_error_both(tmp_path: Path, venv_python: str) -> None:
    """Steps set, top-k unset: SGLang compares None > 1 and dies with a TypeError."""
    r = checked(tmp_path, venv_python, "steps-no-topk", {"unset": SPEC[1:]})
    assert r.sglang is not None and r.sglang.accepted is False
    assert r.sglang.detail.startswith(said("spec-steps-need-topk")), r.sglang.detail
    assert SPECULATIVE_HOOK in r.sglang.detail and "in _handle_eagle_family" in r.sglang.detail
    assert "spec-num-steps-needs-topk" in errors(r)
    assert r.disagreement is None


def test_unknown_algorithm_rejected_by_both(tmp_path: Path, venv_python: str) -> None:
    """Not an argparse choice: SGLang rejects it while resolving, with a ValueError."""
    r = checked(tmp_path, venv_python, "unknown", {"server": {"speculative_algorithm": "EAGLE4"}})
    assert r.sglang is not None and r.sglang.accepted is False
    assert r.sglang.detail.startswith(said("spec-unknown-algorithm", name="EAGLE4")), (
        r.sglang.detail
    )
    assert "spec-unknown-algorithm" in errors(r)
    assert r.disagreement is None


def test_builtin_profile_via_cli(tmp_path: Path, venv_python: str) -> None:
    """`deploy validate --sglang --json` on the built-in profile, paths made real."""
    base = checkpoint(tmp_path / "kimi", KIMI_K26_CONFIG)
    draft = checkpoint(tmp_path / "drafter", EAGLE3_DRAFTER_CONFIG)
    prof = write_profile(
        tmp_path,
        "builtin",
        server={"model_path": str(base), "speculative_draft_model_path": str(draft)},
        unit={"python": venv_python},
    )
    r = CliRunner().invoke(
        app,
        ["validate", str(prof), "--sglang", "--json", "--no-nvml"],
        catch_exceptions=False,
        env={"DEPLOY_STATE_DIR": None},
    )
    assert r.exit_code == 0, r.stdout
    out = json.loads(r.stdout)
    assert out["ok"] is True
    s = out["sglang"]
    assert s["available"] is True and s["accepted"] is True, s
    assert s["resolved"]["speculative_num_steps"] == 3
    assert s["resolved"]["speculative_eagle_topk"] == 1
    assert s["resolved"]["speculative_num_draft_tokens"] == 4
    assert s["resolved"]["speculative_draft_attention_backend"] == "trtllm_mha"
    assert out["disagreement"] is None


def test_gpu_dependent_blind_spot(tmp_path: Path, venv_python: str) -> None:
    """What the probe cannot see: the box's GPU.

    A tree (top-k 4) with the B200's default attention backend (trtllm_mla, page size 64)
    is refused by deploy (spec-tree-page-size-backend) and by SGLang on the box
    (_handle_eagle_family: `speculative_eagle_topk > 1 with page_size > 1 is only supported
    on ('flashinfer', 'fa3', 'triton')`; the probe shows it with --attention-backend flashmla,
    while trtllm_mla itself cannot be resolved there: SGLang wants to see an SM100 GPU).
    Without a visible GPU, SGLang picks the triton backend, which supports trees, and
    accepts: a disagreement in which deploy is the one that is right. If the probe learns the
    box's GPU, this changes.
    """
    r = checked(
        tmp_path,
        venv_python,
        "tree",
        {
            "unset": ["server.speculative_draft_attention_backend"],
            "server": {
                "speculative_num_steps": 3,
                "speculative_eagle_topk": 4,
                "speculative_num_draft_tokens": 8,
            },
        },
    )
    assert "spec-tree-page-size-backend" in errors(r)
    assert r.sglang is not None and r.sglang.accepted is True, r.sglang.detail
    assert r.sglang.resolved["attention_backend"] == "triton"
    assert r.disagreement is not None
    assert r.disagreement.startswith("SGLang accepts this config but deploy refuses it")


def test_gpu_bound_error_is_no_verdict(tmp_path: Path, venv_python: str) -> None:
    """trtllm_mla set explicitly on a B200 profile: deploy accepts it; SGLang, seeing no
    Blackwell GPU from the probe, refuses it for a reason that only says where the probe runs.
    That is reported as no verdict, not as a disagreement."""
    r = checked(tmp_path, venv_python, "trtllm", {"server": {"attention_backend": "trtllm_mla"}})
    assert r.ok, [f.text() for f in r.errors]
    assert r.sglang is not None and r.sglang.accepted is None
    assert "only supported on Blackwell" in r.sglang.detail and "not a verdict" in r.sglang.detail
    assert r.disagreement is None
