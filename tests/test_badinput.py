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
