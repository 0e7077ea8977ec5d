"""Releases, the in-flight marker and the deployment lock, under the state dir.

    <state_dir>/<name>/
        lock                      flock()ed by the running up/down/rollback; holds "pid time"
        inflight.json             written before a change, removed after: its presence means
                                  an up was interrupted (and says at which step)
        releases/<N>/release.json number, time, profile source, digest, outcome, ...
        releases/<N>/profile.json the validated spec as it was applied
        releases/<N>/units/*      the rendered unit files

Every file is written atomically (temp + fsync + rename).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import InputError, LockedError
from orchestrator.systemd.files import held_lock, read_state, write_atomically
from orchestrator.timefmt import now_iso
from orchestrator.watch import incidents

if TYPE_CHECKING:
    from orchestrator.watch.incidents import Incident

DEFAULT_STATE_DIR = Path("/var/lib/deploy")


STATE_DIR_ENV = "DEPLOY_STATE_DIR"


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--state-dir, else $DEPLOY_STATE_DIR, else /var/lib/deploy (releases and bench runs)."""
    return Path(explicit or os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR).expanduser()


def digest(files: Mapping[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()[:16]


@dataclass
class ReleaseRecord:
    """One recorded deployment release: the units `up` or `rollback` installed (by digest), when,
    and how that start went. Not `orchestrator.sglang.Release`, which is an SGLang release's
    knowledge."""

    number: int
    created: str
    source: str
    digest: str
    outcome: str = "pending"  # pending | healthy | failed | timeout | interrupted | rolled-back
    finished: str | None = None
    invocation_id: str = ""
    diagnosis: str | None = None  # category id
    note: str = ""
    units: dict[str, str] = field(default_factory=dict, repr=False)


def _atomic_json(path: Path, data: Any) -> None:
    write_atomically(
        {path.name: json.dumps(data, indent=1, sort_keys=True) + "\n"}, path.parent, mode=0o600
    )


class Store:
    """The state of one deployment."""

    def __init__(self, root: Path, name: str) -> None:
        self.dir = root / name
        self.name = name

    # -- releases ---------------------------------------------------------------------------

    def _rdir(self, n: int) -> Path:
        return self.dir / "releases" / f"{n:04d}"

    def releases(self) -> list[ReleaseRecord]:
        base = self.dir / "releases"
        out: list[ReleaseRecord] = []
        try:
            if not base.is_dir():
                return out
            dirs = sorted(base.iterdir())
        except OSError as e:
            raise InputError(
                f"cannot read the releases of {self.name} in {base}: {e.strerror}",
                field="--state-dir",
                fix="run as root, or pass the --state-dir that deploy up used",
            ) from None
        for d in dirs:
            meta = d / "release.json"
            try:
                data = json.loads(read_state(meta))
            except (OSError, ValueError, RecursionError):
                continue
            if not isinstance(data, dict):
                continue
            try:
                rel = ReleaseRecord(
                    **{k: v for k, v in data.items() if k in ReleaseRecord.__dataclass_fields__}
                )
            except TypeError:
                continue
            if isinstance(rel.number, int):
                out.append(rel)
        return out

    def get(self, n: int) -> ReleaseRecord:
        for r in self.releases():
            if r.number == n:
                r.units = self.units(n)
                return r
        raise InputError(
            f"{self.name} has no release {n}",
            field="--to",
            fix=f"pick one listed by `deploy history {self.name}`",
        )

    def units(self, n: int) -> dict[str, str]:
        d = self._rdir(n) / "units"
        try:
            return {p.name: read_state(p) for p in sorted(d.iterdir())} if d.is_dir() else {}
        except (OSError, ValueError) as e:
            raise InputError(
                f"cannot read the units of release {n} of {self.name} in {d}: {e}",
                field="--state-dir",
                fix="the release's unit files must be regular files (not links); pick another "
                "release with --to, or run as root",
            ) from None

    def last_healthy(self, exclude_digest: str | None = None) -> ReleaseRecord | None:
        for r in reversed(self.releases()):
            if r.outcome == "healthy" and r.digest != exclude_digest:
                r.units = self.units(r.number)
                return r
        return None

    def latest(self) -> ReleaseRecord | None:
        rs = self.releases()
        return rs[-1] if rs else None

    def record(
        self, files: Mapping[str, str], spec_json: Mapping[str, Any], source: str
    ) -> ReleaseRecord:
        rs = self.releases()
        n = (rs[-1].number + 1) if rs else 1
        rel = ReleaseRecord(number=n, created=now_iso(), source=source, digest=digest(files))
        d = self._rdir(n)
        write_atomically(dict(files), d / "units", field="--state-dir")
        _atomic_json(d / "profile.json", spec_json)
        self.save(rel)
        return rel

    def save(self, rel: ReleaseRecord) -> None:
        data = asdict(rel)
        data.pop("units")
        _atomic_json(self._rdir(rel.number) / "release.json", data)

    def finish(self, rel: ReleaseRecord, outcome: str, **kw: Any) -> None:
        rel.outcome = outcome
        rel.finished = now_iso()
        for k, v in kw.items():
            setattr(rel, k, v)
        self.save(rel)

    def mark_interrupted(self, number: Any) -> None:
        """A release left pending by a killed up is, in truth, interrupted."""
        for r in self.releases():
            if r.number == number and r.outcome == "pending":
                self.finish(r, "interrupted")

    # -- in-flight marker -----------------------------------------------------------------

    def begin(self, action: str, **info: Any) -> None:
        _atomic_json(
            self.dir / "inflight.json",
            {"action": action, "pid": os.getpid(), "since": now_iso(), "step": "start", **info},
        )

    def step(self, step: str) -> None:
        path = self.dir / "inflight.json"
        try:
            data = json.loads(read_state(path))
        except (OSError, ValueError, RecursionError):
            return
        data["step"] = step
        _atomic_json(path, data)

    def end(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.dir / "inflight.json").unlink()

    def interrupted(self) -> dict[str, Any] | None:
        """The marker of an up/rollback that did not finish (its process is gone)."""
        try:
            data = json.loads(read_state(self.dir / "inflight.json"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        try:
            pid = int(data.get("pid", 0))
        except (TypeError, ValueError):
            pid = 0
        if pid and pid != os.getpid() and _alive(pid):
            return None  # still running, not interrupted
        return data

    # -- lock -----------------------------------------------------------------------------

    def lock(self, action: str) -> contextlib.AbstractContextManager[None]:
        def held(pid: str, since: str, what: str) -> LockedError:
            return LockedError(
                f"{self.name} is locked by pid {pid} since {since} "
                f"({'a deploy' if what == '?' else what} running)",
                field="PROFILE",
                fix="wait for it to finish, or stop that process; a second up/down/rollback of one deployment never runs at once",
            )

        return held_lock(self.dir, action, held)


@dataclass
class HistoryResult:
    """`deploy history`: the releases of a deployment and its incidents, oldest first."""

    profile: str
    dir: Path  # where they are kept
    releases: list[ReleaseRecord]
    incidents: list[Incident]  # stops nobody asked for, hangs the watcher restarted
    interrupted: dict[str, Any] | None  # the marker of an up/rollback that did not finish

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "releases": [
                {k: v for k, v in asdict(r).items() if k != "units"} for r in self.releases
            ],
            "incidents": [i.to_json() for i in self.incidents],
            "interrupted": self.interrupted,
        }


def history(root: Path, name: str) -> HistoryResult:
    """The releases and incidents of deployment `name` under the state dir `root`
    (InputError when unreadable). Here, not in deployer.py: `deploy history` needs no D-Bus."""

    store = Store(root, name)
    return HistoryResult(
        name, store.dir, store.releases(), incidents.load(root, name), store.interrupted()
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
