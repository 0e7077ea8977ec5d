"""orchestrator.systemd.install and orchestrator.watch.health.

The `box` tests drive the library against a real systemd (PID 1 in a throwaway
container, see tests/box.py); each runs a small asyncio script inside the box that
prints one `RESULT {json}` line. The other tests need no box.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import InputError, SystemdUnavailable
from orchestrator.systemd.install import (
    Systemd,
    default_unit_dir,
    install_units,
    remove_units,
    unit_object_path,
)
from tests.box import Box

PY = sys.executable

PRELUDE = """
import asyncio, json, os, socket, sys, time
from pathlib import Path
from orchestrator.systemd.install import Systemd, install_units, remove_units
from orchestrator.watch.health import wait_until_healthy
from orchestrator.errors import SystemdUnavailable
UNIT_DIR = Path("/etc/systemd/system")

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def lag_ms(st):
    # realtime now minus systemd's realtime timestamp of the last state change
    return round((time.time() * 1e6 - st.state_change_timestamp_us) / 1000, 1)
"""

EPILOGUE = """
print("RESULT " + json.dumps(asyncio.run(main())))
"""


def in_box(box: Box, body: str, *, timeout: float = 60, env: dict[str, str] | None = None) -> Any:
    """Run `async def main()` (in body) inside the box; its JSON-able return value."""
    code = PRELUDE + textwrap.dedent(body) + EPILOGUE
    r = box.python(code, timeout=timeout, env=env)
    sys.stdout.write(r.stdout)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    results = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert results, r.stdout + r.stderr
    return json.loads(results[-1][len("RESULT ") :])


# -- no box needed -----------------------------------------------------------------


def test_unit_object_path() -> None:
    assert unit_object_path("sglang-kimi.service") == (
        "/org/freedesktop/systemd1/unit/sglang_2dkimi_2eservice"
    )
    assert unit_object_path("1a@b.service").endswith("/_31a_40b_2eservice")


def test_default_unit_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_unit_dir(False) == Path("/etc/systemd/system")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/tmp/cfg")
    assert default_unit_dir(True) == Path("/tmp/cfg/systemd/user")


def test_install_units_atomic(tmp_path: Path) -> None:
    d = tmp_path / "units"
    assert install_units({"a.service": "A1\n", "b.service": "B1\n"}, d) == [
        "a.service",
        "b.service",
    ]
    inode_b = (d / "b.service").stat().st_ino
    assert install_units({"a.service": "A2\n", "b.service": "B1\n"}, d) == ["a.service"]
    assert (d / "a.service").read_text() == "A2\n"
    assert (d / "b.service").stat().st_ino == inode_b  # unchanged file not rewritten
    assert oct((d / "a.service").stat().st_mode & 0o777) == "0o644"
    assert install_units({"a.service": "A2\n"}, d) == []
    assert sorted(p.name for p in d.iterdir()) == ["a.service", "b.service"]  # no temp files


def test_install_units_failure_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_units({"a.service": "A1\n", "b.service": "B1\n"}, tmp_path)
    calls = {"n": 0}
    real_fsync = os.fsync

    def flaky_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", flaky_fsync)
    with pytest.raises(InputError, match="No space left on device; nothing was changed"):
        install_units({"a.service": "A2\n", "b.service": "B2\n"}, tmp_path)
    assert (tmp_path / "a.service").read_text() == "A1\n"
    assert (tmp_path / "b.service").read_text() == "B1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.service", "b.service"]


def test_install_units_rejects_bad_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        install_units({"ok.service": "x", "../evil.service": "y"}, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_remove_units(tmp_path: Path) -> None:
    install_units({"a.service": "A\n"}, tmp_path)
    assert remove_units(["a.service", "gone.service"], tmp_path) == ["a.service"]
    assert list(tmp_path.iterdir()) == []


def test_unavailable_without_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    with pytest.raises(SystemdUnavailable) as ei:
        asyncio.run(Systemd.connect())
    text = ei.value.paragraph()
    print(text)
    assert "/nonexistent/bus" in text and "no such socket" in text
    assert "Fix:" in text and "--user" in text
    assert ei.value.exit_code == 2


# -- against the real systemd in the box ---------------------------------------------


@pytest.mark.box
def test_install_reload_restart_state(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            unit = "bx-sleep.service"
            text = "[Service]\\nExecStart=/bin/sleep 1000\\n"
            t = time.perf_counter()
            sd = await Systemd.connect()
            t_conn = time.perf_counter()
            await sd.state("dbus.service")
            t_state = time.perf_counter()
            changed = install_units({unit: text}, UNIT_DIR)
            again = install_units({unit: text}, UNIT_DIR)
            t0 = time.perf_counter(); await sd.reload(); t_reload = time.perf_counter() - t0
            t0 = time.perf_counter(); r1 = await sd.restart(unit); t_restart = time.perf_counter() - t0
            s1 = await sd.state(unit)
            r2 = await sd.restart(unit)
            s2 = await sd.state(unit)
            r3 = await sd.stop(unit)
            s3 = await sd.state(unit)
            sd.close()
            return dict(
                connect_ms=round((t_conn - t) * 1e3, 1), state_ms=round((t_state - t_conn) * 1e3, 1),
                reload_ms=round(t_reload * 1e3, 1), restart_ms=round(t_restart * 1e3, 1),
                changed=changed, again=again, results=[r1, r2, r3],
                s1=[s1.active_state, s1.sub_state, s1.invocation_id, s1.main_pid, s1.fragment_path],
                s2=[s2.active_state, s2.sub_state, s2.invocation_id, s2.main_pid],
                s3=[s3.active_state, s3.sub_state],
            )
        """,
    )
    print(
        f"connect {res['connect_ms']} ms, state {res['state_ms']} ms, "
        f"reload {res['reload_ms']} ms, restart {res['restart_ms']} ms"
    )
    assert res["connect_ms"] + res["state_ms"] < 100
    assert res["changed"] == ["bx-sleep.service"] and res["again"] == []
    assert res["results"] == ["done", "done", "done"]
    assert res["s1"][:2] == ["active", "running"] and res["s2"][:2] == ["active", "running"]
    assert len(res["s1"][2]) == 32 and res["s1"][2] != res["s2"][2]  # new invocation per start
    assert res["s1"][3] != res["s2"][3]
    assert res["s1"][4] == "/etc/systemd/system/bx-sleep.service"
    assert res["s3"] == ["inactive", "dead"]


@pytest.mark.box
def test_reload_picks_up_changed_unit(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            unit = "bx-reload.service"
            sd = await Systemd.connect()
            out = []
            for arg in ("111", "222"):
                install_units({unit: f"[Service]\\nExecStart=/bin/sleep {arg}\\n"}, UNIT_DIR)
                await sd.reload()
                await sd.restart(unit)
                pid = (await sd.state(unit)).main_pid
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\\0")[1])
            await sd.stop(unit)
            sd.close()
            return out
        """,
    )
    assert res == ["111", "222"]


@pytest.mark.box
def test_watch_sees_failure_promptly(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            sd = await Systemd.connect()
            out = {}
            for unit, cmd in (("bx-false.service", "/bin/false"),
                              ("bx-late-fail.service", "/bin/sh -c 'sleep 1; exit 3'")):
                install_units({unit: f"[Service]\\nExecStart={cmd}\\n"}, UNIT_DIR)
            await sd.reload()
            for unit in ("bx-false.service", "bx-late-fail.service"):
                async with sd.watch(unit) as states:
                    job = asyncio.create_task(sd.start(unit))
                    async for st in states:
                        if st.failed:
                            break
                    out[unit] = dict(lag_ms=lag_ms(st), job=await job, state=st.active_state,
                                     result=st.result, status=st.exec_main_status)
                await sd.reset_failed(unit)
            sd.close()
            return out
        """,
    )
    for unit, r in res.items():
        print(f"{unit}: failure -> watch saw it after {r['lag_ms']} ms")
        assert r["state"] == "failed" and r["result"] == "exit-code"
        assert r["lag_ms"] < 1000
    assert res["bx-false.service"]["status"] == 1
    assert res["bx-late-fail.service"]["status"] == 3


@pytest.mark.box
def test_enable_disable(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            unit = "bx-enable.service"
            install_units({unit: "[Service]\\nExecStart=/bin/sleep 1000\\n"
                                 "[Install]\\nWantedBy=multi-user.target\\n"}, UNIT_DIR)
            sd = await Systemd.connect()
            await sd.reload()
            en = await sd.enable([unit])
            link = Path("/etc/systemd/system/multi-user.target.wants") / unit
            linked = link.is_symlink()
            dis = await sd.disable([unit])
            sd.close()
            return dict(en=en, dis=dis, linked=linked, after=link.is_symlink())
        """,
    )
    assert res["linked"] and not res["after"]
    assert res["en"][0][0] == "symlink" and res["dis"][0][0] == "unlink"


@pytest.mark.box
def test_wait_until_healthy_healthy(box: Box) -> None:
    res = in_box(
        box,
        f"""
        async def main():
            unit = "bx-http.service"
            port = free_port()
            Path("/srv/bx-http").mkdir(parents=True, exist_ok=True)
            Path("/srv/bx-http/health").write_text("ok\\n")
            install_units({{unit: "[Service]\\nWorkingDirectory=/srv/bx-http\\n"
                                  "ExecStartPre=/bin/sleep 2\\n"
                                  f"ExecStart={PY} -m http.server --bind 127.0.0.1 {{port}}\\n"}},
                          UNIT_DIR)
            sd = await Systemd.connect()
            await sd.reload()
            seen = []
            job = asyncio.create_task(sd.restart(unit))
            out = await wait_until_healthy(sd, unit, f"http://127.0.0.1:{{port}}/health",
                                           timeout_s=20, on_progress=seen.append)
            job_result = await job
            await sd.stop(unit)
            sd.close()
            return dict(status=out.status, elapsed=round(out.elapsed_s, 2), detail=out.detail,
                        http=out.http_status, sub=out.unit.sub_state, job=job_result,
                        subs=sorted({{p.sub_state for p in seen}}),
                        details=sorted({{p.http_detail for p in seen}}))
        """,
    )
    print(f"healthy after {res['elapsed']} s (ExecStartPre sleeps 2 s): {res['detail']}")
    assert res["status"] == "healthy", res
    assert res["http"] == 200 and res["sub"] == "running" and res["job"] == "done"
    assert 2.0 <= res["elapsed"] < 4.0
    assert "start-pre" in res["subs"]
    assert any("connection refused" in d for d in res["details"])


@pytest.mark.box
def test_wait_until_healthy_failed_on_auto_restart(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            unit = "bx-crash.service"
            install_units({unit: "[Service]\\nExecStart=/bin/sh -c 'sleep 2; exit 1'\\n"
                                 "Restart=on-failure\\nRestartSec=5\\n"}, UNIT_DIR)
            sd = await Systemd.connect()
            await sd.reload()
            await sd.restart(unit)
            out = await wait_until_healthy(sd, unit, f"http://127.0.0.1:{free_port()}/health",
                                           timeout_s=20)
            lag = lag_ms(out.unit)
            t0 = time.perf_counter()
            stop = await sd.stop(unit)
            stop_ms = round((time.perf_counter() - t0) * 1e3, 1)
            after = await sd.state(unit)
            await sd.reset_failed(unit)
            sd.close()
            return dict(status=out.status, elapsed=round(out.elapsed_s, 2), lag_ms=lag,
                        detail=out.detail, sub=out.unit.sub_state, stop=stop, stop_ms=stop_ms,
                        after=[after.active_state, after.sub_state])
        """,
    )
    print(f"crash at ~2 s seen after {res['elapsed']} s (lag {res['lag_ms']} ms): {res['detail']}")
    print(f"stop during auto-restart: {res['stop']} in {res['stop_ms']} ms")
    assert res["status"] == "failed", res
    assert res["sub"] == "auto-restart"
    assert 1.9 <= res["elapsed"] < 3.0
    assert res["lag_ms"] < 1000
    assert "exit status 1" in res["detail"]
    assert res["stop"] == "done"
    assert res["after"][0] in ("inactive", "failed")


@pytest.mark.box
def test_wait_until_healthy_timeout(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            unit = "bx-idle.service"
            install_units({unit: "[Service]\\nExecStart=/bin/sleep 1000\\n"}, UNIT_DIR)
            sd = await Systemd.connect()
            await sd.reload()
            await sd.restart(unit)
            out = await wait_until_healthy(sd, unit, f"http://127.0.0.1:{free_port()}/health",
                                           timeout_s=1.5)
            await sd.stop(unit)
            sd.close()
            return dict(status=out.status, elapsed=round(out.elapsed_s, 2), detail=out.detail,
                        http=out.http_status)
        """,
    )
    print(f"timeout: {res['detail']}")
    assert res["status"] == "timeout"
    assert 1.5 <= res["elapsed"] < 2.0
    assert res["http"] is None and "connection refused" in res["detail"]


@pytest.mark.box
def test_unavailable_in_box(box: Box) -> None:
    res = in_box(
        box,
        """
        async def main():
            try:
                await Systemd.connect()
            except SystemdUnavailable as e:
                return e.paragraph()
            return None
        """,
        env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"},
    )
    print(res)
    assert res and "unix:path=/nonexistent" in res and "Fix:" in res


def test_unavailable_without_user_bus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(SystemdUnavailable) as ei:
        asyncio.run(Systemd.connect(user=True))
    text = ei.value.paragraph()
    assert f"unix:path={tmp_path}/bus" in text and "user bus" in text and "linger" in text


@pytest.mark.box
def test_access_denied_is_unavailable(box: Box) -> None:
    code = (
        PRELUDE
        + textwrap.dedent(
            """
        async def main():
            try:
                sd = await Systemd.connect()
                await sd.state("dbus.service")  # reading is allowed
                await sd.restart("dbus.service")
            except SystemdUnavailable as e:
                return ["unavailable", e.paragraph()]
            except Exception as e:
                return [type(e).__name__, str(e)]
            return ["allowed", ""]
        """
        )
        + EPILOGUE
    )
    # the host Python lives under /root (0700); open it up inside the box only (overlay)
    box.run(["chmod", "o+rx", "/root"], check=True)
    r = box.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-c", code])
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    kind, text = json.loads(r.stdout.splitlines()[-1][len("RESULT ") :])
    assert kind == "unavailable", text
    assert "Fix:" in text and "root" in text
