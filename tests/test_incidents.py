"""Incidents and liveness without systemd: the kind of a stop, the store (atomic, bounded),
the journal entry, status and history fields, the rendered hook and watcher, the probe.
(Against the real systemd: tests/test_day2.py.)"""

from __future__ import annotations

import http.server
import json
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import profiles
from orchestrator.diagnosis.diagnose import classify_text
from orchestrator.errors import ProfileError
from orchestrator.systemd import exit_status, render
from orchestrator.watch import incidents, liveness, report
from orchestrator.watch.incidents import Incident
from orchestrator.watch.liveness import CANONICAL, Runner
from tests.helpers import write_profile

LOGS = Path(__file__).resolve().parent / "logs"


def _inc(kind: str = "crash", ended_us: int = 1_796_000_000_000_000, **kw: object) -> Incident:
    base: dict[str, object] = {
        "kind": kind,
        "deployment": "k",
        "unit": "sglang-k.service",
        "invocation_id": "0123456789abcdef0123456789abcdef",
        "when": incidents.iso(ended_us),
        "ended_us": ended_us,
        "recorded_us": 0,
        "uptime_before_s": 3725.4,
        "phase": "serving",
        "category": "cuda-illegal-access",
        "summary": "a CUDA kernel hit ...",
        "evidence": ["2026-12-02 14:31:07  torch.AcceleratorError: CUDA error: ..."],
        "fix": "update SGLang",
    }
    base.update(kw)
    return Incident(**base)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- kind


@pytest.mark.parametrize(
    ("result", "code", "status", "log", "kind"),
    [
        (
            "signal",
            "killed",
            "KILL",
            "runtime/illegal_memory_draft.log",
            "crash",
        ),  # SGLang's own SIGKILL
        ("signal", "killed", "KILL", "sigkill_only.log", "killed"),  # no error logged: from outside
        ("signal", "killed", "TERM", None, "killed"),
        ("signal", "killed", "ABRT", None, "crash"),
        ("core-dump", "dumped", "SEGV", None, "crash"),
        ("exit-code", "exited", "1", None, "crash"),
        ("success", "exited", "0", None, "exited"),
        ("oom-kill", "killed", "KILL", None, "oom-killed"),
        ("watchdog", "killed", "ABRT", None, "watchdog"),
        ("signal", "killed", "KILL", "host_oom_killed.log", "oom-killed"),
    ],
)
def test_kind_of(result: str, code: str, status: str, log: str | None, kind: str) -> None:
    diag = classify_text((LOGS / log).read_text()) if log else None
    assert incidents.kind_of(result, code, status, diag) == kind


def test_exit_status_for_the_classifier() -> None:
    assert exit_status.from_env("exited", "3") == "3"
    assert exit_status.from_env("killed", "KILL") == "9/KILL"
    assert exit_status.from_env("dumped", "ABRT") == "6/ABRT"
    assert exit_status.from_env(None, None) is None


def test_next_action() -> None:
    props = {"Restart": "on-failure", "RestartUSec": 30_000_000}
    assert incidents._next_action(props, "signal").startswith("systemd restarts it in 30 s")
    assert incidents._next_action(props, "success") == "stays stopped (Restart=on-failure)"
    assert incidents._next_action({}, "signal") == "stays stopped (Restart=no)"


# --------------------------------------------------------------------------- the store


def test_save_load_atomic_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incidents, "MAX_KEPT", 5)
    t0 = 1_796_000_000_000_000
    for i in range(8):
        long = ["x" * 5000] * 30
        incidents.save(tmp_path, _inc(ended_us=t0 + i * 1_000_000, evidence=long, last_lines=long))
    d = incidents.incidents_dir(tmp_path, "k")
    files = sorted(p.name for p in d.iterdir())
    assert len(files) == 5  # the oldest three were removed
    assert not any(f.startswith(".") for f in files)  # no temp files left
    assert all(p.stat().st_size < 40_000 for p in d.iterdir())  # bounded size
    assert oct((d / files[0]).stat().st_mode & 0o777) == "0o600"
    got = incidents.load(tmp_path, "k")
    assert [i.ended_us for i in got] == [t0 + i * 1_000_000 for i in range(3, 8)]
    assert len(got[0].evidence) == 8 and len(got[0].evidence[0]) == incidents.LINE_CHARS
    assert len(got[0].last_lines) == incidents.LAST_LINES
    assert got[-1].recorded_us > 0
    assert incidents.load(tmp_path, "k", limit=1)[0].ended_us == t0 + 7_000_000


def test_count_since_from_file_names(tmp_path: Path) -> None:
    now_us = int(time.time() * 1e6)
    incidents.save(tmp_path, _inc(ended_us=now_us - 90_000 * 1_000_000))  # 25 h ago
    incidents.save(tmp_path, _inc("hung", ended_us=now_us - 3_000 * 1_000_000))
    incidents.save(tmp_path, _inc("crash", ended_us=now_us - 60 * 1_000_000))
    assert incidents.count_since(tmp_path, "k", now_us - 86_400 * 1_000_000) == 2
    assert incidents.count_since(tmp_path, "k", now_us - 3_600 * 1_000_000, kind="hung") == 1
    assert incidents.count_since(tmp_path, "nobody", 0) == 0


def test_unreadable_files_are_skipped(tmp_path: Path) -> None:
    incidents.save(tmp_path, _inc())
    d = incidents.incidents_dir(tmp_path, "k")
    (d / "20270101T000000.000000Z-crash-broken.json").write_text("{not json")
    assert len(incidents.load(tmp_path, "k")) == 1


# --------------------------------------------------------------------------- journal


def _fields(payload: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(payload):
        nl = payload.index(b"\n", i)
        line = payload[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            out[k.decode()] = v.decode()
            i = nl + 1
        else:  # KEY\n<u64 le length><value>\n
            (n,) = struct.unpack("<Q", payload[nl + 1 : nl + 9])
            out[line.decode()] = payload[nl + 9 : nl + 9 + n].decode()
            i = nl + 9 + n + 1
    return out


def test_journal_entry_is_structured() -> None:
    inc = _inc(evidence=["line one", "line two"])
    f = _fields(incidents.journal_payload(inc))
    assert f["MESSAGE_ID"] == incidents.MESSAGE_ID and len(incidents.MESSAGE_ID) == 32
    assert f["DEPLOY_KIND"] == "crash" and f["DEPLOY_DEPLOYMENT"] == "k"
    assert f["DEPLOY_EVIDENCE"] == "line one\nline two"  # multi-line: the binary form
    assert f["MESSAGE"].startswith("deploy incident: sglang-k.service crash after 1h02m up")
    assert incidents.journal_send(inc, path="/nonexistent/socket") is False


# --------------------------------------------------------------------------- status, history


def test_status_fields(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    empty = report.status_fields(tmp_path, "k", unit_dir=units)
    assert empty == {
        "last_incident": None,
        "incidents_24h": 0,
        "liveness": {"enabled": False, "failures_in_a_row": 0, "last_probe": None},
    }
    now = time.time()
    incidents.save(tmp_path, _inc(ended_us=int((now - 10) * 1e6)))
    (units / "sglang-k-liveness.service").write_text("")
    probe = {
        "when": "2026-12-02T14:31:06.000+00:00",
        "ok": False,
        "status": 503,
        "detail": "503 Service Unavailable",
        "ms": 3.1,
    }
    (tmp_path / "k" / "liveness.json").write_text(
        json.dumps({"failures_in_a_row": 2, "last_probe": probe})
    )
    got = report.status_fields(tmp_path, "k", unit_dir=units, now=now)
    assert got["last_incident"] == {
        "kind": "crash",
        "category": "cuda-illegal-access",
        "when": incidents.iso(int((now - 10) * 1e6)),
        "uptime_before_s": 3725.4,
        "evidence": "2026-12-02 14:31:07  torch.AcceleratorError: CUDA error: ...",
        "fix": "update SGLang",
    }
    assert got["incidents_24h"] == 1
    assert got["liveness"] == {"enabled": True, "failures_in_a_row": 2, "last_probe": probe}
    text = "\n".join(report.status_lines(got))
    assert "incident: crash (cuda-illegal-access)" in text and "after 1h02m up" in text
    # The state file alone never says "watching": that takes systemd's view of the watcher
    # unit (status.status, liveness.judge).
    assert (
        "liveness: NOT WATCHING: systemd was not asked about its unit (earlier last probe" in text
    )
    assert report.status_fields(None, "k")["last_incident"] is None


def test_history_line_and_order() -> None:
    inc = _inc(action="systemd restarts it in 30 s (Restart=on-failure)")
    line = report.history_line(inc)
    assert line.startswith("   !  ") and "incident crash" in line and "cuda-illegal-access" in line
    assert report.history_sort_key("2026-11-29T14:00:00+00:00") < report.history_sort_key(inc.when)


# --------------------------------------------------------------------------- rendering


def test_rendered_recorder_and_watcher(tmp_path: Path) -> None:
    spec = profiles.load("kimi-k26-eagle3")
    files = render.render(
        spec, state_root=Path("/srv/state"), runner=Runner("/opt/d/bin/python", "/opt/d/src")
    )
    server = files[spec.unit_name]
    # No root hook inside the server's unit: nothing there runs as root with its environment.
    assert not any(ln.startswith("ExecStopPost=") for ln in server.splitlines())
    assert "Wants=sglang-kimi-k26-eagle3-incidents.service" in server.splitlines()
    assert "Wants=sglang-kimi-k26-eagle3-liveness.service" in server.splitlines()
    recorder = files["sglang-kimi-k26-eagle3-incidents.service"].splitlines()
    assert "Type=notify" in recorder
    assert "PartOf=sglang-kimi-k26-eagle3.service" in recorder
    assert "Before=sglang-kimi-k26-eagle3.service" in recorder
    assert "ReadWritePaths=-/srv/state" in recorder
    assert not any(ln.startswith(("Environment", "User=")) for ln in recorder)
    rec_exec = next(ln for ln in recorder if ln.startswith("ExecStart="))
    assert rec_exec == (
        "ExecStart=/opt/d/bin/python -I /opt/d/src/orchestrator/rootexec.py "
        "orchestrator.watch.incidents follow --state-dir /srv/state kimi-k26-eagle3"
    )
    watcher = files["sglang-kimi-k26-eagle3-liveness.service"]
    assert "PartOf=sglang-kimi-k26-eagle3.service" in watcher.splitlines()
    assert "ReadWritePaths=-/srv/state" in watcher.splitlines()
    exec_line = next(ln for ln in watcher.splitlines() if ln.startswith("ExecStart="))
    assert exec_line.endswith(
        "orchestrator.watch.liveness --state-dir /srv/state --url http://127.0.0.1:30000/health "
        "--interval 30 --failures 3 --timeout 20 --restarts-per-hour 3 kimi-k26-eagle3"
    )
    assert "# deploy-health-url" not in watcher  # never taken for a deployment by `status`
    assert "# deploy-health-url" not in "\n".join(recorder)


def test_recorder_reads_the_environment_file_for_secrets_only(tmp_path: Path) -> None:
    env = tmp_path / "s.env"
    p = write_profile(tmp_path, unit={"environment_file": str(env)})
    spec = profiles.load(str(p))
    files = render.render(spec, runner=CANONICAL)
    recorder = files[render.recorder_unit(spec.name)]
    assert f"--secrets-from {env} p" in recorder
    assert not any(ln.startswith("EnvironmentFile=") for ln in recorder.splitlines())
    assert f"EnvironmentFile={env}" in files[spec.unit_name]


def test_liveness_keys_and_off(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        health={
            "liveness_interval_s": 5,
            "liveness_failures": 4,
            "liveness_timeout_s": 2,
            "liveness_restarts_per_hour": 0,
        },
    )
    spec = profiles.load(str(p))
    watcher = render.render(spec, runner=CANONICAL)[liveness.watcher_unit(spec.name)]
    assert "--interval 5 --failures 4 --timeout 2 --restarts-per-hour 0" in watcher
    off = profiles.load(str(write_profile(tmp_path, name="off", health={"liveness": False})))
    files = render.render(off, runner=CANONICAL)
    assert liveness.watcher_unit(off.name) not in files
    assert "Wants=sglang-p-liveness" not in files[off.unit_name]
    assert "Wants=sglang-off-incidents.service" in files[off.unit_name]  # incidents stay on
    assert (
        "/usr/bin/python3 -I -m orchestrator.watch.incidents follow"
        in files["sglang-off-incidents.service"]
    )
    user = render.render(spec, user_mode=True, runner=CANONICAL)
    assert "--user p" in user[liveness.watcher_unit(spec.name)]
    assert "--user p\n" in user["sglang-p-incidents.service"]


@pytest.mark.parametrize(
    ("health", "field"),
    [
        ({"liveness_interval_s": 0}, "health.liveness_interval_s"),
        ({"liveness_failures": "3"}, "health.liveness_failures"),
        ({"liveness": "yes"}, "health.liveness"),
        ({"liveness_restarts_per_hour": -1}, "health.liveness_restarts_per_hour"),
        ({"liveness_intervall_s": 5}, "health.liveness_intervall_s"),
    ],
)
def test_bad_liveness_keys_are_refused(
    tmp_path: Path, health: dict[str, object], field: str
) -> None:
    with pytest.raises(ProfileError) as ei:
        profiles.load(str(write_profile(tmp_path, health=health)))
    assert ei.value.field == field
    assert "Fix:" in ei.value.paragraph()


def test_runner_pins_code_outside_site_packages() -> None:
    r = Runner.current()
    here = str(Path(liveness.__file__).resolve().parent.parent.parent)
    assert r.path in (None, here)
    if r.path:
        assert r.argv("m") == [r.python, "-I", f"{here}/orchestrator/rootexec.py", "m"]
    else:
        assert r.argv("m") == [r.python, "-I", "-m", "m"]
    assert CANONICAL.argv("m", "x") == ["/usr/bin/python3", "-I", "-m", "m", "x"]


# --------------------------------------------------------------------------- the probe


@pytest.fixture
def server() -> Iterator[tuple[int, dict[str, object]]]:
    state: dict[str, object] = {"code": 200, "hold": threading.Event()}

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if state["code"] == 0:
                state["hold"].wait(5)  # type: ignore[attr-defined]
            self.send_response(int(state["code"]) or 503)  # type: ignore[call-overload]
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1], state
    state["hold"].set()  # type: ignore[attr-defined]
    srv.shutdown()
    srv.server_close()


def test_probe(server: tuple[int, dict[str, object]]) -> None:
    port, state = server
    url = f"http://127.0.0.1:{port}/health"
    ok = liveness.probe(url, 2)
    assert ok.ok and ok.status == 200 and ok.detail == "200 OK"
    state["code"] = 503
    bad = liveness.probe(url, 2)
    assert not bad.ok and bad.status == 503
    state["code"] = 0  # never answers
    slow = liveness.probe(url, 0.3)
    assert not slow.ok and slow.status is None and slow.detail == "no answer in 0.3 s"
    assert set(slow.to_json()) == {"when", "ok", "status", "detail", "ms"}


def test_probe_refused() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = liveness.probe(f"http://127.0.0.1:{port}/health", 1)
    assert (got.ok, got.detail) == (False, "connection refused")


# --------------------------------------------------------------------------- the recorder

SVC = "org.freedesktop.systemd1.Service"
UNIT_IF = "org.freedesktop.systemd1.Unit"
INV = bytes.fromhex("0123456789abcdef0123456789abcdef")


def _follower() -> incidents.Follower:
    return incidents.Follower(
        {"ActiveState": "active", "Job": (0, "/"), "InvocationID": INV},
        {"ExecMainExitTimestamp": 0, "ExecMainStartTimestamp": 1_000_000},
    )


def test_follower_records_a_crash_with_no_job() -> None:
    f = _follower()
    ex = f.feed(
        SVC,
        {
            "ExecMainExitTimestamp": 5_000_000,
            "ExecMainCode": 2,
            "ExecMainStatus": 9,
            "Result": "signal",
        },
    )
    assert ex is not None and not ex.requested
    assert (ex.exit_code, ex.exit_status, ex.invocation) == ("killed", "KILL", INV.hex())
    assert (ex.start_us, ex.end_us) == (1_000_000, 5_000_000)
    f.feed(UNIT_IF, {"ActiveState": "deactivating"})
    assert not f.settled
    f.feed(SVC, {"Result": "oom-kill", "NRestarts": 1, "Restart": "on-failure"})
    f.feed(UNIT_IF, {"ActiveState": "activating", "SubState": "auto-restart"})
    assert f.settled
    f.settle(ex)
    assert ex.result == "oom-kill" and ex.props["NRestarts"] == 1
    # The same exit announced again (another property changed) is not a second one.
    assert f.feed(SVC, {"NRestarts": 1}) is None


def test_follower_tells_a_requested_stop_by_its_job() -> None:
    f = _follower()
    f.feed(UNIT_IF, {"ActiveState": "deactivating", "Job": (7, "/org/freedesktop/systemd1/job/7")})
    assert f.job_changed() == (7, "/org/freedesktop/systemd1/job/7")
    f.job_type = "stop"  # what the recorder asks systemd (JobType) for a new job
    ex = f.feed(SVC, {"ExecMainExitTimestamp": 9, "ExecMainCode": 2, "ExecMainStatus": 15})
    assert ex is not None and ex.requested and ex.job == "stop"
    # A start job (queued while stopped) never makes a later crash look requested.
    f.feed(UNIT_IF, {"Job": (8, "/org/freedesktop/systemd1/job/8")})
    assert f.job_changed() is not None
    f.job_type = "start"
    ex2 = f.feed(SVC, {"ExecMainExitTimestamp": 12, "ExecMainCode": 1, "ExecMainStatus": 1})
    assert ex2 is not None and not ex2.requested and ex2.exit_status == "1"


def test_exit_words_match_systemd() -> None:
    assert incidents.exit_words(1, 0) == ("exited", "0")
    assert incidents.exit_words(2, 6) == ("killed", "ABRT")
    assert incidents.exit_words(3, 11) == ("dumped", "SEGV")
    assert incidents.exit_words(0, 0) == (None, None)


def test_records_are_scrubbed_of_registered_secrets(tmp_path: Path) -> None:
    from orchestrator import redact

    secret = "sk-recorder-7f3a9c"
    env = tmp_path / "s.env"
    env.write_text(f'export_ok=1\nSGLANG_API_KEY="{secret}"\n')
    redact.register_file(str(env))
    inc = incidents.Incident(
        kind="crash",
        deployment="p",
        unit="sglang-p.service",
        invocation_id="ab" * 16,
        when="2026-12-01T00:00:00.000+00:00",
        ended_us=1_764_547_200_000_000,
        recorded_us=0,
        uptime_before_s=3.0,
        phase="serving",
        summary=f"launched with --api-key {secret}",
        evidence=[f"argv ... {secret}"],
    )
    path = incidents.save(tmp_path, inc)
    assert secret not in path.read_text()
    assert secret.encode() not in incidents.journal_payload(inc)


def test_follower_catches_an_end_it_did_not_see() -> None:
    """Started (or restarted) after the server died on its own: failed, or waiting for
    systemd's restart, with an exit on record: that end is reported once."""
    seen = incidents.Follower(
        {"ActiveState": "activating", "SubState": "auto-restart", "InvocationID": INV},
        {"ExecMainExitTimestamp": 7, "ExecMainCode": 2, "ExecMainStatus": 9},
    )
    missed = seen.ended_unseen()
    assert missed is not None and (missed.end_us, missed.exit_status, missed.job) == (
        7,
        "KILL",
        None,
    )
    calm = incidents.Follower(
        {"ActiveState": "inactive", "SubState": "dead", "InvocationID": INV},
        {"ExecMainExitTimestamp": 7, "ExecMainCode": 1, "ExecMainStatus": 0},
    )
    assert calm.ended_unseen() is None  # a stop someone asked for ends inactive


def test_recorded_matches_the_invocation(tmp_path: Path) -> None:
    assert not incidents.recorded(tmp_path, "p", "ab" * 16)
    d = incidents.incidents_dir(tmp_path, "p")
    d.mkdir(parents=True)
    (d / f"20261201T000000.000000Z-crash-{'ab' * 6}.json").write_text("{}")
    assert incidents.recorded(tmp_path, "p", "ab" * 16)


def test_a_full_disk_loses_the_file_never_the_journal_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21, item 8: on ENOSPC the record still reaches the journal (before, save raised
    first and journal_send never ran)."""
    sent: list[Incident] = []

    def full_disk(state_root: Path, inc: Incident) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(incidents, "save", full_disk)
    monkeypatch.setattr(incidents, "journal_send", lambda inc: sent.append(inc) or True)
    inc = _inc()
    incidents.store(tmp_path, inc)
    assert sent == [inc]
    assert "No space left on device" in capsys.readouterr().err
