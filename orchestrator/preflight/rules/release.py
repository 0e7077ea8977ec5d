"""Which SGLang release the profile is judged against (orchestrator/sglang/versions.py)."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.preflight.rules.base import Context, Finding, Rule


def version_known(ctx: Context) -> Iterator[Finding]:
    choice = ctx.spec.sglang
    if choice.warning:
        yield Finding(
            "sglang-version-unknown",
            "warning",
            ("[sglang] version",),
            choice.warning + f" (version from {choice.source})",
            f"install a release deploy knows ({', '.join(ctx.known_versions)}), or teach deploy "
            "this one: docs/sglang-releases.md",
        )


def flag_deprecated(ctx: Context) -> Iterator[Finding]:
    for name, text in ctx.spec.deprecations.items():
        yield Finding(
            "sglang-flag-deprecated",
            "warning",
            (f"server.{name}",),
            text,
            "switch to the replacement before the release that removes the flag; deploy renders "
            "what SGLang makes of it",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "sglang-version-unknown",
        "The SGLang release the profile runs is one deploy knows (else the nearest known one is "
        "used, with this warning).",
        "the version installed for unit.python (site-packages metadata), else [sglang] version",
        version_known,
        "sglang",
    ),
    Rule(
        "sglang-flag-deprecated",
        "A [server] field SGLang keeps only as a deprecated flag: SGLang warns and translates it "
        "(deploy renders the translation); only a retired flag with an error message refuses.",
        "the release's flag table (its Deprecated*Action registrations)",
        flag_deprecated,
        "sglang",
    ),
)
