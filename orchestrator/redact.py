"""Keep secrets out of everything deploy prints: values from the environment file (and the
server's API keys) are replaced by a marker wherever they would appear."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from orchestrator.spec import Spec

MARK = "[redacted]"
# Formats that carry tokens even when we do not know the value (SGLang logs --api-key).
PATTERNS = (
    re.compile(r"(?<=['\"]api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=['\"]admin_api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=api_key=')[^']+"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
)


def secret_values(spec: Spec | None) -> list[str]:
    """The values in the spec's environment file, where this process can read it."""
    if spec is None or not spec.unit.environment_file:
        return []
    try:
        text = Path(spec.unit.environment_file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        value = line.split("=", 1)[1].strip().strip("'\"")
        if len(value) >= 6:
            out.append(value)
    return out


def redactor(values: Iterable[str]) -> Callable[[str], str]:
    vals = sorted(set(values), key=len, reverse=True)

    def redact(text: str) -> str:
        for v in vals:
            text = text.replace(v, MARK)
        for p in PATTERNS:
            text = p.sub(MARK, text)
        return text

    return redact
