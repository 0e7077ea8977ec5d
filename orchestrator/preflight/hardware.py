"""GPU families (the SGLang defaults that depend on them live in orchestrator/sglang/).

Off the box the GPU comes from `--gpu` or `[hardware] gpu`; on the box from NVML
(see `gpus.py`). Unknown GPU means hardware-dependent rules say they could not check.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuKind:
    name: str
    family: str  # blackwell | hopper | ampere | ada
    sm: int  # compute capability, e.g. 100 for sm_100
    memory_gib: int

    @property
    def blackwell(self) -> bool:
        return self.family == "blackwell"


KINDS: dict[str, GpuKind] = {
    k.name: k
    for k in (
        GpuKind("b200", "blackwell", 100, 180),
        GpuKind("b300", "blackwell", 103, 270),
        GpuKind("gb200", "blackwell", 100, 186),
        GpuKind("gb300", "blackwell", 103, 279),
        GpuKind("h100", "hopper", 90, 80),
        GpuKind("h200", "hopper", 90, 141),
        GpuKind("h20", "hopper", 90, 96),
        GpuKind("h800", "hopper", 90, 80),
        GpuKind("a100", "ampere", 80, 80),
        GpuKind("l40s", "ada", 89, 48),
    )
}
