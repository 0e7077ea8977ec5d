"""Writes the run-time failure fixtures in tests/logs/runtime/ (run: python tests/logs/runtime/make_runtime.py).

A server that was serving (its start-up as in tests/logs/make_fixtures.py, then requests and
decode batches) and then dies or wedges: SGLang 0.5.23's texts (managers/scheduler.py,
speculative/eagle_worker_v2.py, mem_cache/allocation.py, managers/detokenizer_manager.py,
utils/watchdog.py, entrypoints/http_server.py), torch's NCCL watchdog, CUDA's errors and the
kernel's `NVRM: Xid` lines (`@kernel` lines: in `-o json` they are kernel-transport entries,
as `journalctl -k -o json` prints them). Same writers as make_fixtures.py; `expected.json`
here maps each file to its category. Deterministic; the files are kept in git.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _mf() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", HERE.parent / "make_fixtures.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MF = _mf()
PY = MF.PY
sgl, tb, systemd = MF.sgl, MF.tb, MF.systemd
SRT = f"{PY}/sglang/srt"
TORCH = f"{PY}/torch"


def started() -> list[str]:
    """A whole start, up to "ready", then an hour of serving."""
    out = [*MF.START, *MF.LAUNCH, MF.SERVER_ARGS, *MF.init_parallel(), *MF.load_weights()]
    out += [*MF.weights_done(), *MF.graphs(), *MF.serving()]
    out += [
        "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        sgl("14:08:05", "The server is fired up and ready to roll!"),
    ]
    for i, hms in enumerate(("14:20:11", "14:25:40", "14:30:02")):
        out.append(f'INFO:     127.0.0.1:5{1234 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        out.append(
            sgl(
                hms,
                f"Decode batch, #running-req: {12 + i}, #token: {40960 + i * 1024}, token usage: 0.08, "
                f"accept len: 2.7{i}, accept rate: 0.57, cuda graph: True, gen throughput (token/s): 811.2{i}, #queue-req: 0, ",
                0,
            )
        )
    return out


# managers/scheduler.py run_scheduler_process -> ... -> event_loop_normal (0.5.23 line numbers)
LOOP = [
    (f"{SRT}/managers/scheduler.py", 6368, "run_scheduler_process", "scheduler.run_event_loop()"),
    (f"{SRT}/managers/scheduler.py", 2010, "run_event_loop", "dispatch_event_loop(self)"),
    (
        f"{SRT}/managers/scheduler.py",
        6215,
        "dispatch_event_loop",
        "return _dispatch_event_loop_once(scheduler)",
    ),
    (
        f"{SRT}/managers/scheduler.py",
        6233,
        "_dispatch_event_loop_once",
        "scheduler.event_loop_normal()",
    ),
    (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
]
RUN_BATCH = [
    (f"{SRT}/managers/scheduler.py", 2048, "event_loop_normal", "result = self.run_batch(batch)"),
    (
        f"{SRT}/managers/scheduler.py",
        4704,
        "run_batch",
        "batch_result = self.model_worker.forward_batch_generation(",
    ),
]
DRAFT = [
    (
        f"{SRT}/speculative/eagle_worker_v2.py",
        1480,
        "forward_batch_generation",
        "verify_input: EagleVerifyInput = self.draft_worker.draft(batch)",
    ),
    (
        f"{SRT}/speculative/eagle_worker_v2.py",
        713,
        "draft",
        "parent_list, top_scores_index, draft_tokens, draft_probs = (",
    ),
    (
        f"{SRT}/speculative/eagle_worker_v2.py",
        757,
        "draft_forward",
        "topk_index = self.hot_token_id[topk_index]",
    ),
]
VERIFY = [
    (
        f"{SRT}/speculative/eagle_worker_v2.py",
        1483,
        "forward_batch_generation",
        "batch_output = self.verify(",
    ),
    (f"{SRT}/speculative/eagle_worker_v2.py", 1980, "verify", "return run_eagle_verify("),
    (
        f"{SRT}/speculative/eagle_worker_common.py",
        654,
        "run_eagle_verify",
        "forward_batch_output = target_worker.forward_batch_generation(",
    ),
    (
        f"{SRT}/managers/tp_worker.py",
        675,
        "forward_batch_generation",
        "out = self.model_runner.forward(",
    ),
    (f"{SRT}/model_executor/model_runner.py", 1860, "forward", "output = self._forward_raw("),
    (
        f"{SRT}/model_executor/model_runner.py",
        2006,
        "_forward_raw",
        "ret = self.decode_cuda_graph_runner.execute(",
    ),
]
CUDA_NOTES = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
]
SIGQUIT = (
    "SIGQUIT received. signum=<Signals.SIGQUIT: 3>, frame=<frame at 0x7f2c1c0b2a40, file "
    "'/usr/lib/python3.12/threading.py', line 359, code wait>. It usually means one child failed."
)


def scheduler_dies(hms: str, rank: int, frames: list, exc: list[str]) -> list[str]:
    body = tb(*frames)
    return [sgl(hms, "Scheduler hit an exception: " + body[0], rank), *body[1:], *exc]


def killed_tail(hms: str) -> list[str]:
    """The parent's running-phase SIGQUIT handler kills the tree (itself included)."""
    return [
        sgl(hms, SIGQUIT),
        systemd("Main process exited, code=killed, status=9/KILL"),
        systemd("Failed with result 'signal'."),
        systemd("Consumed 7h 41min 3.118s CPU time."),
        systemd("Scheduled restart job, restart counter is at 1."),
    ]


def nccl_abort(hms: str, rank: int) -> list[str]:
    ts = f"E1202 {hms}.381928 4830{rank}"
    watch = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, "
        "OpType=ALLREDUCE, NumelIn=7340032, NumelOut=7340032, Timeout(ms)=600000) ran for 600085 "
        "milliseconds before timing out."
    )
    return [
        f"[rank{rank}]:[{ts} ProcessGroupNCCL.cpp:632] {watch}",
        f"[rank{rank}]:[{ts} ProcessGroupNCCL.cpp:2268] [PG ID 2 PG GUID 3 Rank {rank}] failure detected by watchdog at work sequence id: 48213 PG status: last enqueued work: 48214, last completed work: 48212",
        f"[rank{rank}]:[{ts} ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 2 PG GUID 3 Rank {rank}] Process group watchdog thread terminated with exception: {watch}",
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3b6d41df86 in /opt/sglang/lib/python3.12/site-packages/torch/lib/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x23d (0x7f3b6e71a8d2 in /opt/sglang/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so)",
        "Fatal Python error: Aborted",
    ]


def kernel(msg: str) -> str:
    return "@kernel " + msg


CASES: dict[str, tuple[str, list[str]]] = {}
JSON_CASES = ("illegal_memory_draft", "nccl_watchdog_timeout", "xid79_then_cuda_error")


def case(name: str, category: str, lines: list[str]) -> None:
    CASES[name] = (category, lines)


def seq(*parts: list[str]) -> list[str]:
    return [line for part in parts for line in part]


case(
    "illegal_memory_draft",
    "cuda-illegal-access",
    seq(
        started(),
        scheduler_dies(
            "14:31:07",
            3,
            [*LOOP, *RUN_BATCH, *DRAFT],
            [
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                *CUDA_NOTES,
            ],
        ),
        killed_tail("14:31:07"),
    ),
)
case(
    "illegal_memory_verify",
    "cuda-illegal-access",
    seq(
        started(),
        scheduler_dies(
            "14:31:07",
            0,
            [*LOOP, *RUN_BATCH, *VERIFY],
            [
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                *CUDA_NOTES,
            ],
        ),
        killed_tail("14:31:07"),
    ),
)
case(
    "device_assert",
    "cuda-device-assert",
    seq(
        started(),
        [
            f'/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [1305,0,0], thread: [{t},0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.'
            for t in range(82, 86)
        ],
        scheduler_dies(
            "14:31:07",
            5,
            [*LOOP, *RUN_BATCH, *DRAFT],
            ["torch.AcceleratorError: CUDA error: device-side assert triggered", *CUDA_NOTES],
        ),
        killed_tail("14:31:08"),
    ),
)
case(
    "nccl_watchdog_timeout",
    "nccl-watchdog-timeout",
    seq(
        started(),
        nccl_abort("14:41:02", 3),
        [
            sgl(
                "14:41:03",
                "Subprocess scheduler_3 (pid=48303) crashed with exit code -6. Triggering SIGQUIT for cleanup...",
            ),
        ],
        killed_tail("14:41:03"),
    ),
)
case(
    "sglang_watchdog",
    "sglang-watchdog-timeout",
    seq(
        started(),
        [
            sgl("14:36:02", "Pyspy dump for PID 48300 (scheduler_TP0):", 0),
            'Thread 48300 (idle): "MainThread"',
            "    all_reduce (torch/distributed/distributed_c10d.py:2806)",
            sgl(
                "14:36:02",
                "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
                0,
            ),
        ],
        killed_tail("14:36:07"),
    ),
)
case(
    "kv_cache_decode_oom",
    "kv-cache-oom-runtime",
    seq(
        started(),
        [
            sgl("14:33:19", "Decode out of memory. Try to lower your batch size.", 0),
            "Try to allocate 192 tokens.",
            "Available tokens: 41 (available_size=41 + evictable_size=0)",
        ],
        scheduler_dies(
            "14:33:19",
            0,
            [
                *LOOP,
                (
                    f"{SRT}/managers/scheduler.py",
                    2039,
                    "event_loop_normal",
                    "plan = self.get_next_batch_to_run(",
                ),
                (
                    f"{SRT}/managers/scheduler.py",
                    3998,
                    "get_next_batch_to_run",
                    "decode_batch = self.update_running_batch(running_batch)",
                ),
                (
                    f"{SRT}/managers/scheduler.py",
                    4551,
                    "update_running_batch",
                    "batch.prepare_for_decode()",
                ),
                (
                    f"{SRT}/managers/schedule_batch.py",
                    3780,
                    "prepare_for_decode",
                    "self.out_cache_loc = alloc_for_decode(self, token_per_req=1)",
                ),
                (
                    f"{SRT}/mem_cache/allocation.py",
                    730,
                    "alloc_for_decode",
                    "return ALLOC_FOR_DECODE_FUNCS[_device_type(batch)](batch, token_per_req)",
                ),
                (
                    f"{SRT}/mem_cache/allocation.py",
                    647,
                    "alloc_for_decode_default",
                    "out_cache_loc = alloc_paged_token_slots_decode(",
                ),
                (
                    f"{SRT}/mem_cache/allocation.py",
                    621,
                    "alloc_paged_token_slots_decode",
                    "raise RuntimeError(error_msg)",
                ),
            ],
            [
                "RuntimeError: Decode out of memory. Try to lower your batch size.",
                "Try to allocate 192 tokens.",
                "Available tokens: 41 (available_size=41 + evictable_size=0)",
                "",
            ],
        ),
        killed_tail("14:33:19"),
    ),
)
case(
    "detokenizer_died",
    "tokenizer-manager-died",
    seq(
        started(),
        [
            sgl(
                "14:34:51",
                "DetokenizerManager hit an exception: Traceback (most recent call last):",
            ),
            *tb(
                (
                    f"{SRT}/managers/detokenizer_manager.py",
                    562,
                    "run_detokenizer_process",
                    "manager.event_loop()",
                ),
                (
                    f"{SRT}/managers/detokenizer_manager.py",
                    189,
                    "event_loop",
                    "output = self._request_dispatcher(recv_obj)",
                ),
                (f"{PY}/sglang/utils.py", 507, "__call__", "return fn(obj)"),
                (
                    f"{SRT}/managers/detokenizer_manager.py",
                    478,
                    "handle_batch_token_id_out",
                    "s = self.decode_status[rid]",
                ),
            )[1:],
            "KeyError: 'a3f08c27e5b54d0f8a4f3c0b3a1e2d7c'",
            "",
        ],
        killed_tail("14:34:51"),
    ),
)
case(
    "scheduler_keyerror",
    "scheduler-exception",
    seq(
        started(),
        scheduler_dies(
            "14:35:30",
            0,
            [
                *LOOP,
                (
                    f"{SRT}/managers/scheduler.py",
                    2049,
                    "event_loop_normal",
                    "self.process_batch_result(batch, result)",
                ),
                (
                    f"{SRT}/managers/scheduler.py",
                    5096,
                    "process_batch_result",
                    "self.process_batch_result_decode(batch, result)",
                ),
                (
                    f"{SRT}/managers/scheduler_components/batch_result_processor.py",
                    1004,
                    "process_batch_result_decode",
                    "req = self.rid_to_req[rid]",
                ),
            ],
            ["KeyError: 'rid-7f3a'", ""],
        ),
        killed_tail("14:35:30"),
    ),
)
case(
    "scheduler_abort_silent",
    "scheduler-crashed",
    seq(
        started(),
        [
            sgl(
                "14:38:44",
                "Subprocess scheduler_5 (pid=48305) crashed with exit code -6. Triggering SIGQUIT for cleanup...",
            ),
        ],
        killed_tail("14:38:44"),
    ),
)
case(
    "zombie_health_failed",
    "scheduler-unresponsive",
    seq(
        started(),
        [
            'INFO:     127.0.0.1:40112 - "GET /health HTTP/1.1" 503 Service Unavailable',
            sgl(
                "14:39:31",
                "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 14:39:11. last_heartbeat time: 14:38:02",
            ),
            'INFO:     127.0.0.1:40118 - "GET /health HTTP/1.1" 503 Service Unavailable',
            sgl(
                "14:40:01",
                "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 14:39:41. last_heartbeat time: 14:38:02",
            ),
        ],
    ),
)
case(
    "xid79_then_cuda_error",
    "gpu-xid",
    seq(
        started(),
        [
            kernel("NVRM: GPU at PCI:0000:3b:00: GPU-5f2d3c1a-8b7e-4c11-9d0a-2e6f7b8c9d01"),
            kernel("NVRM: GPU Board Serial Number: 1653123456789"),
            kernel(
                "NVRM: Xid (PCI:0000:3b:00): 79, pid=48303, name=sglang::schedul, GPU has fallen off the bus."
            ),
            kernel("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."),
        ],
        scheduler_dies(
            "14:42:17",
            3,
            [*LOOP, *RUN_BATCH, *VERIFY],
            [
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                *CUDA_NOTES,
            ],
        ),
        nccl_abort("14:42:18", 5),
        killed_tail("14:42:18"),
    ),
)
case(
    "xid94_ecc",
    "gpu-xid",
    seq(
        started(),
        scheduler_dies(
            "14:43:20",
            5,
            [*LOOP, *RUN_BATCH, *VERIFY],
            [
                "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered",
                *CUDA_NOTES,
            ],
        ),
        [
            kernel(
                "NVRM: Xid (PCI:0000:9b:00): 94, pid=48305, name=sglang::schedul, Contained ECC error."
            )
        ],
        killed_tail("14:43:20"),
    ),
)
case(
    "cuda_ecc_no_kernel",
    "gpu-ecc-uncorrectable",
    seq(
        started(),
        scheduler_dies(
            "14:43:20",
            5,
            [*LOOP, *RUN_BATCH, *VERIFY],
            [
                "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered",
                *CUDA_NOTES,
            ],
        ),
        killed_tail("14:43:20"),
    ),
)
case(
    "xid119_gsp",
    "gpu-xid",
    seq(
        started(),
        [
            kernel(
                "NVRM: Xid (PCI:0000:bb:00): 119, pid=48306, name=sglang::schedul, Timeout after 6s of waiting for RPC response from GPU6 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4)."
            ),
        ],
        nccl_abort("14:51:40", 2),
        killed_tail("14:51:41"),
    ),
)
case(
    "xid31_with_illegal_access",
    "cuda-illegal-access",
    seq(
        started(),
        scheduler_dies(
            "14:31:07",
            3,
            [*LOOP, *RUN_BATCH, *DRAFT],
            [
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                *CUDA_NOTES,
            ],
        ),
        [
            kernel(
                "NVRM: Xid (PCI:0000:3b:00): 31, pid=48303, name=sglang::schedul, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_a2000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
            ),
        ],
        killed_tail("14:31:07"),
    ),
)
case(
    "xid31_only",
    "gpu-xid",
    seq(
        started(),
        [
            kernel(
                "NVRM: Xid (PCI:0000:3b:00): 31, pid=48303, name=sglang::schedul, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_a2000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
            ),
        ],
        killed_tail("14:31:09"),
    ),
)


def _cat(lines: list[str]) -> str:
    return MF.to_cat([ln.removeprefix("@kernel ") for ln in lines])


def _json(lines: list[str]) -> str:
    """make_fixtures' -o json, with the @kernel lines as kernel-transport entries."""
    plain = [ln.removeprefix("@kernel ") for ln in lines]
    out = []
    for ln, obj_line in zip(lines, MF.to_json(plain).splitlines(), strict=True):
        if ln.startswith("@kernel "):
            obj = json.loads(obj_line)
            keep = {
                k: obj[k]
                for k in obj
                if k.startswith("__") or k in ("_BOOT_ID", "_MACHINE_ID", "_HOSTNAME", "MESSAGE")
            }
            obj = {
                **keep,
                "PRIORITY": "4",
                "SYSLOG_FACILITY": "0",
                "SYSLOG_IDENTIFIER": "kernel",
                "_TRANSPORT": "kernel",
                "_SOURCE_MONOTONIC_TIMESTAMP": obj["__MONOTONIC_TIMESTAMP"],
            }
            obj_line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        out.append(obj_line)
    return "\n".join(out) + "\n"


def main() -> None:
    expected: dict[str, str] = {}
    for name, (category, lines) in CASES.items():
        (HERE / f"{name}.log").write_text(_cat(lines))
        expected[f"{name}.log"] = category
        if name in JSON_CASES:
            (HERE / f"{name}.json").write_text(_json(lines))
            expected[f"{name}.json"] = category
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
