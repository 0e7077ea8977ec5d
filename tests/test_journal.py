"""orchestrator.diagnosis.journal: argv building, JSON and text parsing, journalctl errors, follow."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

import pytest

from orchestrator.diagnosis import journal
from orchestrator.diagnosis.journal import JournalEntry, JournalLines
from orchestrator.errors import InputError
from tests.helpers import say

INV = "5b0c4a3f2e1d4c7b8a9f0e1d2c3b4a59"
INV2 = "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f50"

SERVICE_LINE = {
    "__REALTIME_TIMESTAMP": "1796220062123456",
    "_HOSTNAME": "gpu-node-07",
    "SYSLOG_IDENTIFIER": "python3",
    "_PID": "48211",
    "PRIORITY": "6",
    "_SYSTEMD_UNIT": "sglang-kimi.service",
    "_SYSTEMD_INVOCATION_ID": INV,
    "_CMDLINE": "/opt/sglang/bin/python3 -m sglang.launch_server --tp-size 8",
    "MESSAGE": "[2026-12-02 14:01:02 TP3] " + say("ms-load-begin", avail="176.42"),
}
PID1_LINE = {
    "__REALTIME_TIMESTAMP": "1796220070000001",
    "_HOSTNAME": "gpu-node-07",
    "SYSLOG_IDENTIFIER": "systemd",
    "_PID": "1",
    "PRIORITY": "3",
    "_SYSTEMD_UNIT": "init.scope",
    "UNIT": "sglang-kimi.service",
    "INVOCATION_ID": INV,
    "MESSAGE": "sglang-kimi.service: Failed with result 'oom-kill'.",
}


# --------------------------------------------------------------------------- argv


def test_argv_system_unit_with_invocation() -> None:
    argv = journal.build_argv("sglang-kimi.service", invocation=INV, lines=500, since="-1h")
    assert argv == [
        "journalctl",
        "-u",
        "sglang-kimi.service",
        "-n",
        "500",
        "--since",
        "-1h",
        "-o",
        "json",
        "--no-pager",
        f"_SYSTEMD_INVOCATION_ID={INV}",
        "+",
        f"INVOCATION_ID={INV}",
    ]


def test_argv_user_unit_follow_and_fields() -> None:
    argv = journal.build_argv(
        "sglang.service",
        user=True,
        invocation=INV,
        follow=True,
        lines="all",
        output_fields=["_SYSTEMD_INVOCATION_ID"],
        journalctl="/usr/bin/journalctl",
    )
    assert argv[:3] == ["/usr/bin/journalctl", "--user-unit", "sglang.service"]
    assert "-f" in argv and argv[argv.index("-n") + 1] == "all"
    assert "--output-fields=_SYSTEMD_INVOCATION_ID" in argv
    assert argv[-5:] == [
        f"_SYSTEMD_INVOCATION_ID={INV}",
        "+",
        f"INVOCATION_ID={INV}",
        "+",
        f"USER_INVOCATION_ID={INV}",
    ]


def test_argv_accepts_dashed_uuid_and_rejects_junk() -> None:
    dashed = "5b0c4a3f-2e1d-4c7b-8a9f-0e1d2c3b4a59"
    assert f"INVOCATION_ID={INV}" in journal.build_argv("u.service", invocation=dashed)
    with pytest.raises(InputError):
        journal.build_argv("u.service", invocation="x; rm -rf /")
    with pytest.raises(InputError):
        journal.build_argv("--all")


# --------------------------------------------------------------------------- JSON


def test_parse_service_and_pid1_lines() -> None:
    a = journal.parse_json_line(json.dumps(SERVICE_LINE))
    b = journal.parse_json_line(json.dumps(PID1_LINE))
    assert a is not None and b is not None
    assert a.timestamp_us == 1796220062123456
    assert (a.unit, a.invocation_id, a.pid, a.priority, a.source) == (
        "sglang-kimi.service",
        INV,
        48211,
        6,
        "journal",
    )
    assert a.cmdline and "launch_server" in a.cmdline
    # PID 1's line about the unit: UNIT= wins over _SYSTEMD_UNIT=init.scope, INVOCATION_ID kept
    assert (b.unit, b.invocation_id, b.pid) == ("sglang-kimi.service", INV, 1)


def test_message_as_byte_array_and_multi_value() -> None:
    raw = "Loading shards \u2588\u2588 50%\x1b[0m".encode() + b"\xff"
    obj = dict(SERVICE_LINE, MESSAGE=list(raw), _PID=["48211", "48211"])
    e = journal.parse_json_line(json.dumps(obj))
    assert e is not None
    assert e.message.startswith("Loading shards \u2588\u2588 50%")
    assert e.message.endswith("\ufffd")  # the invalid byte, replaced
    assert e.pid == 48211
    assert journal.parse_json_line(json.dumps(dict(SERVICE_LINE, MESSAGE=None))).message == ""  # type: ignore[union-attr]
    assert journal.parse_json_line("not json") is None
    assert journal.parse_json_line("[1, 2]") is None
    # a JSON object that is no journal record (an API's error body) is text, not an empty entry
    assert journal.parse_json_line('{"error": {"message": "CUDA out of memory."}}') is None


def test_format_short_and_when() -> None:
    e = JournalEntry(
        timestamp_us=1796220062123456,
        message="hello",
        pid=42,
        host="gpu-node-07",
        ident="python3",
    )
    dt = e.local_time()
    assert dt is not None
    assert e.format_short() == f"{dt:%b %d %H:%M:%S} gpu-node-07 python3[42]: hello"
    assert e.when is not None and e.when.startswith(f"{dt:%Y-%m-%dT%H:%M:%S}.123456")
    assert JournalEntry(None, "bare", source="text").format_short() == "bare"
    assert JournalEntry(None, "bare").stamp() == "-"


def test_invocation_ids_in_order() -> None:
    es = [
        JournalEntry(1, "a", invocation_id=INV),
        JournalEntry(2, "b"),
        JournalEntry(3, "c", invocation_id=INV2),
        JournalEntry(4, "d", invocation_id=INV),
    ]
    assert journal.invocation_ids(es) == [INV, INV2]


# --------------------------------------------------------------------------- text forms


def test_parse_text_detects_json() -> None:
    text = json.dumps(SERVICE_LINE) + "\n" + json.dumps(PID1_LINE) + "\n"
    es = journal.parse_text(text)
    assert [e.pid for e in es] == [48211, 1]
    assert all(e.source == "journal" for e in es)


def test_parse_short_precise_with_continuation() -> None:
    text = (
        "-- Boot 6c7c6013a8d34b3f8b9a17b6b2c7d2b1 --\n"
        "Dec 02 14:01:02.123456 gpu-node-07 python3[48211]: Traceback (most recent call last):\n"
        '                                                     File "x.py", line 1, in <module>\n'
        "Dec 02 14:01:02.200000 gpu-node-07 python3[48211]: AssertionError\n"
        "Dec 02 14:01:03 gpu-node-07 systemd[1]: sglang-kimi.service: Failed with result 'exit-code'.\n"
    )
    es = journal.parse_text(text, year=2026)
    assert [e.message for e in es] == [
        "Traceback (most recent call last):",
        'File "x.py", line 1, in <module>',
        "AssertionError",
        "sglang-kimi.service: Failed with result 'exit-code'.",
    ]
    assert es[0].timestamp_us is not None and es[0].timestamp_us % 1_000_000 == 123456
    assert es[1].timestamp_us == es[0].timestamp_us  # continuation: same time and pid
    assert (es[3].ident, es[3].pid, es[3].host) == ("systemd", 1, "gpu-node-07")
    assert all(e.source == "text" for e in es)


def test_parse_short_iso() -> None:
    text = (
        "2026-12-02T14:01:02+0000 gpu-node-07 python3[48211]: hello\n"
        "2026-12-02T14:01:02.500000+00:00 gpu-node-07 python3[48211]: world\n"
    )
    es = journal.parse_text(text)
    assert [e.message for e in es] == ["hello", "world"]
    assert es[1].timestamp_us - es[0].timestamp_us == 500000  # type: ignore[operator]


def test_parse_cat_dates_from_sglang_prefix() -> None:
    text = (
        "/opt/x/launch_server.py:71: UserWarning: something\n"
        "[2026-12-02 14:01:02 TP3] "
        + say("scheduler-exception", traceback="Traceback (most recent call last):")
        + "\n"
        '  File "x.py", line 1, in f\n'
        "torch.OutOfMemoryError: CUDA out of memory.\n"
        "[2026-12-02 14:01:05] Received sigquit from a child process.\n"
    )
    es = journal.parse_text(text)
    assert len(es) == 5
    assert es[0].timestamp_us is None
    assert es[1].timestamp_us is not None and es[2].timestamp_us == es[1].timestamp_us
    assert es[4].timestamp_us - es[1].timestamp_us == 3_000_000  # type: ignore[operator]
    assert es[2].message == '  File "x.py", line 1, in f'  # cat keeps indentation


def test_journal_lines_is_a_lazy_sequence() -> None:
    text = "\n".join(json.dumps(dict(SERVICE_LINE, MESSAGE=f"line {i}")) for i in range(10))
    jl = JournalLines(text)
    assert jl.format == "json" and len(jl) == 10
    assert jl[3].message == "line 3" and jl[-1].message == "line 9"
    assert [e.message for e in jl[2:4]] == ["line 2", "line 3"]
    assert "line 5" in jl.raw[5]
    with pytest.raises(IndexError):
        jl[10]
    cat = JournalLines("a\nb\n")
    assert cat.format == "cat" and [e.message for e in cat] == ["a", "b"]


# --------------------------------------------------------------------------- journalctl


def _fake_journalctl(tmp: Path, body: str) -> Path:
    p = tmp / "journalctl"
    p.write_text("#!/bin/sh\n" + f'printf "%s\\n" "$@" > "{tmp}/argv"\n' + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def test_read_runs_journalctl_and_parses(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(json.dumps(SERVICE_LINE) + "\n" + json.dumps(PID1_LINE) + "\n")
    jc = _fake_journalctl(tmp_path, f'cat "{out}"\n')
    es = journal.read("sglang-kimi.service", invocation=INV, lines=100, journalctl=str(jc))
    assert [e.pid for e in es] == [48211, 1]
    argv = (tmp_path / "argv").read_text().split("\n")
    assert argv[:2] == ["-u", "sglang-kimi.service"]
    assert f"INVOCATION_ID={INV}" in argv


def test_invocations_and_latest(tmp_path: Path) -> None:
    lines = [
        {"__REALTIME_TIMESTAMP": "1", "_SYSTEMD_INVOCATION_ID": INV2},
        {"__REALTIME_TIMESTAMP": "2", "INVOCATION_ID": INV2},
        {"__REALTIME_TIMESTAMP": "3", "_SYSTEMD_INVOCATION_ID": INV},
        {"__REALTIME_TIMESTAMP": "4"},
    ]
    out = tmp_path / "out.json"
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    jc = _fake_journalctl(tmp_path, f'cat "{out}"\n')
    assert journal.invocations("u.service", journalctl=str(jc)) == [INV2, INV]
    assert journal.latest_invocation("u.service", journalctl=str(jc)) == INV
    argv = (tmp_path / "argv").read_text()
    assert "--output-fields=_SYSTEMD_INVOCATION_ID,INVOCATION_ID" in argv


def test_journalctl_missing_is_input_error() -> None:
    with pytest.raises(InputError) as ei:
        journal.read("u.service", journalctl="/nonexistent/journalctl")
    assert ei.value.exit_code == 2
    assert ei.value.fix and "--input" in ei.value.fix


def test_journalctl_failure_and_no_rights(tmp_path: Path) -> None:
    jc = _fake_journalctl(
        tmp_path, 'echo "Failed to open journal: Permission denied" >&2\nexit 1\n'
    )
    with pytest.raises(InputError) as ei:
        journal.read("u.service", journalctl=str(jc))
    assert "Permission denied" in ei.value.paragraph()
    assert "systemd-journal" in (ei.value.fix or "")
    jc2 = _fake_journalctl(
        tmp_path,
        "echo 'Hint: You are currently not seeing messages from other users and the system.' >&2\n",
    )
    with pytest.raises(InputError) as ei2:
        journal.read("u.service", journalctl=str(jc2))
    assert "systemd-journal" in (ei2.value.fix or "")


def test_follow_yields_and_kills_journalctl(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text(
        "\n".join(json.dumps(dict(SERVICE_LINE, MESSAGE=f"m{i}")) for i in range(3)) + "\n"
    )
    jc = _fake_journalctl(tmp_path, f'echo $$ > "{tmp_path}/pid"\ncat "{out}"\nexec sleep 60\n')

    async def consume() -> list[str]:
        got: list[str] = []
        gen = journal.follow("u.service", invocation=INV, journalctl=str(jc))
        async for e in gen:
            got.append(e.message)
            if len(got) == 2:
                break
        await gen.aclose()
        return got

    t0 = time.monotonic()
    assert asyncio.run(consume()) == ["m0", "m1"]
    assert time.monotonic() - t0 < 10
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    argv = (tmp_path / "argv").read_text().split("\n")
    assert "-f" in argv and "all" in argv
