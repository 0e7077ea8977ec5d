"""Day-2 failure modes of the stand-in: what happens to SGLang 0.5.23 AFTER it was ready.

Environment (all optional; N counts from SGLang's ready line):
  STANDIN_CRASH_AFTER_S=N   serve N s, then die the way SGLang does with the traceback of
  STANDIN_CRASH=KIND        illegal-memory (default: CUDA illegal memory access while drafting),
                            device-assert, kv-oom, nccl-timeout, sglang-watchdog,
                            detokenizer, scheduler-exception
  STANDIN_HANG_AFTER_S=N    serve N s, then hang: the process lives, /health stops answering
  STANDIN_HANG_HEALTH=503   ... or answers 503 at once instead of never
  STANDIN_ZOMBIE_AFTER_S=N  serve N s, then a scheduler rank dies (torch's NCCL watchdog
                            abort) while the HTTP server stays up: /health waits
                            SGLANG_HEALTH_CHECK_TIMEOUT s (20, as SGLang), logs "Health check
                            failed. ..." and answers 503 (sglang #18421)

Texts: SGLang 0.5.23's (managers/scheduler.py `run_scheduler_process`, speculative/
eagle_worker_v2.py, mem_cache/allocation.py, managers/detokenizer_manager.py,
utils/watchdog.py, managers/tokenizer_manager.py `running_phase_sigquit_handler`,
entrypoints/http_server.py `health_generate`), torch's ProcessGroupNCCL and CUDA's.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from sglang._texts import Frame, _fmt

CRASH_KINDS = (
    "illegal-memory",
    "device-assert",
    "kv-oom",
    "nccl-timeout",
    "sglang-watchdog",
    "detokenizer",
    "scheduler-exception",
)


def _env_f(name: str) -> float | None:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


# run_scheduler_process -> run_event_loop -> ... -> event_loop_normal (0.5.23 line numbers)
_LOOP: list[Frame] = [
    ("srt/managers/scheduler.py", 6368, "run_scheduler_process", "scheduler.run_event_loop()", ""),
    ("srt/managers/scheduler.py", 2010, "run_event_loop", "dispatch_event_loop(self)", ""),
    (
        "srt/managers/scheduler.py",
        6215,
        "dispatch_event_loop",
        "return _dispatch_event_loop_once(scheduler)",
        "",
    ),
    (
        "srt/managers/scheduler.py",
        6233,
        "_dispatch_event_loop_once",
        "scheduler.event_loop_normal()",
        "",
    ),
]
_RUN_BATCH: list[Frame] = [
    ("srt/managers/scheduler.py", 2048, "event_loop_normal", "result = self.run_batch(batch)", ""),
    (
        "srt/managers/scheduler.py",
        4704,
        "run_batch",
        "batch_result = self.model_worker.forward_batch_generation(",
        "",
    ),
]
_DRAFT: list[Frame] = [
    (
        "srt/speculative/eagle_worker_v2.py",
        1480,
        "forward_batch_generation",
        "verify_input: EagleVerifyInput = self.draft_worker.draft(batch)",
        "",
    ),
    (
        "srt/speculative/eagle_worker_v2.py",
        713,
        "draft",
        "parent_list, top_scores_index, draft_tokens, draft_probs = (",
        "",
    ),
    (
        "srt/speculative/eagle_worker_v2.py",
        757,
        "draft_forward",
        "topk_index = self.hot_token_id[topk_index]",
        "",
    ),
]
_KV_DECODE: list[Frame] = [
    (
        "srt/managers/scheduler.py",
        2039,
        "event_loop_normal",
        "plan = self.get_next_batch_to_run(",
        "",
    ),
    (
        "srt/managers/scheduler.py",
        3998,
        "get_next_batch_to_run",
        "decode_batch = self.update_running_batch(running_batch)",
        "",
    ),
    ("srt/managers/scheduler.py", 4551, "update_running_batch", "batch.prepare_for_decode()", ""),
    (
        "srt/managers/schedule_batch.py",
        3780,
        "prepare_for_decode",
        "self.out_cache_loc = alloc_for_decode(self, token_per_req=1)",
        "",
    ),
    (
        "srt/mem_cache/allocation.py",
        647,
        "alloc_for_decode_default",
        "out_cache_loc = alloc_paged_token_slots_decode(",
        "",
    ),
    (
        "srt/mem_cache/allocation.py",
        621,
        "alloc_paged_token_slots_decode",
        "raise RuntimeError(error_msg)",
        "",
    ),
]
_RESULT: list[Frame] = [
    (
        "srt/managers/scheduler.py",
        2049,
        "event_loop_normal",
        "self.process_batch_result(batch, result)",
        "",
    ),
    (
        "srt/managers/scheduler.py",
        5096,
        "process_batch_result",
        "self.process_batch_result_decode(batch, result)",
        "",
    ),
    (
        "srt/managers/scheduler_components/batch_result_processor.py",
        1004,
        "process_batch_result_decode",
        "req = self.rid_to_req[rid]",
        "",
    ),
]
_DETOKENIZER: list[Frame] = [
    (
        "srt/managers/detokenizer_manager.py",
        562,
        "run_detokenizer_process",
        "manager.event_loop()",
        "",
    ),
    (
        "srt/managers/detokenizer_manager.py",
        189,
        "event_loop",
        "output = self._request_dispatcher(recv_obj)",
        "",
    ),
    (
        "srt/managers/detokenizer_manager.py",
        478,
        "handle_batch_token_id_out",
        "s = self.decode_status[rid]",
        "",
    ),
]
_CUDA_NOTES = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
# tokenizer_manager.py running_phase_sigquit_handler: f"SIGQUIT received. {signum=}, {frame=}. ..."
SIGQUIT = (
    "SIGQUIT received. signum=<Signals.SIGQUIT: 3>, frame=<frame at 0x7f2c1c0b2a40, file "
    "'/usr/lib/python3.12/threading.py', line 359, code wait>. It usually means one child failed."
)


def _tb(frames: list[Frame], last: str) -> str:
    return "Traceback (most recent call last):\n" + _fmt(frames) + last + "\n"


def nccl_abort_lines(rank: int, pid: int) -> str:
    """torch's ProcessGroupNCCL watchdog aborting a rank (C++; no Python traceback)."""
    stamp = time.strftime("%m%d %H:%M:%S")
    watch = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, "
        "OpType=ALLREDUCE, NumelIn=7340032, NumelOut=7340032, Timeout(ms)=600000) ran for 600085 "
        "milliseconds before timing out."
    )
    head = f"[rank{rank}]:[E{stamp}.381928 {pid} ProcessGroupNCCL.cpp:"
    return (
        f"{head}632] {watch}\n"
        f"{head}2268] [PG ID 2 PG GUID 3 Rank {rank}] failure detected by watchdog at work "
        "sequence id: 48213 PG status: last enqueued work: 48214, last completed work: 48212\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        f"  what():  [PG ID 2 PG GUID 3 Rank {rank}] Process group watchdog thread terminated "
        f"with exception: {watch}\n"
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:635 (most recent call first):\n"
        "Fatal Python error: Aborted\n"
    )


def crash(sim: Any, kind: str) -> None:
    """Print what SGLang prints for this run-time failure, then take the tree down (SIGKILL)."""
    import sys

    from sglang._runtime import _say, _write, kill_tree_and_die, log

    rank = sim.fail_rank
    prefix = sim.prefixes()[rank] if sim.pp == 1 else sim.prefixes()[0]
    if kind == "nccl-timeout":
        _write(sys.stderr, nccl_abort_lines(rank, os.getpid() + 100 + rank))
        log(
            _say(
                "subprocess-crashed",
                name=f"scheduler_{rank}",
                pid=os.getpid() + 100 + rank,
                code=-6,
            )
        )
    elif kind == "sglang-watchdog":
        log(_say("watchdog-timeout", who="Scheduler", timeout=300, soft=False), prefix)
    elif kind == "detokenizer":
        log(
            _say(
                "detokenizer-exception",
                traceback=_tb(_DETOKENIZER, "KeyError: 'a3f08c27e5b54d0f8a4f3c0b3a1e2d7c'"),
            )
        )
    else:
        if kind == "device-assert":
            for t in range(82, 86):
                _write(
                    sys.stderr,
                    "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: "
                    f"[1305,0,0], thread: [{t},0,0] Assertion `-sizes[i] <= index && index < "
                    'sizes[i] && "index out of bounds"` failed.\n',
                )
            tb = _tb(
                [*_LOOP, *_RUN_BATCH, *_DRAFT],
                "torch.AcceleratorError: CUDA error: device-side assert triggered\n" + _CUDA_NOTES,
            )
        elif kind == "kv-oom":
            msg = (
                _say("kv-oom-decode") + "\nTry to allocate 192 tokens.\n"
                "Available tokens: 41 (available_size=41 + evictable_size=0)\n"
            )
            log(msg.rstrip("\n"), prefix)
            tb = _tb([*_LOOP, *_KV_DECODE], "RuntimeError: " + msg)
        elif kind == "scheduler-exception":
            tb = _tb([*_LOOP, *_RESULT], "KeyError: 'rid-7f3a'")
        else:  # illegal-memory
            tb = _tb(
                [*_LOOP, *_RUN_BATCH, *_DRAFT],
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
                + _CUDA_NOTES,
            )
        log(_say("scheduler-exception", traceback=tb), prefix)
    log(SIGQUIT)
    kill_tree_and_die(include_parent=True)


class Day2:
    """Started when the server is ready; flips the server into the chosen failure."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.hung = False
        self.zombie = False
        self.stop = threading.Event()  # set on SIGTERM: blocked handlers let go
        self.hang_503 = os.environ.get("STANDIN_HANG_HEALTH", "").strip() == "503"
        self.health_timeout = _env_f("SGLANG_HEALTH_CHECK_TIMEOUT") or 20.0

    def start(self) -> None:
        crash_after = _env_f("STANDIN_CRASH_AFTER_S")
        hang_after = _env_f("STANDIN_HANG_AFTER_S")
        zombie_after = _env_f("STANDIN_ZOMBIE_AFTER_S")
        if crash_after is not None:
            kind = os.environ.get("STANDIN_CRASH", "illegal-memory").strip() or "illegal-memory"
            if kind not in CRASH_KINDS:
                kind = "illegal-memory"
            self._after(crash_after, lambda: crash(self.sim, kind))
        elif hang_after is not None:
            self._after(hang_after, self._hang)
        elif zombie_after is not None:
            self._after(zombie_after, self._zombie)

    def _after(self, seconds: float, fn: Any) -> None:
        def run() -> None:
            if not self.stop.wait(max(0.0, seconds)):
                fn()

        threading.Thread(target=run, daemon=True).start()

    def _hang(self) -> None:
        self.hung = True  # no log line: a stuck server says nothing

    def _zombie(self) -> None:
        import sys

        from sglang._runtime import _write

        rank = self.sim.fail_rank
        _write(sys.stderr, nccl_abort_lines(rank, os.getpid() + 100 + rank))
        self.zombie = True

    def health(self) -> int | None:
        """None: answer as usual. Else the status to send (after waiting as SGLang would);
        a hang never answers (until SIGTERM)."""
        from sglang._runtime import _say, log

        if self.hung:
            if self.hang_503:
                return 503
            self.stop.wait()
            return 503
        if self.zombie:
            tic = time.time()
            if self.stop.wait(self.health_timeout):
                return 503
            log(
                _say(
                    "health-check-failed",
                    secs=int(self.health_timeout),
                    tic=time.strftime("%H:%M:%S", time.localtime(tic)),
                    last=time.strftime("%H:%M:%S", time.localtime(tic - 30)),
                )
            )
            return 503
        return None
