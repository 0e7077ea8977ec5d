"""The diagnosis on real logs: every failure log users posted that tests/logs/real keeps.

The corpus has two parts, gated apart (issue 18, item 5):

- the tuned part (batch 0, on which the rules were written, and batches A and B, each published
  for tuning after its first-seen scoring): fails under 95 % named right;
- the held-out part (batch C, never shown to whoever tunes the rules): fails if it has fewer
  than MIN_HELD_OUT logs, under a quarter of the corpus or under MIN_HELD_OUT_SGLANG_STARTUP
  SGLang start-up logs; fails if it has no first-seen row in the ledger (a held-out batch that
  nobody measured is a process error); fails over 5 % wrong category, or if today's engine names
  fewer logs right than the first-seen row did (no regression below the first-seen figure).
  Whether the first-seen figure meets issue 18's bar (85 % right, 90 % on the batch's SGLang
  start-up logs) is printed, not gated: CI has to pass before an engine can reach the bar, and
  the honest figure is the first-seen one, which later tuning cannot change.

Both figures are printed (`pytest -s`). The honest figures are the first-seen rows of
tests/logs/real/ledger.json, not these. Fix texts must speak of the log's box: no
reference-box facts (B200, sm_100, SGLang 0.5.23) unless the log itself mentions them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from orchestrator.diagnose import classify_text
from tests.logs.real.score import (
    Score,
    batch_of,
    is_held_out,
    load_index,
    load_ledger,
    outcome,
    render_table,
    score,
)

REAL = Path(__file__).resolve().parent / "logs" / "real"
INDEX = load_index()
TARGET = 0.95  # the tuned part (batch 0 and the published batches A and B)
HELD_OUT_BATCH = "C"  # the batch never shown to whoever tunes the rules
HELD_OUT_RIGHT = 0.85  # issue 18, done-when: first-seen accuracy on the held-out batch
HELD_OUT_WRONG = 0.05  # issue 18, done-when: at most 5 % given a wrong category
HELD_OUT_SGLANG_STARTUP = 0.90  # issue 18, done-when: on the batch's SGLang start-up logs
MIN_HELD_OUT = 25  # issue 18, item 5: the held-out part can never be empty or token-sized
MIN_HELD_OUT_SGLANG_STARTUP = (
    12  # enough SGLang start-up logs for the 90 % figure to mean something
)
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
    # One log per thread: a thread already used cannot come back in a later batch.
    assert len({str(e["url"]).split("#")[0] for e in INDEX}) == len(INDEX)


def test_every_batch_after_the_first_is_recorded_whole() -> None:
    """Issue 18's batches carry what the held-out discipline needs, per log."""
    for e in INDEX:
        batch = batch_of(e)
        if batch == "0":
            assert not is_held_out(e), f"{e['id']}: the tuned corpus cannot be held out"
            continue
        assert isinstance(e.get("sglang_startup"), bool), f"{e['id']}: sglang_startup missing"
        assert e.get("trimmed"), f"{e['id']}: say what was trimmed (or 'none')"
        assert is_held_out(e) == (batch == HELD_OUT_BATCH), (
            f"{e['id']}: only batch {HELD_OUT_BATCH} is held out"
        )
        if is_held_out(e):
            assert "first_seen" not in e, f"{e['id']}: a held-out log has no tuned answer"
        else:
            # A published batch keeps the answer its first-seen scoring gave, per log.
            fs = e["first_seen"]
            assert fs["result"] == outcome(str(e["category"]), str(fs["category"])), e["id"]


def test_at_least_a_quarter_of_the_corpus_was_never_tuned_on() -> None:
    held_out = [e for e in INDEX if is_held_out(e)]
    assert len(held_out) >= MIN_HELD_OUT, f"only {len(held_out)} held-out logs"
    assert len(held_out) / len(INDEX) >= 0.25, f"{len(held_out)}/{len(INDEX)} held out"
    startup = [e for e in held_out if e["sglang_startup"]]
    assert len(startup) >= MIN_HELD_OUT_SGLANG_STARTUP, (
        f"only {len(startup)} SGLang start-up logs in the held-out batch"
    )


def test_the_ledger_is_append_only_and_adds_up() -> None:
    rows = load_ledger()
    batches = {batch_of(e) for e in INDEX}
    for r in rows:
        assert r["batch"] in batches, r
        assert r["right"] + r["unknown"] + r["wrong"] == r["logs"], r
        assert r["logs"] == len([e for e in INDEX if batch_of(e) == r["batch"]]), r
        assert r["engine"] and r["date"], r
    for b in batches - {"0"}:
        first = [r for r in rows if r["batch"] == b and r["first_seen"]]
        assert len(first) <= 1, f"batch {b} was seen first more than once"
    # Each published batch was scored first-seen before it was published for tuning; its row
    # must agree with the per-log answers recorded in the index from that scoring.
    for b in sorted({batch_of(e) for e in INDEX if "first_seen" in e}):
        (row,) = [r for r in rows if r["batch"] == b and r["first_seen"]]
        logs = [e for e in INDEX if batch_of(e) == b]
        for result in ("right", "unknown", "wrong"):
            assert row[result] == sum(e["first_seen"]["result"] == result for e in logs), (
                b,
                result,
            )
    # The README quotes the ledger as the score script renders it.
    assert render_table(rows) in (REAL / "README.md").read_text()


def test_outcome_counts_unknown_and_wrong_apart() -> None:
    assert outcome("cuda-oom", "cuda-oom") == "right"
    assert outcome("cuda-oom", "unknown") == "unknown"
    assert outcome("cuda-oom", "nccl-error") == "wrong"
    assert outcome("unknown", "unknown") == "right"  # no category exists for the cause
    assert outcome("unknown", "cuda-oom") == "wrong"  # a guess where none fits is wrong


def _print_misses(title: str, s: Score) -> None:
    print(
        f"\n{title}: {s.right}/{s.logs} = {s.share(s.right):.1%} right, "
        f"{s.unknown} unknown, {s.wrong} wrong ({s.share(s.wrong):.1%}); "
        f"SGLang start-up {s.sglang_startup_right}/{s.sglang_startup_logs}"
    )
    for m in s.misses:
        print("  " + m)


def test_the_classifier_names_the_right_cause_on_real_logs() -> None:
    """The tuned part (batch 0 and the published batches A, B): the bar it was tuned to, 95 %."""
    by_family: Counter[str] = Counter()
    right_by_family: Counter[str] = Counter()
    tuned = [e for e in INDEX if not is_held_out(e)]
    s = score(tuned)
    for e in tuned:
        ok = s.answers[str(e["id"])] == e["category"]
        for f in e["families"] or ["-"]:
            by_family[f] += 1
            right_by_family[f] += ok
    batches = ", ".join(sorted({batch_of(e) for e in tuned}))
    _print_misses(f"real-log corpus, tuned part (batches {batches})", s)
    for f in sorted(by_family):
        print(f"  {f:24} {right_by_family[f]}/{by_family[f]}")
    aside = [e for e in tuned if e["set_aside"]]
    aside_right = sum(s.answers[str(e["id"])] == e["category"] for e in aside)
    print(f"  set aside before the rules were final: {aside_right}/{len(aside)}")
    assert s.share(s.right) >= TARGET, s.misses


def _first_seen_row(batch: str) -> dict[str, Any] | None:
    rows = [r for r in load_ledger() if r["batch"] == batch and r["first_seen"]]
    return rows[0] if rows else None


def test_the_held_out_part_holds_its_first_seen_figure() -> None:
    """The held-out part (batch C), never shown to whoever tunes the rules.

    Gated: its size, a first-seen ledger row (taken by whoever merges an engine, before any rule
    changes for the batch), at most 5 % given a wrong category, and no fewer logs named right
    than the first-seen row. Printed, not gated: whether that first-seen figure meets issue 18's
    bar (85 % right, 90 % on the batch's SGLang start-up logs).
    """
    held_out = [e for e in INDEX if is_held_out(e)]
    assert {batch_of(e) for e in held_out} == {HELD_OUT_BATCH}
    assert len(held_out) >= MIN_HELD_OUT, f"only {len(held_out)} held-out logs"
    assert sum(bool(e["sglang_startup"]) for e in held_out) >= MIN_HELD_OUT_SGLANG_STARTUP
    # Checked before the batch is scored here, so that nobody reads the engine's answers on a
    # held-out batch before its first-seen figure is on record.
    first = _first_seen_row(HELD_OUT_BATCH)
    assert first is not None, (
        f"batch {HELD_OUT_BATCH} is held out but ledger.json has no first-seen row for it: score "
        f"it once, before changing any rule for it, with `PYTHONPATH=$PWD python3 -m "
        f"tests.logs.real.score --batch {HELD_OUT_BATCH} --engine '<commit>: <engine>' "
        f"--first-seen --append`"
    )
    sg, sg_right = int(first["sglang_startup_logs"]), int(first["sglang_startup_right"])
    met = (
        int(first["right"]) / int(first["logs"]) >= HELD_OUT_RIGHT
        and sg > 0
        and sg_right / sg >= HELD_OUT_SGLANG_STARTUP
    )
    print(
        f"\nissue 18's bar (>= {HELD_OUT_RIGHT:.0%} right, >= {HELD_OUT_SGLANG_STARTUP:.0%} on "
        f"SGLang start-up logs) on batch {HELD_OUT_BATCH}'s first-seen figure "
        f"({first['engine']}, {first['date']}): {first['right']}/{first['logs']} right, "
        f"SGLang start-up {sg_right}/{sg}: {'MET' if met else 'NOT MET'}"
    )
    s = score(held_out)
    _print_misses(f"real-log corpus, held-out part (batch {HELD_OUT_BATCH}), today's engine", s)
    assert s.share(s.wrong) <= HELD_OUT_WRONG, s.misses
    assert s.right >= int(first["right"]), (
        f"today's engine names {s.right} held-out logs right, fewer than the first-seen "
        f"{first['right']}: a regression",
        s.misses,
    )


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
