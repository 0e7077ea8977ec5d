"""Hostile and malformed profiles thrown at every command: a clear one-paragraph error,
exit status 2, no traceback, and nothing changed in the unit and state dirs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app

HOSTILE = {
    "newline-in-value": 'extends = "kimi-k26-eagle3"\n[server]\nserved_model_name = "k\\nExecStartPre=/bin/sh -c id"\n',
    "newline-in-env": 'extends = "kimi-k26-eagle3"\n[unit.environment]\nX = "a\\n[Service]"\n',
    "control-char": 'extends = "kimi-k26-eagle3"\ndescription = "bell\\u0007"\n',
    "malformed-toml": 'extends = "kimi-k26-eagle3"\n[server\nport = 1\n',
    "unknown-key": 'extends = "kimi-k26-eagle3"\n[server]\nspeculative_num_step = 3\n',
    "wrong-type": 'extends = "kimi-k26-eagle3"\n[server]\ntp_size = "eight"\n',
    "absurd-number": 'extends = "kimi-k26-eagle3"\n[server]\ntp_size = 100000000000\n',
    "negative-timeout": 'extends = "kimi-k26-eagle3"\n[health]\nstartup_timeout_s = -5\n',
    "extends-itself": 'extends = "hostile.toml"\n',
    "extends-missing": 'extends = "no-such-profile"\n',
    "secret-in-env": 'extends = "kimi-k26-eagle3"\n[unit.environment]\nHF_TOKEN = "hf_abcdefghijklmnopqrstuvwxyz"\n',
    "api-key-in-args": 'extends = "kimi-k26-eagle3"\n[server]\napi_key = "sk-123456"\n',
    "bad-user": 'extends = "kimi-k26-eagle3"\n[unit]\nuser = "x y"\n',
    "relative-python": 'extends = "kimi-k26-eagle3"\n[unit]\npython = "bin/python"\n',
    "seed-config": 'extends = "kimi-k26-eagle3"\nunset = ["server.speculative_num_steps"]\n[server]\nspeculative_eagle_topk = 4\nspeculative_num_draft_tokens = 3\n',
    "not-utf8": b'extends = "kimi-k26-eagle3"\ndescription = "\xff\xfe"\n',
    # Paths that would inject into list directives (issue 21, item 3).
    "workdir-space": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/var/lib/sglang deploy"\n',
    "workdir-state-dir": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/var/lib/deploy"\n',
    "workdir-in-state-dir": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/var/lib/deploy/x"\n',
    "workdir-var-lib": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/var/lib"\n',
    "workdir-etc": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/etc/sglang"\n',
    "workdir-two-paths": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/srv/sg /etc"\n',
    "workdir-dotdot": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/var/lib/sglang/../deploy"\n',
    "workdir-quote": 'extends = "kimi-k26-eagle3"\n[unit]\nworking_directory = "/srv/\\"sg\\""\n',
    "envfile-backslash": 'extends = "kimi-k26-eagle3"\n[unit]\nenvironment_file = "/etc/sglang/env\\\\"\n',
    "health-path-backslash": 'extends = "kimi-k26-eagle3"\n[health]\npath = "/health\\\\"\n',
    "url-credentials": 'extends = "kimi-k26-eagle3"\n[unit.environment]\nHTTPS_PROXY = "http://bob:hunter2@proxy:3128"\n',
    "huge-description": 'extends = "kimi-k26-eagle3"\ndescription = "' + "d" * 300_000 + '"\n',
    "deep-nesting": 'extends = "kimi-k26-eagle3"\n[server]\nx = ' + "[" * 5000 + "]" * 5000 + "\n",
    "c1-control": 'extends = "kimi-k26-eagle3"\ndescription = "csi\u009b31m"\n',
}

# %-specifiers and paths with spaces are not errors: they are escaped (see test_render.py).
COMMANDS = [
    ["validate", "{p}"],
    ["validate", "{p}", "--json"],
    ["render", "{p}", "--out", "{units}"],
    ["render", "{p}", "--diff", "--unit-dir", "{units}"],
    ["up", "{p}", "--unit-dir", "{units}", "--state-dir", "{state}"],
    ["up", "{p}", "--unit-dir", "{units}", "--state-dir", "{state}", "--json"],
    ["rollback", "{p}", "--unit-dir", "{units}", "--state-dir", "{state}"],
    ["history", "{p}", "--state-dir", "{state}"],
    ["logs", "{p}", "--classify"],
    ["down", "{p}", "--state-dir", "{state}"],
    ["status", "{p}", "--unit-dir", "{units}", "--state-dir", "{state}"],
    ["export", "k8s", "{p}", "--out", "{units}"],
]


def _tree(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def _run(args: list[str]) -> Ran:
    """In-process (fast); an exception escaping the CLI fails the test, as a traceback would."""
    r = CliRunner().invoke(app, args, catch_exceptions=False, env={"DEPLOY_STATE_DIR": None})
    return Ran(r.exit_code, r.stdout, r.stderr)


def test_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    prof = tmp_path / "hostile.toml"
    prof.write_text(HOSTILE["newline-in-value"])
    env = {k: v for k, v in os.environ.items() if k != "DEPLOY_STATE_DIR"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "up",
            str(prof),
            "--state-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("deploy: server.served_model_name contains a newline")


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_profile_every_command(tmp_path: Path, case: str) -> None:
    prof = tmp_path / "hostile.toml"
    body = HOSTILE[case]
    prof.write_bytes(body if isinstance(body, bytes) else body.encode())
    units, state = tmp_path / "units", tmp_path / "state"
    units.mkdir()
    state.mkdir()
    (units / "sglang-hostile.service").write_text("# an operator's existing unit\n")
    before = (_tree(units), _tree(state))
    for template in COMMANDS:
        args = [a.format(p=prof, units=units, state=state) for a in template]
        if case == "seed-config" and args[0] not in ("validate", "up", "export"):
            continue  # a valid profile: only preflight refuses it
        r = _run(args)
        where = f"deploy {' '.join(template)} ({case})"
        assert r.returncode == 2, f"{where}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        assert "Traceback" not in r.stderr + r.stdout, where
        if case == "seed-config" and args[0] == "validate":
            assert "spec-params-need-num-steps" in r.stdout
            assert (
                ("will NOT start" in r.stdout)
                if "--json" not in args
                else ('"ok": false' in r.stdout)
            )
        elif "--json" not in args:
            msg = r.stderr.strip()
            assert msg.startswith("deploy: ") and "Fix: " in msg, f"{where}: {msg!r}"
            assert len(msg.splitlines()) == 1, f"{where}: not one paragraph: {msg!r}"
        assert (_tree(units), _tree(state)) == before, f"{where} changed files"


def test_unknown_profile_and_missing_input(tmp_path: Path) -> None:
    for args in (
        ["validate", "kimi-k26-eagle"],
        ["render", "nope"],
        ["up", "nope", "--state-dir", str(tmp_path)],
    ):
        r = _run(args)
        assert r.returncode == 2 and "unknown profile" in r.stderr and "Traceback" not in r.stderr
    r = _run(["logs", "--classify", "--input", str(tmp_path / "absent.log")])
    assert r.returncode == 2 and "--input" in r.stderr
    r = _run(["validate", "kimi-k26-eagle3", "--gpu", "rtx9090"])
    assert r.returncode == 2 and "--gpu" in r.stderr


def test_unwritable_out_dir_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _run(["render", "kimi-k26-eagle3", "--out", str(blocker / "sub")])
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert blocker.read_text() == "x"


# ------------------------------------------------------------------ issue 21, item 3: paths


@pytest.mark.parametrize(
    ("case", "field"),
    [
        ("workdir-space", "unit.working_directory"),
        ("workdir-state-dir", "unit.working_directory"),
        ("workdir-in-state-dir", "unit.working_directory"),
        ("workdir-var-lib", "unit.working_directory"),
        ("workdir-etc", "unit.working_directory"),
        ("workdir-two-paths", "unit.working_directory"),
        ("workdir-dotdot", "unit.working_directory"),
        ("workdir-quote", "unit.working_directory"),
        ("envfile-backslash", "unit.environment_file"),
        ("health-path-backslash", "health.path"),
        ("url-credentials", "unit.environment.HTTPS_PROXY"),
        ("huge-description", "description"),
    ],
)
def test_validate_names_the_field(tmp_path: Path, case: str, field: str) -> None:
    prof = tmp_path / "hostile.toml"
    prof.write_text(str(HOSTILE[case]))
    r = _run(["validate", str(prof)])
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"deploy: {field}") and "Fix: " in r.stderr, r.stderr
    assert "hunter2" not in r.stderr


def test_working_directory_may_not_overlap_the_given_state_dir(tmp_path: Path) -> None:
    """--state-dir is known only to the command: the renderer refuses an overlap with it."""
    from orchestrator import profiles
    from orchestrator.errors import UnsafeValueError
    from orchestrator.systemd import render
    from tests.helpers import write_profile

    work = tmp_path / "srv"
    spec = profiles.load(str(write_profile(tmp_path, unit={"working_directory": str(work)})))
    render.render(spec, state_root=tmp_path / "state")  # beside it: fine
    for state in (work, work / "deploy", tmp_path):
        with pytest.raises(UnsafeValueError, match="state directory"):
            render.render(spec, state_root=state)
    units = tmp_path / "units"
    st = str(work / "st")
    r = _run(
        ["up", str(spec.source), "--no-preflight", "--unit-dir", str(units), "--state-dir", st]
    )
    assert r.returncode == 2 and "unit.working_directory" in r.stderr, r.stderr
    assert not units.exists() and not (work / "st").exists()


def test_the_renderer_refuses_what_breaks_a_list_or_a_line() -> None:
    """Defence in depth: whatever reached the filters, no item splits and no line continues."""
    from orchestrator.errors import UnsafeValueError
    from orchestrator.systemd import render

    assert render.sd_path("/var/lib/sglang%i") == "/var/lib/sglang%%i"
    for bad in ("/srv/sg /etc", "/a\tb", "/a\\", '/a"b', "/a'b", "/a/../b", "", "/a\u00a0b"):
        with pytest.raises(UnsafeValueError):
            render.sd_path(bad)
    for filt in (render.sd_value, render.sd_comment):
        with pytest.raises(UnsafeValueError, match="backslash"):
            filt("Description ends in \\")
        with pytest.raises(UnsafeValueError):
            filt("x" * (render.MAX_VALUE + 1))
        with pytest.raises(UnsafeValueError):
            filt("c1 \x9b control")


def test_values_at_their_caps_render_units_systemd_accepts(tmp_path: Path) -> None:
    """The caps sit below systemd's own limits: the longest description and paths a profile
    may hold (with % and $ in them) render into units that `systemd-analyze verify` accepts,
    each directive on its own line, ExecStart= present."""
    import shutil

    from orchestrator import profiles
    from orchestrator.profiles import fields
    from orchestrator.systemd import render
    from tests.helpers import write_profile

    if shutil.which("systemd-analyze") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("systemd-analyze is missing: .ci/run must install systemd")
        pytest.skip("systemd-analyze not installed")
    models = tmp_path / "models"
    (models / "base").mkdir(parents=True)
    (models / "draft").mkdir(parents=True)
    work = tmp_path / "work%i"
    work.mkdir()
    env = tmp_path / "env%n"
    env.write_text("A=1\n")
    desc = ("50% $USER é " * 100)[: fields.MAX_DESCRIPTION]
    p = write_profile(
        tmp_path,
        name="caps",
        description=desc,
        server={
            "model_path": str(models / "base"),
            "speculative_draft_model_path": str(models / "draft"),
        },
        unit={
            "python": sys.executable,
            "working_directory": str(work),
            "environment_file": str(env),
            "user": "root",
        },
    )
    spec = profiles.load(str(p))
    out = tmp_path / "units"
    out.mkdir()
    files = render.render(spec, state_root=tmp_path / "state")
    for name, text in files.items():
        (out / name).write_text(text)
    unit = files[spec.unit_name].splitlines()
    assert f"ReadWritePaths={str(work).replace('%', '%%')}" in unit
    assert f"EnvironmentFile={str(env).replace('%', '%%')}" in unit
    assert sum(ln.startswith("ExecStart=") for ln in unit) == 1
    proc = subprocess.run(
        ["systemd-analyze", "verify", *(str(out / n) for n in files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sglang" not in proc.stderr, proc.stderr


# ------------------------------------------------------------------ issue 21, item 7: state dir


def _never_held(pid: str, since: str, action: str) -> Exception:
    raise AssertionError("the lock is not held")


def test_the_lock_never_writes_through_a_symlink(tmp_path: Path) -> None:
    from orchestrator.errors import InputError
    from orchestrator.systemd.files import held_lock

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    d = tmp_path / "state" / "dep"
    d.mkdir(parents=True)
    (d / "lock").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"), held_lock(d, "up", _never_held):  # type: ignore[arg-type]
        pass
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("where", ["deployment", "root", "release"])
def test_a_state_tree_others_can_write_is_refused(tmp_path: Path, where: str) -> None:
    from orchestrator.errors import InputError
    from orchestrator.systemd.releases import Store

    root = tmp_path / "state"
    store = Store(root, "dep")
    with store.lock("up"):  # a healthy tree: fine
        store.record({"a.service": "[Unit]\n"}, {}, "test")
    target = {
        "deployment": store.dir,
        "root": root,
        "release": store.dir / "releases" / "0001" / "units" / "a.service",
    }[where]
    target.chmod(0o777 if target.is_dir() else 0o666)
    with pytest.raises(InputError, match="writable by group or others") as e, store.lock("up"):
        pass
    assert e.value.exit_code == 2 and "Fix: " in e.value.paragraph()


def test_a_symlinked_state_dir_or_release_is_refused(tmp_path: Path) -> None:
    from orchestrator.errors import InputError
    from orchestrator.systemd.releases import Store

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "state"
    root.mkdir()
    (root / "dep").symlink_to(elsewhere)
    with pytest.raises(InputError, match="symbolic link"), Store(root, "dep").lock("up"):
        pass
    (root / "dep").unlink()
    store = Store(root, "dep")
    with store.lock("up"):
        store.record({"a.service": "[Unit]\n"}, {}, "test")
    unit = store.dir / "releases" / "0001" / "units" / "a.service"
    unit.unlink()
    unit.symlink_to(tmp_path / "victim")
    with pytest.raises(InputError, match="symbolic link"), store.lock("rollback"):
        pass
    with pytest.raises(InputError, match="release 1"):
        store.units(1)  # and reading it, lock or not, does not follow the link


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_state_dir_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    from orchestrator.errors import InputError
    from orchestrator.systemd.releases import Store

    root = tmp_path / "state"
    (root / "dep").mkdir(parents=True)
    os.chown(root / "dep", 65534, 65534)
    with pytest.raises(InputError, match="owned by uid 65534"), Store(root, "dep").lock("up"):
        pass


# ------------------------------------------------------------------ issue 21, items 6 and 8: input


def _cli(args: list[str], stdin: bytes | None = None, timeout: float = 60) -> Ran:
    """A real process, killed after `timeout` s (a hang fails the test instead of stalling)."""
    env = {k: v for k, v in os.environ.items() if k != "DEPLOY_STATE_DIR"}
    r = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=env,
    )
    return Ran(r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))


def test_a_fifo_or_device_as_profile_or_extends_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    child = tmp_path / "child.toml"
    child.write_text('extends = "/dev/zero"\n')
    for ref in (str(fifo), "/dev/zero", str(child), str(tmp_path)):
        r = _cli(["validate", ref], timeout=30)
        assert r.returncode == 2, (ref, r.stderr)
        assert r.stderr.startswith("deploy: ") and "Traceback" not in r.stderr, r.stderr
        assert "regular file" in r.stderr or "cannot be read" in r.stderr, r.stderr


JOURNAL_CASES = {
    "deep-json-object": '{"MESSAGE":' * 50_000 + '"x"' + "}" * 50_000 + "\n",
    "deep-json-array": "[" * 100_000 + "]" * 100_000 + "\n",
    "timestamp-too-large": '{"__REALTIME_TIMESTAMP":"99999999999999999999999","MESSAGE":"ERROR x"}\n',
    "timestamp-negative": '{"__REALTIME_TIMESTAMP":"-99999999999999999999","MESSAGE":"ERROR x"}\n',
    "timestamp-year-9999": '{"__REALTIME_TIMESTAMP":"253402300799999999","MESSAGE":"ERROR x"}\n',
    "sglang-date-invalid": "[2026-13-45 99:99:99 TP0] ERROR boom\nRuntimeError: x\n",
    "short-date-invalid": "Feb 31 13:50:01 host sglang[1]: ERROR x\nFeb 31 13:50:02 host sglang[1]: y\n",
    "iso-date-invalid": "2026-02-31T13:50:01+0000 host s[1]: ERROR x\n2026-02-01T13:50:01+9999 host s[1]: y\n",
    "fields-of-odd-types": '{"MESSAGE":{"a":1},"_PID":[1,2],"PRIORITY":"x","__REALTIME_TIMESTAMP":[]}\n',
}


@pytest.mark.parametrize("case", sorted(JOURNAL_CASES))
def test_odd_journal_lines_are_skipped_or_marked_not_a_traceback(tmp_path: Path, case: str) -> None:
    log = tmp_path / "saved.log"
    log.write_text(JOURNAL_CASES[case])
    for extra in ([], ["--classify"], ["--classify", "--json"], ["--json"]):
        r = _run(["logs", "--input", str(log), *extra])
        assert r.returncode in (0, 1), (case, extra, r.stderr)


def test_a_device_as_input_is_refused(tmp_path: Path) -> None:
    r = _run(["logs", "--classify", "--input", "/dev/zero"])
    assert r.returncode == 2 and r.stderr.startswith("deploy: --input") and "Fix: " in r.stderr


def test_a_huge_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """A 200 MiB line on stdin: the first MAX_LINE_BYTES are kept, the rest read past; the
    process's peak memory stays far below the line's size (it was twice the line)."""
    import threading

    from orchestrator.diagnosis import journal

    mib = 200
    feeder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nb = b'E' * (1 << 20)\n"
            f"for _ in range({mib}): sys.stdout.buffer.write(b)\n"
            "sys.stdout.buffer.write(b'\\nlast line\\n')",
        ],
        stdout=subprocess.PIPE,
    )
    env = {k: v for k, v in os.environ.items() if k != "DEPLOY_STATE_DIR"}
    # The CLI's own main() (`deploy logs --input -`), whose last step, os._exit, first writes
    # the process's peak (VmHWM of its address space) to stderr. wait4's ru_maxrss would not
    # do: a child spawned with vfork records the parent's (pytest's) peak at exec.
    run_cli = (
        "import os, sys\n"
        "leave = os._exit\n"
        "def peak_then_exit(code):\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "    os.write(2, hwm[0].encode())\n"
        "    leave(code)\n"
        "os._exit = peak_then_exit\n"
        "sys.argv = ['deploy', 'logs', '--input', '-']\n"
        "from orchestrator.cli import main\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", run_cli],
        stdin=feeder.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert feeder.stdout is not None and proc.stdout is not None
    feeder.stdout.close()
    out: list[bytes] = []
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    errs = threading.Thread(target=lambda: err.append(proc.stderr.read()))  # type: ignore[union-attr]
    errs.start()
    proc.wait()
    reader.join(timeout=60)
    errs.join(timeout=60)
    feeder.wait(timeout=60)
    assert proc.returncode == 0
    lines = out[0].decode().splitlines()
    assert lines[-1] == "last line"
    assert len(lines[0]) < journal.MAX_LINE_BYTES + 200
    assert "more bytes of this line not read" in lines[0]
    hwm = [ln for ln in err[0].decode().splitlines() if ln.startswith("VmHWM:")]
    assert hwm, err[0].decode()[-2000:]
    peak_mib = int(hwm[-1].split()[1]) / 1024  # "VmHWM:   123456 kB"
    assert peak_mib < mib / 2, f"peak {peak_mib:.0f} MiB for a {mib} MiB line"


def test_read_capped_keeps_line_heads_and_stops_at_the_total() -> None:
    import io

    from orchestrator.diagnosis import journal

    data = b"short\n" + b"x" * 1000 + b"\nend"
    text = journal.read_capped(io.BytesIO(data), "t", max_line=10)
    assert text.splitlines()[0] == "short"
    assert text.splitlines()[1].startswith("x" * 10 + " [... 990 more bytes")
    assert text.splitlines()[2] == "end"
    with pytest.raises(journal.InputTooLarge):
        journal.read_capped(io.BytesIO(b"a" * 100), "t", max_total=50)


def test_root_home_is_a_working_directory_for_the_user_manager_only(tmp_path: Path) -> None:
    """As its own user (--user) root may work in /root; a system unit's service user may not
    be handed root's home to write."""
    from orchestrator import profiles
    from orchestrator.errors import UnsafeValueError
    from orchestrator.systemd import render
    from tests.helpers import write_profile

    spec = profiles.load(str(write_profile(tmp_path, unit={"working_directory": "/root"})))
    assert render.render(spec, user_mode=True, state_root=tmp_path / "state")
    with pytest.raises(UnsafeValueError, match="/root"):
        render.render(spec, state_root=tmp_path / "state")


def test_a_group_writable_umask_does_not_lock_deploy_out(tmp_path: Path) -> None:
    from orchestrator.systemd.releases import Store

    old = os.umask(0o002)
    try:
        store = Store(tmp_path / "a" / "state", "dep")
        with store.lock("up"):
            store.record({"a.service": "[Unit]\n"}, {}, "test")
        with store.lock("up"):  # what deploy created passes its own check
            pass
    finally:
        os.umask(old)
