"""Start-up rules, as data: SGLang's own launch arguments: speculative decoding and its drafter, parallelism, attention backends, LoRA.

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orchestrator import sglang
from orchestrator.diagnosis.enrich import (
    _enrich_backend,
)
from orchestrator.diagnosis.model import (
    _DRAFT_FRAMES,
    _EXC,
    _SPEC_FRAMES,
    Family,
    Rule,
    Signal,
    example,
    pat,
    said,
    under,
)
from orchestrator.diagnosis.startup.patterns import (
    _ATTENTION_IMPLS,
    _DRAFT_CLASS_WORDS,
    _GPU_GENERATIONS,
    _NEEDS_GPU_GENERATION,
    _NEEDS_GPU_GENERATION_DOC,
    _OP_SCHEMA_WORDS,
)
from orchestrator.sglang import code

__all__ = ["RULES"]


def _need_steps(detail: Mapping[str, str], flags: Mapping[str, Any]) -> tuple[str, str]:
    """spec-params-need-num-steps: the words come from preflight (rules/speculative.py).

    Imported here, not at the top: `orchestrator.preflight` (its rules, profiles) costs
    ~250-470 ms on top of the classifier's own ~500 ms, and only this fix text needs it."""
    from orchestrator.preflight.rules.speculative import need_steps_explanation

    return need_steps_explanation(dict(flags))


# Where each known release asserts (the seed's bare AssertionError), from orchestrator/sglang.
_NEED_STEPS_FRAMES = tuple(
    {
        r.frame("spec-need-steps").where: r.frame("spec-need-steps")
        for r in sglang.RELEASES.values()
    }.values()
)
_NEED_STEPS_FUNCS = "|".join(sorted({f"in {f.function}" for f in _NEED_STEPS_FRAMES}))
_NEED_STEPS_SOURCES = "|".join(
    sorted(
        {re.escape(f.source.strip()) for f in _NEED_STEPS_FRAMES}
        | {r"speculative_eagle_topk is None", r"speculative_num_draft_tokens is None"}
        | {r"^\s*assert\s*\(?\s*$"}
    )
)

# The newest release's frame first; the older releases' where it differs (the docs).
_NEED_STEPS_NEWEST = sglang.NEWEST.frame("spec-need-steps")
_NEED_STEPS_OLDER = tuple(f for f in _NEED_STEPS_FRAMES if f.where != _NEED_STEPS_NEWEST.where)
_STEPS_NEED_TOPK = sglang.NEWEST.frame("spec-steps-need-topk")
# vLLM's LoRA code that reads and maps an adapter as it loads (models.py / lora_model.py, the
# worker's manager, tensor-name parsing, PEFT config), then SGLang's (orchestrator.sglang.code)
_LORA_LOADING = (
    "vllm/lora/models.py",
    "vllm/lora/lora_model.py",
    "vllm/lora/worker_manager.py",
    "vllm/lora/utils.py",
    "vllm/lora/peft_helper.py",
    *code.LORA_LOADING,
)
# where SGLang keeps its LoRA layers, as the docs name it
_LORA_PACKAGE = code.EXAMPLE_FILES["lora-layers"].removeprefix("sglang/").rpartition("/")[0] + "/"


def _short(file: str) -> str:
    """A file of SGLang's as its docs name it: under `srt/`, without that prefix."""
    return file.removeprefix("srt/")


RULES: tuple[Rule, ...] = (
    Rule(
        id="spec-params-need-num-steps",
        title="speculative top-k / draft tokens set without --speculative-num-steps",
        summary="speculative_num_steps is unset while top-k or draft tokens are set (bare AssertionError in SGLang's EAGLE argument handling)",
        fix="set --speculative-num-steps (and keep the three consistent) or drop both",
        doc=(
            f"SGLang {sglang.NEWEST.version} auto-chooses (num_steps, eagle_topk, num_draft_tokens) when "
            "--speculative-num-steps is unset, and first asserts that the other two are unset "
            f"too ({_short(_NEED_STEPS_NEWEST.file)}, `{_NEED_STEPS_NEWEST.function}`; "
            + "; ".join(f"`{_short(f.file)} {f.function}`" for f in _NEED_STEPS_OLDER)
            + " in older releases). The assertion has no message: "
            "the log shows a bare `AssertionError` under that frame."
        ),
        patterns=(
            pat(
                _EXC + r"AssertionError\s*$",
                context=(_NEED_STEPS_FUNCS, _NEED_STEPS_SOURCES),
            ),
        ),
        preflight_rule="spec-params-need-num-steps",
        explain=_need_steps,
        examples=tuple(
            f'  File ".../sglang/{f.file}", line {f.line}, in {f.function}\n    {f.source}\nAssertionError'
            for f in _NEED_STEPS_FRAMES
        ),
    ),
    Rule(
        id="spec-config-invalid",
        families=(
            # raised while the launch arguments are resolved (a per-model hook refusing an
            # algorithm, a config class's check), naming speculative decoding
            Family(
                ("AssertionError", "ValueError", "TypeError", "NotImplementedError"),
                words=("speculative", "Speculative", "EAGLE", "NEXTN", "draft"),
                frames=code.SPEC_ARGS_PACKAGES,
                both=True,
            ),
            # an argument check naming a speculative argument or algorithm and refusing it,
            # wherever it was raised (a pasted fragment without frames, another engine's config
            # class, pydantic's ValidationError of vLLM's SpeculativeConfig): "--speculative-
            # draft-model-path is required for EAGLE3", "EAGLE3 is not supported for model
            # architecture X"; a drafter's shapes are drafter-mismatch's
            Family(
                (
                    "AssertionError",
                    "ValueError",
                    "TypeError",
                    "NotImplementedError",
                    "ValidationError",
                ),
                words=(
                    "speculative_",
                    "--speculative-",
                    "speculative algorithm",
                    "speculative decoding",
                    "Speculative decoding",
                    "EAGLE",
                    "NEXTN",
                    # the drafting step itself refused (TensorRT-LLM: "Drafting is not
                    # supported for selected executor loop")
                    "Drafting ",
                ),
                and_words=(
                    "required",
                    "must ",
                    "not supported",
                    "unsupported",
                    "only support",
                    "nvalid",
                    "cannot",
                    "should be",
                    "not allowed",
                ),
                unless=("LoRA", "lora", "hidden", "vocab", "shape", "size mismatch"),
            ),
            # a speculative setting that does not fit another setting, in an engine's words
            # that ask to change one of them (vLLM's "Can't determine cudagraph shapes that are
            # both a multiple of 3 (num_speculative_tokens + 1) … please adjust
            # num_speculative_tokens or disable sequence parallelism"), any wrapper type
            Family(
                (
                    "RuntimeError",
                    "AssertionError",
                    "ValueError",
                    "TypeError",
                    "NotImplementedError",
                ),
                words=(
                    "num_speculative_tokens",
                    "speculative_config",
                    "--speculative-",
                    "spec-decode",
                    "spec_decode",
                ),
                and_words=(
                    "adjust",
                    "disable",
                    "multiple of",
                    "incompatible",
                    "not compatible",
                    "Can't",
                    "can't",
                ),
                unless=("LoRA", "lora", "vocab", "size mismatch", "hidden_size"),
            ),
        ),
        title="SGLang rejected the speculative-decoding settings",
        summary="SGLang rejected the speculative-decoding settings: {msg}",
        fix="change the speculative settings named in the message; `deploy validate` runs the same checks before a start",
        doc=(
            "A ValueError / TypeError / NotImplementedError raised while SGLang resolves the "
            "speculative arguments (" + ", ".join(_short(f) for f in code.SPEC_ARGS_FILES) + ")."
        ),
        patterns=(
            # vLLM's speculative config check: a draft model without its token count or the
            # other way round
            pat(
                r"(?P<msg>.*?\bExpected both speculative_model and num_speculative_tokens to be provided\b.*)",
            ),
            *said(
                "spec-steps-need-topk",
                context=_SPEC_FRAMES,
                summary="--speculative-num-steps is set but --speculative-eagle-topk is not: SGLang compares the unset top-k with an int ({exc}: {msg})",
                fix="set --speculative-eagle-topk (and --speculative-num-draft-tokens) together with --speculative-num-steps, or set none of the three and let SGLang choose",
            ),
            *said(
                "spec-tree-page-size",
                summary="speculative top-k > 1 needs a tree-capable attention backend with paged KV; the attention backend was {backend}",
                fix="use --speculative-eagle-topk 1 (on B200 the default trtllm_mla backend forces page size 64), or set --attention-backend to one of {backends}",
            ),
            *said(
                "spec-unknown-algorithm",
                summary="unknown speculative algorithm {name!r}",
                fix="set --speculative-algorithm to one SGLang knows (EAGLE3 for an EAGLE-3 drafter; EAGLE, NEXTN, STANDALONE, NGRAM, ...)",
            ),
            *said(
                "spec-trtllm-mha-topk",
                fix="use --speculative-eagle-topk 1 with the trtllm_mha (draft) attention backend, or pick another draft attention backend",
            ),
            *said(
                "spec-rejection-algorithm",
                fix="rejection sampling needs EAGLE/EAGLE3 with --speculative-eagle-topk 1 and default accept thresholds: change those or drop --speculative-use-rejection-sampling",
            ),
            *said(
                "spec-rejection-topk",
                fix="rejection sampling needs EAGLE/EAGLE3 with --speculative-eagle-topk 1 and default accept thresholds: change those or drop --speculative-use-rejection-sampling",
            ),
            pat(
                _EXC
                + r"(?P<exc>AssertionError|ValueError): (?P<msg>.*(?:requires|must be|expects?) speculative_(?:num_draft_tokens|num_steps|eagle_topk).*)",
                summary="SGLang refused the speculative settings it resolved: {msg}",
                fix="set speculative_num_steps, speculative_eagle_topk and speculative_num_draft_tokens explicitly so that they satisfy the check quoted (SGLang's own choice for this model does not)",
            ),
            pat(
                _EXC
                + r"(?P<exc>RuntimeError): (?P<msg>Sizes of tensors must match except in dimension \d+\..*)",
                context=(r"_eagle3?\.py|eagle_worker|/speculative/", r"in forward|in draft"),
                summary="the EAGLE drafter's forward got tensors of mismatched sizes ({msg}): with top-k > 1 under SGLang's spec-v2 / overlap scheduling this is a known failure (sglang #13352); a drafter of another hidden size fails the same way",
                fix="run the drafter with speculative_eagle_topk = 1 (and num_draft_tokens = steps + 1), or without spec v2 (unset SGLANG_ENABLE_SPEC_V2, or disable_overlap_schedule = true); if it persists with top-k 1, check the drafter's hidden size against the target's",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError|TypeError|NotImplementedError|AssertionError): (?P<msg>.+)$",
                context=_SPEC_FRAMES,
            ),
            # an engine refusing speculative decoding with another feature or setting, in any
            # exception or log line ("Speculative decoding is not supported with Ray.",
            # "pipeline parallelism is not supported with speculative decoding", "X does not
            # support speculative decoding"); LoRA's refusal is lora-unsupported's
            pat(
                r"\A(?!.*(?:LoRA|lora|LORA))(?P<msg>.*(?:\b[Ss]peculative decoding (?:is |are )?(?:not|n't) (?:yet )?(?:supported|compatible|available|implemented)\b|\b(?:not|n't) (?:yet )?(?:supported|compatible|implemented|allowed) (?:with|for|when using|in|together with) (?:speculative decoding|spec(?:ulative)? decode)\b|\b(?:does not|doesn't|cannot) (?:yet )?support speculative decoding\b|\bincompatible with speculative decoding\b|\b[Ss]peculative decoding (?:only|currently) supports?\b).*)",
                summary="the engine refused speculative decoding with these settings: {msg}",
                fix="drop the setting the message names (or speculative decoding): `deploy validate` checks SGLang's own combinations before a start",
                # (vLLM logs "Async output processing is not supported with speculative
                # decoding currently." at WARNING and goes on without it)
                errors_only=True,
            ),
        ),
        preflight_rule=None,
        defaults={
            "msg": "?",
            "exc": "ValueError",
            "backend": "?",
            "name": "?",
            "backends": "flashinfer, fa3, triton",
        },
        examples=(
            # not from the corpus: another engine's check that a speculative setting and a
            # parallel setting do not fit (a plausible wording of the same family)
            "ValueError: num_speculative_tokens=4 is not compatible with pipeline parallelism; disable speculative decoding or set pipeline_parallel_size=1",
            under(
                f".../sglang/{_STEPS_NEED_TOPK.file}",
                _STEPS_NEED_TOPK.function,
                example("spec-steps-need-topk"),
            ),
            example(
                "spec-tree-page-size",
                backends="('flashinfer', 'fa3', 'triton')",
                backend="'trtllm_mla'",
            ),
            example("spec-unknown-algorithm", name="EAGLE4"),
            # the family, in words no pattern lists: a model's argument hook refusing an
            # algorithm, vLLM's speculative config check
            under(
                f".../{code.EXAMPLE_FILES['model-hook']}",
                "apply_model_defaults",
                "AssertionError: speculative_algorithm NGRAM cannot be used with this model",
            ),
            under(
                ".../vllm/config/speculative.py",
                "__post_init__",
                "ValueError: num_speculative_tokens must be divisible by n_predict for this draft model",
            ),
            example("spec-trtllm-mha-topk"),
            example("spec-rejection-topk"),
        ),
    ),
    Rule(
        id="drafter-mismatch",
        families=(
            Family(
                ("RuntimeError", "AssertionError", "ValueError", "KeyError", "IndexError"),
                words=("shape", "size mismatch", "must match", "hidden", "vocab"),
                frames=code.DRAFT_PACKAGES,
                both=True,
            ),
            # the drafter's checkpoint refused while its weights are copied in, under the draft
            # worker (a weight name the model class lacks, "KeyError: 'layers.0.self_attn.
            # qkv_proj.weight'"; the loader's weight-shape-mismatch assertion): a drafter
            # written for another model class or base
            Family(
                ("KeyError", "AssertionError", "RuntimeError", "ValueError"),
                frames=code.DRAFT_PACKAGES,
                site_functions=code.WEIGHT_LOADERS,
                summary="the drafter's weights do not fit the model class SGLang loads it as: {exc}: {msg}",
            ),
            # torch's state-dict check naming the draft model's class ("Error(s) in loading
            # state_dict for LlamaForCausalLMEagle3: size mismatch for fc.weight ..."), wherever
            # it was raised
            Family(("RuntimeError",), words=("size mismatch",), and_words=_DRAFT_CLASS_WORDS),
            # an engine's assertion that its models' vocabularies agree (vLLM's speculative
            # worker: "assert all(vocab_sizes[0] == vocab_size for vocab_size in
            # vocab_sizes)"): the models it compares are the target and its drafter
            Family(("AssertionError",), words=("vocab_sizes",)),
        ),
        title="the EAGLE-3 drafter does not fit the target model",
        summary="the draft model does not fit the target: {msg}",
        fix=(
            "use an EAGLE-3 drafter trained for this base model: its `target_hidden_size` (else "
            "`hidden_size`) must equal the base's (7168 for Kimi K2.x), same vocabulary; an MLA "
            "drafter (Eagle3DeepseekV2ForCausalLM) needs 1 layer and q_lora_rank; check "
            "--speculative-draft-model-path"
        ),
        doc=(
            "SGLang does not compare the drafter's and the target's hidden size or vocabulary "
            "before loading: a mismatch surfaces as a shape assertion while the draft worker "
            "loads weights (model_loader/weight_utils.py `default_weight_loader`, which names "
            "both shapes; layers/linear.py: `param_data.shape == "
            "loaded_weight.shape`), a state-dict size mismatch, a matmul shape error in the "
            "first draft forward, or a config check in models/kimi_k25_eagle3.py."
        ),
        patterns=(
            *said("weight-shape-mismatch", context=_DRAFT_FRAMES),
            pat(
                _EXC + r"AssertionError: (?P<msg>.*(?:param_data\.shape|loaded_weight\.shape).*)",
                context=_DRAFT_FRAMES,
            ),
            pat(
                _EXC
                + r"RuntimeError: (?P<msg>.*(?:size mismatch for|Error\(s\) in loading state_dict|shapes cannot be multiplied).*)",
                context=_DRAFT_FRAMES,
            ),
            pat(
                _EXC + r"KeyError: (?P<msg>'(?P<param>midlayer\.[\w.]+)')",
                summary="the EAGLE-3 drafter's weights ({param}) were loaded by a model class that is not an EAGLE-3 draft model: its config.json names the wrong architecture",
                fix="set the drafter's config.json architectures to the EAGLE-3 class SGLang expects (LlamaForCausalLMEagle3, or Eagle3DeepseekV2ForCausalLM for an MLA drafter), or use a drafter converted for SGLang; deploy validate checks drafter-architecture",
                preflight="drafter-architecture",
            ),
            pat(
                _EXC
                + r"(?P<exc>AssertionError|RuntimeError|ValueError): (?P<msg>Expected logits to have shape \(\*, (?P<want>\d+)\), but got torch\.Size\(\[\d+, (?P<got>\d+)\]\))",
                summary="the drafter's logits have {got} columns but the target's vocabulary has {want}: the draft vocabulary's mapping to the target (d2t) is missing or the drafter was trained for another model",
                fix="use an EAGLE-3 drafter trained for this target whose checkpoint carries its d2t/t2d vocabulary map (or a full-vocabulary drafter), and an SGLang release that loads it",
            ),
            pat(
                _EXC
                + r"(?P<exc>RuntimeError|IndexError): (?P<msg>(?:The size of tensor a \((?P<got>\d+)\) must match the size of tensor b \((?P<want>\d+)\)|index -?\d+ is out of bounds for dimension \d+ with size \d+).*)",
                context=_DRAFT_FRAMES + r"|_mtp\.py",
            ),
            *said("eagle3-mla-q-lora"),
            *said("eagle3-one-layer"),
            *said("arch-unsupported", context=_DRAFT_FRAMES, preflight="drafter-architecture"),
            *said("arch-not-inspected", context=_DRAFT_FRAMES, preflight="drafter-architecture"),
        ),
        preflight_rule="drafter-hidden-size",
        defaults={"msg": "?"},
        examples=(
            f'  File ".../{code.EXAMPLE_FILES["llama-eagle3"]}", line 373, in load_weights\n'
            + example(
                "weight-shape-mismatch",
                got="torch.Size([6144, 8192])",
                want="torch.Size([6144, 14336])",
            ),
            example("eagle3-mla-q-lora"),
        ),
    ),
    Rule(
        id="tp-size-indivisible",
        families=(
            # a dimension that a parallel size must divide (not any "divisible by": a block or
            # page size is another check, and so is a model config's own "hidden_size must be
            # divisible by num_heads", which transformers checks in dozens of model classes
            # whatever the TP size)
            Family(
                ("AssertionError", "ValueError"),
                words=("divisible by", "must divide"),
                and_words=(
                    "parallel",
                    "tp_size",
                    "tp size",
                    "TP size",
                    "world_size",
                    "world size",
                    "num_shards",
                    # a weight's per-GPU shard that a quantisation block must divide (FP8
                    # block_n 128 against output_partition_size = 576 at some TP sizes)
                    "partition",
                    "weight quantization block",
                    # SGLang's per-shard sizes: "hidden_size 7168 not divisible by attn tp 6"
                    "attn tp",
                    "moe_tp_size",
                ),
            ),
            # a TP shard of a block-quantised MoE weight, in SGLang's words ("please make sure
            # (moe_intermediate_size=1536 / moe_tp_size=8) % weight_block_size_n=128 == 0")
            Family(
                ("ValueError", "AssertionError"),
                words=("weight_block_size",),
                and_words=("tp_size", "tp size"),
                summary="a TP shard of a block-quantised MoE weight is not a whole number of blocks: {exc}: {msg}",
                fix="each GPU's share of the MoE weight must be a multiple of the checkpoint's quantisation block ({msg}): choose a --tp-size (or --ep-size, which takes the experts off tensor parallelism) for which it is",
            ),
            # a bare assertion whose statement is the divisibility check itself (vLLM's
            # `assert self.total_num_kv_heads % tp_size == 0`): the traceback's source line is
            # its only message
            Family(
                ("AssertionError",),
                shape=r"%\s{0,2}(?:self\.)?\w{0,30}(?:tp_size|tp_world_size|world_size|parallel_size|num_shards)\s{0,2}==\s{0,2}0\b",
                shape_doc="is a bare `assert <dimension> % <parallel size> == 0`",
                summary="a model dimension is not divisible by the parallel size: {msg}",
            ),
        ),
        title="tp_size does not divide the model's heads (or another dimension)",
        summary="a model dimension is not divisible by the parallel size: {msg}",
        fix="tp_size must divide the model's attention heads and KV heads ({numerator} here is not divisible by {denominator}): use a tp_size among the divisors of {numerator} (and make the EAGLE-3 drafter's heads divisible too, or use a drafter SGLang replicates)",
        doc=(
            "Tensor parallelism splits attention heads (and other dimensions) evenly across the "
            'GPUs: SGLang\'s `ensure_divisibility` asserts "X is not divisible by Y" when '
            "tp_size does not divide them, e.g. TP=6 on a 16-head vision tower or a drafter."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>AssertionError|ValueError): (?P<msg>(?P<numerator>\d+) is not divisible by (?P<denominator>\d+).*)",
            ),
            # a head count that the parallel size must divide, in any engine's words and any
            # wrapper (pydantic's "Value error, ...", a numbered list, a launcher's log line):
            # vLLM/SGLang "Total number of attention heads (40) must be divisible by tensor
            # parallel size (6)", TGI "`num_heads` must be divisible by `num_shards` (got
            # `num_heads`: 40 and `num_shards`: 6", Megatron "num_attention_heads must be
            # divisible by tensor_model_parallel_size", KV heads and hidden layers alike
            pat(
                r"(?P<msg>(?:[Tt]otal )?(?:[Nn]umber of )?(?:attention |key-value |KV |hidden )?`?\w{0,40}(?:heads|groups|layers)`? \(?(?P<numerator>\d+)?\)? ?must be divisible by `?[\w ]{0,40}?(?:parallel[ _]size|tp[ _]size|world[ _]size|num_shards)`? ?\(?(?P<denominator>\d+)?\)?.*)",
            ),
            # a quantized layer's own words blaming the tensor-parallel size (vLLM's AWQ/GPTQ
            # linear methods: "The input size is not aligned with the quantized weight shape.
            # This can be caused by too large tensor parallel size.")
            pat(
                r"(?P<msg>.*?\b[Tt]his (?:can|may|might) be caused by (?:a )?too large tensor[ _]parallel[ _]size\b.*)",
            ),
        ),
        preflight_rule="tp-divides-heads",
        defaults={"msg": "?", "numerator": "the head count", "denominator": "tp_size"},
        examples=(
            "AssertionError: 16 is not divisible by 6",
            # text-generation-inference's sharded layers (not from the corpus)
            "ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: 40 and `num_shards`: 6",
            # Megatron-style argument check, wrapped in a launcher's log line
            "[rank0]: ERROR num_key_value_heads (8) must be divisible by tensor_model_parallel_size (3)",
            # the family: a TP shard of a block-quantised weight (vLLM's words)
            "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128.",
        ),
    ),
    Rule(
        id="attention-backend-unsupported",
        families=(
            # an attention backend refused on this GPU generation by the code that checks it,
            # in any wording ("--dsv4-attn-backend trtllm requires an SM100/SM103 (Blackwell)
            # GPU", or raised in an attention backend's own code): the backend, the requirement
            # and the generation it names
            Family(
                ("ValueError", "AssertionError", "NotImplementedError", "RuntimeError"),
                words=(
                    "attention backend",
                    "attention_backend",
                    "attention-backend",
                    "attn-backend",
                    "attn_backend",
                    "MLA backend",
                    "MHA backend",
                ),
                frames=code.ATTENTION_PACKAGES,
                shape=_NEEDS_GPU_GENERATION,
                shape_doc=_NEEDS_GPU_GENERATION_DOC,
            ),
            Family(
                ("ValueError", "AssertionError", "NotImplementedError", "RuntimeError"),
                words=("backend", "head_dim", "head size", "head_size"),
                frames=code.ATTENTION_PACKAGES,
                both=True,
                # (a call refused by a compiled op's signature is another release of the
                # package, kernel-package-mismatch's, whatever the op's name says)
                unless=_OP_SCHEMA_WORDS,
            ),
            # a feature only one attention kernel release implements, refused on the one this
            # GPU runs ("Sinks are only supported in FlashAttention 3.": gpt-oss's attention
            # sinks on a GPU without FA3): the backend, not the model, lacks it
            Family(
                ("AssertionError", "ValueError", "NotImplementedError", "RuntimeError"),
                words=(
                    "only supported in FlashAttention",
                    "only supported with FlashAttention",
                    "only supported by FlashAttention",
                    "requires FlashAttention",
                ),
            ),
            # an attention kernel's own assertion on the head dimension (a bare `assert Lq in
            # {16, 32, 64, 128, 256}`, read off the assert statement): the model's head size is
            # not one the kernel was written for
            Family(
                ("AssertionError",),
                words=("Lq", "Lk", "Lv", "head_dim", "head_size", "HEAD_DIM", "BLOCK_DMODEL"),
                site_frames=code.ATTENTION_KERNEL_FILES,
                summary="the attention kernel does not support this model's head size: {exc}: {msg}",
            ),
            # sgl-kernel's wrapper of an attention op asserting the shape its compiled kernel
            # takes ("H must be 128, but got 16": cutlass MLA's heads per GPU at TP 8): this
            # model at this parallel size is not one the backend's kernel was written for
            Family(
                ("AssertionError",),
                site_frames=code.ATTENTION_OP_WRAPPERS,
                summary="the attention backend's kernel does not take this model's shape at this parallel size: {exc}: {msg}",
                fix="the attention kernel refused the shape it was given ({msg}): choose another --attention-backend (or another --tp-size, which changes the heads per GPU)",
            ),
            Family(
                ("RuntimeError", "ValueError"),
                words=code.ATTENTION_KERNEL_SOURCES,
                and_words=("Unsupported", "unsupported", "not supported", "failed to dispatch"),
                shape=r"\bError in function '\w{1,120}' at [^\n]{1,300}?\.(?:cuh|cu|h|hpp|cc|cpp):\d{1,6}:",
                shape_doc="a kernel's own check, raised with its function and source file",
                summary="the attention kernel refused this shape or GPU: {exc}: {msg}",
            ),
            # a model or engine refusing to run without an attention implementation it needs
            # ("Sharded Llama requires Flash Attention enabled models", "FlashInfer is required
            # for ...", "xformers is not available for ..."): the attention backend, in any
            # exception; a GPU generation refused by the kernel itself ("FlashAttention only
            # supports Ampere GPUs or newer") is kernel-unsupported-arch's
            Family(
                ("NotImplementedError", "ValueError", "RuntimeError", "AssertionError"),
                words=_ATTENTION_IMPLS,
                and_words=(
                    "requires",
                    "required",
                    "needs",
                    "must be enabled",
                    "not supported",
                    "unsupported",
                    "is not available",
                    "not compiled",
                ),
                unless=_GPU_GENERATIONS,
            ),
        ),
        # a CUDA error raised in an attention kernel's own source, refusing its launch: a
        # kernel built for another GPU generation (FA3 is Hopper-only) or shape; the kernel's
        # own dispatch check, raised with its source file ("Error in function
        # 'BatchPrefillWithRaggedKVCacheDispatched' at …/flashinfer/…/prefill.cuh:2215:
        # Unsupported max_mma_kv: 0")
        signals=(
            Signal(
                ("cuda",),
                words=code.ATTENTION_KERNEL_SOURCES,
                and_words=("invalid argument", "invalid device function", "not supported"),
            ),
        ),
        title="the attention backend is not available on this GPU or for this model",
        summary="the attention backend was refused: {msg}",
        fix="{fixhint}",
        doc=(
            "SGLang (or the engine it wraps) checks the attention backend against the GPU "
            "generation and the model: a backend built for another generation (trtllm_mla off "
            "Blackwell, fa3 off Hopper), or one that lacks the model's head size or layer type "
            "on a new GPU (B300, RTX 50xx), is refused at start-up."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>\w+Error): (?P<msg>Only (?P<allowed>\{[^}]*\}|\[[^\]]*\]|\([^)]*\)) backends? (?:are|is) supported on .*)",
            ),
            # FlashInfer's prefill kernels that have no instance for this head size, GQA group
            # size or dtype ("BatchPrefillWithPagedKVCache failed to dispatch with dtype Half",
            # "... failed to dispatch group_size 5"): the backend cannot serve this model
            pat(
                r"(?P<msg>.*?\bBatch(?:Prefill|Decode)With\w{0,60}? failed to dispatch\b.*|.*?\bfailed to dispatch (?:group_size|head_dim|group size|head dim) \d+.*)",
                fixhint="FlashInfer has no kernel for this model's head size, GQA group size or dtype: choose another attention backend (--attention-backend triton or fa3) or a FlashInfer release built with it",
            ),
            *said("trtllm-mla-blackwell", preflight="trtllm-mla-needs-blackwell"),
            pat(
                _EXC
                + r"(?P<exc>\w+Error): (?P<msg>(?=.*(?:[Aa]ttention|ATTN|attn|MLA|mla|MHA|mha|[Ff]lash[Ii]nfer|FlashAttention|flash_attn|fa3|fa4|FA3|FA4|trtllm|TRTLLM))"
                + r".*\b(?:backend|Backend)\b.*(?:is only supported on|only supports|requires SM|is not supported on|not valid for this configuration|is not supported for).*)",
            ),
            pat(
                r"(?P<msg>.*(?:Unsupported head_dim: \d+|head_size not supported|Head size \d+ is not supported|Unsupported head size).*)",
            ),
            # a CUDA/HIP error raised in an attention kernel's own source refusing its launch
            # (the signal below, as a pattern: it must outrank kernel-unsupported-arch's
            # generic "invalid device function" on the same line); the first error is kept
            # (atomic group) so that a line of repeated errors stays linear
            pat(
                r"\A(?P<msg>(?>.*?(?:CUDA|HIP) error: (?:invalid argument|invalid device function|operation not supported))"
                + r"(?=.*(?:"
                + "|".join(re.escape(k) for k in code.ATTENTION_KERNEL_SOURCES)
                + r")).*)",
            ),
            # an attention kernel's own check of the head dimension against the sizes it was
            # written for (SGLang's Triton kernels "assert Lq in {16, 32, 64, 128, 256, 576}",
            # flash-attn's "only supports head dimension at most 256", "head_dim must be one of")
            pat(
                _EXC
                + r"(?P<exc>AssertionError|ValueError|RuntimeError|NotImplementedError): (?P<msg>(?:assert )?\(?(?:Lq|Lk|Lv|head_?dim|head_size|qk_head_dim|v_head_dim|HEAD_DIM|BLOCK_DMODEL)\)? (?:not )?in [\[{(].*)",
            ),
            pat(
                r"(?P<msg>.*(?:\b(?:[Hh]ead dimension|head_?dim|[Hh]ead size|head_size)s?\b.{0,80}?\b(?:only supports?|is not supported|are not supported|not supported|must be one of|should be one of|must be in|must be <=|must be at most|must be a multiple of)\b|\b(?:only supports?|does not support|doesn't support|not supported for) (?:a |the )?(?:[Hh]ead dimension|head_?dim|[Hh]ead size|head_size)s?\b).*)",
            ),
            # the engine's backend selector found none that fits this GPU and model (vLLM's
            # "No valid attention backend found for cuda… Reasons: {…}", any casing)
            pat(
                r"(?P<msg>.*\b(?:[Nn]o (?:valid|available|suitable|supported|compatible)|[Cc]ould not find an?|[Cc]annot find an?|[Ff]ailed to find an?|[Uu]nable to find an?) (?:[\w-]+ )?[Aa]ttention [Bb]ackend\b.*)",
            ),
        ),
        preflight_rule="trtllm-mla-needs-blackwell",
        defaults={"msg": "?", "allowed": ""},
        enrich=_enrich_backend,
        examples=(
            "AssertionError: Only {'trtllm_mha', 'triton', 'fa4'} backends are supported on Blackwell GPUs for hybrid GDN models. Got attention_backend=flashinfer.",
            example("trtllm-mla-blackwell"),
            # not from the corpus: the selector finding no backend, in another wording
            "RuntimeError: Could not find a compatible attention backend for head_size=576 on this GPU",
        ),
    ),
    Rule(
        id="lora-unsupported",
        families=(
            # an exception that names LoRA AND what it cannot do (support, target, apply)
            Family(
                ("ValueError", "NotImplementedError", "AssertionError", "RuntimeError"),
                words=("LoRA", "lora", "Lora"),
                and_words=(
                    "not support",
                    "n't support",
                    "unsupported",
                    "Unsupported",
                    "only supports",
                    "cannot be applied",
                    "is not compatible",
                ),
            ),
            # an adapter whose weights name modules the engine's LoRA code does not map (a new
            # architecture's projections, a layer without one of q/k/v): the adapter's keys in
            # the message, and what could not be done with them
            Family(
                ("ValueError", "RuntimeError", "KeyError", "AssertionError"),
                words=(".lora_A", ".lora_B", "lora_embedding", "LoRA adapter"),
                and_words=(
                    "Cannot find target module",
                    "target module",
                    "Failed to load LoRA",
                    "Unexpected key",
                    "lora_A.weight'",
                    "lora_B.weight'",
                ),
                unless=("No such file", "does not exist", "404", "not a valid"),
            ),
            # what the engine's own LoRA loading code raises as it reads and maps an adapter
            # (vLLM's "assert parts[-2] == 'lora_A'" on a tensor name it cannot parse, its
            # "Loading lora <path> failed"): the adapter does not fit what that code supports;
            # not the LoRA layers that run while serving, nor a GPU's error raised through them
            Family(
                ("AssertionError", "RuntimeError", "ValueError", "KeyError", "NotImplementedError"),
                site_frames=_LORA_LOADING,
                unless=(
                    "No such file",
                    "does not exist",
                    "404",
                    "not a valid",
                    "out of memory",
                    "CUDA",
                    "cuda",
                    "HIP",
                    "NCCL",
                ),
            ),
        ),
        title="the LoRA setup does not fit this model",
        summary="SGLang's LoRA support failed on this model: {msg}",
        fix="this SGLang release cannot apply LoRA to these layers (MoE experts, for one): drop lora_paths / enable_lora, target other modules (lora_target_modules), or upgrade SGLang",
        doc=(
            "With LoRA adapters SGLang wraps the model's layers with LoRA layers at start-up; "
            "for layer types it does not support (fused MoE experts in some releases) this fails "
            f"inside {_LORA_PACKAGE} with an AttributeError or NotImplementedError."
        ),
        patterns=(
            # a target module SGLang's LoRA code has no shapes for, in any wrapper's words
            *said(
                "lora-module-unsupported",
                anywhere=True,
                summary="SGLang's LoRA code does not know the target module {module}: {msg}",
                fix="target only modules SGLang's LoRA support knows for this model (--lora-target-modules: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, qkv_proj, gate_up_proj, embed_tokens, lm_head), not {module}; a framework's 'all-linear' must be expanded to those names",
            ),
            pat(
                _EXC
                + r"(?P<exc>AttributeError|NotImplementedError|ValueError|KeyError): (?P<msg>.+)",
                # a frame in a lora/ package (not a virtualenv that happens to be named lora)
                context=r'File "[^"]*/lora/[\w/]*\.py"|lora_manager|get_lora_layer',
            ),
            # an adapter of a higher rank than the server was started for: vLLM's PEFT check
            # ("LoRA rank 64 is greater than max_lora_rank 16.") and SGLang's memory pool
            # ("LoRA adapter sql with rank 64 is incompatible with the current LoRA memory pool
            # configuration"), the numbers taken for the fix
            pat(
                r"(?P<msg>LoRA rank (?P<rank>\d+) is (?:greater|larger) than max_lora_rank (?P<max>\d+).*)",
                summary="the LoRA adapter's rank is above the server's maximum: {msg}",
                fix="the adapter's rank ({rank}) is above the rank the server reserved for LoRA ({max}): start it with --max-lora-rank {rank} or more, or load an adapter of rank {max} or less",
            ),
            pat(
                r"(?P<msg>LoRA adapter (?P<adapter>\S+) with rank (?P<rank>\d+) is incompatible with the current LoRA memory pool.*)",
                summary="the LoRA adapter does not fit the LoRA memory pool the server reserved: {msg}",
                fix="adapter {adapter} has rank {rank}: start the server with --max-lora-rank {rank} or more, and with every module the adapter targets in --lora-target-modules (or `all`)",
            ),
            # torch's load_state_dict words for a tensor of another shape, where the tensor is a
            # LoRA adapter's (any loader: PEFT, SGLang, vLLM): the adapter was made for another
            # base model, another rank / target layout, or by another PEFT release
            pat(
                r"(?P<msg>size mismatch for (?P<param>[\w.]{0,300}?\.lora_(?:A|B|embedding_A|embedding_B)\b[\w.]{0,200}): copying a param with shape.*)",
                summary="the LoRA adapter's weights do not fit this model: {msg}",
                fix=(
                    "the adapter was made for another base model, another rank or target-module "
                    "layout, or saved by another PEFT release: load it on the base model (and "
                    "PEFT release) it was trained with, or retrain / re-save it for this one"
                ),
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            under(
                f".../{code.EXAMPLE_FILES['lora-layers']}",
                "__init__",
                "AttributeError: 'FusedMoE' object has no attribute 'w13_weight'",
            ),
            # the family: LoRA and what it cannot do, in another engine's words
            "ValueError: Gemma3ForConditionalGeneration does not support LoRA yet.",
            # not from the corpus: an adapter for modules the LoRA code does not map
            "ValueError: Cannot find target module name for base_model.model.model.layers.0.mlp.shared_expert.gate_proj.lora_A.weight in {'qkv_proj', 'o_proj'}",
            "NotImplementedError: LoRA adapters with modules_to_save (embed_tokens) aren't supported: the adapter's vocabulary differs from the base model's",
            # an adapter above the server's rank (vLLM's peft_helper.py wording)
            "ValueError: LoRA rank 64 is greater than max_lora_rank 16.",
            # not from the corpus: torch's load_state_dict wording (nn/modules/module.py) for an
            # adapter of another rank
            "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:\n"
            "\tsize mismatch for base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight: copying a param with shape torch.Size([64, 4096]) from checkpoint, the shape in current model is torch.Size([8, 4096]).",
        ),
    ),
)
