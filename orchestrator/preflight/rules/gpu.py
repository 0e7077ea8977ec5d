"""Rules that depend on the GPU the server runs on: SGLang's hardware-dependent defaults, and
what NVML says about this machine's GPUs (count, kind, free memory, who else holds them)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.preflight.gpus import Gpu, GpuProcess, GpuReport, kind_note, kind_of
from orchestrator.preflight.hardware import KINDS, GpuKind
from orchestrator.preflight.rules.base import Context, Finding, Rule
from orchestrator.profiles.spec import Spec
from orchestrator.sglang.enforcement import enforced_at
from orchestrator.sglang.memory import default_mem_fraction_static


def trtllm_mla_blackwell(ctx: Context) -> Iterator[Finding]:
    chosen = {
        str(ctx.args[k])
        for k in ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
        if ctx.args.get(k)
    }
    if "trtllm_mla" not in chosen:
        return
    if ctx.gpu is None:
        yield Finding(
            "trtllm-mla-needs-blackwell",
            "warning",
            ("--attention-backend",),
            "trtllm_mla runs only on Blackwell GPUs (SM100/SM12x), and the GPU is not known here",
            "give the GPU with --gpu or [hardware] gpu so this can be checked",
        )
    elif not ctx.gpu.blackwell:
        yield Finding(
            "trtllm-mla-needs-blackwell",
            "error",
            ("--attention-backend",),
            f"trtllm_mla runs only on Blackwell GPUs; this box has {ctx.gpu.name} (sm_{ctx.gpu.sm}). "
            "SGLang raises " + ctx.release.message("trtllm-mla-blackwell").line(),
            "drop attention_backend to take SGLang's default, or set fa3 (Hopper) / flashinfer / triton",
        )


def gpu_known(ctx: Context) -> Iterator[Finding]:
    if ctx.gpu is None:
        yield Finding(
            "gpu-unknown",
            "info",
            (),
            "the GPU is not known, so SGLang's hardware-dependent defaults (attention backend, page "
            "size) could not be applied: spec-tree-page-size-backend, draft-attention-backend and "
            "trtllm-mla-needs-blackwell were checked only against explicit settings",
            "pass --gpu (b200, h200, ...) or set [hardware] gpu in the profile",
        )


# ---------------------------------------------------------------------------------------------
# What NVML says about this machine (ctx.gpus, from orchestrator.preflight.gpus.probe()).
# ---------------------------------------------------------------------------------------------

NVML_RULES = ("gpu-count", "gpu-mixed", "gpu-free-memory", "gpu-busy", "gpu-mismatch")
GIB = 1024  # MiB
BUSY_MIB = 1024  # a foreign process under this much is a warning, from this much an error
UNBALANCED = 0.9  # SGLang: min free over the ranks < 0.9 x a rank's own free -> RuntimeError
INBALANCE_ENV = "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK"  # SGLang's spelling; default on
WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth")


def gpus_needed(args: Mapping[str, Any]) -> int:
    """GPUs one node of the server uses: tp_size x pp_size over nnodes."""
    tp = int(args.get("tp_size") or 1)
    pp = int(args.get("pp_size") or 1)
    nnodes = max(int(args.get("nnodes") or 1), 1)
    return max(-(-tp * pp // nnodes), 1)


def visible_gpus(spec: Spec, report: GpuReport) -> tuple[list[Gpu], str | None]:
    """The GPUs CUDA will show the server, in CUDA's order, and what narrowed them (the
    unit's CUDA_VISIBLE_DEVICES). CUDA stops at the first entry it cannot resolve."""
    cvd = spec.unit.environment.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return list(report.gpus), None
    out: list[Gpu] = []
    for tok in (t.strip() for t in cvd.split(",")):
        if tok.isdigit():
            match = [g for g in report.gpus if g.index == int(tok)]
        elif tok.startswith("GPU-"):
            match = [g for g in report.gpus if g.uuid.startswith(tok)]
        else:
            match = []
        if len(match) != 1 or match[0] in out:
            break
        out.append(match[0])
    return out, f'CUDA_VISIBLE_DEVICES="{cvd}" in [unit.environment]'


def server_gpus(spec: Spec, args: Mapping[str, Any], report: GpuReport) -> list[Gpu]:
    """The GPUs the server's ranks will run on: base_gpu_id + i * gpu_id_step."""
    visible, _ = visible_gpus(spec, report)
    base = int(args.get("base_gpu_id") or 0)
    step = int(args.get("gpu_id_step") or 1)
    picks = (base + i * step for i in range(gpus_needed(args)))
    return [visible[i] for i in picks if 0 <= i < len(visible)]


def nvml_kind(
    spec: Spec, args: Mapping[str, Any], report: GpuReport | None
) -> tuple[GpuKind | None, str]:
    """The kind of GPU the server will run on, per NVML (its first GPU), and a note when the
    kind was inferred from the compute capability rather than the name."""
    if report is None or not report.available or not report.gpus:
        return None, ""
    used = server_gpus(spec, args, report) or list(report.gpus)
    return kind_of(used[0]), kind_note(used[0]) or ""


def _nvml_here(ctx: Context) -> bool:
    """NVML was read and describes the GPUs the rules judge (see preflight.context)."""
    return ctx.gpus is not None and ctx.gpus.available and ctx.notes.get("nvml_target") == "1"


def _own_units(ctx: Context) -> tuple[str, ...]:
    return ctx.spec.unit_names


def _ranges(idx: Sequence[int]) -> str:
    idx = sorted(idx)
    out, start = [], None
    for i, n in enumerate(idx):
        if start is None:
            start = n
        if i + 1 == len(idx) or idx[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return "GPU " + ",".join(out) if len(idx) == 1 else "GPUs " + ",".join(out)


def gpu_count(ctx: Context) -> Iterator[Finding]:
    if not _nvml_here(ctx):
        return
    assert ctx.gpus is not None
    visible, narrowed = visible_gpus(ctx.spec, ctx.gpus)
    need = gpus_needed(ctx.args)
    base = int(ctx.args.get("base_gpu_id") or 0)
    step = int(ctx.args.get("gpu_id_step") or 1)
    last = base + (need - 1) * step
    if last < len(visible):
        return
    tp, pp = int(ctx.args.get("tp_size") or 1), int(ctx.args.get("pp_size") or 1)
    what = f"tp_size {tp}" + (f" x pp_size {pp}" if pp > 1 else "")
    if int(ctx.args.get("nnodes") or 1) > 1:
        what += f" over nnodes {ctx.args.get('nnodes')}"
    seen = f"NVML sees {len(ctx.gpus.gpus)} GPU(s)"
    if narrowed:
        seen += f" and {narrowed} leaves {len(visible)} of them visible to the server"
    if base or step != 1:
        what += f" from base_gpu_id {base} in steps of {step}"
    fix = f"set tp_size to {len(visible)} or fewer" if len(visible) else "make GPUs visible"
    if narrowed:
        fix += f", or list {last + 1} GPUs in CUDA_VISIBLE_DEVICES in [unit.environment] (or remove it)"
    if base or step != 1:
        fix += ", or lower base_gpu_id / gpu_id_step"
    yield Finding(
        "gpu-count",
        "error",
        ("--tp-size", "--pp-size"),
        f"{what} needs {need} GPUs (the last at CUDA index {last}), but {seen}; SGLang "
        "fails at start-up when a rank's GPU does not exist",
        fix,
    )


def gpu_mixed(ctx: Context) -> Iterator[Finding]:
    if not _nvml_here(ctx):
        return
    assert ctx.gpus is not None
    used = server_gpus(ctx.spec, ctx.args, ctx.gpus)
    groups: dict[str, list[int]] = {}
    for g in used:
        groups.setdefault(f"{g.name} (sm_{g.sm})", []).append(g.index)
    if len(groups) < 2:
        return
    listing = "; ".join(f"{_ranges(ix)}: {name}" for name, ix in groups.items())
    biggest = max(groups.values(), key=len)
    yield Finding(
        "gpu-mixed",
        "error",
        ("--tp-size",),
        f"the server's GPUs are not of one kind ({listing}); SGLang picks its defaults (attention "
        "backend, chunked prefill, memory fraction) from one GPU and sizes the memory pools for the "
        "smallest, and its tensor-parallel ranks must run the same kernels",
        f'set CUDA_VISIBLE_DEVICES = "{",".join(map(str, biggest))}" in [unit.environment] (GPUs of one '
        f"kind) and tp_size to {len(biggest)} or fewer",
    )


def checkpoint_mib(path: str | None) -> int | None:
    """The size of a local checkpoint's weight files (top level, symlinks followed), or None."""
    if not path:
        return None
    try:
        files = [p for p in Path(path).iterdir() if p.name.endswith(WEIGHT_FILES)]
        total = sum(p.stat().st_size for p in files)
    except OSError:
        return None
    return total // (1 << 20) if files else None


def _own_mib(ctx: Context, g: Gpu) -> int:
    """Memory on `g` held by this deployment's own units: `up` restarts them, which frees it."""
    own = _own_units(ctx)
    return sum(p.used_mib or 0 for p in g.processes if p.unit in own)


def gpu_free_memory(ctx: Context) -> Iterator[Finding]:
    if not _nvml_here(ctx):
        return
    assert ctx.gpus is not None
    used = server_gpus(ctx.spec, ctx.args, ctx.gpus)
    if not used:
        return
    free = {g.index: g.memory_free_mib + _own_mib(ctx, g) for g in used}
    own_note = (
        " (counting as free what this deployment's own unit holds: `up` restarts it)"
        if any(_own_mib(ctx, g) for g in used)
        else ""
    )
    lo = min(used, key=lambda g: free[g.index])
    hi = max(used, key=lambda g: free[g.index])
    tp = int(ctx.args.get("tp_size") or 1)

    # 1. SGLang's own balance check (distributed/bootstrap.py, _check_tp_memory_balance).
    if tp > 1 and free[lo.index] < UNBALANCED * free[hi.index]:
        off = ctx.spec.unit.environment.get(INBALANCE_ENV, "").lower() in ("0", "false", "no")
        yield Finding(
            "gpu-free-memory",
            "warning" if off else "error",
            ("--tp-size",),
            f"GPU {lo.index} has {free[lo.index] / GIB:.1f} GiB free but GPU {hi.index} has "
            f"{free[hi.index] / GIB:.1f} GiB{own_note}: less than 90% of it. SGLang "
            + (
                f'logs (with {INBALANCE_ENV}=0) "The memory capacity is unbalanced. Some GPUs may '
                "be occupied by other processes.\" and sizes every rank's pools for the emptiest GPU"
                if off
                else "stops with RuntimeError: The memory capacity is unbalanced. Some GPUs may be "
                "occupied by other processes."
            ),
            (
                f"use GPUs of one size (see gpu-mixed): GPU {lo.index} has less memory than GPU {hi.index}"
                if lo.memory_total_mib < hi.memory_total_mib
                else f"free GPU {lo.index} (see gpu-busy for who holds it), or move the server off it "
                "with CUDA_VISIBLE_DEVICES in [unit.environment]"
            ),
        )

    # 2. The static pool: mem_fraction_static x the free memory SGLang measures at start-up
    #    (kv_cache_configurator.py, _profile_available_bytes) must hold the weights and a KV cache.
    mfs_set = ctx.args.get("mem_fraction_static")
    mla = ctx.attention_kind == "mla"
    mfs = (
        float(mfs_set)
        if mfs_set
        else default_mem_fraction_static(lo.memory_total_mib, ctx.args, mla)
    )
    mfs_text = (
        f"mem_fraction_static {mfs}"
        if mfs_set
        else f"SGLang's default mem_fraction_static for this GPU (about {mfs}, estimated)"
    )
    budget = free[lo.index] * mfs
    planned = lo.memory_total_mib * mfs
    pp = int(ctx.args.get("pp_size") or 1)
    base_mib = checkpoint_mib(ctx.base.path) if ctx.base.state == "ok" else None
    draft_mib = checkpoint_mib(ctx.draft.path) if ctx.draft.state == "ok" else None
    if base_mib is not None:
        weights = base_mib / (tp * pp) + (draft_mib or 0) / tp
        if budget <= weights:
            yield Finding(
                "gpu-free-memory",
                "error",
                ("--mem-fraction-static",),
                f"GPU {lo.index} has {free[lo.index] / GIB:.1f} GiB free{own_note}; SGLang's static pool is "
                f"{mfs_text} x that = {budget / GIB:.1f} GiB, less than the ~{weights / GIB:.1f} GiB of "
                f"weights each GPU loads ({base_mib / GIB:.0f} GiB of checkpoint over {tp * pp} GPUs"
                + (" plus the drafter" if draft_mib else "")
                + "). SGLang stops with "
                # SGLang's first sentence (the rest suggests a value it computes on the box)
                + ctx.release.message("kv-no-room")
                .line(mfs=f"{mfs:.3g}", suggested="?", minimum="?")
                .partition(". ")[0]
                + ". or "
                + ctx.release.message("not-enough-memory").line(),
                f"free the GPUs (see gpu-busy): an empty {lo.name} gives {planned / GIB:.1f} GiB at this "
                "fraction; raising mem_fraction_static only takes the room activations need",
            )
        elif free[lo.index] < planned:
            kv_now, kv_empty = budget - weights, planned - weights
            yield Finding(
                "gpu-free-memory",
                "warning",
                ("--mem-fraction-static",),
                f"GPU {lo.index} has {free[lo.index] / GIB:.1f} GiB free of {lo.memory_total_mib / GIB:.1f} GiB"
                f"{own_note}; with {mfs_text} SGLang's KV cache gets ~{kv_now / GIB:.1f} GiB per GPU instead "
                f"of ~{kv_empty / GIB:.1f} GiB on an empty GPU (fewer tokens in flight)",
                "free the GPUs (see gpu-busy) before `deploy up`",
            )
    elif free[lo.index] < planned:
        yield Finding(
            "gpu-free-memory",
            "error",
            ("--mem-fraction-static",),
            f"GPU {lo.index} has {free[lo.index] / GIB:.1f} GiB free of {lo.memory_total_mib / GIB:.1f} GiB"
            f"{own_note}, below {mfs_text} x its memory = {planned / GIB:.1f} GiB. The weights' size is not "
            "known here (no local checkpoint), so deploy asks for the share of the GPU the profile planned "
            'for; SGLang would size its pools from what is free and may stop with "Not enough memory. '
            'Please try to increase --mem-fraction-static."',
            "free the GPUs (see gpu-busy), or make model_path a local checkpoint so the weights can be sized",
        )


def gpu_busy(ctx: Context) -> Iterator[Finding]:
    if not _nvml_here(ctx):
        return
    assert ctx.gpus is not None
    used = server_gpus(ctx.spec, ctx.args, ctx.gpus)
    own = _own_units(ctx)
    # One finding per holder: a systemd service (all its PIDs), else a PID.
    holders: dict[str, list[tuple[Gpu, GpuProcess]]] = {}
    for g in used:
        for p in g.processes:
            key = p.unit if p.unit and p.unit.endswith(".service") else f"pid {p.pid}"
            holders.setdefault(key, []).append((g, p))
    for items in holders.values():
        gpus = sorted({g.index for g, _ in items})
        mib = sum(p.used_mib or 0 for _, p in items)
        unknown = any(p.used_mib is None for _, p in items)
        pids = ", ".join(
            f"pid {p.pid}" + (f" ({p.name})" if p.name else "")
            for p in dict.fromkeys(p for _, p in items)
        )
        if not unknown:
            amount = f"{mib / GIB:.1f} GiB"
        elif mib:
            amount = f"{mib / GIB:.1f} GiB or more"
        else:
            amount = "an unknown amount of memory"
        unit = items[0][1].unit
        if unit in own:
            yield Finding(
                "gpu-busy",
                "info",
                (),
                f"{_ranges(gpus)}: {pids} of this deployment's own unit {unit} holds {amount}; "
                "`deploy up` restarts that unit, which frees it (counted as free above)",
                "nothing to do",
            )
            continue
        p0 = items[0][1]
        if p0.name is None:
            who = f"{pids}, not visible in /proc here (another PID namespace?)"
            fix = f"find pid {p0.pid} with nvidia-smi on the host and stop it"
        elif unit and unit.endswith(".service"):
            who = f"{pids} of {unit}"
            fix = (
                f"stop it: systemctl stop {unit} (and systemctl disable {unit} if it must stay off)"
            )
        else:
            who = pids + (f" in {unit}" if unit else "") + ", not a systemd service"
            fix = (
                f"stop it (kill {' '.join(str(p.pid) for _, p in items)}) once you know what it is"
            )
        fix += ", or move this server to other GPUs with CUDA_VISIBLE_DEVICES in [unit.environment]"
        small = not unknown and mib < BUSY_MIB * len(items)
        yield Finding(
            "gpu-busy",
            "warning" if small else "error",
            (),
            f"another process holds {amount} on {_ranges(gpus)}, which this server uses: {who}. "
            'SGLang measures free memory at start-up and says only "Some GPUs may be occupied by '
            'other processes" or "Not enough memory"',
            fix,
        )
    blind = [g.index for g in used if not g.processes_known]
    if blind:
        yield Finding(
            "gpu-busy",
            "warning",
            (),
            f"NVML did not list the processes on {_ranges(blind)}: other processes there could not be named",
            "run deploy as root on the server (NVML hides other users' processes from unprivileged users)",
        )


def gpu_mismatch(ctx: Context) -> Iterator[Finding]:
    if ctx.gpus is None or not ctx.gpus.available:
        return
    nvml, note = nvml_kind(ctx.spec, ctx.args, ctx.gpus)
    if note:
        yield Finding(
            "gpu-unnamed",
            "info",
            (),
            note,
            "nothing to do if that family is right; otherwise judge with --gpu KIND --no-nvml",
        )
    here = ", ".join(f"{len(ixs)} x {n}" for n, ixs in _by_name(ctx.gpus.gpus).items())
    asked = ctx.notes.get("gpu_asked")
    if not _nvml_here(ctx):
        # --gpu names another GPU than this machine's, off the box: judged for --gpu.
        yield Finding(
            "gpu-mismatch",
            "info",
            (),
            f"judged for {asked} as --gpu asks; this machine has {here}, so its GPUs were not "
            f"checked ({', '.join(NVML_RULES[:-1])})",
            "run validate on the server without --gpu to check its GPUs",
        )
        return
    if nvml is None:
        if ctx.gpu is not None:
            yield Finding(
                "gpu-mismatch",
                "error",
                (),
                f"NVML sees {here}, a GPU deploy does not know; the rules judged for {ctx.gpu.name} "
                f"({ctx.notes.get('gpu_source')}), but SGLang picks its defaults for the GPU it runs on",
                "run on a GPU deploy knows (see docs/hardware.md)",
            )
        return
    if asked and asked != nvml.name:
        yield Finding(
            "gpu-mismatch",
            "error",
            ("--gpu",),
            f"--gpu says {asked}, but NVML sees {here} on this box; SGLang picks its defaults for "
            f"the GPU it runs on ({nvml.family}, sm_{nvml.sm}), not for {asked}, so the rules "
            "judged for the wrong GPU",
            "drop --gpu on the box: NVML says what the GPU is",
        )
        return
    profile = ctx.spec.hardware.gpu
    if profile and profile != nvml.name and not asked:
        kind = KINDS[profile]
        same = kind.family == nvml.family
        yield Finding(
            "gpu-mismatch",
            "warning" if same else "error",
            (),
            f"[hardware] gpu says {profile}, but NVML sees {here} on this machine. SGLang picks its "
            f"defaults for the GPU it runs on ({nvml.family}, sm_{nvml.sm}), so the rules judged "
            f"for {nvml.name}"
            + (
                " (same family: same attention defaults, different memory)"
                if same
                else f"; what the profile says for {kind.family} does not hold here"
            ),
            f'set [hardware] gpu = "{nvml.name}" in the profile (and review the other findings), or '
            f"deploy on a {profile} box; to judge for {profile} from here pass --gpu {profile} --no-nvml",
        )


def _by_name(gpus: Sequence[Gpu]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for g in gpus:
        out.setdefault(g.name, []).append(g.index)
    return out


def nvml_unavailable(ctx: Context) -> Iterator[Finding]:
    if ctx.gpus is None or ctx.gpus.available:
        return
    kind = (
        f"the GPU kind came from {ctx.notes.get('gpu_source')} ({ctx.gpu.name})"
        if ctx.gpu
        else "the GPU kind is not known either (see gpu-unknown)"
    )
    yield Finding(
        "nvml-unavailable",
        "warning" if ctx.on_box else "info",
        (),
        f"NVML could not be read: {ctx.gpus.reason}. Not checked: {', '.join(NVML_RULES)}; {kind}",
        "on the GPU server, install or load the NVIDIA driver (nvidia-smi must work); elsewhere this "
        "is expected: pass --no-nvml to skip the probe",
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "trtllm-mla-needs-blackwell",
        "The trtllm_mla attention backend runs only on Blackwell.",
        enforced_at("trtllm-mla-needs-blackwell"),
        trtllm_mla_blackwell,
        "hardware",
    ),
    Rule(
        "gpu-unknown",
        "Says which hardware-dependent rules could not be applied when the GPU is unknown.",
        "SGLang picks defaults from the GPU it finds",
        gpu_known,
        "hardware",
    ),
    Rule(
        "gpu-count",
        "NVML shows at least tp_size x pp_size GPUs to the server (after the unit's CUDA_VISIBLE_DEVICES).",
        "fails at start-up when a rank's GPU does not exist",
        gpu_count,
        "hardware",
    ),
    Rule(
        "gpu-mixed",
        "The GPUs the server uses are of one kind.",
        "picks its defaults from one GPU and sizes memory for the smallest (nvidia-smi minimum)",
        gpu_mixed,
        "hardware",
    ),
    Rule(
        "gpu-free-memory",
        "Free memory is balanced across the server's GPUs and mem_fraction_static x free memory holds "
        "the weights (without a local checkpoint: free >= mem_fraction_static x total).",
        "distributed/bootstrap.py: RuntimeError (memory-unbalanced: min free < 0.9 x a rank's free); "
        "kv_cache_configurator.py: ValueError (kv-no-room); pool_configurator.py: RuntimeError "
        "(not-enough-memory)",
        gpu_free_memory,
        "hardware",
    ),
    Rule(
        "gpu-busy",
        "No other process holds memory on the server's GPUs (named by PID, command and systemd unit); "
        "this deployment's own unit is not another process.",
        "not checked: it only sees less free memory",
        gpu_busy,
        "hardware",
    ),
    Rule(
        "gpu-mismatch",
        "The GPU the rules judge for is the GPU NVML sees (--gpu or [hardware] gpu against the box).",
        "picks its defaults for the GPU it runs on, whatever the profile says",
        gpu_mismatch,
        "hardware",
        ("gpu-unnamed",),
    ),
    Rule(
        "nvml-unavailable",
        "Says which GPU checks could not run when NVML cannot be read, and why.",
        "reads the GPU through NVML and torch.cuda at start-up",
        nvml_unavailable,
        "hardware",
    ),
)
