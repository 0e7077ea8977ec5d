"""The systemd journal, read through `journalctl -o json` (no PyGObject, no C build).

`read` / `invocations` / `follow` run journalctl; `parse_json_line` / `parse_text` turn its
output (or a saved file in `-o json`, `-o short*` or `-o cat` form) into `JournalEntry`s.
`JournalLines` is a lazy view over raw text lines for the classifier: it keeps the raw lines
(for a cheap keyword prefilter) and parses an entry only when asked for it.

One start of a unit is one *invocation*: systemd gives every start a fresh 128-bit id. The
service's own lines carry it as `_SYSTEMD_INVOCATION_ID`; PID 1's lines about the unit
("Started …", "Main process exited …", "Failed with result …") carry it as `INVOCATION_ID`
(`USER_INVOCATION_ID` from a user manager). `invocation_matches` ORs them with journalctl's `+`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, overload

from orchestrator.diagnosis import reader
from orchestrator.diagnosis.lines import ANSI, MAX_LINE, LazyStrings
from orchestrator.errors import InputError

__all__ = [
    "JournalEntry",
    "JournalLines",
    "build_argv",
    "follow",
    "invocation_matches",
    "invocations",
    "latest_invocation",
    "parse_json_line",
    "parse_json_lines",
    "parse_text",
    "read",
]

_MONTHS = {
    m: i
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1
    )
}


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journal line. Fields absent from the input are None."""

    timestamp_us: int | None  # __REALTIME_TIMESTAMP, µs since the epoch (UTC)
    message: str
    unit: str | None = None
    invocation_id: str | None = None
    pid: int | None = None
    priority: int | None = None
    source: str = "journal"  # "journal" (from journalctl -o json) or "text"
    host: str | None = None
    ident: str | None = None  # SYSLOG_IDENTIFIER (what `-o short` prints before [pid])
    cmdline: str | None = None  # _CMDLINE, when journald recorded it
    origin: str | None = None  # the shipper's prefix, less its time: pod, rank or PID (text logs)

    @property
    def text(self) -> str:
        """The message without the prefixes wrappers put before it (container runtimes, Ray,
        glog, loggers' timestamps, ANSI colour): what the classifier reads. `message` stays as
        logged, for display."""
        return strip_prefixes(self.message[:MAX_LINE])

    @property
    def when(self) -> str | None:
        """ISO 8601 local time with offset, e.g. 2026-12-02T14:01:02.123456+00:00."""
        if self.timestamp_us is None:
            return None
        return self.local_time().isoformat(timespec="microseconds")  # type: ignore[union-attr]

    def local_time(self) -> datetime | None:
        if self.timestamp_us is None:
            return None
        return datetime.fromtimestamp(self.timestamp_us / 1e6, tz=UTC).astimezone()

    def stamp(self) -> str:
        """A short local timestamp for evidence lines: `2026-12-02 14:01:02`, or '-'."""
        dt = self.local_time()
        return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else "-"

    def format_short(self) -> str:
        """Like `journalctl -o short`: `Dec 02 13:50:01 host ident[pid]: message`."""
        if self.timestamp_us is None and self.ident is None and self.unit is None:
            return self.message
        parts: list[str] = []
        dt = self.local_time()
        if dt is not None:
            parts.append(dt.strftime("%b %d %H:%M:%S"))
        parts.append(self.host or "localhost")
        ident = self.ident or self.unit or "-"
        parts.append(f"{ident}[{self.pid}]:" if self.pid is not None else f"{ident}:")
        return " ".join(parts) + " " + self.message

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp_us": self.timestamp_us,
            "when": self.when,
            "message": self.message,
            "unit": self.unit,
            "invocation_id": self.invocation_id,
            "pid": self.pid,
            "priority": self.priority,
            "source": self.source,
        }


# --------------------------------------------------------------------------- prefixes

_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_LEVEL = r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|TRACE)"
# Prefixes, each anchored at the start; they nest (a container's line holding Ray's line
# holding SGLang's), so they are removed in a loop until none is left.
_PREFIXES = re.compile(
    "|".join(
        (
            # Kubernetes CRI (kubectl logs of containerd/CRI-O): "<RFC3339> stderr F "
            _TS + r" (?:stdout|stderr) [FP] ",
            # docker compose: "service-1  | "
            r"\s*[A-Za-z0-9][\w.-]*\s+\| ",
            # loguru / fastchat: "2023-12-20 13:39:58 | ERROR | stderr | "
            _TS + r"\s*\|\s*" + _LEVEL + r"\s*\|(?:\s*[\w.:<>-]+\s*\|)?\s*",
            # Ray: "(RayWorkerWrapper pid=933, ip=10.0.0.1) ", "(raylet) ", "(SGLangEngine pid=12) "
            r"\((?:[\w.:-]+)(?: pid=\d+)?(?:, ip=[\w.:]+)?(?:, node_id=\w+)?\) ",
            # Ray's core logs: "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: "
            r"\[" + _TS + r" [IWEF] \d+ \d+\] [\w.]+:\d+: ",
            # torch's rank prefix and glog: "[rank1]:", "[E528 08:52:46.164 ProcessGroupGloo.cpp:145] ",
            # "[W socket.cpp:697] ", "I1202 14:01:02.123456  1234 file.cc:12] "
            r"\[rank\d+\]:",
            r"\[[IWEF](?:\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?(?: \d+)?)? ?[\w.]+:\d+\] ",
            r"[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.]+:\d+\] ",
            # vLLM's logger: "INFO 10-12 00:26:58 launcher.py:27] ", "ERROR 05-29 15:17:48 [core.py:502] "
            _LEVEL + r" \d\d-\d\d \d\d:\d\d:\d\d(?: \[?[\w.]+:\d+\]?)? ",
            # SGLang's own "[2026-12-02 14:01:02 TP3] ", "[2026-12-02 14:01:02 DP0 TP3 EP3] "
            r"\[" + _TS + r"(?: [A-Z]+\d+)*\] ",
            # a bare timestamp, optionally a level: "2024-06-13 16:11:50,396 INFO "
            _TS + r"\s+(?:" + _LEVEL + r"\s+)?",
            # uvicorn's "INFO:     " / "ERROR:    ", python logging's "ERROR:root:"
            _LEVEL + r":(?:[\w.]+:)?\s*",
            # torchx: "trainer/0 [1]:"
            r"[\w-]+/\d+ \[\d+\]:",
        )
    )
)
_PREFIX_START = frozenset("[( \t0123456789IWEFDCTabcdefghijklmnopqrstuvwxyzABGHJKLMNOPQRSUVXYZ")


@functools.lru_cache(maxsize=8192)
def strip_prefixes(line: str) -> str:
    """`line` without the prefixes that wrappers put before a program's own words.

    Removes ANSI colour codes anywhere, then, from the start and as often as they nest:
    Kubernetes CRI ("<time> stderr F "), docker compose ("svc-1  | "), Ray ("(pid=…) "),
    glog and torch's "[rank3]:[E…]", vLLM's and SGLang's logger prefixes, bare timestamps,
    uvicorn's "INFO:     ", torchx's "role/0 [1]:". What is left is what the program wrote.
    """
    if "[" in line or "\x1b" in line or "#033" in line or "\\" in line:
        line = ANSI.sub("", line)
    if line.endswith(("^M", "\r")):  # a CR carried into the log, raw or in caret notation
        line = line[:-2] if line.endswith("^M") else line[:-1]
    for _ in range(8):
        if not line or line[0] not in _PREFIX_START:
            break
        m = _PREFIXES.match(line)
        if m is None or m.end() == 0:
            break
        line = line[m.end() :]
    return line


# --------------------------------------------------------------------------- JSON lines


def _field_str(value: Any) -> str | None:
    """A journal JSON field value as text: str, list of byte values, list of values, null."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if not value:
            return ""
        if all(isinstance(v, int) for v in value):  # non-UTF-8 / binary: array of bytes
            return bytes(v & 0xFF for v in value).decode("utf-8", errors="replace")
        # A field given several times in one entry: journalctl prints an array of values.
        return _field_str(value[0])
    return str(value)


def _field_int(value: Any) -> int | None:
    s = _field_str(value)
    if s is None:
        return None
    try:
        return int(s)
    except ValueError:
        return None


# Timestamps outside [1970, 9000) are not dates (a corrupt or hostile field): left out.
_MAX_TS_US = 221845392000 * 1_000_000


def _field_ts(value: Any) -> int | None:
    us = _field_int(value)
    return us if us is not None and 0 <= us < _MAX_TS_US else None


def entry_from_fields(obj: dict[str, Any]) -> JournalEntry:
    """A `JournalEntry` from one parsed `journalctl -o json` object."""
    message = _field_str(obj.get("MESSAGE")) or ""
    if message.endswith("\n"):
        message = message.rstrip("\n")
    # PID 1's lines about a unit: UNIT=/USER_UNIT= name the unit, _SYSTEMD_UNIT is init.scope.
    unit = (
        _field_str(obj.get("USER_UNIT"))
        or _field_str(obj.get("UNIT"))
        or _field_str(obj.get("_SYSTEMD_USER_UNIT"))
        or _field_str(obj.get("_SYSTEMD_UNIT"))
    )
    inv = (
        _field_str(obj.get("_SYSTEMD_INVOCATION_ID"))
        or _field_str(obj.get("INVOCATION_ID"))
        or _field_str(obj.get("USER_INVOCATION_ID"))
    )
    return JournalEntry(
        timestamp_us=_field_ts(obj.get("__REALTIME_TIMESTAMP")),
        message=message,
        unit=unit,
        invocation_id=inv,
        pid=_field_int(obj.get("_PID")),
        priority=_field_int(obj.get("PRIORITY")),
        source="journal",
        host=_field_str(obj.get("_HOSTNAME")),
        ident=_field_str(obj.get("SYSLOG_IDENTIFIER")) or _field_str(obj.get("_COMM")),
        cmdline=_field_str(obj.get("_CMDLINE")),
    )


# fields every `journalctl -o json` record has (one is enough: a filtered export may drop some)
_JOURNAL_KEYS = ("MESSAGE", "__REALTIME_TIMESTAMP", "__CURSOR", "_PID", "PRIORITY")


def parse_json_line(line: str) -> JournalEntry | None:
    """One `journalctl -o json` line, or None if it is not a JSON object."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to be a journal line
        return None
    if not isinstance(obj, dict):
        return None
    # a JSON object that is no journal record (an HTTP error body an API server or a client
    # printed: {"error": {"message": "CUDA out of memory. …"}}) is a line of text, not an
    # empty journal entry
    if not any(k in obj for k in _JOURNAL_KEYS):
        return None
    return entry_from_fields(obj)


def parse_json_lines(text: str) -> list[JournalEntry]:
    """Every entry of `journalctl -o json` output (the one parser: `JournalLines`)."""
    return list(JournalLines(text))


# --------------------------------------------------------------------------- text forms

# -o short / short-precise: "Dec 02 13:50:01[.123456] host ident[pid]: message"
_SHORT = re.compile(
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?P<day>[ \d]\d) "
    r"(?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,6}))? "
    r"(?P<host>\S+) (?P<ident>[^\s\[\]:]+?)(?:\[(?P<pid>\d+)\])?: ?(?P<msg>.*)$"
)
# -o short-iso / short-iso-precise: "2026-12-02T13:50:01[.123456]+0000 host ident[pid]: msg"
_SHORT_ISO = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d)T(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,6}))?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)? "
    r"(?P<host>\S+) (?P<ident>[^\s\[\]:]+?)(?:\[(?P<pid>\d+)\])?: ?(?P<msg>.*)$"
)
# SGLang's own prefix, used to date `-o cat` lines: "[2026-12-02 14:01:02[.123] TP3] ..."
_SGL_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{1,6}))?[\] ]")
_JOURNAL_MARKER = re.compile(r"^-- (?:Boot [0-9a-f]+|No entries|Logs begin at|Journal begins at)")


def _us(dt: datetime, frac: str | None) -> int:
    us = int(dt.timestamp()) * 1_000_000
    if frac:
        us += int(frac.ljust(6, "0")[:6])
    return us


# A date that does not exist ("Feb 31", "25:61:00", an offset of +99:99) leaves the line
# undated instead of raising: these three return None for it.
_BAD_DATE = (ValueError, OverflowError, OSError)


def _short_ts(m: re.Match[str], year: int) -> int | None:
    try:
        hh, mm, ss = (int(x) for x in m["time"].split(":"))
        dt = datetime(year, _MONTHS[m["mon"]], int(m["day"]), hh, mm, ss).astimezone()
    except _BAD_DATE:
        return None
    return _us(dt, m["frac"])


def _iso_ts(m: re.Match[str]) -> int | None:
    tz = m["tz"] or ""
    if tz == "Z":
        tz = "+00:00"
    elif tz and ":" not in tz:
        tz = tz[:3] + ":" + tz[3:]
    try:
        dt = datetime.fromisoformat(f"{m['date']}T{m['time']}{tz}")
        if dt.tzinfo is None:
            dt = dt.astimezone()
        return _us(dt, m["frac"])
    except _BAD_DATE:
        return None


def _sgl_ts(line: str) -> int | None:
    m = _SGL_STAMP.match(line)
    if not m:
        return None
    try:
        dt = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").astimezone()
        return _us(dt, m[2])
    except _BAD_DATE:
        return None


def detect_format(lines: Sequence[str]) -> str:
    """'json', 'short', 'short-iso' or 'cat', from the first non-empty lines."""
    sample = [ln for ln in lines[:200] if ln.strip() and not _JOURNAL_MARKER.match(ln)][:50]
    if not sample:
        return "cat"
    counts = {"json": 0, "short": 0, "short-iso": 0}
    for ln in sample:
        s = ln.lstrip()
        # a journal record names its fields; another JSON object (an HTTP error body, a
        # router's answer pasted beside the log) is a line of text
        if (
            s.startswith("{")
            and s.rstrip().endswith("}")
            and any(f'"{k}"' in s for k in _JOURNAL_KEYS)
        ):
            counts["json"] += 1
        elif _SHORT.match(ln):
            counts["short"] += 1
        elif _SHORT_ISO.match(ln):
            counts["short-iso"] += 1
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] * 2 >= len(sample) else "cat"


def _parse_text_line(
    line: str, fmt: str, year: int, prev: JournalEntry | None
) -> JournalEntry | None:
    """One line of a text journal; None for journalctl's own '-- Boot … --' markers."""
    if fmt == "json":
        e = parse_json_line(line)
        if e is not None:
            return e
    if _JOURNAL_MARKER.match(line):
        return None
    if fmt in ("short", "short-iso"):
        m = (_SHORT if fmt == "short" else _SHORT_ISO).match(line)
        if m is None:  # the other short flavour, mixed in
            m = (_SHORT_ISO if fmt == "short" else _SHORT).match(line)
        if m is not None:
            ts = _iso_ts(m) if "date" in m.groupdict() else _short_ts(m, year)
            return JournalEntry(
                timestamp_us=ts,
                message=m["msg"],
                pid=int(m["pid"]) if m["pid"] else None,
                source="text",
                host=m["host"],
                ident=m["ident"],
            )
        # A continuation line of a multi-line message: journalctl indents it under the message.
        if prev is not None:
            return JournalEntry(
                timestamp_us=prev.timestamp_us,
                message=line.strip(),
                pid=prev.pid,
                source="text",
                host=prev.host,
                ident=prev.ident,
            )
    # -o cat (or anything else): the message only. Date it from SGLang's own "[YYYY-mm-dd …]"
    # prefix; lines without one (traceback lines) take the time of the line before.
    stamp = _sgl_ts(line) if line.startswith("[") else None
    if stamp is None and prev is not None:
        stamp = prev.timestamp_us
    return JournalEntry(timestamp_us=stamp, message=line, source="text")


def parse_text(text: str, *, year: int | None = None) -> list[JournalEntry]:
    """Parse a saved journal: `-o json` lines, `-o short`/`short-iso`/`short-precise`, or `-o cat`.

    The format is detected from the first lines. `-o short` carries no year: `year` (default:
    this year) fills it in. Every entry, parsed by the one parser (`JournalLines`); the
    classifier uses `JournalLines` itself, which parses only the lines it reads.
    """
    return list(JournalLines(text, year=year))


_JSON_MESSAGE = '"MESSAGE":"'
_BACK = 500  # lines searched back for the time of an undated line


class JournalLines(Sequence[JournalEntry]):
    """A lazy `Sequence[JournalEntry]` over the raw lines of a saved journal (any format).

    `search` holds one string per line for a cheap substring prefilter: the MESSAGE value
    (still JSON-escaped) for `-o json`, the line itself for text forms. An entry is parsed
    only when asked for, so classifying a 200k-line file parses a few hundred lines.
    """

    def __init__(self, text: str, *, year: int | None = None) -> None:
        split = text.split("\n")
        shipper = reader.sniff(split)
        self.format = detect_format(split[:200]) if shipper == "text" else "cat"
        self._year = year or datetime.now().year
        self._cache: dict[int, JournalEntry] = {}
        self._origins: Sequence[str | None] | None = None
        self._stamps: list[int | None] | None = None
        self._learned: re.Pattern[str] | None = None  # a prefix inside journal messages
        self.raw: list[str]
        self.search: list[str]
        if self.format == "cat":
            got = reader.read_lines(split)
            lines = got.lines
            if "\r" in text:
                lines = [x.rstrip("\r") for x in lines]
            keep = [
                i
                for i, ln in enumerate(lines)
                if ln and not ln.isspace() and not (ln[:3] == "-- " and _JOURNAL_MARKER.match(ln))
            ]
            if len(keep) == len(lines):
                self.raw = lines
                self._origins, self._stamps = got.origins, got.timestamps_us
            else:
                self.raw = [lines[i] for i in keep]
                if got.origins is not None:
                    self._origins = _Picked(got.origins, keep)
                if got.timestamps_us is not None:
                    self._stamps = [got.timestamps_us[i] for i in keep]
            self.search = self.raw
        elif self.format == "json":
            # the records, and any line of text among them (a paste that mixed them): kept,
            # read as text
            self.raw = [ln for ln in (x.rstrip("\r") for x in split) if ln.strip()]
            self.search = _json_messages(self.raw)
            # a prefix inside the messages (a unit that runs torchrun, srun, a container)
            self._learned = reader.learn_prefixes(text, _json_message)
        else:
            self.raw = [
                ln
                for ln in (x.rstrip("\r") for x in split)
                if ln.strip() and not (ln[:3] == "-- " and _JOURNAL_MARKER.match(ln))
            ]
            self.search = self.raw
            self._learned = reader.learn_prefixes(text, _short_message)

    def __len__(self) -> int:
        return len(self.raw)

    def _get(self, i: int) -> JournalEntry:
        e = self._cache.get(i)
        if e is None:
            e = self._parse(i)
            if self._learned is not None:
                m = self._learned.match(e.message, 0, MAX_LINE)
                if m is not None and m.end():
                    e = dataclasses.replace(
                        e, message=e.message[m.end() :], origin=reader.origin_of(m[0])
                    )
            self._cache[i] = e
        return e

    def _parse(self, i: int) -> JournalEntry:
        line = self.raw[i]
        if self.format == "json":
            return parse_json_line(line) or JournalEntry(None, line, source="text")
        if self.format in ("short", "short-iso"):
            if _SHORT.match(line) or _SHORT_ISO.match(line):
                e = _parse_text_line(line, self.format, self._year, None)
                assert e is not None
                return e
            prev = next(
                (
                    self._get(j)
                    for j in range(i - 1, max(-1, i - _BACK), -1)
                    if _SHORT.match(self.raw[j]) or _SHORT_ISO.match(self.raw[j])
                ),
                None,
            )
            e = _parse_text_line(line, self.format, self._year, prev)
            assert e is not None
            return e
        origin = self._origins[i] if self._origins is not None else None
        ts = self._stamps[i] if self._stamps is not None else None
        if ts is None and self._origins is not None and hasattr(self._origins, "stamp"):
            ts = self._origins.stamp(i)  # the shipper's own time, in the learned prefix
        if ts is None:
            ts = _sgl_ts(line) if line.startswith("[") else None
        if ts is None:
            for j in range(i - 1, max(-1, i - _BACK), -1):
                if self._stamps is not None and (ts := self._stamps[j]) is not None:
                    break
                if self.raw[j].startswith("[") and (ts := _sgl_ts(self.raw[j])) is not None:
                    break
        return JournalEntry(timestamp_us=ts, message=line, source="text", origin=origin)

    @overload
    def __getitem__(self, i: int) -> JournalEntry: ...
    @overload
    def __getitem__(self, i: slice) -> list[JournalEntry]: ...
    def __getitem__(self, i: int | slice) -> JournalEntry | list[JournalEntry]:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._get(i)

    def __iter__(self) -> Iterator[JournalEntry]:
        for i in range(len(self)):
            yield self._get(i)


class _Picked(LazyStrings):
    """Some items of a lazy sequence, by index, still lazy."""

    def __init__(self, of: Sequence[str | None], keep: list[int]) -> None:
        self._of, self._keep = of, keep

    def __len__(self) -> int:
        return len(self._keep)

    def _item(self, i: int) -> str | None:
        return self._of[self._keep[i]]

    def stamp(self, i: int) -> int | None:
        stamp = getattr(self._of, "stamp", None)
        return stamp(self._keep[i]) if stamp is not None else None


def _json_message(line: str) -> str:
    """The MESSAGE of a `-o json` line, still escaped (the line itself if it has none)."""
    return _json_messages([line])[0]


def _short_message(line: str) -> str:
    """The message of a `-o short*` line (the line itself when it is not one)."""
    m = _SHORT.match(line) or _SHORT_ISO.match(line)
    return m["msg"] if m is not None else line


def _json_messages(lines: list[str]) -> list[str]:
    """The MESSAGE value of each journal JSON line, still escaped, without parsing the lines.

    Inside a JSON string every quote is escaped, so the first `","` (or the closing `"}`)
    after `"MESSAGE":"` ends the value. A MESSAGE given as a byte array: the whole line.
    """
    out: list[str] = []
    add = out.append
    key, n = _JSON_MESSAGE, len(_JSON_MESSAGE)
    for ln in lines:
        s = ln.find(key)
        if s < 0:
            add(ln)
            continue
        s += n
        e = ln.find('","', s)
        if e < 0:
            e = ln.rfind('"}')
        add(ln[s:e] if e >= s else ln[s:])
    return out


# --------------------------------------------------------------------------- journalctl


def invocation_matches(invocation: str, *, user: bool = False) -> list[str]:
    """journalctl matches for one start: the service's lines OR PID 1's lines about it.

    After `-u`, journalctl ANDs this group with the unit matches; `+` ORs inside the group.
    """
    m = [f"_SYSTEMD_INVOCATION_ID={invocation}", "+", f"INVOCATION_ID={invocation}"]
    if user:
        m += ["+", f"USER_INVOCATION_ID={invocation}"]
    return m


def build_argv(
    unit: str,
    *,
    user: bool = False,
    invocation: str | None = None,
    lines: int | str | None = None,
    since: str | None = None,
    follow: bool = False,
    output_fields: Sequence[str] | None = None,
    journalctl: str = "journalctl",
) -> list[str]:
    """The journalctl argv for `read`/`follow`/`invocations` (tested without journalctl)."""
    if not unit or unit.startswith("-") or "\n" in unit:
        raise InputError(
            f"invalid unit name {unit!r}", fix="pass a unit name such as sglang.service"
        )
    argv = [journalctl]
    argv += ["--user-unit", unit] if user else ["-u", unit]
    if lines is not None:
        argv += ["-n", str(lines)]
    if since:
        argv += ["--since", since]
    if follow:
        argv.append("-f")
    argv += ["-o", "json", "--no-pager"]
    if output_fields:
        argv.append("--output-fields=" + ",".join(output_fields))
    if invocation:
        if not re.fullmatch(r"[0-9a-fA-F-]{32,36}", invocation):
            raise InputError(
                f"invalid invocation id {invocation!r}",
                fix="pass the 32-hex-digit id systemd shows as InvocationID",
            )
        argv += invocation_matches(invocation.replace("-", "").lower(), user=user)
    return argv


_HINT_NO_RIGHTS = "not seeing messages from other users and the system"

# ---- bounds on what is read (issue 21): a line longer than MAX_LINE_BYTES keeps its first
# MAX_LINE_BYTES and a note, the rest is read past without being kept; more than
# MAX_INPUT_BYTES in all is refused. journald's own LineMax is 48 KiB.
MAX_LINE_BYTES = 256 * 1024
MAX_INPUT_BYTES = 256 * 1024 * 1024


class InputTooLarge(InputError):
    """More than MAX_INPUT_BYTES of journal."""


def read_capped(
    stream: IO[bytes],
    what: str,
    *,
    field: str | None = None,
    max_line: int = MAX_LINE_BYTES,
    max_total: int = MAX_INPUT_BYTES,
) -> str:
    """Read `stream` to its end, a chunk at a time, keeping at most `max_line` bytes of each
    line (never holding more of a long line than that), as UTF-8 text (bad bytes replaced).
    InputTooLarge past `max_total` bytes: a device such as /dev/zero ends there, not in memory."""
    out: list[bytes] = []
    total = kept = dropped = 0
    read = getattr(stream, "read1", stream.read)
    while True:
        chunk = read(1 << 20)
        if not chunk:
            break
        total += len(chunk)
        if total > max_total:
            raise InputTooLarge(
                f"{what} is larger than {max_total >> 20} MiB",
                field=field,
                fix="pass a shorter excerpt, e.g. one start's lines (journalctl -u UNIT "
                "--invocation=0 -o json) or the last lines (-n 100000)",
            )
        start = 0
        while start < len(chunk):
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            room = max_line - kept
            if end - start <= room:
                out.append(chunk[start:end])
                kept += end - start
            else:
                out.append(chunk[start : start + room])
                kept = max_line
                dropped += end - start - room
            if nl < 0:
                break
            if dropped:
                out.append(f" [... {dropped} more bytes of this line not read]".encode())
            out.append(b"\n")
            kept = dropped = 0
            start = nl + 1
    if dropped:
        out.append(f" [... {dropped} more bytes of this line not read]".encode())
    return b"".join(out).decode("utf-8", errors="replace")


def _run(argv: list[str], unit: str) -> str:
    try:
        proc = _run_capped(argv, f"the journal of {unit}")
    except FileNotFoundError:
        raise InputError(
            f"cannot read the journal of {unit}: {argv[0]!r} was not found",
            fix="install systemd's journalctl (it ships with systemd) or pass a saved log with --input FILE",
        ) from None
    except PermissionError as e:
        raise InputError(
            f"cannot run {argv[0]!r} to read the journal of {unit}: {e}",
            fix="check the journalctl path and its permissions",
        ) from None
    err = proc.stderr.strip()
    if proc.returncode != 0:
        raise InputError(
            f"journalctl failed reading {unit} (exit {proc.returncode}): {err or 'no message'}",
            fix=(
                "run as root or add the user to the systemd-journal (or adm) group"
                if "ermission" in err or "access" in err.lower()
                else "check the unit name and that systemd-journald is running"
            ),
        )
    if not proc.stdout.strip() and _HINT_NO_RIGHTS in err:
        raise InputError(
            f"no journal lines for {unit} are visible to this user: {err.splitlines()[0]}",
            fix="run with sudo or add the user to the systemd-journal group (then log in again)",
        )
    return proc.stdout


def _run_capped(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """subprocess.run(argv) with stdout read through `read_capped`; stderr goes to a temporary
    file (a full stderr pipe could stall journalctl while stdout is read), its first 64 KiB
    kept."""
    with (
        tempfile.TemporaryFile() as errf,
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf) as p,
    ):
        assert p.stdout is not None
        try:
            out = read_capped(p.stdout, what)
        except InputTooLarge:
            p.kill()
            raise
        code = p.wait()
        errf.seek(0)
        err = errf.read(65536).decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(argv, code, out, err)


def read(
    unit: str,
    *,
    user: bool = False,
    invocation: str | None = None,
    lines: int | None = None,
    since: str | None = None,
    journalctl: str = "journalctl",
) -> JournalLines:
    """The unit's journal lines (one start of it when `invocation` is given), oldest first,
    parsed lazily: an entry is parsed when it is read."""
    argv = build_argv(
        unit, user=user, invocation=invocation, lines=lines, since=since, journalctl=journalctl
    )
    return JournalLines(_run(argv, unit))


def invocation_ids(entries: Sequence[JournalEntry]) -> list[str]:
    """Distinct invocation ids in order of first appearance (newest last)."""
    seen: dict[str, None] = {}
    for e in entries:
        if e.invocation_id and e.invocation_id not in seen:
            seen[e.invocation_id] = None
    return list(seen)


def invocations(
    unit: str,
    *,
    user: bool = False,
    lines: int | None = None,
    journalctl: str = "journalctl",
) -> list[str]:
    """Distinct invocation ids of the unit, oldest first, newest last.

    journalctl 252 has no --list-invocations (that came in 257); `--output-fields` trims each
    JSON object to the id fields (plus the always-present cursor/timestamps/boot id).
    """
    fields = ["_SYSTEMD_INVOCATION_ID", "INVOCATION_ID"] + (["USER_INVOCATION_ID"] if user else [])
    argv = build_argv(unit, user=user, lines=lines, output_fields=fields, journalctl=journalctl)
    return invocation_ids(parse_json_lines(_run(argv, unit)))


def latest_invocation(
    unit: str, user: bool = False, *, journalctl: str = "journalctl"
) -> str | None:
    """The newest invocation id in the journal (systemd's InvocationID property is better)."""
    ids = invocations(unit, user=user, lines=5000, journalctl=journalctl)
    return ids[-1] if ids else None


async def follow(
    unit: str,
    *,
    invocation: str | None,
    user: bool = False,
    lines: int | str | None = "all",
    since: str | None = None,
    journalctl: str = "journalctl",
) -> AsyncIterator[JournalEntry]:
    """Follow the unit's journal (`journalctl -f -o json`); the child dies with the consumer.

    With an invocation the whole start is replayed first (`-n all`), then new lines follow.
    """
    argv = build_argv(
        unit,
        user=user,
        invocation=invocation,
        lines=lines,
        since=since,
        follow=True,
        journalctl=journalctl,
    )
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            stdin=asyncio.subprocess.DEVNULL,
            limit=16 * 1024 * 1024,
        )
    except FileNotFoundError:
        raise InputError(
            f"cannot follow the journal of {unit}: {journalctl!r} was not found",
            fix="install systemd's journalctl or run on the host that runs the unit",
        ) from None
    assert proc.stdout is not None
    try:
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:  # a line over the reader's limit: dropped, the next one read
                continue
            if not line:
                break
            e = parse_json_line(line.decode("utf-8", errors="replace"))
            if e is not None:
                yield e
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout=2)
            except (TimeoutError, asyncio.CancelledError):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
