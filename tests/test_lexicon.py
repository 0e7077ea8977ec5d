"""The corpus vocabulary (orchestrator/diagnosis/lexicon.py): the last resort before `unknown`.

It is learnt from the real logs that are not held out, it reads a line only when one category
takes nearly all of the line's posterior, its reading is a lead under an `unknown` answer (the
line first in the evidence, the category named in the summary and the fix), never the answer,
and it reads a bounded number of lines."""

from __future__ import annotations

import json

import pytest

from orchestrator.diagnosis import READING, classify_text
from orchestrator.diagnosis import lexicon as L
from orchestrator.diagnosis.journal import JournalLines
from tests.logs.real import score

INDEX = json.loads((L.CORPUS / "index.json").read_text())


def test_the_shipped_vocabulary_is_the_one_the_corpus_gives() -> None:
    # stale after any change to the corpus's published logs: `python -m orchestrator.docs --write`
    assert L.PATH.read_text() == L.rendered()


def test_held_out_logs_never_enter_the_vocabulary() -> None:
    held = [e for e in INDEX if e.get("held_out")]
    published = [e for e in INDEX if not e.get("held_out")]
    assert held, "the corpus holds a held-out part (tests/test_real_logs.py)"
    assert len(L.corpus_logs(INDEX)) == len(published)
    # the same log, marked held out, is left out
    one = dict(published[0])
    assert L.corpus_logs([one, {**one, "held_out": True}]) == L.corpus_logs([one])
    # and a batch left out for cross-validation is left out
    batch = score.batch_of(published[0])
    kept = [e for e in published if score.batch_of(e) != batch]
    assert len(kept) < len(published)
    assert L.corpus_logs(INDEX, leave_out=[batch]) == L.corpus_logs(kept)


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # wordings no rule holds; their words are those of the category's cause lines
        (
            "RuntimeError: Not enough free GPU memory to allocate the KV cache: "
            "3.2 GiB free of 80 GiB total",
            "cuda-oom",
        ),
        ("Error: you must be authenticated to access this gated repo (HTTP 401)", "hf-auth"),
    ],
)
def test_a_new_wording_is_read_and_given_as_a_lead_not_an_answer(line: str, category: str) -> None:
    d = classify_text(line)
    assert d.category == "unknown"
    assert d.role == READING
    assert d.detail["reads_like"] == category
    assert d.summary.startswith("no rule recognises this failure (not guessed); by its words")
    assert f"({category})" in d.summary
    assert d.evidence[0].text.strip() == line
    assert f"docs/troubleshooting.md#{category}" in d.fix


@pytest.mark.parametrize(
    "line",
    [
        # read as their categories under the constants before batch AF was published
        # (smoothing 0.2, threshold 0.99999), whose cross-validation then read 110 right and 28
        # wrong; the constants chosen since (smoothing 1.0, threshold 0.9999: 65 right, 5
        # wrong) leave them unread: a lead lost, never another category's
        "Error: couldn't bind address 0.0.0.0:30000, address already taken",
        "RuntimeError: the attention heads (40) are not divisible by the parallel size (6)",
    ],
)
def test_a_wording_too_far_from_the_corpus_is_left_unknown_not_misread(line: str) -> None:
    d = classify_text(line)
    assert d.category == "unknown"
    assert d.role != READING, d.detail.get("reads_like")


def test_a_line_logged_at_info_level_is_not_read() -> None:
    line = "RuntimeError: Not enough free GPU memory to allocate the KV cache: 3.2 GiB free"
    assert classify_text(line).role == READING
    d = classify_text(f"[2026-12-01 10:00:00] INFO server.py:12: {line}")
    assert d.role != READING


def test_words_that_name_nothing_stay_unknown() -> None:
    d = classify_text("ERROR: the quick brown fox jumps over the lazy dog")
    assert d.category == "unknown"
    assert "not guessed" in d.summary


def test_the_shares_are_a_distribution_and_the_threshold_is_strict() -> None:
    lex = L.lexicon()
    assert lex is not None
    shares = lex.shares("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB")
    assert abs(sum(shares.values()) - 1) < 1e-9
    assert set(shares) >= {L.NOISE, L.UNKNOWN, "cuda-oom"}
    assert 0.99 <= lex.threshold < 1


def test_a_huge_log_is_read_in_bounded_work() -> None:
    # 50k error lines that no rule knows: the vocabulary parses at most MAX_LINES of them
    forms = (
        "RuntimeError: the flux capacitor {i} is misaligned",
        "worker {i} failed: the warp core is cold",
        "ValueError: cannot reticulate spline {i}",
    )
    text = "\n".join(forms[i % 3].format(i=i) for i in range(50_000))
    entries = JournalLines(text)
    lines = L.error_lines(entries, range(len(entries)))
    assert len(lines) == L.MAX_LINES
    assert lines[0] == 0 and lines[-1] == len(entries) - 1
    assert classify_text(text).category == "unknown"


def test_cross_validation_converts_far_more_than_it_breaks() -> None:
    # each published batch's first-seen `unknown` answers, read by a vocabulary learnt
    # without that batch: the figures tests/logs/real/README.md quotes for ALPHA/THRESHOLD
    folds = score.lexicon_crossval(INDEX)
    assert folds, "the published batches hold first-seen answers"
    right = sum(f.right for f in folds)
    wrong = sum(f.wrong for f in folds)
    assert right >= 4 * max(wrong, 1), (right, wrong)
