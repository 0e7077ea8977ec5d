"""Why did a start fail? One category, the evidence lines, the fix.

`classify(entries, flags=..., systemd_result=..., exit_status=..., timed_out=...)` reads the
journal lines of one start (see `orchestrator.diagnosis.journal`) against the rules in
`orchestrator.diagnosis.catalog` and returns a `Diagnosis`. `classify_text(text)` does the same
for a saved log (`journalctl -o json`, `-o short*`, `-o cat`) without parsing every line.

The log is read first (`diagnosis.reader`: the shipper's prefix learned from the log
itself, partial and wrapped lines joined, a newest-first export reversed; lines capped at
8 kB), so no rule sees wrapper syntax.

Speed: a 200k-line journal is classified in well under 1 s (bench/classify_bench.py). The
rules' keywords are searched with `str.find` over the whole text at once (C speed); only the
few lines holding a keyword are parsed and tried against the regexes, none of which
backtracks super-linearly. A classification has a time budget (`budget_s`, 5 s): past it the
answer is `unknown` with a note, so a hostile log never stalls `up`, the stop hook or the
watcher.

How the cause is chosen:
1. every keyword line is matched against the rules (in `RULES` order) and the echoes;
   a storm pattern (Pat.min_count) counts only with enough matching lines;
2. a rule's `explains` drops the categories it explains (host OOM kill -> NCCL errors);
3. the winner is the earliest `cause` match: key (timestamp second, rule priority, line);
   if any cause match lacks a timestamp, (line, priority); an exception line's traceback is
   its own source's (PID, pod, rank), so interleaved ranks do not mix;
4. no cause line: the caller's Result=oom-kill, else the rules' exception *families* over the
   log's tracebacks (`diagnosis.structure`): the root exception first (the first of a chain,
   on the earliest failing source, SGLang's wrappers skipped), so a new wording of a known
   cause lands in its family; then the rules' *signals* over typed event lines (a compiler's
   error line, a c10d store timeout logged at ERROR level, a CUDA error in an attention
   kernel's source), the earliest line first;
5. then the earliest `fallback` (start-limit-hit, startup-timeout, also from the caller's
   systemd_result / timed_out; then a fallback signal: SGLang's warm-up wrapper alone), then a `hint` (bare SIGKILL, a retraction storm), else
   `unknown`, whose evidence leads with the root exception and the frame that raised it.

`python -m orchestrator.diagnosis.diagnose FILE` classifies a saved log;
`python -m orchestrator.diagnosis.diagnose --write-docs` regenerates docs/troubleshooting.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import sglang
from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import lexicon as L
from orchestrator.diagnosis import structure as S
from orchestrator.diagnosis.answer import (
    _CONTEXT_WINDOW,
    _EXC_LINE,
    _TRACEBACK,
    MAX_EVIDENCE,
    Diagnosis,
)
from orchestrator.diagnosis.docs import troubleshooting_markdown
from orchestrator.diagnosis.enrich import note_port
from orchestrator.diagnosis.flags import flags_from_log
from orchestrator.diagnosis.journal import MAX_LINE, JournalEntry, JournalLines
from orchestrator.diagnosis.model import Family, Signal
from orchestrator.diagnosis.prefilter import candidate_lines, lines_with
from orchestrator.diagnosis.unknown import reading_lead, unknown_answer
from orchestrator.sglang import Release, phase_of

__all__ = [
    "Diagnosis",
    "classify",
    "classify_text",
    "flags_from_log",
    "troubleshooting_markdown",
]


# Seconds one classification may take before it answers `unknown` with a note (issue 21: a
# hostile or huge log must never stall `up`, the stop hook or the watcher).
DEFAULT_BUDGET_S = 5.0


class _OutOfTime(Exception):
    """The classification's time budget ran out."""


_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
_ENRICH_AROUND = 40  # lines around the cause a rule's enrich() reads (versions, GPU, port)


@dataclass(frozen=True)
class _Match:
    index: int
    rule: R.Rule
    pat: R.Pat
    m: re.Match[str]
    role: str
    block: tuple[int, ...]  # the traceback lines (indices) this line ends, oldest first

    def ts_second(self, entries: Sequence[JournalEntry]) -> int | None:
        ts = entries[self.index].timestamp_us
        return None if ts is None else ts // 1_000_000


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


_FIELD = re.compile(r"\{(\w+)\}")


def _fmt(template: str, detail: Mapping[str, str]) -> str:
    """`template` over the detail fields. A pattern's own fix hint is itself a template over
    the fields its regex captured (`{mtype}`): it is filled first, when every field it names
    was captured (an enricher's hint, with text from the log in it, is left as it is)."""
    hint = detail.get("fixhint")
    if hint is not None and "{" in hint:
        names = _FIELD.findall(hint)
        if names and all(n in detail and n != "fixhint" for n in names):
            detail = {**detail, "fixhint": _FIELD.sub(lambda m: detail[m[1]], hint)}
    try:
        return template.format_map(_Blank(detail))
    except (ValueError, IndexError):
        return template


# --------------------------------------------------------------------------- tracebacks


def _block(entries: Sequence[JournalEntry], i: int) -> tuple[int, ...]:
    """The traceback lines ending at line i (same PID when known), oldest first; () if none.

    Back to "Traceback (most recent call last):" when it is there; in a log pasted without
    that header (a fragment), the run of frame lines (`File "…", line N, in f`, their source
    and caret lines) right above line i."""
    pid = entries[i].pid
    origin = entries[i].origin

    def other(e: JournalEntry) -> bool:  # another process's (or pod's, or rank's) line
        return (pid is not None and e.pid is not None and e.pid != pid) or (
            origin is not None and e.origin is not None and e.origin != origin
        )

    def own() -> Iterator[int]:
        """The same source's lines above line i, nearest first, at most _CONTEXT_WINDOW."""
        n = 0
        for j in range(i - 1, max(-1, i - 8 * _CONTEXT_WINDOW), -1):
            if not other(entries[j]):
                yield j
                n += 1
                if n >= _CONTEXT_WINDOW:
                    return

    out: list[int] = []
    for j in own():
        out.append(j)
        if _TRACEBACK in entries[j].text:
            # a wrapper that printed its words, a colon and then the traceback on the lines
            # below (0.1.x's tokenizer manager printed its words, then the traceback) belongs
            # to it
            if (
                entries[j].text.strip() == _TRACEBACK + ":"
                and j > 0
                and not other(entries[j - 1])
                and entries[j - 1].text.rstrip().endswith(":")
            ):
                out.append(j - 1)
            out.reverse()
            return tuple(out)
    frames: list[int] = []
    for j in own():
        t = entries[j].text
        # a frame, an indented line, or (a paste that lost its indentation) a caret line or
        # the source line right below a frame
        if not (
            _FRAME.match(t)
            or t[:1] in (" ", "\t")
            or S.CARET.match(t)
            or (j > 0 and not other(entries[j - 1]) and _FRAME.match(entries[j - 1].text))
        ):
            break
        frames.append(j)
    if any(_FRAME.match(entries[j].text) for j in frames):
        frames.reverse()
        return tuple(frames)
    return ()


def _context_ok(entries: Sequence[JournalEntry], p: R.Pat, block: tuple[int, ...]) -> bool:
    if not p.context:
        return True
    if not block:
        return False
    text = "\n".join(entries[j].text for j in block)
    return all(c.search(text) for c in p.context)


# --------------------------------------------------------------------------- classify


def _find_matches(
    entries: Sequence[JournalEntry], candidates: Sequence[int], deadline: float
) -> tuple[list[_Match], list[int], list[int]]:
    """(rule matches, echo lines, errorish lines). Raises _OutOfTime past `deadline`."""
    matches: list[_Match] = []
    echoes: list[int] = []
    errorish: list[int] = []
    for n, i in enumerate(candidates):
        if n & 63 == 63 and time.monotonic() > deadline:
            raise _OutOfTime
        msg = entries[i].text
        if R.ERRORISH.search(entries[i].message[:MAX_LINE]) and not R.BENIGN.search(msg):
            errorish.append(i)
        is_echo = any(any(k in msg for k in p.keywords) and p.regex.search(msg) for p in R.ECHOES)
        if is_echo:
            echoes.append(i)
        for rule in R.RULES:
            for p in rule.patterns:
                if not any(k in msg for k in p.keywords):
                    continue
                if p.origin is not None and not p.origin.search(entries[i].origin or ""):
                    continue
                if p.errors_only and S.LOW_LEVEL.search(entries[i].message, 0, S.LEVEL_SPAN):
                    continue
                m = p.regex.search(msg)
                if m is None:
                    continue
                block = _block(entries, i) if p.context or _EXC_LINE.match(msg) else ()
                if not _context_ok(entries, p, block):
                    continue
                matches.append(_Match(i, rule, p, m, p.role or rule.role, block))
                break  # first pattern of a rule wins for this line; other rules still tried
    # a storm pattern counts only with enough matches (its first match stands for them)
    counts: dict[int, int] = {}
    for mt in matches:
        if mt.pat.min_count > 1:
            counts[id(mt.pat)] = counts.get(id(mt.pat), 0) + 1
    if counts:
        seen: set[int] = set()
        kept: list[_Match] = []
        for mt in matches:
            k = id(mt.pat)
            if mt.pat.min_count > 1:
                if counts[k] < mt.pat.min_count or k in seen:
                    continue
                seen.add(k)
            kept.append(mt)
        matches = kept
    # a source line quoted in a caller's frame is code on the way to the raise: it names no
    # cause (nor an "also seen")
    matches = [m for m in matches if not S.caller_code(entries, m.index)]
    return matches, echoes, errorish


def _pick(entries: Sequence[JournalEntry], matches: list[_Match]) -> _Match | None:
    if not matches:
        return None
    # a traceback's quoted source line ("raise RuntimeError(f\"NCCL error: {error_str}\")")
    # holds its message's template: the line the program printed wins for the same rule
    code = [S.frame_code(entries, m.index) for m in matches]
    printed = {m.rule.id for m, c in zip(matches, code, strict=True) if not c}
    matches = [m for m, c in zip(matches, code, strict=True) if not c or m.rule.id not in printed]
    prio = {r.id: n for n, r in enumerate(R.RULES)}
    if all(entries[m.index].timestamp_us is not None for m in matches):
        return min(
            matches,
            key=lambda m: (m.ts_second(entries), prio[m.rule.id], m.index),
        )
    return min(matches, key=lambda m: (m.index, prio[m.rule.id]))


def _evidence(entries: Sequence[JournalEntry], m: _Match) -> list[JournalEntry]:
    """The cause line with the traceback's header and its last frames, <= MAX_EVIDENCE."""
    picked: list[int] = []
    if m.block:
        picked.append(m.block[0])  # "Traceback (most recent call last):" (or its wrapper)
        # frames matching the rule's context (e.g. the SGLang function that raised), then the tail
        ctx_lines = [
            j
            for j in m.block[1:]
            if m.pat.context and any(c.search(entries[j].text) for c in m.pat.context)
        ]
        for j in ctx_lines[-3:]:
            if j not in picked:
                picked.append(j)
        room = MAX_EVIDENCE - 1 - len(picked)
        for j in m.block[1:][-room:] if room > 0 else []:
            if j not in picked:
                picked.append(j)
        picked = sorted(set(picked))[: MAX_EVIDENCE - 1]
    picked.append(m.index)
    return [entries[j] for j in sorted(set(picked))]


def _phase(entries: Sequence[JournalEntry]) -> str:
    """The last start-up milestone reached (for startup-timeout only: found by a scan of its
    own, so that milestones cost nothing when the log names a cause)."""
    keywords = (*R.MILESTONE_KEYWORDS, R.PROGRESS_KEYWORD)
    last_label = None
    last_progress = None
    for i in lines_with(entries, keywords):
        msg = entries[i].text
        ms = phase_of(msg)
        if ms is not None:
            last_label = ms.label
        pm = R.PROGRESS.search(msg)
        if pm is not None:
            last_progress = f"{pm['n']}/{pm['total']} checkpoint shards"
    if last_label is None:
        return "none seen"
    if last_label == "loading weights" and last_progress:
        return f"{last_label}, {last_progress}"
    return last_label


_RESULT_RULE = {
    "oom-kill": "host-oom-killed",
    "start-limit-hit": "start-limit-hit",
    "timeout": "startup-timeout",
}


def classify(
    entries: Sequence[JournalEntry],
    *,
    flags: Mapping[str, Any] | None = None,
    release: Release | None = None,
    systemd_result: str | None = None,
    exit_status: str | None = None,
    timed_out: bool = False,
    budget_s: float | None = DEFAULT_BUDGET_S,
) -> Diagnosis:
    """Name the first real cause of a failed start in `entries` (oldest first).

    budget_s: seconds the classification may take (None: no limit); past it the answer is
    `unknown`, with a note that says so, never a late or a partial guess.

    flags: the SGLang ServerArgs fields the unit passed (name -> value); None: recovered from
    the log when possible. systemd_result: the unit's Result property ("exit-code",
    "oom-kill", "timeout", "start-limit-hit", ...). exit_status: e.g. "1", "137", "9/KILL".
    timed_out: our own deadline passed before the service became healthy.
    release: the SGLang release the unit runs (its flag names go into fix texts); None: the
    newest deploy knows.
    """
    started = time.monotonic()
    deadline = started + budget_s if budget_s is not None else float("inf")
    try:
        return _classify(
            entries,
            deadline,
            flags=flags,
            release=release,
            systemd_result=systemd_result,
            exit_status=exit_status,
            timed_out=timed_out,
        )
    except _OutOfTime:
        return _out_of_time(entries, time.monotonic() - started, systemd_result, exit_status)


def _out_of_time(
    entries: Sequence[JournalEntry],
    spent: float,
    systemd_result: str | None,
    exit_status: str | None,
) -> Diagnosis:
    what = [f"systemd result {systemd_result!r}"] if systemd_result else []
    what += [f"exit status {exit_status}"] if exit_status else []
    return Diagnosis(
        category="unknown",
        summary=(
            f"not classified: the classification's time budget ran out after {spent:.1f} s "
            f"on {len(entries)} lines (not guessed)" + (f" ({', '.join(what)})" if what else "")
        ),
        evidence=[entries[i] for i in range(max(0, len(entries) - 5), len(entries))],
        fix=(
            "read the log itself (`deploy logs`), or classify a shorter excerpt around the failure "
            "(`deploy logs --classify --input FILE`)"
        ),
        doc=R.UNKNOWN_DOC,
        title="no rule matched",
        detail={"note": "time budget exhausted"},
        role="unknown",
    )


def _classify(
    entries: Sequence[JournalEntry],
    deadline: float,
    *,
    flags: Mapping[str, Any] | None,
    release: Release | None,
    systemd_result: str | None,
    exit_status: str | None,
    timed_out: bool,
) -> Diagnosis:
    candidates = candidate_lines(entries)
    if time.monotonic() > deadline:
        raise _OutOfTime
    matches, echoes, errorish = _find_matches(entries, candidates, deadline)

    syn = _synthetic(systemd_result, exit_status, timed_out)
    # a pattern's own `explains` (a line that names the cause of another rule's error by
    # itself) is applied first; a rule it explains gives no blanket rule-level `explains`
    # (NCCL's shm_open refused by permission explains NCCL's shm-segment wrapper, which
    # would otherwise read as a full /dev/shm that explains every NCCL error)
    by_pattern = {c for m in matches if m.role == R.CAUSE for c in m.pat.explains}
    explained = by_pattern | {
        c
        for m in matches
        if m.role == R.CAUSE and m.rule.id not in by_pattern
        for c in m.rule.explains
    }
    if syn is not None and syn[1] == R.CAUSE:
        explained |= set(syn[0].explains)
    matches = [m for m in matches if m.rule.id not in explained]
    matches = _drop_chain_followers(entries, candidates, matches)

    # A bare SIGKILL hints at the OOM killer only if no error was logged before it, nor an
    # exception anywhere: a pasted excerpt's order is not the program's (a newest-first
    # export, ranks interleaved), and a process that raised was not killed for nothing.
    exceptions = [i for i in errorish if _EXC_LINE.match(entries[i].text)]
    first_error = min([*echoes, *exceptions], default=None)

    def _hint_ok(start: int) -> bool:
        return not exceptions and (first_error is None or first_error >= start)

    matches = [
        m for m in matches if m.role != R.HINT or _hint_ok(m.block[0] if m.block else m.index)
    ]
    if syn is not None and syn[1] == R.HINT and not _hint_ok(len(entries)):
        syn = None

    by_role: dict[str, list[_Match]] = {R.CAUSE: [], R.FALLBACK: [], R.HINT: []}
    for m in matches:
        by_role[m.role].append(m)
    for role in (R.CAUSE, R.FALLBACK, R.HINT):
        winner = _pick(entries, by_role[role])
        if winner is not None:
            return _diagnose(entries, winner, matches, flags, release)
        # The caller's facts count as a line of their rule at the very end of the log.
        if syn is not None and syn[1] == role:
            return _diagnose_synthetic(
                entries,
                syn[0],
                role,
                matches,
                systemd_result,
                exit_status,
                release or sglang.NEWEST,
            )
        if role == R.CAUSE:
            # no pattern names a cause: the rules' exception families, over the tracebacks
            raised = _raised(entries, candidates, errorish, set(echoes))
            fam = _family_match(raised)
            if fam is not None:
                return _diagnose_family(entries, fam[0], fam[1], fam[2], matches, release)
            # then their signals, over typed event lines (a compiler error, a c10d timeout)
            # (an echo may carry its cause's words: "Failed to start X: cannot import name …")
            sig = _signal_match(entries, candidates, R.CAUSE)
            if sig is not None:
                return _diagnose_signal(entries, *sig, matches, release)
        if role == R.FALLBACK:
            sig = _signal_match(entries, candidates, R.FALLBACK)
            if sig is not None:
                return _diagnose_signal(entries, *sig, matches, release)
    # no rule at all: the corpus's vocabulary, over the error lines (not the echoes)
    lex = L.lexicon()
    if lex is not None:
        reading = lex.read(
            entries,
            L.error_lines(entries, candidates, echoes),
            (r.id for r in R.RULES),
            deadline,
        )
        if reading is not None:
            return reading_lead(
                entries[reading.index],
                reading.category,
                reading.words,
                _evidence_around(entries, reading.index),
                unknown_answer(
                    entries, errorish, echoes, exit_status, systemd_result, candidates=candidates
                ),
            )
    return unknown_answer(
        entries, errorish, echoes, exit_status, systemd_result, candidates=candidates
    )


def _drop_chain_followers(
    entries: Sequence[JournalEntry], candidates: Sequence[int], matches: list[_Match]
) -> list[_Match]:
    """Causes named on a chain's later exceptions give way to its first (S.chain_followers)."""
    causes = [m for m in matches if m.role == R.CAUSE]
    if len(causes) < 2:
        return matches
    headers = [i for i in candidates if S.TRACEBACK in entries[i].text]
    drop = S.chain_followers(S.tracebacks(entries, headers), [m.index for m in causes])
    return [m for m in matches if m.role != R.CAUSE or m.index not in drop]


def _evidence_around(entries: Sequence[JournalEntry], i: int) -> list[JournalEntry]:
    """The lines of the read line's traceback (its frames), when it ends one."""
    block = _block(entries, i) if _EXC_LINE.match(entries[i].text) else ()
    return [entries[j] for j in block if j != i][-(MAX_EVIDENCE - 1) :]


def _raised(
    entries: Sequence[JournalEntry],
    candidates: Sequence[int],
    errorish: Sequence[int],
    echoes: set[int],
) -> list[S.Raised]:
    """Every exception the log raised, in order: the chains of its tracebacks (root first,
    the earliest failing source first) and, for a pasted fragment without its header, an
    exception line under a run of frames."""
    tbs = S.tracebacks(entries, [i for i in candidates if S.TRACEBACK in entries[i].text])
    out: list[S.Raised] = []
    covered: set[int] = set()
    for tb in tbs:
        for r in tb.chain:
            if not (S.WRAPPERS.search(r.message) or r.index in echoes):
                out.append(r)
            covered.add(r.index)
    for i in errorish:
        if i in covered or i in echoes:
            continue
        m = S.RAISED.match(entries[i].text) or S.RAY_WRAPPED.match(entries[i].text)
        if m is None:
            e = S.EMBEDDED_RAISED.search(entries[i].text)
            if e is not None:
                out.append(S.Raised(e["type"], e["msg"].strip(), i, ()))
            continue
        frames = tuple(
            S.Frame(fm["file"], int(fm["line"]), fm["func"] or "?", j)
            for j in _block(entries, i)
            if (fm := S.FRAME.match(entries[j].text)) is not None
        ) or _frames_below(entries, i)
        # a pasted exception without its traceback keeps its continuation lines too
        # ("DistNetworkError:" then "name: EADDRINUSE," on the lines below)
        message = S.pasted_message(entries, i, m["msg"])
        out.append(S.Raised(m["type"], message, i, frames))
    out.sort(key=lambda r: r.index)
    return out


def _frames_below(entries: Sequence[JournalEntry], i: int) -> tuple[S.Frame, ...]:
    """The frames right below an exception line that has none above it: a condensed paste
    (SGLang's scheduler wrapper line, the exception, then where it was raised), each frame line
    followed by at most one source line, the same source's lines only."""
    out: list[S.Frame] = []
    origin = entries[i].origin
    source_ok = False
    for j in range(i + 1, min(len(entries), i + 1 + 2 * _FRAMES_BELOW)):
        e = entries[j]
        if origin is not None and e.origin is not None and e.origin != origin:
            break
        fm = S.FRAME.match(e.text)
        if fm is not None:
            out.append(S.Frame(fm["file"], int(fm["line"]), fm["func"] or "?", j))
            source_ok = True
            continue
        if not source_ok or not e.text.strip() or S.RAISED.match(e.text) is not None:
            break
        source_ok = False
    return tuple(out)


_FRAMES_BELOW = 16


def _family_match(
    raised: Sequence[S.Raised],
) -> tuple[R.Rule, S.Raised, Family] | None:
    """The first exception (root first) that a rule's family claims, and that rule."""
    for r in raised:
        paths = [f.module_path() for f in r.frames]
        funcs = [f.function for f in r.frames]
        site = r.site.function if r.site is not None else None
        site_path = r.site.file.replace("\\", "/") if r.site is not None else None
        for rule in R.RULES:
            for fam in rule.families:
                if fam.matches(r.name, r.message, paths, site, funcs, site_path):
                    return rule, r, fam
    return None


def _signal_match(
    entries: Sequence[JournalEntry], candidates: Sequence[int], role: str
) -> tuple[R.Rule, int, Signal, tuple[str, ...]] | None:
    """The earliest candidate line whose event kinds and words a rule's signal (of `role`)
    claims: (rule, line, signal, the line's kinds)."""
    signals = [
        (rule, sg)
        for rule in R.RULES
        for sg in rule.signals
        if sg.role == role and not sg.refuted(entries[i].text for i in candidates)
    ]
    if not signals:
        return None
    words = tuple(dict.fromkeys(w for _, sg in signals for w in R.signal_keywords(sg)))
    for i in candidates:
        text = entries[i].text
        if not any(w in text for w in words) or R.BENIGN.search(text):
            continue  # (SGLang's "Ignore import error…" on every healthy start is no cause)
        e = entries[i]
        kinds = S.event_kinds(
            text, e.message[:MAX_LINE], e.priority if e.source == "journal" else None
        )
        if not kinds:
            continue
        for rule, sg in signals:
            if sg.matches(kinds, text):
                return rule, i, sg, kinds
    return None


def _diagnose_signal(
    entries: Sequence[JournalEntry],
    rule: R.Rule,
    index: int,
    signal: Signal,
    kinds: tuple[str, ...],
    matches: Sequence[_Match],
    release: Release | None,
) -> Diagnosis:
    """A diagnosis from a rule's signal (an event line no pattern knows)."""
    text = entries[index].text.strip()
    detail: dict[str, str] = {**_release_detail(release), **rule.defaults}
    detail["msg"] = text if len(text) <= 300 else text[:297] + "..."
    detail["kind"] = ", ".join(kinds)
    note_port(detail, text)
    _enrich(rule, detail, entries, index)
    summary = _fmt(signal.summary or (rule.title + " ({msg})"), detail)
    return _rule_answer(rule, detail, summary, [entries[index]], matches, signal.role)


_QUOTED = re.compile(r"['\"`]([\w.-]{1,200})['\"`]")


def _enrich(
    rule: R.Rule,
    detail: dict[str, str],
    entries: Sequence[JournalEntry],
    index: int,
    *,
    start: int | None = None,
) -> None:
    """Let the rule's enrich() read the lines around the cause (from `start` when given)."""
    if rule.enrich is None:
        return
    lo = start if start is not None else max(0, index - _ENRICH_AROUND)
    hi = min(len(entries), index + _ENRICH_AROUND)
    rule.enrich(detail, "\n".join(entries[j].text for j in range(lo, hi)))


def _diagnose_family(
    entries: Sequence[JournalEntry],
    rule: R.Rule,
    raised: S.Raised,
    family: Family,
    matches: Sequence[_Match],
    release: Release | None,
) -> Diagnosis:
    """A diagnosis from a rule's exception family (a wording no pattern knows)."""
    first = raised.message.split("\n", 1)[0]
    detail: dict[str, str] = {**_release_detail(release), **rule.defaults}
    detail["exc"] = raised.type
    detail["msg"] = first if len(first) <= 300 else first[:297] + "..."
    q = _QUOTED.search(first)
    if q is not None:
        detail.setdefault("module", q[1])
    note_port(detail, first)
    site = raised.site
    if site is not None:
        detail["frame"] = f"{site.module_path()}:{site.line} in {site.function}"
    _enrich(rule, detail, entries, raised.index)
    summary = _fmt(
        family.summary or (rule.title + " ({exc}: {msg})"),
        detail,
    )
    picked = [f.index for f in raised.frames[-3:]] + [raised.index]
    return _rule_answer(
        rule,
        detail,
        summary,
        [entries[j] for j in sorted(set(picked))][:MAX_EVIDENCE],
        matches,
        R.CAUSE,
        fix=_fmt(family.fix, detail) if family.fix else None,
    )


def _synthetic(
    systemd_result: str | None, exit_status: str | None, timed_out: bool
) -> tuple[R.Rule, str] | None:
    """The caller's facts as (rule, role): Result=oom-kill is a cause, timeout and
    start-limit-hit are fallbacks, a bare SIGKILL exit (137, 9/KILL) is a hint."""
    name, role = None, None
    if systemd_result in _RESULT_RULE:
        name = _RESULT_RULE[systemd_result]
    elif timed_out:
        name = "startup-timeout"
    elif exit_status and exit_status.split("/")[0].strip() in ("137", "9", "-9", "KILL"):
        name, role = "host-oom-killed", R.HINT
    if name is None:
        return None
    rule = R.rule(name)
    assert rule is not None
    return rule, role or rule.role


def _rule_answer(
    rule: R.Rule,
    detail: dict[str, str],
    summary: str,
    evidence: list[JournalEntry],
    matches: Sequence[_Match],
    role: str,
    *,
    fix: str | None = None,
    preflight_rule: str | None = None,
) -> Diagnosis:
    """A rule's answer: its fix (the rule's template over `detail` unless given), doc, title,
    preflight twin (a pattern's own first) and the other categories the log showed."""
    return Diagnosis(
        category=rule.id,
        summary=summary,
        evidence=evidence,
        fix=_fmt(rule.fix, detail) if fix is None else fix,
        doc=rule.doc,
        title=rule.title,
        detail=detail,
        preflight_rule=preflight_rule or rule.preflight_rule,
        also=_also(matches, rule.id),
        role=role,
    )


def _also(matches: Sequence[_Match], category: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in sorted(matches, key=lambda m: m.index):
        if m.rule.id != category:
            seen[m.rule.id] = None
    return list(seen)


def _release_detail(release: Release | None) -> dict[str, str]:
    """What fix texts name from the SGLang release the unit runs: its CUDA-graph flags, how
    to install it. Without a release (a saved log, no profile), the flags of every known
    release and no version."""
    if release is None:
        releases = list(reversed(sglang.RELEASES.values()))

        def either(key: str) -> str:
            names = list(dict.fromkeys(r.graph_flags[key] for r in releases))
            # the oldest known release that takes the newest one's flags says since when
            first = [r for r in releases if r.graph_flags == releases[0].graph_flags][-1]
            since = first.graph_flags_since or first.version
            return names[0] + (
                f" ({' or '.join(names[1:])} before SGLang {since})" if names[1:] else ""
            )

        return {
            "graph_max_bs": either("max_bs"),
            "graph_disable": either("disable"),
            "install": "pip install 'sglang[all]==<the SGLang version you run>'",
            "sglang_version": "?",
        }
    return {
        "graph_max_bs": release.graph_flags["max_bs"],
        "graph_disable": release.graph_flags["disable"],
        "install": release.install_hint,
        "sglang_version": release.version,
    }


def _diagnose(
    entries: Sequence[JournalEntry],
    winner: _Match,
    matches: Sequence[_Match],
    flags: Mapping[str, Any] | None,
    release: Release | None,
) -> Diagnosis:
    rule, p = winner.rule, winner.pat
    detail: dict[str, str] = {**_release_detail(release), **rule.defaults}
    detail.update(p.detail)
    detail.update({k: v.strip() for k, v in winner.m.groupdict().items() if v is not None})
    if "msg" in detail and len(detail["msg"]) > 300:
        detail["msg"] = detail["msg"][:297] + "..."
    if rule.id == "startup-timeout":
        detail["phase"] = _phase(entries)
    _enrich(rule, detail, entries, winner.index, start=winner.block[0] if winner.block else None)
    if rule.explain is not None:
        if flags is None:
            flags = flags_from_log(entries, near=(winner.index, *winner.block))
        summary, fix = rule.explain(detail, flags)
        detail.update({k: str(v) for k, v in flags.items() if k.startswith("speculative_")})
    else:
        summary = _fmt(p.summary or rule.summary, detail)
        fix = _fmt(p.fix or rule.fix, detail)
    if winner.role == R.HINT and p.summary is None:
        summary += " (inferred)"
    return _rule_answer(
        rule,
        detail,
        summary,
        _evidence(entries, winner),
        matches,
        winner.role,
        fix=fix,
        preflight_rule=p.preflight,
    )


def _diagnose_synthetic(
    entries: Sequence[JournalEntry],
    rule: R.Rule,
    role: str,
    matches: Sequence[_Match],
    systemd_result: str | None,
    exit_status: str | None,
    release: Release | None,
) -> Diagnosis:
    """A diagnosis from the caller's facts (systemd Result, exit status, our deadline)."""
    detail: dict[str, str] = {**_release_detail(release), **rule.defaults}
    if systemd_result:
        detail["systemd_result"] = systemd_result
    if exit_status:
        detail["exit_status"] = exit_status
    if rule.id == "startup-timeout":
        detail["phase"] = _phase(entries)
    own = [m for m in matches if m.rule.id == rule.id]
    if role == R.HINT:
        summary = (
            f"the service was killed with SIGKILL (exit status {exit_status}) and no error was "
            "logged before it: the usual sender is the kernel OOM killer (inferred, confirm "
            "with `dmesg -T | grep -i oom`)"
        )
    elif systemd_result == "oom-kill" and not own:
        summary = "systemd reports Result=oom-kill: the kernel OOM killer killed a process of the service (host memory, not GPU memory)"
    elif rule.id == "startup-timeout" and systemd_result != "timeout":
        summary = _fmt(
            "deploy's start deadline passed before /health answered; no error in the log (last step reached: {phase})",
            detail,
        )
    else:
        summary = _fmt(rule.summary, detail)
    evidence = _evidence(entries, own[0]) if own else []
    if not evidence and entries:
        evidence = [entries[-1]]
    return _rule_answer(rule, detail, summary, evidence, matches, role)


def classify_text(text: str, **kw: Any) -> Diagnosis:
    """Classify a saved log (`-o json`, `-o short*` or `-o cat`); same keywords as `classify`."""
    return classify(JournalLines(text), **kw)


# --------------------------------------------------------------------------- entry point


def write_docs(root: Path | None = None) -> Path:
    root = root or Path(__file__).resolve().parents[2]
    path = root / "docs" / "troubleshooting.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(troubleshooting_markdown())
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m orchestrator.diagnosis.diagnose",
        description="Classify a saved SGLang/systemd log, or regenerate docs/troubleshooting.md.",
    )
    ap.add_argument(
        "input", nargs="?", help="a saved log (journalctl -o json / short / cat); - for stdin"
    )
    ap.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    ap.add_argument("--write-docs", action="store_true", help="regenerate docs/troubleshooting.md")
    args = ap.parse_args(argv)
    if args.write_docs:
        print(f"wrote {write_docs()}")
        return 0
    if not args.input:
        ap.error("give a log FILE (or - for stdin), or --write-docs")
    text = sys.stdin.read() if args.input == "-" else Path(args.input).read_text(errors="replace")
    d = classify_text(text)
    print(json.dumps(d.to_json(), indent=2) if args.json else d.render_text())
    return 0 if d.known else 3


if __name__ == "__main__":
    sys.exit(main())
