"""deploy's verdicts beside SGLang's real ones: each release's own argument resolution.

Runs for every release in RELEASES, each in a venv built by `scripts/sglang-cpu-venv DIR
VERSION` and named by its variable (SGLANG_CPU_VENV=DIR for 0.5.23, SGLANG_CPU_VENV_0_5_11=DIR
for 0.5.11, the release of the seed's traceback). Without a venv a release's tests skip,
except in CI (CI=true), where a missing or broken venv fails them.

deploy judges each profile against the release installed for its unit.python (here: the venv's),
so its verdict follows each release's own rules (orchestrator/sglang/v0_5_11.py, v0_5_23.py);
where the two releases differ, each test says how.

The venv has CPU torch and no GPU is visible to the probe, so `orchestrator/sglang/probe.py` resolves for
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

from orchestrator import preflight, profiles, sglang
from orchestrator.cli import app
from orchestrator.errors import ProfileError
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, checkpoint, write_profile

SPEC = [
    "server.speculative_num_steps",
    "server.speculative_eagle_topk",
    "server.speculative_num_draft_tokens",
]
NEW, OLD = "0.5.23", "0.5.11"
# Release -> the variable naming its venv.
RELEASES = {NEW: "SGLANG_CPU_VENV", OLD: "SGLANG_CPU_VENV_0_5_11"}
# Where each release's EAGLE-family checks live (file under site-packages, function).
EAGLE_CHECKS = {
    NEW: ("sglang/srt/arg_groups/speculative_hook.py", "_handle_eagle_family"),
    OLD: ("sglang/srt/server_args.py", "_handle_speculative_decoding"),
}


@pytest.fixture(scope="module", params=list(RELEASES))
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def venv_python(release: str) -> str:
    var = RELEASES[release]
    where = os.environ.get(var)
    build = f"scripts/sglang-cpu-venv DIR {release}"
    if not where:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{var} is not set: CI builds it with {build}")
        pytest.skip(f"{var} is not set (build one with {build})")
    python = Path(where) / "bin" / "python"
    if not os.access(python, os.X_OK):
        pytest.fail(f"{var}={where} has no bin/python: run {build.replace('DIR', where)}")
    found = sorted(
        p.name for p in Path(where).glob("lib/python3*/site-packages/sglang-*.dist-info")
    )
    if found != [f"sglang-{release}.dist-info"]:
        pytest.fail(f"{var}={where} should hold sglang {release}, has {found or 'no sglang'}")
    return str(python)


def at(release: str, line: int) -> str:
    """`file:line in function` of the release's EAGLE-family checks, as the probe reports it."""
    path, function = EAGLE_CHECKS[release]
    return f"({path}:{line} in {function}: "


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
    assert spec.sglang.found == spec.sglang.version, spec.sglang  # found in the venv, known
    r = replace(preflight.run(spec), sglang=preflight.sglang_verdict(spec))
    assert r.sglang is not None and r.sglang.available, r.sglang
    return r


def errors(r: preflight.Report) -> set[str]:
    return {f.rule for f in r.errors}


def test_seed_no_num_steps_rejected_by_both(tmp_path: Path, venv_python: str, release: str) -> None:
    """Top-k and draft tokens without steps: SGLang's bare `assert` (no message).

    Python 3.11 reports the assert's last line: 0.5.23 speculative_hook.py 1159-1162, 0.5.11
    server_args.py 3518-3521 (the seed's build, between 0.5.11 and 0.5.12, had it at 3598).
    """
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
    line = {NEW: 1162, OLD: 3521}[release]
    assert r.sglang.detail.startswith("AssertionError " + at(release, line)), r.sglang.detail
    assert "spec-params-need-num-steps" in errors(r)
    assert r.disagreement is None


def test_draft_tokens_only_rejected_by_both(tmp_path: Path, venv_python: str, release: str) -> None:
    r = checked(
        tmp_path,
        venv_python,
        "draft-only",
        {"unset": SPEC[:2], "server": {"speculative_num_draft_tokens": 3}},
    )
    assert r.sglang is not None and r.sglang.accepted is False
    assert r.sglang.detail.startswith("AssertionError ("), r.sglang.detail
    assert f"in {EAGLE_CHECKS[release][1]}" in r.sglang.detail
    assert errors(r) == {"spec-params-need-num-steps"}
    assert r.disagreement is None


def test_nothing_set_accepted_by_both(tmp_path: Path, venv_python: str, release: str) -> None:
    """All three unset: SGLang auto-chooses (3, 1, 4).

    _auto_choose_speculative_params (0.5.11: auto_choose_speculative_params) keys on the
    target's architecture only (no GPU, no device): KimiK25ForConditionalGeneration is not in
    any of its lists and takes the default (3, 1, 4), the same as DeepseekV3ForCausalLM's
    explicit entry. So the CPU probe resolves what the box would.
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
    # 0.5.23 forces page size 64 for the trtllm_mha draft backend; 0.5.11 leaves it at 1.
    assert got["page_size"] == {NEW: 64, OLD: 1}[release]
    assert r.ok and r.disagreement is None


def test_steps_without_topk_type_error_both(tmp_path: Path, venv_python: str, release: str) -> None:
    """Steps set, top-k unset: SGLang compares None > 1 and dies with a TypeError (both
    releases at the top-k > 1 with page size > 1 check)."""
    r = checked(tmp_path, venv_python, "steps-no-topk", {"unset": SPEC[1:]})
    assert r.sglang is not None and r.sglang.accepted is False
    rel = sglang.release(release)
    line = rel.frame("spec-steps-need-topk").line
    assert r.sglang.detail.startswith(
        rel.message("spec-steps-need-topk").line() + " " + at(release, line)
    ), r.sglang.detail
    assert "spec-num-steps-needs-topk" in errors(r)
    assert r.disagreement is None


def test_unknown_algorithm_rejected_by_both(tmp_path: Path, venv_python: str, release: str) -> None:
    """0.5.23 takes any string and rejects it while resolving, with a ValueError, and deploy's
    finding quotes it. 0.5.11's --speculative-algorithm has argparse choices, so SGLang exits
    2 while parsing ("invalid choice: 'EAGLE4'"), and deploy refuses the profile as it loads
    it, from the same choices in 0.5.11's flag table."""
    data = {"server": {"speculative_algorithm": "EAGLE4"}}
    if release == OLD:
        with pytest.raises(ProfileError) as e:
            checked(tmp_path, venv_python, "unknown", data)
        assert e.value.field == "server.speculative_algorithm"
        assert "EAGLE3" in e.value.fix  # the release's choices
        return
    r = checked(tmp_path, venv_python, "unknown", data)
    assert r.sglang is not None and r.sglang.accepted is False
    want = sglang.release(NEW).message("spec-unknown-algorithm").line(name="EAGLE4")
    assert r.sglang.detail.startswith(want), r.sglang.detail
    assert "spec-unknown-algorithm" in errors(r)
    finding = next(f for f in r.errors if f.rule == "spec-unknown-algorithm")
    assert f"SGLang {release} does not know" in finding.message and want in finding.message
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
    is refused by deploy (spec-tree-page-size-backend) and by SGLang on the box, in both
    releases (see test_tree_with_paged_backend). Without a visible GPU, SGLang picks the
    triton backend at page size 1, which supports trees, and accepts: a disagreement in which
    deploy is the one that is right. If the probe learns the box's GPU, this changes.
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


def test_gpu_bound_error_is_no_verdict(tmp_path: Path, venv_python: str, release: str) -> None:
    """trtllm_mla set explicitly on a B200 profile: deploy accepts it; SGLang, seeing no
    Blackwell GPU from the probe, refuses it for a reason that only says where the probe runs.
    That is reported as no verdict, not as a disagreement. Same text in both releases."""
    r = checked(tmp_path, venv_python, "trtllm", {"server": {"attention_backend": "trtllm_mla"}})
    assert r.ok, [f.text() for f in r.errors]
    assert r.sglang is not None and r.sglang.accepted is None
    assert r.sglang.detail.startswith(
        sglang.release(release).message("trtllm-mla-blackwell").line()
    ), r.sglang.detail
    where = {
        NEW: "sglang/srt/arg_groups/overrides.py:1211 in _mla_kv_cache_dtype_checks",
        OLD: "sglang/srt/server_args.py:2603 in _handle_attention_backend_compatibility",
    }[release]
    assert where in r.sglang.detail and "not a verdict" in r.sglang.detail
    assert r.disagreement is None


TREE = {"speculative_num_steps": 3, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8}


def test_tree_with_paged_backend(tmp_path: Path, venv_python: str, release: str) -> None:
    """Top-k > 1 with flashmla (which forces page size 64): both releases refuse, each with
    its own text. 0.5.23 lists ('flashinfer', 'fa3', 'triton'); 0.5.11 allows flashinfer and
    fa3 but its message names only 'flashinfer'."""
    r = checked(
        tmp_path,
        venv_python,
        "tree-flashmla",
        {"server": {**TREE, "attention_backend": "flashmla"}},
    )
    assert r.sglang is not None and r.sglang.accepted is False
    rel = sglang.release(release)
    said = rel.message("spec-tree-page-size").line(
        backends=str(rel.tree_paged_backends), backend="'flashmla'"
    )
    line = rel.frame("spec-tree-page-size").line
    assert r.sglang.detail.startswith(said + " " + at(release, line)), r.sglang.detail
    assert "spec-tree-page-size-backend" in errors(r)
    finding = next(f for f in r.errors if f.rule == "spec-tree-page-size-backend")
    assert said in finding.message  # deploy quotes the release's own words
    assert r.disagreement is None


def test_tree_triton_paged(tmp_path: Path, venv_python: str, release: str) -> None:
    """Top-k > 1 on triton at page size 64: 0.5.23 has triton among the tree-capable paged
    backends and accepts; 0.5.11 allows only flashinfer and fa3 and refuses. deploy agrees
    with each."""
    r = checked(
        tmp_path,
        venv_python,
        "tree-triton-paged",
        {"server": {**TREE, "attention_backend": "triton", "page_size": 64}},
    )
    assert r.sglang is not None
    if release == NEW:
        assert r.ok, [f.text() for f in r.errors]
        assert r.sglang.accepted is True, r.sglang.detail
    else:
        assert errors(r) == {"spec-tree-page-size-backend"}
        assert r.sglang.accepted is False
        assert r.sglang.detail.startswith(
            sglang.release(OLD).message("spec-tree-page-size").line()
        ), r.sglang.detail
    assert r.disagreement is None


def test_adaptive_without_steps(tmp_path: Path, venv_python: str, release: str) -> None:
    """--speculative-adaptive with top-k and draft tokens but no steps: 0.5.23 skips the
    assertion when adaptive is on (`if not cfg.speculative_adaptive and ...`) and accepts;
    0.5.11 has the flag but asserts regardless. deploy agrees with each."""
    r = checked(
        tmp_path,
        venv_python,
        "adaptive",
        {
            "unset": SPEC[:1],
            "server": {
                "speculative_eagle_topk": 1,
                "speculative_num_draft_tokens": 4,
                "speculative_adaptive": True,
            },
        },
    )
    assert r.sglang is not None
    if release == NEW:
        assert r.ok, [f.text() for f in r.errors]
        assert r.sglang.accepted is True, r.sglang.detail
    else:
        assert errors(r) == {"spec-params-need-num-steps"}
        finding = next(f for f in r.errors if f.rule == "spec-params-need-num-steps")
        assert "server_args.py:3521 in _handle_speculative_decoding" in finding.message
        assert r.sglang.accepted is False
        assert r.sglang.detail.startswith("AssertionError " + at(OLD, 3521)), r.sglang.detail
    assert r.disagreement is None


def test_attn_dp_size_flag(tmp_path: Path, venv_python: str, release: str) -> None:
    """`attn_dp_size`, deploy's replacement for the retired enable_dp_attention: 0.5.23 takes
    --attn-dp-size; 0.5.11 has no such flag (it has --enable-dp-attention and --dp-size) and
    exits 2 ("unrecognized arguments: --attn-dp-size 8"). deploy refuses the profile for
    0.5.11 as it loads it: the key is not one of that release's fields."""
    if release == NEW:
        r = checked(tmp_path, venv_python, "attn-dp", {"server": {"attn_dp_size": 8}})
        assert r.ok, [f.text() for f in r.errors]
        assert r.sglang is not None and r.sglang.accepted is True, r.sglang.detail
        assert r.disagreement is None
    else:
        with pytest.raises(ProfileError) as e:
            checked(tmp_path, venv_python, "attn-dp", {"server": {"attn_dp_size": 8}})
        assert e.value.field == "server.attn_dp_size"
        assert "SGLang 0.5.11" in str(e.value)
