"""Checks on the checkpoints themselves: readable configs, drafter fit, TP fit, GPU fit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.preflight.rules.base import Context, Finding, ModelInfo, Rule
from orchestrator.profiles.fields import HUB_ID
from orchestrator.sglang.flags import flag

MLA_ARCHS = ("Deepseek", "KimiK2", "KimiK25", "Glm4Moe", "GlmMoeDsa", "MistralLarge3")


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Vision-language checkpoints (KimiK25ForConditionalGeneration) nest the LM's config."""
    inner = cfg.get("text_config")
    return {**cfg, **inner} if isinstance(inner, dict) else cfg


def model_info(path: str | None, declared: dict[str, Any]) -> ModelInfo:
    """What preflight knows about one checkpoint; config.json wins over the profile."""
    fallback = {k: v for k, v in declared.items() if v is not None}
    if not path:
        return ModelInfo(None, "profile" if fallback else "none", "unset", **fallback)
    p = Path(path)
    if not p.is_absolute() and HUB_ID.match(path):
        return ModelInfo(
            path,
            "profile" if fallback else "none",
            "hub",
            "a hub id, not a local directory",
            **fallback,
        )
    cfg_path = p / "config.json"
    if not p.exists():
        return ModelInfo(
            path, "profile" if fallback else "none", "missing", f"{path} does not exist", **fallback
        )
    try:
        raw = json.loads(cfg_path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        return ModelInfo(
            path, "profile" if fallback else "none", "unreadable", f"{cfg_path}: {e}", **fallback
        )
    cfg = _text_config(raw)
    archs = raw.get("architectures") or cfg.get("architectures") or []
    arch = archs[0] if archs else None
    mla = "kv_lora_rank" in cfg or (
        arch is not None and arch.startswith(MLA_ARCHS) and "Eagle3" not in arch
    )
    if arch and "Eagle3" in arch and "q_lora_rank" in cfg:
        mla = True
    return ModelInfo(
        path=path,
        source="config.json",
        state="ok",
        architecture=arch,
        attention="mla" if mla else "mha",
        hidden_size=cfg.get("hidden_size"),
        target_hidden_size=cfg.get("target_hidden_size"),
        num_attention_heads=cfg.get("num_attention_heads"),
        num_layers=cfg.get("num_hidden_layers"),
        mtp_layers=cfg.get("num_nextn_predict_layers", 0),
        vocab_size=cfg.get("vocab_size"),
    )


def paths(ctx: Context) -> Iterator[Finding]:
    for role, info, key in (
        ("base model", ctx.base, "model_path"),
        ("drafter", ctx.draft, "speculative_draft_model_path"),
    ):
        if info.state == "missing":
            yield Finding(
                "model-path-missing",
                "error" if ctx.on_box else "warning",
                (flag(key),),
                f"the {role} path {info.path} does not exist on this machine"
                + (
                    ""
                    if ctx.on_box
                    else "; checked again on the server by the unit's check oneshot"
                ),
                f"put the {role} at {info.path} or point {key} at its directory",
            )
        elif info.state == "unreadable":
            yield Finding(
                "model-config-unreadable",
                "error",
                (flag(key),),
                f"the {role}'s config.json cannot be read: {info.detail}",
                f"make sure {info.path}/config.json exists, is valid JSON and is readable by the service user",
            )
        elif info.state == "hub":
            yield Finding(
                "model-path-hub",
                "info",
                (flag(key),),
                f"the {role} {info.path} is a hub id; its config is not checked here, and the server "
                "downloads it at start-up",
                f"download it and set {key} to the local directory for a predictable start",
            )


def drafter_fit(ctx: Context) -> Iterator[Finding]:
    eagle = ctx.algorithm in ctx.release.eagle_draft_algorithms
    if not ctx.args.get("speculative_draft_model_path") or not eagle:
        return
    d, b = ctx.draft, ctx.base
    want = b.hidden_size
    got = d.target_hidden_size or d.hidden_size
    if want and got and want != got:
        yield Finding(
            "drafter-hidden-size",
            "error",
            ("--speculative-draft-model-path",),
            f"the drafter is built for hidden size {got} ({d.source}) but the base model's is {want} "
            f"({b.source}); SGLang has no check and fails at weight load with a shape mismatch",
            f"use an EAGLE-3 drafter trained for this base model (hidden size {want})",
        )
    arch = d.architecture
    if arch:
        eagle3 = "Eagle3" in arch
        if ctx.algorithm == "EAGLE3" and not eagle3:
            yield Finding(
                "drafter-architecture",
                "error",
                ("--speculative-draft-model-path", "--speculative-algorithm"),
                f"--speculative-algorithm EAGLE3 needs an EAGLE-3 drafter (such as LlamaForCausalLMEagle3), "
                f"but the drafter declares {arch}",
                "point speculative_draft_model_path at an EAGLE-3 drafter, or use the algorithm that drafter was trained for",
            )
        elif ctx.algorithm == "EAGLE" and eagle3:
            yield Finding(
                "drafter-architecture",
                "error",
                ("--speculative-draft-model-path", "--speculative-algorithm"),
                f"the drafter is an EAGLE-3 model ({arch}) but --speculative-algorithm is EAGLE",
                'set speculative_algorithm = "EAGLE3"',
            )
    if d.attention == "mla" and d.source == "config.json" and d.num_layers not in (None, 1):
        yield Finding(
            "drafter-architecture",
            "error",
            ("--speculative-draft-model-path",),
            f"an MLA EAGLE-3 drafter has exactly 1 layer; this one has {d.num_layers}",
            "use a 1-layer EAGLE-3 drafter",
        )


def tp_fits(ctx: Context) -> Iterator[Finding]:
    tp = int(ctx.args.get("tp_size") or 1)
    heads = ctx.base.num_attention_heads
    if heads and heads % tp:
        yield Finding(
            "tp-divides-heads",
            "error",
            ("--tp-size",),
            f"--tp-size {tp} does not divide the model's {heads} attention heads ({ctx.base.source})",
            "set tp_size to a divisor of " + str(heads) + " (8 for Kimi K2.6 on 8 GPUs)",
        )
    count = ctx.spec.hardware.gpu_count
    pp = int(ctx.args.get("pp_size") or 1)
    nnodes = max(int(ctx.args.get("nnodes") or 1), 1)  # a multi-node server: per node
    if count and -(-tp * pp // nnodes) > count:
        yield Finding(
            "gpus-for-tp",
            "error",
            ("--tp-size", "--pp-size"),
            f"tp_size x pp_size = {tp * pp} GPUs"
            + (f" over {nnodes} nodes" if nnodes > 1 else "")
            + f", but the box has {count}",
            f"set tp_size to {count} or fewer",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "model-path-missing",
        "The base model and drafter directories exist (an error on the server, a warning elsewhere).",
        "SGLang fails late: HFValidationError / repo not found",
        paths,
        "models",
        ("model-config-unreadable", "model-path-hub"),
    ),
    Rule(
        "drafter-hidden-size",
        "The drafter's (target_)hidden_size equals the base model's (7168 for Kimi K2.6).",
        "not checked by SGLang: shape mismatch at weight load",
        drafter_fit,
        "models",
        ("drafter-architecture",),
    ),
    Rule(
        "tp-divides-heads",
        "tp_size divides the attention heads, and tp_size x pp_size fits the GPUs.",
        "SGLang asserts at model init",
        tp_fits,
        "models",
        ("gpus-for-tp",),
    ),
)
