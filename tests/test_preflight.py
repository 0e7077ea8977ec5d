"""Every preflight rule: a config SGLang (or deploy) rejects, and the nearest one it accepts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator import preflight, profiles
from orchestrator.preflight import RULES
from orchestrator.preflight.rules.speculative import need_steps_explanation, tree_size
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, checkpoint, write_profile

TREE_OK = {
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 4,
    "speculative_num_draft_tokens": 8,
    "attention_backend": "flashinfer",
    "speculative_draft_attention_backend": "flashinfer",
}
NO_STEPS = ["server.speculative_num_steps"]


def report(
    tmp_path: Path, *, gpu: str | None = None, on_box: bool = False, **data: Any
) -> preflight.Report:
    return preflight.run(
        profiles.load(str(write_profile(tmp_path, **data))), gpu=gpu, on_box=on_box
    )


def ids(r: preflight.Report, severity: str = "error") -> set[str]:
    return {f.rule for f in r.findings if f.severity == severity}


# (rule id, profile data that trips it, profile data for the nearest accepted config)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "spec-unknown-algorithm",
        {"server": {"speculative_algorithm": "EAGLE4"}},
        {"server": {"speculative_algorithm": "eagle3"}},
    ),
    (
        "spec-params-need-num-steps",
        {
            "unset": NO_STEPS,
            "server": {"speculative_eagle_topk": 4, "speculative_num_draft_tokens": 3},
        },
        {
            "unset": [
                *NO_STEPS,
                "server.speculative_eagle_topk",
                "server.speculative_num_draft_tokens",
            ]
        },
    ),
    (
        "spec-num-steps-needs-topk",
        {"unset": ["server.speculative_eagle_topk", "server.speculative_num_draft_tokens"]},
        {
            "server": {
                "speculative_num_steps": 3,
                "speculative_eagle_topk": 1,
                "speculative_num_draft_tokens": 4,
            }
        },
    ),
    (
        "spec-values-positive",
        {"server": {"speculative_num_steps": 0}},
        {"server": {"speculative_num_steps": 1, "speculative_num_draft_tokens": 2}},
    ),
    (
        "spec-draft-tokens-range",
        {
            "server": {
                **TREE_OK,
                "speculative_num_steps": 2,
                "speculative_eagle_topk": 2,
                "speculative_num_draft_tokens": 8,
            }
        },
        {
            "server": {
                **TREE_OK,
                "speculative_num_steps": 2,
                "speculative_eagle_topk": 2,
                "speculative_num_draft_tokens": 7,
            }
        },
    ),
    (
        "spec-tree-page-size-backend",
        {"server": {**TREE_OK, "attention_backend": "trtllm_mla"}},
        {"server": TREE_OK},
    ),
    (
        "spec-trtllm-mha-topk",
        {"server": {**TREE_OK, "attention_backend": "trtllm_mha", "page_size": 1}},
        {
            "server": {
                "attention_backend": "trtllm_mha",
                "page_size": 64,
                "speculative_eagle_topk": 1,
            }
        },
    ),
    (
        "spec-rejection-sampling",
        {"server": {**TREE_OK, "speculative_use_rejection_sampling": True}},
        {"server": {"speculative_use_rejection_sampling": True}},
    ),
    (
        "spec-dp-attention",
        {
            "server": {
                "speculative_algorithm": "NGRAM",
                "attn_dp_size": 2,
                "attention_backend": "flashinfer",
            }
        },
        {"server": {"speculative_algorithm": "NGRAM", "attention_backend": "flashinfer"}},
    ),
    (
        "spec-ngram-page-size",
        {"server": {"speculative_algorithm": "NGRAM"}},
        {"server": {"speculative_algorithm": "NGRAM", "attention_backend": "flashinfer"}},
    ),
    (
        "spec-pp-eagle3",
        {"server": {"tp_size": 4, "pp_size": 2}},
        {"server": {"tp_size": 8, "pp_size": 1}},
    ),
    ("eagle-needs-draft-model", {"unset": ["server.speculative_draft_model_path"]}, {}),
    ("draft-attention-backend", {"unset": ["server.speculative_draft_attention_backend"]}, {}),
    ("tp-divides-heads", {"server": {"tp_size": 6}}, {"server": {"tp_size": 8}}),
    ("gpus-for-tp", {"server": {"tp_size": 16}}, {"server": {"tp_size": 8}}),
    (
        "trtllm-mla-needs-blackwell",
        {"server": {"attention_backend": "trtllm_mla"}, "hardware": {"gpu": "h200"}},
        {"server": {"attention_backend": "trtllm_mla"}},
    ),
]


@pytest.mark.parametrize(("rule", "bad", "good"), CASES, ids=[c[0] for c in CASES])
def test_rule_rejects_and_accepts(
    tmp_path: Path, rule: str, bad: dict[str, Any], good: dict[str, Any]
) -> None:
    rejected = report(tmp_path, name="bad", **bad)
    assert rule in ids(rejected), rejected.findings
    assert not rejected.ok
    finding = next(f for f in rejected.findings if f.rule == rule)
    assert finding.fix and finding.message and finding.flags is not None
    accepted = report(tmp_path, name="good", **good)
    assert rule not in ids(accepted) | ids(accepted, "warning"), accepted.findings
    assert accepted.ok, [f.text() for f in accepted.errors]


def test_every_rule_has_a_case() -> None:
    covered = {c[0] for c in CASES} | {
        "spec-topk1-draft-tokens",
        "model-path-missing",
        "model-config-unreadable",
        "model-path-hub",
        "drafter-hidden-size",
        "drafter-architecture",
        "gpu-unknown",
        "environment-file",
        # NVML-backed rules: their bad and good cases are in tests/test_gpus.py
        "gpu-count",
        "gpu-mixed",
        "gpu-free-memory",
        "gpu-busy",
        "gpu-mismatch",
        "gpu-unnamed",
        "nvml-unavailable",
        # its cases are in tests/test_versions.py
        "sglang-version-unknown",
        # its cases are in tests/test_deprecated_flags.py
        "sglang-flag-deprecated",
        # its cases are in tests/test_ports.py (a port held for real)
        "port-free",
        # their cases are in tests/test_trust.py (owners, modes, the service user)
        "api-key-env",
        "environment-code",
        "root-code",
        "service-user",
        # its cases are in tests/test_redact.py (an environment file with a short key)
        "secret-too-short",
        # their cases are in tests/test_k8s.py ([cluster] and `export k8s`)
        "cluster-fit",
        "cluster-dp-multinode",
    }
    assert {i for r in RULES for i in r.ids} == covered


def test_seed_config_is_rejected_with_the_fix(tmp_path: Path) -> None:
    seed = {
        "extends": "kimi-k26",
        "server": {
            "speculative_algorithm": "EAGLE3",
            "speculative_draft_model_path": "/models/Kimi-K2.6-EAGLE3",
            "speculative_num_draft_tokens": 3,
            "speculative_eagle_topk": 4,
        },
    }
    r = report(tmp_path, **seed)
    f = next(f for f in r.errors if f.rule == "spec-params-need-num-steps")
    assert (
        "speculative_num_steps is unset while --speculative-eagle-topk 4 and --speculative-num-draft-tokens 3 are set"
        in f.message
    )
    assert f.fix == "set --speculative-num-steps (and keep the three consistent) or drop both"
    # The second wrong guess: remove top-k alone. Still refused, for the same reason.
    path = write_profile(tmp_path, name="seed", **seed)
    r2 = preflight.run(
        profiles.load(
            str(
                write_profile(
                    tmp_path,
                    name="seed2",
                    extends=str(path),
                    unset=["server.speculative_eagle_topk"],
                )
            )
        )
    )
    f2 = next(f for f in r2.errors if f.rule == "spec-params-need-num-steps")
    assert "--speculative-num-draft-tokens 3 is set" in f2.message
    assert "set --speculative-num-steps" in f2.fix


def test_builtin_profiles_validate() -> None:
    for b in profiles.builtins():
        r = preflight.run(profiles.load(b.name))
        assert r.ok, [f.text() for f in r.errors]
        assert not ids(r, "warning") - {"model-path-missing"}


def test_need_steps_explanation_without_flags() -> None:
    why, fix = need_steps_explanation({})
    assert "speculative_num_steps is unset" in why
    assert "set --speculative-num-steps" in fix


def test_topk1_draft_tokens_is_a_warning(tmp_path: Path) -> None:
    r = report(tmp_path, server={"speculative_num_draft_tokens": 6})
    assert r.ok
    assert "spec-topk1-draft-tokens" in ids(r, "warning")
    assert "steps + 1 = 4" in next(
        f.message for f in r.findings if f.rule == "spec-topk1-draft-tokens"
    )


def test_draft_tokens_below_steps_is_a_warning(tmp_path: Path) -> None:
    r = report(
        tmp_path,
        server={
            **TREE_OK,
            "speculative_num_steps": 5,
            "speculative_eagle_topk": 2,
            "speculative_num_draft_tokens": 3,
        },
    )
    assert "spec-draft-tokens-range" in ids(r, "warning")


def test_tree_size() -> None:
    assert tree_size(1, 1) == 2
    assert tree_size(3, 4) == 1 + 4 + 2 * 16


def test_tree_config_is_fine_on_hopper_default(tmp_path: Path) -> None:
    data = {k: v for k, v in TREE_OK.items() if k != "attention_backend"}
    r = report(tmp_path, server=data, hardware={"gpu": "h200"})
    assert "spec-tree-page-size-backend" not in ids(r)
    assert r.resolved["attention_backend"]["value"] == "fa3"


def test_unknown_gpu_says_what_was_not_checked(tmp_path: Path) -> None:
    r = report(
        tmp_path,
        server={
            **TREE_OK,
            "attention_backend": "",
            "speculative_draft_attention_backend": "flashinfer",
        },
        unset=["hardware.gpu"],
    )
    assert "gpu-unknown" in ids(r, "info")
    assert "spec-tree-page-size-backend" in ids(r, "warning")
    # --gpu fills in what the profile leaves open
    r2 = report(
        tmp_path,
        name="q",
        gpu="b200",
        server={**TREE_OK, "attention_backend": ""},
        unset=["hardware.gpu"],
    )
    assert "spec-tree-page-size-backend" in ids(r2)


def _models(
    tmp_path: Path, base: dict[str, Any] | None = None, draft: dict[str, Any] | None = None
) -> dict[str, Any]:
    b = checkpoint(tmp_path / "base", base or KIMI_K26_CONFIG)
    d = checkpoint(tmp_path / "draft", draft or EAGLE3_DRAFTER_CONFIG)
    return {"server": {"model_path": str(b), "speculative_draft_model_path": str(d)}}


def test_real_checkpoints_accepted_on_box(tmp_path: Path) -> None:
    r = report(tmp_path, on_box=True, **_models(tmp_path))
    assert r.ok and not r.findings, [f.text() for f in r.findings]
    assert r.resolved["base_model"]["architecture"] == "KimiK25ForConditionalGeneration"
    assert r.resolved["drafter"]["architecture"] == "LlamaForCausalLMEagle3"


def test_missing_paths_error_on_box_warning_elsewhere(tmp_path: Path) -> None:
    data = {"server": {"model_path": str(tmp_path / "nope")}}
    assert "model-path-missing" in ids(report(tmp_path, on_box=True, **data))
    assert "model-path-missing" in ids(report(tmp_path, **data), "warning")


def test_unreadable_config(tmp_path: Path) -> None:
    data = _models(tmp_path)
    (tmp_path / "base" / "config.json").write_text("{not json")
    assert "model-config-unreadable" in ids(report(tmp_path, **data))


def test_drafter_hidden_size_mismatch(tmp_path: Path) -> None:
    data = _models(
        tmp_path, draft={**EAGLE3_DRAFTER_CONFIG, "hidden_size": 4096, "target_hidden_size": 4096}
    )
    r = report(tmp_path, **data)
    f = next(f for f in r.errors if f.rule == "drafter-hidden-size")
    assert "4096" in f.message and "7168" in f.message


def test_drafter_architecture(tmp_path: Path) -> None:
    data = _models(tmp_path, draft={**EAGLE3_DRAFTER_CONFIG, "architectures": ["LlamaForCausalLM"]})
    assert "drafter-architecture" in ids(report(tmp_path, **data))


def test_mla_drafter_needs_no_draft_backend(tmp_path: Path) -> None:
    mla = {
        **EAGLE3_DRAFTER_CONFIG,
        "architectures": ["Eagle3DeepseekV2ForCausalLM"],
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
    }
    data = _models(tmp_path, draft=mla)
    r = report(tmp_path, unset=["server.speculative_draft_attention_backend"], **data)
    assert "draft-attention-backend" not in ids(r)


def test_hub_id_is_info(tmp_path: Path) -> None:
    r = report(tmp_path, server={"model_path": "moonshotai/Kimi-K2.6"})
    assert "model-path-hub" in ids(r, "info")


def test_rule_ids_unique_and_documented() -> None:
    all_ids = [i for r in RULES for i in r.ids]
    assert len(all_ids) == len(set(all_ids))
    assert all(r.doc and r.sglang for r in RULES)


def test_environment_file_must_be_private(tmp_path: Path) -> None:
    env = tmp_path / "secrets.env"
    data = {"unit": {"environment_file": str(env)}}
    missing = report(tmp_path, on_box=True, **data)
    assert "environment-file" in ids(missing)
    assert "environment-file" in ids(report(tmp_path, name="off", **data), "warning")
    env.write_text("HF_TOKEN=hf_x\n")
    env.chmod(0o644)
    loose = report(tmp_path, on_box=True, **data)
    f = next(f for f in loose.errors if f.rule == "environment-file")
    assert "0644" in f.message and f.fix == f"chmod 0600 {env}"
    env.chmod(0o600)
    assert "environment-file" not in ids(report(tmp_path, on_box=True, **data))
    if os.geteuid() == 0:
        os.chown(env, 12345, 12345)
        owned = report(tmp_path, on_box=True, **data)
        assert any("owned by uid 12345" in f.message for f in owned.errors)
