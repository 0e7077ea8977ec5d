"""Day 2, against the real systemd in the box with the SGLang stand-in: a crash while serving
becomes an incident within 2 s, shown by status and history and in the journal; a hang and a
zombie are restarted by the liveness watcher (incident "hung"); a spent restart budget leaves
the unit stopped and status says why; a deliberate stop records nothing; a hardware Xid in the
kernel log outranks the software error it causes.

Every wait is on an event (a file appearing, a unit property, an invocation changing), with a
generous deadline; the stand-in's own timings are short (1-2 s)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from orchestrator.watch.incidents import MESSAGE_ID
from tests.box import Box
from tests.e2e import deploy, prepare, profile, show

pytestmark = pytest.mark.box

DEADLINE_S = 90.0
FAST = {"STANDIN_READY_DELAY_S": "1.0"}
# Probe every second, 2 failures in a row -> act, 1 s probe timeout.
QUICK_LIVENESS = {"liveness_interval_s": 1, "liveness_failures": 2, "liveness_timeout_s": 1}
NO_AUTO_RESTART = {"restart_sec": 600}  # systemd's own restart stays out of the picture


@pytest.fixture(scope="module")
def prepared(box: Box) -> Box:
    prepare(box)
    return box


@pytest.fixture
def sbox(prepared: Box, clean_box: Box) -> Box:
    """The prepared box; units the test leaves behind are stopped even when it fails."""
    return prepared


def wait_for(what: str, check: Callable[[], Any], deadline_s: float = DEADLINE_S) -> Any:
    t = time.monotonic()
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() - t < deadline_s, f"gave up waiting for {what}"
        time.sleep(0.1)


def incident_files(box: Box, name: str) -> list[str]:
    out = box.run(["sh", "-c", 'ls "$1" 2>/dev/null', "sh", f"/var/lib/deploy/{name}/incidents"])
    return [ln for ln in out.stdout.split() if ln.endswith(".json")]


def incidents(box: Box, name: str) -> list[dict[str, Any]]:
    r = deploy(box, "history", name, "--json")
    assert r.rc == 0, r.stderr
    return list(r.json()["incidents"])


def mtime_us(box: Box, path: str) -> int:
    r = box.python(f"import os; print(os.stat({path!r}).st_mtime_ns // 1000)")
    return int(r.stdout.strip())


def journal_json(box: Box, *matches: str) -> list[dict[str, Any]]:
    out = box.run(["journalctl", "-b", "-o", "json", "--no-pager", *matches]).stdout
    return [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]


def journal_lines(box: Box, holding: str, *matches: str) -> list[dict[str, Any]]:
    return [
        e
        for e in journal_json(box, *matches)
        if isinstance(e.get("MESSAGE"), str) and holding in e["MESSAGE"]
    ]


def invocation(box: Box, unit: str) -> str:
    return show(box, unit, "InvocationID")["InvocationID"]


def test_crash_while_serving_is_an_incident(sbox: Box, box_port: int) -> None:
    name = "d2-crash"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=box_port,
        env={**FAST, "STANDIN_CRASH_AFTER_S": "1.5", "STANDIN_CRASH": "illegal-memory"},
        unit_extra=NO_AUTO_RESTART,
        health=QUICK_LIVENESS,
    )
    up = deploy(sbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    inv = up.json()["invocation_id"]
    (fname,) = wait_for("the incident file", lambda: incident_files(sbox, name))
    on_disk_us = mtime_us(sbox, f"/var/lib/deploy/{name}/incidents/{fname}")
    (exited,) = wait_for(
        "PID 1's line about the exit",
        lambda: journal_lines(sbox, "Main process exited", f"UNIT={unit}", f"INVOCATION_ID={inv}"),
    )
    lag = (on_disk_us - int(exited["__REALTIME_TIMESTAMP"])) / 1e6
    print(f"\ncrash -> incident on disk: {lag:.2f} s ({exited['MESSAGE']})")
    assert 0 < lag <= 2.0

    (inc,) = incidents(sbox, name)
    assert (inc["kind"], inc["category"], inc["phase"]) == (
        "crash",
        "cuda-illegal-access",
        "serving",
    )
    assert inc["invocation_id"] == inv
    assert (inc["result"], inc["exit_code"], inc["exit_status"]) == ("signal", "killed", "KILL")
    assert inc["uptime_before_s"] >= 1.5
    assert inc["evidence"][-1].endswith("CUDA error: an illegal memory access was encountered")
    assert "while drafting" in inc["summary"]
    assert "Restart=on-failure" in inc["action"]

    st = deploy(sbox, "status", name, "--json")
    (row,) = st.json()
    assert set(row["last_incident"]) == {
        "kind",
        "category",
        "when",
        "uptime_before_s",
        "evidence",
        "fix",
    }
    assert row["last_incident"]["kind"] == "crash"
    assert row["last_incident"]["category"] == "cuda-illegal-access"
    assert row["last_incident"]["when"] == inc["when"]
    assert "illegal memory access" in row["last_incident"]["evidence"]
    assert row["incidents_24h"] == 1
    assert row["liveness"]["enabled"] is True
    assert set(row["liveness"]) == {
        *("enabled", "state", "detail", "unit", "active_state", "sub_state"),
        *("failures_in_a_row", "last_probe"),
    }
    # up exited 0 only after the watcher's first probe of this start answered (healthy); the
    # latest probe may have begun before the crash and ended after it, so its outcome is either.
    assert isinstance(row["liveness"]["last_probe"]["ok"], bool)
    text = deploy(sbox, "status", name).stdout
    print(text)
    assert "incident: crash (cuda-illegal-access)" in text
    assert "1 in the last 24 h" in text

    (entry,) = [
        e
        for e in journal_json(sbox, f"MESSAGE_ID={MESSAGE_ID}")
        if e.get("DEPLOY_DEPLOYMENT") == name
    ]
    assert entry["DEPLOY_KIND"] == "crash" and entry["DEPLOY_INVOCATION"] == inv
    assert entry["DEPLOY_CATEGORY"] == "cuda-illegal-access"
    assert "illegal memory access" in entry["DEPLOY_EVIDENCE"]

    hist = deploy(sbox, "history", name).stdout.splitlines()
    assert hist[0].lstrip().startswith("1  ") and "healthy" in hist[0]
    assert hist[1].lstrip().startswith("!") and "incident crash" in hist[1]
    assert deploy(sbox, "down", name).rc == 0
    assert len(incident_files(sbox, name)) == 1  # the stop by `down` added none


def test_deliberate_stops_record_nothing(sbox: Box, box_port: int) -> None:
    name = "d2-calm"
    unit = f"sglang-{name}.service"
    p = profile(name, port=box_port, env=FAST, health=QUICK_LIVENESS)
    assert deploy(sbox, "up", p).rc == 0
    assert deploy(sbox, "down", name).rc == 0  # deploy down
    assert deploy(sbox, "up", p).rc == 0
    assert sbox.systemctl("stop", unit).returncode == 0  # systemctl stop
    assert deploy(sbox, "up", p).rc == 0
    assert deploy(sbox, "up", p, "--force-restart").rc == 0  # a restart by up
    assert sbox.systemctl("restart", unit).returncode == 0  # systemctl restart
    # The recorder judged each of the four ends of a running server (down, stop, the two
    # restarts) as asked for: it says so in its journal, and recorded nothing.
    wait_for(
        "the recorder's four verdicts",
        lambda: sbox.journal(f"sglang-{name}-incidents.service").count("not an incident") >= 4,
    )
    assert incident_files(sbox, name) == []
    # ... and the recorder is live for this very unit: a kill nobody asked for is recorded.
    inv = invocation(sbox, unit)
    assert sbox.systemctl("kill", "--signal=SIGKILL", unit).returncode == 0
    wait_for("the kill's incident", lambda: incident_files(sbox, name))
    (inc,) = incidents(sbox, name)
    print(f"\nkill -9: {inc['kind']}, {inc['category']}: {inc['summary']}")
    assert inc["kind"] == "killed" and inc["invocation_id"] == inv
    assert inc["exit_status"] == "KILL" and inc["category"] == "host-oom-killed"  # a hint only
    assert "inferred" in inc["summary"]
    assert deploy(sbox, "down", name).rc == 0
    assert len(incident_files(sbox, name)) == 1


def test_failed_start_under_up_is_an_incident_too(sbox: Box, box_port: int) -> None:
    """up stops the unit only after the recorder has recorded the crash: its stop job comes
    after the exit, so the recorder never takes the crash for a requested stop."""
    name = "d2-startfail"
    p = profile(name, port=box_port, env={**FAST, "STANDIN_FAIL": "oom"}, health=QUICK_LIVENESS)
    r = deploy(sbox, "up", p, "--json")
    assert r.rc == 1 and r.json()["diagnosis"]["category"] == "cuda-oom"
    (inc,) = incidents(sbox, name)  # present as soon as up returns: no waiting
    assert (inc["kind"], inc["category"], inc["phase"]) == ("crash", "cuda-oom", "start-up")
    assert inc["invocation_id"] == r.json()["invocation_id"]
    hist = deploy(sbox, "history", name).stdout
    assert "failed" in hist and "incident crash" in hist


def test_hang_is_restarted_by_liveness(sbox: Box, box_port: int) -> None:
    name = "d2-hang"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=box_port,
        env={**FAST, "STANDIN_HANG_AFTER_S": "1"},
        unit_extra=NO_AUTO_RESTART,
        health=QUICK_LIVENESS,
    )
    up = deploy(sbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    first = up.json()["invocation_id"]
    second = wait_for(
        "a new invocation", lambda: (i := invocation(sbox, unit)) != first and i and i
    )
    (ready,) = [
        e
        for e in journal_json(sbox, f"_SYSTEMD_INVOCATION_ID={first}")
        if "fired up and ready to roll" in str(e.get("MESSAGE"))
    ]
    hung_at_us = int(ready["__REALTIME_TIMESTAMP"]) + 1_000_000  # STANDIN_HANG_AFTER_S
    (started,) = wait_for(
        "PID 1's line about the new start",
        lambda: journal_lines(sbox, "Started sglang-", f"UNIT={unit}", f"INVOCATION_ID={second}"),
    )
    took = (int(started["__REALTIME_TIMESTAMP"]) - hung_at_us) / 1e6
    bound = QUICK_LIVENESS["liveness_interval_s"] * QUICK_LIVENESS["liveness_failures"] + 5
    print(f"\nhang -> restarted: {took:.2f} s (bound {bound} s)")
    assert 0 < took <= bound
    hung = [i for i in incidents(sbox, name) if i["invocation_id"] == first]
    assert [i["kind"] for i in hung] == ["hung"]  # and no "crash" for that restart's stop
    inc = hung[0]
    assert inc["action"].startswith("restarted by the liveness watcher (1 of 3 this hour)")
    assert "/health failed 2 times in a row" in inc["summary"]
    assert inc["last_lines"] and any("fired up" in ln for ln in inc["last_lines"])
    assert inc["phase"] == "serving"
    assert deploy(sbox, "down", name).rc == 0


def test_zombie_is_restarted_with_the_cause(sbox: Box, box_port: int) -> None:
    name = "d2-zombie"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=box_port,
        env={**FAST, "STANDIN_ZOMBIE_AFTER_S": "1", "SGLANG_HEALTH_CHECK_TIMEOUT": "1"},
        unit_extra=NO_AUTO_RESTART,
        health={**QUICK_LIVENESS, "liveness_timeout_s": 3},
    )
    up = deploy(sbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    first = up.json()["invocation_id"]
    wait_for("a new invocation", lambda: invocation(sbox, unit) not in ("", first))
    (inc,) = [i for i in incidents(sbox, name) if i["invocation_id"] == first]
    print(f"\nzombie: {inc['kind']}, {inc['category']}")
    assert inc["kind"] == "hung"
    assert inc["category"] == "nccl-watchdog-timeout"  # the classifier's verdict on the journal
    assert any("Health check failed" in ln for ln in inc["last_lines"])
    assert deploy(sbox, "down", name).rc == 0


def test_spent_budget_stops_the_unit(sbox: Box, box_port: int) -> None:
    name = "d2-budget"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=box_port,
        env={**FAST, "STANDIN_HANG_AFTER_S": "1"},
        unit_extra=NO_AUTO_RESTART,
        health={**QUICK_LIVENESS, "liveness_restarts_per_hour": 1},
    )
    assert deploy(sbox, "up", p).rc == 0
    wait_for(
        "the gave-up incident",
        lambda: any("-gave-up-" in f for f in incident_files(sbox, name)),
    )
    wait_for(
        "the unit stopped",
        lambda: show(sbox, unit, "ActiveState")["ActiveState"] in ("inactive", "failed"),
    )
    kinds = [i["kind"] for i in incidents(sbox, name)]
    assert kinds == ["hung", "gave-up"], kinds
    (row,) = deploy(sbox, "status", name, "--json").json()
    assert row["active_state"] == "inactive"
    last = row["last_incident"]
    assert last["kind"] == "gave-up"
    assert "already used the budget (1 an hour)" in last["fix"]
    assert f"deploy up {name}" in last["fix"]
    text = deploy(sbox, "status", name).stdout
    print(f"\n{text}")
    assert "incident: gave-up" in text and "budget" in text
    assert show(sbox, f"sglang-{name}-liveness.service", "ActiveState")["ActiveState"] == "inactive"


def test_liveness_off_removes_the_watcher(sbox: Box, box_port: int) -> None:
    name = "d2-off"
    watcher = f"sglang-{name}-liveness.service"
    on = profile(name, port=box_port, env=FAST, health=QUICK_LIVENESS)
    assert deploy(sbox, "up", on).rc == 0
    assert show(sbox, watcher, "ActiveState")["ActiveState"] == "active"
    off = profile(name, port=box_port, env={**FAST, "GEN": "2"}, health={"liveness": False})
    r = deploy(sbox, "up", off, "--json")
    assert r.rc == 0, r.stdout + r.stderr
    assert f"stopped and removed {watcher} (liveness = false)" in r.json()["actions"]
    assert sbox.run(["test", "-e", f"/etc/systemd/system/{watcher}"]).returncode == 1
    assert show(sbox, watcher, "ActiveState")["ActiveState"] == "inactive"
    (row,) = deploy(sbox, "status", name, "--json").json()
    live = row["liveness"]
    assert (live["enabled"], live["state"], live["failures_in_a_row"]) == (False, "off", 0)
    assert deploy(sbox, "down", name).rc == 0


def test_hardware_xid_outranks_the_cuda_error(sbox: Box, box_port: int) -> None:
    """Last in this file: the kernel line it writes stays in the box's journal."""
    name = "d2-xid"
    # The box has no /dev/kmsg; root writes the kernel's line as a forwarder would.
    xid_line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=sglang::schedul, GPU has fallen off the bus."
    assert sbox.run(["logger", "-t", "kernel", xid_line]).returncode == 0
    p = profile(
        name,
        port=box_port,
        env={**FAST, "STANDIN_CRASH_AFTER_S": "1", "STANDIN_CRASH": "illegal-memory"},
        unit_extra=NO_AUTO_RESTART,
        health=QUICK_LIVENESS,
    )
    assert deploy(sbox, "up", p).rc == 0
    wait_for("the incident file", lambda: incident_files(sbox, name))
    (inc,) = incidents(sbox, name)
    print(f"\nxid: {inc['category']}: {inc['summary']}")
    assert inc["kind"] == "crash"
    assert inc["category"] == "gpu-xid"
    assert "the GPU at PCI 0000:3b:00 reported Xid 79" in inc["summary"]  # no NVML in the box
    assert inc["also"] == []  # the illegal memory access was its echo
    assert [(x["xid"], x["pci"], x["kind"]) for x in inc["xids"]] == [
        (79, "0000:3b:00", "hardware")
    ]
    assert deploy(sbox, "down", name).rc == 0


PRELOAD_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    fprintf(stderr, "PRELOADED-BY-SERVICE-USER uid=%d pid=%d\n", (int)getuid(), (int)getpid());
}
"""
PTH = "import os, sys; sys.stderr.write('PTH-OF-SERVICE-USER uid=%d\\n' % os.getuid())\n"


def test_nothing_the_service_user_controls_runs_as_root(sbox: Box, box_port: int) -> None:
    """Issue 21 item 1: the service user plants code where the old root stop hook loaded it
    (an LD_PRELOAD library named in the environment file, a .pth file in its ~/.local), the
    server crashes, the incident is recorded, and no root process ran any of it."""
    name = "d2-noroot"
    unit = f"sglang-{name}.service"
    env_file = "/etc/deploy-test/d2-noroot.env"
    sbox.write_file(env_file, "HF_TOKEN=hf_noroot_0123456789abcdefghij\n", mode="0600")
    p = profile(
        name,
        port=box_port,
        env=FAST,
        unit_extra={**NO_AUTO_RESTART, "environment_file": env_file},
        health={"liveness": False},
    )
    up = deploy(sbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    uid = sbox.run(["id", "-u", "sglang"], check=True).stdout.strip()
    home = sbox.run(["sh", "-c", "getent passwd sglang | cut -d: -f6"], check=True).stdout.strip()
    # What the service user controls: its state directory and its home.
    sbox.write_file("/var/lib/sglang/mark.c", PRELOAD_C)
    sbox.run(
        ["gcc", "-shared", "-fPIC", "-o", "/var/lib/sglang/mark.so", "/var/lib/sglang/mark.c"],
        check=True,
    )
    site = (
        f"{home}/.local/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    )
    sbox.write_file(f"{site}/zz-mark.pth", PTH)
    sbox.run(["chown", "-R", "sglang:", "/var/lib/sglang", home], check=True)
    # The library in the environment file (preflight refuses that line; here it gets there
    # after the fact, as through a file the service user could once write).
    sbox.write_file(
        env_file,
        "HF_TOKEN=hf_noroot_0123456789abcdefghij\nLD_PRELOAD=/var/lib/sglang/mark.so\n",
        mode="0600",
    )
    assert sbox.systemctl("restart", unit).returncode == 0
    wait_for("the server's start", lambda: invocation(sbox, unit) != up.json()["invocation_id"])
    inv = invocation(sbox, unit)
    # The plants are live: the server, as the service user, loaded both.
    wait_for(
        "the server loading the planted code",
        lambda: (
            f"PRELOADED-BY-SERVICE-USER uid={uid}" in sbox.journal(unit)
            and f"PTH-OF-SERVICE-USER uid={uid}" in sbox.journal(unit)
        ),
    )
    assert sbox.systemctl("kill", "--signal=SIGSEGV", unit).returncode == 0
    wait_for("the crash's incident", lambda: incident_files(sbox, name))
    (inc,) = incidents(sbox, name)
    assert inc["invocation_id"] == inv and inc["kind"] == "crash"
    everything = sbox.run(["journalctl", "-b", "--no-pager", "-o", "cat"]).stdout
    assert "PRELOADED-BY-SERVICE-USER uid=0" not in everything
    assert "PTH-OF-SERVICE-USER uid=0" not in everything
    # ... and by the journal's own record of who wrote the marks: never uid 0.
    marks = [
        e
        for e in journal_json(sbox)
        if "-BY-SERVICE-USER" in str(e.get("MESSAGE"))
        or "-OF-SERVICE-USER" in str(e.get("MESSAGE"))
    ]
    assert marks and all(e.get("_UID") != "0" for e in marks)
    recorder = show(sbox, f"sglang-{name}-incidents.service", "User", "ExecMainPID")
    assert recorder["User"] in ("", "root")
    sbox.run(["rm", "-f", env_file, f"{site}/zz-mark.pth", "/var/lib/sglang/mark.so"])
    assert deploy(sbox, "down", name).rc == 0
