"""The engine's first stage: which lines of a log hold any rule's keyword.

The keywords are searched with `str.find` over the whole text at once (C speed); only those
lines are parsed and tried against the regexes (`engine`), and read by the corpus vocabulary
(`lexicon`)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import cache

from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis.journal import JournalEntry, JournalLines

__all__ = ["candidate_lines", "lines_with"]

_NOISE_FROM = 2000  # lines: shorter logs are searched whole


@cache
def _keywords() -> tuple[str, ...]:
    return R.gates()


def candidate_lines(entries: Sequence[JournalEntry]) -> list[int]:
    """The lines of `entries` that hold any rule's keyword (the first stage)."""
    return lines_with(entries, _keywords())


def lines_with(entries: Sequence[JournalEntry], keywords: Sequence[str]) -> list[int]:
    """The lines of `entries` that hold any of `keywords`: a saved log's raw lines are
    searched (`JournalLines.search`), so only those lines are ever parsed."""
    if isinstance(entries, JournalLines):
        return _lines_with(entries.search, keywords)
    return _lines_with([e.message for e in entries], keywords)


def _lines_with(raw: Sequence[str], keywords: Sequence[str]) -> list[int]:
    """Indices of the lines holding any keyword, found with str.find over the joined text.

    A long journal is mostly a healthy server's routine lines (decode/prefill batch
    statistics, access logs: `R.NOISE`), which no rule can match: they are dropped first, so
    the keywords are searched in what is left."""
    noise = R.NOISE_RE.search
    rows = [i for i, ln in enumerate(raw) if not noise(ln)] if len(raw) > _NOISE_FROM else None
    lines = [raw[i] for i in rows] if rows is not None else raw
    text = "\n".join(lines)
    starts = [0] * len(lines)
    pos = 0
    for i, ln in enumerate(lines):
        starts[i] = pos
        pos += len(ln) + 1
    hits: set[int] = set()
    n = len(lines)
    for kw in keywords:
        i = text.find(kw)
        while i != -1:
            row = bisect.bisect_right(starts, i) - 1
            hits.add(row)
            i = text.find(kw, starts[row + 1]) if row + 1 < n else -1
    if rows is not None:
        return sorted(rows[h] for h in hits)
    return sorted(hits)
