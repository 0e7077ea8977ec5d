"""The GPUs on this machine, read from NVML (nvidia-ml-py), and what kind each one is.

`probe()` never raises: no NVML library, no driver, no devices or an NVML error all give a
`GpuReport` with `available=False` and a plain `reason`. `pynvml` is imported inside the
functions so that importing this module (and `deploy --help`) stays fast.

A process on a GPU is named by its PID, its command name (/proc/PID/comm) and the systemd
unit its cgroup belongs to (/proc/PID/cgroup), so a finding can say "pid 4242 (python3,
other-llm.service)" and the fix can say which unit to stop.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from orchestrator.preflight.hardware import KINDS, GpuKind

MIB = 1 << 20


class GpuProcess(NamedTuple):
    pid: int
    used_mib: int | None  # None where NVML cannot say (no permission, some containers)
    name: str | None  # /proc/PID/comm; None when the PID is not visible here
    unit: str | None  # systemd unit from /proc/PID/cgroup ("x.service"), None if none

    def describe(self) -> str:
        who = ", ".join(x for x in (self.name, self.unit) if x) or "not visible in /proc here"
        mem = (
            "an unknown amount of"
            if self.used_mib is None
            else f"{self.used_mib / 1024:.1f} GiB of"
        )
        return f"pid {self.pid} ({who}) holds {mem} memory"


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (PCI bus order)
    name: str  # "NVIDIA B200"
    uuid: str
    sm: int  # compute capability as one number: 100 for sm_100, 90 for sm_90
    memory_total_mib: int
    memory_free_mib: int
    processes: tuple[GpuProcess, ...] = ()
    processes_known: bool = True  # False when NVML refused to list them

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["processes"] = [p._asdict() for p in self.processes]
        kind = kind_of(self)
        d["kind"] = kind.name if kind else None
        return d


@dataclass
class GpuReport:
    available: bool
    reason: str = ""  # why not, when not available
    driver_version: str | None = None
    cuda_version: str | None = None  # the driver's CUDA version, "12.8"
    gpus: tuple[Gpu, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"gpus": [g.to_json() for g in self.gpus]}

    def table(self) -> list[str]:
        """Text lines for the CLI: one line per GPU, then one per process."""
        if not self.available:
            return [f"GPUs: not read from NVML: {self.reason}"]
        lines = [
            f"GPUs (NVML, driver {self.driver_version or '?'}, CUDA {self.cuda_version or '?'}):"
        ]
        for g in self.gpus:
            kind = kind_of(g)
            lines.append(
                f"  {g.index}  {g.name:<24} sm_{g.sm:<4} {kind.name if kind else '?':<6}"
                f" {g.memory_free_mib / 1024:6.1f} / {g.memory_total_mib / 1024:6.1f} GiB free"
            )
            for p in g.processes:
                lines.append(f"       {p.describe()}")
            if not g.processes_known:
                lines.append("       (NVML did not list the processes on this GPU)")
        return lines


# NVML device names -> orchestrator.preflight.hardware.KINDS. Tokens, so "h20" does not match "H200"
# and "b200" does not match "GB200".
_NAME_RE = re.compile(
    r"(?<![a-z0-9])(gb300|gb200|b300|b200|h800|h200|h100|h20|a100|l40s)(?![a-z0-9])"
)


def family_of_sm(sm: int) -> str | None:
    """The GPU family for a compute capability (major*10 + minor), as SGLang groups them:
    its is_blackwell() is majors 10, 11 and 12, its is_sm90 major 9."""
    major, minor = divmod(sm, 10)
    if major in (10, 11, 12):
        return "blackwell"
    if major == 9:
        return "hopper"
    if major == 8:
        return "ada" if minor == 9 else "ampere"
    return None


def kind_of(gpu: Gpu) -> GpuKind | None:
    """The deploy GPU kind of an NVML device: by name, else by compute capability (a kind
    named after the device, in the family its sm_XY belongs to; see `kind_note`), else None."""
    m = _NAME_RE.search(gpu.name.lower())
    if m:
        return KINDS[m.group(1)]
    family = family_of_sm(gpu.sm)
    if family is None:
        return None
    return GpuKind(gpu.name, family, gpu.sm, round(gpu.memory_total_mib / 1024))


def kind_note(gpu: Gpu) -> str | None:
    """Says so when `kind_of` went by compute capability instead of by name."""
    if _NAME_RE.search(gpu.name.lower()):
        return None
    family = family_of_sm(gpu.sm)
    if family is None:
        return f"{gpu.name} (sm_{gpu.sm}) is neither a GPU nor a GPU family deploy knows"
    return (
        f"{gpu.name} is not a GPU deploy knows by name; judged as {family} by its compute "
        f"capability sm_{gpu.sm}"
    )


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def unit_of_cgroup(text: str) -> str | None:
    """The systemd unit (the innermost `*.service` or `*.scope`) in /proc/PID/cgroup text,
    for cgroup v2 ("0::/system.slice/x.service") and v1 ("1:name=systemd:/...")."""
    paths: list[str] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            paths.insert(0, parts[2])  # the unified hierarchy first
        elif parts[1] == "name=systemd":
            paths.append(parts[2])
    for p in paths:
        units = [c for c in p.split("/") if c.endswith((".service", ".scope"))]
        if units:
            return units[-1]
    return None


def process_info(pid: int, used_bytes: int | None) -> GpuProcess:
    comm = _read(f"/proc/{pid}/comm")
    cgroup = _read(f"/proc/{pid}/cgroup")
    return GpuProcess(
        pid=pid,
        used_mib=None if used_bytes is None else int(used_bytes) // MIB,
        name=comm.strip() if comm else None,
        unit=unit_of_cgroup(cgroup) if cgroup else None,
    )


def _init_failure(pynvml: Any, e: Exception) -> str:
    if isinstance(e, pynvml.NVMLError_LibraryNotFound):
        return (
            "the NVML library (libnvidia-ml.so.1, part of the NVIDIA driver) is not on this "
            "machine: no NVIDIA driver is installed here"
        )
    if isinstance(e, pynvml.NVMLError_DriverNotLoaded):
        return "the NVIDIA kernel driver is not loaded (nvidia-smi fails the same way)"
    if isinstance(e, pynvml.NVMLError_NoPermission):
        return "no permission to open the NVIDIA devices (/dev/nvidia*)"
    if isinstance(e, pynvml.NVMLError_LibRmVersionMismatch):
        return "the NVML library and the loaded kernel driver differ in version (reboot after a driver upgrade)"
    return f"NVML failed to start: {e}"


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def probe() -> GpuReport:
    """Read the GPUs from NVML. Never raises."""
    try:
        import pynvml
    except ImportError:
        return GpuReport(False, "nvidia-ml-py (the pynvml module) is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return GpuReport(False, _init_failure(pynvml, e))
    except Exception as e:  # ctypes/OS trouble loading the library
        return GpuReport(False, f"NVML failed to start: {type(e).__name__}: {e}")
    try:
        return _read_devices(pynvml)
    except pynvml.NVMLError as e:
        return GpuReport(False, f"NVML: {e}")
    except Exception as e:
        return GpuReport(False, f"reading NVML failed: {type(e).__name__}: {e}")
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _read_devices(pynvml: Any) -> GpuReport:
    driver = str(pynvml.nvmlSystemGetDriverVersion())
    try:
        cuda: str | None = _cuda_version(int(pynvml.nvmlSystemGetCudaDriverVersion()))
    except pynvml.NVMLError:
        cuda = None
    count = int(pynvml.nvmlDeviceGetCount())
    if count == 0:
        return GpuReport(False, "NVML works but sees no GPUs", driver, cuda)
    gpus = []
    for i in range(count):
        try:
            gpus.append(_read_device(pynvml, i))
        except pynvml.NVMLError as e:
            return GpuReport(False, f"NVML could not read GPU {i}: {e}", driver, cuda)
    return GpuReport(True, "", driver, cuda, tuple(gpus))


def _read_device(pynvml: Any, i: int) -> Gpu:
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    try:
        procs = tuple(
            process_info(int(p.pid), p.usedGpuMemory)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        )
        known = True
    except pynvml.NVMLError:
        procs, known = (), False
    return Gpu(
        index=i,
        name=str(pynvml.nvmlDeviceGetName(h)),
        uuid=str(pynvml.nvmlDeviceGetUUID(h)),
        sm=int(major) * 10 + int(minor),
        memory_total_mib=int(mem.total) // MIB,
        memory_free_mib=int(mem.free) // MIB,
        processes=procs,
        processes_known=known,
    )


def probe_for_cli(enabled: bool) -> GpuReport | None:
    """What the CLI passes to `preflight.run(..., gpus=...)`: None with `--no-nvml`, else the
    probe (which says itself when NVML is not there)."""
    return probe() if enabled else None
