"""SGLang's HTTP API as deploy reads it: the endpoint paths, the request extensions bench sends,
and the parsing of the answers (data and pure functions; standard library only).

The transport (bounded reads, stdlib or httpx client) is `orchestrator.serverapi`; this module
says what the server answers and what it means. Read off srt/entrypoints/http_server.py and
srt/entrypoints/openai/ of the releases in this package; the same in every known release.
"""

from __future__ import annotations

from typing import Any

HEALTH = "/health"  # 200 once a 1-token generation went through; 503 while loading or hung
SERVER_INFO = "/server_info"  # ServerArgs fields + internal_states (one dict per DP rank)
MODELS = "/v1/models"  # OpenAI's model list: data[0].id is the served model name
COMPLETIONS = "/v1/completions"
CHAT_COMPLETIONS = "/v1/chat/completions"

# What `deploy status` and `deploy bench` show of /server_info (ServerArgs field names).
SERVER_FACT_KEYS = (
    "model_path",
    "served_model_name",
    "tp_size",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "version",
)
# Per DP rank in /server_info's internal_states: the scheduler's running average.
ACCEPT_LENGTH = "avg_spec_accept_length"

# Request extensions of SGLang's OpenAI API that bench sends: generate exactly max_tokens
# (ignore_eos) and report the speculative verify count per request (sglext.spec_tokens_details).
REQUEST_EXTRAS: dict[str, Any] = {"ignore_eos": True, "return_spec_tokens_details": True}


def accept_length(info: Any) -> float | None:
    """The average speculative accept length of a /server_info answer, over its DP ranks;
    None when no rank reports one (not speculative, or nothing decoded yet)."""
    states = info.get("internal_states") if isinstance(info, dict) else None
    if not isinstance(states, list):
        return None
    raw = [s.get(ACCEPT_LENGTH) for s in states if isinstance(s, dict)]
    lens: list[float] = [x for x in raw if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return round(sum(lens) / len(lens), 3) if lens else None


def server_facts(info: Any) -> dict[str, Any]:
    """What a /server_info answer says that deploy shows: SERVER_FACT_KEYS that are set, and
    the accept length (under ACCEPT_LENGTH). {} for anything but a JSON object."""
    if not isinstance(info, dict):
        return {}
    facts = {k: info[k] for k in SERVER_FACT_KEYS if info.get(k) is not None}
    acc = accept_length(info)
    if acc is not None:
        facts[ACCEPT_LENGTH] = acc
    return facts


def model_id(models: Any) -> str | None:
    """The first model's id in a /v1/models answer; None when it names none."""
    data = models.get("data") if isinstance(models, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        got = data[0].get("id")
        return str(got) if got is not None else None
    return None


def spec_verify_ct(chunk: dict[str, Any]) -> int | None:
    """The speculative verify count a stream chunk reports (sglext.spec_tokens_details), if any."""
    details = (chunk.get("sglext") or {}).get("spec_tokens_details") or {}
    ct = details.get("spec_verify_ct")
    return ct if isinstance(ct, int) else None
