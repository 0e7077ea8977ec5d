"""Liveness: a watcher that notices a server that is up but no longer serving.

systemd restarts a process that dies; it cannot see one that hangs (a scheduler dead while the
HTTP server answers, sglang #18421 / #21486; a rank stuck in NCCL while the others wait, #3099).
`sglang-<name>-liveness.service` (templates/sglang-liveness.service.j2, rendered from the
profile's `[health] liveness*` keys) runs `python -m orchestrator.watch.liveness` beside the server:

- it follows the server unit's invocation over D-Bus. Until /health has answered 200 once in
  the current invocation it counts nothing: start-up belongs to `deploy up`'s deadline and
  TimeoutStartSec=. Then it GETs /health every `interval` s with a `timeout`;
- a probe that fails while the same invocation is still running counts; a 200 resets the count.
  At `failures` in a row it reads that invocation's journal (the last lines, the classifier's
  verdict on them, the kernel's Xid lines) and records an incident of kind "hung"
  (`orchestrator.watch.incidents`), then restarts the server through systemd (RestartUnit: a job,
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
import ipaddress
import json
import os
import site
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator import serverapi
from orchestrator.errors import DeployError
from orchestrator.profiles.spec import LIVENESS_SUFFIX, Spec
from orchestrator.systemd.files import write_file
from orchestrator.systemd.install import Systemd, remove_units
from orchestrator.timefmt import iso
from orchestrator.watch import incidents

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
        root = str(Path(__file__).resolve().parent.parent.parent)
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
        ctx["ip_allow"] = ip_allow(h.host)
        ctx["watcher_argv"] = runner.argv(
            "orchestrator.watch.liveness",
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


def ip_allow(host: str) -> list[str]:
    """The watcher unit's IPAddressAllow= for a health URL on `host`: loopback, and the host
    itself when it is an address elsewhere. [] for a host name other than localhost: systemd
    allow-lists addresses, so the unit then has no IP allow-list at all."""

    if host == "localhost":
        return ["localhost"]
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return []
    if addr.is_loopback:
        return ["localhost"]
    return ["localhost", str(addr)]


async def retire(sd: Any, spec: Spec, files: Sequence[str], unit_dir: Path) -> list[str]:
    """Stop and remove a watcher unit that the new units no longer have (liveness = false).
    Returns the names removed (the caller reloads systemd)."""

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
        return asdict(self)


PROBE_BODY_BYTES = 64 * 1024  # SGLang's /health answers with an empty body


def probe(url: str, timeout_s: float) -> Probe:
    """One GET of the health URL (serverapi's stdlib client: a probe costs little CPU and the
    watcher never imports httpx). The body is read up to a cap: its status is the verdict."""

    t0 = time.monotonic()
    when = iso(int(time.time() * 1e6))
    r = serverapi.health(url, timeout_s, limit=PROBE_BODY_BYTES)
    ms = round((time.monotonic() - t0) * 1000, 1)
    return Probe(r.status == 200, r.status, r.words, ms, when)


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
    """liveness.json for `deploy status`: temp + rename (no fsync: it is rewritten every probe).
    A failed write (a full disk) leaves the last state and no temp file; the watcher goes on."""

    d = cfg.state_root / cfg.name
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_file(d / "liveness.json", json.dumps(data).encode(), 0o600, fsync=False)
    except OSError as e:
        said = f"liveness: cannot write {d / 'liveness.json'}: {e.strerror}"
        if _LAST_WRITE_ERROR[:1] != [said]:  # once per cause, not every probe
            print(said, flush=True)
        _LAST_WRITE_ERROR[:] = [said]
    else:
        _LAST_WRITE_ERROR.clear()


_LAST_WRITE_ERROR: list[str] = []


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

    me = os.environ.get("INVOCATION_ID", "")  # systemd's id of this run of the watcher unit
    async with await Systemd.connect(user=cfg.user) as sd:
        invocation = ""
        healthy = False
        failed: list[Probe] = []
        last: Probe | None = None
        probes = 0
        next_t = time.monotonic()
        while max_probes is None or probes < max_probes:
            st = await sd.state(cfg.unit)
            if st.invocation_id != invocation:
                invocation, healthy, failed = st.invocation_id, False, []
            if st.running:
                p = await asyncio.to_thread(probe, cfg.url, cfg.timeout_s)
                probes += 1
                last = p
                if p.ok:
                    healthy, failed = True, []
                elif healthy:
                    # Count it only if the same start is still running (a crash is the stop
                    # hook's to record, not a hang).
                    now = await sd.state(cfg.unit)
                    if now.invocation_id == invocation and now.running:
                        failed.append(p)
            # Every round, probe or not: `deploy status` and `deploy up` read this heartbeat
            # to tell a watcher that works from one that is gone or stuck.
            now_us = int(time.time() * 1e6)
            _write_state(
                cfg,
                {
                    "enabled": True,
                    "watcher_invocation": me,
                    "pid": os.getpid(),
                    "at": iso(now_us),
                    "at_us": now_us,
                    "server_running": st.running,
                    "invocation_id": invocation,
                    "healthy_seen": healthy,
                    "failures_in_a_row": len(failed),
                    "last_probe": last.to_json() if last else None,
                    "probe_invocation": invocation if last else "",
                    "interval_s": cfg.interval_s,
                    "timeout_s": cfg.timeout_s,
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


# --------------------------------------------------------------------------- watching the watcher


# How long a running watcher may go without a heartbeat before status stops calling it
# watching: two rounds and a probe's timeout, and some slack for a loaded box.
def stale_after_s(interval_s: float, timeout_s: float) -> float:
    return 2 * interval_s + timeout_s + 10


STARTING_GRACE_S = 30.0  # a watcher just started has written nothing yet


@dataclass(frozen=True)
class WatcherState:
    """The watcher unit as systemd reports it, judged with its heartbeat (liveness.json)."""

    enabled: bool  # its unit file is installed (liveness = true)
    # watching | starting | running (heartbeat unreadable) | not-probing | failed | stopped |
    # masked | off | unknown (systemd did not answer)
    state: str
    detail: str  # in words, for a person
    unit: str
    active_state: str = ""
    sub_state: str = ""
    failures_in_a_row: int = 0
    last_probe: dict[str, Any] | None = None

    @property
    def watching(self) -> bool:
        return self.state == "watching"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def heartbeat(state_root: Path | None, name: str) -> dict[str, Any] | None:
    """What the watcher last wrote: {} when nothing (or nothing valid), None when this user
    may not read it (the state dir is root's: `deploy status` as another user)."""
    if state_root is None:
        return None
    try:
        data = json.loads((state_root / name / "liveness.json").read_bytes())
    except PermissionError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_error_line(unit: str, invocation: str, *, user: bool) -> str | None:
    """The last line the watcher's process wrote in that run (a traceback's last line: the
    error), else PID 1's last word on it; None when the journal cannot be read."""
    # Only on a hang: `deploy status` imports this module and need not load the journal reader.
    from orchestrator.diagnosis import journal

    if not invocation:
        return None
    try:
        entries = list(journal.read(unit, user=user, invocation=invocation, lines=200))
    except DeployError:
        return None
    own = [e for e in entries if e.pid not in (None, 1) and e.message.strip()]
    pick = own[-1] if own else next((e for e in reversed(entries) if e.message.strip()), None)
    return pick.message.strip()[:300] if pick else None


def judge(
    name: str,
    *,
    enabled: bool,
    load_state: str,
    active_state: str,
    sub_state: str,
    result: str,
    invocation: str,
    active_since_us: int,
    beat: dict[str, Any] | None,
    now_us: int,
    error_line: str | None = None,
    server_active: bool = True,
) -> WatcherState:
    """What status says about the watcher, from systemd's view of its unit and its heartbeat.
    "watching" only for an active unit whose heartbeat is from this run and fresh."""
    unit = watcher_unit(name)
    unreadable = beat is None
    beat = beat or {}
    mine = bool(invocation) and beat.get("watcher_invocation") == invocation
    probe_ = beat.get("last_probe") if isinstance(beat.get("last_probe"), dict) else None
    failures = int(beat.get("failures_in_a_row") or 0) if mine else 0

    def make(state: str, detail: str) -> WatcherState:
        return WatcherState(enabled, state, detail, unit, active_state, sub_state, failures, probe_)

    if not enabled:
        return make("off", "off (liveness = false)")
    if load_state == "masked":
        return make(
            "masked", f"masked: {unit} cannot start (`systemctl unmask {unit}`, then `deploy up`)"
        )
    if active_state == "failed" or sub_state == "auto-restart":
        why = error_line or f"result {result}"
        again = ", systemd retries it" if sub_state == "auto-restart" else ""
        return make("failed", f"failed{again}: {why}")
    if active_state in ("inactive", "deactivating") or load_state == "not-found":
        if not server_active:  # PartOf=: it stops with the server
            return make("stopped", "stopped, as the server is")
        return make("stopped", f"stopped: nothing watches the server (`systemctl start {unit}`)")
    if active_state != "active":
        return make("starting", f"{active_state}/{sub_state}")
    if unreadable:
        return make(
            "running",
            "running; whether it probes is in its heartbeat, which this user cannot read "
            "(run `deploy status` as root)",
        )
    try:
        at_us = int(beat.get("at_us") or 0)
        stale = stale_after_s(
            float(beat.get("interval_s") or 30), float(beat.get("timeout_s") or 20)
        )
    except (TypeError, ValueError):
        at_us, stale = 0, stale_after_s(30, 20)
    if mine and now_us - at_us <= stale * 1e6:
        if not beat.get("server_running"):
            return make("watching", "watching (the server is not running)")
        return make("watching", "watching")
    if not mine and now_us - active_since_us <= STARTING_GRACE_S * 1e6:
        return make("starting", "started, no probe yet")
    ago = f"{(now_us - at_us) / 1e6:.0f} s ago" if mine and at_us else "never in this run"
    return make(
        "not-probing",
        f"running but not probing: its last report was {ago} "
        f"(`journalctl -u {unit}`; `systemctl restart {unit}`)",
    )


async def watcher_state(
    sd: Any,
    name: str,
    *,
    state_root: Path | None,
    enabled: bool,
    user: bool,
    server_active: bool = True,
) -> WatcherState:
    """`deploy status`'s view of the watcher of deployment `name`, asked of systemd now."""
    unit = watcher_unit(name)

    try:
        st = await sd.state(unit)
    except DeployError as e:  # a status line, never a failed status
        return WatcherState(enabled, "unknown", f"systemd did not say: {e}", unit)
    failed = st.active_state == "failed" or st.sub_state == "auto-restart"
    line = (
        await asyncio.to_thread(last_error_line, unit, st.invocation_id, user=user)
        if enabled and failed
        else None
    )
    return judge(
        name,
        enabled=enabled,
        load_state=st.load_state,
        active_state=st.active_state,
        sub_state=st.sub_state,
        result=st.result,
        invocation=st.invocation_id,
        active_since_us=st.active_enter_timestamp_us,
        beat=heartbeat(state_root, name),
        now_us=int(time.time() * 1e6),
        error_line=line,
        server_active=server_active,
    )


def status_line(live: dict[str, Any]) -> str:
    """The text form of WatcherState.to_json(), for `deploy status`."""
    if not live.get("enabled"):
        return "  liveness: off"
    probe_ = live.get("last_probe") or {}
    seen = f"last probe {probe_.get('when')}: {probe_.get('detail')}" if probe_ else "no probe yet"
    if live.get("state") == "watching":
        return (
            f"  liveness: watching, {live.get('failures_in_a_row', 0)} failure(s) in a row, {seen}"
        )
    detail = live.get("detail") or "systemd was not asked about its unit"
    return f"  liveness: NOT WATCHING: {detail}" + (f" (earlier {seen})" if probe_ else "")


async def confirm(
    sd: Any,
    name: str,
    *,
    state_root: Path,
    server_invocation: str,
    deadline_s: float,
    user: bool,
) -> WatcherState:
    """After `up`: wait until the watcher of this start has made a probe (its heartbeat names
    its own run and this server start), or until systemd says it failed, stopped or is masked
    (its unit's PropertiesChanged, at once), or the deadline. The WatcherState says which."""
    unit = watcher_unit(name)
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s

    def probed(inv: str) -> bool:
        beat = heartbeat(state_root, name) or {}
        return (
            bool(inv)
            and beat.get("watcher_invocation") == inv
            and beat.get("probe_invocation") == server_invocation
            and beat.get("last_probe") is not None
        )

    async with sd.watch(unit) as states:
        nxt: asyncio.Future[Any] = asyncio.ensure_future(states.__anext__())
        st = None
        try:
            while True:
                # A change of the unit wakes this at once; the heartbeat file is looked at
                # between (a write is not a D-Bus event), every HEARTBEAT_LOOK_S.
                done, _ = await asyncio.wait(
                    {nxt}, timeout=min(HEARTBEAT_LOOK_S, max(0.0, end - loop.time()))
                )
                if nxt in done:
                    st = nxt.result()
                    nxt = asyncio.ensure_future(states.__anext__())
                if st is not None:
                    bad = (
                        st.load_state == "masked"
                        or st.active_state == "failed"
                        or st.sub_state == "auto-restart"
                        or st.active_state == "inactive"
                    )
                    if probed(st.invocation_id) or bad:
                        break
                if loop.time() >= end:
                    break
        finally:
            nxt.cancel()
            with contextlib.suppress(BaseException):
                await nxt
    return await watcher_state(sd, name, state_root=state_root, enabled=True, user=user)


HEARTBEAT_LOOK_S = 0.1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m orchestrator.watch.liveness",
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
