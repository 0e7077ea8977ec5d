"""Incidents: every stop of the server unit that nobody asked for, recorded with its cause.

How a stop is caught. The server unit runs `python -m orchestrator.incidents stop-post` as
ExecStopPost=-+ (see templates/sglang.service.j2): systemd runs it after every stop of the
main process, crash or not, before any automatic restart, with $SERVICE_RESULT, $EXIT_CODE,
$EXIT_STATUS and $INVOCATION_ID set. "+" runs it outside the unit's sandbox (as root, so it can
write the state dir under ProtectSystem=strict); "-" keeps its own failure from failing the unit.

How a requested stop is told from a crash. A stop that someone asked for (`deploy down`,
`systemctl stop`, a restart by `deploy up`/`rollback` or by the liveness watcher, a shutdown)
runs as a *job* on the unit: while ExecStopPost runs, the unit's Job property names it
("stop", "restart", ...). A crash, a kill from outside (`kill -9`, the OOM killer), SGLang
taking itself down, systemd's own watchdog: no job. That is asked over D-Bus; if the bus cannot
be asked, a stop whose $SERVICE_RESULT is "success" is taken as requested, any other as not.

What is recorded (`Incident`): the invocation, when it ended, how (systemd's result, exit code
or signal), how long it had been up, whether it had become ready, and the diagnosis of that
invocation's journal merged with the kernel's Xid lines of its time window (category, summary,
evidence, fix; a hardware Xid outranks its software echo). One JSON file per incident under
`<state dir>/<name>/incidents/`, written atomically (temp, fsync, rename), at most
`MAX_KEPT` files of bounded size (oldest removed). Each is also sent to the journal as a
structured entry with MESSAGE_ID=`MESSAGE_ID`, so `journalctl MESSAGE_ID=<id>` lists every
incident on the box. The liveness watcher (`orchestrator.liveness`) records kind "hung"
(and "gave-up") through the same functions.

`status_fields` and `history_line` feed `deploy status` and `deploy history`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# journalctl MESSAGE_ID=1f0c7a2e94d64b7f8e3a5c6d0b9e1f42 lists every incident on the box.
MESSAGE_ID = "1f0c7a2e94d64b7f8e3a5c6d0b9e1f42"
MAX_KEPT = 200  # incident files per deployment; each is a few KB at most
LINE_CHARS = 400  # evidence and last lines are cut to this
LAST_LINES = 20  # journal lines kept with a "hung" incident
JOURNAL_SOCKET = "/run/systemd/journal/socket"
REQUESTED_JOBS = frozenset({"stop", "restart", "try-restart", "reload-or-restart"})
TAIL_LINES = 20_000  # journal lines read of an invocation (its end: where a crash speaks)
HEAD_LINES = 5_000  # lines searched from its start for SGLang's ready line
# Signals a process gets from outside (a kill) vs. ones it raises itself (a crash).
_OUTSIDE_SIGNALS = frozenset({"KILL", "TERM", "INT", "HUP", "QUIT", "USR1", "USR2", "PIPE"})


@dataclass
class Incident:
    kind: str  # crash | killed | oom-killed | exited | watchdog | timeout | hung | gave-up
    deployment: str
    unit: str
    invocation_id: str
    when: str  # ISO-8601 UTC: when the process ended (hung/gave-up: when the watcher decided)
    ended_us: int  # the same, µs since the epoch
    recorded_us: int  # when this record was written
    uptime_before_s: float | None
    phase: str  # "serving" (it had become ready) | "start-up"
    result: str | None = None  # systemd's $SERVICE_RESULT
    exit_code: str | None = None  # $EXIT_CODE: exited | killed | dumped
    exit_status: str | None = None  # $EXIT_STATUS: "1", or the signal name "KILL"
    category: str = "unknown"
    summary: str = ""
    evidence: list[str] = field(default_factory=list)
    fix: str = ""
    also: list[str] = field(default_factory=list)
    xids: list[dict[str, Any]] = field(default_factory=list)
    action: str = ""  # what happened next: restarted by systemd / by liveness, stopped, ...
    last_lines: list[str] = field(default_factory=list)
    restarts: int | None = None  # systemd's NRestarts at the time

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Incident:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def headline(self) -> str:
        """One line: what happened to which unit, for how long it had been up."""
        up = f" after {_span(self.uptime_before_s)} up" if self.uptime_before_s is not None else ""
        how = _how(self.exit_code, self.exit_status, self.result)
        return f"{self.unit} {self.kind}{up}{f' ({how})' if how else ''}"

    def cause_line(self) -> str:
        """The evidence line that names the cause (the classifier puts it last)."""
        return self.evidence[-1] if self.evidence else self.summary


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 120:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 172800:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def _how(exit_code: str | None, exit_status: str | None, result: str | None) -> str:
    if exit_code == "exited":
        return f"exit status {exit_status}"
    if exit_code in ("killed", "dumped"):
        return f"signal SIG{exit_status}" + (", core dumped" if exit_code == "dumped" else "")
    return f"result {result}" if result else ""


def iso(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=UTC).isoformat(timespec="milliseconds")


def kind_of(
    result: str | None, exit_code: str | None, exit_status: str | None, diagnosis: Any
) -> str:
    """crash | killed | oom-killed | exited | watchdog | timeout, from systemd's facts and the
    diagnosis. SGLang takes itself down with SIGKILL after a logged error: that is a crash."""
    from orchestrator.rules.classify import CAUSE

    cause = diagnosis is not None and diagnosis.known and diagnosis.role == CAUSE
    if result == "oom-kill" or (cause and diagnosis.category == "host-oom-killed"):
        return "oom-killed"
    if result == "watchdog":
        return "watchdog"
    if result == "timeout":
        return "timeout"
    if exit_code == "dumped" or result == "core-dump" or cause:
        return "crash"
    if exit_code == "killed":
        return "killed" if (exit_status or "") in _OUTSIDE_SIGNALS else "crash"
    if exit_code == "exited":
        return "exited" if exit_status == "0" else "crash"
    return "crash"


# --------------------------------------------------------------------------- the store


def incidents_dir(state_root: Path, name: str) -> Path:
    return state_root / name / "incidents"


def _stamp(us: int) -> str:
    dt = datetime.fromtimestamp(us / 1e6, tz=UTC)
    return dt.strftime("%Y%m%dT%H%M%S.") + f"{dt.microsecond:06d}Z"


def _stamp_us(filename: str) -> int | None:
    try:
        dt = datetime.strptime(filename[:23], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def _clip(text: str, n: int = LINE_CHARS) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def save(state_root: Path, inc: Incident) -> Path:
    """Write one incident atomically; keep the newest MAX_KEPT. The path written."""
    from orchestrator.files import check_state_tree, write_atomically

    d = incidents_dir(state_root, inc.deployment)
    check_state_tree(d, state_root)  # no symlink or foreign-owned directory on the way
    with contextlib.suppress(OSError):
        (state_root / inc.deployment).mkdir(parents=True, exist_ok=True, mode=0o700)
    inc.evidence = [_clip(x) for x in inc.evidence[:8]]
    inc.last_lines = [_clip(x) for x in inc.last_lines[-LAST_LINES:]]
    inc.summary, inc.fix = _clip(inc.summary, 1000), _clip(inc.fix, 1000)
    inc.recorded_us = int(time.time() * 1e6)
    name = f"{_stamp(inc.ended_us)}-{inc.kind}-{inc.invocation_id[:12] or 'none'}.json"
    write_atomically(
        {name: json.dumps(inc.to_json(), indent=1) + "\n"}, d, mode=0o600, field="--state-dir"
    )
    _prune(d)
    return d / name


def _files(d: Path) -> list[Path]:
    try:
        return sorted(p for p in d.iterdir() if p.suffix == ".json" and p.name[:1].isdigit())
    except OSError:
        return []


def _prune(d: Path) -> None:
    for p in _files(d)[:-MAX_KEPT]:
        with contextlib.suppress(OSError):
            p.unlink()


def load(state_root: Path, name: str, limit: int | None = None) -> list[Incident]:
    """The deployment's incidents, oldest first (the newest `limit`)."""
    out = []
    files = _files(incidents_dir(state_root, name))
    for p in files[-limit:] if limit else files:
        try:
            out.append(Incident.from_json(json.loads(p.read_text())))
        except (OSError, ValueError, TypeError, RecursionError):
            continue
    return out


def count_since(state_root: Path, name: str, since_us: int, kind: str | None = None) -> int:
    """How many incidents (of one kind) ended at or after since_us: from the file names."""
    n = 0
    for p in _files(incidents_dir(state_root, name)):
        t = _stamp_us(p.name)
        if t is not None and t >= since_us and (kind is None or f"-{kind}-" in p.name):
            n += 1
    return n


# --------------------------------------------------------------------------- the journal


def _field(key: str, value: str) -> bytes:
    v = value.encode("utf-8", errors="replace")
    if b"\n" in v:  # journald's native protocol: binary-safe length-prefixed form
        return key.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
    return key.encode() + b"=" + v + b"\n"


def journal_payload(inc: Incident) -> bytes:
    fields_ = {
        "MESSAGE": f"deploy incident: {inc.headline()}: {inc.category}",
        "MESSAGE_ID": MESSAGE_ID,
        "PRIORITY": "3" if inc.kind not in ("exited",) else "4",
        "SYSLOG_IDENTIFIER": "deploy",
        "DEPLOY_DEPLOYMENT": inc.deployment,
        "DEPLOY_UNIT": inc.unit,
        "DEPLOY_INVOCATION": inc.invocation_id,
        "DEPLOY_KIND": inc.kind,
        "DEPLOY_CATEGORY": inc.category,
        "DEPLOY_WHEN": inc.when,
        "DEPLOY_UPTIME_S": "" if inc.uptime_before_s is None else f"{inc.uptime_before_s:.1f}",
        "DEPLOY_SUMMARY": inc.summary,
        "DEPLOY_EVIDENCE": "\n".join(inc.evidence),
        "DEPLOY_FIX": inc.fix,
        "DEPLOY_ACTION": inc.action,
    }
    return b"".join(_field(k, v) for k, v in fields_.items())


def journal_send(inc: Incident, path: str = JOURNAL_SOCKET) -> bool:
    """Send the incident to journald (native protocol, one datagram). False when it cannot."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(journal_payload(inc), path)
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------- diagnosing


def _sync_journal() -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["journalctl", "--sync"], capture_output=True, timeout=5, check=False)


KERNEL_BEFORE_S = 300  # the Xid window: this long before the end at most...
KERNEL_BEFORE_START_S = 30  # ...and not before the invocation started, less this


@dataclass
class _Journal:
    """The invocation's journal and the kernel's Xid lines, read together."""

    entries: Sequence[Any]
    kernel: list[Any]


def read_journal(unit: str, invocation: str, *, user: bool, since_us: int) -> _Journal:
    """`journalctl --sync`, then the invocation's lines and the kernel's Xid lines from
    since_us on, the two journalctl runs side by side."""
    from concurrent.futures import ThreadPoolExecutor

    from orchestrator import journal, xid

    _sync_journal()
    now_us = int(time.time() * 1e6)
    with ThreadPoolExecutor(2) as pool:
        kernel = pool.submit(xid.kernel_entries, since_us, now_us)
        entries = (
            journal.read(unit, user=user, invocation=invocation, lines=TAIL_LINES)
            if invocation
            else []
        )
        return _Journal(entries, kernel.result())


def diagnose_journal(
    got: _Journal,
    *,
    start_us: int | None,
    end_us: int,
    systemd_result: str | None = None,
    exit_status: str | None = None,
) -> tuple[Any, Sequence[Any], list[Any]]:
    """(diagnosis, the invocation's entries, Xid events): the unit's lines merged with the
    kernel's Xid lines of the failure's window (KERNEL_BEFORE_S before the end at most, and
    not before the start less KERNEL_BEFORE_START_S)."""
    from orchestrator import diagnose, xid

    since = end_us - KERNEL_BEFORE_S * 1_000_000
    if start_us:
        since = max(since, start_us - KERNEL_BEFORE_START_S * 1_000_000)
    kernel = [e for e in got.kernel if (e.timestamp_us or 0) >= since]
    xids = xid.events(kernel)
    diag = diagnose.classify(
        xid.merge(got.entries, kernel),
        systemd_result=systemd_result if systemd_result == "oom-kill" else None,
        exit_status=exit_status,
    )
    return xid.name_gpus(diag, xids), got.entries, xids


def diagnose_invocation(
    unit: str,
    invocation: str,
    *,
    user: bool,
    start_us: int | None,
    end_us: int,
    systemd_result: str | None = None,
    exit_status: str | None = None,
) -> tuple[Any, Sequence[Any], list[Any]]:
    """(diagnosis, the invocation's journal entries, Xid events) for one invocation."""
    got = read_journal(unit, invocation, user=user, since_us=end_us - KERNEL_BEFORE_S * 1_000_000)
    return diagnose_journal(
        got,
        start_us=start_us,
        end_us=end_us,
        systemd_result=systemd_result,
        exit_status=exit_status,
    )


def _ready_lines() -> tuple[str, ...]:
    """SGLang's "ready" line, as each known release prints it."""
    from orchestrator import sglang

    return tuple({r.message("ms-ready").format() for r in sglang.RELEASES.values()})


def became_ready(entries: Sequence[Any]) -> bool:
    ready = _ready_lines()
    return any(any(r in e.message for r in ready) for e in entries)


def ready_at_start(unit: str, invocation: str, *, user: bool) -> bool:
    """Whether the first HEAD_LINES lines of the invocation hold the ready line (a long-lived
    server's start is far before the tail that was read). Stops journalctl once it knows."""
    if not invocation:
        return False
    from orchestrator import journal

    argv = journal.build_argv(unit, user=user, invocation=invocation)
    argv[argv.index("json")] = "cat"  # messages only
    ready = _ready_lines()
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
        )
    except OSError:
        return False
    try:
        assert proc.stdout is not None
        for n, line in enumerate(proc.stdout):
            if n >= HEAD_LINES:
                return False
            if any(r in line for r in ready):
                return True
        return False
    finally:
        proc.kill()
        proc.wait()


def from_diagnosis(
    *,
    kind: str,
    name: str,
    unit: str,
    invocation: str,
    ended_us: int,
    start_us: int | None,
    diag: Any,
    entries: Sequence[Any],
    xids: Sequence[Any],
    ready: bool = False,
    **extra: Any,
) -> Incident:
    return Incident(
        kind=kind,
        deployment=name,
        unit=unit,
        invocation_id=invocation,
        when=iso(ended_us),
        ended_us=ended_us,
        recorded_us=0,
        uptime_before_s=round((ended_us - start_us) / 1e6, 1) if start_us else None,
        phase="serving" if ready or became_ready(entries) else "start-up",
        category=diag.category,
        summary=diag.summary,
        evidence=[f"{e.stamp()}  {e.message}" for e in diag.evidence],
        fix=diag.fix,
        also=list(diag.also),
        xids=[x.to_json() for x in xids],
        **extra,
    )


def _exit_status(code: str | None, status: str | None) -> str | None:
    """systemd's $EXIT_CODE/$EXIT_STATUS as the classifier takes it: "1", or "9/KILL"."""
    if not code or not status:
        return None
    if code == "exited":
        return status
    try:
        return f"{signal.Signals['SIG' + status].value}/{status}"
    except KeyError:
        return f"?/{status}"


def _next_action(props: Mapping[str, Any], result: str | None) -> str:
    """What systemd does next, from the unit's Restart= and the result."""
    policy = str(props.get("Restart", ""))
    restarts = {
        "always": True,
        "on-failure": result != "success",
        "on-abnormal": result in ("signal", "core-dump", "watchdog", "timeout"),
        "on-abort": result in ("signal", "core-dump"),
        "on-watchdog": result == "watchdog",
        "on-success": result == "success",
    }.get(policy, False)
    if not restarts:
        return f"stays stopped (Restart={policy or 'no'})"
    sec = int(props.get("RestartUSec", 0) or 0) / 1e6
    return f"systemd restarts it in {sec:g} s (Restart={policy}) unless its start limit is hit"


async def _unit_facts(unit: str, user: bool) -> tuple[str | None, dict[str, Any]] | None:
    """(pending job type, Service properties), or None when the bus cannot be asked."""
    from orchestrator.errors import DeployError
    from orchestrator.systemd import Systemd

    try:
        async with await Systemd.connect(user=user) as sd:
            job = await sd.pending_job(unit)
            props = await sd.properties(unit)
    except (DeployError, OSError):
        return None
    return job, props


class _Prefetch:
    """Reads the journal on a daemon thread while the hook asks systemd whether the stop was
    requested: a crash's record is ready sooner; a requested stop exits without waiting."""

    def __init__(self, unit: str, invocation: str, *, user: bool) -> None:
        import threading

        self._done = threading.Event()
        self._got: _Journal | None = None
        self._error: BaseException | None = None
        since = int(time.time() * 1e6) - KERNEL_BEFORE_S * 1_000_000

        def run() -> None:
            try:
                from orchestrator import diagnose  # noqa: F401  (import while D-Bus is asked)

                self._got = read_journal(unit, invocation, user=user, since_us=since)
            except BaseException as e:
                self._error = e
            finally:
                self._done.set()

        threading.Thread(target=run, daemon=True, name="journal").start()

    async def result(self) -> _Journal:
        await asyncio.to_thread(self._done.wait)
        if self._error is not None:
            raise self._error
        assert self._got is not None
        return self._got


async def stop_post(
    state_root: Path, name: str, *, user: bool = False, env: Mapping[str, str] | None = None
) -> Incident | None:
    """ExecStopPost: the incident of this stop, saved and sent; None for a requested stop."""
    env = os.environ if env is None else env
    result = env.get("SERVICE_RESULT") or None
    code, status = env.get("EXIT_CODE") or None, env.get("EXIT_STATUS") or None
    invocation = (env.get("INVOCATION_ID") or "").replace("-", "")
    unit = f"sglang-{name}.service"
    prefetch = _Prefetch(unit, invocation, user=user)
    facts = await _unit_facts(unit, user)
    job: str | None
    props: dict[str, Any]
    if facts is None:
        if result == "success":
            return None  # cannot ask systemd; a clean stop is most likely a requested one
        job, props = None, {}
    else:
        job, props = facts
    if job in REQUESTED_JOBS:
        return None
    now_us = int(time.time() * 1e6)
    start_us = int(props.get("ExecMainStartTimestamp", 0) or 0) or None
    end_us = int(props.get("ExecMainExitTimestamp", 0) or 0) or now_us
    exit_status = _exit_status(code, status)
    diag, entries, xids = diagnose_journal(
        await prefetch.result(),
        start_us=start_us,
        end_us=end_us,
        systemd_result=result,
        exit_status=exit_status,
    )
    live = liveness_state(state_root, name)
    ready = (
        became_ready(entries)
        or (live.get("invocation_id") == invocation and bool(live.get("healthy_seen")))
        or (len(entries) >= TAIL_LINES and ready_at_start(unit, invocation, user=user))
    )
    inc = from_diagnosis(
        kind=kind_of(result, code, status, diag),
        ready=ready,
        name=name,
        unit=unit,
        invocation=invocation,
        ended_us=end_us,
        start_us=start_us,
        diag=diag,
        entries=entries,
        xids=xids,
        result=result,
        exit_code=code,
        exit_status=status,
        action=_next_action(props, result) + (f"; pending job {job}" if job else ""),
        restarts=int(props["NRestarts"]) if "NRestarts" in props else None,
    )
    save(state_root, inc)
    if not journal_send(inc):
        print(f"deploy incident: {inc.headline()}: {inc.category}: {inc.summary}", flush=True)
    return inc


async def settle(sd: Any, unit: str, timeout_s: float = 60.0) -> None:
    """Wait while `unit` is stopping on its own (its stop hook running) before deploy queues a
    stop or restart job on it: a job queued while the hook asks would make a crash look
    requested, and the crash would go unrecorded."""

    async def until_settled() -> None:
        async with sd.watch(unit) as states:
            async for st in states:
                if st.active_state != "deactivating":
                    return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(until_settled(), timeout_s)


# --------------------------------------------------------------------------- status, history


def liveness_state(state_root: Path, name: str) -> dict[str, Any]:
    """What the liveness watcher last wrote ({} when it never ran)."""
    try:
        data = json.loads((state_root / name / "liveness.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
            + (f" after {_span(up)} up" if up is not None else "")
            + f"; {n} in the last 24 h"
        )
        out.append(f"            evidence: {_clip(str(last.get('evidence', '')), 300)}")
        out.append(f"            fix: {last.get('fix', '')}")
    elif "incidents_24h" in row:
        out.append("  incident: none recorded")
    live = row.get("liveness")
    if isinstance(live, Mapping):
        if not live.get("enabled"):
            out.append("  liveness: off")
        else:
            probe = live.get("last_probe") or {}
            seen = (
                f"last probe {probe.get('when')}: {probe.get('detail')}"
                if probe
                else "no probe yet"
            )
            out.append(
                f"  liveness: on, {live.get('failures_in_a_row', 0)} failure(s) in a row, {seen}"
            )
    return out


def history_line(inc: Incident) -> str:
    """One `deploy history` line, aligned with the release lines (`   !` for no number)."""
    return f"   !  {inc.when[:19]}+00:00  incident {inc.kind:<10} {inc.category}  ({inc.headline()}; {inc.action})"


def history_sort_key(when: str) -> float:
    try:
        return datetime.fromisoformat(when).timestamp()
    except ValueError:
        return 0.0


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrator.incidents")
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser(
        "stop-post", help="ExecStopPost= of the server unit: record an unrequested stop"
    )
    sp.add_argument("--state-dir", required=True, type=Path)
    sp.add_argument("--user", action="store_true", help="the unit runs under a user manager")
    sp.add_argument("name", help="the deployment")
    args = ap.parse_args(argv)
    try:
        asyncio.run(stop_post(args.state_dir, args.name, user=args.user))
    except Exception as e:  # never fail the unit's stop; say why in its journal
        print(f"deploy incident hook failed: {type(e).__name__}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Every file is written and fsynced by now; a requested stop may leave the journal reader
    # thread behind: leave without waiting for it or for the interpreter's teardown.
    os._exit(code)
