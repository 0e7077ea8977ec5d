"""NVIDIA Xid codes, as data: what the driver's `NVRM: Xid (PCI:dddd:bb:dd): <code>, ...`
kernel lines mean and what to do about them.

From NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) and what GPU fleets report in
the field. Three kinds:

- ``hardware``: the GPU, its memory, its firmware or its link failed. It outranks the software
  errors it causes (a CUDA error, an NCCL timeout on the other ranks): those are its echo.
- ``application``: the driver saw a process misbehave (a bad address, an illegal instruction).
  It backs up the software error the process printed; it is not the cause on its own.
- ``echo``: the driver cleaning up after an earlier error.

Used by `orchestrator.diagnosis.xid` (reading the kernel log around a failure) and by the classifier's
GPU rules in `orchestrator.diagnosis.runtime`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["hardware", "application", "echo"]


@dataclass(frozen=True)
class XidCode:
    code: int
    name: str
    kind: Kind
    group: str  # the classifier category it belongs to: "gpu-xid" ("" for echoes)
    meaning: str  # one line, plain words
    action: str  # what the operator does


_RESET = "drain the node, then reset the GPU (`nvidia-smi -r -i <index>`) or reboot"

XIDS: dict[int, XidCode] = {
    c.code: c
    for c in (
        XidCode(
            13,
            "Graphics Engine Exception",
            "application",
            "gpu-xid",
            "a kernel of the process faulted on the GPU (e.g. an out-of-range address or an illegal instruction)",
            "treat it as the software error printed beside it; if it repeats with different programs on the same GPU, run the GPU's field diagnostics",
        ),
        XidCode(
            31,
            "GPU memory page fault",
            "application",
            "gpu-xid",
            "the process touched GPU memory it does not own (an MMU fault): the driver's side of a CUDA illegal memory access",
            "treat it as the software error printed beside it (a bad index in a kernel); if it follows no software error, run the GPU's field diagnostics",
        ),
        XidCode(
            43,
            "GPU stopped processing",
            "application",
            "gpu-xid",
            "the driver stopped a channel of the process after a fault in its kernels",
            "treat it as the software error printed beside it",
        ),
        XidCode(
            45,
            "Preemptive cleanup",
            "echo",
            "",
            "the driver cleaned up the channels of a process that was killed or crashed",
            "none: it follows an earlier error or a kill",
        ),
        XidCode(
            48,
            "Double Bit ECC Error",
            "hardware",
            "gpu-xid",
            "an uncorrectable double-bit ECC error in the GPU's memory",
            f"{_RESET}; if it comes back, the GPU needs replacing (RMA)",
        ),
        XidCode(
            62,
            "Internal micro-controller halt",
            "hardware",
            "gpu-xid",
            "one of the GPU's internal micro-controllers halted (a hardware or firmware fault, or overheating): the GPU stops answering",
            f"{_RESET}; check its temperature and power (`nvidia-smi -q -d TEMPERATURE,POWER`); if it comes back, run the field diagnostics and have it serviced",
        ),
        XidCode(
            63,
            "ECC page retirement or row remapping event",
            "hardware",
            "gpu-xid",
            "a GPU memory row went bad and was marked for remapping (takes effect at the next GPU reset)",
            f"{_RESET} so the remapped row is used",
        ),
        XidCode(
            64,
            "ECC page retirement or row remapping failure",
            "hardware",
            "gpu-xid",
            "a bad GPU memory row could not be remapped: the memory's self-repair is exhausted",
            "take the GPU out of service and have it replaced (RMA); run the field diagnostics",
        ),
        XidCode(
            74,
            "NVLink error",
            "hardware",
            "gpu-xid",
            "an NVLink (the GPUs' interconnect) link reported an error: collectives over it fail or hang",
            f"{_RESET}; check the links (`nvidia-smi nvlink -s`, `nvidia-smi nvlink -e`) and, on NVSwitch systems, the fabric manager; if it repeats on the same link, have the baseboard serviced",
        ),
        XidCode(
            79,
            "GPU has fallen off the bus",
            "hardware",
            "gpu-xid",
            "the GPU stopped answering on PCIe (power, thermal, a riser or the board itself)",
            "reboot the node; check power, cooling and the PCIe/NVSwitch baseboard (`nvidia-smi -q`, BMC logs); if it repeats on the same slot, have the GPU or baseboard serviced",
        ),
        XidCode(
            94,
            "Contained ECC error",
            "hardware",
            "gpu-xid",
            "an uncorrectable ECC error was contained to the process using that memory, which the driver stopped",
            "restart the service (other processes are unaffected); reset the GPU when convenient so the bad row is remapped",
        ),
        XidCode(
            95,
            "Uncontained ECC error",
            "hardware",
            "gpu-xid",
            "an uncorrectable ECC error that the driver could not contain: every process on the GPU is affected",
            f"{_RESET} before starting the server again",
        ),
        XidCode(
            119,
            "GSP RPC timeout",
            "hardware",
            "gpu-xid",
            "the GPU's System Processor (GSP firmware) stopped answering the driver",
            f"{_RESET}; if it repeats, update the driver / GPU firmware or run with the GSP disabled where supported",
        ),
        XidCode(
            120,
            "GSP error",
            "hardware",
            "gpu-xid",
            "the GPU's System Processor (GSP firmware) reported an error",
            f"{_RESET}; if it repeats, update the driver / GPU firmware",
        ),
        # the NVLink unit errors of NVIDIA's newer catalogue, 144 to 150: one meaning and action
        *(
            XidCode(
                n,
                "NVLink error",
                "hardware",
                "gpu-xid",
                "an NVLink (the GPUs' interconnect) unit reported an error: the link is down or unreliable, and the processes using it fail",
                f"{_RESET}; check the links (`nvidia-smi nvlink -s`, `nvidia-smi nvlink -e`) and the fabric manager; if it repeats on the same GPU, have the GPU or baseboard serviced",
            )
            for n in range(144, 151)
        ),
    )
}

HARDWARE: frozenset[int] = frozenset(c.code for c in XIDS.values() if c.kind == "hardware")
APPLICATION: frozenset[int] = frozenset(c.code for c in XIDS.values() if c.kind == "application")


def lookup(code: int) -> XidCode | None:
    return XIDS.get(code)


def codes_of(group: str) -> tuple[int, ...]:
    """The codes of one classifier category, ascending."""
    return tuple(sorted(c.code for c in XIDS.values() if c.group == group))
