"""The reader: any saved log, as the lines its program wrote, before any rule runs.

Shape (after Vector's kubernetes_logs source: sniff once, parse to one shape, then join):

1. **Sniff the container format** from the first lines and stay with it: docker's json-file
   (`{"log": "...\\n", "stream": ..., "time": ...}`; a record without the trailing newline is a
   partial, joined with the next) and CRI (`<time> stdout|stderr P|F msg`; `P` records are
   joined up to their `F`). journalctl's own forms (json, short*, cat) are read by
   `orchestrator.diagnosis.journal.JournalLines`, which calls this module for everything else.
2. **Learn the per-line prefix from the log itself**, not from a list: whatever stands before
   the anchors a program's own output is sure to have (`Traceback (most recent call last):`,
   a traceback frame `File "...", line N, in f`, SGLang's `[YYYY-MM-DD hh:mm:ss TPn]`
   header) is a shipper's prefix. Each is reduced to a *shape* (digit runs become `\\d+`,
   space runs ` +`, everything else literal), and every shape seen at least twice (with its
   shorter heads, cut after `] `, `) `, `| `, `: `) strips the lines that start with it. So
   kubectl `--prefix --timestamps`, compose, Ray `(pid=N)`, torchrun `[default3]:`, `srun -l`,
   Open MPI `[1,0]<stderr>:`, CI timestamps, RFC 5424 syslog and `journalctl -o
   short-monotonic` are all just prefixes, and so is one nobody listed.
   The prefix without its time stamps names the line's *origin* (the pod, the rank, the
   PID), which keeps interleaved tracebacks apart.
3. **Put the lines in order**: a newest-first export (a traceback whose frames stand above
   its header) is reversed; terminal lines hard-wrapped at a fixed width are joined.

ANSI colour codes are removed first. No pattern here backtracks: every one is anchored and
linear, and lines are capped (`MAX_LINE`) before any pattern runs.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from orchestrator.diagnosis.lines import ANSI, MAX_LINE, LazyStrings

__all__ = ["Origins", "Read", "learn_prefixes", "origin_of", "read_lines", "sniff"]

_TRACEBACK = "Traceback (most recent call last):"
# Where a program's own output is sure to begin: a traceback header, a frame, SGLang's header.
_SGL_HEADER = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: [A-Z]{1,4}\d{1,4})*\] "
_ANCHOR = re.compile(
    r"Traceback \(most recent call last\):"
    r"|(?P<frame>File \"[^\"\n]{1,400}\", line \d+)"
    r"|"
    + _SGL_HEADER
    + r"|(?<![\w.])(?:[a-z_]\w{0,40}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception|Exit|Interrupt)(?::|$)"
)
_SGL_AT = re.compile(_SGL_HEADER)
_SHAPE_TOKEN = re.compile(r"\d+| +|[^\d ]")
# Where a prefix may be cut into a shorter head (a wrapper inside a wrapper).
_HEAD_END = re.compile(r"(?:\] |\) |\| |: |\]:|> )")
# Time stamps inside a prefix: they vary line by line and say nothing of the origin.
_TIMEISH = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\b\d\d:\d\d:\d\d(?:[.,]\d+)?|\[ *\d+\.\d+\]|^<\d{1,3}>\d "
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d\b"
    r"|\b(?:stdout|stderr) [PF]\b"
)
# A program's words, not a shipper's: an exception or warning named before the anchor
# ("RuntimeError: Worker failed: Traceback ..."), a run of five plain words, or the NVIDIA
# kernel module's own tag (dmesg's "NVRM: Xid (PCI:…): 79, …" on every line of a paste).
_PROSE = re.compile(
    r"[Ee]rror\b|rror:|[Ee]xception|Traceback|[Ww]arning:|(?:\b[a-z]{2,}\b[ ,]+){4}[a-z]{2,}\b"
    r"|\bNVRM:"
    # code, not a prefix: a Python keyword right before an exception's name (IPython's
    # numbered source listing, "     33 except ImportError:")
    r"|\b(?:except|raise|return|import|from|assert|yield|not|and|or|else|elif|if|is) $"
)
_MAX_PREFIX = 300
_MAX_SHAPES = 64  # the most frequent prefix shapes kept (one alternation, bounded)
_EDGE = 2000  # lines read whole at each end of the log
_MAX_ANCHOR_LINES = 4000
_ANCHOR_KEYS = ("Traceback (most recent", 'File "', "Error", "Exception")
_MIN_SEEN = 2
_SAMPLE = 200


@dataclass(frozen=True)
class Read:
    """The lines a log's programs wrote, in order, with each line's origin (or None)."""

    lines: list[str]
    origins: Sequence[str | None] | None  # None: no prefix was learned
    shipper: str  # "docker-json", "cri" or "text"
    reversed: bool = False
    unwrapped_width: int | None = None
    timestamps_us: list[int | None] | None = None  # from the container format, when it has them


# --------------------------------------------------------------------------- containers

_CRI = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?:stdout|stderr) (?P<tag>[PF]) ?(?P<msg>.*)$"
)
_DOCKER_HEAD = '{"log":'


def _iso_us(ts: str) -> int | None:
    """An RFC 3339 time (any fraction, Z or offset) in µs since the epoch; None if not one."""
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", ts)
    if m is None:
        return None
    tz = m[3] or ""
    tz = "+00:00" if tz == "Z" else (tz if ":" in tz or not tz else tz[:3] + ":" + tz[3:])
    try:
        dt = datetime.fromisoformat(m[1] + tz)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    us = int(dt.timestamp()) * 1_000_000
    return us + int((m[2] or "0").ljust(6, "0")[:6])


def sniff(lines: Sequence[str]) -> str:
    sample = [ln for ln in lines[:_SAMPLE] if ln.strip()][:50]
    if not sample:
        return "text"
    docker = sum(1 for ln in sample if ln.lstrip().startswith(_DOCKER_HEAD))
    cri = sum(1 for ln in sample if _CRI.match(ln[:MAX_LINE]))
    if docker * 2 >= len(sample):
        return "docker-json"
    if cri * 2 >= len(sample):
        return "cri"
    return "text"


def _docker(lines: Sequence[str]) -> tuple[list[str], list[int | None]]:
    out: list[str] = []
    stamps: list[int | None] = []
    part = ""
    for ln in lines:
        s = ln.strip()
        if not s.startswith("{"):
            if s:
                out.append(ln)
                stamps.append(None)
            continue
        try:
            obj = json.loads(s)
        except ValueError:
            out.append(ln)
            stamps.append(None)
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("log"), str):
            continue
        text = part + obj["log"]
        if not text.endswith("\n") and len(text) < 1024 * 1024:  # a partial: the rest follows
            part = text
            continue
        part = ""
        t = obj.get("time")
        out.append(text.rstrip("\n"))
        stamps.append(_iso_us(t) if isinstance(t, str) else None)
    if part:
        out.append(part)
        stamps.append(None)
    return out, stamps


def _cri(lines: Sequence[str]) -> tuple[list[str], list[int | None]]:
    out: list[str] = []
    stamps: list[int | None] = []
    part = ""
    for ln in lines:
        m = _CRI.match(ln)
        if m is None:
            if ln.strip():
                out.append(ln)
                stamps.append(None)
            continue
        text = part + m["msg"]
        if m["tag"] == "P" and len(text) < 1024 * 1024:
            part = text
            continue
        part = ""
        out.append(text)
        stamps.append(_iso_us(m["ts"]))
    if part:
        out.append(part)
        stamps.append(None)
    return out, stamps


# --------------------------------------------------------------------------- prefixes


def _shape(prefix: str) -> str:
    """A prefix as a regex: digit runs `\\d+`, space runs ` +`, anything else literal."""
    out: list[str] = []
    for tok in _SHAPE_TOKEN.findall(prefix):
        if tok[0].isdigit():
            out.append(r"\d+")
        elif tok[0] == " ":
            out.append(" +" if len(tok) > 1 else " ")
        else:
            out.append(re.escape(tok))
    return "".join(out)


def _anchor_lines(text: str, middle: bool = True) -> list[str]:
    """The lines worth looking at for anchors: the first and last few thousand (a shipper's
    prefix is on every line) and, in between, the lines that hold a traceback's words, found
    with str.find over the text itself (C speed: a 200k-line log is neither split nor matched
    line by line)."""
    head_end = 0
    for _ in range(_EDGE):
        head_end = text.find("\n", head_end) + 1
        if head_end == 0:
            return text.split("\n")  # a short log: all of it
    tail_start = len(text)
    for _ in range(_EDGE):
        tail_start = text.rfind("\n", 0, tail_start)
        if tail_start < head_end:
            return text.split("\n")
    picked = text[:head_end].split("\n") + text[tail_start + 1 :].split("\n")
    seen: set[int] = set()
    for key in _ANCHOR_KEYS if middle else ():
        i = text.find(key, head_end, tail_start)
        while i != -1 and len(seen) < _MAX_ANCHOR_LINES:
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            end = len(text) if end == -1 else end
            if start not in seen:
                seen.add(start)
                picked.append(text[start:end])
            i = text.find(key, end, tail_start)
    return picked


def _anchor_prefixes(text: str, body: Callable[[str], str] | None = None) -> Counter[str]:
    """The text before the first anchor of each line that has one ("" for no prefix). For a
    journal (`body` given) the first and last lines are read, not the middle: the journal's
    own fields make it several times larger than what its programs wrote."""
    seen: Counter[str] = Counter()
    for raw in _anchor_lines(text, middle=body is None):
        line = body(raw) if body is not None else raw
        m = _ANCHOR.search(line, 0, min(len(line), _MAX_PREFIX + 500))
        if m is None:
            continue
        prefix = line[: m.start()]
        if m["frame"] is not None and prefix.endswith("  "):
            prefix = prefix[:-2]  # the frame's own indent
        if not prefix.strip():
            seen[""] += 1  # a line with no prefix: counts toward how many anchors there are
        elif len(prefix) <= _MAX_PREFIX and _PROSE.search(prefix) is None:
            seen[prefix] += 1
    return seen


def learn_prefixes(text: str, body: Callable[[str], str] | None = None) -> re.Pattern[str] | None:
    """One anchored regex for the prefixes this log's lines carry, learned from the log.
    `body`: what of a line the program wrote (a journal line's message), when not all of it."""
    shapes: Counter[str] = Counter()
    anchored = _anchor_prefixes(text, body)
    least = _MIN_SEEN if sum(anchored.values()) + anchored[""] > _MIN_SEEN else 1
    for prefix, n in anchored.items():
        heads = [prefix]
        heads += [prefix[: m.end()] for m in _HEAD_END.finditer(prefix) if m.end() < len(prefix)]
        for h in dict.fromkeys(heads):
            if h.strip():
                shapes[_shape(h)] += n
    shapes.update(_line_heads(text, body))
    kept = [s for s, n in shapes.most_common(_MAX_SHAPES) if n >= least]
    if not kept:
        return None
    kept.sort(key=len, reverse=True)  # the longest (outermost, whole) prefix first
    return re.compile("(?:" + "|".join(kept) + ")")


# A line's head, for logs without anchors: up to the first wrapper end or time stamp.
_HEAD = re.compile(
    r"^.{0,120}?(?:\] |\) |\| |: |\]:|> |"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? )"
)


# A head that is a source location (`.../IndexKernel.cu:142: `, `main.go:57: `): the program's
# own words (a CUDA kernel's assertion, a compiler's diagnostic, a logger's caller), repeated
# because the same statement printed every line, not a shipper's prefix.
_SOURCE_AT = re.compile(r"\.(?:cuh?|cpp|cc|cxx|c|hpp|hh|h|py|go|rs|js|ts):\d+(?::\d+)?: $")


def _line_heads(text: str, body: Callable[[str], str] | None = None) -> Counter[str]:
    """Shapes that begin most lines (of the first few hundred): a prefix every line carries
    is a shipper's even where no traceback shows it. SGLang's own header is not a prefix,
    nor is a source location that a program prints before its own message."""
    lines = [ln for ln in text[:200_000].split("\n", 400)[:400] if ln.strip()]
    if body is not None:
        lines = [b for b in (body(ln) for ln in lines) if b.strip()]
    if len(lines) < 3:
        return Counter()
    heads: Counter[str] = Counter()
    for ln in lines:
        m = _HEAD.match(ln)
        if (
            m is not None
            and _SGL_AT.search(m[0]) is None
            and _PROSE.search(m[0]) is None
            and _SOURCE_AT.search(m[0]) is None
        ):
            heads[_shape(m[0])] += 1
    return Counter({s: n for s, n in heads.items() if n * 10 >= len(lines) * 8})


class Origins(LazyStrings):
    """Each line's origin (its prefix less the time stamps), worked out on first use."""

    def __init__(self, prefixed: list[str], rx: re.Pattern[str]) -> None:
        self._prefixed = list(prefixed)
        self._rx = rx

    def __len__(self) -> int:
        return len(self._prefixed)

    def reverse(self) -> None:
        self._prefixed.reverse()

    def _item(self, i: int) -> str | None:
        m = self._rx.match(self._prefixed[i], 0, MAX_LINE)
        return _origin(m[0]) if m is not None and m.end() else None

    def stamp(self, i: int) -> int | None:
        """The time the line's prefix gives (an RFC 3339 stamp in it), in µs; None if none."""
        m = self._rx.match(self._prefixed[i], 0, MAX_LINE)
        if m is None or not m.end():
            return None
        s = _RFC3339_IN.search(m[0])
        return _iso_us(s[0]) if s is not None else None


def origin_of(prefix: str) -> str | None:
    """A prefix's origin: the prefix without its time stamps (pod, rank, process)."""
    return _origin(prefix)


@functools.lru_cache(maxsize=4096)
def _origin(prefix: str) -> str | None:
    o = _TIMEISH.sub("", prefix).strip(" |:-")
    return o or None


# --------------------------------------------------------------------------- order


def _is_reversed(lines: Sequence[str]) -> bool:
    """Newest first: traceback headers stand below their frames more often than above."""
    fwd = back = 0
    for i, ln in enumerate(lines):
        if _TRACEBACK not in ln:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        prev = lines[i - 1] if i else ""
        fwd += 'File "' in nxt
        back += 'File "' in prev
    return back > fwd


_RFC3339_IN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)")
_ISO_IN = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?")


def _times_fall(times: Sequence[str]) -> bool:
    """Newest first, told by the prefixes' own ISO times: more steps back than forward."""
    down = sum(1 for a, b in itertools.pairwise(times) if b < a)
    up = sum(1 for a, b in itertools.pairwise(times) if b > a)
    return down > up


def _wrap_width(lines: Sequence[str]) -> int | None:
    """The width a terminal hard-wrapped these lines at: the longest length, shared by several
    lines, that no line exceeds (a real log's lines have no such ceiling)."""
    if len(lines) < 4:
        return None
    lengths = Counter(len(ln) for ln in lines if not _boxed(ln))
    width = max(lengths)
    if width < 60 or width > 400:
        return None
    at_width = {ln for ln in lines if len(ln) == width and not _boxed(ln)}
    long = sum(n for k, n in lengths.items() if k > width // 2)
    if len(at_width) < 3 or lengths[width] * 5 < long:
        return None
    # lines padded with blanks to the width (a terminal's screen copied whole, a tmux pane):
    # each is whole, its padding is no text cut at the margin
    if sum(ln[-1:].isspace() for ln in at_width) * 2 > len(at_width):
        return None
    # lines of one length because one statement printed them all (a kernel's assertion from
    # each thread): the line after each begins as it does, which a wrapped rest never does
    after = [(a, b) for a, b in itertools.pairwise(lines) if a in at_width]
    if after and sum(b[:24] == a[:24] for a, b in after) * 2 > len(after):
        return None
    return width


def _boxed(line: str) -> bool:
    """A line drawn to the terminal's width on purpose: a panel's border or a row of one (rich's
    tracebacks, tables) ends in a box-drawing character. It is whole, never a wrapped part."""
    return bool(line) and "\u2500" <= line[-1] <= "\u257f"


def _unwrap(lines: list[str], width: int) -> list[str]:
    out: list[str] = []
    carry = ""
    for ln in lines:
        if len(ln) == width and not _boxed(ln):
            carry += ln
            continue
        out.append(carry + ln)
        carry = ""
    if carry:
        out.append(carry)
    return out


# --------------------------------------------------------------------------- the reader


# A file name that a Markdown renderer turned into a link to itself when the log was pasted
# ("[flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so](http://flash_attn_2_cuda.cpython-39-
# x86_64-linux-gnu.so/)": a name ending in a top-level-domain-like suffix): the name alone, as
# the program wrote it. Bounded, so linear on a long line.
_AUTOLINK = re.compile(r"\[([^\[\]\n()]{1,300})\]\(https?://\1/?\)")
# A traceback quoted inside a JSON string (an API's error body, a log shipper's record pasted
# as it is): its frames keep their escaped quotes (`File \"x.py\", line 488, in f`); read as
# Python printed them, so that the frames are frames. Bounded, so linear on a long line.
_ESCAPED_FRAME = re.compile(r'File \\"([^"\n]{1,400}?)\\", line (\d{1,7})')


def read_lines(lines: list[str]) -> Read:
    """The log's lines as its programs wrote them (see the module's docstring)."""
    shipper = sniff(lines)
    stamps: list[int | None] | None = None
    if shipper == "docker-json":
        lines, stamps = _docker(lines)
    elif shipper == "cri":
        lines, stamps = _cri(lines)
    text = "\n".join(lines)
    if "\x1b" in text or "[0m" in text or "#033[" in text or "\\u001b" in text or "^[[" in text:
        text = ANSI.sub("", text)
        lines = text.split("\n")
    if "](http" in text:  # a log pasted where file names became links (see _AUTOLINK)
        text = _AUTOLINK.sub(r"\1", text)
        lines = text.split("\n")
    if 'File \\"' in text:  # frames of a traceback quoted in a JSON string (_ESCAPED_FRAME)
        text = _ESCAPED_FRAME.sub(r'File "\1", line \2', text)
        lines = text.split("\n")
    rx = learn_prefixes(text)
    origins: Origins | None = None
    prefix_times: list[str] = []
    if rx is not None:
        # one C-speed pass strips every line; a line's origin is worked out when asked for
        prefixed = lines
        lines = re.compile("^" + rx.pattern, re.M).sub("", text).split("\n")
        origins = Origins(prefixed, rx)
        for ln in prefixed[:2000]:
            m = rx.match(ln, 0, MAX_LINE)
            if m is not None and (s := _ISO_IN.search(m[0])) is not None:
                prefix_times.append(s[0])
    rev = _is_reversed(lines) if _TRACEBACK in text else _times_fall(prefix_times)
    if rev:
        lines.reverse()
        if origins is not None:
            origins.reverse()
        if stamps is not None:
            stamps.reverse()
    width = None
    if stamps is None and origins is None:
        width = _wrap_width(lines)
        if width is not None:
            lines = _unwrap(lines, width)
    return Read(lines, origins, shipper, rev, width, stamps)
