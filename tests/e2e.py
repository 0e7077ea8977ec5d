"""Helpers for end-to-end tests: profiles that run the SGLang stand-in in the systemd box."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.box import Box
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, ROOT, toml

RUN_DIR = ROOT / "tests" / ".run"  # inside the project, so the box sees it (bind mount)
MODELS = "/srv/deploy-test/models"
# The stand-in is installed in the box like an SGLang venv would be (/opt/...): the server
# unit has PrivateTmp= and ProtectHome=, so a checkout under /tmp would be invisible to it.
# deploy itself is installed beside it the way an operator installs it for root: copied (owned
# by root, writable by root alone), never run from the checkout, whose owner and modes are
# whatever the test run's are. Preflight's root-code rule holds the box tests to that too.
INSTALL = "/opt/deploy-test"
STANDIN_PYTHON = f"{INSTALL}/tests/standin/python"
# How the box runs deploy: from INSTALL only (-P: not from the working directory, the checkout).
DEPLOY = [sys.executable, "-P", "-m", "orchestrator.cli"]
DEPLOY_ENV = {"PYTHONPATH": INSTALL}
UNIT_DIR = "/etc/systemd/system"


def prepare(box: Box) -> None:
    """The service user, the stand-in 'SGLang install' and the checkpoints, inside the box."""
    box.run(
        [
            "sh",
            "-c",
            'rm -rf "$1" && mkdir -p "$1/tests" && '
            'cp -R "$2/tests/standin" "$1/tests/" && '
            'cp -R "$2/orchestrator" "$2/templates" "$1/" && '
            'find "$1" -name __pycache__ -prune -exec rm -rf {} + && '
            'chown -R root:root "$1" && chmod -R go-w "$1"',
            "sh",
            INSTALL,
            str(ROOT),
        ],
        check=True,
    )
    if box.run(["id", "sglang"]).returncode != 0:
        box.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "sglang"],
            check=True,
        )
    for name, cfg in (("Kimi-K2.6", KIMI_K26_CONFIG), ("Kimi-K2.6-EAGLE3", EAGLE3_DRAFTER_CONFIG)):
        box.write_file(f"{MODELS}/{name}/config.json", json.dumps(cfg))
        box.write_file(f"{MODELS}/{name}/model-00001-of-00001.safetensors", "stand-in weights")


def profile(
    name: str,
    *,
    port: int,
    env: dict[str, str] | None = None,
    server: dict[str, Any] | None = None,
    unset: list[str] | None = None,
    timeout_s: int = 60,
    name_override: str | None = None,
    unit_extra: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    **extra: Any,
) -> str:
    """Write a profile that extends the built-in kimi-k26-eagle3 and runs the stand-in."""
    data: dict[str, Any] = {
        "extends": "kimi-k26-eagle3",
        "name": name_override or name,
        "server": {
            "model_path": f"{MODELS}/Kimi-K2.6",
            "speculative_draft_model_path": f"{MODELS}/Kimi-K2.6-EAGLE3",
            "port": port,
            **(server or {}),
        },
        "unit": {
            "python": STANDIN_PYTHON,
            "restart_sec": 5,
            "environment": {"HF_HUB_OFFLINE": "1", **(env or {})},
            **(unit_extra or {}),
        },
        "health": {"startup_timeout_s": timeout_s, **(health or {})},
        **extra,
    }
    if unset:
        data["unset"] = unset
    RUN_DIR.mkdir(exist_ok=True)
    path = RUN_DIR / f"{name}.toml"
    path.write_text(toml(data))
    return str(path)


@dataclass
class Ran:
    rc: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.stdout)


def deploy(
    box: Box,
    *args: str,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> Ran:
    """Run the deploy CLI inside the box, timed."""
    t = time.monotonic()
    p: subprocess.CompletedProcess[str] = box.run(
        [*DEPLOY, *args], timeout=timeout, env={**DEPLOY_ENV, **(env or {})}, input=stdin
    )
    return Ran(p.returncode, p.stdout, p.stderr, round(time.monotonic() - t, 3))


def unit_files(box: Box) -> dict[str, str]:
    """name -> sha256 of every file in the unit dir inside the box."""
    out = box.run(
        ["sh", "-c", f"cd {UNIT_DIR} && find . -maxdepth 1 -type f -exec sha256sum {{}} +"]
    ).stdout
    return {
        line.split()[1].removeprefix("./"): line.split()[0]
        for line in out.splitlines()
        if line.strip()
    }


def show(box: Box, unit: str, *props: str) -> dict[str, str]:
    out = box.systemctl("show", unit, "-p", ",".join(props)).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def start_deploy(
    box: Box, *args: str, pidfile: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start the deploy CLI inside the box in the background; its pid (in the box) goes to
    `pidfile` so the test can signal exactly that process."""
    box.run(["rm", "-f", pidfile])  # never read a pid left by an earlier run
    script = 'echo $$ > "$0"; exec "$@"'
    argv = ["sh", "-c", script, pidfile, *DEPLOY, *args]
    full = [
        "nsenter",
        "-t",
        str(box.pid),
        "-a",
        "--",
        *box._env_argv({**DEPLOY_ENV, **(env or {})}),
        *argv,
    ]
    return subprocess.Popen(
        full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    """SIGINT as an operator's Ctrl-C delivers it. A test run started in the background of a
    non-interactive shell (`./scripts/test &`, many CI runners) ignores SIGINT, and an ignored
    signal stays ignored across exec: deploy would never see the test's SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll `check` until it holds. Tests synchronize on events (a file's content, a unit's
    state, a line of output); the deadline only bounds a test that would otherwise hang."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: not seen within {timeout_s:g} s"
        time.sleep(0.05)


class Lines:
    """The lines a background process prints, read as they come (a thread), so that a test
    can wait for a line instead of sleeping."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._done = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def wait_for(self, text: str, what: str, timeout_s: float = 60.0) -> None:
        """Until a line holding `text` has been printed (or fail, naming `what`)."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._done or any(text in ln for ln in self.lines), timeout_s
            )
            if not ok or not any(text in ln for ln in self.lines):
                raise AssertionError(f"{what}: {text!r} not printed; got:\n{self.text()}")

    def text(self) -> str:
        return "".join(self.lines)


def inflight_step(box: Box, name: str) -> str | None:
    """The step of the running up/rollback of deployment `name` (its in-flight marker)."""
    out = box.run(["cat", f"/var/lib/deploy/{name}/inflight.json"]).stdout
    try:
        step = json.loads(out).get("step")
    except (ValueError, AttributeError):
        return None
    return step if isinstance(step, str) else None


def box_pid(box: Box, pidfile: str, timeout_s: float = 30.0) -> int:
    t = time.monotonic()
    while time.monotonic() - t < timeout_s:
        out = box.run(["cat", pidfile]).stdout.strip()
        if out.isdigit():
            return int(out)
        time.sleep(0.02)
    raise AssertionError(f"no pid in {pidfile}")


def rendered(profile_path: str) -> dict[str, str]:
    """name -> sha256 of what the renderer makes for this profile (computed on the host)."""
    import hashlib

    from orchestrator import profiles
    from orchestrator.systemd import render
    from orchestrator.watch.liveness import Runner

    # As deploy renders them in the box: run from INSTALL (DEPLOY, DEPLOY_ENV).
    runner = Runner(sys.executable, INSTALL)
    return {
        n: hashlib.sha256(t.encode()).hexdigest()
        for n, t in render.render(profiles.load(profile_path), runner=runner).items()
    }
