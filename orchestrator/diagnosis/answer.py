"""The classifier's answer (`Diagnosis`) and the shape of the traceback lines that both the
matcher (`diagnosis.engine`) and the `unknown` answer (`diagnosis.unknown`) read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from orchestrator.diagnosis.journal import JournalEntry
from orchestrator.diagnosis.model import CAUSE, EXC_MODULE_CLASS

__all__ = ["MAX_EVIDENCE", "Diagnosis"]

MAX_EVIDENCE = 8
_TRACEBACK = "Traceback (most recent call last)"
_CONTEXT_WINDOW = 120  # lines searched back for the traceback header
# The last line of a traceback: "ValueError: ...", "torch.OutOfMemoryError: ...", "AssertionError".
_EXC_LINE = re.compile(
    r"^\s*(?:(?:[\w.]+\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|Exception)\b"
    + r"|"
    + EXC_MODULE_CLASS
    + r":)"
)


@dataclass(frozen=True)
class Diagnosis:
    category: str  # a rule id, or "unknown"
    summary: str  # one line
    evidence: list[JournalEntry]  # the cause line(s) and key traceback lines, <= 8
    fix: str
    doc: str  # what the category means (also in docs/troubleshooting.md)
    title: str = ""
    detail: dict[str, str] = field(default_factory=dict)  # what the extractor pulled out
    preflight_rule: str | None = None  # the preflight rule that catches this before a start
    also: list[str] = field(default_factory=list)  # other categories seen (later or weaker)
    role: str = CAUSE  # cause | fallback | hint | reading (unknown, with a lead) | unknown

    @property
    def known(self) -> bool:
        return self.category != "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "title": self.title,
            "summary": self.summary,
            "fix": self.fix,
            "evidence": [e.to_json() for e in self.evidence],
            "detail": dict(self.detail),
            "preflight_rule": self.preflight_rule,
            "also": list(self.also),
            "role": self.role,
            "doc": self.doc,
            "docs": f"docs/troubleshooting.md#{self.category}",
        }

    def render_text(self) -> str:
        lines = [f"cause: {self.category}: {self.summary}"]
        if self.evidence:
            lines.append("evidence:")
            for e in self.evidence:
                msg = e.message if len(e.message) <= 400 else e.message[:397] + "..."
                lines.append(f"  {e.stamp()}  {msg}")
        lines.append(f"fix: {self.fix}")
        if self.preflight_rule:
            lines.append(f"preflight: `{self.preflight_rule}` catches this before a start")
        if self.also:
            lines.append("also seen: " + ", ".join(self.also))
        lines.append(f"see: docs/troubleshooting.md#{self.category}")
        return "\n".join(lines)
