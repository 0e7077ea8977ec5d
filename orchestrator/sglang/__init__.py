"""Everything deploy knows about SGLang, one module per release.

`release(version)` gives a `Release` (see `model.py`): the flag table, the texts SGLang prints
(`Message`), where they come from (`Frame`), the start-up milestones, the speculative rules and
the hardware-dependent defaults. `versions.resolve` says which release a profile targets.
Preflight, the classifier, the generated docs and the test stand-in read only this package for
SGLang's words; tests/test_knowledge.py fails when a message text is typed anywhere else.

Adding a release: docs/sglang-releases.md. Standard library only (the stand-in imports it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator.sglang import v0_5_11, v0_5_23
from orchestrator.sglang.model import Frame, Message, Milestone, Release

__all__ = [
    "NEWEST",
    "PROBE_SCRIPT",
    "RELEASES",
    "Frame",
    "Message",
    "Milestone",
    "Release",
    "all_messages",
    "is_eagle_draft",
    "phase_of",
    "release",
    "version_key",
]


def version_key(version: str) -> tuple[int, ...]:
    """ "0.5.23" -> (0, 5, 23); local and pre-release suffixes ("0.5.23.post1", "0.5.23rc1",
    "0.5.23+cu128") sort as the release they extend."""
    out: list[int] = []
    for part in version.split("+")[0].split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


# SGLang's own argument resolution, run by path in the profile's interpreter (probe.py).
PROBE_SCRIPT = Path(__file__).resolve().with_name("probe.py")

# Oldest first.
RELEASES: dict[str, Release] = {
    r.version: r
    for r in sorted((v0_5_11.RELEASE, v0_5_23.RELEASE), key=lambda r: version_key(r.version))
}
NEWEST: Release = list(RELEASES.values())[-1]


def release(version: str | None = None) -> Release:
    """The release deploy knows by this exact version (None: the newest); KeyError otherwise."""
    if version is None:
        return NEWEST
    return RELEASES[version]


def is_eagle_draft(algorithm: str | None, version: str | None = None) -> bool:
    """Whether `speculative_algorithm` runs an EAGLE draft head in this release (default: the
    newest known)."""
    return (algorithm or "").upper() in release(version).eagle_draft_algorithms


def phase_of(line: str, version: str | None = None) -> Milestone | None:
    """The start-up milestone a log line marks: per the given release, else per any known."""
    if version is not None:
        return release(version).phase_of(line)
    for r in reversed(RELEASES.values()):
        m = r.phase_of(line)
        if m is not None:
            return m
    return None


def all_messages(mid: str) -> list[Message]:
    """The message `mid` as every known release prints it (distinct texts, newest first)."""
    out: list[Message] = []
    for r in reversed(RELEASES.values()):
        m = r.messages.get(mid)
        if m is None or mid in r.absent:
            continue
        for variant in (m, *(replace(m, text=t, older=()) for t in m.older)):
            if all((variant.text, variant.exc) != (o.text, o.exc) for o in out):
                out.append(variant)
    return out
