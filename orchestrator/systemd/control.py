"""The controller: apply a spec to systemd and know, fast, whether the server came up.

    up:       preflight -> render -> connect -> install (atomic) -> reload -> enable ->
              restart -> wait (unit state + /health + journal phases) -> diagnosis on failure
    status:   unit state, restarts, health and what the server says about itself
    down:     stop and disable, unit files kept
    rollback: an earlier release's units back, restart, wait

Plain data in and out: each command returns one result dataclass (`UpResult`, `StatusResult`,
`DownResult`, `RollbackResult`; `deploy history` is `releases.HistoryResult`) with
`to_json()`; the CLI prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import preflight, redact, serverapi
from orchestrator.diagnosis import diagnose, journal
from orchestrator.diagnosis.model import CAUSE
from orchestrator.errors import InputError, PreflightRejected, Refused, after_change
from orchestrator.profiles.spec import Spec
from orchestrator.systemd import exit_status, render, sandbox
from orchestrator.systemd.install import Systemd, install_units
from orchestrator.systemd.releases import Store, digest
from orchestrator.systemd.render import recorder_unit
from orchestrator.watch import liveness
from orchestrator.watch.health import wait_until_healthy
from orchestrator.watch.incidents import settle, wait_recorded

if TYPE_CHECKING:  # at run time these modules load only when a command needs them
    from orchestrator.diagnosis.diagnose import Diagnosis
    from orchestrator.preflight.gpus import GpuReport
    from orchestrator.systemd.install import Systemd, UnitState
    from orchestrator.systemd.releases import ReleaseRecord, Store
    from orchestrator.watch.health import Progress

    OnProgress = Callable[[Progress], None]

Outcome = Literal["healthy", "failed", "timeout"]


class _Watched:
    """What `up` and `rollback` share: a healthy server that its liveness watcher does not
    probe is not done (exit 1, the server left serving)."""

    outcome: Outcome
    watcher: dict[str, Any] | None

    @property
    def unwatched(self) -> bool:
        return self.watcher is not None and self.watcher.get("state") != "watching"

    @property
    def exit_code(self) -> int:
        return 0 if self.outcome == "healthy" and not self.unwatched else 1


@dataclass
class RollbackResult(_Watched):
    """`deploy rollback`, or the rollback a failed `up` did: release `to_release`'s units
    back, recorded as release `as_release`."""

    to_release: int
    as_release: int
    outcome: Outcome
    detail: str
    invocation_id: str
    installed: list[str]
    actions: list[str]
    diagnosis: Diagnosis | None = None
    watcher: dict[str, Any] | None = None  # as UpResult.watcher (`deploy rollback` only)

    def to_json(self) -> dict[str, Any]:
        d = asdict(replace(self, diagnosis=None))
        d["diagnosis"] = self.diagnosis.to_json() if self.diagnosis is not None else None
        return d


@dataclass
class UpResult(_Watched):
    profile: str
    unit: str
    outcome: Outcome
    elapsed_s: float
    invocation_id: str = ""
    changed: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    detail: str = ""
    phase: str | None = None
    unit_state: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    diagnosed_in_s: float | None = None
    release: int | None = None
    unchanged: bool = False
    rollback: RollbackResult | None = None
    # The liveness watcher after a healthy start (liveness.WatcherState.to_json()); None when
    # the profile has none or the server is not healthy. A healthy server that nothing watches
    # is not "done": exit 1, the server left running (no rollback: it serves).
    watcher: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(replace(self, diagnosis=None, rollback=None))
        d["diagnosis"] = self.diagnosis.to_json() if self.diagnosis is not None else None
        d["rollback"] = self.rollback.to_json() if self.rollback is not None else None
        return d


def _preflight(
    spec: Spec, gpus: GpuReport | None = None, *, full: bool = True, user: bool = False
) -> list[dict[str, Any]]:
    """Preflight on the box; `full=False` (--no-preflight): only its security rules, which
    no flag skips (who could make root or the server run what)."""

    if full:
        findings = list(preflight.run(spec, on_box=True, gpus=gpus, user_mode=user).findings)
    else:
        findings = preflight.security(spec, user_mode=user)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise PreflightRejected(
            f"preflight refused {spec.name} ({len(errors)} error(s)); nothing was changed. "
            f"First: {first.rule}: {first.message}",
            findings=findings,
            field=", ".join(first.flags) or first.rule,
            fix=first.fix + " (see `deploy validate " + spec.name + "` for every finding)",
        )
    return [f.to_json() for f in findings if f.severity == "warning"]


async def _lines(spec: Spec, invocation: str, user: bool) -> AsyncIterator[str]:

    async for entry in journal.follow(spec.unit_name, invocation=invocation, user=user):
        yield entry.message


def _sync_journal() -> None:
    """Ask journald to write out what it holds, so the crash lines are readable now."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["journalctl", "--sync"], capture_output=True, timeout=5, check=False)


# how long a start with no cause line waits for the rest of its journal (a stream's lag), and
# how many reads in a row must find nothing new once the process has been heard
_SETTLE_S = 3.0
_QUIET_READS = 3


def diagnose_start(
    spec: Spec,
    unit: str,
    invocation: str,
    *,
    user: bool,
    systemd_result: str | None,
    exit_status: str | None,
    timed_out: bool,
) -> Diagnosis:
    """Read the journal of that very start and name the cause."""

    _sync_journal()

    def settled(entries: journal.JournalLines) -> bool:
        # PID 1's own lines about the exit can trail the process's last output by a moment
        # ("Failed with result" comes only once systemd has stopped what was left).
        return timed_out or any(
            "Failed with result" in s or "Main process exited" in s for s in entries.search
        )

    entries = (
        journal.read(unit, user=user, invocation=invocation)
        if invocation
        else journal.JournalLines("")
    )
    for _ in range(10 if invocation else 0):
        if settled(entries):
            break
        time.sleep(0.05)
        entries = journal.read(unit, user=user, invocation=invocation)

    def classify(entries: journal.JournalLines) -> Diagnosis:
        return diagnose.classify(
            entries,
            flags=dict(spec.server),
            release=spec.sglang.release,
            systemd_result=systemd_result,
            exit_status=exit_status,
            timed_out=timed_out,
        )

    diag = classify(entries)
    if diag.role == CAUSE or not invocation:
        return diag
    # No line names a cause (unknown, or only systemd's result / a bare SIGKILL to go on). The
    # process's own lines come over its stdout/stderr stream, and journald (252) may read that
    # stream after PID 1's exit lines, even after a `journalctl --sync`: sync writes out what
    # journald has read, not what still waits in the stream's socket. So read again after each
    # sync until a line of the process itself is in and the journal has stopped growing for
    # _QUIET_READS reads in a row; a process that never said anything waits out the bound.
    # A process gone before journald read its stream is logged without the invocation id
    # (journald learns it from the process's cgroup): such lines of the unit since this start
    # began are read too, as long as no line of the process came with the id.
    end = time.monotonic() + _SETTLE_S
    seen = len(entries)
    heard = _from_process(entries)
    began = min((e.timestamp_us for e in entries if e.timestamp_us), default=None)
    quiet = 0
    while time.monotonic() < end:
        time.sleep(0.05)
        _sync_journal()
        entries = journal.read(unit, user=user, invocation=invocation)
        if began is not None and not _from_process(entries):
            entries = _with_unclaimed(entries, _unclaimed(unit, user=user, since_us=began))
        if len(entries) == seen:
            quiet += 1
            if heard and quiet >= _QUIET_READS:
                break
            continue
        quiet, seen = 0, len(entries)
        heard = heard or _from_process(entries)
        diag = classify(entries)
        if diag.role == CAUSE:
            break
    return diag


def _unclaimed(unit: str, *, user: bool, since_us: int) -> list[tuple[int, str]]:
    """(time, `-o json` line) of the unit's lines since `since_us` (µs since the epoch) that
    carry no invocation id and are not the service manager's: lines of a process that was gone
    before journald read its stream. journald learns a line's start from the process's cgroup;
    once the process has exited it knows the unit (from the stream) but not the start, so a
    read of the start's journal never returns such a line. Oldest first, the newest 500."""
    got = journal.read(unit, user=user, since=f"@{since_us // 1_000_000}", lines=500)
    return [
        (e.timestamp_us, got.raw[i])
        for i, e in enumerate(got)
        if not e.invocation_id
        and e.pid != 1
        and e.ident != "systemd"
        and e.timestamp_us is not None
        and e.timestamp_us >= since_us
    ]


def _with_unclaimed(
    entries: journal.JournalLines, unclaimed: list[tuple[int, str]]
) -> journal.JournalLines:
    """One start's `-o json` journal with `_unclaimed`'s lines put in by time."""
    if not unclaimed:
        return entries
    stamps = {ln: e.timestamp_us or 0 for ln, e in zip(entries.raw, entries, strict=True)}
    stamps.update((ln, t) for t, ln in unclaimed)
    return journal.JournalLines("\n".join(sorted(stamps, key=stamps.__getitem__)) + "\n")


def _from_process(entries: journal.JournalLines) -> bool:
    """Whether the journal of a start holds a line of the started process, not only the
    service manager's lines about it (identifier "systemd": PID 1, or the user's manager)."""
    return any(e.ident != "systemd" and e.pid != 1 for e in entries)


def _exit_status(st: UnitState | None) -> str | None:
    """systemd's way of writing how the main process ended: "1", or "9/KILL" for a signal."""
    return None if st is None else exit_status.from_dbus(st.exec_main_code, st.exec_main_status)


async def _healthy_now(url: str) -> bool:
    """Whether the health URL answers 200 now, with a body within the cap (serverapi's stdlib
    client, in a thread)."""

    r = await asyncio.to_thread(serverapi.health, url)
    return r.status == 200 and r.error is None


@dataclass
class _Start:
    """How one start of the server went."""

    outcome: Outcome
    invocation_id: str
    detail: str
    phase: str | None
    unit_state: dict[str, Any]
    diagnosis: Diagnosis | None = None
    diagnosed_in_s: float | None = None


async def _start_and_wait(
    sd: Systemd,
    spec: Spec,
    *,
    user: bool,
    deadline_s: float,
    on_progress: OnProgress | None,
    actions: list[str],
) -> _Start:
    """reset-failed, restart, wait; on failure read the journal of that very start."""

    for name in (*spec.unit_names, recorder_unit(spec.name)):
        await sd.reset_failed(name)
    result = await sd.restart(spec.unit_name)
    actions.append(f"restart {spec.unit_name}: job {result}")
    st = await sd.state(spec.unit_name)
    if result != "done":
        return await _failed_before_start(spec, sd, result, st, user)
    invocation = st.invocation_id
    outcome = await wait_until_healthy(
        sd,
        spec.unit_name,
        spec.health.url,
        timeout_s=deadline_s,
        on_progress=on_progress,
        lines=_lines(spec, invocation, user),
    )
    start = _Start(
        outcome=outcome.status,
        invocation_id=invocation,
        detail=outcome.detail,
        phase=outcome.phase,
        unit_state=asdict(outcome.unit) if outcome.unit else {},
    )
    if outcome.status == "healthy":
        return start
    start.diagnosis, start.diagnosed_in_s, unread = await _diagnose(
        spec,
        spec.unit_name,
        invocation,
        outcome.unit or st,
        user=user,
        timed_out=outcome.status == "timeout",
    )
    if unread:
        start.detail += f"; no diagnosis: {unread}"
    return start


async def _diagnose(
    spec: Spec,
    unit: str,
    invocation: str,
    state: UnitState | None,
    *,
    user: bool,
    timed_out: bool,
) -> tuple[Diagnosis | None, float, str | None]:
    """(diagnosis, seconds it took, why there is none) for one start of `unit`, off the event
    loop. A journal that cannot be read (no journalctl, no rights) leaves the start without
    a diagnosis, and the up goes on to roll back or stop: the service has already been
    changed, so neither a refusal nor giving up half-way (a crash loop) would be right."""
    t = time.monotonic()
    try:
        diag = await asyncio.to_thread(
            diagnose_start,
            spec,
            unit,
            invocation,
            user=user,
            systemd_result=state.result if state else None,
            exit_status=_exit_status(state),
            timed_out=timed_out,
        )
    except Refused as e:
        return None, round(time.monotonic() - t, 3), e.paragraph()
    return diag, round(time.monotonic() - t, 3), None


async def up(
    spec: Spec,
    *,
    unit_dir: Path,
    state_root: Path,
    user: bool = False,
    timeout_s: float | None = None,
    preflight: bool = True,
    force_restart: bool = False,
    rollback: bool = True,
    gpus: GpuReport | None = None,
    on_progress: OnProgress | None = None,
) -> UpResult:
    """Apply the spec; on failure roll back to the last healthy release (unless told not to)."""

    t0 = time.monotonic()
    store = Store(state_root, spec.name)
    warnings = _preflight(spec, gpus, full=preflight, user=user)
    files = render.render(spec, user_mode=user, state_root=state_root)
    if preflight:  # the watcher's sandbox must see deploy itself (as just rendered)
        runner = liveness.Runner.current()
        sandbox.check_watcher(
            files,
            liveness.watcher_unit(spec.name) if spec.health.liveness else None,
            runner.python,
            runner.path,
            state_root,
        )
    deadline = float(timeout_s if timeout_s is not None else spec.health.startup_timeout_s)
    _check_writable(unit_dir, "--unit-dir")
    # Refusals (preflight, unreachable systemd, a held lock) come before anything is written.
    async with await Systemd.connect(user=user) as sd:
        with store.lock("up"):
            interrupted = store.interrupted()
            res = UpResult(
                profile=spec.name,
                unit=spec.unit_name,
                outcome="healthy",
                elapsed_s=0.0,
                warnings=warnings,
            )
            if interrupted:
                store.mark_interrupted(interrupted.get("release"))
                res.actions.append(
                    f"found an interrupted {interrupted.get('action')} (pid {interrupted.get('pid')}, since "
                    f"{interrupted.get('since')}, at step {interrupted.get('step')}): redoing it"
                )
            installed = all(_read(unit_dir / n) == text for n, text in files.items())
            if installed and not force_restart and not interrupted:
                st = await sd.state(spec.unit_name)
                if st.running and await _healthy_now(spec.health.url):
                    res.outcome, res.unchanged = "healthy", True
                    res.invocation_id = st.invocation_id
                    res.detail = "unchanged: the installed units are the rendered ones and the server is healthy; nothing restarted"
                    res.unit_state = asdict(st)
                    await _confirm_watcher(sd, spec, res, state_root=state_root, user=user)
                    res.elapsed_s = round(time.monotonic() - t0, 3)
                    return res
            rel = store.record(files, _spec_json(spec), spec.source)
            res.release = rel.number
            store.begin("up", release=rel.number, unit=spec.unit_name)
            done = False
            try:
                store.step("install")
                res.changed = install_units(files, unit_dir)  # atomic: all or nothing
                res.actions += [f"installed {n}" for n in res.changed]
                with after_change(lambda: _done(res.actions, f"release {rel.number}")):
                    retired = await liveness.retire(sd, spec, list(files), unit_dir)
                    res.changed += retired
                    res.actions += [f"stopped and removed {n} (liveness = false)" for n in retired]
                    await _apply(
                        sd,
                        spec,
                        store,
                        rel,
                        res,
                        interrupted=bool(interrupted),
                        deadline=deadline,
                        unit_dir=unit_dir,
                        user=user,
                        rollback=rollback,
                        on_progress=on_progress,
                    )
                    if res.outcome == "healthy":
                        await _confirm_watcher(sd, spec, res, state_root=state_root, user=user)
                done = True
            finally:
                if done:
                    store.end()
                else:  # interrupted (SIGINT, a systemd error): leave the marker for the next up/status
                    store.finish(rel, "interrupted")
            res.elapsed_s = round(time.monotonic() - t0, 3)
            return res


async def _confirm_watcher(
    sd: Systemd, spec: Spec, res: UpResult, *, state_root: Path, user: bool
) -> None:
    """The server is healthy: is its liveness watcher running and probing this start? Waits
    for its first probe (its heartbeat file) or for systemd to say it failed; res.watcher."""

    if not spec.health.liveness:
        return
    h = spec.health
    ws = await liveness.confirm(
        sd,
        spec.name,
        state_root=state_root,
        server_invocation=res.invocation_id,
        deadline_s=h.liveness_timeout_s + 30.0,
        user=user,
    )
    res.watcher = ws.to_json()
    if ws.watching:
        res.actions.append(f"{ws.unit}: watching (first probe made)")
    else:
        res.actions.append(f"{ws.unit}: NOT WATCHING: {ws.detail}")


def _done(actions: list[str], what: str) -> str:
    """What deploy had changed, in words, for an error after the first change."""
    return f"deploy began applying {what}: " + ("; ".join(actions) or "units unchanged")


async def _apply(
    sd: Systemd,
    spec: Spec,
    store: Store,
    rel: ReleaseRecord,
    res: UpResult,
    *,
    interrupted: bool,
    deadline: float,
    unit_dir: Path,
    user: bool,
    rollback: bool,
    on_progress: OnProgress | None,
) -> None:
    """up past the install: reload, enable, restart, wait; on failure roll back or stop."""
    if res.changed or interrupted:
        await sd.reload()
        res.actions.append("daemon-reload")
    await sd.enable([spec.unit_name])
    store.step("restart")
    start = await _start_and_wait(
        sd, spec, user=user, deadline_s=deadline, on_progress=on_progress, actions=res.actions
    )
    res.outcome, res.invocation_id, res.detail = start.outcome, start.invocation_id, start.detail
    res.warnings += await _recorder_warning(sd, spec)
    res.phase, res.unit_state = start.phase, start.unit_state
    res.diagnosis, res.diagnosed_in_s = start.diagnosis, start.diagnosed_in_s
    store.finish(
        rel,
        start.outcome,
        invocation_id=start.invocation_id,
        diagnosis=start.diagnosis.category if start.diagnosis is not None else None,
    )
    if start.outcome != "healthy":
        store.step("rollback")
        await _after_failure(
            sd,
            spec,
            store,
            rel,
            res,
            unit_dir=unit_dir,
            user=user,
            rollback=rollback,
            on_progress=on_progress,
        )


async def _recorder_warning(sd: Systemd, spec: Spec) -> list[dict[str, Any]]:
    """A warning when the incident recorder is not running after the start: crashes would go
    unrecorded (the server does not wait for it: Wants=, not Requires=)."""

    unit = recorder_unit(spec.name)
    st = await sd.state(unit)
    if st.active_state == "active":
        return []
    return [
        {
            "rule": "incident-recorder",
            "severity": "warning",
            "flags": [],
            "message": f"{unit} is {st.active_state}/{st.sub_state} (result {st.result or '-'}): "
            "crashes of the server are not being recorded",
            "fix": f"see `journalctl -u {unit}`, fix the cause, then `systemctl start {unit}`",
            "stricter": False,
        }
    ]


async def _after_failure(
    sd: Systemd,
    spec: Spec,
    store: Store,
    rel: ReleaseRecord,
    res: UpResult,
    *,
    unit_dir: Path,
    user: bool,
    rollback: bool,
    on_progress: OnProgress | None,
) -> None:
    """Never leave it worse: back to the last healthy release, or stopped (no crash loop)."""

    await settle(sd, spec.unit_name)  # let systemd finish the crash's stop before our job
    if (
        res.outcome == "failed"
        and res.invocation_id
        and res.unit_state.get("exec_main_code")
        and res.unit_state.get("name") == spec.unit_name
    ):
        # The recorder (its own unit) records the crash; our stop or rollback restarts it, so
        # let it finish first (it would anyway, on SIGTERM; this keeps `up` in step with it).
        # It follows the server unit only: a failed check oneshot (job 'dependency') never ran
        # the server, and nothing will be recorded for it.
        await wait_recorded(store.dir.parent, spec.name, res.invocation_id)
    prev = store.last_healthy(exclude_digest=rel.digest) if rollback else None
    if prev is None:
        stop = await sd.stop(spec.unit_name)
        why = "--no-rollback" if not rollback else "no earlier healthy release to roll back to"
        res.actions.append(
            f"stop {spec.unit_name}: job {stop} ({why}; no crash loop: fix and run up again)"
        )
        return
    res.rollback = await rollback_to(
        sd,
        spec,
        store,
        prev,
        unit_dir=unit_dir,
        user=user,
        on_progress=on_progress,
        reason=f"release {rel.number} {rel.outcome}",
    )


async def rollback_to(
    sd: Systemd,
    spec: Spec,
    store: Store,
    prev: ReleaseRecord,
    *,
    unit_dir: Path,
    user: bool,
    on_progress: OnProgress | None,
    reason: str,
) -> RollbackResult:
    """Install release `prev`'s units, restart, wait; recorded as a release of its own."""

    files = prev.units
    redact.register_units(files)  # an earlier release may name another environment file
    rel = store.record(files, {"rollback_to": prev.number}, f"rollback to release {prev.number}")
    changed = install_units(files, unit_dir)  # atomic: all or nothing
    actions: list[str] = []
    done = [f"installed {n}" for n in changed]
    with after_change(lambda: _done(done + actions, f"the rollback to release {prev.number}")):
        if changed:
            await sd.reload()
            done.append("daemon-reload")
        start = await _start_and_wait(
            sd,
            spec,
            user=user,
            deadline_s=float(spec.health.startup_timeout_s),
            on_progress=on_progress,
            actions=actions,
        )
        store.finish(
            rel,
            start.outcome,
            invocation_id=start.invocation_id,
            note=f"rollback to release {prev.number} after {reason}",
        )
        if start.outcome != "healthy":
            await sd.stop(spec.unit_name)
            actions.append(f"stop {spec.unit_name}: the rollback failed too")
    return RollbackResult(
        to_release=prev.number,
        as_release=rel.number,
        outcome=start.outcome,
        detail=start.detail,
        invocation_id=start.invocation_id,
        installed=changed,
        actions=actions,
        diagnosis=start.diagnosis,
    )


def _check_writable(directory: Path, option: str) -> None:
    """The unit dir must be writable (or creatable) before a release is even recorded."""

    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(
            f"cannot write unit files into {directory} as this user",
            field=option,
            fix="run deploy as root (sudo) for the system manager, or use --user for your own",
        )


def _spec_json(spec: Spec) -> dict[str, Any]:
    # spec.sglang holds the SGLang release itself (its regexes and frames): asdict() would
    # descend into it and json could not write it. Record which release, as validate shows it.

    data: dict[str, Any] = {}
    for f in fields(spec):
        if f.name != "sglang":
            v = getattr(spec, f.name)
            data[f.name] = asdict(v) if is_dataclass(v) and not isinstance(v, type) else v
    out: dict[str, Any] = json.loads(json.dumps(data, default=dict))
    out["sglang"] = spec.sglang.to_json()
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


async def _failed_before_start(
    spec: Spec, sd: Systemd, result: str, st: UnitState, user: bool
) -> _Start:
    """The restart job itself failed: the check oneshot failed ("dependency") or systemd
    refused (start limit). Diagnose from the unit that failed."""
    unit = spec.unit_name
    check = await sd.state(spec.check_unit_name) if spec.unit.check_models else None
    if result == "dependency" and check is not None:
        unit, failed = spec.check_unit_name, check
    else:
        failed = st
    diag, took, unread = await _diagnose(
        spec, unit, failed.invocation_id, failed, user=user, timed_out=False
    )
    if unit == spec.check_unit_name and (diag is None or diag.role != CAUSE):
        diag = _from_check_status(spec, unit, failed, diag, user) or diag
    return _Start(
        outcome="failed",
        invocation_id=failed.invocation_id,
        detail=f"the start job ended '{result}' ({unit}: {failed.active_state}/{failed.sub_state}, result {failed.result})"
        + (f"; no diagnosis: {unread}" if unread else ""),
        phase=None,
        unit_state=asdict(failed),
        diagnosis=diag,
        diagnosed_in_s=took,
    )


def _from_check_status(
    spec: Spec, unit: str, failed: UnitState, diag: Diagnosis | None, user: bool
) -> Diagnosis | None:
    """The check oneshot's cause from its exit status (render.CHECK_FAILURES), for when its
    own stderr line is not in the journal of that start: journald reads a short-lived
    process's stream after PID 1's exit lines (40-200 ms later on a loaded box), and now and
    then too late to learn the start's invocation id, so the line is logged without it (3 of
    80 starts of such a oneshot in the test box with both cores busy) and no wait finds it.
    The rebuilt line is classified like any other and shown as rebuilt."""
    status = _exit_status(failed)
    who = pwd.getpwuid(os.getuid()).pw_name if user else spec.unit.user
    line = render.check_failure_line(spec, status, who)
    if line is None:
        return None
    got = diagnose.classify_text(line, flags=dict(spec.server), release=spec.sglang.release)
    if got.role != CAUSE:
        return None
    rebuilt = journal.JournalEntry(
        timestamp_us=None,
        message=f"{line}  (rebuilt from {unit}'s exit status {status}: its own line was not "
        "in the journal of that start when read)",
        unit=unit,
        invocation_id=failed.invocation_id or None,
        ident="deploy",
        source="text",
    )
    return replace(got, evidence=[rebuilt, *(diag.evidence if diag else [])][:8])


@dataclass
class DownResult:
    """`deploy down`: stopped and disabled; the unit files are kept."""

    profile: str
    unit: str
    actions: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def down(name: str, unit: str, *, state_root: Path, user: bool = False) -> DownResult:

    async with await Systemd.connect(user=user) as sd:
        with Store(state_root, name).lock("down"):
            result = await sd.stop(unit)
            with after_change(f"{unit} was stopped (job {result})"):
                await sd.disable([unit])
            return DownResult(
                name, unit, [f"stop {unit}: job {result}", f"disabled {unit} (unit files kept)"]
            )


async def rollback(
    spec: Spec,
    *,
    unit_dir: Path,
    state_root: Path,
    to: int | None = None,
    user: bool = False,
    on_progress: OnProgress | None = None,
) -> RollbackResult:
    """`deploy rollback`: back to release `to`, or to the last healthy one that differs from
    what is installed now."""

    store = Store(state_root, spec.name)

    def target() -> ReleaseRecord:
        installed = {n: _read(unit_dir / n) or "" for n in render.render(spec, user_mode=user)}
        t = (
            store.get(to)
            if to is not None
            else store.last_healthy(exclude_digest=digest(installed))
        )
        if t is None:
            raise InputError(
                f"{spec.name} has no earlier healthy release to roll back to",
                field="--to",
                fix=f"pick a release from `deploy history {spec.name}` with --to N",
            )
        return t

    target()  # refuse before anything is written (the lock file included)
    async with await Systemd.connect(user=user) as sd:
        with store.lock("rollback"):
            chosen = target()
            store.begin("rollback", release=chosen.number, unit=spec.unit_name)
            try:
                res = await rollback_to(
                    sd,
                    spec,
                    store,
                    chosen,
                    unit_dir=unit_dir,
                    user=user,
                    on_progress=on_progress,
                    reason="deploy rollback",
                )
                if res.outcome == "healthy" and liveness.watcher_unit(spec.name) in chosen.units:
                    with after_change(f"rolled back to release {chosen.number}"):
                        ws = await liveness.confirm(
                            sd,
                            spec.name,
                            state_root=state_root,
                            server_invocation=res.invocation_id,
                            deadline_s=spec.health.liveness_timeout_s + 30.0,
                            user=user,
                        )
                    res.watcher = ws.to_json()
                return res
            finally:
                store.end()
