"""How the main process ended, written the way systemd writes it: "1" for an exit status,
"9/KILL" for a signal. Two sources say it differently: D-Bus (ExecMainCode/ExecMainStatus,
numbers) and the environment of ExecStopPost= ($EXIT_CODE/$EXIT_STATUS, words)."""

from __future__ import annotations

import signal

CLD_EXITED = 1  # ExecMainCode of a process that exited (others: killed, dumped)


def from_dbus(code: int | None, status: int | None) -> str | None:
    """From ExecMainCode/ExecMainStatus; None when the process has not ended."""
    if not code or status is None:
        return None
    if code == CLD_EXITED:
        return str(status)
    try:
        name = signal.Signals(status).name.removeprefix("SIG")
    except ValueError:
        name = "?"
    return f"{status}/{name}"


def from_env(code: str | None, status: str | None) -> str | None:
    """From $EXIT_CODE ("exited", "killed", "dumped") and $EXIT_STATUS ("1", "KILL")."""
    if not code or not status:
        return None
    if code == "exited":
        return status
    try:
        return f"{signal.Signals['SIG' + status].value}/{status}"
    except KeyError:
        return f"?/{status}"
