"""Safe on a production box (against the real systemd in the box): idempotent up, releases
and rollback, one deploy at a time, crash safety, a hardened unit, and secrets that never
show up in any output."""

from __future__ import annotations

import re
import signal
import time

import pytest

from tests.box import Box
from tests.e2e import box_pid, deploy, prepare, profile, rendered, show, start_deploy, unit_files

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
    p = profile("safe-lock", port=31103, env={"STANDIN_FAIL": "hang"})
    first = start_deploy(
        sbox, "up", p, "--timeout", "6", "--no-rollback", pidfile="/run/safe-lock.pid"
    )
    try:
        pid = box_pid(sbox, "/run/safe-lock.pid")
        deadline = time.monotonic() + 10
        while "step" not in sbox.run(["cat", "/var/lib/deploy/safe-lock/inflight.json"]).stdout:
            assert time.monotonic() < deadline, "the first up never started"
            time.sleep(0.05)
        for args in (("up", p), ("down", p), ("rollback", p, "--to", "1")):
            r = deploy(sbox, *args)
            print(f"\n{args[0]} while locked: exit {r.rc} in {r.seconds:.2f} s: {r.stderr.strip()}")
            assert r.rc == 2
            assert f"locked by pid {pid} since" in r.stderr
            assert r.seconds < 3.0
    finally:
        first.wait(timeout=30)
    assert first.returncode == 1


@pytest.mark.parametrize(
    ("sig", "after_s"),
    [(signal.SIGKILL, 0.4), (signal.SIGKILL, 1.2), (signal.SIGKILL, 2.5), (signal.SIGINT, 1.5)],
)
def test_killed_up_leaves_whole_units_and_is_reported(
    sbox: Box, sig: signal.Signals, after_s: float
) -> None:
    old = profile("safe-crash", port=31104, env={**FAST, "GEN": "old"})
    new = profile(
        "safe-crash-new",
        port=31104,
        env={"STANDIN_READY_DELAY_S": "3.0", "GEN": f"new-{sig.name}-{after_s}"},
        name_override="safe-crash",
    )
    assert deploy(sbox, "up", old).rc == 0
    want_old, want_new = rendered(old), rendered(new)
    proc = start_deploy(sbox, "up", new, pidfile="/run/safe-crash.pid")
    pid = box_pid(sbox, "/run/safe-crash.pid")
    time.sleep(after_s)
    sbox.run(["kill", f"-{sig.name.removeprefix('SIG')}", str(pid)])
    proc.wait(timeout=30)
    assert proc.returncode != 0, (
        "deploy up finished before the signal: the test did not interrupt it"
    )
    files = {k: v for k, v in unit_files(sbox).items() if k.startswith("sglang-safe-crash")}
    for name, digest in files.items():
        assert digest in (want_old[name], want_new[name]), (
            f"{name} is neither the old nor the new unit"
        )
    marker = sbox.run(["cat", "/var/lib/deploy/safe-crash/inflight.json"]).stdout
    status = deploy(sbox, "status", "safe-crash")
    print(
        f"\n{sig.name} after {after_s} s: marker={'yes' if marker else 'no'}; units {'new' if files == want_new else 'old' if files == want_old else 'mixed'}"
    )
    if marker:
        assert "INTERRUPTED" in status.stdout, status.stdout
        assert deploy(sbox, "history", "safe-crash", "--json").json()["interrupted"] is not None
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
