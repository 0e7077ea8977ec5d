"""The corpus's vocabulary: the last resort before `unknown`.

The rules name a cause by its structure and its wordings; a cause said in words no rule knows
(another engine's, another release's, another language's error line) gets no rule match. Before
answering `unknown`, the engine asks this module whether one of the log's error lines *reads*
like the cause lines of a category: each category's vocabulary is learnt from the cause lines
(`key_line`) of the real logs in `tests/logs/real/` that are not held out, together with the
other error lines of those logs (what a cause line is not: the class `~noise`) and the cause
lines of logs whose cause has no category (the class `unknown`).

The model is a multinomial naive Bayes over a line's words and word pairs, with additive
smoothing (`ALPHA`). A line is named only when one category takes at least `THRESHOLD` of the
posterior against every other category, `~noise` and `unknown` included. The answer stays
`unknown`: the line leads its evidence and the category it reads like is named as a lead (role
`reading`, `detail["reads_like"]`). Named as the answer, the reading gave 6 more right answers
and 20 more wrong ones on the 714 held-out logs (batches J, L, M, Q), against 79 right and 4
wrong in the cross-validation over the published batches below. The two constants were chosen by
cross-validation over the batches' first-seen misses (`tests/logs/real/README.md`: each batch's
logs that the engine of its day answered `unknown`, scored with a vocabulary learnt without
that batch and without the held-out part).

The vocabulary is data (`lexicon.json`, next to this file), generated from the corpus by
`python3 -m orchestrator.docs --write`, with the other generated files; `python3 -m
orchestrator.docs` and the tests fail when it is stale. Held-out logs never enter it.

Cost: linear in the words of the scored lines; at most `MAX_LINES` lines are scored (the first
and last halves of the error lines), each cut at `LINE_CHARS` characters.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.diagnosis.catalog import BENIGN
from orchestrator.diagnosis.journal import JournalEntry, JournalLines
from orchestrator.diagnosis.prefilter import candidate_lines
from orchestrator.diagnosis.structure import LEVEL_SPAN, LOW_LEVEL

__all__ = [
    "ALPHA",
    "THRESHOLD",
    "Lexicon",
    "Reading",
    "build",
    "error_lines",
    "lexicon",
    "tokens",
]

ALPHA = 1.0
THRESHOLD = 0.9999
MAX_LINES = 1000
LINE_CHARS = 2000
NOISE = "~noise"
UNKNOWN = "unknown"

PATH = Path(__file__).with_name("lexicon.json")
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "logs" / "real"

_WORD = re.compile(r"[a-z][a-z0-9_]{1,28}")
_STOP = frozenset(
    {"an", "of", "to", "in", "for", "is", "and", "or", "on", "at", "by", "be", "with", "from"}
    | {"this", "that", "it", "as", "are", "was", "the"}
)
# A line worth reading: it says something failed. Literal alternatives only (linear time).
_ERRORISH = re.compile(
    r"error|exception|fail|fatal|abort|assert|warn|killed|denied|refused|timeout|timed out"
    r"|not found|no such|cannot|can't|unable|invalid|unsupported|not supported|insufficient"
    r"|exceed|out of memory|oom|not enough|no module|errno",
    re.IGNORECASE,
)
# A Python warning (`UserWarning: …`, `FutureWarning: …`): printed by healthy starts too.
_WARNING = re.compile(r"[a-z]Warning: ")
# argparse refusing a command line (`prog: error: argument --x: invalid choice: …`,
# `unrecognized arguments: …`): it names a flag the installed program does not take, and the
# choices it lists are option names, whose words would read as any category that uses them.
_USAGE = re.compile(
    r": error: (?:argument -|unrecognized arguments:|the following arguments are required)"
)


def tokens(line: str) -> list[str]:
    """A line's words (lower case, 2-29 characters, a few function words and the parts of
    long paths left out) and each pair of neighbouring words (`out_memory`): the features of
    the model."""
    # a file path or URL of three or more parts says where, not what: its parts are left out
    line = " ".join(p for p in line[:LINE_CHARS].split() if p.count("/") < 3)
    words = [w for w in _WORD.findall(line.lower()) if w not in _STOP]
    return words + [f"{a}_{b}" for a, b in itertools.pairwise(words)]


def error_lines(
    entries: Sequence[JournalEntry], candidates: Iterable[int], skip: Iterable[int] = ()
) -> list[int]:
    """The lines the vocabulary reads, among `candidates` (the lines holding a rule's
    keyword, found by the engine's prefilter): those that say something failed, not logged at
    WARNING level or below, not a Python warning nor a line SGLang says is benign, less `skip`
    (echoes: consequences of a failure, never its cause); at most MAX_LINES, the first and the
    last half of them."""
    skipped = set(skip)
    hits = [i for i in candidates if i not in skipped]
    if len(hits) > MAX_LINES:
        hits = hits[: MAX_LINES // 2] + hits[-MAX_LINES // 2 :]
    return [i for i in hits if _readable(entries[i])]


def _readable(e: JournalEntry) -> bool:
    text = e.text[:LINE_CHARS]
    return bool(
        _ERRORISH.search(text)
        # (a line logged at WARNING level or below: a healthy start prints these too, "No
        # module named 'x'; falling back to …", never the cause)
        and not LOW_LEVEL.search(e.message, 0, LEVEL_SPAN)
        and not _WARNING.search(text)
        and not _USAGE.search(text)
        and not BENIGN.search(text)
    )


@dataclass(frozen=True)
class Reading:
    """A line the vocabulary names: its index, the category and its posterior share."""

    index: int
    category: str
    share: float
    words: tuple[str, ...]  # the line's words that weigh most for the category


@dataclass(frozen=True)
class Lexicon:
    classes: Mapping[str, tuple[int, int]]  # class -> (cause lines, word count)
    counts: Mapping[str, Mapping[str, int]]  # word -> class -> lines holding it
    alpha: float = ALPHA
    threshold: float = THRESHOLD

    def shares(self, line: str) -> dict[str, float]:
        """Each class's posterior share for `line` (they sum to 1)."""
        # in the line's order (not a set's): the sums, and so the shares, are the same each run
        words = list(dict.fromkeys(w for w in tokens(line) if w in self.counts))
        vocab = len(self.counts)
        log: dict[str, float] = {}
        for c, (n, total) in self.classes.items():
            miss = math.log(self.alpha / (total + self.alpha * vocab))
            log[c] = math.log(n + 1) + miss * len(words)
        for w in words:
            for c, k in self.counts[w].items():
                log[c] += math.log((k + self.alpha) / self.alpha)
        top = max(log.values())
        z = sum(math.exp(v - top) for v in log.values())
        return {c: math.exp(v - top) / z for c, v in log.items()}

    def why(self, line: str, category: str, n: int = 4) -> tuple[str, ...]:
        """The words of `line` that weigh most for `category` against the others (ties in the
        line's order)."""
        words = dict.fromkeys(w for w in tokens(line) if w in self.counts and "_" not in w)

        def lift(w: str) -> float:
            k = self.counts[w].get(category, 0)
            rest = sum(v for c, v in self.counts[w].items() if c != category)
            return (k + self.alpha) / (rest + 1)

        ranked = sorted((w for w in words if self.counts[w].get(category)), key=lift, reverse=True)
        return tuple(ranked[:n])

    def read(
        self,
        entries: Sequence[JournalEntry],
        lines: Sequence[int],
        categories: Iterable[str],
        deadline: float = math.inf,
    ) -> Reading | None:
        """The line whose words name one of `categories` with the greatest share, if that share
        reaches the threshold; None past `deadline` (the caller answers unknown)."""
        allowed = set(categories) - {NOISE, UNKNOWN}
        best: Reading | None = None
        for n, i in enumerate(lines):
            if n & 63 == 63 and time.monotonic() > deadline:
                return None
            text = entries[i].text
            shares = self.shares(text)
            c = max((k for k in shares if k in allowed), key=lambda k: shares[k], default=None)
            if c is None or shares[c] < self.threshold:
                continue
            if best is None or shares[c] > best.share:
                best = Reading(i, c, shares[c], ())
        if best is None:
            return None
        return Reading(
            best.index, best.category, best.share, self.why(entries[best.index].text, best.category)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "about": (
                "generated by `python3 -m orchestrator.docs --write` from the "
                "logs of tests/logs/real/index.json that are not held out; do not edit"
            ),
            "alpha": self.alpha,
            "threshold": self.threshold,
            "classes": {c: list(v) for c, v in sorted(self.classes.items())},
            "counts": {w: dict(sorted(v.items())) for w, v in sorted(self.counts.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Lexicon:
        return cls(
            classes={c: (int(v[0]), int(v[1])) for c, v in data["classes"].items()},
            counts={w: {c: int(k) for c, k in v.items()} for w, v in data["counts"].items()},
            alpha=float(data["alpha"]),
            threshold=float(data["threshold"]),
        )


@cache
def lexicon() -> Lexicon | None:
    """The vocabulary shipped with the package; None when the file is absent (then the engine
    answers `unknown` as before)."""
    try:
        return Lexicon.from_json(json.loads(PATH.read_text()))
    except FileNotFoundError:
        return None


# --------------------------------------------------------------------------- learning


def _same_line(line: str, key: str) -> bool:
    return key[-50:] in line or line[-50:] in key


def build(
    logs: Iterable[tuple[str, str, str]],
    *,
    alpha: float = ALPHA,
    threshold: float = THRESHOLD,
) -> Lexicon:
    """Learn the vocabulary from (log text, category, cause line) triples: the cause line's
    words count for its category; the log's other error lines count for `~noise`."""
    lines: Counter[str] = Counter()
    words: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = {}

    def add(cls: str, line: str) -> None:
        ws = set(tokens(line))
        lines[cls] += 1
        words[cls] += len(ws)
        for w in ws:
            counts.setdefault(w, Counter())[cls] += 1

    for text, category, key in logs:
        key = key.strip()
        add(category, key)
        entries = JournalLines(text)
        for i in error_lines(entries, candidate_lines(entries)):
            line = entries[i].text.strip()
            if line and not _same_line(line, key):
                add(NOISE, line)
    return Lexicon(
        classes={c: (lines[c], words[c]) for c in lines},
        counts={w: dict(v) for w, v in counts.items()},
        alpha=alpha,
        threshold=threshold,
    )


def corpus_logs(
    index: Sequence[Mapping[str, Any]], *, leave_out: Iterable[str] = ()
) -> list[tuple[str, str, str]]:
    """The corpus's (text, category, cause line) triples the vocabulary may learn from: never a
    held-out log, nor a log of the batches in `leave_out` (cross-validation)."""
    out = set(leave_out)
    return [
        (
            (CORPUS / str(e["file"])).read_text(errors="replace"),
            str(e["category"]),
            str(e["key_line"]),
        )
        for e in index
        if not e.get("held_out", False) and str(e.get("batch", "0")) not in out
    ]


def rendered() -> str:
    """lexicon.json as the corpus gives it now (`orchestrator.docs` checks and writes it)."""
    index = json.loads((CORPUS / "index.json").read_text())
    return json.dumps(build(corpus_logs(index)).to_json(), indent=0, ensure_ascii=True) + "\n"
