"""SGLang's own failure tracebacks, reconstructed from the wheel's source.

SGLang's words and the frames of its checks come from deploy's knowledge of the imitated
release (orchestrator/sglang, see _release.py); the call chains below them are sglang
0.5.23's (cp311 wheel). Caret lines are what CPython 3.11 prints.
File paths sit under the site-packages of the interpreter running the stand-in
(override with STANDIN_SGLANG_PREFIX).
"""

from __future__ import annotations

import os
import sysconfig
import traceback

from sglang._release import RELEASE, Frame

SITE = os.environ.get("STANDIN_SGLANG_PREFIX") or sysconfig.get_paths()["purelib"]

# (relative file, line, function, source line, caret line or "")
FrameT = tuple[str, int, str, str, str]


def _fmt(frames: list[FrameT]) -> str:
    out = []
    for rel, line, func, src, carets in frames:
        out.append(f'  File "{SITE}/sglang/{rel}", line {line}, in {func}\n')
        out.append(f"    {src}\n")
        if carets:
            out.append(f"    {carets}\n")
    return "".join(out)


def runpy_frames() -> str:
    """The interpreter's own `python -m` frames (e.g. '<frozen runpy>', line 198)."""
    stack = traceback.extract_stack()
    keep = [fs for fs in stack if "runpy" in fs.filename]
    return "".join(traceback.format_list(keep))


USER_WARNING = (
    f"{SITE}/sglang/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still "
    "supported, but 'sglang serve' is the recommended entrypoint.\n"
    "  Example: sglang serve --model-path <model> [options]\n"
    "  warnings.warn(\n"
)


def _frames(frames: tuple[Frame, ...] | list[Frame]) -> list[FrameT]:
    return [(f.file, f.line, f.function, f.source, f.carets) for f in frames]


def _main_traceback(frames: list[FrameT], last: str) -> str:
    return "Traceback (most recent call last):\n" + runpy_frames() + _fmt(frames) + last + "\n"


def spec_traceback(verdict: str, algo: str | None, attention_backend: str | None = None) -> str:
    """The traceback SGLang's main process prints for a rejected speculative config, in the
    imitated release's own frames and words (orchestrator/sglang)."""
    r = RELEASE
    chain = _frames(r.chains["spec"])
    if verdict == "unknown_algo":
        frames = chain + _frames(
            [r.frame("spec-unknown-algorithm-call"), r.frame("spec-unknown-algorithm")]
        )
        return _main_traceback(
            frames, r.message("spec-unknown-algorithm").line(name=(algo or "").upper())
        )
    frames = chain + _frames(r.chains["eagle"])
    if verdict == "assert":
        return _main_traceback(frames + _frames([r.frame("spec-need-steps")]), "AssertionError")
    type_error = r.message("spec-steps-need-topk").line()
    if verdict == "typeerror_trtllm_mha":
        frames += _frames([r.frame("spec-steps-need-topk-trtllm-mha")])
        return _main_traceback(frames, type_error)
    if verdict == "trtllm_mha_topk":
        frames += _frames([r.frame("spec-trtllm-mha-topk")])
        return _main_traceback(frames, r.message("spec-trtllm-mha-topk").line())
    if verdict == "typeerror":
        frames += _frames([r.frame("spec-steps-need-topk")])
        return _main_traceback(frames, type_error)
    if verdict == "page_size_topk":
        frames += _frames([r.frame("spec-tree-page-size")])
        return _main_traceback(frames, page_size_line(attention_backend))
    raise ValueError(verdict)


def page_size_line(attention_backend: str | None) -> str:
    return RELEASE.message("spec-tree-page-size").line(
        backends=str(RELEASE.tree_paged_backends), backend=repr(attention_backend)
    )


# Scheduler.__init__ -> ... -> MLATokenToKVPool._create_buffers -> torch.zeros
_SCHED_TO_KV_POOL: list[FrameT] = [
    (
        "srt/managers/scheduler.py",
        6362,
        "run_scheduler_process",
        "scheduler = Scheduler(server_args, port_args)",
        "            " + "^" * 33,
    ),
    ("srt/managers/scheduler.py", 568, "__init__", "self.init_model_worker()", ""),
    ("srt/managers/scheduler.py", 1137, "init_model_worker", "self.init_memory_pools()", ""),
    ("srt/managers/scheduler.py", 1100, "init_memory_pools", "self.init_target_memory_pool()", ""),
    (
        "srt/managers/scheduler.py",
        1090,
        "init_target_memory_pool",
        "self.tp_worker.alloc_memory_pool(",
        "",
    ),
    (
        "srt/managers/tp_worker.py",
        409,
        "alloc_memory_pool",
        "self.model_runner.alloc_memory_pool(",
        "",
    ),
    (
        "srt/model_executor/model_runner.py",
        982,
        "alloc_memory_pool",
        "result = self.kv_cache_configurator.configure(",
        "",
    ),
    ("srt/mem_cache/kv_cache_configurator.py", 480, "configure", "pools = self._init_pools(", ""),
    (
        "srt/mem_cache/kv_cache_configurator.py",
        777,
        "_init_pools",
        "token_to_kv_pool = self._build_token_to_kv_pool(",
        "",
    ),
    (
        "srt/mem_cache/kv_cache_configurator.py",
        1879,
        "_build_token_to_kv_pool",
        "token_to_kv_pool = self._build_mla_kv_pool(",
        "",
    ),
    (
        "srt/mem_cache/kv_cache_configurator.py",
        2485,
        "_build_mla_kv_pool",
        "token_to_kv_pool = mla_pool_class(",
        "",
    ),
    ("srt/mem_cache/memory_pool.py", 4804, "__init__", "self._create_buffers()", ""),
    ("srt/mem_cache/memory_pool.py", 4864, "_create_buffers", "self.kv_buffer = [", ""),
    ("srt/mem_cache/memory_pool.py", 4865, "<listcomp>", "torch.zeros(", ""),
]


def oom_message(gpu: int, alloc_gib: float, total_gib: float, free_mib: float) -> str:
    used = total_gib - free_mib / 1024
    by_torch = used - 3.1
    return (
        f"CUDA out of memory. Tried to allocate {alloc_gib:.2f} GiB. GPU {gpu} has a total "
        f"capacity of {total_gib:.2f} GiB of which {free_mib:.2f} MiB is free. Including "
        f"non-PyTorch memory, this process has {used:.2f} GiB memory in use. Of the allocated "
        f"memory {by_torch:.2f} GiB is allocated by PyTorch, and 1.27 GiB is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def scheduler_oom_traceback(gpu: int, alloc_gib: float, total_gib: float, free_mib: float) -> str:
    """`get_exception_traceback()` text for a KV-pool allocation OOM in a scheduler."""
    return (
        "Traceback (most recent call last):\n"
        + _fmt(_SCHED_TO_KV_POOL)
        + "torch.OutOfMemoryError: "
        + oom_message(gpu, alloc_gib, total_gib, free_mib)
        + "\n"
    )


_SCHED_TO_GRAPHS: list[FrameT] = [
    (
        "srt/managers/scheduler.py",
        6362,
        "run_scheduler_process",
        "scheduler = Scheduler(server_args, port_args)",
        "            " + "^" * 33,
    ),
    ("srt/managers/scheduler.py", 568, "__init__", "self.init_model_worker()", ""),
    ("srt/managers/scheduler.py", 1146, "init_model_worker", "self.init_all_cuda_graphs()", ""),
    (
        "srt/managers/scheduler.py",
        1124,
        "init_all_cuda_graphs",
        "self.tp_worker.init_cuda_graphs()",
        "",
    ),
    (
        "srt/managers/tp_worker.py",
        435,
        "init_cuda_graphs",
        "self.model_runner.init_cuda_graphs(",
        "",
    ),
    (
        "srt/model_executor/model_runner.py",
        1192,
        "init_cuda_graphs",
        "capture = capture_cuda_graphs(",
        "",
    ),
    (
        "srt/model_executor/model_runner_components/cuda_graph_setup.py",
        437,
        "capture_cuda_graphs",
        "decode = capture_decode_graph(model_runner=model_runner)",
        " " * 9 + "^" * 47,
    ),
    (
        "srt/model_executor/model_runner_components/cuda_graph_setup.py",
        780,
        "capture_decode_graph",
        "runner = GraphRunnerCls(model_runner)",
        " " * 9 + "^" * 28,
    ),
]


def scheduler_graph_traceback(gpu: int) -> str:
    """Chained traceback of a failed decode CUDA graph capture (decode_cuda_graph_runner.py:603)."""
    runner = "srt/model_executor/runner/decode_cuda_graph_runner.py"
    inner_err = (
        "CUDA error: out of memory\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )
    inner = (
        "Traceback (most recent call last):\n"
        + _fmt([(runner, 600, "__init__", "self.capture()", "")])
        + "RuntimeError: "
        + inner_err
    )
    outer = (
        "Traceback (most recent call last):\n"
        + _fmt(
            [
                *_SCHED_TO_GRAPHS,
                (runner, 602, "__init__", "raise Exception(", ""),
            ]
        )
        + RELEASE.message("cuda-graph-capture-failed").line(error=inner_err.rstrip("\n"))
        + "\n"
        + RELEASE.message("cuda-graph-solutions").format()
    )
    return (
        inner + "\nDuring handling of the above exception, another exception occurred:\n\n" + outer
    )
