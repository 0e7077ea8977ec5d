"""Secrets deploy can keep out of what it prints: long enough to be told from ordinary words.

A value of a secret-named variable in the environment file (SGLANG_API_KEY, HF_TOKEN, the
profile's api_key_env, ...) or the password of a URL there (HTTPS_PROXY=http://u:pw@host) is
redacted from everything deploy prints (orchestrator/redact.py). One of a few characters
would be guessable, and redacting it would blank out every "abc" in a log, so preflight
refuses it instead. The file is read with redact's reading of environment files.
"""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator import redact
from orchestrator.preflight.rules.base import Context, Finding, Rule


def short_secrets(ctx: Context) -> Iterator[Finding]:
    unit = ctx.spec.unit
    if not unit.environment_file:
        return
    names = {n for n in (unit.api_key_env, unit.admin_api_key_env) if n}
    for name, value in redact.file_items(unit.environment_file):
        short = []
        if (name in names or redact.SECRET_NAME.search(name)) and len(
            value
        ) < redact.MIN_SECRET_LEN:
            short.append(f"the value of {name}")
        short += [
            f"the password of the URL in {name}"
            for s in redact.url_secrets(value)
            if len(s) < redact.MIN_SECRET_LEN
        ]
        for what in short:
            yield Finding(
                "secret-too-short",
                "error",
                ("unit.environment_file",),
                f"{what} in {unit.environment_file} is shorter than {redact.MIN_SECRET_LEN} "
                "characters: too short to be a secret, and too short for deploy to keep out "
                "of what it prints without blanking ordinary words",
                f"use a random value of at least {redact.MIN_SECRET_LEN} characters (e.g. "
                "`openssl rand -hex 24`) for it",
            )


RULES: tuple[Rule, ...] = (
    Rule(
        "secret-too-short",
        f"a secret-named value (or a URL's password) in unit.environment_file has at least {redact.MIN_SECRET_LEN} characters.",
        "SGLang takes any --api-key; deploy redacts secrets from its output and cannot do so for a few letters",
        short_secrets,
        "secrets",
    ),
)
