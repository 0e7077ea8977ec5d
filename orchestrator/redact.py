"""Keep secrets out of everything deploy prints, and a journal's control characters off the
operator's terminal.

One output boundary: `guard()` wraps the process's stdout and stderr in a `RedactingStream`
for the length of a command (the CLI does it for every command), so text and --json output,
errors, progress lines and tracebacks all pass through `clean()`: `redact()`, then
`escape_controls()`. The stream's `.buffer` is wrapped too (click writes bytes there when
the locale's encoding is ASCII, e.g. PYTHONIOENCODING=ascii or LC_ALL=C), and redacts at the
byte layer. What is secret is known as deploy learns it: `register_spec()` (the profile's
environment file), `register_units()` (the environment files that rendered or installed
units name). Values are replaced by a marker, also where they appear JSON-escaped, base64-
or percent-encoded, as the password of a URL, or cut short by a truncation ("sk-abc..." of
"sk-abcdef12"). Formats that carry tokens whatever their value (SGLang logs
`api_key='...'`) are replaced too.

Length rule: a value whose name says it is a secret (SECRET_NAME, the profile's api_key_env)
or a URL's password is redacted from MIN_SECRET_REDACT characters on; preflight refuses
such a value under MIN_SECRET_LEN (rules/redaction.py), as a key that short is guessable and
redacting it would blank out ordinary words. Other values count from MIN_LEN on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from orchestrator import envfile

if TYPE_CHECKING:
    from orchestrator.profiles.spec import Spec

MARK = "[redacted]"
MIN_LEN = 6  # shorter values ("1", "true", "prod") are not secrets, and would blank out words
MIN_SECRET_REDACT = 4  # a secret-named value is redacted from this length on
MIN_SECRET_LEN = 8  # preflight refuses a secret-named value shorter than this
MIN_PREFIX = 6  # the shortest head of a secret redacted where a truncation cut it
MAX_HEAD_FORM = 256
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.I
)
URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#@\s:]*)(?::([^/?#@\s]*))?@")
# Formats that carry tokens even when we do not know the value (SGLang logs --api-key).
PATTERNS = (
    re.compile(r"(?<=['\"]api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=['\"]admin_api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=api_key=')[^']+"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
)
_ENV_FILE_LINE = re.compile(r"^\s*EnvironmentFile\s*=\s*-?(\S.*?)\s*$", re.M)


def file_items(path: str) -> list[tuple[str, str]]:
    """The NAME=value pairs (non-empty values) of an environment file, parsed as systemd does
    (`envfile.read`), where this process can read it."""

    try:
        return [(k, v) for k, v in envfile.read(path).values.items() if v]
    except OSError:
        return []


def file_values(path: str) -> list[str]:
    """The values in an environment file, where this process can read it."""
    return [v for _, v in file_items(path)]


def secret_items(items: Iterable[tuple[str, str]], secret_names: Iterable[str] = ()) -> list[str]:
    """The values among `items` that are secrets by name (SECRET_NAME, or one of
    `secret_names`), and the passwords (or tokens) inside any value that is a URL."""
    named = set(secret_names)
    out = []
    for name, value in items:
        if name in named or SECRET_NAME.search(name):
            out.append(value)
        out.extend(url_secrets(value))
    return out


def url_secrets(value: str) -> list[str]:
    """The user-info secrets of the URLs in `value`: the password of user:password@, or the
    token of token@ (as written and percent-decoded)."""
    out: list[str] = []
    for m in URL_USERINFO.finditer(value):
        secret = m.group(2) if m.group(2) is not None else m.group(1)
        if secret:
            out.append(secret)
            decoded = urllib.parse.unquote(secret)
            if decoded != secret:
                out.append(decoded)
    return out


def secret_values(spec: Spec | None) -> list[str]:
    """The values in the spec's environment file, where this process can read it."""
    if spec is None or not spec.unit.environment_file:
        return []
    return file_values(spec.unit.environment_file)


def _b64_cores(raw: bytes) -> set[str]:
    """What base64 of `raw` looks like wherever it sits in a longer base64 text: for each of
    the three byte alignments, the characters that encode the value's bits alone."""
    out: set[str] = set()
    for off in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            s = enc(b"\0" * off + raw).decode().rstrip("=")
            first = -(-off * 8 // 6)  # the first character holding only the value's bits
            last = (off + len(raw)) * 8 // 6  # one past the last such character
            core = s[first:last]
            if len(core) >= 8:
                out.add(core)
    return out


def _forms(value: str, min_len: int = MIN_LEN) -> set[str]:
    """How the value can appear in what deploy prints: as is, JSON-escaped, percent-encoded
    (upper- and lower-case hex, + for space), and base64-encoded at any alignment."""
    if len(value) < min_len:
        return set()
    forms = {value, json.dumps(value)[1:-1]}
    for q in (
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote(value),
        urllib.parse.quote_plus(value),
    ):
        forms.add(q)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), q))
    forms |= _b64_cores(value.encode())
    return {f for f in forms if len(f) >= min_len}


_TRUNCATION = re.compile(r" ?(?:\.\.\.|\u2026|\[\.\.\.)")


def redactor(values: Iterable[str], secrets: Iterable[str] = ()) -> Callable[[str], str]:
    """A function that replaces `values` (from MIN_LEN characters), `secrets` (from
    MIN_SECRET_REDACT) and the PATTERNS in a text, in all their forms (`_forms`), and the
    head of any of them that a truncation cut ("sk-abcd..." or "sk-abcd…")."""
    forms = {f for v in values for f in _forms(v)}
    forms |= {f for v in secrets for f in _forms(v, MIN_SECRET_REDACT)}
    vals = sorted(forms, key=len, reverse=True)
    # Heads of forms up to MAX_HEAD_FORM long (a value longer than that is a path or a
    # certificate, not a key): looked up by slicing back from each marker, longest first.
    heads = {f[:k] for f in forms if len(f) <= MAX_HEAD_FORM for k in range(MIN_PREFIX, len(f))}
    longest = max(map(len, heads), default=0)

    def cut_heads(text: str) -> str:
        """The head of a secret right before a truncation marker."""
        out, last = [], 0
        for m in _TRUNCATION.finditer(text):
            end = m.start()
            for k in range(min(longest, end - last), MIN_PREFIX - 1, -1):
                if text[end - k : end] in heads:
                    out.append(text[last : end - k] + MARK)
                    last = end
                    break
        return "".join(out) + text[last:] if out else text

    def redact(text: str) -> str:
        for v in vals:
            if v in text:
                text = text.replace(v, MARK)
        if heads and ("..." in text or "\u2026" in text):
            text = cut_heads(text)
        for p in PATTERNS:
            text = p.sub(MARK, text)
        return text

    return redact


# ------------------------------------------------------------------ what deploy knows is secret

_known: set[str] = set()
_secrets: set[str] = set()
_files: set[str] = set()
_current = redactor(())


def register(values: Iterable[str], *, secret: bool = False) -> None:
    """Values to redact from now on. `secret`: they are secrets by name, so shorter ones
    (from MIN_SECRET_REDACT characters) count too. A URL among them also has its password
    registered as a secret."""
    global _current
    values = list(values)
    found = {s for v in values for s in url_secrets(v)}
    new_known = set(values) - _known - _secrets if not secret else set()
    new_secrets = (set(values) if secret else set()) | found
    new_secrets -= _secrets
    if new_known or new_secrets:
        _known.update(new_known)
        _secrets.update(new_secrets)
        _current = redactor(_known, _secrets)


def register_file(path: str, secret_names: Iterable[str] = ()) -> None:
    """The values of an environment file (once per file); those of secret-named variables
    (and `secret_names`) as secrets."""
    if path not in _files:
        _files.add(path)
        items = file_items(path)
        register([v for _, v in items])
        register(secret_items(items, secret_names), secret=True)


def register_spec(spec: Spec) -> None:
    if spec.unit.environment_file:
        names = [n for n in (spec.unit.api_key_env, spec.unit.admin_api_key_env) if n]
        register_file(spec.unit.environment_file, names)


def register_units(files: Mapping[str, str]) -> None:
    """The environment files that unit texts name (EnvironmentFile=)."""
    for text in files.values():
        for m in _ENV_FILE_LINE.finditer(text):
            register_file(m.group(1).replace("%%", "%"))


def redact(text: str) -> str:
    """`text` without anything known to be secret."""
    return _current(text)


# C0 controls but newline and tab, DEL, and C1 controls (U+0080..U+009F: CSI, OSC, ... on
# terminals that take 8-bit controls). A journal line may carry any of them; on a terminal
# they move the cursor, set the window title or worse.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """`text` with each control character (but \\n and \\t) written as a visible \\xNN."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def clean(text: str) -> str:
    """What may be shown to a person: redacted, then control characters escaped."""
    return escape_controls(redact(text))


# ------------------------------------------------------------------ the output boundary


class RedactingBuffer:
    """The byte layer under a RedactingStream (its `.buffer`): whole lines are decoded as
    UTF-8 (undecodable bytes kept as they are), cleaned like text, and encoded back."""

    def __init__(self, raw: Any, text: TextIO) -> None:
        self.raw = raw
        self._text = text  # the text stream over `raw`: flushed first, so order is kept
        self._buf = b""

    def _emit(self, data: bytes) -> None:
        text = data.decode("utf-8", errors="surrogateescape")
        self._text.flush()
        self.raw.write(clean(text).encode("utf-8", errors="surrogateescape"))

    def write(self, b: bytes | bytearray | memoryview) -> int:
        data = bytes(b)
        self._buf += data
        cut = self._buf.rfind(b"\n")
        if cut >= 0:
            self._emit(self._buf[: cut + 1])
            self._buf = self._buf[cut + 1 :]
        return len(data)

    def writelines(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._buf:
            self._emit(self._buf)
            self._buf = b""
        self.raw.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, ...
        return getattr(self.raw, name)


class RedactingStream:
    """A text stream that cleans (`clean`: redacts, escapes control characters) what is
    written to `raw`, a line at a time (a secret is never split across two writes); flush()
    writes out a partial line. Its `buffer` is a RedactingBuffer over raw's."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._buf = ""
        raw_buffer = getattr(raw, "buffer", None)
        self.buffer = RedactingBuffer(raw_buffer, raw) if raw_buffer is not None else None

    def _emit(self, text: str) -> None:
        text = clean(text)
        try:
            self.raw.write(text)
        except UnicodeEncodeError:  # an ASCII locale: write what it cannot encode as \\u...
            enc = getattr(self.raw, "encoding", None) or "ascii"
            self.raw.write(text.encode(enc, errors="backslashreplace").decode(enc))

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._buf += s
        cut = self._buf.rfind("\n")
        if cut >= 0:
            self._emit(self._buf[: cut + 1])
            self._buf = self._buf[cut + 1 :]
        return len(s)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._buf:
            self._emit(self._buf)
            self._buf = ""
        self.raw.flush()
        if self.buffer is not None:
            self.buffer.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, fileno, ...
        return getattr(self.raw, name)


def terminal(stream: TextIO) -> TextIO:
    """The raw stream under a RedactingStream, for deploy's own live display (rich), whose
    cursor controls must reach the terminal. Only text passed through `clean()` first may be
    shown through it."""
    return stream.raw if isinstance(stream, RedactingStream) else stream


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Redact sys.stdout and sys.stderr until the block ends (nested calls: the outer one)."""
    if isinstance(sys.stdout, RedactingStream):
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        yield
    finally:
        for s in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                s.flush()
        sys.stdout, sys.stderr = out, err
