"""GPU Xid events around a failure: the kernel's `NVRM: Xid` lines of the failure's time window.

`kernel_entries(since_us, until_us)` reads them from the journal (`journalctl -k` is
`_TRANSPORT=kernel` of this boot; entries that root wrote with SYSLOG_IDENTIFIER=kernel count
too: that is how a kmsg forwarder, or a container without /dev/kmsg, carries them). They are
merged into the unit's journal before classifying (`orchestrator.diagnosis.runtime` has the GPU
rules; a hardware Xid explains the software errors it causes). `events(entries)` turns them
into plain data, and `name_gpus` says which GPU a PCI bus id is (the nvidia-smi index, from
NVML, else from the order of /proc/driver/nvidia/gpus/, which NVML follows).

Meanings: `orchestrator.diagnosis.xid_codes`.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.diagnosis import xid_codes
from orchestrator.diagnosis.journal import JournalEntry, parse_json_lines

XID_LINE = re.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?\): "
    r"(?P<code>\d+),\s*(?:pid=(?P<pid>'?[^,]*'?),\s*name=(?P<name>[^,]*),\s*)?(?P<msg>.*)$"
)
PROC_GPUS = Path("/proc/driver/nvidia/gpus")
_PCI_IN_SUMMARY = re.compile(
    r"the GPU at PCI (?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})"
)


@dataclass(frozen=True)
class XidEvent:
    code: int
    pci: str  # "0000:3b:00" (domain:bus:device), lower case
    pid: int | None
    process: str | None
    message: str
    timestamp_us: int | None
    kind: str  # hardware | application | echo | unknown
    meaning: str
    gpu: int | None = None  # nvidia-smi index, when known

    def to_json(self) -> dict[str, Any]:
        return {
            "xid": self.code,
            "pci": self.pci,
            "gpu": self.gpu,
            "kind": self.kind,
            "meaning": self.meaning,
            "pid": self.pid,
            "process": self.process,
            "message": self.message,
            "timestamp_us": self.timestamp_us,
        }


def parse(entry: JournalEntry) -> XidEvent | None:
    m = XID_LINE.search(entry.message)
    if m is None:
        return None
    code = int(m["code"])
    info = xid_codes.lookup(code)
    pid_s = (m["pid"] or "").strip("'")
    return XidEvent(
        code=code,
        pci=m["pci"].lower(),
        pid=int(pid_s) if pid_s.isdigit() else None,
        process=(m["name"] or "").strip() or None,
        message=m["msg"].strip(),
        timestamp_us=entry.timestamp_us,
        kind=info.kind if info else "unknown",
        meaning=info.meaning if info else "an Xid this version of deploy has no meaning for",
    )


def events(entries: Iterable[JournalEntry]) -> list[XidEvent]:
    out = []
    for e in entries:
        x = parse(e)
        if x is not None:
            out.append(replace(x, gpu=gpu_index(x.pci)))
    return out


def kernel_argv(since_us: int, until_us: int, journalctl: str = "journalctl") -> list[str]:
    """Kernel lines between the two times (µs since the epoch). No `-b`: the window already
    bounds it, and a sandboxed unit (ProtectKernelTunables=, ProtectProc=, in a container)
    may read another boot id than the journal's, and `-b` would then find nothing."""
    return [
        journalctl,
        "-o",
        "json",
        "--no-pager",
        "--since",
        f"@{since_us // 1_000_000}",
        "--until",
        f"@{(until_us + 999_999) // 1_000_000}",
        "_TRANSPORT=kernel",
        "+",
        "SYSLOG_IDENTIFIER=kernel",
        "_UID=0",
    ]


def kernel_entries(
    since_us: int, until_us: int, *, journalctl: str = "journalctl"
) -> list[JournalEntry]:
    """The `NVRM: Xid` kernel lines of the window, oldest first ([] when none or unreadable)."""
    try:
        proc = subprocess.run(
            kernel_argv(since_us, until_us, journalctl),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    return [e for e in parse_json_lines(proc.stdout) if "NVRM: Xid" in e.message]


def merge(
    unit_entries: Sequence[JournalEntry], kernel: Sequence[JournalEntry]
) -> list[JournalEntry]:
    """The unit's lines and the kernel's, in time order (stable for equal times)."""
    if not kernel:
        return list(unit_entries)
    both = [*unit_entries, *kernel]
    return sorted(both, key=lambda e: e.timestamp_us if e.timestamp_us is not None else 0)


# --------------------------------------------------------------------------- GPU index


@cache
def _nvml_index(bus_id: str) -> int | None:
    try:  # here, not at the top: pynvml is optional and absent off GPU boxes
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError and its many children: no driver, no library, no rights
        return None
    try:
        try:
            h = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id.encode())
            return int(pynvml.nvmlDeviceGetIndex(h))
        except Exception:
            # A GPU that fell off the bus has no handle by PCI id: match the others' ids.
            for i in range(int(pynvml.nvmlDeviceGetCount())):
                with contextlib.suppress(Exception):
                    info = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(i))
                    got = info.busId.decode() if isinstance(info.busId, bytes) else info.busId
                    if _norm(got) == _norm(bus_id):
                        return i
            return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _norm(bus_id: str) -> str:
    """'00000000:3B:00.0' or '0000:3b:00' -> '0000:3b:00' (NVML pads the domain to 8 digits)."""
    s = bus_id.strip().lower()
    dom, _, rest = s.partition(":")
    rest = rest.split(".")[0]
    return f"{int(dom, 16):04x}:{rest}" if dom else rest


def _proc_index(pci: str) -> int | None:
    try:
        ids = sorted(_norm(p.name) for p in PROC_GPUS.iterdir())
    except OSError:
        return None
    return ids.index(pci) if pci in ids else None


def gpu_index(pci: str) -> int | None:
    """The nvidia-smi index of the GPU at PCI 'dddd:bb:dd', or None when nothing says."""
    pci = _norm(pci)
    got = _nvml_index(pci + ".0")
    return got if got is not None else _proc_index(pci)


def name_gpus(diagnosis: Any, xids: Sequence[XidEvent]) -> Any:
    """The diagnosis with "the GPU at PCI X" named "GPU N (PCI X)" where the index is known."""
    index = {x.pci: x.gpu for x in xids if x.gpu is not None}

    def sub(m: re.Match[str]) -> str:
        pci = m["pci"].lower()
        n = index.get(pci) if pci in index else gpu_index(pci)
        return f"GPU {n} (PCI {pci})" if n is not None else m[0]

    summary = _PCI_IN_SUMMARY.sub(sub, diagnosis.summary)
    if summary == diagnosis.summary:
        return diagnosis
    return replace(diagnosis, summary=summary)
