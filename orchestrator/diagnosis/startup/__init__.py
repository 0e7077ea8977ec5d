"""The start-up rules, as data: what SGLang / PyTorch / NCCL / CUDA / systemd print
when a start fails, which category that is, and the fix.

Read off the newest SGLang release's source (its argument hooks, engine entry point,
scheduler, memory-pool sizing, model runner, weight loader, linear layers, an EAGLE-3 draft
model, its utilities; `orchestrator.sglang` records the release, its messages and frames, and
`orchestrator.sglang.code` the files) and from what PyTorch, NCCL, huggingface_hub, uvicorn,
the kernel and systemd print.

Roles are documented in `orchestrator.diagnosis.model`; how the cause is chosen in
`orchestrator.diagnosis.engine`.
"""

from __future__ import annotations

from orchestrator.diagnosis.model import Rule
from orchestrator.diagnosis.startup import (
    architectures,
    builds,
    collectives,
    gpu,
    host,
    packages,
    sglang_args,
)

__all__ = ["STARTUP_ORDER", "STARTUP_RULES"]

# The rules live by failure family (one module each); their priority is this order, which decides
# ties between rules that match the same evidence: a new rule goes where it ranks, not at the end.
STARTUP_ORDER: tuple[str, ...] = (
    "spec-params-need-num-steps",
    "spec-config-invalid",
    "drafter-mismatch",
    "tp-size-indivisible",
    "attention-backend-unsupported",
    "kernel-package-mismatch",
    "python-import-error",
    "exec-failed",
    "driver-too-old",
    "gpu-unavailable",
    "kernel-unsupported-arch",
    "hf-auth",
    "hf-hub-unreachable",
    "model-not-found",
    "model-arch-unsupported",
    "warmup-proxy",
    "port-in-use",
    "dist-init-timeout",
    "ray-init-failed",
    "jit-build-failed",
    "lora-unsupported",
    "host-oom-killed",
    "host-memory-exhausted",
    "disk-full",
    "cuda-oom",
    "nccl-error",
    "cuda-graph-capture-failed",
    "start-limit-hit",
    "startup-timeout",
)

_BY_ID: dict[str, Rule] = {
    r.id: r
    for r in (
        *sglang_args.RULES,
        *packages.RULES,
        *architectures.RULES,
        *builds.RULES,
        *gpu.RULES,
        *host.RULES,
        *collectives.RULES,
    )
}
if sorted(_BY_ID) != sorted(STARTUP_ORDER):
    raise RuntimeError(
        f"startup: the family modules' rules {sorted(_BY_ID)} and STARTUP_ORDER differ"
    )

STARTUP_RULES: tuple[Rule, ...] = tuple(_BY_ID[i] for i in STARTUP_ORDER)
