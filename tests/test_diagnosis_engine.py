"""The diagnosis engine's own guarantees: every rule's examples classify to that rule, no
input line costs more than linear time, and a classification never outlives its budget."""

from __future__ import annotations

import time

import pytest

from orchestrator import journal
from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import classify, classify_text
from orchestrator.diagnosis.model import linear
from orchestrator.journal import JournalEntry

ALL_PATTERNS = [(r.id, p) for r in R.RULES for p in r.patterns] + [("echo", p) for p in R.ECHOES]


@pytest.mark.parametrize("rule", R.RULES, ids=lambda r: r.id)
def test_every_rule_has_examples_that_classify_to_it(rule: R.Rule) -> None:
    assert rule.examples, f"{rule.id} has no example"
    for ex in rule.examples:
        d = classify_text(ex)
        assert d.category == rule.id, f"{rule.id} example classifies as {d.category}: {ex!r}"


def test_a_leading_dot_star_is_anchored() -> None:
    assert linear(r"(?P<msg>.*x.*)") == r"\A(?P<msg>.*x.*)"
    assert linear(r".*?x") == r"\A.*?x"
    assert linear(r"NCCL error: (?P<msg>.*)") == r"NCCL error: (?P<msg>.*)"
    for _, p in ALL_PATTERNS:
        src = p.regex.pattern
        assert not src.startswith((".*", "(?P<msg>.*")), f"unanchored leading .*: {src[:80]}"


def _vocabulary_lines(size: int) -> list[str]:
    """Lines of `size` characters made of the rules' own words: each keyword repeated, and all
    the keywords together (the inputs that make a backtracking pattern explode)."""
    kws = sorted({k for _, p in ALL_PATTERNS for k in p.keywords})
    out = [((k + " ") * (size // (len(k) + 1) + 1))[:size] for k in kws]
    everything = " ".join(kws)
    out.append(((everything + " ") * (size // len(everything) + 1))[:size])
    return out


def test_no_pattern_backtracks_on_long_lines_of_its_own_words() -> None:
    """Every pattern on 8 kB lines of every keyword (the cap): generous bounds for a busy box;
    the cubic pattern of issue 18 took minutes on one such line."""
    lines = _vocabulary_lines(journal.MAX_LINE)
    worst = 0.0
    for _, p in ALL_PATTERNS:
        for line in lines:
            t = time.perf_counter()
            p.regex.search(line)
            for c in p.context:
                c.search(line)
            worst = max(worst, time.perf_counter() - t)
    assert worst < 0.5, worst


def test_48k_lines_are_capped_before_any_pattern_runs() -> None:
    lines = _vocabulary_lines(48 * 1024)
    t = time.perf_counter()
    for line in lines[:: max(1, len(lines) // 40)]:
        classify_text(line, budget_s=None)
    spent = time.perf_counter() - t
    assert spent < 30, spent
    e = JournalEntry(None, "x" * 100_000)
    assert len(e.text) == journal.MAX_LINE


def test_the_budget_ends_in_unknown_with_a_note() -> None:
    text = "\n".join(
        ["Traceback (most recent call last):", "RuntimeError: CUDA out of memory. x"] * 5000
    )
    d = classify_text(text, budget_s=0.0)
    assert d.category == "unknown"
    assert "time budget" in d.summary and d.detail["note"] == "time budget exhausted"
    assert d.evidence
    assert classify_text("\n".join(text.split("\n")[:400])).category == "cuda-oom"


def test_the_budget_holds_for_entries_too() -> None:
    entries = [JournalEntry(None, "RuntimeError: CUDA out of memory. x")] * 200
    assert classify(entries, budget_s=0.0).category == "unknown"
