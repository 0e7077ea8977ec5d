"""Environment files (systemd's EnvironmentFile=), read the way systemd reads them.

One parser for all of deploy: preflight's checks of the file (`rules/secrets.py`), the
secrets redacted from what deploy prints and records (`redact.py`), the incident recorder.
Nothing here puts a value into this process's environment.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WS = " \t"
_NEWLINE = "\n\r"
# Inside double quotes a backslash escapes only these (systemd's SHELL_NEED_ESCAPE); before
# any other character it is kept.
_DQ_ESCAPES = '"\\`$'


@dataclass
class EnvFile:
    """What an environment file sets: `values` (NAME -> value, the last assignment wins, as
    in systemd) and `ignored` (1-based line, text) for assignments systemd does not accept:
    a name that is not a valid variable name, such as `export NAME=...`."""

    values: dict[str, str] = field(default_factory=dict)
    ignored: list[tuple[int, str]] = field(default_factory=list)


def parse(text: str) -> EnvFile:
    """Parse an environment file's text as systemd's EnvironmentFile= does.

    - `NAME=value` lines; blank lines are skipped; a line whose first non-blank character is
      `#` or `;` is a comment (a backslash at the end of a comment line continues it);
    - spaces around the name, after `=`, and at the end of an unquoted value are dropped;
    - unquoted: a backslash keeps the next character literally, and a backslash at the end
      of the line joins the next line;
    - `'single quotes'`: everything literal up to the next `'`; `"double quotes"`: a
      backslash escapes `"`, `\\`, `` ` `` and `$` (before any other character it is
      kept), backslash-newline joins lines; quoted and unquoted pieces concatenate;
    - a line without `=` sets nothing; a name that is not a variable name (`export NAME`,
      `A-B`) is listed in `ignored`, as systemd refuses it.
    """
    out = EnvFile()
    state = "pre_key"
    key: list[str] = []
    value: list[str] = []
    keep = 0  # the value's length up to its last non-blank unquoted character
    line = 1
    key_line = 1

    def push() -> None:
        name = "".join(key).strip(_WS)
        v = "".join(value[:keep])
        if _NAME.match(name):
            out.values[name] = v
        elif name:
            out.ignored.append((key_line, f"{name}={v}"[:80]))

    for c in text:
        if state == "pre_key":
            if c in "#;":
                state = "comment"
            elif c in _NEWLINE:
                line += c == "\n"
            elif c not in _WS:
                state, key, value, keep, key_line = "key", [c], [], 0, line
        elif state == "key":
            if c in _NEWLINE:  # no '=': sets nothing
                state = "pre_key"
                line += c == "\n"
            elif c == "=":
                state = "pre_value"
            else:
                key.append(c)
        elif state == "pre_value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
                line += c == "\n"
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            elif c not in _WS:
                value.append(c)
                keep = len(value)
                state = "value"
        elif state == "value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
                line += c == "\n"
            elif c == "\\":
                state = "value_escape"
            else:
                value.append(c)
                if c not in _WS:
                    keep = len(value)
        elif state == "value_escape":
            state = "value"
            if c in _NEWLINE:  # line continuation
                line += c == "\n"
            else:
                value.append(c)
                keep = len(value)
        elif state == "single":
            if c == "'":
                keep = len(value)
                state = "pre_value"
            else:
                value.append(c)
                line += c == "\n"
        elif state == "double":
            if c == '"':
                keep = len(value)
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                value.append(c)
                line += c == "\n"
        elif state == "double_escape":
            state = "double"
            if c in _DQ_ESCAPES:
                value.append(c)
            elif c in _NEWLINE:
                line += c == "\n"
            else:
                value += ["\\", c]
        elif state == "comment":
            if c == "\\":
                state = "comment_escape"
            elif c in _NEWLINE:
                state = "pre_key"
                line += c == "\n"
        elif state == "comment_escape":
            state = "comment"
            line += c == "\n"
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        keep = len(value) if state in ("single", "double", "double_escape") else keep
        push()
    return out


MAX_BYTES = 1 << 20


def read(path: str | Path) -> EnvFile:
    """Parse the file at `path` (UTF-8, undecodable bytes replaced, at most MAX_BYTES).

    Opened without blocking and read only when it is a regular file: a FIFO or a device would
    hang every command that loads the profile. OSError when unreadable or not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = os.read(fd, MAX_BYTES)
    finally:
        os.close(fd)
    return parse(data.decode("utf-8", errors="replace"))
