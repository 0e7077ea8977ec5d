"""Rules that depend on the GPU the server runs on."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.rules.base import Context, Finding, Rule

MLA_ONLY_BLACKWELL = ("trtllm_mla",)


def trtllm_mla_blackwell(ctx: Context) -> Iterator[Finding]:
    chosen = {
        str(ctx.args[k])
        for k in ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
        if ctx.args.get(k)
    }
    if "trtllm_mla" not in chosen:
        return
    if ctx.gpu is None:
        yield Finding(
            "trtllm-mla-needs-blackwell",
            "warning",
            ("--attention-backend",),
            "trtllm_mla runs only on Blackwell GPUs (SM100/SM12x), and the GPU is not known here",
            "give the GPU with --gpu or [hardware] gpu so this can be checked",
        )
    elif not ctx.gpu.blackwell:
        yield Finding(
            "trtllm-mla-needs-blackwell",
            "error",
            ("--attention-backend",),
            f"trtllm_mla runs only on Blackwell GPUs; this box has {ctx.gpu.name} (sm_{ctx.gpu.sm}). "
            "SGLang raises ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs",
            "drop attention_backend to take SGLang's default, or set fa3 (Hopper) / flashinfer / triton",
        )


def gpu_known(ctx: Context) -> Iterator[Finding]:
    if ctx.gpu is None:
        yield Finding(
            "gpu-unknown",
            "info",
            (),
            "the GPU is not known, so SGLang's hardware-dependent defaults (attention backend, page "
            "size) could not be applied: spec-tree-page-size-backend, draft-attention-backend and "
            "trtllm-mla-needs-blackwell were checked only against explicit settings",
            "pass --gpu (b200, h200, ...) or set [hardware] gpu in the profile",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "trtllm-mla-needs-blackwell",
        "The trtllm_mla attention backend runs only on Blackwell.",
        "arg_groups/overrides.py: ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs",
        trtllm_mla_blackwell,
        "hardware",
    ),
    Rule(
        "gpu-unknown",
        "Says which hardware-dependent rules could not be applied when the GPU is unknown.",
        "SGLang picks defaults from the GPU it finds",
        gpu_known,
        "hardware",
    ),
)
