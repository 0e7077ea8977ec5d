"""The error hierarchy. Every error the CLI reports is one of these, and its class alone says
what happened:

- `Refused` (exit status 2, JSON outcome "refused"): refused before any change. Nothing was
  written, started or stopped; running the command again after the fix is safe. Bad input
  (`InputError` and its children), unreachable systemd, a held lock, and a systemd call that
  failed before deploy changed anything.
- `Failed` (exit status 1, JSON outcome "failed"): something had already been changed (units
  installed, a restart or stop issued) when the error came. `after_change()` turns a refusal
  raised past that point, say a D-Bus call that fails after the restart, into a `Failed` that
  says what had been changed.

The message is one paragraph that names the field and the fix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Literal


class DeployError(Exception):
    """Base class for every error `deploy` reports to the operator. Raise a `Refused` or a
    `Failed` (or a child): the branch decides the exit status and the JSON outcome."""

    exit_code: ClassVar[int] = 1
    outcome: ClassVar[Literal["refused", "failed"]] = "failed"

    def __init__(self, message: str, *, field: str | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.fix = fix

    def paragraph(self) -> str:
        """One paragraph: what is wrong, which field, what to change."""
        msg = self.message.rstrip(".")
        if self.field and self.field not in msg:
            msg = f"{self.field}: {msg}"
        parts = [msg + "."]
        if self.fix:
            parts.append("Fix: " + self.fix.rstrip(".") + ".")
        return " ".join(parts)


class Refused(DeployError):
    """Refused before any change: nothing was written, started or stopped (exit 2)."""

    exit_code = 2
    outcome = "refused"


class Failed(DeployError):
    """Failed after a change had been made (exit 1)."""

    exit_code = 1
    outcome = "failed"

    @classmethod
    def after(cls, err: DeployError, changed: str) -> Failed:
        """`err` happened once `changed` (in words) was done, so it is no refusal."""
        return cls(f"{err.message.rstrip('.')} (after {changed})", field=err.field, fix=err.fix)


@contextlib.contextmanager
def after_change(changed: str | Callable[[], str]) -> Iterator[None]:
    """Mark the code past the first change: a `Refused` raised inside (a D-Bus call, the
    journal, the state dir) is re-raised as a `Failed` that names what had been changed
    (`changed`, or what it returns at that moment)."""
    try:
        yield
    except Refused as e:
        raise Failed.after(e, changed if isinstance(changed, str) else changed()) from e


class InputError(Refused):
    """Bad input, refused before anything was changed (exit 2)."""


class ProfileError(InputError):
    """A profile could not be found, parsed or validated."""


class UnsafeValueError(InputError):
    """A value would change the meaning of a unit file (newline, control character)."""


class PreflightRejected(InputError):
    """Preflight found a config that SGLang would refuse or that cannot be right."""

    def __init__(self, message: str, findings: list[Any] | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.findings = findings or []


class SystemdUnavailable(Refused):
    """systemd cannot be reached (no bus, no rights)."""


class LockedError(Refused):
    """Another deploy of the same deployment is running."""
