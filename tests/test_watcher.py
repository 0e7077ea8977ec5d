"""The liveness watcher watched: its writes on a full disk, bounded HTTP bodies, the sandbox it
runs in (what it can see, how exposed it is), and what `status` and `up` say about it."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import profiles
from orchestrator.errors import InputError, PreflightRejected
from orchestrator.systemd import files, render, sandbox
from orchestrator.systemd.releases import DEFAULT_STATE_DIR
from orchestrator.watch import liveness
from orchestrator.watch.liveness import CANONICAL
from tests.box import Box
from tests.e2e import UNIT_DIR, deploy, prepare, profile, show, wait_for
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, checkpoint, write_profile


def _enospc(fd: int, data: bytes) -> int:
    """os.write on a full disk."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _cfg(root: Path) -> liveness.Config:
    return liveness.Config(
        name="k",
        state_root=root,
        url="http://127.0.0.1:1/health",
        interval_s=1,
        failures=2,
        timeout_s=1,
        restarts_per_hour=3,
    )


def test_watcher_state_on_a_full_disk_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _cfg(tmp_path)
    liveness._write_state(cfg, {"failures_in_a_row": 0})
    before = (tmp_path / "k" / "liveness.json").read_text()
    monkeypatch.setattr(os, "write", _enospc)
    for _ in range(3):  # three probes on a full disk
        liveness._write_state(cfg, {"failures_in_a_row": 1})
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["liveness.json"]
    assert (tmp_path / "k" / "liveness.json").read_text() == before  # the last good state
    out = capsys.readouterr().out
    assert out.count("No space left on device") == 1  # said once, not on every probe


def test_write_atomically_cleans_up_on_any_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.service").write_text("old a\n")
    # A full disk while writing: refused, nothing changed, no temp file.
    monkeypatch.setattr(os, "write", _enospc)
    with pytest.raises(files.InputError, match="No space left on device; nothing was changed"):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.service"]
    # An interrupt half-way (after the first temp file): no temp file either.
    real_fsync, calls = os.fsync, []

    def interrupted_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.service"]
    # A rename that fails: the temp files not yet renamed go too.
    real_replace = os.replace

    def failing_replace(src: str, dst: object) -> None:
        if str(dst).endswith("b.service"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        files.write_atomically({"a.service": "new a\n", "b.service": "b\n"}, tmp_path)
    monkeypatch.undo()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


# --------------------------------------------------------------------------- bounded bodies

HUGE = 64 << 20  # what the hostile server would send if the client kept reading


class Flood:
    """A loopback server whose every answer is 200 with a HUGE body (one endless line); it
    counts what it managed to send before the client hung up."""

    def __init__(self) -> None:
        import http.server
        import threading

        flood = self
        self.sent = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(HUGE))
                self.end_headers()
                block = b"x" * 65536
                try:
                    for _ in range(HUGE // len(block)):
                        self.wfile.write(block)
                        flood.sent += len(block)
                except OSError:  # the client stopped reading and closed: what a cap does
                    pass
                self.close_connection = True

            do_GET = do_POST = _answer

            def log_message(self, *a: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def flood() -> Iterator[Flood]:
    f = Flood()
    yield f
    f.close()


# The cap (1 MiB) plus what the kernel's loopback socket buffers hold: far below HUGE.
READ_BOUND = 16 << 20


def test_watcher_probe_reads_a_bounded_body(flood: Flood) -> None:
    p = liveness.probe(flood.url + "/health", 10)
    assert p.ok and "body cut at" in p.detail
    assert flood.sent < READ_BOUND


def test_status_reads_bounded_bodies(flood: Flood) -> None:
    from orchestrator import serverapi

    r = serverapi.get(flood.url + "/server_info", 10)
    assert (r.status, r.body, r.json()) == (200, None, None) and "not read" in r.words
    assert serverapi.server_facts(flood.url, 10) == {}
    assert flood.sent < READ_BOUND


def test_up_and_bench_read_bounded_bodies(flood: Flood) -> None:
    import asyncio

    from orchestrator.perf import bench
    from orchestrator.systemd.control import _healthy_now

    assert asyncio.run(_healthy_now(flood.url + "/health")) is False
    assert flood.sent < READ_BOUND

    async def one() -> bench.RequestResult:
        async with bench._client(1) as client:
            return await bench._one_request(client, flood.url, {}, time.monotonic)

    r = asyncio.run(one())
    assert not r.ok and "longer than" in r.error
    assert flood.sent < 2 * READ_BOUND
    with pytest.raises(InputError, match="not reachable"):
        asyncio.run(bench.server_facts(flood.url))
    assert flood.sent < 3 * READ_BOUND


# --------------------------------------------------------------------------- exposure

EXPOSURE_MAX = 2.5


def _analyze() -> str:
    exe = shutil.which("systemd-analyze")
    help_text = (
        subprocess.run([exe, "security", "--help"], capture_output=True, text=True).stdout
        if exe
        else ""
    )
    if "--offline" not in help_text:
        why = (
            "systemd-analyze is missing"
            if exe is None
            else "this systemd-analyze has no `security --offline` (systemd >= 250)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}: .ci/run must install systemd", pytrace=False)
        pytest.skip(why)
    assert exe is not None
    return exe


@pytest.mark.parametrize("builtin", [b.name for b in profiles.builtins()])
def test_every_rendered_unit_is_exposed_at_most_2_5(tmp_path: Path, builtin: str) -> None:
    """`systemd-analyze security --offline=yes` on every unit a built-in profile renders (as
    units/ shows them): the server, the checkpoint check, the incident recorder and the liveness
    watcher."""
    exe = _analyze()
    files = render.render(profiles.load(builtin), state_root=DEFAULT_STATE_DIR, runner=CANONICAL)
    unit = f"sglang-{builtin}"
    assert sorted(files) == sorted(
        f"{unit}{kind}.service" for kind in ("", "-check", "-incidents", "-liveness")
    )
    scores: dict[str, float] = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        proc = subprocess.run(
            [exe, "security", "--offline=yes", "--no-pager", str(tmp_path / name)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        m = re.search(rf"Overall exposure level for {re.escape(name)}: ([0-9.]+)", proc.stdout)
        assert m, proc.stdout[-2000:] + proc.stderr
        scores[name] = float(m.group(1))
    print(f"\nexposure: {scores}")
    assert all(s <= EXPOSURE_MAX for s in scores.values()), scores


# --------------------------------------------------------------------------- the sandbox


def _units(spec_name: str = "kimi-k26-eagle3") -> tuple[dict[str, str], str]:
    spec = profiles.load(spec_name)
    return render.render(
        spec, state_root=DEFAULT_STATE_DIR, runner=CANONICAL
    ), liveness.watcher_unit(spec.name)


def test_what_the_watcher_sandbox_hides_comes_from_its_unit() -> None:
    files, watcher = _units()
    text = files[watcher]
    assert {(h.path, h.directive) for h in sandbox.hidden(text)} == {
        ("/tmp", "PrivateTmp=yes"),
        ("/var/tmp", "PrivateTmp=yes"),
    }  # ProtectHome=read-only: /root and /home stay readable
    assert sandbox.invisible("/tmp/fresh-clone/orchestrator", text)
    assert sandbox.invisible("/tmpfoo/x", text) is None
    assert sandbox.invisible("/opt/deploy/orchestrator", text) is None
    # The same parser on other lines: ProtectHome=yes hides homes, InaccessiblePaths= its list.
    hard = text.replace("ProtectHome=read-only", "ProtectHome=yes\nInaccessiblePaths=-/srv/x")
    assert sandbox.invisible("/home/me/venv/bin/python", hard)
    assert sandbox.invisible("/srv/x/y", hard).directive == "InaccessiblePaths=-/srv/x"  # type: ignore[union-attr]
    # A user manager's watcher has no sandbox.
    spec = profiles.load("kimi-k26-eagle3")
    user_units = render.render(spec, user_mode=True, state_root=DEFAULT_STATE_DIR, runner=CANONICAL)
    assert sandbox.hidden(user_units[watcher]) == []


def test_an_installation_the_watcher_cannot_see_is_refused(tmp_path: Path) -> None:
    files, watcher = _units()
    clone = tmp_path / "fresh-clone"  # pytest's tmp_path is under /tmp
    with pytest.raises(PreflightRejected) as e:
        sandbox.check_watcher(files, watcher, "/usr/bin/python3", str(clone), DEFAULT_STATE_DIR)
    text = e.value.paragraph()
    assert e.value.exit_code == 2
    assert f"deploy's code {clone} is under /tmp" in text and "PrivateTmp=yes" in text
    assert "outside /tmp and /var/tmp" in text and "liveness = false" in text
    with pytest.raises(PreflightRejected, match="the state dir"):
        sandbox.check_watcher(files, watcher, "/usr/bin/python3", "/opt/deploy", tmp_path)
    sandbox.check_watcher(files, watcher, "/usr/bin/python3", "/opt/deploy", DEFAULT_STATE_DIR)
    sandbox.check_watcher(files, None, "/usr/bin/python3", str(clone), DEFAULT_STATE_DIR)


def test_up_refuses_before_any_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`deploy up` from a checkout under /tmp: exit 2, one paragraph, nothing written."""
    from typer.testing import CliRunner

    from orchestrator.cli import app

    monkeypatch.setattr(
        liveness.Runner,
        "current",
        classmethod(lambda cls: liveness.Runner("/usr/bin/python3", str(tmp_path / "clone"))),
    )
    prof = write_profile(
        tmp_path,
        server={
            "model_path": str(checkpoint(tmp_path / "base", KIMI_K26_CONFIG)),
            "speculative_draft_model_path": str(
                checkpoint(tmp_path / "draft", EAGLE3_DRAFTER_CONFIG)
            ),
            "port": 39_999,
        },
        unit={"python": sys.executable},
    )
    units, state = tmp_path / "units", Path("/var/lib/deploy-never-written")
    r = CliRunner().invoke(
        app,
        ["up", str(prof), "--unit-dir", str(units), "--state-dir", str(state), "--no-nvml"],
        catch_exceptions=False,
    )
    assert r.exit_code == 2, r.output
    print(r.output)
    assert "liveness watcher" in r.output and "Traceback" not in r.output
    assert not units.exists() and not state.exists()


# --------------------------------------------------------------------------- status of the watcher

NOW = 1_800_000_000_000_000
INV = "a" * 32


def _beat(**kw: object) -> dict[str, object]:
    probe = {"when": "2027-01-15T08:00:00+00:00", "ok": True, "status": 200, "detail": "200 OK"}
    return {
        "watcher_invocation": INV,
        "at_us": NOW - 5_000_000,
        "interval_s": 1,
        "timeout_s": 1,
        "server_running": True,
        "failures_in_a_row": 0,
        "last_probe": probe,
        **kw,
    }


def _judge(**kw: object) -> liveness.WatcherState:
    args: dict[str, object] = {
        "enabled": True,
        "load_state": "loaded",
        "active_state": "active",
        "sub_state": "running",
        "result": "success",
        "invocation": INV,
        "active_since_us": NOW - 600_000_000,
        "beat": _beat(),
        "now_us": NOW,
    }
    args.update(kw)
    return liveness.judge("k", **args)  # type: ignore[arg-type]


def test_watching_needs_an_active_unit_and_a_fresh_heartbeat_of_this_run() -> None:
    assert _judge().state == "watching"
    # Killed and masked: the heartbeat it left behind says nothing.
    masked = _judge(load_state="masked", active_state="inactive", sub_state="dead")
    assert masked.state == "masked" and "systemctl unmask" in masked.detail
    text = liveness.status_line(masked.to_json())
    assert "NOT WATCHING" in text and "watching," not in text
    # Failed (or failing and retried): the last line it wrote says why.
    failed = _judge(
        active_state="activating",
        sub_state="auto-restart",
        error_line="ModuleNotFoundError: No module named 'orchestrator'",
    )
    assert failed.state == "failed"
    assert "No module named 'orchestrator'" in liveness.status_line(failed.to_json())
    stopped = _judge(active_state="inactive", sub_state="dead")
    assert stopped.state == "stopped" and "systemctl start" in stopped.detail
    assert "as the server is" in _judge(active_state="inactive", server_active=False).detail
    # Active, but the heartbeat is another run's (a restarted watcher that cannot probe) or
    # old (a stuck one): not watching.
    assert _judge(beat=_beat(watcher_invocation="b" * 32)).state == "not-probing"
    stuck = _judge(beat=_beat(at_us=NOW - 120_000_000))
    assert stuck.state == "not-probing" and "120 s ago" in stuck.detail
    assert stuck.failures_in_a_row == 0 or stuck.state != "watching"
    # Just started, nothing written yet: starting, not watching.
    assert _judge(beat={}, active_since_us=NOW - 2_000_000).state == "starting"
    # Not root: the heartbeat cannot be read, so nothing is claimed about the probes.
    assert _judge(beat=None).state == "running"
    assert _judge(enabled=False).state == "off"
    assert liveness.status_line(_judge(enabled=False).to_json()) == "  liveness: off"


# --------------------------------------------------------------------------- in the box


@pytest.fixture(scope="module")
def wbox(box: Box) -> Box:
    prepare(box)
    return box


QUICK = {"liveness_interval_s": 1, "liveness_failures": 2, "liveness_timeout_s": 1}


def _live(box: Box, name: str) -> dict[str, Any]:
    r = deploy(box, "status", name, "--json")
    assert r.rc == 0, r.stdout + r.stderr
    (row,) = r.json()
    return dict(row["liveness"])


@pytest.mark.box
def test_the_watcher_is_watched(wbox: Box) -> None:
    """up confirms the first probe; a watcher killed and masked, or one that cannot import
    deploy, is never reported as watching, by status or by up."""
    name = "w-watched"
    watcher = liveness.watcher_unit(name)
    p = profile(name, port=31401, env={"STANDIN_READY_DELAY_S": "1.0"}, health=QUICK)
    up = deploy(wbox, "up", p, "--json")
    assert up.rc == 0, up.stdout + up.stderr
    res = up.json()
    assert res["watcher"]["state"] == "watching", res["watcher"]
    assert f"{watcher}: watching (first probe made)" in res["actions"]
    # Its first probe may have come while the server was still loading; the next ones pass.
    wait_for(lambda: bool(_live(wbox, name)["last_probe"]["ok"]), "a passing probe")
    assert _live(wbox, name)["state"] == "watching"
    assert "liveness: watching, 0 failure(s) in a row" in deploy(wbox, "status", name).stdout

    # Killed, then masked (`systemctl mask` refuses while the unit file is in /etc, so it is
    # moved aside first): status says so, whatever its last heartbeat said.
    assert wbox.systemctl("kill", "--signal=SIGKILL", watcher).returncode == 0
    path = f"{UNIT_DIR}/{watcher}"
    assert wbox.run(["mv", path, f"/root/{watcher}"]).returncode == 0
    assert wbox.systemctl("mask", watcher).returncode == 0
    assert show(wbox, watcher, "LoadState")["LoadState"] == "masked"
    live = _live(wbox, name)
    assert live["state"] == "masked", live
    text = deploy(wbox, "status", name).stdout
    print(f"\n{text}")
    assert "liveness: NOT WATCHING: masked" in text and "liveness: watching" not in text
    # up puts its unit file back in place of the mask (an atomic rename over the link) and
    # restarts: watched again.
    again = deploy(wbox, "up", p, "--json")
    assert again.rc == 0, again.stdout + again.stderr
    assert again.json()["watcher"]["state"] == "watching"

    # A watcher that cannot import deploy (what PrivateTmp= did to a clone under /tmp; here
    # its Python is told to see no path that has it): it fails at every start; status shows
    # its error line, up exits 1 and says so.
    dropin = f"/run/systemd/system/{watcher}.d/hide.conf"
    argv = f"{sys.executable} -I -S -m orchestrator.watch.liveness"
    wbox.write_file(dropin, f"[Service]\nExecStart=\nExecStart={argv} {name}\n")
    try:
        assert wbox.systemctl("daemon-reload").returncode == 0
        wbox.systemctl("restart", watcher)
        wait_for(lambda: _live(wbox, name)["state"] == "failed", "the watcher failed", 60)
        live = _live(wbox, name)
        print(f"\nfailed watcher: {live['detail']}")
        assert "orchestrator" in live["detail"], live  # ModuleNotFoundError: ... 'orchestrator'
        r = deploy(wbox, "up", p)
        print(r.stdout)
        assert r.rc == 1 and "BUT NOT WATCHED" in r.stdout and "orchestrator" in r.stdout
        rb = deploy(wbox, "rollback", p, "--to", "1", "--json")  # restarts both: same verdict
        assert rb.rc == 1 and rb.json()["outcome"] == "healthy", rb.stdout + rb.stderr
        assert rb.json()["watcher"]["state"] == "failed"
    finally:
        wbox.run(["rm", "-f", dropin])
        wbox.systemctl("daemon-reload")
    assert deploy(wbox, "down", name).rc == 0
