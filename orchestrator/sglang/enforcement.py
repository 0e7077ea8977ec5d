"""Where SGLang enforces what a preflight rule checks: its source file and function, for the
rule tables in docs/preflight.md. The newest release's places; older releases in parentheses."""

from __future__ import annotations

WHERE: dict[str, str] = {
    "spec-params-need-num-steps": "a bare `assert` in _handle_eagle_family (arg_groups/speculative_hook.py; server_args.py _handle_speculative_decoding in older releases)",
    "spec-num-steps-needs-topk": "arg_groups/speculative_hook.py: a TypeError comparing the unset top-k with an int",
    "spec-topk1-draft-tokens": "arg_groups/speculative_hook.py: replaced with a warning",
    "spec-tree-page-size-backend": "arg_groups/speculative_hook.py: ValueError (spec-tree-page-size)",
    "spec-trtllm-mha-topk": "arg_groups/speculative_hook.py: ValueError (spec-trtllm-mha-topk)",
    "spec-rejection-sampling": "arg_groups/speculative_hook.py: NotImplementedError / ValueError",
    "spec-dp-attention": "arg_groups/speculative_hook.py: ValueError (spec-standalone-dp, spec-ngram-dp)",
    "spec-ngram-page-size": "arg_groups/speculative_hook.py _handle_ngram: ValueError",
    "trtllm-mla-needs-blackwell": "arg_groups/overrides.py: ValueError (trtllm-mla-blackwell)",
}


def enforced_at(rule_id: str) -> str:
    """Where SGLang enforces rule `rule_id` (KeyError for a rule SGLang does not enforce here)."""
    return WHERE[rule_id]
