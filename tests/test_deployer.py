"""deployer's plain-data pieces, without systemd: what a release records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import profiles
from orchestrator.systemd import control as deployer


def test_the_applied_spec_is_recorded_as_plain_json() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    data = deployer._spec_json(spec)
    assert json.loads(json.dumps(data)) == data
    assert data["name"] == "kimi-k26-eagle3"
    assert data["server"]["speculative_algorithm"] == "EAGLE3"
    assert data["sglang"]["version"] == spec.sglang.version
    assert data["unit"]["python"] == spec.unit.python


def test_results_keep_the_json_shapes() -> None:
    """One result dataclass per command; to_json() gives the shapes the CLI always printed."""
    from orchestrator.systemd.control import DownResult, RollbackResult, UpResult
    from orchestrator.systemd.releases import ReleaseRecord
    from orchestrator.systemd.status import DeploymentStatus, Health, StatusResult

    rb = RollbackResult(1, 3, "healthy", "ok", "ab" * 16, ["x.service"], ["restart x: job done"])
    assert list(rb.to_json()) == [
        "to_release",
        "as_release",
        "outcome",
        "detail",
        "invocation_id",
        "installed",
        "actions",
        "diagnosis",
        "watcher",
    ]
    assert rb.exit_code == 0 and rb.to_json()["diagnosis"] is None
    up = UpResult("p", "sglang-p.service", "failed", 1.0, rollback=rb)
    assert up.to_json()["rollback"] == rb.to_json() and up.exit_code == 1
    json.dumps(up.to_json())
    rel = ReleaseRecord(2, "2026-01-01T00:00:00+00:00", "built-in", "d" * 16, outcome="healthy")
    row = DeploymentStatus(
        profile="p",
        unit="sglang-p.service",
        active_state="active",
        sub_state="running",
        result="success",
        since_us=1,
        for_s=2.0,
        restarts=0,
        main_pid=7,
        invocation_id="ab" * 16,
        health_url="http://127.0.0.1:30000/health",
        health=Health(200, "healthy"),
        server={"tp_size": 8},
        release=rel,
    )
    out = StatusResult(Path("/etc/systemd/system"), None, [row]).to_json()
    assert out == [
        {
            "profile": "p",
            "unit": "sglang-p.service",
            "active_state": "active",
            "sub_state": "running",
            "result": "success",
            "since_us": 1,
            "for_s": 2.0,
            "restarts": 0,
            "main_pid": 7,
            "invocation_id": "ab" * 16,
            "health_url": "http://127.0.0.1:30000/health",
            "health": {"status": 200, "detail": "healthy"},
            "server": {"tp_size": 8},
            "release": {"number": 2, "outcome": "healthy", "created": rel.created},
            "interrupted": None,
            "last_incident": None,
            "incidents_24h": 0,
            "liveness": {},
        }
    ]
    assert DownResult("p", "sglang-p.service", ["stop"]).to_json() == {
        "profile": "p",
        "unit": "sglang-p.service",
        "actions": ["stop"],
    }


def test_history_result_from_a_real_store(tmp_path: Path) -> None:
    from orchestrator.systemd.releases import Store, history

    store = Store(tmp_path, "p")
    rel = store.record({"sglang-p.service": "[Service]\n"}, {"name": "p"}, "built-in")
    store.finish(rel, "healthy")
    res = history(tmp_path, "p")
    assert [r.number for r in res.releases] == [1] and res.dir == tmp_path / "p"
    data = res.to_json()
    assert list(data) == ["profile", "releases", "incidents", "interrupted"]
    assert data["releases"][0]["outcome"] == "healthy" and "units" not in data["releases"][0]
    assert history(tmp_path, "absent").releases == []


class _Clock:
    """control's clock in a test: sleeping advances it, so a bound is counted, not timed."""

    now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_an_unknown_start_waits_for_the_rest_of_its_journal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a loaded box PID 1's exit lines can reach the journal before the process's own last
    stderr line (the check oneshot's "deploy-check: ... does not exist"), and journald 252's
    sync does not drain the stream: a start classified `unknown` reads its journal again after
    a sync until a line of the process is in and nothing new came for three reads, bounded."""
    from orchestrator.diagnosis import journal

    inv = "5b0c4a3f2e1d4c7b8a9f0e1d2c3b4a59"
    unit = "sglang-e2e-check.service"

    def line(ts: int, msg: str, pid: str, **kw: str) -> str:
        return json.dumps(
            {"__REALTIME_TIMESTAMP": str(ts), "_PID": pid, "MESSAGE": msg, "PRIORITY": "3", **kw}
        )

    exited = line(
        1,
        f"{unit}: Main process exited, code=exited, status=1/FAILURE",
        "1",
        UNIT=unit,
        INVOCATION_ID=inv,
        SYSLOG_IDENTIFIER="systemd",
    )
    failed = line(
        2,
        f"{unit}: Failed with result 'exit-code'.",
        "1",
        UNIT=unit,
        INVOCATION_ID=inv,
        SYSLOG_IDENTIFIER="systemd",
    )
    late = line(
        0,
        "deploy-check: model directory /srv/models/absent does not exist",
        "4242",
        _SYSTEMD_UNIT=unit,
        _SYSTEMD_INVOCATION_ID=inv,
        SYSLOG_IDENTIFIER="deploy-check",
    )
    said = line(
        0,
        "deploy-check: starting",
        "4242",
        _SYSTEMD_UNIT=unit,
        _SYSTEMD_INVOCATION_ID=inv,
        SYSLOG_IDENTIFIER="deploy-check",
    )
    reads: list[list[str]] = []
    calls: list[int] = []

    def fake_read(
        u: str, *, user: bool = False, invocation: str | None = None, **kw: object
    ) -> journal.JournalLines:
        calls.append(1)
        text = reads[min(len(calls) - 1, len(reads) - 1)]
        return journal.JournalLines("\n".join(text) + "\n")

    unclaimed: list[tuple[int, str]] = []
    since: list[int] = []

    def fake_unclaimed(u: str, *, user: bool, since_us: int) -> list[tuple[int, str]]:
        since.append(since_us)
        return list(unclaimed)

    monkeypatch.setattr(deployer.journal, "read", fake_read)
    monkeypatch.setattr(deployer, "_unclaimed", fake_unclaimed)
    monkeypatch.setattr(deployer, "_sync_journal", lambda: None)
    spec = profiles.load("kimi-k26-eagle3")

    clock = _Clock()

    def diagnose() -> str:
        calls.clear()
        clock.now = 0.0
        monkeypatch.setattr(deployer, "time", clock)
        d = deployer.diagnose_start(
            spec,
            unit,
            inv,
            user=False,
            systemd_result="exit-code",
            exit_status="1",
            timed_out=False,
        )
        return d.category

    # the process's line comes after PID 1's lines and after reads that found nothing new
    reads[:] = [[exited, failed]] * 4 + [[exited, failed, late]]
    assert diagnose() == "model-not-found"
    assert len(calls) == 5

    # the process was heard and nothing more comes: unknown after three quiet reads
    reads[:] = [[said, exited, failed]]
    assert diagnose() == "unknown" and len(calls) == 4

    # nothing of the process ever comes: unknown once the bound is waited out
    reads[:] = [[exited, failed]]
    assert diagnose() == "unknown"
    assert clock.now >= deployer._SETTLE_S and len(calls) > 3 + 1

    # the process was gone before journald read its line, which is logged without the
    # invocation id: it is found among the unit's lines since the start began
    orphan = line(
        3,
        "deploy-check: model directory /srv/models/absent does not exist",
        "4243",
        _SYSTEMD_UNIT=unit,
        SYSLOG_IDENTIFIER="deploy-check",
    )
    reads[:] = [[exited, failed]]
    unclaimed[:] = [(3, orphan)]
    since.clear()
    assert diagnose() == "model-not-found"
    assert since and set(since) == {1}  # from the first line of that start on


def test_a_failed_check_is_named_from_its_exit_status_when_its_line_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check oneshot's stderr line can miss the journal of its start (journald reads the
    stream of a process that lived for a millisecond after PID 1's exit lines, or too late to
    learn the invocation id); its exit status says which check failed for which role, so the
    start is still model-not-found, with the path, and the rebuilt line says it is rebuilt."""
    import asyncio

    from orchestrator.diagnosis import journal
    from orchestrator.systemd.install import UnitState

    spec = profiles.load("kimi-k26-eagle3")
    inv = "6c1d5b4a3f2e4d8c9b0a1f2e3d4c5b6a"
    unit = spec.check_unit_name
    pid1 = [
        json.dumps(
            {
                "__REALTIME_TIMESTAMP": str(i + 1),
                "_PID": "1",
                "MESSAGE": msg,
                "UNIT": unit,
                "INVOCATION_ID": inv,
                "SYSLOG_IDENTIFIER": "systemd",
            }
        )
        for i, msg in enumerate(
            (
                f"{unit}: Main process exited, code=exited, status=21/n/a",
                f"{unit}: Failed with result 'exit-code'.",
            )
        )
    ]
    monkeypatch.setattr(
        deployer.journal, "read", lambda *a, **k: journal.JournalLines("\n".join(pid1) + "\n")
    )
    monkeypatch.setattr(deployer, "_sync_journal", lambda: None)

    monkeypatch.setattr(deployer, "time", _Clock())

    def state(name: str, status: int) -> UnitState:
        return UnitState(
            name, "loaded", "failed", "failed", "exit-code", 1, status, 0, inv, 0, 0, 0, ""
        )

    class Sd:
        status = 21

        async def state(self, name: str) -> UnitState:
            return state(name, self.status)

    drafter = spec.server["speculative_draft_model_path"]
    start = asyncio.run(
        deployer._failed_before_start(spec, Sd(), "dependency", state(spec.unit_name, 0), False)  # type: ignore[arg-type]
    )
    assert start.diagnosis is not None
    assert start.diagnosis.category == "model-not-found"
    first = start.diagnosis.evidence[0].message
    assert first.startswith(
        f"deploy-check: drafter {drafter}/config.json is missing or not readable"
    )
    assert "rebuilt from" in first and "exit status 21" in first

    # a status the check does not use (a shell that could not run) stays what the journal says
    sd = Sd()
    sd.status = 127
    start = asyncio.run(
        deployer._failed_before_start(spec, sd, "dependency", state(spec.unit_name, 0), False)  # type: ignore[arg-type]
    )
    assert start.diagnosis is not None and start.diagnosis.category != "model-not-found"


def test_unclaimed_lines_are_the_units_own_without_an_invocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_unclaimed keeps the unit's process lines with no invocation id logged since the start
    began, and drops PID 1's lines, lines of a start and older lines; _with_unclaimed puts them
    in by time."""
    from orchestrator.diagnosis import journal

    def line(ts: int, msg: str, **kw: str) -> str:
        return json.dumps({"__REALTIME_TIMESTAMP": str(ts), "MESSAGE": msg, **kw})

    out = "\n".join(
        [
            line(5_000_000, "older, no id", _PID="7"),
            line(9_000_000, "Main process exited", _PID="1", INVOCATION_ID="ab" * 16),
            line(9_500_000, "claimed", _PID="8", _SYSTEMD_INVOCATION_ID="ab" * 16),
            line(9_600_000, "systemd, no id", _PID="2", SYSLOG_IDENTIFIER="systemd"),
            line(9_700_000, "orphan", _PID="9"),
        ]
    )
    asked: list[dict[str, object]] = []

    def fake_read(unit: str, **kw: object) -> journal.JournalLines:
        asked.append(kw)
        return journal.JournalLines(out + "\n")

    monkeypatch.setattr(deployer.journal, "read", fake_read)
    got = deployer._unclaimed("u.service", user=False, since_us=9_000_000)
    assert [(t, json.loads(g)["MESSAGE"]) for t, g in got] == [(9_700_000, "orphan")]
    assert asked[0]["since"] == "@9" and "invocation" not in asked[0]
    start = journal.JournalLines(
        "\n".join([line(9_000_000, "Main process exited", _PID="1"), line(9_800_000, "later")])
    )
    merged = deployer._with_unclaimed(start, got)
    assert [e.message for e in merged] == ["Main process exited", "orphan", "later"]
    assert deployer._with_unclaimed(start, []) is start
