"""The diagnosis on real logs: every failure log users posted that tests/logs/real keeps.

The corpus has two parts, gated apart (issue 18, item 5):

- the tuned part (batch 0, on which the rules were written, and batches A and B, each published
  for tuning after its first-seen scoring): fails under 95 % named right;
- the held-out part (every batch the index marks `held_out`, never shown to whoever tunes the
  rules; one batch or several): as a whole it fails under MIN_HELD_OUT logs, under a quarter of
  the corpus or under MIN_HELD_OUT_SGLANG_STARTUP SGLang start-up logs; each held-out batch fails
  without its own first-seen row in the ledger (a held-out batch that nobody measured is a process
  error), over 5 % wrong category, or if today's engine names fewer of its logs right than its
  first-seen row did (no regression below the first-seen figure). Whether the newest held-out
  batch's first-seen figure meets issue 18's bar (85 % right, 90 % on its SGLang start-up logs) is
  printed, not gated: CI has to pass before an engine can reach the bar, and the honest figure is
  the first-seen one, which later tuning cannot change.

Publishing a held-out batch for tuning is one command, `python3 -m tests.logs.real.score
--retire-batch C`: it sets `held_out` false on the batch (after its first-seen row and per-log
answers are on record), and this module follows the index.

Both figures are printed (`pytest -s`). The honest figures are the first-seen rows of
tests/logs/real/ledger.json, not these. Fix texts must speak of the log's box: no
reference-box facts (B200, sm_100, SGLang 0.5.23) unless the log itself mentions them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from orchestrator.diagnosis.diagnose import classify_text
from tests.logs.real.score import (
    MIN_HELD_OUT,
    MIN_HELD_OUT_SGLANG_STARTUP,
    Entry,
    Score,
    batch_of,
    first_seen_row,
    held_out_batches,
    held_out_size_problems,
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
# The batches never shown to whoever tunes the rules: what the index marks held_out (C and D until
# C is published with `--retire-batch C`).
HELD_OUT_BATCHES = held_out_batches(INDEX)
HELD_OUT_RIGHT = 0.85  # issue 18, done-when: first-seen accuracy on the held-out batch
HELD_OUT_WRONG = 0.05  # issue 18, done-when: at most 5 % given a wrong category
HELD_OUT_SGLANG_STARTUP = 0.90  # issue 18, done-when: on the batch's SGLang start-up logs
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
    rows = load_ledger()
    for e in INDEX:
        batch = batch_of(e)
        if batch == "0":
            assert not is_held_out(e), f"{e['id']}: the tuned corpus cannot be held out"
            continue
        assert isinstance(e.get("sglang_startup"), bool), f"{e['id']}: sglang_startup missing"
        assert e.get("trimmed"), f"{e['id']}: say what was trimmed (or 'none')"
        # A batch is held out or published as a whole.
        assert is_held_out(e) == (batch in HELD_OUT_BATCHES), (
            f"{e['id']}: batch {batch} is partly held out; set held_out alike on all its logs"
        )
        if is_held_out(e) and first_seen_row(rows, batch) is None:
            assert "first_seen" not in e, f"{e['id']}: per-log answers without a first-seen row"
        elif not is_held_out(e):
            # A published batch keeps the answer its first-seen scoring gave, per log.
            assert "first_seen" in e, f"{e['id']}: a published log keeps its first-seen answer"
        if "first_seen" in e:
            fs = e["first_seen"]
            # a log relabelled after its first-seen scoring keeps that scoring as it was: its
            # answer is judged against the label it had then (`relabelled_from`), and the
            # ledger's row stays as written
            label = str(e.get("relabelled_from", e["category"]))
            assert fs["result"] == outcome(label, str(fs["category"])), e["id"]
        if "relabelled_from" in e:
            assert e["relabelled_from"] != e["category"], e["id"]
            assert "first_seen" in e, f"{e['id']}: relabel only a log already scored first-seen"


def test_at_least_a_quarter_of_the_corpus_was_never_tuned_on() -> None:
    """The size rules hold for the held-out part as a whole, however many batches it has."""
    assert HELD_OUT_BATCHES, "no batch is held out"
    assert held_out_size_problems(INDEX) == [], held_out_size_problems(INDEX)
    held_out = [e for e in INDEX if is_held_out(e)]
    assert len(held_out) >= MIN_HELD_OUT
    assert sum(bool(e["sglang_startup"]) for e in held_out) >= MIN_HELD_OUT_SGLANG_STARTUP


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
        assert all("first_seen" in e for e in logs), f"batch {b}: some logs lack first_seen"
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


def test_the_held_out_part_holds_its_first_seen_figures() -> None:
    """The held-out part (every held-out batch), never shown to whoever tunes the rules.

    Gated: its size (as a whole), a first-seen ledger row per held-out batch (taken by whoever
    merges an engine, before any rule changes for the batch), and per batch no regression from
    its first-seen row: no fewer logs named right, and no more given a wrong category than
    first seen, or than 5 % of the batch (issue 18's bar) if that is more. A log first seen
    right that is now `unknown` with its reading lead naming the same category (the corpus
    vocabulary's reading, shown as a lead since it stopped naming categories) keeps what the
    operator is told, less the claim, and counts as kept, not as a regression. Printed, not
    gated (a first-seen figure is a measurement, which CI cannot make come true): whether the
    newest held-out batch's first-seen figure meets issue 18's bar (85 % right, at most 5 %
    wrong, 90 % on the batch's SGLang start-up logs).
    """
    assert HELD_OUT_BATCHES, "no batch is held out"
    assert held_out_size_problems(INDEX) == [], held_out_size_problems(INDEX)
    # Checked before any batch is scored here, so that nobody reads the engine's answers on a
    # held-out batch before its first-seen figure is on record.
    rows = load_ledger()
    missing = [b for b in HELD_OUT_BATCHES if first_seen_row(rows, b) is None]
    assert not missing, (
        f"held-out batch(es) {', '.join(missing)} have no first-seen row in ledger.json: score "
        "each once, before changing any rule for it, with `PYTHONPATH=$PWD python3 -m "
        f"tests.logs.real.score --batch {missing[0]} --engine '<commit>: <engine>' "
        "--first-seen --append`"
    )
    newest = HELD_OUT_BATCHES[-1]
    first = first_seen_row(rows, newest)
    assert first is not None
    sg, sg_right = int(first["sglang_startup_logs"]), int(first["sglang_startup_right"])
    met = (
        int(first["right"]) / int(first["logs"]) >= HELD_OUT_RIGHT
        and int(first["wrong"]) / int(first["logs"]) <= HELD_OUT_WRONG
        and sg > 0
        and sg_right / sg >= HELD_OUT_SGLANG_STARTUP
    )
    print(
        f"\nissue 18's bar (>= {HELD_OUT_RIGHT:.0%} right, <= {HELD_OUT_WRONG:.0%} wrong, "
        f">= {HELD_OUT_SGLANG_STARTUP:.0%} on SGLang start-up logs) on the newest held-out batch "
        f"{newest}'s first-seen figure ({first['engine']}, {first['date']}): "
        f"{first['right']}/{first['logs']} right, {first['wrong']} wrong, "
        f"SGLang start-up {sg_right}/{sg}: {'MET' if met else 'NOT MET'}"
    )
    failures = []
    for batch in HELD_OUT_BATCHES:
        row = first_seen_row(rows, batch)
        assert row is not None
        logs = [e for e in INDEX if batch_of(e) == batch]
        s = score(logs)
        # counts only: a held-out log's miss is never printed (a failing run's output reaches
        # whoever runs the tests, and the batch must stay unseen); a regression names only the
        # logs whose answer is worse than the one the batch's first-seen scoring recorded
        print(
            f"\nheld-out batch {batch}, today's engine: {s.right}/{s.logs} right, "
            f"{s.unknown} unknown, {s.wrong} wrong (first-seen {row['right']}, {row['unknown']}, "
            f"{row['wrong']})"
        )
        # first seen right, now unknown with the same category as its reading lead
        as_lead = {
            str(e["id"])
            for e in logs
            if isinstance(e.get("first_seen"), dict)
            and e["first_seen"]["result"] == "right"
            and s.answers[str(e["id"])] == "unknown"
            and s.leads.get(str(e["id"])) == e["category"]
        }
        worse = _worse_than_first_seen(logs, s, kept=as_lead)
        # a wrong answer more than first seen is allowed only within issue 18's bar (5 % of
        # the batch), and only while the right answers did not drop (checked below)
        allowed = max(int(row["wrong"]), int(HELD_OUT_WRONG * s.logs))
        if s.wrong > allowed:
            failures.append(
                f"batch {batch}: {s.wrong}/{s.logs} given a wrong category, more than the "
                f"first-seen {row['wrong']} and more than {HELD_OUT_WRONG:.0%} of the batch: a "
                f"regression (answers worse than first seen: {worse})"
            )
        if s.right + len(as_lead) < int(row["right"]):
            failures.append(
                f"batch {batch}: today's engine names {s.right} logs right ({len(as_lead)} more "
                "as a reading lead), fewer than the "
                f"first-seen {row['right']}: a regression (answers worse than first seen: {worse})"
            )
    assert not failures, failures


_RANK = {"right": 0, "unknown": 1, "wrong": 2}


def _worse_than_first_seen(logs: list[Entry], s: Score, kept: set[str]) -> list[str]:
    """The held-out logs whose answer today is worse than the one recorded at the batch's
    first-seen scoring (right -> unknown or wrong, unknown -> wrong), with both answers: all
    a regression needs, and nothing of the batch's first-seen misses. `kept`: logs whose
    answer counts as kept (first seen right, now a reading lead naming the same category)."""
    out = []
    for e in logs:
        first = e.get("first_seen")
        if not isinstance(first, dict) or str(e["id"]) in kept:
            continue
        got = s.answers[str(e["id"])]
        now = outcome(str(e["category"]), got)
        if _RANK[now] > _RANK[str(first["result"])]:
            out.append(f"{e['id']}: first seen {first['category']}, now {got}")
    return out


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


ROOT_LINE_SHOWN = 0.90  # issue 18: a pasted log gets its category AND its root line


def _shows(evidence: list[str], key: str) -> bool:
    """The evidence holds the log's cause line (the index's key_line, prefixes aside)."""
    k = " ".join(key.split())
    for line in evidence:
        v = " ".join(line.split())
        if (len(v) >= 20 and (v in k or k in v)) or (len(k) > 40 and k[-40:] in v):
            return True
    return False


def test_a_right_answer_shows_the_root_line() -> None:
    """Of the published logs named right, the share whose evidence holds the cause line the
    thread's reader marked (key_line): the category alone is not the answer a user needs.
    Held-out logs are not looked at here (their answers are counted in their own gate)."""
    right = shown = 0
    missing = []
    for e in INDEX:
        if is_held_out(e) or e["category"] == "unknown":
            continue
        d = classify_text(_text(e))
        if d.category != e["category"]:
            continue
        right += 1
        if _shows([x.text for x in d.evidence], str(e["key_line"])):
            shown += 1
        else:
            missing.append(str(e["id"]))
    print(f"\nroot line shown in the evidence: {shown}/{right} = {shown / right:.1%}")
    assert shown / right >= ROOT_LINE_SHOWN, missing
