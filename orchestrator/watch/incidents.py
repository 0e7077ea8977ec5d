"""Incidents: every stop of the server unit that nobody asked for, recorded with its cause.

How a stop is caught. `sglang-<name>-incidents.service` (templates/sglang-incidents.service.j2)
runs `python -I -m orchestrator.watch.incidents follow` as root in a unit of its own: none of the
server's EnvironmentFile=, Environment= or HOME reaches it, and -I ignores PYTHON* variables
and user site-packages, so nothing the service user controls runs as root (the old
`ExecStopPost=-+` hook inherited all of it). It is Before= and PartOf= the server and
Type=notify: the server starts only once it follows the unit's PropertiesChanged signals
over D-Bus (`follow`, `Follower`). A new ExecMainExitTimestamp is an end of the main process;
the unit's exit code and status come with it, its Result once it leaves "deactivating".

How a requested stop is told from a crash. A stop that someone asked for (`deploy down`,
`systemctl stop`, a restart by `deploy up`/`rollback` or by the liveness watcher, a shutdown)
runs as a *job* on the unit: systemd announces the unit's Job property (and the recorder asks
its JobType) before the process ends. A crash, a kill from outside (`kill -9`, the OOM
killer), SGLang taking itself down, systemd's own watchdog: no job when the process ends.
systemd sends a dispatch's Service-interface change before the Unit-interface one, and every
event in its own loop iteration, so the job seen before the exit signal is the one that was
on the unit when the process ended. A PartOf= stop of the recorder finishes a record under way.

What is recorded (`Incident`): the invocation, when it ended, how (systemd's result, exit code
or signal), how long it had been up, whether it had become ready, and the diagnosis of that
invocation's journal merged with the kernel's Xid lines of its time window (category, summary,
evidence, fix; a hardware Xid outranks its software echo). One JSON file per incident under
`<state dir>/<name>/incidents/`, written atomically (temp, fsync, rename), at most
`MAX_KEPT` files of bounded size (oldest removed). Each is also sent to the journal as a
structured entry with MESSAGE_ID=`MESSAGE_ID`, so `journalctl MESSAGE_ID=<id>` lists every
incident on the box. The liveness watcher (`orchestrator.watch.liveness`) records kind "hung"
(and "gave-up") through the same functions.

`deploy status` and `deploy history` read the store through orchestrator.watch.report.

The classifier (`orchestrator.diagnosis`, ~120-240 ms of imports) is imported inside the
functions that classify: `deploy status` imports this module (through watch.liveness), and the
recorder is Type=notify, so the server's start waits for it; it loads once an incident comes.
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
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator import redact, sglang
from orchestrator.errors import DeployError
from orchestrator.systemd import exit_status
from orchestrator.systemd.files import check_state_tree, write_atomically
from orchestrator.systemd.install import SERVICE, UNIT, Systemd
from orchestrator.timefmt import iso

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
        up = f" after {span(self.uptime_before_s)} up" if self.uptime_before_s is not None else ""
        how = _how(self.exit_code, self.exit_status, self.result)
        return f"{self.unit} {self.kind}{up}{f' ({how})' if how else ''}"

    def cause_line(self) -> str:
        """The evidence line that names the cause (the classifier puts it last)."""
        return self.evidence[-1] if self.evidence else self.summary


def span(seconds: float | None) -> str:
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


def kind_of(
    result: str | None, exit_code: str | None, exit_status: str | None, diagnosis: Any
) -> str:
    """crash | killed | oom-killed | exited | watchdog | timeout, from systemd's facts and the
    diagnosis. SGLang takes itself down with SIGKILL after a logged error: that is a crash."""
    from orchestrator.diagnosis import CAUSE  # diagnosis: see the module docstring

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


def clip(text: str, n: int = LINE_CHARS) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def save(state_root: Path, inc: Incident) -> Path:
    """Write one incident atomically; keep the newest MAX_KEPT. The path written."""

    d = incidents_dir(state_root, inc.deployment)
    check_state_tree(d, state_root)  # no symlink or foreign-owned directory on the way
    with contextlib.suppress(OSError):
        (state_root / inc.deployment).mkdir(parents=True, exist_ok=True, mode=0o700)
    scrub(inc)
    inc.evidence = [clip(x) for x in inc.evidence[:8]]
    inc.last_lines = [clip(x) for x in inc.last_lines[-LAST_LINES:]]
    inc.summary, inc.fix = clip(inc.summary, 1000), clip(inc.fix, 1000)
    inc.recorded_us = int(time.time() * 1e6)
    name = f"{_stamp(inc.ended_us)}-{inc.kind}-{inc.invocation_id[:12] or 'none'}.json"
    write_atomically(
        {name: json.dumps(inc.to_json(), indent=1) + "\n"}, d, mode=0o600, field="--state-dir"
    )
    _prune(d)
    return d / name


def scrub(inc: Incident) -> Incident:
    """Take every registered secret (`orchestrator.redact`) out of the incident's texts, before
    it reaches a file or the journal. Redacted before any cut, so a cut never splits one."""
    r = redact.redact
    inc.summary, inc.fix, inc.action = r(inc.summary), r(inc.fix), r(inc.action)
    inc.evidence = [r(x) for x in inc.evidence]
    inc.last_lines = [r(x) for x in inc.last_lines]
    inc.also = [r(x) for x in inc.also]
    return inc


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


def liveness_state(state_root: Path, name: str) -> dict[str, Any]:
    """What the liveness watcher last wrote ({} when it never ran)."""
    try:
        data = json.loads((state_root / name / "liveness.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --------------------------------------------------------------------------- the journal


def _field(key: str, value: str) -> bytes:
    v = value.encode("utf-8", errors="replace")
    if b"\n" in v:  # journald's native protocol: binary-safe length-prefixed form
        return key.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
    return key.encode() + b"=" + v + b"\n"


def journal_payload(inc: Incident) -> bytes:
    scrub(inc)
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

    from orchestrator.diagnosis import journal, xid  # see the module docstring

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
    from orchestrator.diagnosis import diagnose, xid  # see the module docstring

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

    return tuple({r.message("ms-ready").format() for r in sglang.RELEASES.values()})


def became_ready(entries: Sequence[Any]) -> bool:
    ready = _ready_lines()
    return any(any(r in e.message for r in ready) for e in entries)


def ready_at_start(unit: str, invocation: str, *, user: bool) -> bool:
    """Whether the first HEAD_LINES lines of the invocation hold the ready line (a long-lived
    server's start is far before the tail that was read). Stops journalctl once it knows."""
    if not invocation:
        return False
    from orchestrator.diagnosis import journal  # see the module docstring

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


class _Prefetch:
    """Reads the journal on a daemon thread while the recorder waits for the unit to settle:
    the record is ready sooner."""

    def __init__(self, unit: str, invocation: str, *, user: bool) -> None:

        self._done = threading.Event()
        self._got: _Journal | None = None
        self._error: BaseException | None = None
        since = int(time.time() * 1e6) - KERNEL_BEFORE_S * 1_000_000

        def run() -> None:
            try:
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


# --------------------------------------------------------------------------- the recorder

# systemd's ExecMainCode (a CLD_* code) as its $EXIT_CODE words.
_CLD = {1: "exited", 2: "killed", 3: "dumped"}
SETTLE_S = 3.0  # how long the recorder waits for systemd's final Result after an exit
DRAIN_S = 0.5  # told to stop, it still reads what systemd sent before, this long


@dataclass
class Exit:
    """One end of the server's main process, as systemd announced it."""

    invocation: str
    start_us: int | None
    end_us: int
    exit_code: str | None  # exited | killed | dumped ($EXIT_CODE)
    exit_status: str | None  # "1", or the signal name "KILL" ($EXIT_STATUS)
    result: str | None = None  # the unit's Result once it settled ($SERVICE_RESULT)
    job: str | None = None  # the job on the unit when the process ended (None: no job)
    props: dict[str, Any] = field(default_factory=dict)  # Restart, RestartUSec, NRestarts

    @property
    def requested(self) -> bool:
        """Someone asked for this stop: a stop or restart job was running on the unit."""
        return self.job in REQUESTED_JOBS


def exit_words(code: int, status: int) -> tuple[str | None, str | None]:
    """systemd's ExecMainCode/ExecMainStatus as $EXIT_CODE/$EXIT_STATUS ("killed", "KILL")."""
    word = _CLD.get(int(code))
    if word is None:
        return None, None
    if word == "exited":
        return word, str(int(status))
    try:
        return word, signal.Signals(int(status)).name.removeprefix("SIG")
    except ValueError:
        return word, str(int(status))


async def record(
    state_root: Path, name: str, ex: Exit, got: _Journal, *, user: bool = False
) -> Incident:
    """The incident of an unrequested stop: diagnosed, saved and sent to the journal."""
    unit = f"sglang-{name}.service"
    code, status, result = ex.exit_code, ex.exit_status, ex.result
    diag, entries, xids = diagnose_journal(
        got,
        start_us=ex.start_us,
        end_us=ex.end_us,
        systemd_result=result,
        exit_status=exit_status.from_env(code, status),
    )
    live = liveness_state(state_root, name)
    ready = (
        became_ready(entries)
        or (live.get("invocation_id") == ex.invocation and bool(live.get("healthy_seen")))
        or (len(entries) >= TAIL_LINES and ready_at_start(unit, ex.invocation, user=user))
    )
    inc = from_diagnosis(
        kind=kind_of(result, code, status, diag),
        ready=ready,
        name=name,
        unit=unit,
        invocation=ex.invocation,
        ended_us=ex.end_us,
        start_us=ex.start_us,
        diag=diag,
        entries=entries,
        xids=xids,
        result=result,
        exit_code=code,
        exit_status=status,
        action=_next_action(ex.props, result),
        restarts=int(ex.props["NRestarts"]) if "NRestarts" in ex.props else None,
    )
    store(state_root, inc)
    return inc


def store(state_root: Path, inc: Incident) -> None:
    """Save the incident's file and send its journal entry. The entry does not depend on the
    disk: a full disk or a refused state dir loses the file, never the record (journald keeps
    space of its own)."""
    unsaved: str | None = None
    try:
        save(state_root, inc)
    except (OSError, DeployError) as e:
        unsaved = str(e)
        scrub(inc)
    if not journal_send(inc):
        print(f"deploy incident: {inc.headline()}: {inc.category}: {inc.summary}", flush=True)
    if unsaved is not None:
        print(f"deploy incident: not stored under {state_root}: {unsaved}", file=sys.stderr)


def _sd_notify(message: str) -> None:
    """Tell systemd (Type=notify) that the recorder follows the server: READY=1."""
    addr = os.environ.get("NOTIFY_SOCKET", "")
    if not addr:
        return
    target = "\0" + addr[1:] if addr.startswith("@") else addr
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(message.encode(), target)


class Follower:
    """Follows one server unit over D-Bus and records every stop of its main process that no
    job asked for. Fed the unit's PropertiesChanged signals in order (`feed`); `exits` are
    the unrequested ends seen so far, each settled once the unit left "deactivating"."""

    def __init__(self, unit_props: Mapping[str, Any], service_props: Mapping[str, Any]) -> None:
        self.unit = dict(unit_props)
        self.service = dict(service_props)
        self.last_exit = int(self.service.get("ExecMainExitTimestamp", 0) or 0)
        self.job_id = 0
        self.job_type: str | None = None

    def job_changed(self) -> tuple[int, str] | None:
        """(id, path) of a job the follower has not asked the type of yet."""
        job = self.unit.get("Job") or (0, "/")
        job_id, path = int(job[0]), str(job[1])
        if job_id == self.job_id:
            return None
        self.job_id, self.job_type = job_id, None
        return (job_id, path) if job_id and path != "/" else None

    def _exit(self, end: int, job: str | None) -> Exit:
        code, status = exit_words(
            int(self.service.get("ExecMainCode", 0) or 0),
            int(self.service.get("ExecMainStatus", 0) or 0),
        )
        start = int(self.service.get("ExecMainStartTimestamp", 0) or 0) or None
        inv = bytes(self.unit.get("InvocationID", b"") or b"").hex()
        return Exit(inv, start, end, code, status, job=job)

    def ended_unseen(self) -> Exit | None:
        """At start: the server's last end, when the unit is failed or waiting to be restarted
        (an end no job asked for) - the recorder may have been down when it happened."""
        failed = (
            self.unit.get("ActiveState") == "failed" or self.unit.get("SubState") == "auto-restart"
        )
        return self._exit(self.last_exit, None) if failed and self.last_exit else None

    def feed(self, interface: str, changed: Mapping[str, Any]) -> Exit | None:
        """Take one PropertiesChanged; an Exit when it announces a new end of the main
        process (judged with the job known before this signal)."""

        if interface == UNIT:
            self.unit.update(changed)
            return None
        if interface != SERVICE:
            return None
        self.service.update(changed)
        end = int(self.service.get("ExecMainExitTimestamp", 0) or 0)
        if not end or end == self.last_exit:
            return None
        self.last_exit = end
        return self._exit(end, self.job_type if self.job_id else None)

    @property
    def settled(self) -> bool:
        return self.unit.get("ActiveState") != "deactivating"

    def settle(self, ex: Exit) -> None:
        """Fill in what systemd knows once the stop is over: its Result, what comes next."""
        ex.result = str(self.service.get("Result", "")) or None
        ex.props = {
            k: self.service[k] for k in ("Restart", "RestartUSec", "NRestarts") if k in self.service
        }


async def follow(
    state_root: Path,
    name: str,
    *,
    user: bool = False,
    ready: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """The recorder (`sglang-<name>-incidents.service`): follow the server unit over D-Bus
    and record each stop nobody asked for, until `stop` is set (a record under way is
    finished first). `ready` is called once the signals are subscribed."""

    unit = f"sglang-{name}.service"
    stop = stop or asyncio.Event()
    async with await Systemd.connect(user=user) as sd, sd.changes(unit) as changes:
        fol = Follower(await sd.properties(unit, UNIT), await sd.properties(unit, SERVICE))
        if (job := fol.job_changed()) is not None:
            fol.job_type = await sd.job_type(job[1])
        (ready or (lambda: None))()
        pending: list[tuple[Exit, _Prefetch, float]] = []
        missed = fol.ended_unseen()
        if missed is not None and not recorded(state_root, name, missed.invocation):
            pending.append((missed, _Prefetch(unit, missed.invocation, user=user), 0.0))
        it = aiter(changes)
        drain_until: float | None = None
        while True:
            if pending and (fol.settled or time.monotonic() >= pending[0][2]):
                for done_exit, pre, _ in pending:
                    fol.settle(done_exit)
                    await record(state_root, name, done_exit, await pre.result(), user=user)
                pending = []
            if stop.is_set() and drain_until is None:
                # Stopped (PartOf= the server): first take what systemd already sent, such as
                # the crash whose restart is stopping us now.
                drain_until = time.monotonic() + DRAIN_S
            if drain_until is not None and not pending and time.monotonic() >= drain_until:
                return
            deadlines = [d for d in (pending[0][2] if pending else None, drain_until) if d]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            nxt = asyncio.ensure_future(anext(it))
            waits: set[asyncio.Future[Any]] = {nxt}
            if drain_until is None:
                waits.add(asyncio.ensure_future(stop.wait()))
            done, _ = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for w in waits - {nxt}:
                w.cancel()
            if nxt not in done:
                nxt.cancel()
                with contextlib.suppress(BaseException):
                    await nxt
                continue
            interface, changed, invalidated = nxt.result()
            if invalidated:  # a value not sent along: read the interface afresh
                changed = {**changed, **await sd.properties(unit, interface)}
            ex = fol.feed(interface, changed)
            if interface == UNIT and (job := fol.job_changed()) is not None:
                fol.job_type = await sd.job_type(job[1])
            if ex is None:
                continue
            if ex.requested:
                print(f"incidents: {unit} stopped by a {ex.job} job: not an incident", flush=True)
                continue
            prefetch = _Prefetch(unit, ex.invocation, user=user)
            pending.append((ex, prefetch, time.monotonic() + SETTLE_S))


async def settle(sd: Any, unit: str, timeout_s: float = 60.0) -> None:
    """Wait while `unit` is stopping on its own (systemd killing what is left of a crashed
    server) before deploy queues a stop or restart job on it, so the job never overlaps the
    crash's own stop: the recorder has judged the exit by then, and the job starts clean."""

    async def until_settled() -> None:
        async with sd.watch(unit) as states:
            async for st in states:
                if st.active_state != "deactivating":
                    return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(until_settled(), timeout_s)


def recorded(state_root: Path, name: str, invocation: str) -> bool:
    """Whether an incident of `invocation` is on disk (file names end in its first 12 hex)."""
    tail = f"-{invocation.replace('-', '')[:12]}.json"
    return any(p.name.endswith(tail) for p in _files(incidents_dir(state_root, name)))


async def wait_recorded(
    state_root: Path, name: str, invocation: str, timeout_s: float = 10.0
) -> bool:
    """Wait (at most timeout_s) until the recorder has written the incident of `invocation`
    (its file name ends in the invocation's first 12 hex digits). Whether it did."""
    deadline = time.monotonic() + timeout_s
    while True:
        if recorded(state_root, name, invocation):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -I -m orchestrator.watch.incidents")
    sub = ap.add_subparsers(dest="command", required=True)
    fp = sub.add_parser(
        "follow",
        help="the recorder unit: follow the server unit over D-Bus, record unrequested stops",
    )
    fp.add_argument("--state-dir", required=True, type=Path)
    fp.add_argument("--user", action="store_true", help="the unit runs under a user manager")
    fp.add_argument(
        "--secrets-from",
        metavar="ENV_FILE",
        help="the server's environment file: its values are redacted from every record "
        "(read here; never put into this process's environment)",
    )
    fp.add_argument("name", help="the deployment")
    args = ap.parse_args(argv)

    if args.secrets_from:
        redact.register_file(args.secrets_from)
    unit = f"sglang-{args.name}.service"

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await follow(
            args.state_dir,
            args.name,
            user=args.user,
            ready=lambda: _sd_notify("READY=1\nSTATUS=following " + unit),
            stop=stop,
        )

    print(f"incidents: following {unit}; every stop no job asked for is recorded", flush=True)
    try:
        asyncio.run(run())
    except Exception as e:  # say why in the journal; systemd restarts the recorder
        print(f"incidents: recorder failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Every file is written and fsynced by now; a journal reader thread may be left behind:
    # leave without waiting for it or for the interpreter's teardown.
    os._exit(code)
