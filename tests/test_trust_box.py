"""Issue 21 against the real systemd in the box: the API key reaches the stand-in (which
checks it as SGLang does) without ever being on a command line, a key missing from the
environment file refuses the start instead of serving without authentication, and the
incident recorder's sandbox scores as a hardened unit."""

from __future__ import annotations

import re

import pytest

from tests.box import Box
from tests.e2e import deploy, prepare, profile, show

pytestmark = pytest.mark.box

KEY = "sk-boxkey-0123456789abcdef"
FAST = {"STANDIN_READY_DELAY_S": "1.0"}


@pytest.fixture(scope="module")
def tbox(box: Box) -> Box:
    prepare(box)
    return box


def _status(box: Box, port: int, key: str | None) -> str:
    code = (
        "import urllib.request, urllib.error\n"
        f"r = urllib.request.Request('http://127.0.0.1:{port}/v1/models')\n"
        + (f"r.add_header('Authorization', 'Bearer {key}')\n" if key else "")
        + "try:\n    print(urllib.request.urlopen(r, timeout=5).status)\n"
        "except urllib.error.HTTPError as e:\n    print(e.code)\n"
    )
    return box.python(code).stdout.strip()


def test_api_key_is_never_on_a_command_line(tbox: Box) -> None:
    name = "tr-key"
    unit = f"sglang-{name}.service"
    env_file = "/etc/deploy-test/tr-key.env"
    tbox.write_file(env_file, f'SGLANG_API_KEY="{KEY}"\n', mode="0600")
    p = profile(
        name,
        port=31321,
        env=FAST,
        unit_extra={"environment_file": env_file, "api_key_env": "SGLANG_API_KEY"},
        health={"liveness": False},
    )
    up = deploy(tbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    # Authentication is on, with the key from the file.
    assert _status(tbox, 31321, None) == "401"
    assert _status(tbox, 31321, KEY) == "200"
    # ... and the key is in no process's command line, nor in the journal's _CMDLINE.
    pid = show(tbox, unit, "MainPID")["MainPID"]
    cmdline = tbox.run(["cat", f"/proc/{pid}/cmdline"]).stdout
    assert "sglang.launch_server" in cmdline and KEY not in cmdline
    everywhere = tbox.run(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null"]).stdout
    assert KEY not in everywhere
    journal = tbox.run(["journalctl", "-b", "-o", "json", "--no-pager", f"_SYSTEMD_UNIT={unit}"])
    assert journal.stdout and KEY not in journal.stdout
    unit_text = tbox.run(["cat", f"/etc/systemd/system/{unit}"]).stdout
    assert KEY not in unit_text and "${SGLANG_API_KEY}" not in unit_text

    # The key taken out of the file after `up`: the next start refuses, never serves open.
    tbox.write_file(env_file, "HF_TOKEN=hf_other_0123456789abcdefghij\n", mode="0600")
    assert tbox.systemctl("restart", unit).returncode == 0
    wait = tbox.run(
        [
            "sh",
            "-c",
            f"for i in $(seq 100); do systemctl is-failed -q {unit} && exit 0; "
            f"systemctl show -p SubState --value {unit} | grep -q auto-restart && exit 0; "
            "sleep 0.1; done; exit 1",
        ]
    )
    assert wait.returncode == 0
    assert "SGLANG_API_KEY not set or empty" in tbox.journal(unit)
    assert _status(tbox, 31321, None) not in ("200",)
    # Preflight refuses the same before any restart.
    refused = deploy(tbox, "up", p, "--json")
    assert refused.rc == 2 and "api-key-env" in refused.stdout + refused.stderr
    assert deploy(tbox, "down", name).rc == 0


def test_recorder_unit_is_hardened(tbox: Box) -> None:
    name = "tr-score"
    p = profile(name, port=31322, env=FAST, health={"liveness": False})
    up = deploy(tbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    assert not [w for w in up.json()["warnings"] if w["rule"] == "incident-recorder"]
    rec = f"sglang-{name}-incidents.service"
    assert show(tbox, rec, "ActiveState")["ActiveState"] == "active"
    out = tbox.run(["systemd-analyze", "security", "--no-pager", rec]).stdout
    m = re.search(rf"Overall exposure level for {re.escape(rec)}: ([0-9.]+)", out)
    assert m, out[-2000:]
    print(f"\n{rec}: systemd-analyze security exposure {m.group(1)}")
    assert float(m.group(1)) <= 2.5
    assert deploy(tbox, "down", name).rc == 0
    # down stops it with the server (PartOf=); it reads what systemd sent before it goes.
    gone = tbox.run(
        [
            "sh",
            "-c",
            f"for i in $(seq 100); do systemctl show -p ActiveState --value {rec} "
            "| grep -qx inactive && exit 0; sleep 0.1; done; exit 1",
        ]
    )
    assert gone.returncode == 0


def test_recorder_down_when_the_server_died_records_it_on_start(tbox: Box) -> None:
    name = "tr-missed"
    unit = f"sglang-{name}.service"
    rec = f"sglang-{name}-incidents.service"
    p = profile(
        name, port=31323, env=FAST, unit_extra={"restart_sec": 600}, health={"liveness": False}
    )
    assert deploy(tbox, "up", p).rc == 0
    inv = show(tbox, unit, "InvocationID")["InvocationID"]
    assert tbox.systemctl("stop", rec).returncode == 0  # PartOf= goes one way: server runs on
    assert show(tbox, unit, "SubState")["SubState"] == "running"
    assert tbox.systemctl("kill", "--signal=SIGKILL", unit).returncode == 0
    wait = tbox.run(
        [
            "sh",
            "-c",
            f"for i in $(seq 100); do systemctl show -p SubState --value {unit} "
            "| grep -q auto-restart && exit 0; sleep 0.1; done; exit 1",
        ]
    )
    assert wait.returncode == 0
    assert tbox.systemctl("start", rec).returncode == 0  # Type=notify: returns once it follows
    r = deploy(tbox, "history", name, "--json")
    got = r.json()["incidents"]
    for _ in range(50):  # its first act after READY=1: records within the second
        if got:
            break
        tbox.run(["sleep", "0.1"])
        got = deploy(tbox, "history", name, "--json").json()["incidents"]
    assert [(i["invocation_id"], i["kind"]) for i in got] == [(inv, "killed")]
    assert tbox.systemctl("restart", rec).returncode == 0  # and never twice
    assert len(deploy(tbox, "history", name, "--json").json()["incidents"]) == 1
    assert deploy(tbox, "down", name).rc == 0
