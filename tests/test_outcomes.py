"""Exit statuses: "refused, nothing changed" (2) and "failed after a change" (1) are two
branches of the error hierarchy, and the class alone decides the exit status and the JSON
outcome. A D-Bus or journal failure after the restart is a failure, never a refusal."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import orchestrator
from orchestrator.errors import (
    DeployError,
    Failed,
    InputError,
    LockedError,
    Refused,
    SystemdUnavailable,
    after_change,
)
from orchestrator.systemd.install import SystemdError
from tests.box import Box
from tests.e2e import deploy, inflight_step, prepare, profile, show, start_deploy, wait_for

# ------------------------------------------------------------------ no box needed


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


def test_every_error_is_a_refusal_or_a_failure() -> None:
    for mod in pkgutil.walk_packages(orchestrator.__path__, "orchestrator."):
        importlib.import_module(mod.name)
    classes = _subclasses(DeployError)
    assert classes, "no DeployError subclasses found"
    for cls in classes - {Refused, Failed}:
        assert issubclass(cls, (Refused, Failed)), f"{cls.__qualname__} is neither branch"
    for cls in (InputError, SystemdUnavailable, LockedError, SystemdError):
        assert issubclass(cls, Refused)
    assert (Refused.exit_code, Refused.outcome) == (2, "refused")
    assert (Failed.exit_code, Failed.outcome) == (1, "failed")


def test_a_refusal_after_a_change_is_a_failure() -> None:
    actions = ["installed sglang-x.service"]
    with pytest.raises(Failed) as ei, after_change(lambda: "; ".join(actions)):
        actions.append("restart sglang-x.service: job done")
        raise SystemdError("systemd GetAll got no answer: the connection to systemd was lost")
    e = ei.value
    assert (e.exit_code, e.outcome) == (1, "failed")
    assert e.paragraph() == (
        "systemd GetAll got no answer: the connection to systemd was lost (after installed "
        "sglang-x.service; restart sglang-x.service: job done)."
    )
    assert isinstance(e.__cause__, SystemdError)
    # a failure stays what it is; other exceptions are not the hierarchy's business
    with pytest.raises(Failed, match=r"^already$"), after_change("x"):
        raise Failed("already")
    with pytest.raises(KeyError), after_change("x"):
        raise KeyError("k")


def test_unreachable_systemd_before_any_change_is_refused_in_json(tmp_path: Path) -> None:
    units, state = tmp_path / "units", tmp_path / "state"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "up",
            "kimi-k26-eagle3",
            "--no-preflight",
            "--json",
            "--unit-dir",
            str(units),
            "--state-dir",
            str(state),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp_path}/no-bus"},
    )
    assert r.returncode == 2, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["outcome"] == "refused" and out["profile"] == "kimi-k26-eagle3"
    assert "cannot reach systemd" in out["error"]
    assert not units.exists() and not state.exists()


# ------------------------------------------------------------------ against the box


@pytest.fixture(scope="module")
def sbox(box: Box) -> Box:
    prepare(box)
    return box


@pytest.mark.box
def test_unreadable_journal_after_the_restart_is_a_failure(sbox: Box) -> None:
    """journalctl is missing, so the failed start cannot be diagnosed: up still exits 1
    ("failed", not "refused"), says why there is no diagnosis, and stops the unit."""
    p = profile("out-nojournal", port=31201, env={"STANDIN_FAIL": "oom"})
    no_journalctl = {"PATH": str(Path(sys.executable).parent)}  # python, no systemd tools
    assert not (Path(sys.executable).parent / "journalctl").exists()
    r = deploy(sbox, "up", p, "--json", env=no_journalctl)
    assert r.rc == 1, r.stdout + r.stderr
    res = r.json()
    print(f"\nunreadable journal: exit {r.rc} in {r.seconds:.2f} s: {res['detail']}")
    assert res["outcome"] == "failed" and res["diagnosis"] is None
    assert "no diagnosis: cannot read the journal of sglang-out-nojournal.service" in res["detail"]
    assert "'journalctl' was not found" in res["detail"]
    assert any(a.startswith("stop sglang-out-nojournal.service") for a in res["actions"])
    assert show(sbox, "sglang-out-nojournal.service", "ActiveState")["ActiveState"] in (
        "inactive",
        "failed",
    )
    text = deploy(sbox, "up", p, env=no_journalctl)
    assert text.rc == 1 and "FAILED" in text.stdout and "no diagnosis" in text.stdout


USER_ENV = {
    "XDG_RUNTIME_DIR": "/run/user/0",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
}


@pytest.mark.box
def test_dbus_lost_after_the_restart_is_a_failure(sbox: Box) -> None:
    """The bus goes away while up waits for the restarted unit (root's user bus, so the box's
    system bus is untouched): up ends at once, exit 1, JSON outcome "failed", no traceback."""
    assert sbox.start_user_manager()
    name, unit = "out-buslost", "sglang-out-buslost.service"
    p = profile(
        name,
        port=31202,
        env={"STANDIN_FAIL": "hang"},
        unit_extra={"working_directory": "/root"},
    )
    proc = start_deploy(
        sbox,
        "up",
        p,
        "--user",
        "--json",
        "--timeout",
        "600",
        pidfile="/run/out-buslost.pid",
        env=USER_ENV,
    )
    try:

        def restarted() -> bool:
            st = sbox.run(
                ["systemctl", "--user", "show", unit, "-p", "ActiveState"], env=USER_ENV
            ).stdout.strip()
            return inflight_step(sbox, name) == "restart" and st == "ActiveState=active"

        wait_for(restarted, f"{unit} restarted by deploy up")
        bus = sbox.run(
            ["systemctl", "--user", "show", "dbus.service", "-p", "MainPID", "--value"],
            env=USER_ENV,
        ).stdout.strip()
        assert bus.isdigit() and int(bus) > 0, f"no user dbus-daemon: {bus!r}"
        sbox.run(["kill", "-KILL", bus], check=True)
        out, err = proc.communicate(timeout=60)  # at once, not at the 600 s deadline
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"\nuser bus killed after the restart: exit {proc.returncode}; {err.strip()[:200]}")
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    res = json.loads(out)
    assert res["outcome"] == "failed" and res["profile"] == p
    assert "the connection to systemd was lost" in res["error"]
    assert "after deploy began applying release" in res["error"]
    assert f"restart {unit}: job done" in res["error"]
    # the bus comes back by socket activation; the next up finds the interrupted one
    assert sbox.user_bus_answers()
    down = deploy(sbox, "down", name, "--user", env=USER_ENV)
    assert down.rc == 0, down.stdout + down.stderr
