"""A throwaway container with a real systemd as PID 1, for tests that need systemd.

The host's root file system is bind-mounted at /srv/hostroot and booted with
``systemd-nspawn --volatile=overlay``: everything written inside lands in a tmpfs overlay
and vanishes on stop. The project directory is bind-mounted at the same path (so paths the
tests build on the host work inside), and again at INSTALLED, where deploy runs from inside:
the units it renders run deploy's code from there, a path their sandboxes can see wherever
the checkout is (a fresh clone under /tmp is hidden by PrivateTmp=). Commands run inside
with ``nsenter -t <container PID 1> -a``.

`box` is a session-scoped pytest fixture. If the box cannot start it skips, or fails
when ``CI=true``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HOSTROOT = Path("/srv/hostroot")
STATE_DIR = Path("/run/deploy-testbox")  # one file per running box: <nspawn pid> -> owner pid
BOOT_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
SYSTEMD_BIN = "/usr/lib/systemd/systemd"
# The project as installed in the box: deploy runs from here (cwd and PYTHONPATH), so the
# units it renders name this path (liveness.Runner.current()).
INSTALLED = Path("/usr/local/lib/deploy-test")


class BoxUnavailable(RuntimeError):
    """The box could not be started; the message says why."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the comm field may contain spaces; ppid is the 2nd field after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM, wait, then SIGKILL. `pid` need not be our child."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _pid_alive(pid) and not _is_zombie(pid):
        time.sleep(0.1)
    if _pid_alive(pid) and not _is_zombie(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].startswith("Z")


class Box:
    """A booted systemd container. Use as a context manager, or start()/stop()."""

    def __init__(self, project_root: Path = PROJECT_ROOT, boot_timeout_s: float = BOOT_TIMEOUT_S):
        self.project_root = project_root
        self.boot_timeout_s = boot_timeout_s
        self.boot_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None
        self._log_path: Path | None = None
        self._state_file: Path | None = None

    # -- lifecycle -------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The container's PID 1 (systemd), as seen from the host."""
        if self._pid is None:
            raise RuntimeError("box is not running")
        return self._pid

    def start(self) -> Box:
        if os.geteuid() != 0:
            raise BoxUnavailable("the systemd box needs root (systemd-nspawn, mount, nsenter)")
        for tool in ("systemd-nspawn", "nsenter", "mount", "mountpoint"):
            if shutil.which(tool) is None:
                raise BoxUnavailable(
                    f"{tool} not found: install the systemd-container and util-linux packages"
                )
        if not Path(SYSTEMD_BIN).exists():
            raise BoxUnavailable(f"{SYSTEMD_BIN} not found: the host has no systemd to boot")
        self._reap_stale()
        self._ensure_hostroot()

        fd, log = tempfile.mkstemp(prefix="deploy-testbox-", suffix=".log")
        self._log_path = Path(log)
        argv = [
            "systemd-nspawn",
            "-D",
            str(HOSTROOT),
            "--volatile=overlay",
            "--register=no",
            "--keep-unit",
            # Its own loopback: boxes of concurrent test runs on one host (and the host's own
            # services booted inside, e.g. a postgresql on 127.0.0.1:5432) never fight over ports.
            "--private-network",
            "-b",
            "-q",
            f"--bind={self.project_root}",
            f"--bind={self.project_root}:{INSTALLED}",
            "--",
            "systemd.firstboot=off",
            "systemd.unit=multi-user.target",
        ]
        t0 = time.monotonic()
        with os.fdopen(fd, "wb") as logf:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self._state_file = STATE_DIR / str(self._proc.pid)
        self._state_file.write_text(f"{os.getpid()}\n")
        try:
            self._wait_boot(t0)
        except BaseException:
            self.stop()
            raise
        self.boot_s = time.monotonic() - t0
        return self

    def stop(self) -> None:
        proc, self._proc, self._pid = self._proc, None, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if self._state_file is not None:
            self._state_file.unlink(missing_ok=True)
            self._state_file = None

    def __enter__(self) -> Box:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self, n: int = 40) -> str:
        """The last lines of systemd-nspawn's own output."""
        if self._log_path is None:
            return ""
        try:
            lines = self._log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def _reap_stale(self) -> None:
        """Stop boxes left behind by a crashed earlier run (their owner process is gone)."""
        if not STATE_DIR.is_dir():
            return
        for f in STATE_DIR.iterdir():
            try:
                nspawn_pid = int(f.name)
                owner = int(f.read_text().strip() or "0")
            except (ValueError, OSError):
                f.unlink(missing_ok=True)
                continue
            if owner and _pid_alive(owner) and owner != os.getpid():
                continue  # another live test session owns it
            argv = _cmdline(nspawn_pid)
            if argv and Path(argv[0]).name == "systemd-nspawn" and str(HOSTROOT) in argv:
                _terminate(nspawn_pid, STOP_TIMEOUT_S)
            f.unlink(missing_ok=True)

    def _ensure_hostroot(self) -> None:
        HOSTROOT.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mountpoint", "-q", str(HOSTROOT)]).returncode == 0:
            return  # left by an earlier run, or shared with a concurrent one: reuse it
        r = subprocess.run(["mount", "--bind", "/", str(HOSTROOT)], capture_output=True, text=True)
        if r.returncode != 0:
            raise BoxUnavailable(f"cannot bind-mount / at {HOSTROOT}: {r.stderr.strip()}")

    def _wait_boot(self, t0: float) -> None:
        assert self._proc is not None
        deadline = t0 + self.boot_timeout_s
        while self._pid is None:
            if self._proc.poll() is not None:
                raise BoxUnavailable(
                    f"systemd-nspawn exited with status {self._proc.returncode} during boot"
                )
            for child in _children(self._proc.pid):
                argv = _cmdline(child)
                if argv and argv[0] == SYSTEMD_BIN:
                    self._pid = child
                    break
            else:
                if time.monotonic() > deadline:
                    raise BoxUnavailable(
                        f"no systemd inside the container after {self.boot_timeout_s:.0f} s"
                    )
                time.sleep(0.05)
        state = ""
        while True:
            if self._proc.poll() is not None:
                raise BoxUnavailable(
                    f"systemd-nspawn exited with status {self._proc.returncode} during boot"
                )
            r = self.run(["systemctl", "is-system-running"], timeout=10)
            state = r.stdout.strip()
            if state in ("running", "degraded"):
                break
            if time.monotonic() > deadline:
                raise BoxUnavailable(
                    f"systemd in the box is still {state or r.stderr.strip()!r} "
                    f"after {self.boot_timeout_s:.0f} s"
                )
            time.sleep(0.1)
        if state == "degraded":
            failed = self.run(["systemctl", "--failed", "--no-legend", "--plain"]).stdout
            print(f"box: system is degraded; failed units:\n{failed}", file=sys.stderr)

    # -- running things inside -------------------------------------------------------

    def _env_argv(self, env: Mapping[str, str] | None) -> list[str]:
        py_bin = str(Path(sys.executable).parent)
        base = {
            "PATH": f"{py_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(INSTALLED),
        }
        base.update(env or {})
        return ["env", "-i", "-C", str(INSTALLED), *(f"{k}={v}" for k, v in base.items())]

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv inside the box (cwd: the project as installed there, INSTALLED; a clean
        environment plus `env`)."""
        full = ["nsenter", "-t", str(self.pid), "-a", "--", *self._env_argv(env), *argv]
        return subprocess.run(
            full,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    def systemctl(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.run(["systemctl", *args], check=check)

    def start_user_manager(self) -> bool:
        """Start root's user manager and wait until its bus answers (`user_bus_answers`)."""
        if self.systemctl("start", "user@0.service").returncode != 0:
            return False
        return self.user_bus_answers()

    def user_bus_answers(self, deadline_s: float = 240.0) -> bool:
        """Wait until root's user bus answers a call. The bus is socket-activated, and its
        daemon may just have been killed: a client that connects then can wait on a socket
        nobody accepts on (its own timeout does not cover the handshake). So each round asks
        root's user manager, over its private socket (not D-Bus), to start the bus and waits
        for that job (the event), then makes one call with a short timeout of its own."""
        env = {
            "XDG_RUNTIME_DIR": "/run/user/0",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
        }
        call = ["busctl", "--user", "--timeout=20", "call", "org.freedesktop.DBus"]
        call += ["/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId"]
        start = ["systemctl", "--user", "start", "dbus.socket", "dbus.service"]
        end = time.monotonic() + deadline_s
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.run(["systemctl", "--user", "reset-failed", "dbus.service"], env=env)
                self.run(start, env=env, timeout=90)
                if self.run(call, env=env, timeout=30).returncode == 0:
                    return True
            if time.monotonic() > end:
                return False
            time.sleep(0.5)  # pacing between rounds, not a wait for anything

    def journal(self, unit: str, *, lines: int | None = None) -> str:
        """The unit's journal messages (message text only) since the box booted."""
        argv = ["journalctl", "-b", "-u", unit, "--no-pager", "-o", "cat"]
        if lines is not None:
            argv += ["-n", str(lines)]
        return self.run(argv).stdout

    def write_file(self, path: str, text: str, mode: str = "0644") -> None:
        """Write `text` to `path` inside the box (parents created)."""
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"'
        self.run(["sh", "-c", script, "sh", path, mode], input=text, check=True)

    def python(
        self, code: str, *, timeout: float = 60, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run Python code inside the box with the host interpreter."""
        return self.run([sys.executable, "-c", code], timeout=timeout, env=env)


@pytest.fixture(scope="session")
def box(request: pytest.FixtureRequest) -> Iterator[Box]:
    """A booted systemd box for the whole session (skips, or fails when CI=true)."""
    b = Box()
    error = ""
    try:
        b.start()
    except (BoxUnavailable, OSError, subprocess.SubprocessError) as e:
        error = f"systemd box unavailable: {e}"
        tail = b.log_tail()
        if tail:
            error += f"\n--- systemd-nspawn log (tail) ---\n{tail}"
    if error:  # outside the except block: no chained traceback in the report
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(error, pytrace=False)
        pytest.skip(error)
    capman = request.config.pluginmanager.getplugin("capturemanager")
    ctx = capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()
    with ctx:
        print(f"\nbox: systemd booted in {b.boot_s:.2f} s (PID 1 = host pid {b.pid})")
    try:
        yield b
    finally:
        b.stop()


# Ports for the servers box tests deploy: each test gets its own, never handed out twice in a
# session, so a test that fails with its server still up cannot hold a later test's port.
_BOX_PORTS = itertools.count(32000)


@pytest.fixture
def box_port() -> int:
    """A port no other box test of this session uses (the box has its own loopback)."""
    return next(_BOX_PORTS)


@pytest.fixture
def clean_box(box: Box) -> Iterator[Box]:
    """The box, and after the test, pass or fail, every sglang-* unit it left stopped."""
    yield box
    box.run(
        [
            "sh",
            "-c",
            "systemctl stop 'sglang-*' 2>/dev/null; systemctl reset-failed 'sglang-*' 2>/dev/null;"
            " true",
        ]
    )
