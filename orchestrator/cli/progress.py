"""What `up` shows while it waits: one live line on a terminal, plain lines otherwise.

rich (~30-40 ms of imports) is imported inside: `deploy --help` imports this module."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from orchestrator import redact


class UpProgress:
    """Callable for `health.wait_until_healthy(on_progress=...)`."""

    def __init__(self, unit: str, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.enabled = enabled  # off for --json: machine output only
        self.unit = unit
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.live: Any = None
        self.last_phase: str | None = None
        self.t0 = time.monotonic()

    def __enter__(self) -> UpProgress:
        if self.tty and self.enabled:
            from rich.console import Console
            from rich.live import Live

            # rich's cursor controls must reach the terminal, so it writes below the output
            # boundary; every text it shows is cleaned (redacted, controls escaped) first.
            self.live = Live(
                "",
                console=Console(file=redact.terminal(self.stream)),
                refresh_per_second=8,
                transient=True,
            )
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def line(self, p: Any) -> str:
        phase = p.phase_label or "starting"
        http = p.http_detail or "-"
        return (
            f"{self.unit}: {phase} [{p.elapsed_s:6.1f}s]  unit {p.sub_state or '-'}  /health {http}"
        )

    def __call__(self, p: Any) -> None:
        if not self.enabled:
            return
        if self.live is not None:
            from rich.text import Text

            self.live.update(Text(redact.clean(self.line(p))))
        elif p.phase != self.last_phase:
            self.stream.write(self.line(p) + "\n")
            self.stream.flush()
        self.last_phase = p.phase
