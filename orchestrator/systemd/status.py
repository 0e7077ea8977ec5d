"""`deploy status`: the deployments this box's units describe, each asked of systemd, of its
/health and /server_info (the server's HTTP API, read with a capped client), and of its state
directory (release, incidents, liveness watcher). Split out of orchestrator.systemd.control,
which starts, stops and rolls back; this module only reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import redact, serverapi
from orchestrator.errors import InputError
from orchestrator.profiles.spec import CHECK_SUFFIX
from orchestrator.systemd.install import Systemd
from orchestrator.systemd.releases import Store
from orchestrator.watch import liveness, report

if TYPE_CHECKING:  # at run time these modules load only when a command needs them
    from orchestrator.systemd.releases import ReleaseRecord
    from orchestrator.watch.health import Progress

    OnProgress = Callable[[Progress], None]

Outcome = Literal["healthy", "failed", "timeout"]

UNIT_MARK = "# Rendered by deploy from profile "
HEALTH_MARK = "# deploy-health-url: "


@dataclass
class Deployment:
    name: str
    unit: str
    health_url: str
    unit_file: str


def deployments(unit_dir: Path, only: str | None = None) -> list[Deployment]:
    """The deployments whose server units deploy rendered into unit_dir."""

    out = []
    for p in sorted(unit_dir.glob("sglang-*.service")):
        if p.name.endswith(f"{CHECK_SUFFIX}.service"):  # a check oneshot, not a server
            continue
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        redact.register_units({p.name: text})  # status prints nothing of it; defence in depth
        head = text.splitlines()[:6]
        name = next(
            (ln[len(UNIT_MARK) :].split(" ")[0] for ln in head if ln.startswith(UNIT_MARK)), None
        )
        url = next(
            (ln[len(HEALTH_MARK) :].strip() for ln in head if ln.startswith(HEALTH_MARK)), None
        )
        if name and url and (only is None or only == name):
            out.append(Deployment(name, p.name, url, str(p)))
    return out


@dataclass(frozen=True)
class Health:
    """GET health_url: the HTTP status (None: no answer) and what happened, in words."""

    status: int | None
    detail: str


@dataclass
class DeploymentStatus:
    """One deployment as `deploy status` sees it."""

    profile: str
    unit: str
    active_state: str
    sub_state: str
    result: str
    since_us: int
    for_s: float | None
    restarts: int
    main_pid: int
    invocation_id: str
    health_url: str
    health: Health
    server: dict[
        str, Any
    ]  # what /server_info says (sglang.api.server_facts); {} when it did not answer
    release: ReleaseRecord | None = None  # the latest release; None when none or not readable
    interrupted: dict[str, Any] | None = None  # the marker of an up/rollback that did not finish
    # day 2 (orchestrator/watch/report.py status_fields): the last incident, how many in 24 h,
    # the liveness watcher's state
    last_incident: dict[str, Any] | None = None
    incidents_24h: int = 0
    liveness: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["health"] = asdict(self.health)
        d["server"] = dict(self.server)
        r = self.release
        d["release"] = (
            {"number": r.number, "outcome": r.outcome, "created": r.created} if r else None
        )
        return d


@dataclass
class StatusResult:
    """`deploy status`: the deployments found in unit_dir (only `only`, when given)."""

    unit_dir: Path
    only: str | None
    deployments: list[DeploymentStatus]

    def to_json(self) -> list[dict[str, Any]]:
        return [d.to_json() for d in self.deployments]


async def status(
    unit_dir: Path, *, state_root: Path | None = None, user: bool = False, only: str | None = None
) -> StatusResult:

    deps = deployments(unit_dir, only)
    if not deps:
        return StatusResult(unit_dir, only, [])
    now_us = time.time() * 1e6
    async with await Systemd.connect(user=user) as sd:

        async def one(d: Deployment) -> DeploymentStatus:
            st = await sd.state(d.unit)
            health, facts = await asyncio.gather(
                asyncio.to_thread(serverapi.health, d.health_url),
                asyncio.to_thread(serverapi.server_facts, serverapi.base_of(d.health_url)),
            )
            since = st.state_change_timestamp_us
            release, interrupted = _state_facts(state_root, d.name)
            day2 = report.status_fields(state_root, d.name, unit_dir=unit_dir)
            # The watcher as systemd sees its unit now, judged with its heartbeat: never
            # "watching" on the strength of a file it left behind.
            watcher = await liveness.watcher_state(
                sd,
                d.name,
                state_root=state_root,
                enabled=(unit_dir / liveness.watcher_unit(d.name)).exists(),
                user=user,
                server_active=st.active_state in ("active", "activating", "reloading"),
            )
            day2["liveness"] = watcher.to_json()
            return DeploymentStatus(
                profile=d.name,
                unit=d.unit,
                active_state=st.active_state,
                sub_state=st.sub_state,
                result=st.result,
                since_us=since,
                for_s=round((now_us - since) / 1e6, 1) if since else None,
                restarts=st.n_restarts,
                main_pid=st.main_pid,
                invocation_id=st.invocation_id,
                health_url=d.health_url,
                health=Health(
                    status=health.status,
                    detail="healthy" if health.status == 200 else health.words,
                ),
                server=facts,
                release=release,
                interrupted=interrupted,
                **day2,
            )

        return StatusResult(unit_dir, only, list(await asyncio.gather(*(one(d) for d in deps))))


def _state_facts(
    state_root: Path | None, name: str
) -> tuple[ReleaseRecord | None, dict[str, Any] | None]:
    """(latest release, interrupted marker); (None, None) when the state dir cannot be read."""
    if state_root is None:
        return None, None

    store = Store(state_root, name)
    try:
        latest = store.latest()
    except (OSError, InputError):  # a state dir this user cannot read: say nothing, not fail
        return None, None
    return latest, store.interrupted()
