"""Liveness: a watcher that notices a server that is up but no longer serving.

systemd restarts a process that dies; it cannot see one that hangs (a scheduler dead while the
HTTP server answers, sglang #18421 / #21486; a rank stuck in NCCL while the others wait, #3099).
`sglang-<name>-liveness.service` (templates/sglang-liveness.service.j2, rendered from the
profile's `[health] liveness*` keys) runs `python -m orchestrator.liveness` beside the server:

- it follows the server unit's invocation over D-Bus. Until /health has answered 200 once in
  the current invocation it counts nothing: start-up belongs to `deploy up`'s deadline and
  TimeoutStartSec=. Then it GETs /health every `interval` s with a `timeout`;
- a probe that fails while the same invocation is still running counts; a 200 resets the count.
  At `failures` in a row it reads that invocation's journal (the last lines, the classifier's
  verdict on them, the kernel's Xid lines) and records an incident of kind "hung"
  (`orchestrator.incidents`), then restarts the server through systemd (RestartUnit: a job,
  so the incident recorder records no second incident);
- a restart budget (`restarts_per_hour`, default 3) bounds it: when that many "hung"
  restarts already happened in the last hour, it records kind "gave-up" and stops the unit
  instead: never an endless loop of 10-minute reloads;
- it does nothing while a `deploy up`/`rollback` of the deployment is in flight.

The watcher unit is `PartOf=` the server and pulled in by its `Wants=`: it starts, stops and
restarts with it. Its state for `deploy status` (failures in a row, the last probe) goes to
`<state dir>/<name>/liveness.json` after every probe.

`render_context` gives the templates the command the watcher runs, pinned to the interpreter
and code that rendered it (`Runner`, also used for the incident recorder).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import site
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.spec import LIVENESS_SUFFIX, Spec

WATCHER_SUFFIX = f"{LIVENESS_SUFFIX}.service"


def watcher_unit(name: str) -> str:
    return f"sglang-{name}{WATCHER_SUFFIX}"


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Runner:
    """How a unit runs deploy's own code: an interpreter, and the directory holding the
    `orchestrator` package when that interpreter would not find it by itself."""

    python: str
    path: str | None = None

    @classmethod
    def current(cls) -> Runner:
        """The interpreter and code running now (what `deploy up` installs)."""
        root = str(Path(__file__).resolve().parent.parent)
        default = {*site.getsitepackages(), site.getusersitepackages()}
        return cls(sys.executable, None if root in default else root)

    def argv(self, module: str, *args: str) -> list[str]:
        """The command line that runs `module` as root. -I (isolated): no PYTHON* variable,
        no user site-packages (~/.local), not the working directory; code outside the
        interpreter's own site-packages comes in by its explicit path (orchestrator/rootexec.py
        puts that tree first on sys.path), never through PYTHONPATH."""
        if self.path:
            return [self.python, "-I", f"{self.path}/orchestrator/rootexec.py", module, *args]
        return [self.python, "-I", "-m", module, *args]


# units/ shows deploy as a system-wide install: /usr/bin/python3 finds `orchestrator` itself.
CANONICAL = Runner("/usr/bin/python3")


def render_context(
    spec: Spec, *, user_mode: bool, state_root: Path, runner: Runner
) -> dict[str, Any]:
    """Template variables for the watcher unit."""
    user = ["--user"] if user_mode else []
    h = spec.health
    ctx: dict[str, Any] = {
        "state_dir": str(state_root),
        "watcher": None,
    }
    if h.liveness:
        ctx["watcher"] = watcher_unit(spec.name)
        ctx["watcher_argv"] = runner.argv(
            "orchestrator.liveness",
            "--state-dir",
            str(state_root),
            "--url",
            h.url,
            "--interval",
            str(h.liveness_interval_s),
            "--failures",
            str(h.liveness_failures),
            "--timeout",
            str(h.liveness_timeout_s),
            "--restarts-per-hour",
            str(h.liveness_restarts_per_hour),
            *user,
            spec.name,
        )
    return ctx


async def retire(sd: Any, spec: Spec, files: Sequence[str], unit_dir: Path) -> list[str]:
    """Stop and remove a watcher unit that the new units no longer have (liveness = false).
    Returns the names removed (the caller reloads systemd)."""
    from orchestrator.systemd import remove_units

    name = watcher_unit(spec.name)
    if name in files or not (unit_dir / name).exists():
        return []
    await sd.stop(name)
    return remove_units([name], unit_dir)


# --------------------------------------------------------------------------- probing


@dataclass(frozen=True)
class Probe:
    ok: bool
    status: int | None
    detail: str
    ms: float
    when: str

    def to_json(self) -> dict[str, Any]:
        return {
            "when": self.when,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "ms": self.ms,
        }


def probe(url: str, timeout_s: float) -> Probe:
    """One GET of the health URL (stdlib client: a probe costs little CPU)."""
    from orchestrator.incidents import iso

    u = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    t0 = time.monotonic()
    when = iso(int(time.time() * 1e6))
    conn = cls(u.hostname or "127.0.0.1", u.port, timeout=timeout_s)
    status: int | None = None
    try:
        conn.request("GET", u.path or "/")
        r = conn.getresponse()
        r.read()
        status = r.status
        detail = f"{r.status} {r.reason}"
    except ConnectionRefusedError:
        detail = "connection refused"
    except TimeoutError:
        detail = f"no answer in {timeout_s:g} s"
    except (OSError, http.client.HTTPException) as e:
        detail = type(e).__name__
    finally:
        conn.close()
    ms = round((time.monotonic() - t0) * 1000, 1)
    return Probe(status == 200, status, detail, ms, when)


# --------------------------------------------------------------------------- the watcher


@dataclass(frozen=True)
class Config:
    name: str
    state_root: Path
    url: str
    interval_s: float
    failures: int
    timeout_s: float
    restarts_per_hour: int
    user: bool = False

    @property
    def unit(self) -> str:
        return f"sglang-{self.name}.service"


def _write_state(cfg: Config, data: dict[str, Any]) -> None:
    """liveness.json for `deploy status`: temp + rename (no fsync: it is rewritten every probe)."""
    d = cfg.state_root / cfg.name
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".liveness.", suffix=".tmp", dir=d)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, d / "liveness.json")


def _deploy_in_flight(cfg: Config) -> bool:
    """An up/rollback of this deployment is running (its in-flight marker names a live pid)."""
    try:
        pid = int(json.loads((cfg.state_root / cfg.name / "inflight.json").read_text())["pid"])
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


async def act(cfg: Config, sd: Any, invocation: str, failures: list[Probe]) -> str:
    """N failures in a row: record the incident, then restart (or stop, budget spent)."""
    from orchestrator import incidents

    now_us = int(time.time() * 1e6)
    props = await sd.properties(cfg.unit)
    start_us = int(props.get("ExecMainStartTimestamp", 0) or 0) or None
    diag, entries, xids = await asyncio.to_thread(
        incidents.diagnose_invocation,
        cfg.unit,
        invocation,
        user=cfg.user,
        start_us=start_us,
        end_us=now_us,
    )
    used = incidents.count_since(cfg.state_root, cfg.name, now_us - 3_600_000_000, kind="hung")
    give_up = used >= cfg.restarts_per_hour
    probes = "; ".join(f"{p.when[11:23]} {p.detail}" for p in failures)
    head = (
        f"/health failed {len(failures)} times in a row ({probes}) while the unit was active; "
        f"the journal's verdict: {diag.summary}"
    )
    if give_up:
        action = (
            f"stopped: {used} liveness restart(s) in the last hour already used the budget "
            f"({cfg.restarts_per_hour} an hour)"
        )
        fix = (
            f"{action}. Fix the cause ({diag.fix}), then `deploy up {cfg.name}` "
            f"(or `systemctl start {cfg.unit}`)"
        )
    else:
        action = (
            f"restarted by the liveness watcher ({used + 1} of {cfg.restarts_per_hour} this hour)"
        )
        fix = diag.fix
    inc = incidents.from_diagnosis(
        kind="gave-up" if give_up else "hung",
        ready=True,  # it answered /health in this invocation: that is when the watcher counts
        name=cfg.name,
        unit=cfg.unit,
        invocation=invocation,
        ended_us=now_us,
        start_us=start_us,
        diag=diag,
        entries=entries,
        xids=xids,
        action=action,
        last_lines=[f"{e.stamp()}  {e.message}" for e in entries[-incidents.LAST_LINES :]],
        restarts=int(props["NRestarts"]) if "NRestarts" in props else None,
    )
    inc.summary, inc.fix = head, fix
    if not diag.known:  # the journal names nothing: the failed probes are the evidence
        inc.evidence = [f"{p.when}  GET {cfg.url}: {p.detail}" for p in failures]
    incidents.save(cfg.state_root, inc)
    if not incidents.journal_send(inc):
        print(f"deploy incident: {inc.headline()}: {inc.summary}", flush=True)
    print(f"liveness: {cfg.unit} {inc.kind}: {action}", flush=True)
    # A job on the server unit: the recorder sees it and records no second incident. The job
    # also stops (and, for a restart, restarts) this watcher: PartOf=.
    if give_up:
        await sd.stop(cfg.unit)
    else:
        await sd.restart(cfg.unit)
    return action


async def watch(cfg: Config, *, max_probes: int | None = None) -> None:
    from orchestrator.systemd import Systemd

    async with await Systemd.connect(user=cfg.user) as sd:
        invocation = ""
        healthy = False
        failed: list[Probe] = []
        probes = 0
        next_t = time.monotonic()
        while max_probes is None or probes < max_probes:
            st = await sd.state(cfg.unit)
            if st.invocation_id != invocation:
                invocation, healthy, failed = st.invocation_id, False, []
            if st.running:
                p = await asyncio.to_thread(probe, cfg.url, cfg.timeout_s)
                probes += 1
                if p.ok:
                    healthy, failed = True, []
                elif healthy:
                    # Count it only if the same start is still running (a crash is the stop
                    # hook's to record, not a hang).
                    now = await sd.state(cfg.unit)
                    if now.invocation_id == invocation and now.running:
                        failed.append(p)
                _write_state(
                    cfg,
                    {
                        "enabled": True,
                        "invocation_id": invocation,
                        "healthy_seen": healthy,
                        "failures_in_a_row": len(failed),
                        "last_probe": p.to_json(),
                        "interval_s": cfg.interval_s,
                        "failures": cfg.failures,
                    },
                )
                if len(failed) >= cfg.failures and not _deploy_in_flight(cfg):
                    await act(cfg, sd, invocation, failed)
                    invocation, healthy, failed = "", False, []
            next_t += cfg.interval_s
            delay = next_t - time.monotonic()
            if delay < 0:  # a slow probe: keep the cadence from now on
                next_t, delay = time.monotonic(), 0.0
            await asyncio.sleep(delay)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m orchestrator.liveness",
        description="Probe a deployment's /health; restart it through systemd when it hangs.",
    )
    ap.add_argument("--state-dir", required=True, type=Path)
    ap.add_argument("--url", required=True)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--failures", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--restarts-per-hour", type=int, default=3)
    ap.add_argument("--user", action="store_true")
    ap.add_argument("name")
    a = ap.parse_args(argv)
    cfg = Config(
        name=a.name,
        state_root=a.state_dir,
        url=a.url,
        interval_s=a.interval,
        failures=a.failures,
        timeout_s=a.timeout,
        restarts_per_hour=a.restarts_per_hour,
        user=a.user,
    )
    print(
        f"liveness: watching {cfg.unit} at {cfg.url} every {cfg.interval_s:g} s "
        f"({cfg.failures} failures in a row -> restart, at most {cfg.restarts_per_hour} an hour)",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(watch(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
