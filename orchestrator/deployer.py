"""The controller: apply a spec to systemd and know, fast, whether the server came up.

    up:     preflight -> render -> connect -> install (atomic) -> reload -> enable ->
            restart -> wait (unit state + /health + journal phases) -> diagnosis on failure
    status: unit state, restarts, health and what the server says about itself
    down:   stop and disable, unit files kept

Plain data in and out; the CLI prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from orchestrator.errors import PreflightRejected
from orchestrator.spec import Spec

UNIT_MARK = "# Rendered by deploy from profile "
HEALTH_MARK = "# deploy-health-url: "


@dataclass
class UpResult:
    profile: str
    unit: str
    outcome: Literal["healthy", "failed", "timeout"]
    elapsed_s: float
    invocation_id: str = ""
    changed: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    detail: str = ""
    phase: str | None = None
    unit_state: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    diagnosis: Any = None  # orchestrator.diagnose.Diagnosis
    diagnosed_in_s: float | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.outcome == "healthy" else 1

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["diagnosis"] = self.diagnosis.to_json() if self.diagnosis is not None else None
        return d


def _preflight(spec: Spec, gpus: Any = None) -> list[dict[str, Any]]:
    from orchestrator import preflight

    kw = {"gpus": gpus} if gpus is not None else {}
    report = preflight.run(spec, on_box=True, **kw)
    if not report.ok:
        first = report.errors[0]
        raise PreflightRejected(
            f"preflight refused {spec.name} ({len(report.errors)} error(s)); nothing was changed. "
            f"First: {first.rule}: {first.message}",
            findings=list(report.findings),
            field=", ".join(first.flags) or first.rule,
            fix=first.fix + " (see `deploy validate " + spec.name + "` for every finding)",
        )
    return [f.to_json() for f in report.findings if f.severity == "warning"]


async def _lines(spec: Spec, invocation: str, user: bool) -> AsyncIterator[str]:
    from orchestrator import journal

    async for entry in journal.follow(spec.unit_name, invocation=invocation, user=user):
        yield entry.message


def _sync_journal() -> None:
    """Ask journald to write out what it holds, so the crash lines are readable now."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["journalctl", "--sync"], capture_output=True, timeout=5, check=False)


def diagnose_start(
    spec: Spec,
    unit: str,
    invocation: str,
    *,
    user: bool,
    systemd_result: str | None,
    exit_status: str | None,
    timed_out: bool,
) -> Any:
    """Read the journal of that very start and name the cause."""
    from orchestrator import diagnose, journal

    _sync_journal()
    entries = journal.read(unit, user=user, invocation=invocation) if invocation else []
    if not timed_out and not any(
        e.message.startswith(("Main process exited", "Failed with result")) for e in entries
    ):
        # PID 1's own lines about the exit can trail the process's last output by a moment.
        for _ in range(10):
            time.sleep(0.05)
            entries = journal.read(unit, user=user, invocation=invocation) if invocation else []
            if any(e.message.startswith("Failed with result") for e in entries):
                break
    return diagnose.classify(
        entries,
        flags=dict(spec.server),
        systemd_result=systemd_result,
        exit_status=exit_status,
        timed_out=timed_out,
    )


def _exit_status(st: Any) -> str | None:
    """systemd's way of writing how the main process ended: "1", or "9/KILL" for a signal."""
    import signal

    if st is None or not st.exec_main_code:
        return None
    if st.exec_main_code == 1:  # CLD_EXITED
        return str(st.exec_main_status)
    try:
        name = signal.Signals(st.exec_main_status).name.removeprefix("SIG")
    except ValueError:
        name = "?"
    return f"{st.exec_main_status}/{name}"


async def up(
    spec: Spec,
    *,
    unit_dir: Path,
    user: bool = False,
    timeout_s: float | None = None,
    preflight: bool = True,
    gpus: Any = None,
    on_progress: Callable[[Any], None] | None = None,
) -> UpResult:
    from orchestrator import render
    from orchestrator.health import wait_until_healthy
    from orchestrator.systemd import Systemd, install_units

    t0 = time.monotonic()
    warnings = _preflight(spec, gpus) if preflight else []
    files = render.render(spec)
    deadline = float(timeout_s if timeout_s is not None else spec.health.startup_timeout_s)
    async with await Systemd.connect(user=user) as sd:  # unreachable systemd: nothing written
        changed = install_units(files, unit_dir)
        actions = [f"installed {n}" for n in changed]
        if changed:
            await sd.reload()
            actions.append("daemon-reload")
        await sd.enable([spec.unit_name])
        await sd.reset_failed(spec.unit_name)
        for name in spec.unit_names[1:]:
            await sd.reset_failed(name)
        result = await sd.restart(spec.unit_name)
        actions.append(f"restart {spec.unit_name}: job {result}")
        st = await sd.state(spec.unit_name)
        if result != "done":
            return await _failed_before_start(
                spec, sd, result, st, t0, changed, actions, warnings, user
            )
        invocation = st.invocation_id
        outcome = await wait_until_healthy(
            sd,
            spec.unit_name,
            spec.health.url,
            timeout_s=deadline,
            on_progress=on_progress,
            lines=_lines(spec, invocation, user),
        )
        res = UpResult(
            profile=spec.name,
            unit=spec.unit_name,
            outcome=outcome.status,
            elapsed_s=round(time.monotonic() - t0, 3),
            invocation_id=invocation,
            changed=changed,
            actions=actions,
            detail=outcome.detail,
            phase=outcome.phase,
            unit_state=asdict(outcome.unit) if outcome.unit else {},
            warnings=warnings,
        )
        if outcome.status == "healthy":
            return res
        t_fail = time.monotonic()
        final = outcome.unit or st
        res.diagnosis = await asyncio.to_thread(
            diagnose_start,
            spec,
            spec.unit_name,
            invocation,
            user=user,
            systemd_result=final.result if final else None,
            exit_status=_exit_status(final),
            timed_out=outcome.status == "timeout",
        )
        res.diagnosed_in_s = round(time.monotonic() - t_fail, 3)
        # A broken start must not crash-loop (each try can cost a 10-minute load).
        stop = await sd.stop(spec.unit_name)
        res.actions.append(
            f"stop {spec.unit_name}: job {stop} (no crash loop; fix and run up again)"
        )
        return res


async def _failed_before_start(
    spec: Spec,
    sd: Any,
    result: str,
    st: Any,
    t0: float,
    changed: list[str],
    actions: list[str],
    warnings: list[dict[str, Any]],
    user: bool,
) -> UpResult:
    """The restart job itself failed: the check oneshot failed ("dependency") or systemd
    refused (start limit). Diagnose from the unit that failed."""
    unit = spec.unit_name
    check = await sd.state(spec.check_unit_name) if spec.unit.check_models else None
    if result == "dependency" and check is not None:
        unit, failed = spec.check_unit_name, check
    else:
        failed = st
    diag = await asyncio.to_thread(
        diagnose_start,
        spec,
        unit,
        failed.invocation_id,
        user=user,
        systemd_result=failed.result,
        exit_status=_exit_status(failed),
        timed_out=False,
    )
    return UpResult(
        profile=spec.name,
        unit=spec.unit_name,
        outcome="failed",
        elapsed_s=round(time.monotonic() - t0, 3),
        invocation_id=failed.invocation_id,
        changed=changed,
        actions=actions,
        detail=f"the start job ended '{result}' ({unit}: {failed.active_state}/{failed.sub_state}, result {failed.result})",
        unit_state=asdict(failed),
        warnings=warnings,
        diagnosis=diag,
        diagnosed_in_s=0.0,
    )


# ------------------------------------------------------------------------------ status


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
        if p.name.endswith("-check.service"):
            continue
        try:
            head = p.read_text(encoding="utf-8", errors="replace").splitlines()[:6]
        except OSError:
            continue
        name = next(
            (ln[len(UNIT_MARK) :].split(" ")[0] for ln in head if ln.startswith(UNIT_MARK)), None
        )
        url = next(
            (ln[len(HEALTH_MARK) :].strip() for ln in head if ln.startswith(HEALTH_MARK)), None
        )
        if name and url and (only is None or only == name):
            out.append(Deployment(name, p.name, url, str(p)))
    return out


async def _http_json(client: Any, url: str) -> tuple[int | None, Any, str]:
    import httpx

    try:
        r = await client.get(url)
    except httpx.ConnectError:
        return None, None, "connection refused (not listening)"
    except httpx.TimeoutException:
        return None, None, "no answer (timeout)"
    except httpx.HTTPError as e:
        return None, None, f"{type(e).__name__}"
    try:
        body = r.json()
    except ValueError:
        body = None
    return r.status_code, body, r.reason_phrase


def _server_facts(info: Any) -> dict[str, Any]:
    if not isinstance(info, dict):
        return {}
    keys = (
        "model_path",
        "served_model_name",
        "tp_size",
        "speculative_algorithm",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "version",
    )
    facts = {k: info[k] for k in keys if info.get(k) is not None}
    states = info.get("internal_states")
    if isinstance(states, list):
        lens = [s.get("avg_spec_accept_length") for s in states if isinstance(s, dict)]
        lens = [x for x in lens if isinstance(x, (int, float))]
        if lens:
            facts["avg_spec_accept_length"] = round(sum(lens) / len(lens), 3)
    return facts


async def status(
    unit_dir: Path, *, user: bool = False, only: str | None = None
) -> list[dict[str, Any]]:
    import httpx

    from orchestrator.systemd import Systemd

    deps = deployments(unit_dir, only)
    if not deps:
        return []
    now_us = time.time() * 1e6
    async with (
        await Systemd.connect(user=user) as sd,
        httpx.AsyncClient(timeout=2.0, trust_env=False) as client,
    ):

        async def one(d: Deployment) -> dict[str, Any]:
            st = await sd.state(d.unit)
            base = d.health_url.rsplit("/", 1)[0] if d.health_url.count("/") > 2 else d.health_url
            (code, _, words), (icode, info, _) = await asyncio.gather(
                _http_json(client, d.health_url), _http_json(client, base + "/server_info")
            )
            since = st.state_change_timestamp_us
            return {
                "profile": d.name,
                "unit": d.unit,
                "active_state": st.active_state,
                "sub_state": st.sub_state,
                "result": st.result,
                "since_us": since,
                "for_s": round((now_us - since) / 1e6, 1) if since else None,
                "restarts": st.n_restarts,
                "main_pid": st.main_pid,
                "invocation_id": st.invocation_id,
                "health_url": d.health_url,
                "health": {
                    "status": code,
                    "detail": "healthy" if code == 200 else (f"{code} {words}" if code else words),
                },
                "server": _server_facts(info) if icode == 200 else {},
            }

        return list(await asyncio.gather(*(one(d) for d in deps)))


async def down(spec_name: str, unit: str, *, user: bool = False) -> list[str]:
    from orchestrator.systemd import Systemd

    async with await Systemd.connect(user=user) as sd:
        result = await sd.stop(unit)
        await sd.disable([unit])
        return [f"stop {unit}: job {result}", f"disabled {unit} (unit files kept)"]


def summarize(state: Mapping[str, Any]) -> str:
    return f"{state.get('active_state')}/{state.get('sub_state')}"
