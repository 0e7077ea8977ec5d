"""SGLang's speculative-decoding rules, stated in SGLang's own terms.

The rules are logic; what differs between SGLang releases (algorithm names, which backends
take a paged tree draft, the texts SGLang prints, where in its source it checks) is data in
`orchestrator.sglang`, read through `ctx.release`. The classifier reuses
`need_steps_explanation` so a crash and a refusal read the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from orchestrator.preflight.rules.base import Context, Finding, Rule
from orchestrator.sglang import Release
from orchestrator.sglang.enforcement import enforced_at
from orchestrator.sglang.flags import flag

STEPS, TOPK, DRAFT = (
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)


def _said(release: Release, mid: str, **values: object) -> str:
    """What SGLang prints for message `mid`, e.g. "ValueError: trtllm_mha backend only ..."."""
    return release.message(mid).line(**values)


def _where(release: Release, frame: str) -> str:
    f = release.frame(frame)
    return f"sglang {release.version}: {f.file}:{f.line} in {f.function}"


def _set(flags: Mapping[str, Any], key: str) -> bool:
    return flags.get(key) is not None


def _shown(flags: Mapping[str, Any], key: str) -> str:
    return f"{flag(key)} {flags[key]}" if _set(flags, key) else flag(key)


def need_steps_explanation(
    flags: Mapping[str, Any], release: Release | None = None
) -> tuple[str, str]:
    """(why, fix) for spec-params-need-num-steps, from the flags the unit really passes.

    Shared by preflight (before a start) and the classifier (after the crash). With a release,
    the reason names where that release asserts."""
    present = [k for k in (TOPK, DRAFT) if _set(flags, k)]
    if present:
        listed = " and ".join(_shown(flags, k) for k in present)
        verb = "are" if len(present) > 1 else "is"
    else:
        listed, verb = f"{flag(TOPK)} and/or {flag(DRAFT)}", "are"
    why = (
        f"speculative_num_steps is unset while {listed} {verb} set: SGLang then auto-chooses "
        "all three and asserts that top-k and draft tokens are unset (a bare AssertionError"
        + (f" at {_where(release, 'spec-need-steps')}" if release is not None else "")
        + ")"
    )
    if len(present) == 1:
        fix = f"set {flag(STEPS)} (and keep the three consistent) or drop {flag(present[0])}"
    else:
        fix = f"set {flag(STEPS)} (and keep the three consistent) or drop both"
    return why, fix


def _eagle(ctx: Context) -> bool:
    return ctx.algorithm in ctx.release.eagle_family


def _int(ctx: Context, key: str) -> int | None:
    v = ctx.args.get(key)
    return int(v) if v is not None else None


def unknown_algorithm(ctx: Context) -> Iterator[Finding]:
    a = ctx.algorithm
    known = ctx.release.algorithms
    if a is not None and a not in known:
        yield Finding(
            "spec-unknown-algorithm",
            "error",
            ("--speculative-algorithm",),
            f"SGLang {ctx.release.version} does not know the speculative algorithm "
            f"{ctx.args['speculative_algorithm']!r} ("
            + _said(ctx.release, "spec-unknown-algorithm", name=a)
            + ")",
            f"set --speculative-algorithm to one of {', '.join(known)} (EAGLE3 for an EAGLE-3 drafter)",
        )


def need_num_steps(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx) or _adaptive(ctx):
        return
    if ctx.args.get(STEPS) is None and (
        ctx.args.get(TOPK) is not None or ctx.args.get(DRAFT) is not None
    ):
        why, fix = need_steps_explanation(ctx.args, ctx.release)
        yield Finding(
            "spec-params-need-num-steps",
            "error",
            (flag(STEPS), flag(TOPK), flag(DRAFT)),
            why,
            fix,
        )


def _adaptive(ctx: Context) -> bool:
    """--speculative-adaptive skips the assertion, where the release has it."""
    return ctx.release.adaptive_skips_auto_choice and bool(ctx.args.get("speculative_adaptive"))


def steps_need_topk(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx) or _adaptive(ctx):
        return
    if ctx.args.get(STEPS) is not None and ctx.args.get(TOPK) is None:
        yield Finding(
            "spec-num-steps-needs-topk",
            "error",
            (flag(STEPS), flag(TOPK)),
            f"{flag(STEPS)} {ctx.args[STEPS]} is set but {flag(TOPK)} is not: SGLang crashes "
            "comparing None with an int ("
            + _said(ctx.release, "spec-steps-need-topk")
            + f" at {_where(ctx.release, 'spec-steps-need-topk')})",
            f"set {flag(TOPK)} (1 for a chain draft) and {flag(DRAFT)} "
            f"({int(ctx.args[STEPS]) + 1} with top-k 1), or drop {flag(STEPS)} to let SGLang choose all three",
        )


def values_positive(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx):
        return
    for key in (STEPS, TOPK, DRAFT):
        v = ctx.args.get(key)
        if v is not None and int(v) < 1:
            yield Finding(
                "spec-values-positive",
                "error",
                (flag(key),),
                f"{flag(key)} {v} is below 1; SGLang accepts it and then drafts nothing or fails later",
                f"set {flag(key)} to 1 or more",
                stricter=True,
            )


def _positive(ctx: Context) -> tuple[int, int, int | None] | None:
    steps, topk, draft = _int(ctx, STEPS), _int(ctx, TOPK), _int(ctx, DRAFT)
    if steps is None or topk is None or steps < 1 or topk < 1 or (draft is not None and draft < 1):
        return None
    return steps, topk, draft


def topk1_draft_tokens(ctx: Context) -> Iterator[Finding]:
    got = _positive(ctx) if _eagle(ctx) else None
    if got is None:
        return
    steps, topk, draft = got
    if topk == 1 and draft is not None and draft != steps + 1:
        yield Finding(
            "spec-topk1-draft-tokens",
            "warning",
            (flag(DRAFT), flag(STEPS), flag(TOPK)),
            f"with {flag(TOPK)} 1 SGLang replaces {flag(DRAFT)} {draft} by steps + 1 = {steps + 1} "
            "(a chain of steps drafts verifies steps + 1 tokens; it logs: "
            f'"{ctx.release.message("spec-topk1-draft-adjusted").format()}")',
            f"set {flag(DRAFT)} {steps + 1}, or raise {flag(TOPK)} for a tree draft",
        )


def tree_size(steps: int, topk: int) -> int:
    """The most tokens an EAGLE tree can verify: the root, top-k at the first step, then
    top-k * top-k candidates at each later step (speculative/eagle_utils.py)."""
    return 1 + topk + (steps - 1) * topk * topk


def draft_tokens_range(ctx: Context) -> Iterator[Finding]:
    got = _positive(ctx) if _eagle(ctx) else None
    if got is None:
        return
    steps, topk, draft = got
    if topk <= 1 or draft is None:
        return
    lo, hi = steps + 1, tree_size(steps, topk)
    if draft > hi:
        yield Finding(
            "spec-draft-tokens-range",
            "error",
            (flag(DRAFT), flag(STEPS), flag(TOPK)),
            f"{flag(DRAFT)} {draft} is larger than the draft tree of {steps} steps x top-k {topk} "
            f"can hold ({hi}); SGLang's top-k selection over the tree fails at the first verify",
            f"set {flag(DRAFT)} between {lo} and {hi}",
            stricter=True,
        )
    elif draft < lo:
        yield Finding(
            "spec-draft-tokens-range",
            "warning",
            (flag(DRAFT), flag(STEPS), flag(TOPK)),
            f"{flag(DRAFT)} {draft} is below steps + 1 = {lo}: the deepest draft steps can never "
            "be verified, so they cost time and accept nothing",
            f"set {flag(DRAFT)} between {lo} and {hi}, or lower {flag(STEPS)} to {max(1, draft - 1)}",
            stricter=True,
        )


def tree_page_size_backend(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx):
        return
    topk = _int(ctx, TOPK)
    if topk is None or topk <= 1:
        return
    backend, who = ctx.attention_backend()
    page, page_who = ctx.page_size()
    tree = ctx.release.tree_paged_backends
    if backend is None or page is None:
        yield Finding(
            "spec-tree-page-size-backend",
            "warning",
            (flag(TOPK), "--attention-backend", "--page-size"),
            f"{flag(TOPK)} {topk} is a tree draft, which SGLang allows with page size > 1 only on "
            f"{', '.join(tree)}; the attention backend SGLang will pick could not be "
            "checked (GPU or model attention type unknown). On Blackwell an MLA model defaults to "
            "trtllm_mla with page size 64 and is rejected",
            "give the GPU (--gpu b200 or [hardware] gpu) so this can be checked, or set "
            "attention_backend to one of " + ", ".join(tree),
        )
        return
    if page > 1 and backend not in tree:
        yield Finding(
            "spec-tree-page-size-backend",
            "error",
            (flag(TOPK), "--attention-backend", "--page-size"),
            f"{flag(TOPK)} {topk} (a tree draft) with page size {page} ({page_who}) is only "
            f"supported on {', '.join(tree)}; the attention backend is {backend} "
            f"({who}), so SGLang raises "
            + _said(ctx.release, "spec-tree-page-size", backends=str(tree), backend=repr(backend)),
            f"set {flag(TOPK)} 1 with {flag(DRAFT)} = steps + 1 (a chain draft), or set "
            "attention_backend explicitly to one of "
            + ", ".join(tree)
            + (
                " (fa3 is Hopper-only; on Blackwell use flashinfer or triton)"
                if ctx.gpu and ctx.gpu.blackwell
                else ""
            ),
        )


def trtllm_mha_topk(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx):
        return
    topk = _int(ctx, TOPK)
    backends = {
        ctx.args.get(k)
        for k in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
    }
    if topk is not None and topk > 1 and "trtllm_mha" in backends:
        yield Finding(
            "spec-trtllm-mha-topk",
            "error",
            (flag(TOPK), "--attention-backend"),
            f"the trtllm_mha attention backend supports only {flag(TOPK)} 1; SGLang raises "
            + _said(ctx.release, "spec-trtllm-mha-topk"),
            f"set {flag(TOPK)} 1 (with {flag(DRAFT)} = steps + 1) or choose another attention backend",
        )


def rejection_sampling(ctx: Context) -> Iterator[Finding]:
    if not ctx.args.get("speculative_use_rejection_sampling"):
        return
    if ctx.algorithm not in ("EAGLE", "EAGLE3", "NEXTN"):
        yield Finding(
            "spec-rejection-sampling",
            "error",
            ("--speculative-use-rejection-sampling", "--speculative-algorithm"),
            "SGLang does rejection sampling only for EAGLE / EAGLE3 / NEXTN ("
            + _said(ctx.release, "spec-rejection-algorithm", algorithm=ctx.algorithm)
            + ")",
            "drop --speculative-use-rejection-sampling or use EAGLE3",
        )
    topk = _int(ctx, TOPK)
    if topk is not None and topk != 1:
        yield Finding(
            "spec-rejection-sampling",
            "error",
            ("--speculative-use-rejection-sampling", flag(TOPK)),
            f"rejection sampling needs {flag(TOPK)} 1, not {topk} ("
            + _said(ctx.release, "spec-rejection-topk")
            + ")",
            f"set {flag(TOPK)} 1 or drop --speculative-use-rejection-sampling",
        )


def _dp_attention(ctx: Context) -> bool:
    return int(ctx.args.get("attn_dp_size") or 1) > 1 or bool(ctx.args.get("enable_dp_attention"))


def dp_attention(ctx: Context) -> Iterator[Finding]:
    mid = {"STANDALONE": "spec-standalone-dp", "NGRAM": "spec-ngram-dp"}.get(ctx.algorithm or "")
    if mid is not None and _dp_attention(ctx):
        yield Finding(
            "spec-dp-attention",
            "error",
            ("--speculative-algorithm", "--attn-dp-size"),
            f"{ctx.algorithm} speculative decoding does not support DP attention ("
            + _said(ctx.release, mid)
            + ")",
            "set attn_dp_size = 1, or use EAGLE3 with a drafter",
        )


def ngram_page_size(ctx: Context) -> Iterator[Finding]:
    if ctx.algorithm != "NGRAM":
        return
    breadth = int(ctx.args.get("speculative_ngram_max_bfs_breadth") or 10)
    page, _ = ctx.page_size()
    backend, who = ctx.attention_backend()
    if breadth > 1 and page is not None and page > 1 and backend != "flashinfer":
        yield Finding(
            "spec-ngram-page-size",
            "error",
            ("--speculative-ngram-max-bfs-breadth", "--page-size", "--attention-backend"),
            f"NGRAM with a breadth of {breadth} and page size {page} is supported only on flashinfer "
            f"(attention backend here: {backend}, {who}); SGLang raises "
            + _said(ctx.release, "spec-ngram-page-size", topk=breadth, page=page),
            'set attention_backend = "flashinfer", or page_size = 1, or speculative_ngram_max_bfs_breadth = 1',
        )


def pp_eagle3(ctx: Context) -> Iterator[Finding]:
    if int(ctx.args.get("pp_size") or 1) > 1 and ctx.algorithm in ("EAGLE3", "STANDALONE", "NGRAM"):
        yield Finding(
            "spec-pp-eagle3",
            "error",
            ("--pp-size", "--speculative-algorithm"),
            f"pipeline parallelism (--pp-size {ctx.args['pp_size']}) supports only EAGLE among the "
            f"speculative algorithms; SGLang rejects {ctx.algorithm}",
            "set pp_size = 1 (use tp_size for the 8 GPUs), or drop speculative decoding",
        )


def eagle_needs_draft(ctx: Context) -> Iterator[Finding]:
    eagle = ctx.algorithm in ctx.release.eagle_draft_algorithms
    if not eagle or ctx.args.get("speculative_draft_model_path"):
        return
    has_mtp = bool(ctx.base.mtp_layers)
    if ctx.algorithm == "EAGLE" and has_mtp:
        return
    yield Finding(
        "eagle-needs-draft-model",
        "error",
        ("--speculative-draft-model-path",),
        f"{ctx.algorithm} without --speculative-draft-model-path: "
        + (
            "the base model has no MTP head of its own, so SGLang silently loads the target as the "
            "drafter and then fails (sglang #36528)"
            if ctx.base.mtp_layers == 0 or ctx.algorithm == "EAGLE3"
            else "SGLang falls back to the target as drafter, which works only for a checkpoint with an MTP head"
        ),
        "set speculative_draft_model_path to the EAGLE-3 drafter's directory",
        stricter=True,
    )


def draft_attention_backend(ctx: Context) -> Iterator[Finding]:
    if not _eagle(ctx) or ctx.args.get("speculative_draft_attention_backend"):
        return
    if ctx.draft.attention == "mla" or ctx.base.attention != "mla":
        return
    backend, who = ctx.attention_backend()
    if backend in ("trtllm_mla", "flashmla", "cutlass_mla"):
        yield Finding(
            "draft-attention-backend",
            "error",
            ("--speculative-draft-attention-backend", "--attention-backend"),
            f"the drafter ({ctx.draft.architecture or 'a Llama-style EAGLE-3 drafter'}) has ordinary "
            f"multi-head attention but would inherit the target's {backend} backend ({who}), an "
            "MLA-only kernel; Kimi K2.6 + EAGLE3 then fails at start-up (sglang #23490)",
            'set speculative_draft_attention_backend to an MHA backend, e.g. "trtllm_mha" for top-k 1 '
            'on Blackwell, or "flashinfer"/"triton" for a tree draft',
            stricter=True,
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "spec-unknown-algorithm",
        "The speculative algorithm must be one SGLang knows.",
        "speculative/spec_info.py: ValueError (spec-unknown-algorithm)",
        unknown_algorithm,
    ),
    Rule(
        "spec-params-need-num-steps",
        "With speculative_num_steps unset, speculative_eagle_topk and speculative_num_draft_tokens must be unset too (SGLang auto-chooses all three).",
        enforced_at("spec-params-need-num-steps"),
        need_num_steps,
    ),
    Rule(
        "spec-num-steps-needs-topk",
        "speculative_num_steps set needs speculative_eagle_topk set.",
        enforced_at("spec-num-steps-needs-topk"),
        steps_need_topk,
    ),
    Rule(
        "spec-values-positive",
        "Steps, top-k and draft tokens are each at least 1.",
        "not checked by SGLang (accepted, then wrong); deploy is stricter",
        values_positive,
    ),
    Rule(
        "spec-topk1-draft-tokens",
        "With top-k 1, draft tokens are steps + 1 (warning when the profile says otherwise).",
        enforced_at("spec-topk1-draft-tokens"),
        topk1_draft_tokens,
    ),
    Rule(
        "spec-draft-tokens-range",
        "With top-k > 1, draft tokens lie between steps + 1 and the tree size 1 + topk + (steps-1)*topk^2.",
        "not checked by SGLang; deploy is stricter",
        draft_tokens_range,
    ),
    Rule(
        "spec-tree-page-size-backend",
        "A tree draft (top-k > 1) with page size > 1 needs the flashinfer, fa3 or triton attention backend; trtllm_mla (the Blackwell default for MLA models) forces page size 64.",
        enforced_at("spec-tree-page-size-backend"),
        tree_page_size_backend,
    ),
    Rule(
        "spec-trtllm-mha-topk",
        "The trtllm_mha attention backend supports top-k 1 only.",
        enforced_at("spec-trtllm-mha-topk"),
        trtllm_mha_topk,
    ),
    Rule(
        "spec-rejection-sampling",
        "Rejection sampling needs EAGLE/EAGLE3/NEXTN and top-k 1.",
        enforced_at("spec-rejection-sampling"),
        rejection_sampling,
    ),
    Rule(
        "spec-dp-attention",
        "STANDALONE and NGRAM speculative decoding do not support DP attention.",
        enforced_at("spec-dp-attention"),
        dp_attention,
    ),
    Rule(
        "spec-ngram-page-size",
        "NGRAM with breadth > 1 and page size > 1 needs flashinfer.",
        enforced_at("spec-ngram-page-size"),
        ngram_page_size,
    ),
    Rule(
        "spec-pp-eagle3",
        "Pipeline parallelism supports only EAGLE among the speculative algorithms.",
        "SGLang rejects EAGLE3 with --pp-size > 1",
        pp_eagle3,
    ),
    Rule(
        "eagle-needs-draft-model",
        "EAGLE3 (and EAGLE for a model without an MTP head) needs speculative_draft_model_path.",
        "not checked by SGLang: it silently drafts with the target (sglang #36528); deploy is stricter",
        eagle_needs_draft,
    ),
    Rule(
        "draft-attention-backend",
        "A Llama-style (MHA) EAGLE-3 drafter on an MLA target must not inherit an MLA-only attention backend.",
        "not checked by SGLang: start-up fails (sglang #23490); deploy is stricter",
        draft_attention_backend,
    ),
)
