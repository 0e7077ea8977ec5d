"""SGLang's memory defaults, as deploy estimates them before a start (the gpu-free-memory rule).

The sizes are 0.5.23's (`arg_groups/memory_hook.py`, `handle_gpu_memory_settings`); profiles on
other releases are estimated with them too (not checked against each release's source).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GIB = 1024  # MiB


def default_mem_fraction_static(total_mib: int, args: Mapping[str, Any], mla: bool) -> float:
    """SGLang's default mem_fraction_static for a GPU of `total_mib` (see the module docstring),
    before its reduction for vision-language models, which only
    lowers it further. An estimate: deploy does not resolve the CUDA graph batch sizes exactly."""
    tp = int(args.get("tp_size") or 1)
    pp = int(args.get("pp_size") or 1)
    if total_mib < 20 * GIB:
        chunk, max_bs = 2048, 8
    elif total_mib < 35 * GIB:
        chunk, max_bs = 4096, 48 if tp < 4 else 160
    elif total_mib < 60 * GIB:
        chunk, max_bs = 4096, 32 if tp < 4 else 160
    elif total_mib < 160 * GIB:
        chunk, max_bs = 8192, 256 if tp < 4 else 512
    else:
        chunk, max_bs = 16384, 512
    chunk = int(args.get("chunked_prefill_size") or chunk)
    reserved = 512 + max(chunk, 2048) * 1.5 + tp * pp / 8 * 1024 + max_bs * 2
    reserved += 1536 if mla else 0
    if total_mib > 60 * GIB:
        reserved = max(reserved, 10 * GIB)
    return round((total_mib - reserved) / total_mib, 3)
