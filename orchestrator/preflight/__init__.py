"""Preflight: judge a Spec the way SGLang will, before any restart.

`run(spec)` builds the Context (SGLang's defaults overlaid with the profile, the GPU, what the
checkpoints' config.json files say) and applies every rule in `orchestrator.preflight.rules`. A config
"will start" when no finding is an error. `sglang_verdict` additionally runs SGLang's own
argument resolution in the profile's interpreter, where that interpreter has sglang.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from orchestrator.errors import InputError
from orchestrator.preflight.gpus import GpuReport
from orchestrator.preflight.hardware import KINDS
from orchestrator.preflight.rules import cluster as cluster_rules
from orchestrator.preflight.rules import gpu as gpu_rules
from orchestrator.preflight.rules import models as model_rules
from orchestrator.preflight.rules import ports as port_rules
from orchestrator.preflight.rules import redaction as redaction_rules
from orchestrator.preflight.rules import release as release_rules
from orchestrator.preflight.rules import secrets as secret_rules
from orchestrator.preflight.rules import speculative as spec_rules
from orchestrator.preflight.rules import trust as trust_rules
from orchestrator.preflight.rules.base import Context, Finding, Rule
from orchestrator.profiles.spec import Spec
from orchestrator.sglang import PROBE_SCRIPT
from orchestrator.sglang.flags import table, to_argv

RULES: tuple[Rule, ...] = (
    *release_rules.RULES,
    *spec_rules.RULES,
    *model_rules.RULES,
    *gpu_rules.RULES,
    *port_rules.RULES,
    *secret_rules.RULES,
    *trust_rules.RULES,
    *redaction_rules.RULES,
    *cluster_rules.RULES,
)
# What `deploy up` checks even with --no-preflight: who can make root (or the service) run
# what. Skipping SGLang's rules is the operator's call; skipping these is not.
SECURITY_RULES: tuple[Rule, ...] = (*secret_rules.RULES, *trust_rules.RULES)


@dataclass(frozen=True)
class SglangVerdict:
    available: bool
    accepted: bool | None
    detail: str
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    name: str
    findings: tuple[Finding, ...]
    resolved: dict[str, Any]
    sglang: SglangVerdict | None = None

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def disagreement(self) -> str | None:
        if self.sglang is None or not self.sglang.available or self.sglang.accepted is None:
            return None
        if self.sglang.accepted == self.ok:
            return None
        if self.ok:
            return (
                "SGLang rejects this config but deploy's rules found no error: "
                + self.sglang.detail
            )
        stricter = all(f.stricter for f in self.errors)
        return "SGLang accepts this config but deploy refuses it" + (
            " (deploy is deliberately stricter here)" if stricter else ""
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.name,
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
            "resolved": self.resolved,
            "sglang": asdict(self.sglang) if self.sglang else None,
            "disagreement": self.disagreement,
        }


def context(
    spec: Spec,
    *,
    gpu: str | None = None,
    on_box: bool = False,
    gpus: GpuReport | None = None,
    user_mode: bool = False,
) -> Context:
    """The Context the rules read. The GPU kind they judge for: `--gpu` (explicit) wins, else
    what NVML sees (`gpus`, from `orchestrator.preflight.gpus.probe()`; None = not probed), else the
    profile's `[hardware] gpu`. NVML's view is judged as the target unless `--gpu` names
    another kind off the box (then the GPUs themselves are not checked: gpu-mismatch says so)."""
    args = {**table(spec.sglang.version).defaults(), **spec.server}
    args["nnodes"] = spec.cluster.nodes  # [cluster] nodes: what every node's unit passes
    for name, where in ((gpu, "--gpu"), (spec.hardware.gpu, "[hardware] gpu")):
        if name is not None and name not in KINDS:
            raise InputError(
                f"{where} {name!r} is not a GPU deploy knows",
                field=where,
                fix=f"use one of {', '.join(KINDS)}",
            )
    nvml, _ = gpu_rules.nvml_kind(spec, args, gpus)
    probed = gpus is not None and gpus.available
    target = probed and (on_box or gpu is None or (nvml is not None and nvml.name == gpu))
    if gpu:
        kind, source = KINDS[gpu], "--gpu"
    elif target and nvml is not None:
        kind, source = nvml, "NVML"
    elif spec.hardware.gpu:
        kind, source = KINDS[spec.hardware.gpu], "[hardware] gpu"
    else:
        kind, source = None, ""
    notes = {"gpu_source": source, "nvml_target": "1" if target else ""}
    if gpu:
        notes["gpu_asked"] = gpu
    m = spec.model
    base = model_rules.model_info(
        spec.server.get("model_path"),
        {
            "architecture": m.architecture,
            "attention": m.attention,
            "hidden_size": m.hidden_size,
            "num_attention_heads": m.num_attention_heads,
        },
    )
    draft = model_rules.model_info(
        spec.server.get("speculative_draft_model_path"),
        {"architecture": m.draft_architecture, "hidden_size": m.draft_hidden_size}
        if spec.server.get("speculative_draft_model_path")
        else {},
    )
    return Context(
        spec=spec,
        args=args,
        gpu=kind,
        base=base,
        draft=draft,
        on_box=on_box,
        notes=notes,
        gpus=gpus,
        user_mode=user_mode,
    )


def security(spec: Spec, *, user_mode: bool = False) -> list[Finding]:
    """Only SECURITY_RULES, judged on the box: what `deploy up --no-preflight` still checks."""
    ctx = context(spec, on_box=True, user_mode=user_mode)
    return [f for rule in SECURITY_RULES for f in rule.check(ctx)]


def run(
    spec: Spec,
    *,
    gpu: str | None = None,
    on_box: bool = False,
    gpus: GpuReport | None = None,
    user_mode: bool = False,
) -> Report:
    """Every rule on the spec. `user_mode`: for a user manager, where nothing runs as root."""
    ctx = context(spec, gpu=gpu, on_box=on_box, gpus=gpus, user_mode=user_mode)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule.check(ctx))
    backend, backend_who = ctx.attention_backend()
    page, page_who = ctx.page_size()
    spec_values = speculative_resolution(ctx, ok=not any(f.severity == "error" for f in findings))
    resolved = {
        "sglang": spec.sglang.to_json(),
        "speculative_algorithm": ctx.algorithm,
        **{k: v["value"] for k, v in spec_values.items()},
        "provenance": {
            **{k: v["set_by"] for k, v in spec_values.items()},
            "attention_backend": backend_who,
            "page_size": page_who,
        },
        "attention_backend": {"value": backend, "set_by": backend_who},
        "page_size": {"value": page, "set_by": page_who},
        "gpu": ctx.gpu.name if ctx.gpu else None,
        "gpu_source": ctx.notes.get("gpu_source") or None,
        "nvml": gpus.to_json() if gpus is not None else None,
        "base_model": {
            "source": ctx.base.source,
            "state": ctx.base.state,
            "architecture": ctx.base.architecture,
        },
        "drafter": {
            "source": ctx.draft.source,
            "state": ctx.draft.state,
            "architecture": ctx.draft.architecture,
        },
    }
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order[f.severity])
    return Report(spec.name, tuple(findings), resolved)


_SPEC_KEYS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")


def speculative_resolution(ctx: Context, *, ok: bool = True) -> dict[str, dict[str, Any]]:
    """The speculative values SGLang will run with, each with who set it (as SGLang's
    arg_groups record it): the profile, a profile it extends, SGLang's automatic choice, or a
    value another setting forces. `ok`: the config passes preflight (else the values are shown
    as the profile sets them: SGLang refuses before it resolves them)."""
    r = ctx.release
    out = {
        k: {
            "value": ctx.args.get(k),
            "set_by": ctx.set_by(k) if ctx.is_set(k) else f"SGLang {r.version}'s default (unset)",
        }
        for k in _SPEC_KEYS
    }
    if ctx.algorithm not in r.eagle_family or not ok:
        return out
    steps, topk, draft = (ctx.args.get(k) for k in _SPEC_KEYS)
    adaptive = r.adaptive_skips_auto_choice and bool(ctx.args.get("speculative_adaptive"))
    if steps is None and topk is None and draft is None and not adaptive:
        arch = ctx.base.architecture
        auto = r.auto_params(arch)
        why = (
            f"chosen by SGLang {r.version} for {arch or 'this architecture'} "
            f"(all three unset: it picks steps, top-k, draft tokens = {auto})"
        )
        for k, v in zip(_SPEC_KEYS, auto, strict=True):
            out[k] = {"value": v, "set_by": why}
        steps, topk, draft = auto
    if topk == 1 and steps is not None and draft != int(steps) + 1:
        out["speculative_num_draft_tokens"] = {
            "value": int(steps) + 1,
            "set_by": f"forced to steps + 1 by top-k 1 (SGLang {r.version} replaces "
            f"{draft} set by {out['speculative_num_draft_tokens']['set_by']})",
        }
    return out


def sglang_verdict(
    spec: Spec, *, timeout_s: float = 300.0, argv: Sequence[str] | None = None
) -> SglangVerdict:
    """SGLang's own verdict from the profile's interpreter (None-safe: unavailable says why)."""

    args = list(argv) if argv is not None else to_argv(spec.server)
    try:
        proc = subprocess.run(
            [spec.unit.python, str(PROBE_SCRIPT), *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={
                "PATH": "/usr/bin:/bin",
                "SGLANG_IS_IN_CI": "0",
                "CUDA_VISIBLE_DEVICES": "",
                # As in the unit: a local path that is not there must not send transformers
                # to the Hub.
                "HF_HUB_OFFLINE": "1",
            },
        )
    except FileNotFoundError:
        return SglangVerdict(False, None, f"{spec.unit.python} does not exist on this machine")
    except subprocess.TimeoutExpired:
        return SglangVerdict(
            False, None, f"SGLang's argument resolution did not finish in {timeout_s:.0f} s"
        )
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return SglangVerdict(False, None, f"the probe failed in {spec.unit.python}: {tail}")
    data = json.loads(line)
    detail = str(data.get("detail", ""))
    accepted = data.get("accepted")
    if accepted is False and any(m in detail for m in GPU_BOUND_ERRORS):
        # The probe sees no GPU, so SGLang's GPU checks cannot pass here: no verdict either way.
        accepted = None
        detail += " (depends on the GPU, which the probe cannot see: not a verdict)"
    return SglangVerdict(
        available=bool(data.get("available")),
        accepted=accepted,
        detail=detail,
        resolved=data.get("resolved") or {},
    )


# SGLang errors that only say the probe's machine lacks the GPU the unit will run on.
GPU_BOUND_ERRORS = ("only supported on Blackwell", "only supported on Hopper", "No accelerator")
