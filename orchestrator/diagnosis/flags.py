"""The SGLang flags a log shows: its command line (a journal _CMDLINE or a logged
`launch_server` line) or SGLang's own `server_args=` line; the fixes read them."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from orchestrator.diagnosis.journal import JournalEntry
from orchestrator.sglang.flags import from_argv

__all__ = ["flags_from_argv", "flags_from_log", "flags_from_server_args"]


def flags_from_argv(argv: Sequence[str]) -> dict[str, Any]:
    """SGLang ServerArgs fields from a `python -m sglang.launch_server ...` argv (the
    interpreter and module words are skipped: only `--flags` are read)."""
    return from_argv(argv)


_SERVER_ARGS_ITEM = re.compile(
    r"""['"]?(?P<k>[a-z_][a-z0-9_]*)['"]?\s*[=:]\s*(?P<v>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|None|True|False|-?\d+(?:\.\d+)?(?:e-?\d+)?)(?=\s*[,)}])"""
)


def flags_from_server_args(message: str) -> dict[str, Any]:
    """Fields from SGLang's `server_args=ServerArgs(k=v, ...)` or `server_args={'k': v, ...}`."""
    _, _, rest = message.partition("server_args=")
    out: dict[str, Any] = {}
    for m in _SERVER_ARGS_ITEM.finditer(rest):
        try:
            out[m["k"]] = ast.literal_eval(m["v"])
        except (ValueError, SyntaxError):
            continue
    return out


def flags_from_log(entries: Sequence[JournalEntry], near: Sequence[int] = ()) -> dict[str, Any]:
    """Recover the unit's flags from the log: the process's _CMDLINE, a logged command line,
    or SGLang's `server_args=` line. Looks at the lines `near` (the cause) first, then the
    first lines of the log (cheap: a saved 200k-line log is not scanned for this)."""
    idx = list(near) + list(range(min(len(entries), 400)))
    for i in idx:
        e = entries[i]
        if e.cmdline and "--" in e.cmdline and "sglang" in e.cmdline:
            return flags_from_argv(e.cmdline.split())
    for i in idx:
        msg = entries[i].message
        if "server_args=" in msg:
            return flags_from_server_args(msg)
        if ("sglang.launch_server" in msg or "sglang serve" in msg) and "--" in msg:
            return flags_from_argv(msg.split())
    return {}
