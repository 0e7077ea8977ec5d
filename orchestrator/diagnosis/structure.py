"""A log's structure: Python tracebacks as objects, other signals as typed events.

A `Traceback` is what Python printed for one failure: its `chain` of `Raised` exceptions
(root first: `The above exception was the direct cause…` and `During handling of the above
exception…` link them), each with its frames (file, line, function) and its type and
message (a message may span several lines). The root cause of a traceback is its first
exception (`root`); the last one (`final`) is usually a wrapper (`Capture cuda graph failed`,
a scheduler's exception wrapper). Lines of another origin (pod, rank, PID) are skipped, so
interleaved ranks do not mix.

`event_kind(line)` names what kind of signal a line is when it is not part of a traceback:
a CUDA error, an NCCL warning or error, a kernel Xid, a systemd result line, an HTTP access
line (with its status), an SGLang warning (retraction, watchdog).

Every pattern here is anchored or bounded; lines are capped before they get here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator import sglang
from orchestrator.diagnosis.journal import MAX_LINE, JournalEntry
from orchestrator.diagnosis.model import EXC_MODULE_CLASS, literals

__all__ = [
    "CARET",
    "EVENT_KEYWORDS",
    "EVENT_KINDS",
    "FRAME",
    "LEVEL_SPAN",
    "LOW_LEVEL",
    "RAISED",
    "TRACEBACK",
    "WRAPPERS",
    "Frame",
    "Raised",
    "Traceback",
    "assert_above",
    "chain_followers",
    "event_kind",
    "event_kinds",
    "exception_message",
    "frame_code",
    "http_status",
    "pasted_message",
    "root_exception",
    "tracebacks",
]

TRACEBACK = "Traceback (most recent call last)"
# the most of a frame's source line kept as a bare assertion's message
_MAX_SOURCE = 300
FRAME = re.compile(
    r'^\s*(?:\| )?\s*File "(?P<file>[^"]{1,500})", line (?P<line>\d+)(?:, in (?P<func>\S{1,200}))?'
)
# a statement as a traceback quotes it under its frame ("raise RuntimeError(f\"NCCL error:
# {error_str}\")", "self.pool = Pool(", "x = f(y)"): code, not what the program printed
_STATEMENT = re.compile(
    r"^\s*(?:raise|return|assert|await|yield|if|elif|while|for|with|del)\b|^\s*[A-Za-z_][\w.]{0,200}\s*(?:=|\()"
)


# A line logged at WARNING level or below (INFO, DEBUG; glog's I/W), as the logger's header
# says it (search the line's message, header included, in its first LEVEL_SPAN characters): a
# healthy start prints these too. (NCCL's `WARN` is its error level, and is not one.)
LOW_LEVEL = re.compile(
    r"(?:^|[\s\[|(])(?:INFO|DEBUG|TRACE|WARNING)\b"
    r"|^\[?[IW]\d{4} |\[rank\d+\]:\[[IW]\d|(?<![A-Za-z])I\d{4} "
)
LEVEL_SPAN = 120


def frame_code(entries: Sequence[JournalEntry], i: int) -> bool:
    """Line `i` is the source line a traceback quotes under the frame line before it: a rule
    matching its words (a `raise` statement holds the message's template) would quote code as
    the cause, so no rule reads it. An exception line right under a frame (a cut traceback)
    is not code."""
    if i <= 0 or FRAME.match(entries[i - 1].text) is None:
        return False
    text = entries[i].text
    return FRAME.match(text) is None and RAISED.match(text) is None and bool(_STATEMENT.match(text))


def caller_code(entries: Sequence[JournalEntry], i: int) -> bool:
    """Line `i` is a source line a traceback quotes in a caller's frame: another frame follows
    it (past Python 3.11's caret lines). It is code on the way to the raise (`if
    get_device_capability()[0] < 8:` in the frame that called what raised), not the statement
    that failed; only the innermost frame's line (a bare `assert sm_version >= 90`) can say
    why."""
    if not frame_code(entries, i):
        return False
    j = i + 1
    while j < len(entries) and CARET.match(entries[j].text):
        j += 1
    return j < len(entries) and FRAME.match(entries[j].text) is not None


# "pkg.mod.ExcType: message", "ExcType", "pkg.ExcType: " (an exception group's "| " too)
RAISED = re.compile(
    r"^\s*(?:\| )?(?P<type>(?:[A-Za-z_]\w{0,60}\.){0,8}[A-Z]\w{0,80}?"
    r"(?:Error|Exception|Exit|Interrupt|Warning|Fault|Timeout|Failure|error|Exceeded|NotFound)|"
    r"AssertionError|StopIteration|KeyError|[A-Z]\w{0,40}Error\w{0,20}|"
    # the base class itself ("raise Exception(...)"): the names above need a word before it
    r"(?:[A-Za-z_]\w{0,60}\.){0,8}(?:Exception|BaseException)|"
    + EXC_MODULE_CLASS
    + r")(?::\s?(?P<msg>.*))?$"
)
# an exception quoted inside a longer line (a user's words, a wrapper's markup, another
# script's text before it): "报错OSError: ...", "**_OSError: ...", "got ValueError: ..."
EMBEDDED_RAISED = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<type>(?:[a-z_]\w{0,40}\.){0,6}[A-Z]\w{0,60}?(?:Error|Exception)): "
    r"(?P<msg>\S.*)$"
)
# Ray's report of a task or actor method that raised: the exception's own type in parentheses
# ("ray.exceptions.RayTaskError(DistBackendError): ray::Worker.init_model() (pid=…)"), its
# traceback below, often cut from a paste: the type is the exception's
RAY_WRAPPED = re.compile(
    r"^\s*(?:ray\.exceptions\.)?RayTaskError\((?P<type>[A-Z]\w{0,80})\): (?P<msg>.*)$"
)
_CHAIN = ("The above exception was the direct cause", "During handling of the above exception")
# a caret line under a source line (Python 3.11+ marks the failing expression with ^ and ~)
CARET = re.compile(r"^\s*[\^~]+\s*$")
_MAX_TB_LINES = 400
_MAX_MSG_LINES = 12


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    index: int  # the line's index in the log

    def module_path(self) -> str:
        """The frame's file from its package down (`sglang/srt/…/x.py`), site-packages cut."""
        f = self.file.replace("\\", "/")
        for cut in ("site-packages/", "dist-packages/"):
            k = f.rfind(cut)
            if k >= 0:
                return f[k + len(cut) :]
        return f


@dataclass(frozen=True)
class Raised:
    type: str  # as printed: "torch.OutOfMemoryError"
    message: str  # the whole message, continuation lines joined with "\n"
    index: int  # the exception line's index
    frames: tuple[Frame, ...]  # outermost first; the raise site last

    @property
    def name(self) -> str:
        """The type without its module: "OutOfMemoryError"."""
        return self.type.rsplit(".", 1)[-1]

    @property
    def site(self) -> Frame | None:
        """Where it was raised: the innermost frame."""
        return self.frames[-1] if self.frames else None


@dataclass(frozen=True)
class Traceback:
    chain: tuple[Raised, ...]  # root first
    start: int  # index of the first "Traceback (most recent call last):"
    origin: str | None  # pod, rank or PID, where known
    pid: int | None

    @property
    def root(self) -> Raised:
        return self.chain[0]

    @property
    def final(self) -> Raised:
        return self.chain[-1]


def _same_source(a: JournalEntry, b: JournalEntry) -> bool:
    if a.pid is not None and b.pid is not None and a.pid != b.pid:
        return False
    return not (a.origin is not None and b.origin is not None and a.origin != b.origin)


def assert_above(entries: Sequence[JournalEntry], j: int) -> str:
    """For a bare exception line at `j` pasted without its traceback ("AssertionError" alone):
    the assert statement on the line above it (caret lines skipped, the same source only), as
    CPython printed it under the raising frame; else "". A bare type has no message of its own,
    so the lines below it are not one."""
    for k in range(j - 1, max(j - 4, -1), -1):
        c = entries[k]
        if not _same_source(entries[j], c) or CARET.match(c.text):
            continue
        t = c.text.strip()
        return t[:_MAX_SOURCE] if t.startswith("assert ") else ""
    return ""


def pasted_message(entries: Sequence[JournalEntry], j: int, first: str | None) -> str:
    """The message of an exception line at `j` pasted without its traceback: its text after
    the type (`first`) with its continuation lines, or, for the type alone (`first` None),
    the assert statement above it (`assert_above`)."""
    return assert_above(entries, j) if first is None else exception_message(entries, j, first)[0]


def exception_message(
    entries: Sequence[JournalEntry], j: int, first: str, head: JournalEntry | None = None
) -> tuple[str, int]:
    """The whole message of the exception line at `j` whose text after the type is `first`:
    its continuation lines (same source, same time, up to the next traceback, frame, chain
    marker, blank or bracketed log line) joined with "\n", and the index after them.
    torch's DistNetworkError, CUDA errors and others print their detail on those lines."""
    e = entries[j]
    src = head if head is not None else e
    msg = [first]
    n = len(entries)
    k = j + 1
    own = _stripped(e, e.text)
    while k < n and len(msg) < _MAX_MSG_LINES:
        c = entries[k]
        if not _same_source(src, c):
            k += 1
            continue
        ct = c.text
        if (
            not ct.strip()
            or TRACEBACK in ct
            or ct.startswith(_CHAIN)
            or FRAME.match(ct)
            or ct[:1] == "["
            or c.timestamp_us != e.timestamp_us
            or _new_record(c, ct, own)
        ):
            break
        msg.append(ct)
        k += 1
    return "\n".join(msg).strip(), k


def _stripped(e: JournalEntry, text: str) -> str:
    """What the reader took off the front of the line (shipper and logger prefixes); `text` is
    the line's `e.text`, already worked out by the caller."""
    message = e.message[:MAX_LINE]
    cut = len(message) - len(text)
    return message[:cut] if cut > 0 and message.endswith(text) else ""


def _new_record(c: JournalEntry, text: str, own: str) -> bool:
    """A line (`text`: its `c.text`) that carries a logger header of its own, stamped with a
    time, beyond the prefix the exception line had: a new log record ("[2025-02-14 07:01:26]
    Received sigquit …" under a ValueError), not a continuation of the message."""
    extra = _stripped(c, text)
    if len(extra) < len(own) + 8:
        return False
    extra = extra[len(own) :] if extra.startswith(own) else extra
    return any(ch.isdigit() for ch in extra) and ":" in extra


def _parse_one(entries: Sequence[JournalEntry], start: int) -> tuple[Raised | None, int]:
    """One traceback from its header at `start`: (its exception, the index after it)."""
    head = entries[start]
    frames: list[Frame] = []
    n = len(entries)
    j = start + 1
    seen = 0
    source = ""  # the source line CPython printed under the last frame
    while j < n and seen < _MAX_TB_LINES:
        e = entries[j]
        if not _same_source(head, e):
            j += 1
            continue
        seen += 1
        t = e.text
        fm = FRAME.match(t)
        if fm is not None:
            frames.append(Frame(fm["file"], int(fm["line"]), fm["func"] or "?", j))
            source = ""
            j += 1
            continue
        if frames and (t[:1] in (" ", "\t") or CARET.match(t)) and RAISED.match(t) is None:
            if not source and not CARET.match(t):
                source = t.strip()
            j += 1  # a frame's source or caret line
            continue
        rm = RAISED.match(t)
        if rm is not None:
            if rm["msg"] is None:
                # the type alone ("AssertionError"): Python printed no message, so the lines
                # below are not one (a wrapper's next log line, another traceback)
                message, k = "", j + 1
            else:
                message, k = exception_message(entries, j, rm["msg"], head)
            if not message and source.startswith("assert "):
                # a bare AssertionError says nothing; the assert statement CPython printed
                # under the raising frame says what was checked ("assert Lq in {16, 32, 64}")
                message = source[:_MAX_SOURCE]
            return Raised(rm["type"], message, j, tuple(frames)), k
        if TRACEBACK in t:
            return None, j  # a new traceback began before this one's exception
        j += 1
        if not frames and seen > 3:
            break
    return None, j


def tracebacks(entries: Sequence[JournalEntry], headers: Iterable[int]) -> list[Traceback]:
    """The tracebacks whose headers are at `headers` (indices, oldest first), chains joined:
    a header whose previous traceback ended in a chain marker continues that chain."""
    out: list[Traceback] = []
    pending: dict[str | int | None, list[Raised]] = {}
    starts: dict[str | int | None, int] = {}
    for h in sorted(set(headers)):
        e = entries[h]
        if TRACEBACK not in e.text:
            continue
        raised, after = _parse_one(entries, h)
        if raised is None:
            continue
        key: str | int | None = e.origin if e.origin is not None else e.pid
        chain = pending.pop(key, [])
        start = starts.pop(key, h)
        chain.append(raised)
        # is the next line of this source a chain marker?
        nxt = after
        while nxt < len(entries) and nxt < after + 4:
            t = entries[nxt].text.strip()
            if t and _same_source(e, entries[nxt]):
                break
            nxt += 1
        if nxt < len(entries) and entries[nxt].text.strip().startswith(_CHAIN):
            pending[key], starts[key] = chain, start
            continue
        out.append(Traceback(tuple(chain), start, e.origin, e.pid))
    for key, chain in pending.items():
        out.append(Traceback(tuple(chain), starts[key], None, None))
    out.sort(key=lambda tb: tb.start)
    return out


def chain_followers(tbs: Sequence[Traceback], causes: Sequence[int]) -> set[int]:
    """The exception lines to set aside as consequences: in a traceback chain whose first
    exception names a cause (a line of `causes` between its header and its exception), the
    exceptions raised after it in the chain (while handling it, or wrapping it). A sticky CUDA
    fault makes the handler's next CUDA call fail too ("an illegal memory access" first, then
    "CUDA-capable device(s) is/are busy or unavailable" from the cleanup): the log's order, not
    the rules' order, says which is the cause, even when every line carries the same second."""
    out: set[int] = set()
    for tb in tbs:
        if len(tb.chain) > 1 and any(tb.start <= i <= tb.chain[0].index for i in causes):
            out.update(r.index for r in tb.chain[1:])
    return out


# Exceptions that only wrap or report another failure: never the root when a deeper one exists.
WRAPPERS = re.compile(
    "|".join(
        [
            # SGLang's own wrappers and consequences, in every known release's words
            *(
                re.escape(m.keyword().strip())
                for mid in (
                    "cuda-graph-capture-failed",
                    "scheduler-exception",
                    "detokenizer-exception",
                    "tokenizer-exception",
                    "sigquit",
                    "scheduler-died",
                    "init-failed",
                    "warmup-failed",
                )
                for m in sglang.all_messages(mid)
            ),
            r"\bKilled\b",
            r"Child process unexpectedly failed",
        ]
    )
)


def root_exception(tbs: Sequence[Traceback]) -> tuple[Traceback, Raised] | None:
    """The root cause among the tracebacks: on the earliest failing source, the deepest
    (first) exception of its chain that is not itself only a wrapper."""
    for tb in tbs:
        for r in tb.chain:
            if not WRAPPERS.search(r.message) and not WRAPPERS.search(r.type):
                return tb, r
    if tbs:
        return tbs[0], tbs[0].root
    return None


# --------------------------------------------------------------------------- events

# a line logged at ERROR level: a logger's level word, glog's `E1226 ...` / `[E file.cpp:N]`
_ERROR_LEVEL = re.compile(
    r"(?:^|[\s|\]:-])(?:ERROR|CRITICAL|FATAL)\b|"
    r"(?:^|[\s\]:])\[?E\d{4} \d\d:\d\d:|(?:^|[\s\]:])\[E [\w.]{1,60}:\d{1,6}\]|"
    r"\[rank\d{1,5}\]:\[E"
)
_EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("xid", re.compile(r"NVRM: Xid \(PCI:(?:[0-9A-Fa-f:.]{7,16}|\.{3}|\u2026)\): \d{1,3}\b")),
    ("nccl", re.compile(r"\bNCCL (?:WARN|error|ERROR)\b|\bnccl\w{0,20}Error\b")),
    # CUDA's runtime and cuBLAS, and ROCm's HIP runtime and hipBLAS, which mirror them
    (
        "cuda",  # (hipBLASLt and ROCm's libraries print "Hip error")
        re.compile(
            r"\bCUDA error\b|\bcudaError\w{0,40}|\bCUBLAS_STATUS_\w{1,40}|\bH(?:IP|ip) error\b|"
            r"\bhipError\w{0,40}|\bHIPBLAS_STATUS_\w{1,40}"
        ),
    ),
    ("systemd-result", re.compile(r"Failed with result '[\w-]{1,40}'|Main process exited, code=")),
    (
        "http-access",
        re.compile(r"\"(?:GET|POST|PUT|DELETE|HEAD|PATCH) \S{1,2000} HTTP/[\d.]{1,3}\" \d{3}\b"),
    ),
    (
        "sglang-warning",  # SGLang's own warnings, in every known release's words
        re.compile(
            "|".join(
                re.escape(m.keyword())
                for mid in ("kv-retract", "watchdog-timeout", "health-check-failed")
                for m in sglang.all_messages(mid)
            )
        ),
    ),
    (
        "sglang-warmup",  # SGLang's warm-up gave up (its own wrapper, every release's words)
        re.compile("|".join(re.escape(m.keyword()) for m in sglang.all_messages("warmup-failed"))),
    ),
    # torch.distributed's C++ store and rendezvous (glog lines tagged [c10d], TCPStore.cpp,
    # socket.cpp) and the elastic agent's rendezvous errors, from any launcher
    (
        "c10d",
        re.compile(
            r"\[c10d\]|\bTCPStore\.cpp\b|\bsocket\.cpp:\d|Rendezvous(?:Connection|Timeout)Error\b"
        ),
    ),
    # a C/C++/CUDA compiler's error line (gcc/clang `f.c:5:10: fatal error:`, nvcc
    # `f.cu(12): error:`), or a note it prints only under an error ("note:   template argument
    # deduction/substitution failed:"): a JIT build (Triton, torch cpp_extension, ninja) failed
    (
        "compiler",
        re.compile(
            r"\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp)(?::\d{1,7}:\d{1,5}:|\(\d{1,7}\):) "
            r"(?:(?:fatal )?error\b|note: [^\n]{0,200}?\bfailed\b)"
        ),
    ),
    ("error-level", _ERROR_LEVEL),
)
EVENT_KINDS: tuple[str, ...] = tuple(k for k, _ in _EVENTS)
# Each kind's pre-filter keywords, derived from its regex's literal parts (None: it has none,
# e.g. glog's one-letter level): one of them is in every line of that kind.
EVENT_KEYWORDS: dict[str, tuple[str, ...] | None] = {
    k: literals(rx.pattern, rx.flags) for k, rx in _EVENTS
}
_HTTP_STATUS = re.compile(r"HTTP/[\d.]{1,3}\" (?P<status>\d{3})\b")


def event_kind(text: str) -> str | None:
    """The (first) kind of signal a (capped, prefix-free) line is, or None."""
    for kind, rx in _EVENTS:
        if rx.search(text):
            return kind
    return None


def event_kinds(text: str, raw: str | None = None, priority: int | None = None) -> tuple[str, ...]:
    """Every kind of signal a (capped, prefix-free) line is (a glog `E…` line of c10d is both
    "c10d" and "error-level"). `raw`: the line with the prefix the reader took off (a glog
    or logger header holds its level); `priority`: the journal's (<= 3 is an error)."""
    kinds = tuple(kind for kind, rx in _EVENTS if rx.search(text))
    if "error-level" not in kinds and (
        (priority is not None and priority <= 3)
        or (raw is not None and raw is not text and _ERROR_LEVEL.search(raw))
    ):
        kinds += ("error-level",)
    return kinds


def http_status(text: str) -> int | None:
    m = _HTTP_STATUS.search(text)
    return int(m["status"]) if m else None
