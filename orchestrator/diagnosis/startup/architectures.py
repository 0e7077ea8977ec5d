"""Start-up rules, as data: a model whose architecture or config the engine or transformers does
not know.

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

import re

from orchestrator import sglang
from orchestrator.diagnosis.model import (
    _EXC,
    Family,
    Rule,
    example,
    pat,
    said,
    under,
)
from orchestrator.sglang import code

__all__ = ["RULES"]

RULES: tuple[Rule, ...] = (
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
                    # vLLM's registry: "X has no vLLM implementation and the Transformers
                    # implementation is not compatible with vLLM"
                    "has no vLLM implementation",
                    # TGI's fallback to transformers' AutoModel, taken only for a model type it has
                    # no implementation of ("awq quantization is not supported for AutoModel")
                    "is not supported for AutoModel",
                    # SGLang's own wording, from every known release
                    *dict.fromkeys(m.keyword() for m in sglang.all_messages("arch-unsupported")),
                ),
                frames=(
                    "transformers/models/auto/",
                    *code.MODEL_REGISTRY,
                ),
            ),
            # the engine reading its usual fields off a config class that does not have them
            # (a remote-code multimodal config nesting its text model's settings): the engine
            # does not implement this architecture's config
            Family(
                ("AttributeError",),
                words=("Config' object has no attribute",),
                # (Python's "Did you mean: 'layer_norm_eps'?" names a field the config has under
                # another name; a vision tower's own sub-config without a field the engine's
                # code reads ("'PixtralVisionConfig' object has no attribute
                # 'spatial_merge_size'") and a rope field that transformers 5 moved under
                # `rope_parameters` ("'Qwen2Config' object has no attribute 'rope_theta'") are
                # the same: the model code and the config are of different releases, not an
                # architecture the engine lacks)
                unless=(
                    *code.ENGINE_CONFIG_CLASSES,
                    "Did you mean",
                    "VisionConfig' object",
                    "attribute 'rope_theta'",
                    "attribute 'rope_scaling'",
                ),
                summary="the engine does not read this model's config (an architecture it does not implement): {exc}: {msg}",
            ),
            # anything that goes wrong in SGLang's generic Transformers backend, which SGLang
            # falls back to only for an architecture it does not implement (any exception, any
            # words: a missing attribute, a shape, a kwarg)
            Family(
                (),
                words=code.TRANSFORMERS_FALLBACK_CLASSES,
                frames=code.TRANSFORMERS_FALLBACK,
                summary="SGLang has no implementation of this architecture and its generic Transformers backend failed: {exc}: {msg}",
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
            # transformers' GGUF loader for an architecture it cannot convert ("Architecture
            # gemma2 not supported"), and vLLM's Transformers backend for a class transformers
            # does not register ("'X' is not a registered model in the Transformers library")
            pat(
                r"(?P<msg>.*?\bArchitecture (?P<mtype>[\w.-]{1,80}) not supported\b.*|.*?'(?P<architectures>\w{1,120})' is not a registered model in the Transformers library\b.*)",
            ),
            # vLLM's GGUF loader for an architecture it cannot map ("GGUF model with
            # architecture olmo2 is not supported yet")
            pat(
                r"(?P<msg>.*?\bGGUF model with architecture (?P<mtype>[\w.-]{1,80}) is not supported\b.*)",
                fixhint="this engine cannot load GGUF checkpoints of architecture {mtype}: use the model's safetensors checkpoint (or another quantisation of it), or an engine release whose GGUF loader supports it",
            ),
            # vLLM's registry in a logger's words rather than an exception's ("Error
            # initializing vLLM engine: X has no vLLM implementation and the Transformers
            # implementation is not compatible with vLLM")
            pat(
                r"(?P<msg>.*?\b(?P<architectures>\w{1,120}) has no vLLM implementation\b.*)",
                fixhint="vLLM has no implementation of {architectures} and cannot run it through transformers: check config.json's architectures (a fine-tune may name a base class such as Qwen2_5_VLModel instead of its ForConditionalGeneration class), or upgrade vLLM to a release that implements it",
            ),
            pat(
                r"(?P<msg>.*has model type `(?P<mtype>[\w.-]+)` but Transformers does not recognize this architecture.*)",
                fixhint="the installed transformers does not know model_type `{mtype}`: upgrade transformers (and SGLang) in the unit's venv to a release that supports it, or set trust_remote_code = true in [server] if the checkpoint ships its own code",
            ),
            # the same message's advice, on a line of its own when the paste cut its first line
            # (transformers prints it only for a model_type it does not know)
            pat(
                r"(?P<msg>.*?\bthe checkpoint is very new, then there may not be a release version that supports this model yet\b.*)",
                fixhint="the installed transformers does not know the checkpoint's model_type: upgrade transformers (and the engine) in the unit's venv to a release that supports it, or set trust_remote_code = true in [server] if the checkpoint ships its own code",
            ),
            pat(
                r"(?P<msg>.*(?:requires you to execute (?:execute )?(?:some |the (?:configuration |model |tokenizer |processor |image processor |feature extractor )?(?:file |code ))?(?:code )?in that repo|contains custom code which must be executed|set the option `trust_remote_code=True`|`trust_remote_code=True` to (?:remove this error|allow custom code)|Please pass the argument `trust_remote_code=True`|consider setting `trust_remote_code=True`).*)",
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
            # a runtime's own check of the config's model_type against the model code it has
            # (mlx-lm / mlx-vlm: "Model type qwen3_5 not supported."), any wrapper around it
            pat(
                r"(?<![\w-])(?P<msg>[Mm]odel type:? ['`\"]?(?P<mtype>[\w.-]{1,80})['`\"]? (?:is )?not supported\b.*)",
                fixhint="this runtime has no model code for model_type {mtype}: upgrade it (mlx-lm / mlx-vlm, transformers, SGLang) to a release that supports it, or use a checkpoint of a supported architecture",
            ),
            # the same found by importing the model's module by its model_type (mlx-lm / mlx-vlm,
            # other runtimes' registries: importlib.import_module(f"<pkg>.models.{model_type}")):
            # the module is missing because the release has no code for that architecture, not
            # because a package is missing (the import error it raises is explained)
            pat(
                _EXC
                + r"(?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<pkg>[\w.]{1,200})\.models\.(?P<mtype>\w{1,80})')",
                context=r"\bimport_module\(",
                explains=("python-import-error",),
                fixhint="{pkg} has no model code for model_type {mtype}: upgrade {pkg} to a release that supports it, or use a checkpoint of a supported architecture",
            ),
            # a tokenizer class this transformers does not have (older than the model)
            pat(
                r"(?P<msg>Tokenizer class (?P<mtype>\w+) does not exist or is not currently imported.*)",
                fixhint="the installed transformers has no tokenizer class {mtype}: upgrade transformers (and SGLang) in the unit's venv to a release that has it, or set trust_remote_code = true if the checkpoint ships its own tokenizer code",
            ),
            # the same cut inside its first sentence (a paste, a terminal width): the list of
            # architectures and "are not supported" say it
            *(
                pat(
                    r"(?P<msg>.*?"
                    + re.escape(m.literals()[0])
                    + r"(?P<architectures>\[[^\]\n]{1,400}\])"
                    + re.escape(m.literals()[1][: m.literals()[1].index(" for ")])
                    + r"\b.*)",
                    fixhint="SGLang has no implementation of {architectures}: upgrade SGLang to a release that lists it, or check config.json's architectures (a vision-language checkpoint may need its text-only variant)",
                )
                for m in sglang.all_messages("arch-unsupported")
                if " for " in m.literals()[1]
            ),
            *said(
                "arch-unsupported",
                anywhere=True,
                head=True,
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
            # not from the corpus: mlx-lm's own check, and its registry's import of the module
            "ValueError: Model type deepseek_v4 not supported.",
            "Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/mlx_lm/utils.py", line 70, in _get_classes\n'
            '    arch = importlib.import_module(f"mlx_lm.models.{model_type}")\n'
            '  File "/usr/lib/python3.12/importlib/__init__.py", line 90, in import_module\n'
            "    return _bootstrap._gcd_import(name[level:], package, level)\n"
            "ModuleNotFoundError: No module named 'mlx_lm.models.deepseek_v4'",
            # llama.cpp's loader (and what embeds it) on an architecture it does not know
            "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen3next'",
            # not from the corpus: SGLang's generic Transformers backend, taken for an
            # architecture SGLang does not implement, failing on the model's own code
            under(
                f".../{code.TRANSFORMERS_FALLBACK[0]}.py",
                "forward",
                "TypeError: forward() got an unexpected keyword argument 'position_ids'",
            ),
            # SGLang's words logged by a wrapper, without the exception's name
            "[2026-12-03 10:11:12] "
            + example(
                "arch-unsupported",
                architectures="['MiniMaxM3ForCausalLM']",
                supported="dict_keys(['LlamaForCausalLM'])",
            ),
        ),
    ),
)
