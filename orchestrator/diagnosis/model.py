"""The one shape of a rule: a `Rule` names a category, its words and fix, and its `Pat`terns.

Roles
-----
- ``cause``: the line names a root cause.
- ``fallback``: a cause only when no ``cause`` line is in the log (systemd gave up or our
  deadline passed: the real error, if any was logged, explains it).
- ``hint``: weak evidence (a bare SIGKILL): used only when there is neither a cause nor a
  fallback, and the summary says it is inferred.
- ``echo``: a consequence of an earlier failure (SGLang's sigquit, scheduler-exception and
  init-failed messages, systemd's "Failed with result 'exit-code'"). An echo never names the
  category.
"""

from __future__ import annotations

import re
import re._constants as sre_constants
import re._parser as sre_parser
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from orchestrator import sglang
from orchestrator.sglang import code

CAUSE = "cause"
FALLBACK = "fallback"
HINT = "hint"
ECHO = "echo"
# no rule matched (the category is `unknown`); the corpus vocabulary reads one error line as a
# category's cause line, given as a lead (diagnosis.lexicon)
READING = "reading"

# An exception line at the end of a traceback: optional indent, optional dotted module path.
_EXC = r"^\s*(?:[\w.]+\.)?"
# An exception class from a package's exceptions module, whatever its name ends in
# ("triton.runtime.errors.OutOfResources"): structure.RAISED and answer's exception line
EXC_MODULE_CLASS = r"(?:[A-Za-z_]\w{0,60}\.){0,8}(?:errors|exceptions|exc)\.[A-Z]\w{1,80}"
# SGLang's frames (orchestrator/sglang/code.py): its speculative argument handling, its drafter
_SPEC_FRAMES = code.SPEC_ARGS_FRAMES
_DRAFT_FRAMES = code.DRAFT_FRAMES


# A regex that begins (after _EXC) with an exception name or a group of them, all *Error.
_MANDATORY_ERROR = re.compile(
    re.escape(_EXC) + r"(?:\(\?P<exc>)?(?:\(\?:)?\w*Error(?:\|\w*Error)*\)?:"
)


@dataclass(frozen=True)
class Pat:
    """One pattern of a rule.

    ``keywords``: substrings, one of which every line this regex matches contains (the
    classifier tries the regex only on lines that hold a keyword): derived from the regex's
    literal parts (`literals`), named by hand only for a regex without one. ``derived``: they
    were derived. ``context``: regexes that
    must ALL match somewhere in the traceback the line ends (the lines back to
    "Traceback (most recent call last):", same PID). ``summary``/``fix`` override the rule's.
    """

    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    context: tuple[re.Pattern[str], ...] = ()
    role: str | None = None  # None: the rule's role
    preflight: str | None = None  # None: the rule's preflight_rule
    gate: str | None = None  # a substring the regex itself guarantees (first-stage prefilter)
    summary: str | None = None
    fix: str | None = None
    detail: Mapping[str, str] = field(default_factory=dict)
    # a regex the line's origin (the shipper's or logger's prefix the reader took off: pod,
    # rank, process, logger location) must match; None: any origin
    origin: re.Pattern[str] | None = None
    # a storm: the pattern counts only when it matched at least this many lines (an event a
    # healthy server also prints now and then, such as SGLang's KV-cache retraction)
    min_count: int = 1
    derived: bool = True
    # the pattern names a cause only on a line not logged at WARNING level or below (a refusal
    # worded like a notice the engine also logs when it turns a feature off and goes on)
    errors_only: bool = False
    # categories this pattern's match explains (dropped, as a rule's `explains` drops them),
    # for a pattern that names the cause of another rule's error only by itself: NCCL's
    # "Failed to CUDA calloc N bytes" under its "unhandled cuda error" is the GPU's OOM
    explains: tuple[str, ...] = ()


# The shortest literal a derived keyword may be: shorter ones ("at", "E") hold in most lines and
# would make the pre-filter useless (the rule then names its keywords itself).
MIN_KEYWORD = 4


def literals(regex: str, flags: int = 0) -> tuple[str, ...] | None:
    """Substrings, one of which every match of `regex` contains, read off the regex's literal
    parts (its mandatory runs of plain characters, and the alternatives of a mandatory
    group): the classifier's cheap pre-filter keywords, so they are never typed twice. None
    when the regex has no such part of at least MIN_KEYWORD characters in every alternative
    (or ignores case, which `str.find` cannot)."""
    if flags & re.IGNORECASE or regex.startswith("(?i"):
        return None
    try:
        tree = sre_parser.parse(regex, flags)
    except re.error:
        return None
    found = _required(list(tree))
    return tuple(dict.fromkeys(found)) if found else None


def _required(items: Sequence[Any]) -> list[str] | None:
    """The best requirement of a sequence of parsed items: a run of literals, or the
    alternatives of a mandatory group; the one with the longest shortest member wins."""
    options: list[list[str]] = []
    run: list[str] = []

    def close() -> None:
        if len("".join(run)) >= MIN_KEYWORD:
            options.append(["".join(run)])
        run.clear()

    for op, av in items:
        if op is sre_constants.LITERAL:
            run.append(chr(av))
            continue
        close()
        sub: list[str] | None = None
        if op is sre_constants.SUBPATTERN:
            sub = _required(list(av[-1]))
        elif op is sre_constants.BRANCH:
            alts = [_required(list(b)) for b in av[1]]
            sub = None if any(a is None for a in alts) else [x for a in alts if a for x in a]
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and av[0] >= 1:
            sub = _required(list(av[2]))
        elif op is sre_constants.ATOMIC_GROUP:
            sub = _required(list(av))
        if sub:
            options.append(sub)
    close()
    if not options:
        return None
    return max(options, key=lambda o: (min(len(x) for x in o), -len(o)))


# A pattern that opens with `.*` matches, if at all, from the line's first character: anchor
# it there, or `search` retries it from every position (quadratic; cubic with a second `.*`).
_LEADING_DOTSTAR = re.compile(r"^(?:\(\?P<\w+>)?\.\*")


def linear(regex: str) -> str:
    """`regex`, anchored at the start when it opens with `.*` (the same matches, found once)."""
    return r"\A" + regex if _LEADING_DOTSTAR.match(regex) else regex


def pat(
    regex: str,
    keywords: tuple[str, ...] | str = (),
    *,
    context: tuple[str, ...] | str = (),
    role: str | None = None,
    preflight: str | None = None,
    gate: str | None = None,
    summary: str | None = None,
    fix: str | None = None,
    flags: int = 0,
    origin: str | None = None,
    min_count: int = 1,
    explains: tuple[str, ...] = (),
    errors_only: bool = False,
    **detail: str,
) -> Pat:
    derived = literals(regex, flags)
    if derived is not None:
        kws = derived
    elif keywords:
        kws = (keywords,) if isinstance(keywords, str) else keywords
    else:
        raise ValueError(
            f"pattern {regex[:80]!r} has no literal part to derive its keywords from: name them"
        )
    ctx = (context,) if isinstance(context, str) else context
    if gate is None and _MANDATORY_ERROR.match(regex):
        gate = "rror"  # the line holds "...Error:", so "rror" finds it
    return Pat(
        regex=re.compile(linear(regex), flags),
        keywords=kws,
        context=tuple(re.compile(c, re.M) for c in ctx),
        role=role,
        preflight=preflight,
        gate=gate,
        summary=summary,
        fix=fix,
        detail=detail,
        origin=re.compile(origin) if origin is not None else None,
        min_count=min_count,
        derived=derived is not None,
        explains=explains,
        errors_only=errors_only,
    )


def said(
    mid: str,
    *,
    context: tuple[str, ...] | str = (),
    anywhere: bool = False,
    role: str | None = None,
    preflight: str | None = None,
    summary: str | None = None,
    fix: str | None = None,
    fields: Mapping[str, str] | None = None,
    suffix: str | None = None,
    min_count: int = 1,
    head: bool = False,
    **detail: str,
) -> tuple[Pat, ...]:
    """Patterns for an SGLang message, from its text in every known release (one pattern per
    distinct wording; orchestrator/sglang holds the texts). The whole text is the `msg` group,
    the exception class (when SGLang raises it) the `exc` group, each field a group of its own.
    `anywhere`: the text may stand inside a longer line (a logger prefix, a wrapper).
    `suffix`: a message SGLang may append to this one (optional in the match).
    `head`: also its first sentence alone, at the end of a line (a paste cut after it)."""
    out: list[Pat] = []
    tail = "".join(f"(?:{t.regex()})?" for t in sglang.all_messages(suffix)[:1]) if suffix else ""
    bodies: list[tuple[sglang.Message, str]] = []
    for m in sglang.all_messages(mid):
        bodies.append((m, f"(?P<msg>{m.regex(**(fields or {}))}{tail})"))
        first = m.head_regex(**(fields or {})) if head else None
        if first is not None:
            bodies.append((m, f"(?P<msg>{first})\\s*$"))
    for m, body in bodies:
        exc = f"(?P<exc>{re.escape(m.exc)}): " if m.exc and not anywhere else None
        regex = _EXC + exc + body if exc else _word_start(body)
        p = pat(
            regex,
            context=context,
            role=role,
            preflight=preflight if preflight is not None else m.preflight,
            summary=summary,
            fix=fix,
            min_count=min_count,
        )
        out.append(replace(p, detail=dict(detail)) if detail else p)
    return tuple(out)


# a message that opens with a run of word characters (a package or process name field)
_OPENS_WITH_WORD = re.compile(r"^\(\?P<msg>\(\?P<\w+>(?:\[\\w-\]|\\w)[+*]\)")


def _word_start(body: str) -> str:
    """`body`, searched anywhere in a line: when it opens with a run of word characters, it
    may start only where a word does. The leftmost match is the same (a match from inside
    a word also matches from the word's start), but `search` no longer retries it from every
    character of a long word (quadratic on a long line)."""
    return r"(?<![\w-])" + body if _OPENS_WITH_WORD.match(body) else body


def under(path: str, function: str, exception: str, *, line: int = 1) -> str:
    """An example log fragment: `exception` raised under the frame (path, function), as a
    Python traceback prints it (rule examples are logs: each must classify to its rule)."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "{path}", line {line}, in {function}\n'
        "    ...\n"
        f"{exception}"
    )


def example(mid: str, **values: object) -> str:
    """What the newest release prints for message `mid` (for the docs' examples)."""
    return sglang.NEWEST.message(mid).line(**values)


SHAPE_CHARS = 2000


@cache
def _shape(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


@dataclass(frozen=True)
class Family:
    """One of a rule's exception families, over the structure rather than the wording: it names the
    rule when a traceback's root exception has one of `exceptions` (the type's own name, any
    module; empty: any type) and, if given, a message holding one of `words` OR a frame in one
    of `frames` (module paths such as `transformers/models/auto/`) or of `functions`. The rule's patterns name
    the known wordings; the family catches a new wording of the same cause (a generic fallback,
    tried only when no pattern names a cause).

    `and_words`: the message must ALSO hold one of these (a topic AND what went wrong, e.g.
    "LoRA" and "support"). `site_functions`: the exception was raised in one of these
    functions (its innermost frame), not merely below them (a warm-up's own assertion, not
    a CUDA error deep in the model the warm-up ran). `unless`: a message holding one of these
    words is not of the family (a narrower cause the same exception type also carries)."""

    exceptions: tuple[str, ...]
    words: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    both: bool = False  # the words AND the frames (default: either)
    summary: str | None = None  # a template over exc, msg, frame
    and_words: tuple[str, ...] = ()
    site_functions: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()  # a message holding one of these is not of the family
    # frames whose function is one of these (any module) count as `frames` do: a code path
    # named by its functions (SGLang's serving loop) rather than by its files
    functions: tuple[str, ...] = ()
    # the frame that raised it (the innermost) is in one of these modules (a package's own
    # module-level code, not a user's script that imports it)
    site_frames: tuple[str, ...] = ()
    # the message must ALSO read like this regular expression (searched in its first
    # SHAPE_CHARS characters; bounded repeats only, so linear): a relation that words alone
    # cannot say ("requires" followed by a GPU generation, not "SM90 ... requires both
    # scales"); `shape_doc` says it in words for the docs
    shape: str = ""
    shape_doc: str = ""
    # what to change, when the family's cause asks for another fix than the rule's patterns
    # (a template over exc, msg, frame and the rule's details, like `summary`)
    fix: str | None = None

    def matches(
        self,
        name: str,
        message: str,
        frame_paths: Sequence[str],
        site_function: str | None = None,
        frame_functions: Sequence[str] = (),
        site_path: str | None = None,
    ) -> bool:
        if self.exceptions and name not in self.exceptions:
            return False
        if self.site_frames and not (
            site_path is not None and any(f in site_path for f in self.site_frames)
        ):
            return False
        if self.unless and any(w in message for w in self.unless):
            return False
        if self.and_words and not any(w in message for w in self.and_words):
            return False
        if self.shape and _shape(self.shape).search(message[:SHAPE_CHARS]) is None:
            return False
        if self.site_functions and site_function not in self.site_functions:
            return False
        said = any(w in message for w in self.words)
        where = any(f in p for f in self.frames for p in frame_paths) or any(
            f in self.functions for f in frame_functions
        )
        if self.both:
            return said and where
        if not self.words and not self.frames and not self.functions:
            return True
        return said or where


@dataclass(frozen=True)
class Signal:
    """A rule's family over a typed event line (`structure.event_kinds`) rather than a
    traceback: it names the rule when a line is of ALL the `kinds` (e.g. "c10d" and
    "error-level"), holds one of `words` and, if given, one of `and_words`. `words` are literal:
    the line's pre-filter keywords are they or a kind's keywords derived from its regex
    (catalog.signal_keywords). Tried, like families, only when
    no pattern names a cause; `role` makes it a fallback (a wrapper whose cause was not
    logged)."""

    kinds: tuple[str, ...]
    words: tuple[str, ...] = ()  # empty: the kinds alone
    and_words: tuple[str, ...] = ()
    role: str = CAUSE
    summary: str | None = None  # a template over msg, kind
    # words that, on any line of the log, say the cause was logged after all (a wrapper's
    # fallback does not stand for a cause the log shows, even one no rule names)
    unless_logged: tuple[str, ...] = ()

    def refuted(self, texts: Iterable[str]) -> bool:
        """A line of `texts` holds one of `unless_logged`."""
        return bool(self.unless_logged) and any(w in t for t in texts for w in self.unless_logged)

    def matches(self, kinds: Sequence[str], text: str) -> bool:
        return (
            all(k in kinds for k in self.kinds)
            and (not self.words or any(w in text for w in self.words))
            and (not self.and_words or any(w in text for w in self.and_words))
        )


@dataclass(frozen=True)
class Rule:
    id: str  # stable category id (used in --json output and docs anchors)
    title: str
    summary: str  # one line; a str.format template over the detail fields
    fix: str  # template over the detail fields
    doc: str  # what it means, for docs/troubleshooting.md
    patterns: tuple[Pat, ...]
    role: str = CAUSE
    defaults: Mapping[str, str] = field(default_factory=dict)
    explains: tuple[str, ...] = ()
    preflight_rule: str | None = None  # the preflight twin that catches it before a start
    examples: tuple[str, ...] = ()  # what is printed (docs; every example must classify here)
    # Builds (summary, fix) itself, from the detail and the unit's flags (shared knowledge).
    explain: Callable[[Mapping[str, str], Mapping[str, Any]], tuple[str, str]] | None = None
    # Adds detail fields read from the lines around the cause (versions, GPU, port), so that
    # the summary and the fix speak of this box rather than a reference one.
    enrich: Callable[[dict[str, str], str], None] | None = None
    # The generic fallbacks over tracebacks' structure (see Family).
    families: tuple[Family, ...] = ()
    # The generic fallbacks over typed event lines (see Signal).
    signals: tuple[Signal, ...] = ()
