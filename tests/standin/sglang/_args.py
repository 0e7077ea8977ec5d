"""Stand-in argument parsing and resolution, built from deploy's copy of SGLang's field table.

The parser is built the way SGLang 0.5.23 builds it
(srt/arg_groups/arg_utils.py:add_cli_args_from_dataclass plus the manual
registrations in ServerArgs.add_cli_args), from the flag table of the imitated release
(orchestrator/sglang/args-<version>.json; see _release.py).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from sglang._field_order import POSITIONAL_FIELD_ORDER
from sglang._release import ARGS_JSON as _RELEASE_ARGS
from sglang._release import RELEASE

ARGS_JSON = Path(os.environ.get("STANDIN_ARGS_JSON") or _RELEASE_ARGS)

_TYPES = {"int": int, "float": float, "str": str, "any": str, "dict": str}


def load_fields() -> list[dict[str, Any]]:
    return json.loads(ARGS_JSON.read_text())["fields"]


def _default(field: dict[str, Any]) -> Any:
    d = field["default"]
    return None if d == "<computed>" else d


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sglang serve")
    for f in load_fields():
        if f["no_cli"] or f["flag"].startswith("---"):
            continue
        names = [f["flag"], *f["aliases"]]
        auto_dest = f["flag"].lstrip("-").replace("-", "_")
        kw: dict[str, Any] = {"help": f["help"] or None}
        if f["name"] != auto_dest:
            kw["dest"] = f["name"]
        action = f["action"]
        if action == "argparse.BooleanOptionalAction":
            parser.add_argument(
                *names, action=argparse.BooleanOptionalAction, default=_default(f), **kw
            )
            continue
        if action is not None:  # LoRAPathAction: a list of paths / name=path
            parser.add_argument(*names, nargs="*", type=str, default=_default(f), **kw)
            continue
        if f["type"] == "bool":
            parser.add_argument(*names, action="store_true", default=_default(f), **kw)
            continue
        if f["type"] == "list":
            parser.add_argument(*names, nargs="+", type=str, default=_default(f), **kw)
            continue
        parser.add_argument(
            *names,
            type=_TYPES.get(f["type"], str),
            choices=f["choices"] or None,
            default=_default(f),
            **kw,
        )

    # ServerArgs.add_cli_args' manual registrations (dynamic choices, deprecated flags).
    def add(*names: str, **kw: Any) -> None:
        if not any(n in parser._option_string_actions for n in names):
            parser.add_argument(*names, **kw)

    add("--sampling-backend", type=str, default=None)
    add("--reasoning-parser", type=str, default=None)
    add("--tool-call-parser", type=str, default=None)
    add("--kv-canary-real-data", type=str, default="none", choices=["none", "partial", "all"])
    add("--config", type=str)
    add("--disable-cuda-graph", action="store_true", default=False)
    add("--enable-dp-attention", action="store_true", default=False)
    add(
        "--monokernel-backend",
        dest="enable_amd_monokernel",
        choices=["amd"],
        default=False,
    )
    add("--enable-flashinfer-allreduce-fusion", action="store_true", default=False)
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


# NEXTN is resolved to EAGLE before these checks; NONE is a valid "no speculation".
EAGLE_FAMILY = tuple(a for a in RELEASE.eagle_family if a != "NEXTN")
KNOWN_ALGOS = (*RELEASE.algorithms, "NONE")


def speculative_verdict(ns: argparse.Namespace) -> str | None:
    """Which of SGLang's own speculative checks these flags trip, if any.

    Mirrors srt/arg_groups/speculative_hook.py (0.5.23), in the order it runs:
    returns "unknown_algo", "assert", "typeerror_trtllm_mha", "trtllm_mha_topk",
    "typeerror", "page_size_topk" or None.
    """
    algo = ns.speculative_algorithm
    if algo is None:
        return None
    algo = algo.upper()
    if algo == "NEXTN":
        algo = "EAGLE"
    if algo not in KNOWN_ALGOS:
        return "unknown_algo"
    if algo not in EAGLE_FAMILY:
        return None
    steps, topk, draft = (
        ns.speculative_num_steps,
        ns.speculative_eagle_topk,
        ns.speculative_num_draft_tokens,
    )
    adaptive = RELEASE.adaptive_skips_auto_choice and getattr(ns, "speculative_adaptive", False)
    if not adaptive and steps is None:
        if topk is not None or draft is not None:
            return "assert"
        steps, topk, draft = RELEASE.auto_params(os.environ.get("STANDIN_MODEL_ARCH"))
    backends = {ns.attention_backend, ns.decode_attention_backend, ns.prefill_attention_backend}
    if "trtllm_mha" in backends:
        if topk is None:
            return "typeerror_trtllm_mha"
        if topk > 1:
            return "trtllm_mha_topk"
    if topk is None:
        return "typeerror"
    if (
        topk > 1
        and (ns.page_size or 1) > 1
        and ns.attention_backend not in RELEASE.tree_paged_backends
    ):
        return "page_size_topk"
    return None


def resolved_spec(ns: argparse.Namespace) -> tuple[str | None, int | None, int | None, int | None]:
    """(algorithm, steps, topk, draft_tokens) after SGLang's resolution of an accepted config."""
    algo = ns.speculative_algorithm
    if algo is None:
        return None, None, None, None
    algo = algo.upper()
    if algo == "NEXTN":
        algo = "EAGLE"
    steps, topk, draft = (
        ns.speculative_num_steps,
        ns.speculative_eagle_topk,
        ns.speculative_num_draft_tokens,
    )
    if steps is None:
        steps, topk, draft = RELEASE.auto_params(os.environ.get("STANDIN_MODEL_ARCH"))
    if topk == 1 and draft != steps + 1:
        draft = steps + 1
    return algo, steps, topk, draft


def resolved_dict(ns: argparse.Namespace) -> dict[str, Any]:
    """`ServerArgs.resolved_dict()`-shaped view of the parsed flags (field order as SGLang's)."""
    values = vars(ns)
    fields = {f["name"]: f for f in load_fields() if not f["name"].startswith("_")}
    order = [n for n in POSITIONAL_FIELD_ORDER if n in fields or n in values]
    order += sorted(n for n in fields if n not in order)
    out: dict[str, Any] = {}
    for name in order:
        if name in values:
            out[name] = values[name]
        else:
            out[name] = _default(fields[name])
    algo, steps, topk, draft = resolved_spec(ns)
    out["speculative_algorithm"] = algo
    out["speculative_num_steps"] = steps
    out["speculative_eagle_topk"] = topk
    out["speculative_num_draft_tokens"] = draft
    if (
        algo is not None
        and out.get("speculative_draft_model_revision") is None
        and out.get("speculative_draft_model_path") is not None
    ):
        out["speculative_draft_model_revision"] = "main"
    if out.get("tokenizer_path") is None:
        out["tokenizer_path"] = out.get("model_path")
    if out.get("served_model_name") is None:
        out["served_model_name"] = out.get("model_path")
    if out.get("mem_fraction_static") is None:
        out["mem_fraction_static"] = 0.835
    if out.get("chunked_prefill_size") is None:
        out["chunked_prefill_size"] = 16384
    if out.get("page_size") is None:
        out["page_size"] = 1
    if out.get("random_seed") is None:
        out["random_seed"] = 1
    out.pop("config", None)
    out["enable_dp_attention"] = (out.get("attn_dp_size") or 1) > 1
    return out
