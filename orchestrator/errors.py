"""The error hierarchy. Every error the CLI reports is one of these.

`InputError` and its children mean "refused before any change" and map to exit status 2;
the message is one paragraph that names the field and the fix.
"""

from __future__ import annotations


class DeployError(Exception):
    """Base class for every error `deploy` reports to the operator."""

    exit_code = 1

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


class InputError(DeployError):
    """Bad input, refused before anything was changed (exit 2)."""

    exit_code = 2


class ProfileError(InputError):
    """A profile could not be found, parsed or validated."""


class UnsafeValueError(InputError):
    """A value would change the meaning of a unit file (newline, control character)."""


class PreflightRejected(InputError):
    """Preflight found a config that SGLang would refuse or that cannot be right."""

    def __init__(self, message: str, findings: list | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.findings = findings or []


class SystemdUnavailable(InputError):
    """systemd cannot be reached (no bus, no rights)."""


class LockedError(InputError):
    """Another deploy of the same deployment is running."""
