"""The start-up rules, as data: what SGLang / PyTorch / NCCL / CUDA / systemd print
when a start fails, which category that is, and the fix.

Read off sglang 0.5.23 (arg_groups/speculative_hook.py, arg_groups/overrides.py,
entrypoints/engine.py, managers/scheduler.py, model_executor/pool_configurator.py,
model_executor/runner_backend_utils, model_loader/weight_utils.py, layers/linear.py,
models/kimi_k25_eagle3.py, utils/common.py, utils/network.py) and from what PyTorch, NCCL,
huggingface_hub, uvicorn, the kernel and systemd print.

Roles are documented in `orchestrator.diagnosis.model`; how the cause is chosen in
`orchestrator.diagnosis.engine`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orchestrator import sglang
from orchestrator.diagnosis.enrich import (
    _enrich_arch,
    _enrich_backend,
    _enrich_driver,
    _enrich_ext,
    _enrich_hf_auth,
    _enrich_import,
    _enrich_jit,
    _enrich_rendezvous,
    _enrich_warmup,
)
from orchestrator.diagnosis.model import (
    _DRAFT_FRAMES,
    _EXC,
    _SPEC_FRAMES,
    FALLBACK,
    HINT,
    Family,
    Rule,
    Signal,
    example,
    pat,
    said,
    under,
)
from orchestrator.sglang import code

__all__ = ["STARTUP_RULES"]

# EADDRINUSE as libraries word it: errno 98 (Linux), its name, the strerror texts (zmq's is
# the short "Address in use")
# EADDRINUSE in every errno table: Linux 98, macOS/BSD 48 (whose text is "Address already in
# use" too), Windows' WSAEADDRINUSE 10048 and its own sentence
_ADDR_IN_USE = (
    "Errno 98",
    "errno: 98",
    "errno 98",
    "ddress already in use",
    "Address in use",
    "EADDRINUSE",
    "Errno 10048",
    "errno: 10048",
    "WinError 10048",
    "WSAEADDRINUSE",
    "only one usage of each socket address",
    "Only one usage of each socket address",
)
# an accelerator runtime's own status for "out of device memory" (CUDA, HIP, cuBLAS/hipBLAS,
# Intel's Unified Runtime, Ascend's ACL), whatever exception or log line carries it
_DEVICE_OOM_CODES = (
    "cudaErrorMemoryAllocation",
    "hipErrorOutOfMemory",
    "hipErrorMemoryAllocation",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "HIPBLAS_STATUS_ALLOC_FAILED",
    "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
    "ACL_ERROR_RT_MEMORY_ALLOCATION",
    "CUDA_ERROR_OUT_OF_MEMORY",
)
# this host's own addresses as a URL or requests' host= names them (loopback, the wildcard)
_LOOPBACK = r"(?:0\.0\.0\.0|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1?\])"
# a Hub repo id that is not a local weights file taken for one (that is model-not-found)
_NOT_A_FILE = (
    "".join(
        rf"(?<!\.{x})"
        for x in (
            "bin",
            "gguf",
            "ggml",
            "safetensors",
            "pt",
            "pth",
            "ckpt",
            "onnx",
            "h5",
            "msgpack",
        )
    )
    + r"(?![\w.-])"
)
# not on a line SGLang itself marks harmless (its "ignore import error" notice for optional
# model modules, printed on healthy starts)
_NOT_BENIGN = (
    r"\A(?!.*(?:"
    + "|".join(re.escape(m.keyword()) for m in sglang.all_messages("ignore-import-error"))
    + r"|can be ignored))"
)
# not the NVIDIA driver's own libraries (their absence is gpu-unavailable: no driver, or a
# container without the NVIDIA runtime)
_NOT_DRIVER_LIB = r"(?!\S*lib(?:cuda|nvidia-ml|nvidia-ptxjitcompiler)\.so(?:\.1)?:)"
# the libraries of the CUDA runtime and toolkit (and ROCm's HIP runtime and its libraries), as
# their sonames begin: versioned by the CUDA/ROCm major they belong to
_CUDA_RUNTIME_LIB = (
    r"lib(?:nvrtc|nvrtc-builtins|cudart|cublas|cublasLt|cudnn|cusparse|cusparseLt|cufft|cufile"
    r"|curand|cusolver|nvJitLink|nvToolsExt|nccl|cupti|npp|nvjpeg|amdhip64|hiprtc|rocblas"
    r"|hipblas|hipblaslt|miopen|rccl|cuda(?!\.so\.1\b))"
)
# how a draft model's class or module names itself (LlamaForCausalLMEagle3, DeepseekV3ForCausalLMNextN)
_DRAFT_CLASS_WORDS = ("Eagle", "EAGLE", "eagle", "Draft", "draft", "NextN", "MTP")
# attention implementations as models and engines name them in a refusal
_ATTENTION_IMPLS = (
    "Flash Attention",
    "flash attention",
    "Flash-Attention",
    "FlashAttention",
    "flash_attn",
    "flash-attn",
    "FlashInfer",
    "flashinfer",
    "xformers",
    "xFormers",
    "attention backend",
    "Attention backend",
    "attention implementation",
    "attn_implementation",
    "sdpa",
    "SDPA",
)
# GPU generations and capabilities, as a kernel refusing the card names them
_GPU_GENERATIONS = (
    "Ampere",
    "Hopper",
    "Blackwell",
    "Turing",
    "Volta",
    "or newer",
    "or later",
    "compute capability",
    "Compute Capability",
    "sm_",
    "sm8",
    "sm9",
    "SM8",
    "SM9",
)
# the Hub's refusal of a request, as clients word it
_HUB_REFUSED = (
    "gated",
    "restricted",
    "401 Client Error",
    "403 Client Error",
    "Unauthorized",
    "Forbidden",
    "Invalid user token",
    "Access to model",
)
# CUDA's words for an operation refused while a stream is being captured into a graph
_CAPTURE_REFUSED = (
    "stream is capturing",
    "cudaErrorStreamCapture",
    "hipErrorStreamCapture",
    "during stream capture",
    "capture was invalidated",
    # torch's own refusals of a call that cannot be captured ("Cannot call
    # CUDAGeneratorImpl::current_seed during CUDA graph capture", "... not allowed during
    # graph capture"), and the capture status CUDA/HIP report with them
    "during CUDA graph capture",
    "during graph capture",
    "during HIP graph capture",
    "cudaStreamCaptureStatusActive",
    "hipStreamCaptureStatusActive",
)


def _need_steps(detail: Mapping[str, str], flags: Mapping[str, Any]) -> tuple[str, str]:
    """spec-params-need-num-steps: the words come from preflight (rules/speculative.py)."""
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

STARTUP_RULES: tuple[Rule, ...] = (
    Rule(
        id="spec-params-need-num-steps",
        title="speculative top-k / draft tokens set without --speculative-num-steps",
        summary="speculative_num_steps is unset while top-k or draft tokens are set (bare AssertionError in SGLang's EAGLE argument handling)",
        fix="set --speculative-num-steps (and keep the three consistent) or drop both",
        doc=(
            "SGLang 0.5.23 auto-chooses (num_steps, eagle_topk, num_draft_tokens) when "
            "--speculative-num-steps is unset, and first asserts that the other two are unset "
            "too (arg_groups/speculative_hook.py, `_handle_eagle_family`; `server_args.py "
            "_handle_speculative_decoding` in older releases). The assertion has no message: "
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
            # class): "--speculative-draft-model-path is required for EAGLE3", "EAGLE3 is not
            # supported for model architecture X"; a drafter's shapes are drafter-mismatch's
            Family(
                ("AssertionError", "ValueError", "TypeError", "NotImplementedError"),
                words=(
                    "speculative_",
                    "--speculative-",
                    "speculative algorithm",
                    "speculative decoding",
                    "Speculative decoding",
                    "EAGLE",
                    "NEXTN",
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
        ),
        title="SGLang rejected the speculative-decoding settings",
        summary="SGLang rejected the speculative-decoding settings: {msg}",
        fix="change the speculative settings named in the message; `deploy validate` runs the same checks before a start",
        doc=(
            "A ValueError / TypeError / NotImplementedError raised while SGLang resolves the "
            "speculative arguments (arg_groups/speculative_hook.py, speculative/spec_info.py, "
            "arg_groups/overrides.py)."
        ),
        patterns=(
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
            under(
                ".../sglang/srt/arg_groups/speculative_hook.py",
                "_handle_eagle_family",
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
                ".../sglang/srt/arg_groups/some_model_hook.py",
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
            # torch's state-dict check naming the draft model's class ("Error(s) in loading
            # state_dict for LlamaForCausalLMEagle3: size mismatch for fc.weight ..."), wherever
            # it was raised
            Family(("RuntimeError",), words=("size mismatch",), and_words=_DRAFT_CLASS_WORDS),
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
                context=_DRAFT_FRAMES + r"|_mtp\.py|in load_weights",
            ),
            *said("eagle3-mla-q-lora"),
            *said("eagle3-one-layer"),
            *said("arch-unsupported", context=_DRAFT_FRAMES, preflight="drafter-architecture"),
            *said("arch-not-inspected", context=_DRAFT_FRAMES, preflight="drafter-architecture"),
        ),
        preflight_rule="drafter-hidden-size",
        defaults={"msg": "?"},
        examples=(
            '  File ".../sglang/srt/models/llama_eagle3.py", line 373, in load_weights\n'
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
            # page size is another check)
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
                    "heads",
                    # a weight's per-GPU shard that a quantisation block must divide (FP8
                    # block_n 128 against output_partition_size = 576 at some TP sizes)
                    "partition",
                    "weight quantization block",
                ),
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
            Family(
                ("ValueError", "AssertionError", "NotImplementedError", "RuntimeError"),
                words=("backend", "head_dim", "head size", "head_size"),
                frames=code.ATTENTION_PACKAGES,
                both=True,
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
        # kernel built for another GPU generation (FA3 is Hopper-only) or shape
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
        id="kernel-package-mismatch",
        families=(Family(("ImportError", "OSError", "RuntimeError"), words=("undefined symbol",)),),
        title="a compiled package (sgl-kernel, flashinfer, ...) does not match torch, CUDA or SGLang",
        summary="{pkg} cannot be used as installed: {msg}",
        fix="{fixhint}",
        doc=(
            "A compiled extension was built against another PyTorch (C++ ABI: an undefined "
            "`c10::`/`at::`/`torch::` symbol), a newer CUDA than the box has (an undefined `cu*` "
            "driver symbol), or is older than the SGLang release requires (its start-up version "
            "check, or a kernel op missing at run time). sgl-kernel hides the first two behind "
            '"Could not load any common_ops library", with the real error listed under it.'
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>ImportError|OSError): (?P<msg>(?P<lib>\S+?\.so[\w.]*): undefined symbol: (?P<symbol>\S+))",
            ),
            pat(
                r"^-\s*(?P<exc>ImportError): (?P<msg>(?P<lib>\S+?\.so[\w.]*): undefined symbol: (?P<symbol>\S+))",
            ),
            # a compiled library and "undefined symbol" in any other arrangement (a loader's
            # list of attempts, a dlopen error quoted by a wrapper, a summary in a user's words)
            pat(
                _NOT_BENIGN
                + r"(?P<msg>.*?(?<![^\s/('\"])(?P<lib>[\w/.+-]{1,300}?\.so(?:\.[\w.]+)?)['\"]?[\s:,()\u2014\u2013-]{1,6}(?:\(?[\w\s]{0,40}\)?[\s:,()\u2014\u2013-]{1,6})?undefined symbol\b(?::? (?P<symbol>[\w.$@]+))?.*)",
            ),
            # torch's own checks on its companion packages (torchvision, torchaudio): built for
            # another CUDA major, or for another torch (their operators are not registered)
            pat(
                r"(?P<msg>Detected that PyTorch and (?P<pkg>\w+) were compiled with different CUDA (?:major )?versions.*)",
            ),
            pat(
                r"(?P<msg>operator (?P<pkg>torchvision|torchaudio|torchao|xformers|flash_attn|sgl_kernel|vllm|flashinfer)::\w+ does not exist.*)",
            ),
            # a compiled module built against NumPy 1.x imported under NumPy 2 (NumPy's words)
            pat(
                r"(?P<msg>A module that was compiled using NumPy (?P<have>\d)\.x cannot be run in.*)",
                pkg="a compiled module",
            ),
            *said("pkg-not-installed", anywhere=True),
            *said("pkg-too-old", anywhere=True),
            pat(
                _EXC
                + r"(?P<exc>AttributeError|NameError|RuntimeError): (?P<msg>.*(?:'_OpNamespace' '(?P<pkg>sgl_kernel|sgl-kernel)' object has no attribute|No such operator (?P<lib>sgl_kernel)::|name '\w+' is not defined).*)",
                context=r"sgl_kernel|flashinfer|/speculative/|eagle",
            ),
        ),
        defaults={
            "msg": "?",
            "pkg": "the compiled package",
            "symbol": "",
            "lib": "",
            "version": "?",
        },
        enrich=_enrich_ext,
        explains=("python-import-error",),
        examples=(
            "ImportError: /opt/sglang/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
            example("pkg-too-old", pkg="sgl-kernel", have="0.0.9.post2", version="0.1.1"),
            # dlopen's error quoted by a loader, not as an exception line (not from the corpus)
            "RuntimeError: Could not load /opt/venv/lib/python3.12/site-packages/flashinfer/data/libflashinfer.so (undefined symbol: _ZN3c1017RegisterOperatorsD1Ev)",
            # torch's companions built for another torch or CUDA (not from the corpus)
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch has CUDA Version=12.8 and torchvision has CUDA Version=12.4. Please reinstall the torchvision that matches your PyTorch install.",
            "RuntimeError: operator torchvision::nms does not exist",
            "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.2.6 as it may crash.",
        ),
    ),
    Rule(
        id="python-import-error",
        families=(
            Family(("ModuleNotFoundError", "ImportError")),
            # a wrapper that carries Python's words in its message (transformers' lazy module:
            # "Failed to import transformers.models.x because of the following error ...:
            # No module named 'y'")
            Family(
                ("RuntimeError", "OSError", "ValueError"),
                words=("No module named '", "cannot import name '"),
            ),
            # the dynamic loader missing a shared library, raised as an OSError (ctypes' CDLL,
            # torch.ops.load_library) rather than an ImportError; the NVIDIA driver's own
            # libraries are gpu-unavailable's
            Family(
                ("OSError",),
                words=("cannot open shared object file",),
                unless=("libcuda.so.1", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"),
            ),
        ),
        # an import failure reported by a supervisor, a worker pool or a launcher in its own
        # ERROR line (no exception line of its own): Python's words, any wrapper
        signals=(Signal(("error-level",), words=("cannot import name '", "No module named '")),),
        title="a Python module is missing or broken",
        summary="Python could not import {module}: {msg}",
        fix="{fixhint}",
        doc=(
            "The interpreter of the unit lacks a module (ModuleNotFoundError / ImportError), "
            "often because ExecStart uses another Python than the one SGLang was installed into, "
            "or a compiled extension (sgl_kernel, flashinfer) does not match torch/CUDA "
            '("undefined symbol", "cannot open shared object file").'
        ),
        patterns=(
            # a library of the CUDA runtime/toolkit of one major version that the loader cannot
            # find (libnvrtc.so.12, libcudart.so.11.0, libcublasLt.so.13, ...), whoever needs it
            # (sgl_kernel, flashinfer, torch, a llama.cpp wheel): a missing shared library is an
            # import failure (not the NVIDIA driver's own libcuda.so.1 / libnvidia-ml.so.1, that
            # is gpu-unavailable); the fix names both remedies (enrich)
            pat(
                r"^(?:[-*]\s*)?\s*(?:[\w.]+\.)?(?P<exc>ImportError|OSError|RuntimeError): (?:.{0,200}?: )?(?P<msg>(?P<lib>"
                + _CUDA_RUNTIME_LIB
                + r"[\w-]*\.so\.(?P<cuda_major>\d+))[\w.]*: cannot open shared object file.*)",
            ),
            pat(
                r"Error while finding module specification for '(?P<spec>[^']+)' \((?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)')\)",
            ),
            pat(
                _EXC
                + r"(?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)'.*)",
            ),
            pat(
                _EXC
                + r"(?P<exc>ImportError): "
                + _NOT_DRIVER_LIB
                + r"(?P<msg>(?:cannot import name '(?P<name>[^']+)' from '(?P<module>[^']+)'|(?P<lib>\S+?): cannot open shared object file).*)",
            ),
            pat(_EXC + r"(?P<exc>ImportError): " + _NOT_DRIVER_LIB + r"(?P<msg>.+)"),
            # sgl_kernel's loader gave up: a fallback, so that the cause it lists under it (a
            # missing CUDA library, an undefined symbol) names the diagnosis when logged
            pat(
                r"(?P<msg>\[sgl_kernel\] CRITICAL: Could not load any common_ops library!?)",
                module="sgl_kernel",
                critical="1",
                role=FALLBACK,
            ),
            pat(r"^\S*python[\d.]*: (?P<msg>No module named (?P<module>\S+))$"),
            # an import that failed, told in a wrapper's own words with Python's ("Encountered
            # exception while importing decord: No module named 'decord'", "Failed to import
            # from vllm._C with ModuleNotFoundError(...)"): a fallback, so that any cause
            # logged elsewhere wins, and never on a warning about an optional package
            pat(
                _NOT_BENIGN
                + r"(?!.*(?:WARNING|Warning|warning|not available|will not be|optional|[Ss]kipping))(?P<msg>.*?\b(?:[Ee]xception|[Ee]rror|[Ff]ailed|[Cc]ould not|[Cc]annot|[Uu]nable to)\b.{0,200}?\bNo module named '(?P<module>[^']{1,200})'.*)",
                role=FALLBACK,
            ),
        ),
        defaults={"module": "", "msg": "?", "critical": ""},
        enrich=_enrich_import,
        examples=(
            "/opt/sglang/bin/python3: Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
            "ModuleNotFoundError: No module named 'sgl_kernel'",
            # a wrapper's own words around Python's (not from the corpus)
            "ERROR 05-02 10:11:12 [registry.py:412] Error in inspecting model architecture 'Qwen2VLForConditionalGeneration': No module named 'qwen_vl_utils'",
        ),
    ),
    Rule(
        id="exec-failed",
        title="systemd could not start the command",
        summary="systemd could not run the service's command: {msg}",
        fix="check ExecStart= (the Python path {path} must exist and be executable), WorkingDirectory= and User= of the unit; re-render it with `deploy up`",
        doc=(
            "systemd failed before SGLang ran: the executable, working directory or user of the "
            "unit is wrong (status=203/EXEC, 200/CHDIR, 217/USER)."
        ),
        patterns=(
            pat(
                r"Failed to locate executable (?P<path>\S+): (?P<msg>.*)",
            ),
            pat(
                r"Failed at step (?P<step>[A-Z_]+) spawning (?P<path>\S+): (?P<msg>.*)",
            ),
            pat(
                r"Main process exited, code=exited, status=(?P<msg>(?:203/EXEC|200/CHDIR|217/USER|209/STDOUT|226/NAMESPACE))",
            ),
        ),
        defaults={"path": "?", "msg": "?"},
        examples=(
            "sglang-kimi.service: Failed to locate executable /opt/sglang/bin/python3: No such file or directory",
            "sglang-kimi.service: Failed at step EXEC spawning /opt/sglang/bin/python3: No such file or directory",
        ),
    ),
    Rule(
        id="driver-too-old",
        families=(
            Family(
                ("RuntimeError", "AcceleratorError", "DeferredCudaCallError"),
                words=(
                    "driver version is insufficient",
                    "NVIDIA driver on your system is too old",
                    "Error 804",
                    "forward compatibility",
                    "InsufficientDriver",
                    "not supported in the installed CUDA driver",
                    "CallRequiresNewerDriver",
                ),
            ),
        ),
        title="the NVIDIA driver is older than the CUDA that torch was built with",
        summary="the NVIDIA driver is too old for this torch: {msg}",
        fix="{fixhint}",
        doc=(
            "torch (and sgl-kernel, flashinfer) were built for a CUDA the host's driver does not "
            'support: "The NVIDIA driver on your system is too old (found version 12020)" (the '
            "driver's CUDA, 12.2), \"CUDA driver version is insufficient for CUDA runtime "
            'version", or in a container "Error 804: forward compatibility was attempted on non '
            'supported HW".'
        ),
        patterns=(
            pat(
                r"(?P<msg>The NVIDIA driver on your system is too old \(found version (?P<found>\d+)\).*)",
            ),
            pat(
                r"(?P<msg>.*CUDA driver version is insufficient for CUDA runtime version.*)",
            ),
            pat(
                r"(?P<msg>.*Error 804: forward compatibility was attempted on non supported HW.*)",
            ),
            # the NVIDIA container toolkit refusing an image whose CUDA needs a newer driver
            pat(
                r"(?P<msg>.*unsatisfied condition: cuda ?>= ?(?P<need>\d+\.\d+).*)",
            ),
            # the runtimes' enum names for the same (CUDA's error 35, ROCm's hipErrorInsufficientDriver)
            pat(
                r"(?P<msg>.*\b(?:cudaErrorInsufficientDriver|hipErrorInsufficientDriver|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE|cudaErrorCompatNotSupportedOnDevice)\b.*)",
            ),
            # CUDA's error 36 (cudaErrorCallRequiresNewerDriver): a library built with a newer
            # toolkit calls an entry point this driver lacks (NCCL's "Cuda failure 'API call
            # is not supported in the installed CUDA driver'"); what fails after it (NCCL's
            # collectives, "invalid device ordinal") is its consequence
            pat(
                r"(?P<msg>.*(?:API call is not supported in the installed CUDA driver|\bcudaErrorCallRequiresNewerDriver\b|\bCUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER\b).*)",
                explains=("nccl-error", "gpu-unavailable"),
            ),
        ),
        preflight_rule=None,
        defaults={"msg": "?", "found": ""},
        enrich=_enrich_driver,
        examples=(
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11060). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). ... Error 804: forward compatibility was attempted on non supported HW",
            # not from the corpus: the runtime's enum name, as a C++ wrapper prints it
            "terminate called after throwing an instance of 'std::runtime_error' what(): cudaGetDeviceCount failed: cudaErrorInsufficientDriver",
            # not from the corpus: the same status as torch raises it
            "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver",
        ),
    ),
    Rule(
        id="gpu-unavailable",
        families=(
            Family(
                ("RuntimeError", "AcceleratorError", "DeferredCudaCallError"),
                words=(
                    "busy or unavailable",
                    "no CUDA-capable device",
                    "Found no NVIDIA driver",
                    "CUDA driver initialization failed",
                    "Error 802",
                    "system not yet initialized",
                    "No CUDA GPUs are available",
                    "device < num_gpus",
                    "invalid device ordinal",
                    "No HIP GPUs are available",
                    "no ROCm-capable device",
                    "ErrorNoDevice",
                    "CUDA unknown error",
                ),
            ),
        ),
        title="no usable CUDA device",
        summary="no usable CUDA GPU: {msg}",
        fix="{fixhint}",
        doc=(
            "PyTorch cannot use the GPUs: no driver, driver older than the CUDA runtime, "
            'CUDA_VISIBLE_DEVICES hides them, fewer GPUs than --tp-size ("invalid device '
            'ordinal"), devices busy (exclusive mode), or on HGX B200/H200 the NVIDIA '
            'fabric manager not running ("Error 802: system not yet initialized").'
        ),
        patterns=(
            pat(
                r"(?P<msg>Error 802: system not yet initialized|cudaErrorSystemNotReady)",
                fixhint="start the NVIDIA fabric manager (`systemctl enable --now nvidia-fabricmanager`, version = driver version) and check `nvidia-smi -q | grep -i fabric`",
            ),
            pat(
                r"(?P<msg>(?:No CUDA GPUs are available|Found no NVIDIA driver on your system|no CUDA-capable device is detected|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver).*)",
            ),
            # torch's CUDA init gave up (nvidia_uvm not loaded, a container without the device
            # nodes, a suspended GPU): it sets the device count to zero
            pat(
                r"(?P<msg>.*CUDA unknown error - this may be due to an incorrectly set up environment.*)",
            ),
            # docker/podman started without the NVIDIA runtime, or its CLI finds no driver
            pat(
                r"(?P<msg>.*(?:could not select device driver \S* ?with capabilities: \[\[gpu\]\]|nvidia-container-cli: initialization error).*)",
                fixhint="the container runtime cannot give the container GPUs: install the NVIDIA container toolkit (`nvidia-ctk runtime configure`, restart docker) and check `nvidia-smi` works on the host",
            ),
            # the same in ROCm's, Intel's and the runtimes' own words (torch on ROCm says "No
            # HIP GPUs are available"; hipErrorNoDevice is "no ROCm-capable device is detected")
            pat(
                r"(?P<msg>.*(?:No (?:HIP|XPU|NPU) GPUs are available|no ROCm-capable device is detected|(?:cuda|hip)ErrorNoDevice\b|(?:cuda|hip)ErrorInvalidDevice\b|cudaErrorDevicesUnavailable\b).*)",
            ),
            # the kernel module and the user-space driver libraries are of different versions
            # (a driver upgraded without a reboot): no GPU can be used until they match
            pat(
                r"(?P<msg>.*(?:Failed to initialize NVML: Driver/library version mismatch|NVML library version mismatch).*)",
                fixhint="the NVIDIA kernel module and the user-space driver libraries differ in version (a driver update without a reboot, or a container's libraries): reboot the host (or reload the nvidia modules) so `nvidia-smi` works again",
            ),
            # the driver's own user-space libraries are not there: no driver on the host, or a
            # container started without the NVIDIA runtime (`--gpus`, the device plugin)
            pat(
                r"(?P<msg>.*(?:\b(?P<lib>lib(?:cuda|nvidia-ml|nvidia-ptxjitcompiler)\.so(?:\.1)?)(?:: cannot open shared object file| not found)|NVML Shared Library Not Found|Failed to load shared library libcuda).*)",
                fixhint="the NVIDIA driver's libraries (libcuda.so.1, libnvidia-ml.so.1) are not visible to the service: install the driver on the host, or in a container start it with the NVIDIA runtime (`--gpus all` / the device plugin) so they are mounted in",
            ),
            # NVML (the driver's management library) not loadable or not initialisable: the
            # device plugin's, nvidia-smi's, pynvml's and go-nvml's words for no driver or a
            # container without the NVIDIA runtime ("Failed to initialize NVML: could not load
            # NVML library", "Failed to initialize NVML: Unknown Error", "NVML_ERROR_…")
            pat(
                r"(?P<msg>.*(?:could not load NVML library|[Ff]ailed to (?:initialize|start|init) (?:NVML|nvml)\b|NVML_ERROR_(?:LIBRARY_NOT_FOUND|DRIVER_NOT_LOADED|NO_PERMISSION)|NVMLError_(?:DriverNotLoaded|NoPermission)).*)",
                fixhint="NVML cannot be loaded or initialised: no NVIDIA driver on the host, or the container (a Kubernetes pod, the device plugin) runs without the NVIDIA runtime; install the driver and the NVIDIA container toolkit and make `nvidia` the default runtime (`nvidia-ctk runtime configure --set-as-default`), then check `nvidia-smi` in the container",
            ),
            pat(
                r"(?P<msg>.*invalid device ordinal.*)",
                fixhint="fewer GPUs are visible than the unit asks for: --tp-size (x --dp-size, + --base-gpu-id) must fit in the GPUs CUDA_VISIBLE_DEVICES leaves visible (check `nvidia-smi -L`)",
            ),
            pat(
                r"(?P<msg>.*CUDA-capable device\(s\) (?:is|are) busy or unavailable.*)",
                fixhint="another process holds the GPUs (or they are in exclusive-process mode): find it with `nvidia-smi` and stop it",
            ),
        ),
        preflight_rule="gpus-for-tp",
        defaults={
            "msg": "?",
            "fixhint": "check `nvidia-smi` as the service user: driver loaded, GPUs visible (CUDA_VISIBLE_DEVICES), at least --tp-size of them",
        },
        examples=(
            "RuntimeError: No CUDA GPUs are available",
            "RuntimeError: CUDA error: invalid device ordinal",
            # not from the corpus: torch on ROCm, a container without /dev/kfd
            "RuntimeError: No HIP GPUs are available",
            # the driver's libraries absent (a container without the NVIDIA runtime)
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
            # not from the corpus: nvidia-smi in a container whose device cgroup lost the GPUs
            "Failed to initialize NVML: Unknown Error",
            "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
        ),
    ),
    Rule(
        id="kernel-unsupported-arch",
        families=(
            Family(
                ("RuntimeError", "AcceleratorError", "ValueError", "AssertionError"),
                words=(
                    "no kernel image",
                    "not compatible with the current PyTorch",
                    "compute capability",
                    "unsupported toolchain",
                    "GPUs or newer",
                    "GPU architecture is not supported",
                    "invalid device function",
                    "InvalidDeviceFunction",
                    "NoBinaryForGpu",
                    "code object for all current devices",
                ),
            ),
        ),
        title="kernels not built for this GPU (or too old)",
        summary="GPU kernels do not support this GPU or are too old: {msg}",
        fix="{fixhint}",
        doc=(
            'A CUDA kernel has no code for this GPU ("no kernel image is available for execution '
            'on the device"; PyTorch\'s "sm_100 is not compatible with the current PyTorch '
            "installation\"), or SGLang's start-up version check found sglang-kernel missing or "
            "older than required (utils/common.py `assert_pkg_version`)."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*no kernel image is available for execution on the device.*)",
            ),
            pat(
                r"(?P<msg>.*(?:only supported on GPUs with compute capability of at least|requires (?:a GPU with )?compute capability (?:of )?(?:at least )?|[Cc]ompute [Cc]apability (?:of )?at least )(?P<need>\d+\.\d).*?(?:capability (?:of |is )?(?P<b>\d)\.(?P<c>\d))?.*)",
            ),
            pat(
                r"(?P<msg>.*with CUDA capability (?P<sm>sm_\d+a?) is not compatible with the current PyTorch installation.*)",
            ),
            pat(
                r"(?P<msg>.*(?:the provided PTX was compiled with an unsupported toolchain|device kernel image is invalid).*)",
            ),
            # the runtime found no code for this GPU in the binary: CUDA's and ROCm's HIP
            # "invalid device function" (a wheel built without this gfx/sm target)
            pat(
                r"(?P<msg>.*(?:(?:CUDA|HIP) error: invalid device function|(?:cuda|hip)ErrorInvalidDeviceFunction|(?:cuda|hip)ErrorNoKernelImageForDevice|hipErrorNoBinaryForGpu|Unable to find code object for all current devices|HIP error: shared object initialization failed|hipErrorSharedObjectInitFailed).*)",
            ),
            # a kernel library's own arch check (flashinfer, DeepGEMM, sgl-kernel), CUTLASS's
            # trap for an instruction of another generation; never a bare "Unsupported
            # architecture" (a CPU's: aarch64 on Grace hosts) nor nvcc's lower-case "Unsupported
            # gpu architecture 'compute_120'" (a build failure: jit-build-failed)
            pat(
                r"(?P<msg>.*(?:\bUnsupported (?:SM|sm|CUDA arch|GPU arch|GPU architecture|compute capability)\b|Arch conditional MMA instruction used without targeting appropriate compute capability).*)",
            ),
            # torch's own refusal of a GPU older than its builds ("… which is of cuda capability
            # 3.5. PyTorch no longer supports this GPU because it is too old.") and Triton's
            # ("… too old to be supported by the triton GPU compiler")
            pat(
                r"(?P<msg>.*(?:PyTorch no longer supports this GPU because it is too old|too old to be supported by the triton GPU compiler).*)",
            ),
            # a GPU generation as the floor, in any project's words: "FlashAttention only
            # supports Ampere GPUs or newer.", "requires Hopper GPUs or later", "only supported
            # on sm90 and above"
            pat(
                r"(?P<msg>.*(?:only supports?|only supported on|requires?|needs?) (?:NVIDIA |AMD )?(?P<gen>Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell|sm_?\d{2,3}a?|CDNA ?\d|MI\d{3}\w?|gfx\d{3,4}\w?)(?: \(?sm_?\d+\)?)?(?: GPUs?| architectures?| devices?)? (?:or|and) (?:newer|later|above|higher)\b.*)",
            ),
            # a capability floor as a number: "Minimum capability: 89. Current capability: 86."
            # (vLLM's quantisation check), "compute capability >= 7.0"
            pat(
                r"(?P<msg>.*(?:[Mm]inimum (?:compute )?capability(?: required)?: ?|[Cc]apability >= ?)(?P<need>\d+(?:\.\d)?)\b.*)",
            ),
            # "<feature> requires a GPU with Compute Capability 8.9 or higher" in any
            # project's words: the needed capability, then "or higher/newer/above"
            pat(
                r"(?P<msg>.*[Cc]ompute [Cc]apability (?:of )?(?:>= ?)?(?P<need>\d+\.\d)\+? or (?:higher|above|newer|later|greater).*)",
            ),
            # a dtype or instruction the compiler refuses on this GPU generation (Triton's
            # "type fp8e4nv not supported in this architecture"); the line must speak of a GPU
            # or a GPU dtype (a CPU's architecture is no GPU's)
            pat(
                r"\A(?=.*(?:fp8|fp16|bf16|float8|dtype|GPU|CUDA|cuda|sm_\d|wgmma|[Tt]riton))"
                + r"(?P<msg>.*\bnot supported (?:in|on|by|for) (?:this|the current|your) (?:GPU |GPU's |device |CUDA )?(?:architecture|arch)\b.*)",
            ),
        ),
        defaults={"msg": "?", "sm": "?"},
        enrich=_enrich_arch,
        examples=(
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
            "UserWarning: NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.",
            # not from the corpus: ROCm's wording of the same cause (torch's c10/hip checks)
            "RuntimeError: HIP error: hipErrorInvalidDeviceFunction",
            # not from the corpus: ROCm's loader finding no code object for this gfx target
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036\nhipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
            # not from the corpus: a quantisation method's capability floor
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 86.",
            # not from the corpus: a Compute Capability floor in another project's words
            "ValueError: Marlin FP8 kernels need a GPU with compute capability 8.0 or newer; this GPU has 7.5",
            # not from the corpus: a generation as the floor (FA3's, DeepGEMM's wordings)
            "RuntimeError: FlashAttention-3 only supports Hopper GPUs or newer.",
            "AssertionError: DeepGEMM requires sm90 or above",
        ),
    ),
    Rule(
        id="hf-auth",
        families=(
            Family(("GatedRepoError",)),
            Family(("HfHubHTTPError", "RepositoryNotFoundError"), words=_HUB_REFUSED),
            # a generic HTTP client's error is the Hub's only when it names the Hub
            Family(
                ("HTTPError", "OSError"),
                words=_HUB_REFUSED,
                and_words=(
                    "huggingface.co",
                    "hf.co",
                    "hf-mirror.com",
                    "gated repo",
                    "Hugging Face",
                ),
            ),
            # ... or when it was raised under the Hub's client (huggingface_hub's
            # hf_raise_for_status re-raising requests'/httpx's 401/403, whatever the message)
            Family(
                ("HTTPError", "HTTPStatusError", "HfHubHTTPError", "OSError"),
                words=_HUB_REFUSED,
                frames=code.HUB_CLIENT_PACKAGES,
                both=True,
            ),
        ),
        title="the Hugging Face repo is gated or needs a token",
        summary="{repo} needs an authorised Hugging Face token: {msg}",
        fix="{fixhint}",
        doc=(
            "The model (or drafter) is a gated or private Hub repo and the service has no token "
            'with access: "Cannot access gated repo for url …", "… is gated. You must be '
            'authenticated to access it", GatedRepoError, 401/403 from huggingface.co. The '
            "service reads HF_TOKEN from its environment file, not from a login shell."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*Cannot access gated repo for url (?P<url>\S*?huggingface\.co/(?:api/models/)?(?P<repo>[\w.-]+/[\w.-]+))\S*.*)",
            ),
            pat(
                r"(?P<msg>.*(?:Repo model|Access to model) (?P<repo>[\w.-]+/[\w.-]+) is (?:gated|restricted).*)",
            ),
            # the same refusals with the URL or repo id cut or redacted by whoever posted the
            # log ("Cannot access gated repo for url https://huggingface.co/ ...", "Access to
            # model {model_id} is restricted"), and huggingface_hub's own sentence for it
            # (errors.py: "... You must have access to it and be authenticated to access it.")
            pat(
                r"(?P<msg>.*(?:\bCannot access gated repo\b|\b(?:Repo model|Access to model) \S{1,300} is (?:gated|restricted)\b|[Yy]ou must (?:have access to it and )?be authenticated to access it).*)",
            ),
            pat(
                _EXC + r"(?P<msg>(?:GatedRepoError|huggingface_hub\.errors\.GatedRepoError): .*)",
            ),
            pat(
                r"(?P<msg>.*\b(?:401|403) Client Error.*(?:huggingface\.co|hf-mirror\.com)/(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*)",
            ),
            # the Hub (or hf-mirror.com, the mirror HF_ENDPOINT often names) refused (401/403)
            # a request from any client, in its own words: Rust's
            # hf-hub "Status(403, Response[... url: https://huggingface.co/...])", httpx's
            # "Client error '401 Unauthorized' for url 'https://huggingface.co/...'",
            # "HTTP Error 403: Forbidden ... huggingface.co/...", Node's "status code 401"
            pat(
                r"\A(?=.{0,8192}?(?:Unauthorized|Forbidden|[Ss]tatus|HTTP|[Cc]lient error))(?P<msg>(?>.*?(?<![\w.:/-])(?P<status>401|403)(?![\w.:/-])).*?(?:huggingface\.co|hf\.co|hf-mirror\.com)/(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*)",
                ("huggingface.co", "hf.co", "hf-mirror.com"),
            ),
            # the same, the URL first: "<url>: status code 403", "<url> (HTTP status 401)"
            pat(
                r"\A(?P<msg>(?>.*?(?:huggingface\.co|hf\.co|hf-mirror\.com)/)(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*?\b(?:[Ss]tatus(?: code)?|HTTP(?: status)?)[:= ]{1,3}(?P<status>401|403)\b.*)",
                ("huggingface.co", "hf.co", "hf-mirror.com"),
            ),
            pat(
                r"(?P<msg>.*(?:Invalid (?:user|access) token|Invalid credentials in Authorization header).*)",
            ),
        ),
        preflight_rule="model-path-hub",
        defaults={"msg": "?", "repo": ""},
        enrich=_enrich_hf_auth,
        examples=(
            "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.",
            "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it.",
            # other HTTP clients' words for the Hub's 401/403 (not from the corpus)
            "huggingface_hub.errors.HfHubHTTPError: Client error '401 Unauthorized' for url 'https://huggingface.co/api/models/meta-llama/Llama-3.1-8B/revision/main'",
            "Error: request error: https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json: status code 403",
        ),
    ),
    Rule(
        id="hf-hub-unreachable",
        families=(
            Family(("LocalEntryNotFoundError", "OfflineModeIsEnabled")),
            Family(
                (
                    "ConnectionError",
                    "MaxRetryError",
                    "ConnectTimeout",
                    "ReadTimeout",
                    "NameResolutionError",
                    "ConnectTimeoutError",
                    # the same failures as httpx, aiohttp, socket and ssl name them
                    "ConnectError",
                    "ReadError",
                    "ClientConnectorError",
                    "gaierror",
                    "SSLError",
                    "ProxyError",
                    # a download cut off half-way (the connection, not the repo)
                    "ConnectionResetError",
                    "ConnectionRefusedError",
                    "RemoteDisconnected",
                    "ChunkedEncodingError",
                    "IncompleteRead",
                    "ProtocolError",
                ),
                words=("huggingface.co", "hf.co", "HF_HUB_OFFLINE"),
                frames=("huggingface_hub/",),
                # transformers' "… is not a local folder and is not a valid model identifier
                # listed on 'https://huggingface.co/models'" names the Hub but says it answered
                # (the id does not exist): model-not-found's
                unless=("valid model identifier",),
            ),
            # transformers raises OSError for the Hub unreachable and for a missing model alike
            # (the latter names huggingface.co too, as where to look): only a connection word
            # makes it this family
            Family(
                ("OSError",),
                words=("huggingface.co", "hf.co", "HF_HUB_OFFLINE"),
                frames=("huggingface_hub/",),
                and_words=(
                    "connect",
                    "Connection",
                    "timed out",
                    "Timeout",
                    "offline",
                    "network",
                    "Network",
                    "unreachable",
                    "resolve host",
                    "name resolution",
                    "proxy",
                    "Proxy",
                    "SSL",
                    "certificate",
                    "Max retries",
                    "internet",
                ),
            ),
        ),
        title="the Hugging Face Hub cannot be reached",
        summary="the model had to come from the Hugging Face Hub, which is unreachable: {msg}",
        fix="download the model (and drafter) ahead and point --model-path / --speculative-draft-model-path at the local directories, or allow outbound HTTPS to huggingface.co (proxy: HTTPS_PROXY in the unit's Environment=); with HF_HUB_OFFLINE=1 the files must already be in HF_HOME",
        doc=(
            "A Hub id (not a local path) was given and the host is offline, behind a proxy, or "
            "has HF_HUB_OFFLINE=1 with an empty cache. huggingface_hub / transformers print "
            "\"We couldn't connect to 'https://huggingface.co' …\", LocalEntryNotFoundError, or "
            "a requests ConnectionError naming huggingface.co."
        ),
        patterns=(
            pat(
                r"(?P<msg>We couldn't connect to '(?P<url>https?://[^']+)'.*)",
            ),
            pat(_EXC + r"(?P<msg>LocalEntryNotFoundError: .*)"),
            pat(
                r"(?P<msg>.*OfflineModeIsEnabled: .*|.*offline mode is enabled.*)",
            ),
            pat(
                r"(?P<msg>.*Cannot find the requested files in the (?:disk )?cache and outgoing traffic has been disabled.*)",
            ),
            pat(
                r"\A(?P<msg>(?>.*?(?:huggingface\.co|\.hf\.co\b|hf-mirror\.com)).*(?:Max retries exceeded|NameResolutionError|Failed to resolve|Temporary failure in name resolution|timed out|Connection refused|Network is unreachable|ConnectTimeout|ProxyError).*)",
            ),
        ),
        preflight_rule="model-path-hub",
        defaults={"msg": "?"},
        examples=(
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.",
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.",
        ),
    ),
    Rule(
        id="model-not-found",
        families=(
            Family(
                (
                    "RepositoryNotFoundError",
                    "EntryNotFoundError",
                    "RevisionNotFoundError",
                    "HFValidationError",
                )
            ),
            # the Hub answered 404 for a file (any HTTP client under huggingface_hub /
            # transformers' hub code); 401/403 are hf-auth's, connection errors the unreachable Hub's
            Family(
                ("HTTPError", "HfHubHTTPError"),
                words=("404 Client Error", "404 Not Found"),
                frames=("huggingface_hub/", "transformers/utils/hub"),
                both=True,
            ),
            Family(
                ("OSError", "FileNotFoundError", "ValueError"),
                words=(
                    "does not appear to have a file named",
                    "is not a local folder",
                    "valid model identifier",
                    "Repo id must",
                    "Can't load the configuration",
                ),
            ),
        ),
        title="the model path or Hub id does not exist",
        summary="model not found: {msg}",
        fix="check --model-path and --speculative-draft-model-path: a local directory must exist for the service user and hold config.json and the *.safetensors (path: {path}); a Hub id must be 'org/name' (a gated model needs HF_TOKEN in unit.environment_file)",
        doc=(
            "The model or drafter path is wrong: a local path that does not exist is taken for a "
            'Hub repo id (huggingface_hub\'s HFValidationError "Repo id must be in the form …"), '
            "the directory lacks config.json, the Hub repo does not exist or is gated."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?:HFValidationError): (?P<msg>Repo id must be in the form .*?: '(?P<path>[^']+)'.*)",
            ),
            # transformers' "<path> does not appear to have a file named <file>" (config.json,
            # preprocessor_config.json, the weights; "files named" in newer releases), raised as
            # OSError/EnvironmentError and often quoted inside a wrapper's or a user's words
            pat(
                r"(?<![^\s:'\"(])(?P<msg>(?P<path>[^\s'\"*]{1,400}) does not appear to have (?:a file|files) named \(?'?(?P<file>[\w.-]+).*)",
            ),
            # diffusers' and older transformers' "Error no file named <weights or config>
            # found in directory <path>"
            pat(
                r"(?P<msg>Error no file named (?P<file>[\w.-]+).{0,200}? found in directory (?P<path>[^\s'\"]{1,400}).*)",
            ),
            # transformers' loaders, each component in its own words: "Can't load tokenizer
            # for 'x'", "Can't load config for 'x'", "Can't load image processor for 'x'",
            # "Can't load feature extractor for 'x'" (the local directory lacks its files, or
            # the id names no repo)
            pat(
                r"(?P<msg>Can't load (?:the )?(?P<what>tokenizer|config|configuration|image processor|feature extractor|processor|weights|model) (?:for|of) '(?P<path>[^']{1,400})'.*)",
            ),
            # a local file path (a weights file) sent to the Hub as a repo id: the Hub answers
            # 401 (unauthenticated) or 404 for the repo that does not exist
            pat(
                r"(?P<msg>\b(?:401|404) Client Error.*?huggingface\.co/(?:api/models/)?(?P<path>[\w.-]+/[\w.-]+\.(?:bin|gguf|ggml|safetensors|pt|pth|ckpt|onnx|h5|msgpack))(?![\w.-]).*)",
            ),
            pat(
                r"(?P<msg>.*(?:is not a local folder and is not a valid model identifier|Can't load the configuration of '(?P<path>[^']+)').*)",
            ),
            pat(_EXC + r"(?P<msg>RepositoryNotFoundError: .*)"),
            # huggingface_hub's body lines under any exception type (the first line holds only
            # the status and a request id): the repo, the revision or the file is not there
            pat(
                r"(?P<msg>(?:Repository|Revision|Entry) Not Found for url: (?P<path>\S{1,400}).*)",
            ),
            # SGLang's loader found the directory (or repo) but no weight files in it
            *said(
                "no-model-weights",
                anywhere=True,
                summary="no weight files found for {path}: {msg}",
                fix="point --model-path (and --speculative-draft-model-path) at the checkpoint directory itself, holding its *.safetensors (or *.bin) files, not a parent or a config-only copy; check the download finished and that --load-format fits the files",
            ),
            # transformers' hub code (utils/hub.py) refusing a path that is neither a local
            # folder nor a Hub id
            pat(
                r"(?P<msg>Incorrect path_or_model_id: '(?P<path>[^']{1,400})'.*)",
            ),
            pat(
                _EXC
                + r"FileNotFoundError: (?P<msg>\[Errno 2\] No such file or directory: '(?P<path>[^']+)')",
            ),
            pat(
                _EXC
                + r"ValueError: (?P<msg>Unrecognized model in (?P<path>\S+)\. Should have a `model_type` key.*)",
            ),
            # deploy's own check oneshot (templates/sglang-check.service.j2), before any load
            pat(
                r"deploy-check: (?P<msg>(?:model|drafter) (?:directory )?(?P<path>/\S*?)(?:/config\.json)? (?:does not exist|is missing or not readable.*|has no weight files.*))",
            ),
        ),
        preflight_rule="model-path-missing",
        defaults={"msg": "?", "path": "the path in the message"},
        examples=(
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/Kimi-K2.6'. Use `repo_type` argument if needed.",
            "OSError: /models/Kimi-K2.6 does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/Kimi-K2.6/tree/None' for available files.",
            "deploy-check: drafter directory /models/Kimi-K2.6-EAGLE3 does not exist",
            # the families' other wordings, from transformers', diffusers' and
            # huggingface_hub's sources (not from the corpus)
            "OSError: /models/Kimi-K2.6 does not appear to have files named ('model-00001-of-00064.safetensors', 'model-00002-of-00064.safetensors'). Checkout 'https://huggingface.co//models/Kimi-K2.6/tree/main' for available files.",
            "OSError: Error no file named diffusion_pytorch_model.safetensors found in directory /models/sd-turbo/unet.",
            "OSError: Can't load config for '/models/Kimi-K2.6'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure '/models/Kimi-K2.6' is the correct path to a directory containing a config.json file",
            "OSError: Incorrect path_or_model_id: '/models/Kimi-K2.6'. Please provide either the path to a local folder or the repo_id of a model on the Hub.",
            "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: Root=1-6)\n\nRevision Not Found for url: https://huggingface.co/api/models/moonshotai/Kimi-K2.6/revision/v2.\nInvalid rev id: v2",
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/models/kimi-k2.6-q4_k_m.gguf/revision/main",
            example("no-model-weights", path="/models/Kimi-K2.6"),
        ),
    ),
    Rule(
        id="model-arch-unsupported",
        families=(
            Family(
                ("KeyError", "ValueError", "NotImplementedError", "RuntimeError"),
                words=(
                    "model_type",
                    "Unrecognized configuration class",
                    "does not recognize this architecture",
                    "architecture is not supported",
                    "nsupported architectures",
                    # SGLang's own wording, from every known release
                    *dict.fromkeys(m.keyword() for m in sglang.all_messages("arch-unsupported")),
                ),
                frames=(
                    "transformers/models/auto/",
                    *code.MODEL_REGISTRY,
                ),
            ),
        ),
        title="the installed transformers / SGLang does not know the model's architecture",
        summary="the model's architecture is not known to this install: {msg}",
        fix="{fixhint}",
        doc=(
            "The checkpoint's config.json names a model_type or architecture the installed "
            "transformers (or SGLang) does not know: transformers is older than the model, or the "
            'model needs its own code ("set the option `trust_remote_code=True`"), or SGLang has no '
            "implementation of the target architecture."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*has model type `(?P<mtype>[\w.-]+)` but Transformers does not recognize this architecture.*)",
                fixhint="the installed transformers does not know model_type `{mtype}`: upgrade transformers (and SGLang) in the unit's venv to a release that supports it, or set trust_remote_code = true in [server] if the checkpoint ships its own code",
            ),
            pat(
                r"(?P<msg>.*(?:requires you to execute (?:execute )?(?:some |the (?:configuration |model |tokenizer |processor |image processor |feature extractor )?(?:file |code ))?(?:code )?in that repo|contains custom code which must be executed|set the option `trust_remote_code=True`|`trust_remote_code=True` to (?:remove this error|allow custom code)|Please pass the argument `trust_remote_code=True`).*)",
                fixhint="the checkpoint needs its own code: set trust_remote_code = true in [server] (after reading that code), or use a transformers release that includes the architecture",
            ),
            # another runtime's loader (llama.cpp and what embeds it, TGI) not knowing the
            # architecture the checkpoint names
            pat(
                r"(?P<msg>.*\bunknown model architecture:? '(?P<mtype>[^']{1,200})'.*)",
                fixhint="this runtime does not know the model's architecture ({mtype}): upgrade it (and SGLang / transformers in the unit's venv) to a release that supports it, or use a checkpoint of a supported architecture",
            ),
            # (a CPU architecture named so is not a model's: no category)
            pat(
                _EXC
                + r"(?P<exc>\w*Error): (?P<msg>[Uu]nsupported (?:model type|architecture):? ['`\"]?(?!(?:x86_64|amd64|aarch64|arm64|armv\d\w*|ppc64le|s390x|riscv64|i[3-6]86)\b)(?P<mtype>[\w.-]+)['`\"]?(?:[.,;:]\s.*|\.)?)$",
                fixhint="this runtime does not know the model's architecture ({mtype}): upgrade it (and SGLang / transformers in the unit's venv) to a release that supports it, or use a checkpoint of a supported architecture",
            ),
            # a tokenizer class this transformers does not have (older than the model)
            pat(
                r"(?P<msg>Tokenizer class (?P<mtype>\w+) does not exist or is not currently imported.*)",
                fixhint="the installed transformers has no tokenizer class {mtype}: upgrade transformers (and SGLang) in the unit's venv to a release that has it, or set trust_remote_code = true if the checkpoint ships its own tokenizer code",
            ),
            *said(
                "arch-unsupported",
                fixhint="SGLang has no implementation of {architectures}: upgrade SGLang to a release that lists it, or check config.json's architectures (a vision-language checkpoint may need its text-only variant)",
            ),
        ),
        defaults={
            "msg": "?",
            "mtype": "?",
            "architectures": "this architecture",
            "fixhint": "upgrade transformers / SGLang in the unit's venv, or set trust_remote_code = true",
        },
        examples=(
            "ValueError: The checkpoint you are trying to load has model type `qwen3_moe` but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of date.",
            # transformers >= 4.40's words for a checkpoint that ships its own modelling code
            "ValueError: The repository for moonshotai/Kimi-K2-Instruct contains custom code which must be executed to correctly load the model. You can inspect the repository content at https://hf.co/moonshotai/Kimi-K2-Instruct.",
            # older releases name the file to run (configuration, model or tokenizer)
            "ValueError: Loading /models/mpt-7b requires you to execute the tokenizer file in that repo on your local machine.",
            "ValueError: Tokenizer class TikTokenTokenizer does not exist or is not currently imported.",
            # llama.cpp's loader (and what embeds it) on an architecture it does not know
            "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen3next'",
        ),
    ),
    Rule(
        id="warmup-proxy",
        families=(
            # raised by SGLang's warm-up code itself (its status assertion, its readiness wait),
            # not deeper in the model it ran: the request to its own port did not get through
            Family((), site_functions=code.WARMUP_FUNCTIONS),
        ),
        signals=(
            # SGLang's "warmup error" wrapper with no cause logged anywhere (a truncated paste)
            Signal(("sglang-warmup",), role=FALLBACK),
        ),
        title="SGLang's warm-up request did not reach SGLang (an HTTP proxy answered)",
        summary="the warm-up request to the server's own port got HTTP {status} instead of 200: {msg}",
        fix="{fixhint}",
        doc=(
            "After the HTTP server starts, SGLang sends itself a warm-up request; it fails when an "
            "HTTP proxy from the environment (http_proxy / HTTPS_PROXY, often set system-wide) "
            "intercepts the request to 127.0.0.1 and answers 502/403/407 itself. The server "
            "then kills itself although it was healthy."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>AssertionError): (?P<msg>res=<Response \[(?P<status>(?!200)\d{3})\]>.*)",
            ),
            pat(
                r"(?P<msg>.*warmup error:.*(?:ProxyError|Tunnel connection failed|407 Proxy Authentication Required).*)",
                status="407",
            ),
            # a request to this host's own loopback or wildcard address written in proxy form
            # (an absolute URL as the target: urllib3/requests log it so only when they send it
            # to a proxy) and refused: whoever sent it, a proxy answered for the server
            pat(
                r'"(?:GET|POST|HEAD|PUT) (?P<target>https?://'
                + _LOOPBACK
                + r'(?::\d{1,5})?/\S{0,300}) HTTP/[\d.]{1,3}" (?P<status>[45]\d\d)\b',
                role=FALLBACK,
                summary="a request to the server's own address went through an HTTP proxy, which answered HTTP {status} ({target})",
            ),
            # requests' raise_for_status on a loopback URL with a proxy's typical status (never
            # the Hub's 403: the URL is this host's), or a ProxyError on a loopback host: the
            # proxy variables cover 127.0.0.1
            pat(
                r"(?P<msg>.*\b(?P<status>403|407|502|504) (?:Client|Server) Error: [\w ]{1,60} for url: https?://"
                + _LOOPBACK
                + r"\b.*)",
            ),
            pat(
                r"(?P<msg>.*host='"
                + _LOOPBACK
                + r"'.{0,300}?(?:ProxyError|Tunnel connection failed|Proxy Authentication Required).*)",
                status="407",
            ),
        ),
        defaults={"msg": "?", "status": "?"},
        enrich=_enrich_warmup,
        examples=(
            under(
                ".../sglang/srt/entrypoints/http_server.py",
                "_execute_server_warmup",
                "AssertionError: res=<Response [502]>, res.text=''",
            ),
            # not from the corpus: the proxy's answer as urllib3's debug log shows it
            'http://proxy.corp:3128 "POST http://127.0.0.1:30000/generate HTTP/1.1" 502 0',
            # not from the corpus: requests refused by a proxy on the way to 127.0.0.1
            "requests.exceptions.ProxyError: HTTPConnectionPool(host='127.0.0.1', port=30000): Max retries exceeded with url: /get_model_info (Caused by ProxyError('Unable to connect to proxy', OSError('Tunnel connection failed: 403 Forbidden')))",
        ),
    ),
    Rule(
        id="port-in-use",
        families=(
            # EADDRINUSE in any library's words (uvicorn, zmq, c10d, gloo, asyncio), any type
            Family((), words=_ADDR_IN_USE),
        ),
        signals=(Signal(("error-level",), words=_ADDR_IN_USE),),
        title="a port SGLang needs is taken",
        summary="port {port} is already in use: {msg}",
        fix="stop what listens there (`ss -ltnp 'sport = :{port}'`) or give this deployment another --port; SGLang also needs --port+1.. and the NCCL / dist-init ports free ",
        doc=(
            "SGLang never checks the HTTP port before loading the model: uvicorn fails to bind "
            'after minutes of loading ("[Errno 98] … address already in use"). The internal '
            "ports (ZMQ, dist-init / torch TCPStore, NCCL) fail earlier (SGLang's own port "
            'checks, torch\'s "EADDRINUSE").'
        ),
        patterns=(
            pat(
                r"(?P<msg>\[(?:Errno|WinError) (?:98|48|10048)\] (?:error while attempting to bind on address \((?P<addr>'[^']*'), (?P<port>\d+)(?:, \d+, \d+)?\): )?(?:[Aa]ddress already in use|[Oo]nly one usage of each socket address))",
            ),
            pat(
                r"(?P<msg>.*The server socket has failed to listen on any local network address\..*?port: (?P<port>\d+).*)",
            ),
            *said("port-not-available", anywhere=True),
            *said(
                "port-in-use", anywhere=True, fields={"ports": r"(?:.*?nccl_port=(?P<port>\d+))?.*"}
            ),
            pat(r"(?P<msg>.*?(?P<port>\d+) is already in use.*)"),
            # c10d's TCPStore (its warning per address; its give-up line names no errno, and
            # errno 13 there is a privileged port, not a taken one), Go's and Node's net errors: a bind/listen on host:port refused with
            # EADDRINUSE ("failed to bind to 0.0.0.0:1034 (errno: 98 - Address already in
            # use)", "listen tcp :8080: bind: address already in use", "listen EADDRINUSE:
            # address already in use :::3000")
            pat(
                r"(?P<msg>.*?\b(?:bind|listen)\b[^:\n]{0,40}?(?:[\w.-]+|\[[0-9a-fA-F:]*\])?:(?P<port>\d{2,5})\b.{0,80}?(?:[Aa]ddress already in use|EADDRINUSE|errno: (?:98|48|10048)\b).*)",
            ),
            pat(
                r"(?P<msg>.*listen EADDRINUSE: address already in use \S*?:(?P<port>\d+).*)",
            ),
            # a server that scans for a free port and finds none (gradio's launch())
            pat(
                r"(?P<msg>.*Cannot find empty port in range: (?P<port>\d+)-\d+.*)",
            ),
        ),
        preflight_rule=None,
        defaults={"port": "?", "msg": "?"},
        examples=(
            # not from the corpus: Go's net package, Node's, gradio's own scan
            "listen tcp 0.0.0.0:8080: bind: address already in use",
            "Error: listen EADDRINUSE: address already in use :::3000",
            "OSError: Cannot find empty port in range: 7861-7861. You can specify a different port by setting the GRADIO_SERVER_PORT environment variable or passing the `server_port` parameter to `launch()`.",
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 25000, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
            # not from the corpus: Windows' WSAEADDRINUSE as Python's asyncio prints it
            "OSError: [Errno 10048] error while attempting to bind on address ('0.0.0.0', 30000): only one usage of each socket address (protocol/network address/port) is normally permitted",
        ),
    ),
    Rule(
        id="dist-init-timeout",
        families=(
            Family(
                (
                    "DistNetworkError",
                    "DistStoreError",
                    "RendezvousConnectionError",
                    "RendezvousTimeoutError",
                ),
                # the master's socket refused a privileged port (EACCES, errno 13): a local
                # permission, not the ranks failing to meet (a taken port is port-in-use's,
                # whose family comes first; an address not on this host, errno 99, is a wrong
                # --dist-init-addr and stays here)
                unless=("Permission denied", "errno: 13", "EACCES"),
            ),
            Family(
                ("TimeoutError", "RuntimeError"),
                words=("TCPStore", "rendezvous", "Socket Timeout", "timed out", "Timed out"),
                frames=code.DISTRIBUTED_PACKAGES,
                both=True,
            ),
        ),
        # torch's C++ store/rendezvous logging its own failure (glog E lines, elastic agent)
        signals=(
            Signal(
                ("c10d", "error-level"),
                words=("timed out", "Timed out", "failed to connect", "Connection refused"),
            ),
            Signal(("c10d",), words=("RendezvousConnectionError", "RendezvousTimeoutError")),
        ),
        title="the ranks could not meet: torch.distributed rendezvous failed",
        summary="torch.distributed could not connect the ranks: {msg}",
        fix="{fixhint}",
        doc=(
            "Before NCCL, the ranks meet over TCP (torch's c10d store at --dist-init-addr, and "
            "Gloo for the CPU group). In a multi-node (or containerised) deployment this fails "
            'when a node cannot reach the address or Gloo picks the wrong interface: "Gloo '
            'connectFullMesh failed", "The client socket has failed to connect to any network '
            'address of (host, port)", "Timed out waiting …ms for send operation".'
        ),
        patterns=(
            pat(r"(?P<msg>.*Gloo connectFullMesh failed.*)"),
            pat(
                r"(?P<msg>.*The client socket has timed out after \d+m?s while trying to connect to \((?P<host>[^,]+), (?P<port>\d+)\).*)",
            ),
            pat(r"(?P<msg>.*connect\(\) timed out\. Original timeout was \d+ ms.*)"),
            pat(
                r"(?P<msg>.*Unable to find address for: (?P<iface>[\w.:-]+).*)",
                fixhint="GLOO_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) names a network interface this host does not have: set it to one `ip -br addr` lists, the same network on every node",
            ),
            pat(
                r"(?P<msg>.*The client socket has failed to connect to any network address of \((?P<host>[^,]+), (?P<port>\d+)\).*)",
            ),
            pat(
                r"(?P<msg>.*(?:gloo|Gloo).*Timed out waiting \d+ms for (?:send|recv) operation to complete.*)",
            ),
            pat(
                _EXC
                + r"(?P<exc>(?:torch\.distributed\.)?DistStoreError|(?:torch\.distributed\.)?DistNetworkError|RuntimeError): (?P<msg>.*(?:Timed out after \d+ seconds waiting for clients|Timed out initializing process group in store based barrier|Socket Timeout|wait timeout after|Connection reset by peer|Connection refused).*)",
            ),
        ),
        defaults={"msg": "?", "host": "", "port": "?"},
        enrich=_enrich_rendezvous,
        examples=(
            "[rank1]:[E528 08:52:46.164 ProcessGroupGloo.cpp:145] Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
            "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (node-0, 47389).",
            # not from the corpus: torch >= 2.2's client timeout
            "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500).",
        ),
    ),
    Rule(
        id="ray-init-failed",
        title="Ray did not come up",
        summary="Ray, which runs the engine's workers, failed before the model loaded: {msg}",
        fix="the Ray runtime under the server is broken: stop stale Ray processes (`ray stop --force`), make sure /tmp (Ray's session dir) is writable and not full, or run without Ray (a single node needs no Ray executor)",
        doc=(
            "When the engine runs its workers under Ray, a Ray runtime that cannot start (a core "
            "worker that cannot register with its raylet, a stale session, a full /tmp) fails "
            "the start before any model code runs."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*(?:Failed to register worker .* to Raylet|Unable to register worker with raylet|RaySystemError|The raylet died|Failed to connect to GCS).*)",
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: Failed to register worker 01000000ffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory",
        ),
    ),
    Rule(
        id="jit-build-failed",
        families=(
            Family(
                ("CalledProcessError", "RuntimeError", "CompilationError"),
                words=("ninja", "nvcc", "hipcc", "Error building extension", "CppCompileError"),
            ),
            # the compiler's exit status, raised by a kernel builder (torch cpp_extension,
            # Triton, setuptools, DeepGEMM/flashinfer JIT)
            Family(
                ("CalledProcessError", "CompileError", "CompilationError", "DistutilsExecError"),
                frames=code.BUILD_PACKAGES,
            ),
            # any exception raised by one of Triton's compiler stages (its own raise site)
            Family((), site_functions=code.TRITON_COMPILE_STAGES),
        ),
        # a C/C++/CUDA compiler's own error line (a missing Python.h, a header, a syntax error)
        signals=(
            Signal(("compiler",), words=("error",)),
            # a build step's compiler command logged at error level (a JIT builder's ninja
            # output re-raised line by line: "ERROR … [1/11] /usr/local/cuda/bin/nvcc …"): the
            # build failed even when the log was cut before the compiler's own error
            Signal(("error-level",), words=("bin/nvcc ", "bin/hipcc "), and_words=("] ",)),
        ),
        title="a kernel compiled at start-up (JIT) failed to build",
        summary="a kernel SGLang compiles at start-up failed to build: {msg}",
        fix="{fixhint}",
        doc=(
            "Some kernels are compiled on the box when first needed (sgl-kernel's JIT, "
            "DeepGEMM, flashinfer, triton). The build needs the CUDA toolkit (nvcc, the CUDA "
            'libraries) that matches torch; without it ninja, nvcc or the linker fail ("ninja '
            'exited with status 1", "/usr/bin/ld: cannot find -lcudart"), often inside SGLang\'s '
            "wrapper for a failed CUDA-graph capture, whose memory advice does not apply."
        ),
        patterns=(
            pat(r"(?P<msg>.*/ld: cannot find -l(?P<lib>[\w.+-]+).*)"),
            pat(
                r"(?P<msg>.*(?:ninja exited with status \d+|ninja: build stopped: subcommand failed).*)",
            ),
            pat(
                r"(?P<msg>.*(?:nvcc fatal|nvcc: not found|hipcc: not found|error: command '\S*(?:nvcc|hipcc)' failed|No CUDA toolkit found|CUDA_HOME environment variable is not set|ROCM_HOME environment variable is not set|collect2: error: ld returned \d+ exit status|Failed to find C compiler|No working C\+\+ compiler found|[Nn]inja build failed|nvrtc: error|NVRTC compilation failed|NVRTC_ERROR_\w+).*)",
            ),
            # a compiler's (or ninja's) exit status in subprocess' words, whoever quotes it:
            # Triton building its launcher (cuda_utils.c / hip_utils.c) with gcc, a JIT's nvcc or
            # ninja, even inside SGLang's notice that it ignored a model module's import error,
            # where the failed build hides the model's module (the first quoted command only)
            pat(
                r"\A(?P<msg>(?>.*?\bCommand '\[?')(?P<compiler>(?:[^'\s]*/)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|hipcc|ninja|icx|icpx)(?:-\d+)?)'[^\]]*\]?'? returned non-zero exit status \d+.*)",
            ),
            # the PTX assembler a JIT (Triton, inductor, DeepGEMM) runs refused: most often a
            # ptxas older than the GPU ("Value 'sm_120' is not defined for option 'gpu-name'")
            pat(
                r"(?P<msg>.*(?:ptxas fatal|ptxas error|PTXASError|PTXAS error|PTX codegen error|ptxas application ptx input).*)",
            ),
        ),
        defaults={"msg": "?", "lib": ""},
        enrich=_enrich_jit,
        examples=(
            example("cuda-graph-capture-failed", error="ninja exited with status 1"),
            "/usr/bin/ld: cannot find -lcudart",
            # not from the corpus: ptxas's own message for a GPU it does not know
            "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'",
            # not from the corpus: Triton without a host compiler (it builds its launcher in C)
            "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
            # not from the corpus: subprocess' words for a JIT's compiler exit status
            "subprocess.CalledProcessError: Command '['/usr/local/cuda/bin/nvcc', '-c', 'kernel.cu', '-o', 'kernel.o']' returned non-zero exit status 2.",
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
        ),
        title="the LoRA setup does not fit this model",
        summary="SGLang's LoRA support failed on this model: {msg}",
        fix="this SGLang release cannot apply LoRA to these layers (MoE experts, for one): drop lora_paths / enable_lora, target other modules (lora_target_modules), or upgrade SGLang",
        doc=(
            "With LoRA adapters SGLang wraps the model's layers with LoRA layers at start-up; "
            "for layer types it does not support (fused MoE experts in some releases) this fails "
            "inside srt/lora/ with an AttributeError or NotImplementedError."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>AttributeError|NotImplementedError|ValueError|KeyError): (?P<msg>.+)",
                context=r"/lora/|lora_manager|get_lora_layer",
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            under(
                ".../sglang/srt/lora/layers.py",
                "__init__",
                "AttributeError: 'FusedMoE' object has no attribute 'w13_weight'",
            ),
            # the family: LoRA and what it cannot do, in another engine's words
            "ValueError: Gemma3ForConditionalGeneration does not support LoRA yet.",
            "NotImplementedError: LoRA adapters with modules_to_save (embed_tokens) aren't supported: the adapter's vocabulary differs from the base model's",
        ),
    ),
    Rule(
        id="host-oom-killed",
        title="the kernel OOM killer killed the server (host RAM)",
        summary="the kernel OOM killer killed {comm} (host memory, not GPU memory)",
        fix=(
            "give the service more host RAM: raise or remove MemoryMax=/MemoryHigh= in the unit, "
            "stop other memory users, check /dev/shm and page cache; loading a TP=8 Kimi K2.6 "
            "maps the checkpoint in every rank (confirm with `dmesg -T | grep -i oom`)"
        ),
        doc=(
            "The kernel's OOM killer (or the unit's cgroup memory limit) sent SIGKILL: systemd logs "
            '"A process of this unit has been killed by the OOM killer." and "Failed with '
            "result 'oom-kill'\"; the kernel logs \"Out of memory: Killed process …\"; SGLang's "
            "parent reports the scheduler rank that died with exit code -9. A bare "
            "SIGKILL (status=9/KILL, exit 137, exit code -9) without those is reported as a hint "
            "only when nothing else explains the failure."
        ),
        patterns=(
            pat(r"A process of this unit has been killed by the OOM killer"),
            pat(r"Failed with result 'oom-kill'"),
            pat(
                r"(?:Memory cgroup )?[Oo]ut of memory: Killed process (?P<pid>\d+) \((?P<comm>[^)]*)\)",
            ),
            pat(r"oom-kill:constraint=\S+.*?task=(?P<comm>[^,]+),pid=(?P<pid>\d+)"),
            pat(
                r"(?P<msg>.*(?:Task was killed due to the node running low on memory|killed due to memory pressure|memory_monitor\.cc.*Killing|Ray's memory monitor|OutOfMemoryError: Task was killed).*)",
                comm="a worker (killed by Ray's memory monitor)",
            ),
            pat(
                r"(?P<msg>.*The actor is dead because its worker process has died.*)",
                role=HINT,
                summary="a Ray worker of the server died without an error of its own; Ray names the OOM killer (SIGKILL for host memory) as the usual cause (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            # the shell's report of a SIGKILLed foreground command: bash's "Killed" on its own
            # line or after a progress bar's \r (no newline: "Loading checkpoint shards:  38%|…|
            # 3/8 [00:02<00:03]Killed"), macOS's "Killed: 9", bash's job line "line 1: 4242
            # Killed  python …", zsh's "zsh: killed  python …"
            pat(
                r"\A(?P<msg>(?:.*[\]|])?\s*Killed(?:: 9)?)\s*\Z",
                role=HINT,
                summary="the shell reports the process was killed (SIGKILL) with no error logged before it: the usual sender is the kernel OOM killer, out of host RAM while loading (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            pat(
                r"\A(?P<msg>.*?(?:\b\d+ Killed|zsh: killed)\s+\S.*)",
                role=HINT,
                summary="the shell reports the process was killed (SIGKILL) with no error logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            pat(
                r"Main process exited, code=killed, status=(?P<sig>9/KILL)",
                role=HINT,
                summary="a process of the service was killed with SIGKILL and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            *said(
                "scheduler-died",
                anywhere=True,
                fields={"code": "-9"},
                role=HINT,
                summary="scheduler rank {rank} was killed with SIGKILL (exit code -9) and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
        ),
        explains=("nccl-error",),
        defaults={"comm": "a process of the service"},
        examples=(
            "sglang-kimi.service: A process of this unit has been killed by the OOM killer.",
            "sglang-kimi.service: Failed with result 'oom-kill'.",
            "Out of memory: Killed process 48213 (sglang::schedul) total-vm:912345678kB, anon-rss:201234567kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:401234kB oom_score_adj:0",
            # not from the corpus: the shell's words for the SIGKILL
            "Loading safetensors checkpoint shards:  41% Completed | 7/17 [00:31<00:44,  3.42s/it]Killed",
            "run.sh: line 3: 48213 Killed                  python3 -m sglang.launch_server --model-path /models/kimi",
        ),
    ),
    Rule(
        id="host-memory-exhausted",
        families=(Family(("MemoryError",)),),
        title="host memory or shared memory ran out (without the OOM killer)",
        summary="the host could not give the server memory: {msg}",
        fix="{fixhint}",
        doc=(
            "A process of the server could not allocate host memory or shared memory: "
            '"OSError: [Errno 12] Cannot allocate memory" (RAM, overcommit or a cgroup limit), '
            'NCCL\'s "posix_fallocate failed: No space left on device" or torch\'s "unable to '
            'write to file </torch_…>" (a /dev/shm too small, typically 64 MB in a container).'
        ),
        patterns=(
            pat(
                r"(?P<msg>.*(?:posix_fallocate failed: No space left on device|Error while creating shared memory segment|unable to (?:write to|open shared memory object <?/torch_)|No space left on device.*(?:/dev/shm|shm)).*)",
                fixhint="/dev/shm is too small for NCCL and torch's shared memory: give it several GB (containers: --shm-size 16g or --ipc=host; systemd: no PrivateTmp= on /dev/shm, or a larger tmpfs), or set NCCL_SHM_DISABLE=1 (slower)",
            ),
            # a shared-memory request larger than the /dev/shm there is (Ray's object store:
            # "System memory request exceeds memory available in /dev/shm"), or the advice to
            # enlarge it that a runtime prints with its failure
            pat(
                r"(?P<msg>.*(?:/dev/shm\b.{0,60}?\b(?:is too small|too small|is full|exceeded|not large enough)|\b(?:exceeds|larger than|more than)\b.{0,60}?\bavailable in /dev/shm|insufficient shared memory|not enough shared memory|shared memory \(?(?:/dev/)?shm\)? (?:is )?too small).*)",
                fixhint="/dev/shm is smaller than the server's shared memory needs (Ray's object store, NCCL, torch): give it several GB (containers: --shm-size 16g or --ipc=host; Kubernetes: an emptyDir with medium: Memory on /dev/shm)",
            ),
            pat(
                _EXC
                + r"(?P<exc>OSError|MemoryError): (?P<msg>\[Errno 12\] Cannot allocate memory.*)",
                fixhint="a process could not get host memory (Errno 12, ENOMEM): free RAM or raise the unit's MemoryMax=/LimitAS=, check vm.overcommit_memory (2 refuses large mappings) and /dev/shm; a TP=8 server starts 8+ processes that each map the checkpoint",
            ),
            # torch's CPU allocator, and Windows' commit limit (a paging file too small for
            # the process's mappings: error 1455)
            pat(
                r"(?P<msg>.*(?:DefaultCPUAllocator: (?:can't allocate memory|not enough memory)|WinError 1455\]|The paging file is too small for this operation to complete|Unable to allocate [\d.]+ [KMGTP]?i?B for an array|unable to mmap \d+ bytes from file .*Cannot allocate memory).*)",
                fixhint="the host could not commit the memory a process asked for: free RAM or raise the unit's MemoryMax=; on Windows enlarge the paging file (the loader maps every checkpoint shard)",
            ),
            pat(
                # the first "Bus error" is kept (atomic group): linear even when no shm word follows
                r"\A(?P<msg>(?>.*?(?:Bus error|SIGBUS)).*(?:shm|shared memory|DataLoader).*)",
                fixhint="a bus error on shared memory: /dev/shm is too small (containers: --shm-size 16g or --ipc=host)",
            ),
        ),
        defaults={"msg": "?", "fixhint": "free host memory or enlarge /dev/shm"},
        explains=("nccl-error",),
        examples=(
            "OSError: [Errno 12] Cannot allocate memory",
            "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device",
            # not from the corpus: torch's CPU allocator refusing
            "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)",
            # not from the corpus: torch's DataLoader worker on a container's 64 MB /dev/shm
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        ),
    ),
    Rule(
        id="cuda-oom",
        families=(
            # torch's OutOfMemoryError from any accelerator's allocator (CUDA, ROCm's HIP,
            # Ascend's NPU, Intel's XPU, Apple's MPS, the cudaMallocAsync backend's "Allocation
            # on device …"), in any wording: the device is named, not the host heap
            Family(
                ("OutOfMemoryError",),
                words=(
                    "CUDA",
                    "cuda",
                    "GPU",
                    "Tried to allocate",
                    "out of memory",
                    "HIP",
                    "NPU",
                    "XPU",
                    "MPS",
                    "device",
                ),
            ),
            # a runtime's own out-of-memory status, raised by any wrapper
            Family((), words=_DEVICE_OOM_CODES),
        ),
        title="out of GPU memory",
        summary="GPU {gpu} ran out of memory (tried to allocate {tried}, {free} free of {total})",
        fix="lower --mem-fraction-static (e.g. 0.85 -> 0.80), --max-running-requests or --chunked-prefill-size; check no other process uses the GPUs (`nvidia-smi`); the EAGLE-3 drafter and its CUDA graphs need memory outside the KV pool",
        doc=(
            'PyTorch could not allocate GPU memory (torch.OutOfMemoryError "CUDA out of memory"), '
            "or SGLang found no room left for the KV cache after the weights (its pool "
            "configurator asks for a larger --mem-fraction-static), or GPUs differ in free memory "
            "because another process holds some."
        ),
        patterns=(
            # torch's caching allocator, whatever the accelerator (CUDA, ROCm's HIP, Ascend's
            # torch_npu, Intel's XPU, Moore Threads' MUSA): "<DEV> out of memory. Tried to …"
            pat(
                r"(?P<dev>CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B)\. (?:GPU|NPU|XPU|Device) (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]?i?B) of which (?P<free>[\d.]+ [KMGT]?i?B) is free",
            ),
            pat(
                r"(?P<dev>CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B) \((?:GPU|NPU|XPU|Device) (?P<gpu>\d+); (?P<total>[\d.]+ [KMGT]?i?B) total capacity; .*?(?P<free>[\d.]+ [KMGT]?i?B) free",
            ),
            pat(
                r"(?P<msg>(?:CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory.*|MPS backend out of memory.*|(?:CUDA|HIP)(?: driver)? error: out of memory.*|(?:cuda|hip)Malloc\w{0,12} failed: out of memory.*|(?:CUBLAS|HIPBLAS|ROCBLAS)_STATUS_ALLOC_FAILED.*|NCCL WARN (?:Cuda|HIP|Hip) failure (?:\d+ )?'out of memory'.*|Allocation on device \d* ?would exceed allowed memory.*|(?:cuda|hip)ErrorMemoryAllocation.*|hipErrorOutOfMemory.*|UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY.*)",
                summary="GPU out of memory: {msg}",
            ),
            # a runtime's "out of memory" status in a native engine's own log words: CUDA's
            # error 2 (cudaErrorMemoryAllocation) as llama.cpp/ggml prints it ("CUDA error 2
            # at ggml-cuda.cu:7949: out of memory"), TurboMind's "CUDA runtime error: out of
            # memory", HIP's the same; NCCL's device buffer refused ("Failed to CUDA calloc
            # 67108864 bytes": the memory fraction left nothing for NCCL)
            pat(
                r"(?P<msg>.*?\b(?:CUDA|HIP|cuda|hip|ROCm)(?: runtime| driver| API)? error(?: \d+)?(?: at \S+)?: out of memory.*)",
                summary="GPU out of memory: {msg}",
            ),
            pat(
                r"(?P<msg>.*\bFailed to (?:CUDA|HIP|Cuda|Hip) (?:calloc|malloc|host alloc|hostAlloc)\w{0,8} (?P<tried>\d+) bytes.*)",
                summary="GPU out of memory (NCCL could not allocate {tried} bytes on the device): {msg}",
                fix="the memory SGLang reserves (--mem-fraction-static) leaves NCCL no room for its buffers: lower --mem-fraction-static (e.g. 0.95 -> 0.88) and check no other process uses the GPUs (`nvidia-smi`)",
                # NCCL's own detail of its "unhandled cuda error": the NCCL error is this OOM
                explains=("nccl-error",),
            ),
            *said(
                "not-enough-memory",
                anywhere=True,
                suffix="not-enough-memory-value",
                summary="no GPU memory left for the KV cache after the weights (mem_fraction_static={mfs})",
                fix="raise --mem-fraction-static (e.g. to 0.88-0.92) so the pool gets room, or free GPU memory: other processes, a smaller {graph_max_bs}, or more GPUs (--tp-size)",
            ),
            pat(
                r"(?P<msg>.*(?:larger than the maximum number of tokens that can be stored in KV cache|No available memory for the cache blocks|Insufficient memory for KV cache).*)",
                summary="after the weights, too little GPU memory is left for the KV cache: {msg}",
                fix="give the KV cache more room (a higher memory fraction), lower the context length, or use more / larger GPUs",
            ),
            *said(
                "kv-no-room",
                anywhere=True,
                summary="the loaded weights (target + drafter) leave no GPU memory for the KV cache at mem_fraction_static={mfs}",
                fix="raise --mem-fraction-static above {suggested} as SGLang says (the drafter's weights count too), or free GPU memory / use more GPUs (--tp-size)",
            ),
            *said(
                "memory-unbalanced",
                anywhere=True,
                summary="GPUs have unequal free memory: {msg}",
                fix="another process uses some of the GPUs: stop it (`nvidia-smi`), then start again",
            ),
        ),
        preflight_rule=None,
        defaults={"gpu": "?", "tried": "?", "free": "?", "total": "?", "msg": "?", "mfs": "?"},
        examples=(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 139.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 138.69 GiB memory in use.",
            example("not-enough-memory")
            + sglang.NEWEST.message("not-enough-memory-value").format(mfs="0.6"),
            # not from the corpus: ROCm's HIP allocator, the same torch message
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.50 GiB. GPU 5 has a total capacity of 191.98 GiB of which 2.12 GiB is free.",
            # not from the corpus: llama.cpp's newer wording, and HIP's through ggml
            "CUDA error: out of memory\n  current device: 1, in function ggml_cuda_pool_malloc at ggml-cuda.cu:402",
            "ggml_cuda_compute_forward: HIP error 2 at ggml-cuda.cu:2311: out of memory",
            # not from the corpus: NCCL's device allocation, the malloc form (alloc.h)
            "misc/alloc.h:134 NCCL WARN Failed to CUDA malloc 33554432 bytes",
        ),
    ),
    Rule(
        id="nccl-error",
        families=(
            Family(("DistBackendError", "NcclError")),
            Family(
                ("RuntimeError",),
                words=(
                    "NCCL error",
                    "NCCL Error",
                    "ncclSystemError",
                    "ncclInternalError",
                    "ncclUnhandledCudaError",
                    "ncclRemoteError",
                ),
            ),
        ),
        title="NCCL / torch.distributed communication failed",
        summary="NCCL communication between the GPUs failed: {msg}",
        fix="check `nvidia-smi topo -m` and the fabric manager (HGX NVSwitch), that no other job uses the GPUs, shared memory (/dev/shm large enough; no PrivateTmp/ProtectSystem blocking it); rerun with Environment=NCCL_DEBUG=INFO for the detail; NCCL_P2P_DISABLE=1 / NCCL_IB_DISABLE=1 narrow it down",
        doc=(
            'NCCL (the GPU collective library) failed during init or a collective: "NCCL error '
            'in: …, unhandled system error", ncclInternalError/ncclSystemError, "NCCL WARN …", '
            'or torch\'s watchdog "caught collective operation timeout". When one rank dies '
            "first, the others print NCCL errors as consequences: the earlier cause wins."
        ),
        patterns=(
            pat(r"NCCL error in: (?P<where>\S+?),? (?P<msg>.*)"),
            pat(
                r"(?P<msg>.*(?:HCCL function error|RCCL error|ProcessGroupHCCL).*)",
            ),
            pat(r"NCCL error: (?P<msg>.*)"),
            pat(
                r"Watchdog caught collective operation timeout: (?P<msg>.*)",
            ),
            pat(r"NCCL WARN (?P<msg>.*)"),
            pat(
                r"(?P<msg>.*\bnccl(?:InternalError|SystemError|UnhandledCudaError|RemoteError|InvalidUsage|InvalidArgument)\b.*)",
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
            "node-3:48213:48390 [3] NCCL WARN socketProgress: Connection closed by remote peer node-5<47642>",
            "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5 ncclUnhandledCudaError: Call to CUDA function failed.",
        ),
    ),
    Rule(
        id="cuda-graph-capture-failed",
        families=(
            # CUDA refused an operation during stream capture, whatever raised it or wraps it
            # (torch.compile's InternalTorchDynamoError/BackendCompilerFailed carry the
            # RuntimeError's words)
            Family((), words=_CAPTURE_REFUSED),
        ),
        signals=(Signal(("cuda",), words=_CAPTURE_REFUSED),),
        title="CUDA graph capture failed",
        summary="CUDA graph capture failed: {msg}",
        fix="lower --mem-fraction-static (e.g. 0.8), or {graph_max_bs} (e.g. 16); last resort {graph_disable} (slow). With EAGLE-3 the draft and verify graphs need extra memory",
        doc=(
            "SGLang captures CUDA graphs (target verify/decode, draft decode/extend) after the KV "
            "cache is allocated; the capture failed, usually out of memory (model_executor/"
            "runner/decode_cuda_graph_runner.py, speculative/eagle_draft_*_cuda_graph_runner.py, "
            "which print SGLang's list of possible solutions)."
        ),
        patterns=(
            *said(
                "cuda-graph-capture-failed",
                anywhere=True,
                summary="CUDA graph capture failed: {error}",
            ),
            *said("prefill-graph-failed", anywhere=True),
        ),
        defaults={"msg": "?", "error": "?"},
        examples=(
            example(
                "cuda-graph-capture-failed",
                error="CUDA error: operation not permitted when stream is capturing",
            ),
        ),
    ),
    Rule(
        id="start-limit-hit",
        title="systemd stopped restarting the service",
        summary="systemd refused to start the unit again: it failed too often in a row (start-limit-hit)",
        fix="find why the earlier starts failed (`deploy logs --classify` on an earlier invocation), fix that, then `systemctl reset-failed <unit>` and start again",
        doc=(
            "Restart= kept restarting a failing service until StartLimitBurst= starts within "
            'StartLimitIntervalSec=; systemd then logs "Start request repeated too quickly." and '
            "gives up (Result=start-limit-hit). The cause is in the earlier invocations."
        ),
        patterns=(
            pat(r"Start request repeated too quickly"),
            pat(r"Failed with result 'start-limit-hit'", gate="ailed"),
        ),
        role=FALLBACK,
        examples=("sglang-kimi.service: Start request repeated too quickly.",),
    ),
    Rule(
        id="startup-timeout",
        title="the start did not finish in time",
        summary="the start did not finish in time; no error in the log (last step reached: {phase})",
        fix="if it was still progressing ({phase}), raise the deadline (profile start_timeout / TimeoutStartSec=): loading Kimi K2.6 and capturing EAGLE-3 CUDA graphs takes many minutes; if it hung, look for a stuck NCCL init (NCCL_DEBUG=INFO) or slow storage",
        doc=(
            "`deploy up` gave up waiting for /health, or systemd's TimeoutStartSec= passed "
            '("start operation timed out. Terminating.", Result=timeout), and the log holds no '
            "error. The summary names the last start-up milestone reached."
        ),
        patterns=(
            pat(r"start(?:-pre|-post)? operation timed out\. Terminating"),
            pat(r"Failed with result 'timeout'"),
        ),
        role=FALLBACK,
        defaults={"phase": "none seen"},
        examples=("sglang-kimi.service: start operation timed out. Terminating.",),
    ),
)
