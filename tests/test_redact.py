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


# ------------------------------------------------------------------ issue 21, items 5 and 8


def _env_profile(tmp_path: Path, lines: str) -> Path:
    env = tmp_path / "secrets.env"
    env.write_text(lines)
    env.chmod(0o600)
    return write_profile(
        tmp_path,
        unit={
            "python": "/opt/sglang/bin/python",
            "environment_file": str(env),
            "api_key_env": "SGLANG_API_KEY",
        },
    )


def test_an_ascii_locale_does_not_bypass_the_boundary(tmp_path: Path) -> None:
    """With PYTHONIOENCODING=ascii or LC_ALL=C click writes to sys.stdout.buffer: the byte
    layer is redacted too."""
    import os

    prof = _env_profile(tmp_path, f"SGLANG_API_KEY={HEAD}\n")
    log = tmp_path / "saved.log"
    log.write_text(json.dumps({"MESSAGE": f"ERROR bad key {HEAD} \u00fcber"}) + "\n")
    for env in ({"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONIOENCODING": ""}):
        for extra in ([], ["--json"], ["--classify"]):
            args = ["logs", str(prof), "--input", str(log), *extra]
            r = subprocess.run(
                [sys.executable, "-m", "orchestrator.cli", *args],
                capture_output=True,
                timeout=60,
                env={**os.environ, **env},
            )
            out = r.stdout + r.stderr
            assert r.returncode in (0, 1), out
            assert HEAD.encode() not in out, (env, extra, out)
            assert redact.MARK.encode() in out, (env, extra, out)


def test_encoded_truncated_and_url_forms_are_redacted() -> None:
    import base64
    import urllib.parse

    key = "sk-pl@nted/key+4711"
    clean = redact.redactor([key])
    assert key not in clean(f"a {key} b")
    for form in (urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key)):
        assert clean(f"url ?k={form}&x=1") == f"url ?k={redact.MARK}&x=1"
    assert clean(f"?k={urllib.parse.quote(key, safe='').lower()}") == f"?k={redact.MARK}"
    for prefix in ("", "u:", "us:", "use:"):  # each base64 alignment, as in Basic auth
        b64 = base64.b64encode(f"{prefix}{key}".encode()).decode()
        out = clean(f"Authorization: Basic {b64}")
        assert redact.MARK in out and len(out) < len(b64) + 25, out
    # Cut by a truncation: the head of the secret before "..." or "\u2026" goes too.
    for cut in (key[:10] + "...", key[:7] + "\u2026", key[:12] + " [... 99 more bytes"):
        out = clean(f"evidence: {cut}")
        assert key[:6] not in out and redact.MARK in out, out
    assert clean("nothing... here\u2026") == "nothing... here\u2026"


def test_url_passwords_and_short_named_secrets(tmp_path: Path) -> None:
    env = tmp_path / "e.env"
    env.write_text("HTTPS_PROXY=http://bob:pw%40x9@proxy:3128\nADMIN_TOKEN=q7Zk\nDEBUG=1\n")
    redact.register_file(str(env))
    out = redact.redact("proxy said: bad password pw%40x9 (pw@x9) for token q7Zk, DEBUG 1")
    assert "pw%40x9" not in out and "pw@x9" not in out and "q7Zk" not in out, out
    assert out.endswith("DEBUG 1")  # a short value not named as a secret is no secret


def test_preflight_refuses_a_secret_too_short_to_redact(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from orchestrator.cli import app

    for lines in ("SGLANG_API_KEY=abc\n", "HTTPS_PROXY=http://bob:pw1@proxy:3128\n"):
        prof = _env_profile(tmp_path, lines)
        r = CliRunner().invoke(app, ["validate", str(prof), "--no-nvml"])
        assert r.exit_code == 2 and "secret-too-short" in r.stdout, r.stdout


def test_control_characters_are_escaped_at_the_boundary() -> None:
    raw = io.StringIO()
    s = redact.RedactingStream(raw)  # type: ignore[arg-type]
    s.write("title \x1b]0;pwned\x07 clear \x1b[2J c1 \x9b31m tab\tcr\r\x00 ok\n")
    assert raw.getvalue() == (
        "title \\x1b]0;pwned\\x07 clear \\x1b[2J c1 \\x9b31m tab\tcr\\x0d\\x00 ok\n"
    )
    b = io.BytesIO()
    text = io.TextIOWrapper(b, encoding="ascii")
    s = redact.RedactingStream(text)
    assert s.buffer is not None
    s.buffer.write(b"raw \x1b[31mred\xc2\x9b\xff\n")
    s.flush()
    assert b.getvalue() == b"raw \\x1b[31mred\\x9b\xff\n"


def test_a_journal_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """`logs`, its evidence (--classify) and JSON: no raw ESC or C1 byte reaches stdout."""
    log = tmp_path / "saved.log"
    log.write_text(
        json.dumps({"MESSAGE": "Traceback (most recent call last):"})
        + "\n"
        + json.dumps({"MESSAGE": "RuntimeError: \x1b]0;owned\x07\x1b[2J\u009b6n boom"})
        + "\n"
    )
    for extra in ([], ["--classify"], ["--classify", "--json"], ["--json"]):
        r = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", "logs", "--input", str(log), *extra],
            capture_output=True,
            timeout=60,
        )
        assert r.returncode in (0, 1), r.stderr
        for bad in (b"\x1b", b"\x07", b"\xc2\x9b"):
            assert bad not in r.stdout + r.stderr, (extra, r.stdout)
