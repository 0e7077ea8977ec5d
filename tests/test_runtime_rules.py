"""Run-time causes and GPU Xids in the classifier (orchestrator/diagnosis/runtime.py), on the
fixtures in tests/logs/runtime/ (a server that served, then died or wedged)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from orchestrator.diagnosis import catalog as R
from orchestrator.diagnosis import xid, xid_codes
from orchestrator.diagnosis.diagnose import classify, classify_text
from orchestrator.diagnosis.journal import JournalEntry, parse_text
from orchestrator.diagnosis.runtime import RUNTIME_RULES

HERE = Path(__file__).resolve().parent / "logs" / "runtime"
EXPECTED: dict[str, str] = json.loads((HERE / "expected.json").read_text())


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_runtime", HERE / "make_runtime.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_category(name: str) -> None:
    text = (HERE / name).read_text()
    d = classify_text(text)
    assert d.category == EXPECTED[name], d.render_text()
    assert classify(parse_text(text)).category == EXPECTED[name]
    assert d.evidence and d.fix and "\n" not in d.summary
    assert "{" not in d.summary and "{" not in d.fix, d.summary  # every template field filled


def test_every_runtime_rule_has_a_fixture_and_is_in_rules() -> None:
    assert {r.id for r in RUNTIME_RULES} <= set(EXPECTED.values())
    ids = [r.id for r in R.RULES]
    assert len(ids) == len(set(ids))
    assert ids[-len(RUNTIME_RULES) :] == [r.id for r in RUNTIME_RULES]


def test_fixtures_are_current() -> None:
    gen = _generator()
    for name, (category, lines) in gen.CASES.items():
        assert (HERE / f"{name}.log").read_text() == gen._cat(lines), (
            "regenerate: python tests/logs/runtime/make_runtime.py"
        )
        assert EXPECTED[f"{name}.log"] == category


@pytest.mark.parametrize("rule", RUNTIME_RULES, ids=lambda r: r.id)
def test_examples_classify(rule: R.Rule) -> None:
    for ex in rule.examples:
        if "   (under " in ex or "hit an exception: Traceback" in ex:
            continue  # needs its traceback: covered by the fixtures
        assert classify_text(ex).category == rule.id, ex


def test_illegal_access_names_the_speculative_step() -> None:
    draft = classify_text((HERE / "illegal_memory_draft.log").read_text())
    verify = classify_text((HERE / "illegal_memory_verify.log").read_text())
    assert "while drafting (EAGLE-3 draft model)" in draft.summary
    assert "while verifying draft tokens" in verify.summary
    assert draft.evidence[0].message.endswith("Traceback (most recent call last):")
    assert draft.evidence[-1].message.startswith("torch.AcceleratorError: CUDA error")


def test_collective_timeout_outranks_generic_nccl_error() -> None:
    d = classify_text((HERE / "nccl_watchdog_timeout.log").read_text())
    assert d.category == "nccl-watchdog-timeout"
    assert d.detail["op"] == "ALLREDUCE" and d.detail["rank"] == "3"
    assert "nccl-error" not in d.also


def _entry(t: int, msg: str) -> JournalEntry:
    return JournalEntry(timestamp_us=t * 1_000_000, message=msg)


CUDA = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
TIMEOUT = (
    "[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600085 milliseconds before timing out."
)


@pytest.mark.parametrize("code", sorted(xid_codes.HARDWARE))
@pytest.mark.parametrize("xid_first", [True, False])
def test_hardware_xid_outranks_its_software_echo(code: int, xid_first: bool) -> None:
    k = _entry(100, f"NVRM: Xid (PCI:0000:3b:00): {code}, pid=7, name=python3, details")
    soft = [_entry(99 if not xid_first else 101, CUDA), _entry(102, TIMEOUT)]
    entries = [k, *soft] if xid_first else [*soft, k]
    d = classify(entries)
    assert d.category == xid_codes.XIDS[code].group, d.render_text()
    assert f"Xid {code}" in d.summary and "0000:3b:00" in d.summary
    assert d.also == []  # the software errors were explained away


@pytest.mark.parametrize("code", sorted(xid_codes.APPLICATION))
def test_application_xid_does_not_outrank_the_software_error(code: int) -> None:
    entries = [
        _entry(100, CUDA),
        _entry(100, f"NVRM: Xid (PCI:0000:3b:00): {code}, pid=7, name=python3, Ch 00000008"),
    ]
    assert classify(entries).category == "cuda-illegal-access"


def test_xid_parse_and_gpu_naming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    e = _entry(
        5,
        "NVRM: Xid (PCI:0000:3B:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    )
    x = xid.parse(e)
    assert x is not None
    assert (x.code, x.pci, x.pid, x.kind) == (79, "0000:3b:00", None, "hardware")
    assert x.message == "GPU has fallen off the bus."
    y = xid.parse(
        _entry(
            6,
            "NVRM: Xid (PCI:0000:9b:00): 94, pid=48307, name=sglang::schedul, Contained ECC error.",
        )
    )
    assert y is not None and (y.pid, y.process, y.code) == (48307, "sglang::schedul", 94)
    assert xid.parse(_entry(7, "NVRM: GPU at PCI:0000:3b:00: GPU-5f2d")) is None
    # /proc/driver/nvidia/gpus/ lists one directory per GPU; NVML numbers them in that order.
    for bus in ("0000:1b:00.0", "0000:3b:00.0", "0000:9b:00.0"):
        (tmp_path / bus).mkdir()
    monkeypatch.setattr(xid, "PROC_GPUS", tmp_path)
    monkeypatch.setattr(xid, "_nvml_index", lambda bus_id: None)  # no NVML here
    assert xid.gpu_index("0000:3b:00") == 1
    assert xid.gpu_index("0000:aa:00") is None
    d = classify([_entry(5, e.message), _entry(6, CUDA)])
    named = xid.name_gpus(d, xid.events([e]))
    assert "GPU 1 (PCI 0000:3b:00) reported Xid 79" in named.summary


def test_kernel_window_argv() -> None:
    argv = xid.kernel_argv(1_700_000_000_500_000, 1_700_000_300_100_000)
    assert argv[argv.index("--since") + 1] == "@1700000000"
    assert argv[argv.index("--until") + 1] == "@1700000301"
    # kernel transport OR root-written "kernel" lines (a forwarder, a container's journal)
    assert argv[-4:] == ["_TRANSPORT=kernel", "+", "SYSLOG_IDENTIFIER=kernel", "_UID=0"]
