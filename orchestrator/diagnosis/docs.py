"""docs/troubleshooting.md, generated from the rules."""

from __future__ import annotations

import contextlib

from orchestrator.diagnosis.catalog import RULES, UNKNOWN_DOC
from orchestrator.diagnosis.lexicon import THRESHOLD
from orchestrator.diagnosis.model import CAUSE, Family, Signal, example


def troubleshooting_markdown() -> str:
    """docs/troubleshooting.md, generated from `RULES` (regenerate: python -m orchestrator.diagnosis.diagnose --write-docs)."""
    out: list[str] = [
        "# Troubleshooting a failed start",
        "",
        "<!-- Generated from orchestrator/diagnosis/ by "
        "`python -m orchestrator.diagnosis.diagnose --write-docs`. Do not edit by hand. -->",
        "",
        "When a start fails, `deploy` reads the journal of that start (one systemd invocation) "
        "and names one category, the evidence lines and the fix. `deploy logs --classify "
        "[--input FILE]` does the same for a saved log (`journalctl -o json`, `-o short*` or "
        "`-o cat`).",
        "",
        "How the cause is chosen: lines that are consequences (echoes) never name the "
        "category; among the cause lines the earliest wins (by the second, then by the order "
        "of the categories below, then by line); systemd's give-up results (start-limit-hit, "
        "timeout) count only when no cause line is found, and a bare SIGKILL only as a last "
        "hint. When no pattern names a cause, each category's exception families are tried "
        "on the log's tracebacks, root exception first (SGLang's wrappers such as `Capture "
        "cuda graph failed` or the scheduler's exception wrapper are seen through), so a new "
        "wording of a known cause still lands in its category. The log's line prefix "
        "(docker, CRI, kubectl, compose, Ray, torchrun, srun, MPI, CI, syslog, journald) is "
        "learned from the log itself before any rule runs. When no rule at all matches, the "
        "corpus vocabulary (`orchestrator/diagnosis/lexicon.py`, learnt from the cause lines of "
        "the real logs in `tests/logs/real/` that are not held out) may read one error line as a "
        "category's cause line (when that category takes at least "
        f"{THRESHOLD:.3%} of the line's posterior): the answer stays `unknown` (role `reading`), "
        "with that line first in the evidence and the category it reads like named in the "
        "summary and the fix, as a lead. Named as the answer, the vocabulary gave 6 more right "
        "answers and 20 more wrong ones on the 714 held-out logs. Categories below are in "
        "priority order.",
        "",
        "| id | what it means |",
        "| --- | --- |",
    ]
    for r in RULES:
        out.append(f"| [`{r.id}`](#{r.id}) | {r.title} |")
    out.append(
        "| [`unknown`](#unknown) | no rule matched (never guessed; the vocabulary's reading, if "
        "any, is a lead) |"
    )
    out.append("")
    for r in RULES:
        out += [f"## {r.id}", "", f"**{r.title}.** {r.doc}", ""]
        if r.role != CAUSE:
            out += [f"Role: {r.role} (counts only when no cause line is found).", ""]
        if r.examples:
            out += ["What is printed:", "", "```"]
            out += [line for ex in r.examples for line in ex.splitlines()]
            out += ["```", ""]
        for fam in r.families:
            out += [_family_line(fam), ""]
        for sg in r.signals:
            out += [_signal_line(sg), ""]
        fix = r.fix
        with contextlib.suppress(KeyError, ValueError):
            fix = fix.format_map(_Blank(r.defaults))
        out += [f"Fix: {fix}", ""]
        if r.preflight_rule:
            out += [
                f"Preflight twin: `{r.preflight_rule}` (`deploy validate` catches it before a start).",
                "",
            ]
    out += ["## unknown", "", UNKNOWN_DOC, ""]
    out += [
        "## Echoes (never the cause)",
        "",
        "```",
        example("sigquit"),
        example("scheduler-died", rank=3, code=-9),
        example("scheduler-exception", traceback="Traceback (most recent call last):")
        + "   (the traceback below it is read)",
        example("init-failed"),
        "sglang-kimi.service: Main process exited, code=exited, status=1/FAILURE",
        "sglang-kimi.service: Failed with result 'exit-code'.",
        "```",
        "",
    ]
    return "\n".join(out)


class _Blank(dict[str, str]):
    """format_map helper: a missing field reads as its name in angle brackets."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _family_line(fam: Family) -> str:
    """A rule's exception family, in words, for the docs."""
    exc = " / ".join(f"`{e}`" for e in fam.exceptions) or "any exception"
    said = " or ".join(f"“{w}”" for w in fam.words)
    where = " or ".join(
        [f"`{f}`" for f in fam.frames] + [f"a call of `{f}`" for f in fam.functions]
    )
    cond = [f"whose message says {said}" if said else "", f"raised under {where}" if where else ""]
    joined = (" and " if fam.both else " or ").join(c for c in cond if c)
    if fam.and_words:
        also = " or ".join(f"“{w}”" for w in fam.and_words)
        joined = (f"{joined} and " if joined else "") + f"whose message also says {also}"
    if fam.shape_doc:
        joined = (f"{joined} and " if joined else "") + f"whose message {fam.shape_doc}"
    if fam.site_frames:
        mods = " or ".join(f"`{f}`" for f in fam.site_frames)
        joined = (f"{joined} and " if joined else "") + f"raised in a module under {mods}"
    if fam.site_functions:
        fns = " / ".join(f"`{f}`" for f in fam.site_functions)
        joined = (f"{joined} and " if joined else "") + f"raised by {fns} itself"
    if fam.unless:
        nots = " or ".join(f"“{w}”" for w in fam.unless)
        joined = (f"{joined}, " if joined else "") + f"unless its message says {nots}"
    return f"Also named, in any wording, for {exc}" + (f" {joined}" if joined else "") + "."


def _signal_line(sg: Signal) -> str:
    """A rule's signal over event lines, in words, for the docs."""
    kinds = " and ".join(f"{k}" for k in sg.kinds)
    said = " or ".join(f"“{w}”" for w in sg.words)
    line = f"Also named, in any wording, for a line that is {kinds}" + (
        f" and says {said}" if said else ""
    )
    if sg.and_words:
        line += " and also " + " or ".join(f"“{w}”" for w in sg.and_words)
    if sg.role != CAUSE:
        line += f" (as a {sg.role}: only when no cause is logged)"
    return line + "."
