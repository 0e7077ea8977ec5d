"""Keep secrets out of everything deploy prints.

One output boundary: `guard()` wraps the process's stdout and stderr in a `RedactingStream`
for the length of a command (the CLI does it for every command), so text and --json output,
errors, progress lines and tracebacks all pass through `redact()`. What is secret is known
as deploy learns it: `register_spec()` (the profile's environment file), `register_units()`
(the environment files that rendered or installed units name). Values are replaced by a
marker, also where they appear JSON-escaped (a journal line inside --json output). Formats
that carry tokens whatever their value (SGLang logs `api_key='...'`) are replaced too.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from orchestrator.spec import Spec

MARK = "[redacted]"
MIN_LEN = 6  # shorter values ("1", "true", "prod") are not secrets, and would blank out words
# Formats that carry tokens even when we do not know the value (SGLang logs --api-key).
PATTERNS = (
    re.compile(r"(?<=['\"]api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=['\"]admin_api_key['\"]: ['\"])[^'\"]+"),
    re.compile(r"(?<=api_key=')[^']+"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
)
_ENV_FILE_LINE = re.compile(r"^\s*EnvironmentFile\s*=\s*-?(\S.*?)\s*$", re.M)


def file_values(path: str) -> list[str]:
    """The values in an environment file (parsed as systemd does, `envfile.read`), where this
    process can read it."""
    from orchestrator import envfile

    try:
        return [v for v in envfile.read(path).values.values() if v]
    except OSError:
        return []


def secret_values(spec: Spec | None) -> list[str]:
    """The values in the spec's environment file, where this process can read it."""
    if spec is None or not spec.unit.environment_file:
        return []
    return file_values(spec.unit.environment_file)


def _forms(value: str) -> set[str]:
    """The value, and how it looks inside a JSON string."""
    if len(value) < MIN_LEN:
        return set()
    return {value, json.dumps(value)[1:-1]}


def redactor(values: Iterable[str]) -> Callable[[str], str]:
    """A function that replaces `values` (and the PATTERNS) in a text."""
    vals = sorted({f for v in values for f in _forms(v)}, key=len, reverse=True)

    def redact(text: str) -> str:
        for v in vals:
            if v in text:
                text = text.replace(v, MARK)
        for p in PATTERNS:
            text = p.sub(MARK, text)
        return text

    return redact


# ------------------------------------------------------------------ what deploy knows is secret

_known: set[str] = set()
_files: set[str] = set()
_current = redactor(())


def register(values: Iterable[str]) -> None:
    """Secret values from now on."""
    global _current
    new = set(values) - _known
    if new:
        _known.update(new)
        _current = redactor(_known)


def register_file(path: str) -> None:
    """The values of an environment file (once per file)."""
    if path not in _files:
        _files.add(path)
        register(file_values(path))


def register_spec(spec: Spec) -> None:
    if spec.unit.environment_file:
        register_file(spec.unit.environment_file)


def register_units(files: Mapping[str, str]) -> None:
    """The environment files that unit texts name (EnvironmentFile=)."""
    for text in files.values():
        for m in _ENV_FILE_LINE.finditer(text):
            register_file(m.group(1).replace("%%", "%"))


def redact(text: str) -> str:
    """`text` without anything known to be secret."""
    return _current(text)


# ------------------------------------------------------------------ the output boundary


class RedactingStream:
    """A text stream that redacts what is written to `raw`, a line at a time (a secret is
    never split across two writes); flush() writes out a partial line."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._buf = ""

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._buf += s
        cut = max(self._buf.rfind("\n"), self._buf.rfind("\r"))
        if cut >= 0:
            self.raw.write(redact(self._buf[: cut + 1]))
            self._buf = self._buf[cut + 1 :]
        return len(s)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._buf:
            self.raw.write(redact(self._buf))
            self._buf = ""
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, fileno, ...
        return getattr(self.raw, name)


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
