"""End to end, against a real systemd (PID 1) in the box, with the SGLang stand-in as the
server: up reaches healthy, the seed's flags fail fast with the diagnosis, a hang is cut at
the deadline, down stops it, and bad input changes nothing."""

from __future__ import annotations

import time

import pytest

from tests.box import Box
from tests.e2e import Lines, box_pid, deploy, prepare, profile, show, start_deploy, unit_files
from tests.helpers import say

pytestmark = pytest.mark.box

SEED = {"speculative_eagle_topk": 4, "speculative_num_draft_tokens": 3}


@pytest.fixture(scope="module")
def sbox(box: Box) -> Box:
    prepare(box)
    return box


def _crash_to_return_s(box: Box, unit: str, returned_at: float) -> float:
    exited = int(
        show(box, unit, "ExecMainExitTimestampMonotonic")["ExecMainExitTimestampMonotonic"]
    )
    assert exited > 0, "the unit's main process never exited"
    return returned_at - exited / 1e6


def test_up_healthy_then_status_then_down(sbox: Box) -> None:
    p = profile("e2e-good", port=31001, env={"STANDIN_READY_DELAY_S": "2.0"})
    r = deploy(sbox, "up", p)
    print(f"\nup (healthy after a 2.0 s stand-in start): {r.seconds:.2f} s wall")
    assert r.rc == 0, r.stdout + r.stderr
    assert "is healthy after" in r.stdout
    assert "loading weights" in r.stderr  # phases from the journal of this start
    s = deploy(sbox, "status", "e2e-good", "--json")
    assert s.rc == 0, s.stderr
    (row,) = s.json()
    assert (row["active_state"], row["sub_state"]) == ("active", "running")
    assert row["health"]["status"] == 200
    assert row["server"]["speculative_algorithm"] == "EAGLE3"
    assert row["server"]["tp_size"] == 8
    assert row["server"]["avg_spec_accept_length"] == pytest.approx(2.6)
    assert row["restarts"] == 0
    text = deploy(sbox, "status", "e2e-good")
    assert "active/running" in text.stdout and "healthy" in text.stdout
    print(f"status: {text.seconds:.2f} s wall\n{text.stdout}")
    d = deploy(sbox, "down", "e2e-good")
    assert d.rc == 0, d.stderr
    st = show(sbox, "sglang-e2e-good.service", "ActiveState", "UnitFileState")
    assert st == {"ActiveState": "inactive", "UnitFileState": "disabled"}
    assert "sglang-e2e-good.service" in unit_files(sbox)  # kept for the next up


def test_seed_flags_refused_by_preflight_nothing_written(sbox: Box) -> None:
    p = profile("e2e-seed-refused", port=31002, server=SEED, unset=["server.speculative_num_steps"])
    before = unit_files(sbox)
    r = deploy(sbox, "up", p)
    assert r.rc == 2, r.stdout + r.stderr
    assert "spec-params-need-num-steps" in r.stderr
    assert "set --speculative-num-steps (and keep the three consistent) or drop both" in r.stderr
    assert "Traceback" not in r.stderr
    assert unit_files(sbox) == before


def test_seed_flags_fail_fast_with_diagnosis(sbox: Box) -> None:
    p = profile("e2e-seed", port=31003, server=SEED, unset=["server.speculative_num_steps"])
    r = deploy(sbox, "up", p, "--no-preflight", "--json")
    returned = time.monotonic()
    assert r.rc == 1, r.stdout + r.stderr
    res = r.json()
    lag = _crash_to_return_s(sbox, "sglang-e2e-seed.service", returned)
    print(
        f"\nseed flags: up returned {lag:.2f} s after the crash (diagnosis took {res['diagnosed_in_s']} s); total {r.seconds:.2f} s"
    )
    assert lag < 3.0  # seen at once, not at a 15 s poll interval
    assert res["outcome"] == "failed"
    diag = res["diagnosis"]
    assert diag["category"] == "spec-params-need-num-steps"
    assert "--speculative-eagle-topk 4 and --speculative-num-draft-tokens 3" in diag["summary"]
    assert diag["fix"] == "set --speculative-num-steps (and keep the three consistent) or drop both"
    assert any("AssertionError" in e["message"] for e in diag["evidence"])
    # no crash loop: up stopped it
    assert show(sbox, "sglang-e2e-seed.service", "ActiveState")["ActiveState"] in (
        "inactive",
        "failed",
    )


def test_oom_is_diagnosed(sbox: Box) -> None:
    p = profile("e2e-oom", port=31004, env={"STANDIN_FAIL": "oom"})
    r = deploy(sbox, "up", p, "--json")
    assert r.rc == 1, r.stdout + r.stderr
    diag = r.json()["diagnosis"]
    print(f"\noom: {r.seconds:.2f} s; {diag['summary']}")
    assert diag["category"] == "cuda-oom"
    assert not any("sigquit" in e["message"].lower() for e in diag["evidence"][:1])


def test_hang_cut_at_deadline(sbox: Box) -> None:
    p = profile("e2e-hang", port=31005, env={"STANDIN_FAIL": "hang"})
    r = deploy(sbox, "up", p, "--timeout", "4", "--json")
    print(f"\nhang with --timeout 4: up returned after {r.seconds:.2f} s")
    assert r.rc == 1, r.stdout + r.stderr
    res = r.json()
    assert res["outcome"] == "timeout"
    assert 4.0 <= res["elapsed_s"] < 8.0
    assert res["diagnosis"]["category"] == "startup-timeout"
    assert show(sbox, "sglang-e2e-hang.service", "ActiveState")["ActiveState"] == "inactive"


def test_missing_checkpoint_fails_in_the_check_oneshot(sbox: Box) -> None:
    p = profile("e2e-nomodel", port=31006, server={"model_path": "/srv/deploy-test/models/absent"})
    r = deploy(sbox, "up", p, "--no-preflight", "--json")
    assert r.rc == 1, r.stdout + r.stderr
    res = r.json()
    print(f"\nmissing checkpoint: {r.seconds:.2f} s; {res['detail']}")
    assert res["diagnosis"]["category"] == "model-not-found"
    # the server never ran, so `up` does not wait for a crash record (10 s bound) that the
    # incident recorder, which follows the server unit only, will never write
    assert res["elapsed_s"] < 8.0, res["elapsed_s"]
    assert "/srv/deploy-test/models/absent" in res["diagnosis"]["summary"] + " ".join(
        e["message"] for e in res["diagnosis"]["evidence"]
    )
    # the check said which check failed in its exit status (the model's base, 10: no
    # directory), which names the cause when its stderr line misses the journal of its start
    check = show(sbox, "sglang-e2e-nomodel-check.service", "ExecMainStatus", "Result")
    assert check == {"ExecMainStatus": "10", "Result": "exit-code"}, check


def test_missing_checkpoint_refused_by_preflight_on_box(sbox: Box) -> None:
    p = profile("e2e-nomodel2", port=31007, server={"model_path": "/srv/deploy-test/models/absent"})
    r = deploy(sbox, "up", p)
    assert r.rc == 2
    assert "model-path-missing" in r.stderr


def test_unreachable_systemd_is_exit_2_and_writes_nothing(sbox: Box) -> None:
    p = profile("e2e-nobus", port=31008)
    before = unit_files(sbox)
    r = deploy(sbox, "up", p, env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"})
    assert r.rc == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "system bus" in r.stderr.lower() or "systemd" in r.stderr.lower()
    assert unit_files(sbox) == before


def test_logs_and_classify_from_the_journal(sbox: Box) -> None:
    p = profile("e2e-logs", port=31009, server=SEED, unset=["server.speculative_num_steps"])
    up = deploy(sbox, "up", p, "--no-preflight", "--json")
    assert up.rc == 1
    inv = up.json()["invocation_id"]
    logs = deploy(sbox, "logs", p)
    assert logs.rc == 0, logs.stderr
    assert "AssertionError" in logs.stdout
    assert "sglang-e2e-logs.service: Failed with result 'exit-code'" in logs.stdout  # PID 1's line
    first = logs.stdout.splitlines()[0]
    assert " sglang-e2e-logs[" in first or " systemd[" in first  # journalctl -o short's shape
    tail = deploy(sbox, "logs", p, "-n", "2")
    assert len(tail.stdout.splitlines()) == 2
    one = deploy(sbox, "logs", p, "--invocation", inv, "--json")
    assert one.rc == 0 and all(f'"{inv}"' in line for line in one.stdout.splitlines())
    c = deploy(sbox, "logs", p, "--classify", "--json")
    assert c.rc == 0, c.stderr
    diag = c.json()
    assert diag["category"] == "spec-params-need-num-steps"
    assert diag["fix"] == "set --speculative-num-steps (and keep the three consistent) or drop both"
    text = deploy(sbox, "logs", p, "--classify")
    assert text.stdout.startswith("cause: spec-params-need-num-steps")
    saved = sbox.run(["journalctl", "-u", "sglang-e2e-logs.service", "-o", "json"]).stdout
    from_file = deploy(sbox, "logs", "--classify", "--input", "-", "--json", stdin=saved)
    assert from_file.json()["category"] == "spec-params-need-num-steps"


USER_ENV = {
    "XDG_RUNTIME_DIR": "/run/user/0",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
}


def test_user_manager(sbox: Box) -> None:
    """--user: the same up/status/down against root's user manager (systemd --user)."""
    assert sbox.start_user_manager()
    home = {"working_directory": "/root"}  # /var/lib/sglang is the system unit's StateDirectory
    p = profile("e2e-user", port=31010, env={"STANDIN_READY_DELAY_S": "1.0"}, unit_extra=home)
    r = deploy(sbox, "up", p, "--user", "--json", env=USER_ENV)
    assert r.rc == 0, r.stdout + r.stderr
    unit_file = sbox.run(["cat", "/root/.config/systemd/user/sglang-e2e-user.service"]).stdout
    assert "\nUser=" not in unit_file and "WantedBy=default.target" in unit_file
    s = deploy(sbox, "status", "e2e-user", "--user", "--json", env=USER_ENV)
    (row,) = s.json()
    assert (row["active_state"], row["health"]["status"]) == ("active", 200)
    seed = profile(
        "e2e-user-seed",
        port=31011,
        server=SEED,
        unset=["server.speculative_num_steps"],
        unit_extra=home,
    )
    f = deploy(sbox, "up", seed, "--user", "--no-preflight", "--json", env=USER_ENV)
    assert f.rc == 1 and f.json()["diagnosis"]["category"] == "spec-params-need-num-steps"
    d = deploy(sbox, "down", "e2e-user", "--user", env=USER_ENV)
    assert d.rc == 0, d.stderr
    assert (
        sbox.run(
            ["systemctl", "--user", "is-active", "sglang-e2e-user.service"], env=USER_ENV
        ).stdout.strip()
        == "inactive"
    )


def test_logs_follow(sbox: Box) -> None:
    """--follow prints the last lines, then new ones as they come, until interrupted. Each step
    waits for what the previous one printed, never for a time."""
    p = profile("e2e-follow", port=31012, env={"STANDIN_READY_DELAY_S": "1.0"})
    assert deploy(sbox, "up", p).rc == 0
    proc = start_deploy(sbox, "logs", p, "--follow", pidfile="/run/e2e-follow.pid")
    out = Lines(proc.stdout)
    try:
        pid = box_pid(sbox, "/run/e2e-follow.pid")
        out.wait_for(say("ms-ready"), "the last lines of the journal")  # journalctl -f runs
        assert deploy(sbox, "down", p).rc == 0  # new lines: the shutdown, PID 1's "Stopped"
        out.wait_for("Stopped sglang-e2e-follow.service", "a line written after the follow began")
        sbox.run(["kill", "-INT", str(pid)])
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out.text()
