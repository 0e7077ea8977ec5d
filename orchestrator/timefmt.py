"""Time as deploy writes it in its records: UTC, ISO 8601; to the second (releases, sweeps),
to the millisecond (incidents, liveness probes)."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """Now, e.g. "2026-12-03T09:05:44+00:00" (datetime.fromisoformat reads it back)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def iso(us: int) -> str:
    """A time in microseconds since the epoch (systemd's and the journal's unit), to the
    millisecond, e.g. "2026-12-03T09:05:44.123+00:00"."""
    return datetime.fromtimestamp(us / 1e6, tz=UTC).isoformat(timespec="milliseconds")
