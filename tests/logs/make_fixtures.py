"""Writes the log fixtures in tests/logs/ (run: python tests/logs/make_fixtures.py).

Each case is written as `-o cat` text (`<case>.log`): SGLang's own lines with their
`[YYYY-mm-dd HH:MM:SS TPn]` prefixes, raw stderr traceback lines, and systemd's lines about
the unit as they read in `-o cat`. Some cases are also written as `journalctl -o json`
(`<case>.json`: one JSON object per line with the fields journald really records, the
service's lines with _SYSTEMD_INVOCATION_ID, PID 1's with UNIT=/INVOCATION_ID=) and
`-o short-precise` (`<case>.short`). The texts are SGLang 0.5.23's (sglang/srt/...),
PyTorch's, NCCL's, huggingface_hub's, uvicorn's and systemd 252's.

`expected.json` maps each case to its category. The files are kept in git; this script is how
they were made (deterministic).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNIT = "sglang-kimi.service"
INV = "5b0c4a3f2e1d4c7b8a9f0e1d2c3b4a59"
HOST = "gpu-node-07"
MAIN_PID = 48211
RANK_PID = {r: 48300 + r for r in range(8)}
PY = "/opt/sglang/lib/python3.12/site-packages"
CMDLINE = (
    "/opt/sglang/bin/python3 -m sglang.launch_server --model-path /models/Kimi-K2.6 "
    "--tp-size 8 --trust-remote-code --host 127.0.0.1 --port 30000 --mem-fraction-static 0.85 "
    "--speculative-algorithm EAGLE3 --speculative-draft-model-path /models/Kimi-K2.6-eagle3 "
    "--speculative-eagle-topk 4 --speculative-num-draft-tokens 3"
)

DAY = "2026-12-02"


def T(hms: str) -> str:
    return f"{DAY} {hms}"


def sgl(hms: str, msg: str, rank: int | None = None) -> str:
    tag = f" TP{rank}" if rank is not None else ""
    return f"[{T(hms)}{tag}] {msg}"


def systemd(msg: str) -> str:
    return f"@systemd {UNIT}: {msg}"


def kernel(msg: str) -> str:
    return f"@kernel {msg}"


# --------------------------------------------------------------------------- shared noise

LAUNCH = [
    f"{PY}/sglang/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.",
    "  Example: sglang serve --model-path <model> [options]",
    "  warnings.warn(",
]

SERVER_ARGS = sgl(
    "14:00:04",
    "server_args={'model_path': '/models/Kimi-K2.6', 'tokenizer_path': '/models/Kimi-K2.6', "
    "'tokenizer_mode': 'auto', 'load_format': 'auto', 'trust_remote_code': True, 'dtype': 'auto', "
    "'kv_cache_dtype': 'auto', 'host': '127.0.0.1', 'port': 30000, 'mem_fraction_static': 0.85, "
    "'max_running_requests': 48, 'chunked_prefill_size': 8192, 'page_size': 64, 'tp_size': 8, "
    "'attention_backend': 'trtllm_mla', 'speculative_algorithm': 'EAGLE3', "
    "'speculative_draft_model_path': '/models/Kimi-K2.6-eagle3', 'speculative_num_steps': 3, "
    "'speculative_eagle_topk': 1, 'speculative_num_draft_tokens': 4, "
    "'speculative_draft_attention_backend': None, 'log_level': 'info', 'enable_metrics': False}",
)


def init_parallel(start: str = "14:00:09") -> list[str]:
    out = [
        sgl(start, "Attention backend not explicitly specified. Use trtllm_mla backend by default.")
    ]
    for r in (0, 3, 1, 6, 2, 7, 4, 5):
        out.append(sgl(start, "Init parallel begin.", r))
    for r in (2, 0, 5, 1, 3, 7, 6, 4):
        out.append(sgl("14:00:14", f"Init parallel ends. elapsed=4.{r}1 s", r))
    out.append(
        sgl(
            "14:00:14",
            "The following error message 'operation scheduled before its operands' can be ignored.",
            0,
        )
    )
    return out


def load_weights(upto: int = 64, total: int = 64, t0: int = 16) -> list[str]:
    out = [
        sgl("14:00:15", f"Load weight begin. avail mem=176.{40 + r:02d} GB", r) for r in range(8)
    ]
    out.append(sgl("14:00:15", "Using model weights format ['*.safetensors']", 0))
    out.append(
        sgl(
            "14:00:15",
            "Multimodal attention backend not set. Use triton_attn backend by default.",
            0,
        )
    )
    for i in range(0, upto + 1):
        pct = i * 100 // total
        mm, ss = divmod(t0 + i * 6, 60)
        out.append(
            f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {i}/{total} "
            f"[{mm:02d}:{ss:02d}<{(total - i) * 6 // 60:02d}:{(total - i) * 6 % 60:02d},  6.01s/it]"
        )
    return out


def weights_done() -> list[str]:
    out = [
        sgl(
            "14:07:02",
            f"Load weight end. elapsed=407.{r}2 s, type=KimiK25ForConditionalGeneration, quant=compressed-tensors, "
            f"avail mem=102.{r}4 GB, mem usage=73.9{r} GB.",
            r,
        )
        for r in (1, 0, 3, 2, 5, 4, 7, 6)
    ]
    out.append(sgl("14:07:03", "Load weight begin. avail mem=102.04 GB", 0))
    out.append(
        sgl(
            "14:07:05",
            "Load weight end. elapsed=2.41 s, type=Eagle3DeepseekV2ForCausalLM, avail mem=100.91 GB, mem usage=1.13 GB.",
            0,
        )
    )
    for r in range(8):
        out.append(
            sgl(
                "14:07:06",
                "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 512000, KV size: 33.69 GB",
                r,
            )
        )
    for r in range(8):
        out.append(sgl("14:07:06", f"Memory pool end. avail mem=24.{r}1 GB", r))
    return out


def graphs(upto: int = 12) -> list[str]:
    out = [
        sgl(
            "14:07:07",
            "Capture target verify CUDA graph begin. backend=trtllm_mla, bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], avail mem=24.01 GB",
            0,
        )
    ]
    for i in range(upto + 1):
        out.append(
            f"Capturing batches (bs={48 - 4 * i} avail_mem=23.{90 - i:02d} GB): {i * 100 // 12:3d}%|"
            + "█" * i
            + " " * (12 - i)
            + f"| {i}/12 [00:{i * 2:02d}<00:{24 - i * 2:02d},  0.50it/s]"
        )
    return out


def serving() -> list[str]:
    out = [
        sgl(
            "14:07:41",
            "Capture target verify CUDA graph end. Time elapsed: 33.85 s. mem usage=1.92 GB. avail mem=22.09 GB.",
            0,
        ),
        sgl(
            "14:07:42",
            "Capture draft decode CUDA graph begin. backend=trtllm_mla, num_tokens_per_req=1, bs=48, avail mem=22.09 GB",
            0,
        ),
        sgl(
            "14:07:51",
            "Capture draft decode CUDA graph end. Time elapsed: 9.12 s. mem usage=0.71 GB. avail mem=21.38 GB.",
            0,
        ),
        sgl(
            "14:07:52",
            "max_total_num_tokens=512000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=262144, available_gpu_mem=21.38 GB",
            0,
        ),
        "INFO:     Started server process [48211]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]
    return out


def tb(*frames: tuple[str, int, str, str]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, fn, src in frames:
        out.append(f'  File "{path}", line {line}, in {fn}')
        if src:
            out.append(f"    {src}")
    return out


SCHED_FRAMES = [
    (
        f"{PY}/sglang/srt/managers/scheduler.py",
        6362,
        "run_scheduler_process",
        "scheduler = Scheduler(server_args, port_args)",
    ),
    (f"{PY}/sglang/srt/managers/scheduler.py", 612, "__init__", "self.init_model_worker()"),
    (
        f"{PY}/sglang/srt/managers/scheduler.py",
        1131,
        "init_model_worker",
        "self.init_tp_model_worker()",
    ),
]


def sched_exc(
    hms: str, rank: int, frames: list[tuple[str, int, str, str]], exc: list[str]
) -> list[str]:
    body = tb(*SCHED_FRAMES, *frames)
    return [sgl(hms, "Scheduler hit an exception: " + body[0], rank), *body[1:], *exc]


def echo_tail(hms: str, dead_rank: int | None = None, code: str = "1") -> list[str]:
    out = [sgl(hms, "Received sigquit from a child process. It usually means the child failed.")]
    if dead_rank is not None:
        out += tb(
            (f"{PY}/sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
            (
                f"{PY}/sglang/srt/entrypoints/engine.py",
                2024,
                "_wait_for_scheduler_ready",
                "raise _scheduler_died_error(j, scheduler_procs[j])",
            ),
        )
        out.append(
            f"RuntimeError: Rank {dead_rank} scheduler died during initialization (exit code: {code}). "
            "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
        )
    out += [
        systemd("Main process exited, code=killed, status=9/KILL"),
        systemd("Failed with result 'signal'."),
        systemd("Consumed 3h 12min 40.118s CPU time."),
    ]
    return out


START = [f"@systemd Started {UNIT} - SGLang Kimi K2.6 (EAGLE-3)."]

# --------------------------------------------------------------------------- cases

CASES: dict[str, tuple[str, list[str]]] = {}


def case(name: str, category: str, lines: list[str]) -> None:
    CASES[name] = (category, lines)


# The seed: --speculative-eagle-topk 4 --speculative-num-draft-tokens 3, no steps.
case(
    "seed_spec_assert",
    "spec-params-need-num-steps",
    [
        *START,
        *LAUNCH,
        *tb(
            ("<frozen runpy>", 198, "_run_module_as_main", ""),
            ("<frozen runpy>", 88, "_run_code", ""),
            (f"{PY}/sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (
                f"{PY}/sglang/srt/server_args.py",
                277,
                "resolve_once",
                "run_resolution_pipeline(self)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/pipeline.py",
                306,
                "run_resolution_pipeline",
                "run_hook(handle_speculative_decoding, server_args)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/resolution_hooks.py",
                139,
                "run_hook",
                "step(server_args)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/speculative_hook.py",
                284,
                "handle_speculative_decoding",
                "algo.handle_server_args(server_args)",
            ),
            (
                f"{PY}/sglang/srt/speculative/spec_info.py",
                264,
                "handle_server_args",
                "_handle_eagle_family(server_args)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/speculative_hook.py",
                1162,
                "_handle_eagle_family",
                "and cfg.speculative_num_draft_tokens is None",
            ),
        ),
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "AssertionError",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

# Older SGLang: the same assertion in server_args.py _handle_speculative_decoding (3.12: `assert (`).
case(
    "spec_assert_old_release",
    "spec-params-need-num-steps",
    [
        *START,
        *tb(
            (
                f"{PY}/sglang/launch_server.py",
                11,
                "<module>",
                "server_args = prepare_server_args(sys.argv[1:])",
            ),
            (
                f"{PY}/sglang/srt/server_args.py",
                4127,
                "prepare_server_args",
                "return ServerArgs.from_cli_args(raw_args)",
            ),
            (
                f"{PY}/sglang/srt/server_args.py",
                3701,
                "from_cli_args",
                "return cls(**{attr: getattr(args, attr) for attr in attrs})",
            ),
            ("<string>", 312, "__init__", ""),
            (
                f"{PY}/sglang/srt/server_args.py",
                612,
                "__post_init__",
                "self._handle_speculative_decoding()",
            ),
            (f"{PY}/sglang/srt/server_args.py", 3598, "_handle_speculative_decoding", "assert ("),
        ),
        "AssertionError",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "spec_steps_without_topk",
    "spec-config-invalid",
    [
        *START,
        *LAUNCH,
        *tb(
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (
                f"{PY}/sglang/srt/arg_groups/pipeline.py",
                306,
                "run_resolution_pipeline",
                "run_hook(handle_speculative_decoding, server_args)",
            ),
            (
                f"{PY}/sglang/srt/speculative/spec_info.py",
                264,
                "handle_server_args",
                "_handle_eagle_family(server_args)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/speculative_hook.py",
                1176,
                "_handle_eagle_family",
                "if cfg.speculative_eagle_topk > 1:",
            ),
        ),
        "       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "spec_page_size",
    "spec-config-invalid",
    [
        *START,
        *LAUNCH,
        sgl(
            "14:00:03",
            "Attention backend not explicitly specified. Use trtllm_mla backend by default.",
        ),
        *tb(
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (
                f"{PY}/sglang/srt/arg_groups/speculative_hook.py",
                284,
                "handle_speculative_decoding",
                "algo.handle_server_args(server_args)",
            ),
            (
                f"{PY}/sglang/srt/arg_groups/speculative_hook.py",
                1278,
                "_handle_eagle_family",
                "raise ValueError(",
            ),
        ),
        "ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', 'fa3', 'triton'); got attention_backend='trtllm_mla'. Use page_size == 1 or one of those backends.",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

OOM_FRAMES = [
    (
        f"{PY}/sglang/srt/managers/tp_worker.py",
        312,
        "__init__",
        "self._model_runner = ModelRunner(",
    ),
    (
        f"{PY}/sglang/srt/model_executor/model_runner.py",
        447,
        "__init__",
        "self.initialize(min_per_gpu_memory)",
    ),
    (
        f"{PY}/sglang/srt/model_executor/model_runner.py",
        731,
        "initialize",
        "self.init_memory_pool(pre_model_load_memory)",
    ),
    (
        f"{PY}/sglang/srt/mem_cache/kv_cache_configurator.py",
        431,
        "configure",
        "pool = MLATokenToKVPool(",
    ),
    (f"{PY}/sglang/srt/mem_cache/memory_pool.py", 1408, "_create_buffers", "torch.zeros("),
]

case(
    "cuda_oom_tp3",
    "cuda-oom",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(),
        *weights_done()[:8],
        *sched_exc(
            "14:07:06",
            3,
            OOM_FRAMES,
            [
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.21 GiB. GPU 3 has a total capacity of 178.35 GiB of which 2.87 GiB is free. Including non-PyTorch memory, this process has 175.46 GiB memory in use. Of the allocated memory 171.02 GiB is allocated by PyTorch, and 1.93 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
            ],
        ),
        sgl(
            "14:07:06",
            "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 512000, KV size: 33.69 GB",
            5,
        ),
        "[rank0]:[E1202 14:07:08.112233 48300 ProcessGroupNCCL.cpp:1895] [PG ID 2 PG GUID 3 Rank 0] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.27.3",
        *echo_tail("14:07:09"),
    ],
)

case(
    "cuda_graph_capture_oom",
    "cuda-oom",  # the OOM inside the capture is the cause; SGLang's capture wrapper echoes it
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=8, total=8),
        *weights_done(),
        *graphs(upto=5),
        *sched_exc(
            "14:07:19",
            5,
            [
                (
                    f"{PY}/sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",
                    588,
                    "capture",
                    "self.capture_one_batch_size(bs, forward)",
                ),
                (
                    f"{PY}/sglang/srt/layers/attention/trtllm_mla_backend.py",
                    402,
                    "init_forward_metadata_capture_cuda_graph",
                    "workspace = torch.empty(",
                ),
            ],
            [
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 178.35 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 177.21 GiB memory in use.",
                "",
                "During handling of the above exception, another exception occurred:",
                "",
                *tb(
                    (
                        f"{PY}/sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",
                        603,
                        "__init__",
                        "raise Exception(",
                    ),
                ),
                "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 178.35 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 177.21 GiB memory in use.",
                "Possible solutions:",
                "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
                "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
                "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)",
                "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
            ],
        ),
        *echo_tail("14:07:20"),
    ],
)

case(
    "not_enough_memory",
    "cuda-oom",
    [
        *START,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=4, total=4),
        *weights_done()[:8],
        *sched_exc(
            "14:07:06",
            0,
            [
                (
                    f"{PY}/sglang/srt/mem_cache/kv_cache_configurator.py",
                    212,
                    "configure",
                    "sizes = PoolSizes(",
                ),
                ("<string>", 14, "__init__", ""),
                (
                    f"{PY}/sglang/srt/model_executor/pool_configurator.py",
                    99,
                    "__post_init__",
                    "raise RuntimeError(msg)",
                ),
            ],
            [
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.6"
            ],
        ),
        *echo_tail("14:07:07"),
    ],
)

case(
    "host_oom_killed",
    "host-oom-killed",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=37),
        "[rank2]:[E1202 14:04:01.551200 48302 ProcessGroupNCCL.cpp:632] [Rank 2] NCCL WARN Net : Connection closed by remote peer gpu-node-07<45121>",
        "[rank2]:[E1202 14:04:01.551911 48302 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0 Rank 2] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.27.3",
        *tb(
            (f"{PY}/sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
            (
                f"{PY}/sglang/srt/entrypoints/engine.py",
                2024,
                "_wait_for_scheduler_ready",
                "raise _scheduler_died_error(j, scheduler_procs[j])",
            ),
        ),
        "RuntimeError: Rank 5 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
        systemd("A process of this unit has been killed by the OOM killer."),
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'oom-kill'."),
        systemd("Consumed 41min 2.310s CPU time."),
    ],
)

case(
    "sigkill_only",
    "host-oom-killed",
    [
        *START,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=20),
        systemd("Main process exited, code=killed, status=9/KILL"),
        systemd("Failed with result 'signal'."),
    ],
)

case(
    "nccl_init_error",
    "nccl-error",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel()[:9],
        "gpu-node-07:48304:48304 [4] NCCL INFO Bootstrap : Using eth0:10.20.0.7<0>",
        "gpu-node-07:48304:48304 [4] NCCL INFO cudaDriverVersion 12080",
        "gpu-node-07:48304:48391 [4] transport/p2p.cc:275 NCCL WARN Cuda failure 'peer access is not supported between these two devices'",
        "gpu-node-07:48304:48391 [4] NCCL INFO transport/p2p.cc:327 -> 1",
        *sched_exc(
            "14:00:21",
            4,
            [
                (
                    f"{PY}/sglang/srt/distributed/bootstrap.py",
                    160,
                    "init_parallel",
                    "initialize_model_parallel(",
                ),
                (
                    f"{PY}/torch/distributed/c10d_logger.py",
                    81,
                    "wrapper",
                    "return func(*args, **kwargs)",
                ),
                (
                    f"{PY}/torch/distributed/distributed_c10d.py",
                    2806,
                    "all_reduce",
                    "work = group.allreduce([tensor], opts)",
                ),
            ],
            [
                "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
                "ncclUnhandledCudaError: Call to CUDA function failed.",
                "Last error:",
                "Cuda failure 'peer access is not supported between these two devices'",
            ],
        ),
        *echo_tail("14:00:22"),
    ],
)

case(
    "port_in_use",
    "port-in-use",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=3, total=3),
        *weights_done(),
        *graphs(),
        *serving(),
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "model_path_missing",
    "model-not-found",
    [
        *START,
        *LAUNCH,
        *tb(
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (
                f"{PY}/sglang/srt/arg_groups/model_hook.py",
                88,
                "handle_model_config",
                "hf_config = get_config(",
            ),
            (
                f"{PY}/sglang/srt/utils/hf_transformers_utils.py",
                541,
                "get_config",
                "config = AutoConfig.from_pretrained(",
            ),
            (f"{PY}/transformers/utils/hub.py", 478, "cached_files", "raise e"),
            (
                f"{PY}/huggingface_hub/utils/_validators.py",
                154,
                "validate_repo_id",
                "raise HFValidationError(",
            ),
        ),
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/Kimi-K2.6'. Use `repo_type` argument if needed.",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        *tb(
            (
                f"{PY}/transformers/configuration_utils.py",
                721,
                "_get_config_dict",
                "raise OSError(",
            ),
        ),
        "OSError: Can't load the configuration of '/models/Kimi-K2.6'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure '/models/Kimi-K2.6' is the correct path to a directory containing a config.json file",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "hf_offline",
    "hf-hub-unreachable",
    [
        *START,
        *LAUNCH,
        *tb(
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (f"{PY}/transformers/utils/hub.py", 533, "cached_files", "raise OSError("),
        ),
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.",
        "Check your internet connection or see how to run the library in offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "drafter_hidden_mismatch",
    "drafter-mismatch",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=2, total=2),
        *weights_done()[:8],
        sgl("14:07:03", "Load weight begin. avail mem=102.04 GB", 0),
        *sched_exc(
            "14:07:04",
            0,
            [
                (
                    f"{PY}/sglang/srt/managers/scheduler.py",
                    1064,
                    "init_tp_model_worker",
                    "self.draft_worker = DraftWorkerClass(**draft_worker_kwargs)",
                ),
                (
                    f"{PY}/sglang/srt/speculative/eagle_worker_v2.py",
                    1340,
                    "__init__",
                    "self._draft_worker = EagleDraftWorker(",
                ),
                (
                    f"{PY}/sglang/srt/speculative/eagle_worker_v2.py",
                    221,
                    "__init__",
                    "self.draft_runner = TpModelWorker(",
                ),
                (
                    f"{PY}/sglang/srt/model_executor/model_runner.py",
                    1301,
                    "load_model",
                    "self.model = self.loader.load_model(",
                ),
                (
                    f"{PY}/sglang/srt/model_loader/loader.py",
                    702,
                    "load_weights_and_postprocess",
                    "model.load_weights(weights)",
                ),
                (
                    f"{PY}/sglang/srt/models/llama_eagle3.py",
                    373,
                    "load_weights",
                    "weight_loader(param, loaded_weight)",
                ),
                (
                    f"{PY}/sglang/srt/model_loader/weight_utils.py",
                    1581,
                    "default_weight_loader",
                    "assert param.size() == loaded_weight.size(), (",
                ),
            ],
            [
                "AssertionError: Attempted to load weight (torch.Size([7168, 21504])) into parameter (torch.Size([7168, 12288]))"
            ],
        ),
        *echo_tail("14:07:05"),
    ],
)

case(
    "gpu_too_few",
    "gpu-unavailable",
    [
        *START,
        SERVER_ARGS,
        *sched_exc(
            "14:00:08",
            4,
            [
                (
                    f"{PY}/sglang/srt/managers/tp_worker.py",
                    301,
                    "__init__",
                    "torch.cuda.set_device(gpu_id)",
                ),
                (
                    f"{PY}/torch/cuda/__init__.py",
                    567,
                    "set_device",
                    "torch._C._cuda_setDevice(device)",
                ),
            ],
            [
                "torch.AcceleratorError: CUDA error: invalid device ordinal",
                "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            ],
        ),
        *sched_exc(
            "14:00:08",
            5,
            [
                (
                    f"{PY}/torch/cuda/__init__.py",
                    567,
                    "set_device",
                    "torch._C._cuda_setDevice(device)",
                )
            ],
            ["torch.AcceleratorError: CUDA error: invalid device ordinal"],
        ),
        *echo_tail("14:00:09"),
    ],
)

case(
    "fabric_manager",
    "gpu-unavailable",
    [
        *START,
        *LAUNCH,
        f"{PY}/torch/cuda/__init__.py:182: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)",
        "  return torch._C._cuda_getDeviceCount() > 0",
        *tb(
            (f"{PY}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
            (f"{PY}/torch/cuda/__init__.py", 412, "_lazy_init", "torch._C._cuda_init()"),
        ),
        "RuntimeError: No CUDA GPUs are available",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "kernel_version",
    "kernel-package-mismatch",
    [
        *START,
        *LAUNCH,
        *tb(
            (
                f"{PY}/sglang/srt/entrypoints/http_server.py",
                2471,
                "launch_server",
                "tokenizer_manager, template_manager, scheduler_infos, port_args = _launch_subprocesses(",
            ),
            (
                f"{PY}/sglang/srt/entrypoints/engine.py",
                1962,
                "_set_envs_and_config",
                "assert_pkg_version(",
            ),
            (f"{PY}/sglang/srt/utils/common.py", 2434, "assert_pkg_version", "raise Exception("),
        ),
        "Exception: sglang-kernel with minimum required version 0.4.9 is not installed. Please reinstall the latest version with `pip install sglang-kernel --force-reinstall`",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "no_kernel_image",
    "kernel-unsupported-arch",
    [
        *START,
        SERVER_ARGS,
        *init_parallel()[:9],
        f"{PY}/torch/cuda/__init__.py:283: UserWarning: ",
        "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.",
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
        *sched_exc(
            "14:00:12",
            0,
            [
                (
                    f"{PY}/sglang/srt/distributed/bootstrap.py",
                    131,
                    "init_parallel",
                    "torch.zeros(1).cuda()",
                )
            ],
            [
                "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device"
            ],
        ),
        *echo_tail("14:00:13"),
    ],
)

case(
    "no_sglang_module",
    "python-import-error",
    [
        *START,
        "/opt/sglang/bin/python3: Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

case(
    "exec_missing",
    "exec-failed",
    [
        f"@systemd {UNIT}: Failed to locate executable /opt/sglang/bin/python3: No such file or directory",
        f"@systemd {UNIT}: Failed at step EXEC spawning /opt/sglang/bin/python3: No such file or directory",
        systemd("Main process exited, code=exited, status=203/EXEC"),
        systemd("Failed with result 'exit-code'."),
        f"@systemd Failed to start {UNIT} - SGLang Kimi K2.6 (EAGLE-3).",
    ],
)

case(
    "start_limit",
    "start-limit-hit",
    [
        systemd("Scheduled restart job, restart counter is at 5."),
        f"@systemd Stopped {UNIT} - SGLang Kimi K2.6 (EAGLE-3).",
        systemd("Start request repeated too quickly."),
        systemd("Failed with result 'start-limit-hit'."),
        f"@systemd Failed to start {UNIT} - SGLang Kimi K2.6 (EAGLE-3).",
    ],
)

case(
    "start_limit_after_port",
    "port-in-use",
    [
        *START,
        *LAUNCH,
        *tb(
            (
                f"{PY}/sglang/srt/entrypoints/engine.py",
                1190,
                "_launch_subprocesses",
                "port_args = PortArgs.init_new(server_args)",
            ),
            (
                f"{PY}/sglang/srt/server_args.py",
                868,
                "init_new",
                'wait_port_available(dist_init_port, "dist_init_port")',
            ),
            (f"{PY}/sglang/srt/utils/network.py", 103, "wait_port_available", "raise ValueError("),
        ),
        "ValueError: dist_init_port at 30005 is not available in 30 seconds. dist_init_port is used by a process already. process.name()='python3' process.cmdline()=['python3', '-m', 'sglang.launch_server'] process.status()='sleeping' pid=39112",
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
        systemd("Scheduled restart job, restart counter is at 5."),
        systemd("Start request repeated too quickly."),
        systemd("Failed with result 'start-limit-hit'."),
    ],
)

case(
    "startup_timeout",
    "startup-timeout",
    [
        *START,
        *LAUNCH,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=23, total=62),
        systemd("start operation timed out. Terminating."),
        systemd("Main process exited, code=killed, status=15/TERM"),
        systemd("Failed with result 'timeout'."),
    ],
)

case(
    "unknown_keyerror",
    "unknown",
    [
        *START,
        SERVER_ARGS,
        *init_parallel(),
        *load_weights(upto=2, total=2),
        *sched_exc(
            "14:03:12",
            6,
            [
                (
                    f"{PY}/sglang/srt/models/deepseek_v2.py",
                    4021,
                    "load_weights",
                    "param = params_dict[name]",
                ),
            ],
            ["KeyError: 'model.layers.61.mlp.experts.w2_weight_scale_inv'"],
        ),
        *echo_tail("14:03:13"),
    ],
)

case(
    "echoes_only",
    "unknown",
    [
        *START,
        SERVER_ARGS,
        *init_parallel(),
        sgl(
            "14:02:00", "Received sigquit from a child process. It usually means the child failed."
        ),
        *tb(
            (
                f"{PY}/sglang/srt/entrypoints/engine.py",
                2024,
                "_wait_for_scheduler_ready",
                "raise _scheduler_died_error(j, scheduler_procs[j])",
            ),
        ),
        "RuntimeError: Rank 3 scheduler died during initialization (exit code: 1). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
        sgl("14:02:01", "Initialization failed. Please see the error messages above."),
        systemd("Main process exited, code=exited, status=1/FAILURE"),
        systemd("Failed with result 'exit-code'."),
    ],
)

# Which cases are also written as -o json and -o short-precise.
JSON_CASES = (
    "seed_spec_assert",
    "cuda_oom_tp3",
    "host_oom_killed",
    "startup_timeout",
    "unknown_keyerror",
    "drafter_hidden_mismatch",
)
SHORT_CASES = (
    "seed_spec_assert",
    "cuda_graph_capture_oom",
    "nccl_init_error",
    "port_in_use",
    "start_limit",
)

# --------------------------------------------------------------------------- writers

_PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: TP(\d))?\]")


def _records(lines: list[str]) -> list[dict[str, object]]:
    """Each line with its time (µs), PID and kind; unprefixed lines take the line before's."""
    out: list[dict[str, object]] = []
    base = int(datetime(2026, 12, 2, 14, 0, 0, tzinfo=UTC).timestamp()) * 1_000_000
    prev = base
    pid = MAIN_PID
    micro = 0
    for ln in lines:
        kind = "service"
        msg = ln
        if ln.startswith("@systemd "):
            kind, msg = "systemd", ln[len("@systemd ") :]
        m = _PREFIX.match(msg)
        if m:
            b = int(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())
            if b * 1_000_000 > base:
                base, micro = b * 1_000_000, 0
            pid = RANK_PID[int(m[2])] if m[2] else MAIN_PID
        else:
            rm = re.match(r"\[rank(\d)\]", msg)
            if rm:
                pid = RANK_PID[int(rm[1])]
        micro += 1731
        ts = max(prev + 1, base + micro)
        prev = ts
        out.append({"ts": ts, "pid": 1 if kind == "systemd" else pid, "kind": kind, "msg": msg})
    return out


def to_cat(lines: list[str]) -> str:
    return "\n".join(r["msg"] for r in _records(lines)) + "\n"  # type: ignore[misc]


def to_json(lines: list[str]) -> str:
    out = []
    for n, r in enumerate(_records(lines)):
        ts = int(r["ts"])  # type: ignore[arg-type]
        base = {
            "__CURSOR": f"s=739ad463348b4ceca5a9e69c95a3c93d;i={0x4EC00 + n:x};b=6c7c6013a8d34b3f8b9a17b6b2c7d2b1;m={0x17EE000000 + ts % 10**9:x};t={ts:x};x={(ts * 2654435761) % 2**64:016x}",
            "__REALTIME_TIMESTAMP": str(ts),
            "__MONOTONIC_TIMESTAMP": str(102781234441 + n * 1731),
            "_BOOT_ID": "6c7c6013a8d34b3f8b9a17b6b2c7d2b1",
            "_MACHINE_ID": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
            "_HOSTNAME": HOST,
        }
        if r["kind"] == "systemd":
            obj = {
                **base,
                "PRIORITY": "3" if "Failed" in str(r["msg"]) else "6",
                "SYSLOG_FACILITY": "3",
                "SYSLOG_IDENTIFIER": "systemd",
                "_UID": "0",
                "_GID": "0",
                "_TRANSPORT": "journal",
                "_PID": "1",
                "_COMM": "systemd",
                "_EXE": "/usr/lib/systemd/systemd",
                "_CMDLINE": "/sbin/init",
                "_SYSTEMD_CGROUP": "/init.scope",
                "_SYSTEMD_UNIT": "init.scope",
                "_SYSTEMD_SLICE": "-.slice",
                "CODE_FILE": "src/core/unit.c",
                "CODE_LINE": "5875",
                "CODE_FUNC": "unit_log_failure",
                "UNIT": UNIT,
                "INVOCATION_ID": INV,
                "MESSAGE": r["msg"],
                "_SOURCE_REALTIME_TIMESTAMP": str(ts - 12),
            }
        else:
            obj = {
                **base,
                "PRIORITY": "6",
                "SYSLOG_FACILITY": "3",
                "_UID": "998",
                "_GID": "998",
                "_CAP_EFFECTIVE": "0",
                "_TRANSPORT": "stdout",
                "_STREAM_ID": "0f8e0e1e4b0b4b5e9c3f2a1d0e9f8c7b",
                "SYSLOG_IDENTIFIER": "python3",
                "_PID": str(r["pid"]),
                "_COMM": "python3" if r["pid"] == MAIN_PID else "sglang::schedul",
                "_EXE": "/usr/bin/python3.12",
                "_CMDLINE": CMDLINE
                if r["pid"] == MAIN_PID
                else "sglang::scheduler_TP" + str(int(r["pid"]) - 48300),  # type: ignore[arg-type]
                "_SYSTEMD_CGROUP": f"/system.slice/{UNIT}",
                "_SYSTEMD_UNIT": UNIT,
                "_SYSTEMD_SLICE": "system.slice",
                "_SYSTEMD_INVOCATION_ID": INV,
                "MESSAGE": r["msg"],
            }
        out.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(out) + "\n"


def to_short_precise(lines: list[str]) -> str:
    out = []
    for r in _records(lines):
        dt = datetime.fromtimestamp(int(r["ts"]) / 1e6, tz=UTC)  # type: ignore[arg-type]
        stamp = dt.strftime("%b %d %H:%M:%S.") + f"{dt.microsecond:06d}"
        ident = "systemd[1]" if r["kind"] == "systemd" else f"python3[{r['pid']}]"
        out.append(f"{stamp} {HOST} {ident}: {r['msg']}")
    return "\n".join(out) + "\n"


def main() -> None:
    expected: dict[str, str] = {}
    for name, (category, lines) in CASES.items():
        (HERE / f"{name}.log").write_text(to_cat(lines))
        expected[f"{name}.log"] = category
        if name in JSON_CASES:
            (HERE / f"{name}.json").write_text(to_json(lines))
            expected[f"{name}.json"] = category
        if name in SHORT_CASES:
            (HERE / f"{name}.short").write_text(to_short_precise(lines))
            expected[f"{name}.short"] = category
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
