"""Time as deploy writes it in its records (releases, sweeps): UTC, ISO 8601, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """Now, e.g. "2026-12-03T09:05:44+00:00" (datetime.fromisoformat reads it back)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
