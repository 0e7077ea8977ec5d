"""The output boundary: everything deploy prints passes through orchestrator.redact."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from orchestrator import redact
from tests.helpers import write_profile

HEAD, TAIL = "sk-planted-head-4711", "planted-tail-0815x"


def test_values_and_their_json_forms_are_redacted() -> None:
    clean = redact.redactor([f"{HEAD} {TAIL}", TAIL, 'quo"te-secret', "short", "über-geheim-1"])
    assert clean(f"--api-key {HEAD} {TAIL}") == f"--api-key {redact.MARK}"
    assert clean(f"could not convert string to float: '{TAIL}'").endswith(f"'{redact.MARK}'")
    assert clean(json.dumps({"m": 'a quo"te-secret'})) == json.dumps({"m": f"a {redact.MARK}"})
    assert clean(json.dumps("x über-geheim-1")) == json.dumps(f"x {redact.MARK}")
    assert clean("a short word") == "a short word"  # under 6 characters: not a secret
    assert clean("server_args=ServerArgs(api_key='anything')") == (
        f"server_args=ServerArgs(api_key='{redact.MARK}')"
    )


def test_the_stream_redacts_whole_lines_across_writes() -> None:
    redact.register([f"{HEAD}-{TAIL}"])
    raw = io.StringIO()
    s = redact.RedactingStream(raw)  # type: ignore[arg-type]
    s.write(f"key {HEAD}-")  # a secret split over two writes
    assert raw.getvalue() == ""
    s.write(f"{TAIL} end\nnext ")
    assert raw.getvalue() == f"key {redact.MARK} end\n"
    s.flush()
    assert raw.getvalue() == f"key {redact.MARK} end\nnext "


def test_every_command_prints_through_the_boundary(tmp_path: Path) -> None:
    """A real process: a saved log holding the environment file's values, classified and
    printed (text and JSON), and an error paragraph on stderr."""
    env = tmp_path / "secrets.env"
    env.write_text(
        f"SGLANG_API_KEY={HEAD}\nSTANDIN_PERF_ALPHA={TAIL}\nHF_TOKEN=plain-token-value-42\n"
    )
    env.chmod(0o600)
    prof = write_profile(
        tmp_path,
        unit={
            "python": "/opt/sglang/bin/python",
            "environment_file": str(env),
            "api_key_env": "SGLANG_API_KEY",
        },
    )
    log = tmp_path / "saved.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        f"ValueError: could not convert string to float: '{TAIL}'\n"
        f"server_args=ServerArgs(api_key='{HEAD}')\n"
        "HF token plain-token-value-42 rejected\n"
    )
    outs = []
    for args in (
        ["logs", str(prof), "--classify", "--input", str(log)],
        ["logs", str(prof), "--classify", "--input", str(log), "--json"],
        ["logs", str(prof), "--input", str(log), "--json"],
        ["logs", str(prof), "--input", str(tmp_path / "absent-plain-token-value-42.log")],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode in (0, 2), r.stderr
        outs.append(r.stdout + r.stderr)
    assert "could not convert string to float" in outs[0] and redact.MARK in outs[0]
    for out in outs:
        for secret in (HEAD, TAIL, "plain-token-value-42"):
            assert secret not in out, out
