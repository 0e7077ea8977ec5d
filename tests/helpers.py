"""Small test helpers: write TOML profiles and fake checkpoint directories, build tracebacks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator import sglang

ROOT = Path(__file__).resolve().parent.parent


def traceback(frames: Sequence[tuple[str, str]], exc: str, *, site: str = "") -> str:
    """A Python traceback as CPython prints it: each (path, function) frame, its path under
    `site` (a site-packages directory, or ""), a source line under each, then `exc`."""
    lines = ["Traceback (most recent call last):"]
    for path, func in frames:
        lines += [f'  File "{site}{path}", line 10, in {func}', "    x()"]
    return "\n".join([*lines, exc])


def say(mid: str, **values: object) -> str:
    """SGLang's words for message `mid`, as the newest release deploy knows prints them
    (orchestrator/sglang: SGLang's texts are typed nowhere else, tests included)."""
    return sglang.NEWEST.message(mid).format(**values)


def lead(mid: str, **values: object) -> str:
    """The text of message `mid` up to its first field not given in `values` (what a test can
    look for in output whose numbers vary)."""
    out = ""
    for lit, name in sglang.NEWEST.message(mid).parts():
        out += lit
        if name is None:
            continue
        if name not in values:
            return out
        out += str(values[name])
    return out


def said(mid: str, **values: object) -> str:
    """The same as the last line of SGLang's traceback: `ValueError: <text>`."""
    return sglang.NEWEST.message(mid).line(**values)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # TOML basic strings share JSON's escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml(data: dict[str, Any]) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            lines += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def write_profile(directory: Path, name: str = "p", **data: Any) -> Path:
    data.setdefault("extends", "kimi-k26-eagle3")
    path = directory / f"{name}.toml"
    path.write_text(toml(data))
    return path


KIMI_K26_CONFIG = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "text_config": {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "kimi_k2",
        "hidden_size": 7168,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "num_hidden_layers": 61,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "n_routed_experts": 384,
        "num_experts_per_tok": 8,
        "num_nextn_predict_layers": 0,
        "vocab_size": 163840,
    },
}

EAGLE3_DRAFTER_CONFIG = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 7168,
    "target_hidden_size": 7168,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 1,
    "intermediate_size": 18432,
    "vocab_size": 163840,
    "draft_vocab_size": 32000,
}


def checkpoint(directory: Path, config: dict[str, Any], weights: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    if weights:
        (directory / "model-00001-of-00001.safetensors").write_bytes(b"\0" * 16)
    return directory
