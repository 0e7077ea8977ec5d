"""What a rendered unit's sandbox hides, read from the unit's own lines.

The liveness watcher runs deploy's code (an interpreter, the `orchestrator` package) inside the
sandbox of templates/sglang-liveness.service.j2. A checkout under /tmp is invisible there
(PrivateTmp=), one under /home or /root is if ProtectHome=yes: the watcher then dies at
import, every few seconds, while the server runs unwatched. `check_watcher` refuses such an
installation before `up` changes anything. It reads the directives from the unit text that
is about to be installed, so the template stays the one list of what the sandbox hides.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orchestrator.errors import PreflightRejected

# What each directive makes invisible (replaced by an empty or inaccessible directory).
PRIVATE_TMP = ("/tmp", "/var/tmp")
PROTECT_HOME = ("/home", "/root", "/run/user")
_TRUE = {"1", "yes", "true", "on"}


@dataclass(frozen=True)
class Hidden:
    """A directory the unit's processes cannot see, and the directive that hides it."""

    path: str
    directive: str

    def covers(self, path: str) -> bool:
        p, h = PurePosixPath(path), PurePosixPath(self.path)
        return p == h or h in p.parents


def directives(unit_text: str, section: str = "Service") -> list[tuple[str, str]]:
    """(key, value) of every assignment in one section, in order; specifiers' %% undone."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in unit_text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            continue
        if current == section and "=" in line:
            key, value = line.split("=", 1)
            out.append((key.strip(), value.strip().replace("%%", "%")))
    return out


def _paths(value: str) -> list[str]:
    """The paths of a space-separated path list (InaccessiblePaths=-/x +/y /z:opts)."""
    return [w.lstrip("-+").split(":", 1)[0] for w in value.split() if w.lstrip("-+")]


def hidden(unit_text: str) -> list[Hidden]:
    """The directories this unit's sandbox hides, from its [Service] lines."""
    out: list[Hidden] = []
    for key, value in directives(unit_text):
        line = f"{key}={value}"
        if key == "PrivateTmp" and value.lower() in _TRUE:
            out += [Hidden(p, line) for p in PRIVATE_TMP]
        elif key == "ProtectHome" and value.lower() in _TRUE | {"tmpfs"}:
            out += [Hidden(p, line) for p in PROTECT_HOME]
        elif key in ("InaccessiblePaths", "TemporaryFileSystem", "NoExecPaths"):
            out += [Hidden(p, line) for p in _paths(value)]
    return out


def invisible(path: str, unit_text: str) -> Hidden | None:
    """The rule that hides `path` from the unit, or None when the unit can see it."""
    return next((h for h in hidden(unit_text) if h.covers(path)), None)


def installation(python: str, code_dir: str | None) -> dict[str, str]:
    """What the watcher must see to run, by what it is: the interpreter as named and as
    resolved (a venv's python is a link into its base Python), the base Python's prefix (its
    standard library), and the directory that holds the `orchestrator` package."""
    out = {"the interpreter": python}
    real = os.path.realpath(python)
    if real != python:
        out["the interpreter's target"] = real
    if os.path.realpath(sys.executable) == real:  # the Python running now: its prefixes too
        out["the interpreter's environment"] = sys.prefix
        if sys.base_prefix != sys.prefix:
            out["the base Python"] = sys.base_prefix
    code = code_dir if code_dir is not None else str(Path(__file__).resolve().parent.parent)
    out["deploy's code"] = code
    if os.path.realpath(code) != code:
        out["deploy's code (resolved)"] = os.path.realpath(code)
    return out


def check_watcher(
    files: Mapping[str, str], watcher: str | None, python: str, code_dir: str | None, state: Path
) -> None:
    """Refuse (PreflightRejected, exit 2) an installation of deploy that the watcher unit
    `watcher` (one of `files`, as rendered) cannot see: its interpreter, its code, the state
    dir it writes. Nothing to check without a watcher or with no sandbox (a user manager)."""
    if watcher is None or watcher not in files:
        return
    text = files[watcher]
    needs = {**installation(python, code_dir), "the state dir": str(state)}
    blocked = [(what, path, h) for what, path in needs.items() if (h := invisible(path, text))]
    if not blocked:
        return
    what, path, h = blocked[0]
    others = "; ".join(f"{w} {p} ({x.directive})" for w, p, x in blocked[1:])
    raise PreflightRejected(
        f"the liveness watcher {watcher} could not run: {what} {path} is under {h.path}, which "
        f"its sandbox hides ({h.directive} in the unit)"
        + (f"; so are {others}" if others else "")
        + "; the watcher would fail at every start and the server would run unwatched. "
        "Nothing was changed",
        field="unit.python" if "interpreter" in what or "Python" in what else "installation",
        fix=_fix(what, h),
    )


def _fix(what: str, h: Hidden) -> str:
    if what == "the state dir":
        return f"use a state dir outside {_dirs(h)} (--state-dir, DEPLOY_STATE_DIR), e.g. /var/lib/deploy"
    return (
        f"install deploy where the watcher can see it, outside {_dirs(h)}: e.g. `pip install .` "
        "into a venv under /opt or into the system Python, and run deploy from there; or set "
        "`liveness = false` in the profile's [health] to run without a watcher"
    )


def _dirs(h: Hidden) -> str:
    if h.path in PRIVATE_TMP:
        return " and ".join(PRIVATE_TMP)
    if h.path in PROTECT_HOME:
        return ", ".join(PROTECT_HOME[:-1]) + " and " + PROTECT_HOME[-1]
    return h.path
