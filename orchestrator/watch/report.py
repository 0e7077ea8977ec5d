"""What `deploy status` and `deploy history` say about a deployment's day 2: its last incident,
how many in 24 h, and what the liveness watcher last wrote. Reads the incident store
(orchestrator.watch.incidents) and the watcher's state (orchestrator.watch.liveness); neither
imports this module, so the two stay free of each other's output code.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.watch.incidents import Incident, clip, count_since, liveness_state, load, span
from orchestrator.watch.liveness import status_line


def status_fields(
    state_root: Path | None,
    name: str,
    *,
    unit_dir: Path | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """`deploy status`'s incident and liveness fields of one deployment."""
    now = time.time() if now is None else now
    last: Incident | None = None
    n24 = 0
    live: dict[str, Any] = {}
    if state_root is not None:
        latest = load(state_root, name, limit=1)
        last = latest[-1] if latest else None
        n24 = count_since(state_root, name, int((now - 86400) * 1e6))
        live = liveness_state(state_root, name)
    if unit_dir is not None:
        enabled = (unit_dir / f"sglang-{name}-liveness.service").exists()
    else:
        enabled = bool(live.get("enabled"))
    return {
        "last_incident": None
        if last is None
        else {
            "kind": last.kind,
            "category": last.category,
            "when": last.when,
            "uptime_before_s": last.uptime_before_s,
            "evidence": last.cause_line(),
            "fix": last.fix,
        },
        "incidents_24h": n24,
        "liveness": {
            "enabled": enabled,
            "failures_in_a_row": int(live.get("failures_in_a_row", 0)) if enabled else 0,
            "last_probe": live.get("last_probe") if enabled else None,
        },
    }


def status_lines(row: Mapping[str, Any]) -> list[str]:
    """The text form of status_fields, for `deploy status`."""
    out = []
    last = row.get("last_incident")
    n = row.get("incidents_24h", 0)
    if last:
        up = last.get("uptime_before_s")
        out.append(
            f"  incident: {last['kind']} ({last['category']}) at {last['when']}"
            + (f" after {span(up)} up" if up is not None else "")
            + f"; {n} in the last 24 h"
        )
        out.append(f"            evidence: {clip(str(last.get('evidence', '')), 300)}")
        out.append(f"            fix: {last.get('fix', '')}")
    elif "incidents_24h" in row:
        out.append("  incident: none recorded")
    live = row.get("liveness")
    if isinstance(live, Mapping):
        out.append(status_line(dict(live)))
    return out


def history_line(inc: Incident) -> str:
    """One `deploy history` line, aligned with the release lines (`   !` for no number)."""
    return f"   !  {inc.when[:19]}+00:00  incident {inc.kind:<10} {inc.category}  ({inc.headline()}; {inc.action})"


def history_sort_key(when: str) -> float:
    try:
        return datetime.fromisoformat(when).timestamp()
    except ValueError:
        return 0.0
