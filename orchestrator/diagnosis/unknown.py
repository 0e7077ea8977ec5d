"""The `unknown` answer: no rule matched. Not a guess: the likeliest cause lines (the root
exception and the frame that raised it, else the first ERROR-level line, else the first
exception line) lead the evidence, then the last error lines."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import structure as S
from orchestrator.diagnosis.answer import (
    _CONTEXT_WINDOW,
    _EXC_LINE,
    _TRACEBACK,
    MAX_EVIDENCE,
    Diagnosis,
)
from orchestrator.diagnosis.journal import JournalEntry
from orchestrator.diagnosis.model import READING
from orchestrator.sglang.flags import refused_choice_hint, refused_flag_hint

__all__ = ["unknown_answer"]


def _first_traceback_exception(
    entries: Sequence[JournalEntry], errorish: Sequence[int], echoes: set[int]
) -> int | None:
    """The last line of the first traceback that does not end in an echo: its exception."""
    for i in errorish:
        if _TRACEBACK in entries[i].text:
            for j in range(i + 1, min(len(entries), i + 1 + _CONTEXT_WINDOW)):
                if _EXC_LINE.match(entries[j].text):
                    if j not in echoes:
                        return j
                    break
    return None


# SGLang's argument parser refusing its command line (argparse's words; the program is SGLang's:
# `launch_server.py`, `sglang`, `python3 -m sglang.launch_server`): no category, but the flag
# tables of the releases deploy knows can say which releases have the flag or the value
_SGLANG_ARGPARSE = re.compile(
    r"(?:launch_server(?:\.py)?|sglang(?: serve)?): error: (?:unrecognized arguments: (?P<flags>[^\n]{1,400})"
    r"|argument (?P<arg>--[\w-]{1,80})(?:/[\w-]{1,80})?: invalid choice: '(?P<value>[^'\n]{0,80})')"
)


def _refused_flags_fix(entries: Sequence[JournalEntry], errorish: Sequence[int]) -> str | None:
    """The fix for SGLang's argument parser refusing flags or a value, if a line says so."""
    for i in errorish:
        text = entries[i].text
        m = _SGLANG_ARGPARSE.search(text) if ": error: " in text else None
        if m is None:
            continue
        if m["flags"]:
            hints = [refused_flag_hint(w) for w in m["flags"].split() if w.startswith("--")]
            if hints:
                return "SGLang's argument parser refused the command line: " + "; ".join(hints[:3])
        elif m["arg"]:
            return "SGLang's argument parser refused a value: " + refused_choice_hint(
                m["arg"], m["value"]
            )
    return None


_ERROR_LEVEL = re.compile(r"(?:^|[\s|\]:])(?:ERROR|CRITICAL|FATAL)\b|^\[?E\d{3,4} |\[rank\d+\]:\[E")


def _first_error_level(
    entries: Sequence[JournalEntry], errorish: Sequence[int], skip: set[int]
) -> int | None:
    """The first line logged at ERROR level (journal priority <= 3, or an ERROR / glog E
    marker in the line), echoes left out."""
    for i in errorish:
        if i in skip:
            continue
        e = entries[i]
        if (
            e.priority is not None and e.priority <= 3 and e.source == "journal"
        ) or _ERROR_LEVEL.search(e.message):
            return i
    return None


def unknown_answer(
    entries: Sequence[JournalEntry],
    errorish: Sequence[int],
    echoes: Sequence[int],
    exit_status: str | None,
    systemd_result: str | None,
    *,
    candidates: Sequence[int] = (),
) -> Diagnosis:
    """No rule matched. Not a guess: the likeliest cause lines (the root exception: the first
    exception of the first traceback's chain that is not a wrapper, with the frame that raised
    it; else the first ERROR-level line, else the first exception line) lead the evidence,
    then the last error lines."""
    echo_set = set(echoes)
    tbs = S.tracebacks(entries, [i for i in candidates if S.TRACEBACK in entries[i].text])
    rooted = S.root_exception(tbs)
    first_tb = rooted[1].index if rooted is not None and rooted[1].index not in echo_set else None
    root_frame = rooted[1].site.index if rooted is not None and rooted[1].site is not None else None
    if first_tb is None:
        first_tb = _first_traceback_exception(entries, errorish, echo_set)
        root_frame = None
    first_exc = first_tb
    if first_exc is None:
        first_exc = next(
            (i for i in errorish if i not in echo_set and _EXC_LINE.match(entries[i].text)),
            None,
        )
    first_err = _first_error_level(
        entries, errorish, echo_set | {first_exc or -1, root_frame or -1}
    )
    lead = [i for i in (first_exc, root_frame, first_err) if i is not None]
    tail = [i for i in errorish if i not in lead][-(MAX_EVIDENCE - len(lead)) :]
    picked = lead + sorted(tail)
    if not picked:
        picked = list(range(max(0, len(entries) - 5), len(entries)))
    evidence = [entries[i] for i in picked][:MAX_EVIDENCE]
    what = []
    if systemd_result:
        what.append(f"systemd result {systemd_result!r}")
    if exit_status:
        what.append(f"exit status {exit_status}")
    if lead:
        said_ = " and ".join(repr(entries[i].text.strip()[:160]) for i in lead)
        which = (
            "the root exception"
            if first_tb is not None and rooted is not None and first_tb == rooted[1].index
            else "the last line of the first traceback"
            if first_tb is not None
            else "the first exception"
        )
        if root_frame is not None:
            which += " and the frame that raised it"
        if first_err is not None:
            which += (
                " and the first ERROR-level line"
                if first_exc is not None
                else "the first ERROR-level line"
            )
            if first_exc is None:
                which = "the first ERROR-level line"
        summary = (
            f"no rule recognises this failure (not guessed); the likeliest cause lines, {which}: "
            f"{said_}; the last error lines follow"
        )
    elif echoes:
        summary = (
            "the log holds only consequences of a failure (e.g. "
            f"{entries[echoes[0]].text.strip()[:120]!r}), not its cause; the last error lines are shown"
        )
    else:
        summary = "no rule recognises this failure (not guessed); the last error lines are shown"
    if what:
        summary += " (" + ", ".join(what) + ")"
    return Diagnosis(
        category="unknown",
        summary=summary,
        evidence=evidence,
        fix=_refused_flags_fix(entries, errorish)
        or (
            "read the evidence (the first lines are the likeliest cause) and the full log "
            "(`deploy logs`); if an earlier start or another rank printed the error, classify that "
            "invocation; report the lines so a rule can be added"
        ),
        doc=R.UNKNOWN_DOC,
        title="no rule matched",
        role="unknown",
    )


def reading_lead(
    line: JournalEntry,
    category: str,
    words: Sequence[str],
    around: Sequence[JournalEntry],
    base: Diagnosis,
) -> Diagnosis:
    """`unknown` (the answer `base`), with `line`, which the corpus vocabulary reads as a
    category's cause line by `words`, leading the evidence (then `around`: its traceback's
    frames) and the category named in the summary and the fix: a lead for the operator, not an
    answer. Named as the answer, the vocabulary bought 6 right answers for 20 wrong ones on the
    714 held-out logs (batches J, L, M, Q), so it no longer names one."""
    rule = R.rule(category)
    assert rule is not None  # the vocabulary names only the categories it was given: rule ids
    text = line.text.strip()
    said_ = ", ".join(repr(w) for w in words)
    summary = (
        f"no rule recognises this failure (not guessed); by its words ({said_}) the line "
        f"{text[:200]!r} reads like {rule.title.lower()} ({rule.id}): a reading of the corpus "
        "vocabulary, not a rule's match"
    )
    lead = [line, *around]
    seen = {id(x) for x in lead}
    evidence = (lead + [x for x in base.evidence if id(x) not in seen])[:MAX_EVIDENCE]
    fix = (
        f"if that line is the cause, it reads as {rule.id} (docs/troubleshooting.md#{rule.id}): "
        f"{rule.title}; otherwise {base.fix}"
    )
    return dataclasses.replace(
        base,
        summary=summary,
        evidence=evidence,
        fix=fix,
        detail={**base.detail, "reads_like": rule.id},
        role=READING,
    )
