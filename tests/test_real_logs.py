"""The diagnosis on real logs: every failure log users posted that tests/logs/real keeps.

Prints the share the classifier names right (the figure issue 11 asks for) and fails under
95 %. Fix texts must speak of the log's box: no reference-box facts (B200, sm_100, SGLang
0.5.23) unless the log itself mentions them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.diagnose import classify_text

REAL = Path(__file__).resolve().parent / "logs" / "real"
INDEX = json.loads((REAL / "index.json").read_text())
TARGET = 0.95
REFERENCE_BOX = ("B200", "sm_100", "0.5.23")


def _text(entry: dict[str, object]) -> str:
    return (REAL / str(entry["file"])).read_text(errors="replace")


def test_the_corpus_is_whole() -> None:
    assert len([e for e in INDEX if not e["set_aside"]]) >= 40
    assert len([e for e in INDEX if e["set_aside"]]) >= 4
    for e in INDEX:
        assert (REAL / e["file"]).is_file(), e["file"]
        assert str(e["url"]).startswith("https://"), e["id"]
        assert e["key_line"] in _text(e).splitlines() or e["key_line"] in _text(e), e["id"]
    assert len({e["id"] for e in INDEX}) == len(INDEX)


def test_the_classifier_names_the_right_cause_on_real_logs() -> None:
    wrong: list[str] = []
    by_family: Counter[str] = Counter()
    right_by_family: Counter[str] = Counter()
    tuned = [e for e in INDEX if not e["set_aside"]]
    for e in INDEX:
        d = classify_text(_text(e))
        ok = d.category == e["category"]
        for f in e["families"] or ["-"]:
            by_family[f] += 1
            right_by_family[f] += ok
        if not ok:
            wrong.append(f"{e['id']}: want {e['category']}, got {d.category} ({d.summary[:120]})")
    right = sum(1 for e in tuned if classify_text(_text(e)).category == e["category"])
    aside = [e for e in INDEX if e["set_aside"]]
    aside_right = sum(1 for e in aside if classify_text(_text(e)).category == e["category"])
    share = right / len(tuned)
    print(
        f"\nreal-log corpus: {right}/{len(tuned)} = {share:.1%} named right "
        f"(set aside before tuning: {aside_right}/{len(aside)})"
    )
    for f in sorted(by_family):
        print(f"  {f:24} {right_by_family[f]}/{by_family[f]}")
    for w in wrong:
        print("  WRONG " + w)
    assert share >= TARGET, wrong
    # The set-aside logs were added after the rules were final and never tuned against; their
    # figure is reported, and the whole corpus (them included) must stay above the target.
    everything = (right + aside_right) / len(INDEX)
    print(f"  with the set-aside logs: {right + aside_right}/{len(INDEX)} = {everything:.1%}")
    assert everything >= TARGET, wrong


@pytest.mark.parametrize("entry", INDEX, ids=[e["id"] for e in INDEX])
def test_fix_speaks_of_the_logs_box(entry: dict[str, object]) -> None:
    text = _text(entry)
    d = classify_text(text)
    for fact in REFERENCE_BOX:
        if fact in d.fix:
            assert fact in text, f"the fix names {fact}, which the log never mentions: {d.fix}"


def test_unknown_shows_the_likeliest_cause_lines_first() -> None:
    log = "\n".join(
        [
            "[2026-12-02 14:00:00] INFO: starting",
            "[2026-12-02 14:00:01] ERROR: the frobnicator could not be frobbed",
            "Traceback (most recent call last):",
            '  File "/x/frob.py", line 3, in frob',
            "    raise FrobError('no frob')",
            "FrobError: no frob",
            "[2026-12-02 14:00:02] something else failed later",
            "[2026-12-02 14:00:03] Exiting with status 1",
        ]
    )
    d = classify_text(log)
    assert d.category == "unknown"
    assert d.evidence[0].text == "FrobError: no frob"  # the root exception
    assert d.evidence[1].text.strip() == 'File "/x/frob.py", line 3, in frob'  # its frame
    assert "the frobnicator could not be frobbed" in d.evidence[2].text  # first ERROR line
    assert "FrobError: no frob" in d.summary
