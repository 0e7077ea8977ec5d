"""GPU families and the SGLang defaults that depend on them.

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

# Attention backends that force a page size, and the size they force (overrides.py).
FORCED_PAGE_SIZE: dict[str, int] = {"trtllm_mla": 64, "flashmla": 64, "cutlass_mla": 128}
# Backends that implement top-k > 1 trees with page size > 1 (speculative_hook.py).
TREE_PAGED_BACKENDS: tuple[str, ...] = ("flashinfer", "fa3", "triton")


def default_attention_backend(gpu: GpuKind | None, attention: str | None) -> str | None:
    """SGLang 0.5.23's default attention backend for a DeepSeek-V3-style MLA model, by GPU;
    None where it depends on more than we know."""
    if gpu is None or attention != "mla":
        return None
    if gpu.blackwell and gpu.sm // 10 == 10:  # sm_100/sm_103 (B200, B300); not RTX sm_120
        return "trtllm_mla"
    if gpu.family == "hopper":
        return "fa3"
    return "triton"
