"""Safe on a production box (against the real systemd in the box): idempotent up, releases
and rollback, one deploy at a time, crash safety, a hardened unit, and secrets that never
show up in any output."""

from __future__ import annotations

import re
import signal

import pytest

from tests.box import Box
from tests.e2e import (
    box_pid,
    deploy,
    inflight_step,
    prepare,
    profile,
    rendered,
    show,
    start_deploy,
    unit_files,
    wait_for,
)

pytestmark = pytest.mark.box

FAST = {"STANDIN_READY_DELAY_S": "1.0"}


@pytest.fixture(scope="module")
def sbox(box: Box) -> Box:
    prepare(box)
    return box


def _props(box: Box, unit: str) -> dict[str, str]:
    return show(box, unit, "InvocationID", "NRestarts", "ActiveState", "SubState")


def test_up_is_idempotent(sbox: Box) -> None:
    p = profile("safe-idem", port=31101, env=FAST)
    first = deploy(sbox, "up", p, "--json")
    assert first.rc == 0, first.stdout + first.stderr
    before = _props(sbox, "sglang-safe-idem.service")
    again = deploy(sbox, "up", p, "--json")
    assert again.rc == 0, again.stderr
    res = again.json()
    print(f"\nunchanged up: {again.seconds:.2f} s")
    assert res["unchanged"] is True and res["release"] is None
    assert _props(sbox, "sglang-safe-idem.service") == before  # same InvocationID, NRestarts
    forced = deploy(sbox, "up", p, "--force-restart", "--json")
    assert forced.rc == 0
    assert _props(sbox, "sglang-safe-idem.service")["InvocationID"] != before["InvocationID"]
    hist = deploy(sbox, "history", p, "--json").json()
    assert [r["outcome"] for r in hist["releases"]] == ["healthy", "healthy"]


def test_security_exposure(sbox: Box) -> None:
    out = sbox.run(["systemd-analyze", "security", "--no-pager", "sglang-safe-idem.service"]).stdout
    m = re.search(r"Overall exposure level for sglang-safe-idem\.service: ([0-9.]+)", out)
    assert m, out[-2000:]
    print(f"\nsystemd-analyze security: exposure {m.group(1)}")
    assert float(m.group(1)) <= 5.0


def test_failed_up_rolls_back_to_last_healthy(sbox: Box) -> None:
    good = profile("safe-rb", port=31102, env=FAST)
    bad = profile(
        "safe-rb-bad", port=31102, env={**FAST, "STANDIN_FAIL": "oom"}, name_override="safe-rb"
    )
    assert deploy(sbox, "up", good).rc == 0
    r = deploy(sbox, "up", bad, "--json")
    res = r.json()
    print(f"\nfailed up + rollback: {r.seconds:.2f} s")
    assert r.rc == 1
    assert res["diagnosis"]["category"] == "cuda-oom"
    assert res["rollback"]["to_release"] == 1 and res["rollback"]["outcome"] == "healthy"
    assert _props(sbox, "sglang-safe-rb.service")["SubState"] == "running"
    installed = {k: v for k, v in unit_files(sbox).items() if k.startswith("sglang-safe-rb")}
    assert installed == rendered(good)
    text = deploy(sbox, "up", bad).stdout  # the text form reports both outcomes
    assert "cuda-oom" in text and "rolled back to release" in text
    no_rb = deploy(sbox, "up", bad, "--no-rollback", "--json")
    assert no_rb.rc == 1 and no_rb.json()["rollback"] is None
    assert _props(sbox, "sglang-safe-rb.service")["ActiveState"] == "inactive"
    back = deploy(sbox, "rollback", good, "--to", "1", "--json")
    assert back.rc == 0, back.stdout + back.stderr
    assert back.json()["outcome"] == "healthy"
    outcomes = [
        (r["outcome"], r["source"].startswith("rollback"))
        for r in deploy(sbox, "history", good, "--json").json()["releases"]
    ]
    assert outcomes[:3] == [("healthy", False), ("failed", False), ("healthy", True)]
    assert outcomes[-1] == ("healthy", True)
    deploy(sbox, "down", good)


def test_second_deploy_is_refused_while_one_runs(sbox: Box) -> None:
    """The first up holds the lock until the test opens its server's gate, so the others are
    refused while it runs, however slow the machine: no deadline decides it."""
    gate = "/run/deploy-test/safe-lock"
    sbox.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && rm -f "$1"', "sh", gate], check=True)
    p = profile("safe-lock", port=31103, env={**FAST, "STANDIN_READY_FILE": gate})
    first = start_deploy(sbox, "up", p, "--no-rollback", pidfile="/run/safe-lock.pid")
    try:
        pid = box_pid(sbox, "/run/safe-lock.pid")
        wait_for(lambda: inflight_step(sbox, "safe-lock") is not None, "the first up's marker")
        for args in (("up", p), ("down", p), ("rollback", p, "--to", "1")):
            r = deploy(sbox, *args)
            print(f"\n{args[0]} while locked: exit {r.rc} in {r.seconds:.2f} s: {r.stderr.strip()}")
            assert r.rc == 2
            assert f"locked by pid {pid} since" in r.stderr
            assert first.poll() is None  # refused at once, not after waiting for the lock
        sbox.run(["touch", gate], check=True)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0
    deploy(sbox, "down", p)


@pytest.mark.parametrize(
    ("sig", "at"),
    [
        (signal.SIGKILL, "started"),  # the process runs: nothing done yet
        (signal.SIGKILL, "marked"),  # the in-flight marker is written: a release recorded
        (signal.SIGKILL, "restart"),  # units installed, restarted, waiting for health
        (signal.SIGINT, "restart"),
    ],
)
def test_killed_up_leaves_whole_units_and_is_reported(
    sbox: Box, sig: signal.Signals, at: str
) -> None:
    """The signal lands at a point the test observes (the process, its in-flight marker's
    step), and the new server cannot become healthy before the test opens its gate, so the
    up is always interrupted, however slow the machine."""
    gate = f"/run/deploy-test/safe-crash-{sig.name}-{at}"  # visible to the sandboxed unit
    sbox.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && rm -f "$1"', "sh", gate], check=True)
    old = profile("safe-crash", port=31104, env={**FAST, "GEN": "old"})
    new = profile(
        "safe-crash-new",
        port=31104,
        env={**FAST, "STANDIN_READY_FILE": gate, "GEN": f"new-{sig.name}-{at}"},
        name_override="safe-crash",
    )
    assert deploy(sbox, "up", old).rc == 0
    want_old, want_new = rendered(old), rendered(new)
    proc = start_deploy(sbox, "up", new, pidfile="/run/safe-crash.pid")
    try:
        pid = box_pid(sbox, "/run/safe-crash.pid")
        if at == "marked":
            wait_for(lambda: inflight_step(sbox, "safe-crash") is not None, "the marker")
        elif at == "restart":
            wait_for(lambda: inflight_step(sbox, "safe-crash") == "restart", "the restart step")
        sbox.run(["kill", f"-{sig.name.removeprefix('SIG')}", str(pid)], check=True)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, "deploy up finished before the signal: the gate was open"
    files = {k: v for k, v in unit_files(sbox).items() if k.startswith("sglang-safe-crash")}
    for name, digest in files.items():
        assert digest in (want_old[name], want_new[name]), (
            f"{name} is neither the old nor the new unit"
        )
    marker = sbox.run(["cat", "/var/lib/deploy/safe-crash/inflight.json"]).stdout
    status = deploy(sbox, "status", "safe-crash")
    print(
        f"\n{sig.name} at {at}: marker={'yes' if marker else 'no'}; units {'new' if files == want_new else 'old' if files == want_old else 'mixed'}"
    )
    if at != "started":
        assert marker, "the marker of the interrupted up is gone"
    if marker:
        assert "INTERRUPTED" in status.stdout, status.stdout
        assert deploy(sbox, "history", "safe-crash", "--json").json()["interrupted"] is not None
    sbox.run(["touch", gate], check=True)  # the redo's server may become healthy now
    again = deploy(sbox, "up", new, "--json")
    assert again.rc == 0, again.stdout + again.stderr
    res = again.json()
    if marker:
        assert any(a.startswith("found an interrupted up") for a in res["actions"])
    assert "INTERRUPTED" not in deploy(sbox, "status", "safe-crash").stdout
    assert {
        k: v for k, v in unit_files(sbox).items() if k.startswith("sglang-safe-crash")
    } == want_new


SECRET_TOKEN = "hf_PLANTEDsecretTOKENabcdefghijklmnop"
SECRET_KEY = "sk-planted-api-key-0987654321zyx"


def test_secrets_never_printed(sbox: Box) -> None:
    env_file = "/etc/sglang/safe-secret.env"
    sbox.write_file(
        env_file, f"HF_TOKEN={SECRET_TOKEN}\nSGLANG_API_KEY={SECRET_KEY}\n", mode="0600"
    )
    p = profile(
        "safe-secret",
        port=31105,
        env=FAST,
        unit_extra={"environment_file": env_file, "api_key_env": "SGLANG_API_KEY"},
    )
    outputs = []
    for args in (
        ("validate", p, "--json"),
        ("render", p),
        ("up", p),
        ("up", p, "--force-restart", "--json"),
        ("status", "safe-secret"),
        ("status", "safe-secret", "--json"),
        ("logs", p),
        ("logs", p, "--json"),
        ("logs", p, "--classify", "--json"),
        ("history", p, "--json"),
    ):
        r = deploy(sbox, *args)
        assert r.rc in (0, 1), (args, r.stderr)
        outputs.append((args, r.stdout + r.stderr))
    # the server really got the key: SGLang logs it, and the journal has it ...
    journal = sbox.journal("sglang-safe-secret.service")
    assert SECRET_KEY in journal
    # ... but nothing deploy prints or writes carries it
    for args, out in outputs:
        assert SECRET_TOKEN not in out and SECRET_KEY not in out, (
            f"secret printed by deploy {' '.join(args)}"
        )
    for d in ("/etc/systemd/system", "/var/lib/deploy"):
        hits = sbox.run(["grep", "-rlF", "-e", SECRET_TOKEN, "-e", SECRET_KEY, d]).stdout
        assert hits == "", f"secret written to {hits}"
    sbox.run(["chmod", "0644", env_file], check=True)
    loose = deploy(sbox, "up", p, "--force-restart")
    assert loose.rc == 2 and "environment-file" in loose.stderr and "chmod 0600" in loose.stderr
    deploy(sbox, "down", p)


FAIL_TOKEN = "plantedHFtoken-without-prefix-9911"
FAIL_KEY = "sk-planted-healthy-key-5521"
FAIL_VALUE = "planted-value-0815x"


def test_secrets_never_printed_by_a_failed_start(sbox: Box) -> None:
    """A failed up and a failed rollback print the journal's evidence; the environment file's
    values appear in no output of up, rollback, logs, status or history, text or JSON."""
    env_file = "/etc/sglang/safe-failsecret.env"
    sbox.write_file(env_file, f"HF_TOKEN={FAIL_TOKEN}\nSGLANG_API_KEY={FAIL_KEY}\n", mode="0600")
    name = "safe-failsecret"
    p = profile(
        name,
        port=31106,
        env=FAST,
        unit_extra={"environment_file": env_file, "api_key_env": "SGLANG_API_KEY"},
    )
    outputs: list[tuple[tuple[str, ...], str]] = []

    def run(*args: str) -> None:
        r = deploy(sbox, *args)
        assert r.rc in (0, 1), (args, r.stdout, r.stderr)
        outputs.append((args, r.stdout + r.stderr))

    run("up", p)  # healthy, release 1: SGLang logs its ServerArgs, api_key included
    # A variable the server cannot parse: like SGLang with its SGLANG_* variables, the
    # stand-in dies on start-up with the value in the exception, the first line of evidence.
    sbox.write_file(
        env_file,
        f"HF_TOKEN={FAIL_TOKEN}\nSGLANG_API_KEY={FAIL_KEY}\n"
        f"STANDIN_PERF=1\nSTANDIN_PERF_ALPHA={FAIL_VALUE}\n",
        mode="0600",
    )
    for args in (
        ("up", p, "--force-restart"),
        ("up", p, "--force-restart", "--json"),
        ("rollback", p, "--to", "1"),
        ("rollback", p, "--to", "1", "--json"),
        ("status", name),
        ("status", name, "--json"),
        ("status", "--json"),
        ("logs", p),
        ("logs", p, "--json"),
        ("logs", p, "--classify"),
        ("logs", p, "--classify", "--json"),
        ("logs", name, "--classify", "--json"),  # a bare name: the installed unit's env file
        ("history", p),
        ("history", p, "--json"),
    ):
        run(*args)
    journal = sbox.journal("sglang-safe-failsecret.service")
    assert FAIL_KEY in journal and FAIL_VALUE in journal  # the secrets are there to leak
    said = dict(outputs)
    print("\nfailed up, as printed:\n" + said[("up", p, "--force-restart")].strip()[-700:])
    assert "could not convert string to float: '[redacted]'" in said[("up", p, "--force-restart")]
    assert "[redacted]" in said[("rollback", p, "--to", "1", "--json")]
    for args, out in outputs:
        for secret in (FAIL_TOKEN, FAIL_KEY, FAIL_VALUE):
            assert secret not in out, f"{secret} printed by deploy {' '.join(args)}"
    deploy(sbox, "down", p)
