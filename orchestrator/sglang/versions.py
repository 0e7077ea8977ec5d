"""Which SGLang release a profile runs: found on disk, else configured, else the newest known.

`installed(python)` reads the SGLang version installed for an interpreter from its
site-packages metadata (`sglang-X.dist-info/METADATA`), without running the interpreter and
without importing sglang. `resolve(python, configured)` turns that (or the profile's
`[sglang] version`) into a `Choice`: the `Release` whose knowledge applies, the version that
was found, where it came from, and a warning when deploy does not know that version.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.sglang import NEWEST, RELEASES, Release, version_key

__all__ = ["Choice", "Installed", "installed", "resolve", "site_dirs"]

_PYVER = re.compile(r"^python(\d+)\.(\d+)")


@dataclass(frozen=True)
class Installed:
    version: str
    metadata: str  # the METADATA / PKG-INFO file it was read from


@dataclass(frozen=True)
class Choice:
    """The SGLang release a profile is judged against, and why."""

    release: Release
    found: str | None  # the version found or configured (may be one deploy does not know)
    source: str  # where `found` came from, in words
    warning: str | None = None

    @property
    def version(self) -> str:
        return self.release.version

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.release.version,
            "found": self.found,
            "source": self.source,
            "warning": self.warning,
            "known": list(RELEASES),
        }

    def describe(self) -> str:
        s = f"SGLang {self.release.version} ({self.source})"
        return s + (f"; warning: {self.warning}" if self.warning else "")


def _lib_dirs(root: Path, minor: str | None) -> list[Path]:
    out: list[Path] = []
    for lib in ("lib", "lib64", "local/lib"):
        base = root / lib
        try:
            children = sorted(base.iterdir(), reverse=True)
        except OSError:
            continue
        for d in children:
            m = _PYVER.match(d.name)
            if d.name == "python3" or (m and (minor is None or f"{m[1]}.{m[2]}" == minor)):
                for sub in ("site-packages", "dist-packages"):
                    if (d / sub).is_dir():
                        out.append(d / sub)
    return out


def _pyvenv(root: Path) -> dict[str, str]:
    try:
        text = (root / "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip().lower()] = v.strip()
    return out


def site_dirs(python: str) -> list[Path]:
    """The site-packages folders an interpreter reads, found from its path alone: a venv's own
    (`<venv>/bin/python` beside `<venv>/pyvenv.cfg`, plus the base's when it includes system
    site-packages), else its prefix's (`/usr/bin/python3` -> /usr/lib/python3*/…-packages and
    /usr/local/lib/python3*/dist-packages)."""
    p = Path(python)
    m = _PYVER.match(p.name)
    minor = f"{m[1]}.{m[2]}" if m else None
    root = p.parent.parent
    cfg = _pyvenv(root)
    if cfg:
        minor = minor or (".".join(cfg.get("version", "").split(".")[:2]) or None)
        dirs = _lib_dirs(root, minor)
        if cfg.get("include-system-site-packages", "false").lower() == "true" and cfg.get("home"):
            dirs += _lib_dirs(Path(cfg["home"]).parent, minor)
        return dirs
    roots = [root]
    try:
        real = p.resolve(strict=True).parent.parent
    except OSError:
        real = root
    if real != root:
        roots.append(real)
    out: list[Path] = []
    for r in roots:
        for d in _lib_dirs(r, minor):
            if d not in out:
                out.append(d)
    return out


def installed(python: str) -> Installed | None:
    """The sglang version installed for `python`, read with importlib.metadata from the
    site-packages folders `site_dirs` finds; None if not found."""
    for d in site_dirs(python):
        for pattern in ("sglang-*.dist-info", "sglang-*.egg-info"):
            for info in sorted(d.glob(pattern)):
                try:
                    version = importlib.metadata.Distribution.at(info).version
                except (OSError, ValueError):  # unreadable, or not UTF-8
                    continue
                if version:
                    name = "METADATA" if info.suffix == ".dist-info" else "PKG-INFO"
                    return Installed(version, str(info / name))
    return None


def _nearest(version: str) -> Release:
    """The newest known release not newer than `version`, else the oldest known."""
    key = version_key(version)
    older = [r for r in RELEASES.values() if version_key(r.version) <= key]
    return older[-1] if older else next(iter(RELEASES.values()))


def resolve(python: str | None, configured: str | None = None) -> Choice:
    """The release to judge a profile against: what is installed for `python` when its
    site-packages can be read, else `configured` ([sglang] version), else the newest known."""
    found = installed(python) if python else None
    note = None
    if found is not None:
        version, source = found.version, f"installed for {python}: {found.metadata}"
        if configured and version_key(configured) != version_key(version):
            note = (
                f"the profile says [sglang] version = {configured!r}, but {version} is "
                f"installed for {python}; the installed one counts"
            )
    elif configured:
        version, source = configured, "[sglang] version in the profile"
    else:
        where = f"no sglang metadata readable for {python}" if python else "no interpreter given"
        return Choice(
            NEWEST, None, f"the newest release deploy knows: {where} and no [sglang] version"
        )
    same = [r for r in RELEASES.values() if version_key(r.version) == version_key(version)]
    if same:
        return Choice(same[-1], version, source, note)
    used = _nearest(version)
    warning = (
        f"SGLang {version} is not a release deploy knows (it knows {', '.join(RELEASES)}); "
        f"judged against {used.version} instead, the nearest older one"
        if version_key(used.version) < version_key(version)
        else f"SGLang {version} is not a release deploy knows (it knows {', '.join(RELEASES)}); "
        f"judged against {used.version} instead, the oldest it knows"
    )
    if note:
        warning = note + "; " + warning
    return Choice(used, version, source, warning)
