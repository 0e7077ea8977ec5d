"""SGLang 0.5.23: what deploy knows about it, read off the cp311 wheel (paths under sglang/).

Every text here is copied from the release's source with its file and line; `{name}` marks
where SGLang interpolates a value. To check a fact: `pip download --no-deps sglang==0.5.23`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orchestrator.sglang.model import Frame, Message, Milestone, Release

VERSION = "0.5.23"

_SH = "srt/arg_groups/speculative_hook.py"

# The chain from `python -m sglang.launch_server` to the speculative checks.
SPEC_CHAIN: tuple[Frame, ...] = (
    Frame("launch_server.py", 84, "<module>", "run_server(server_args)"),
    Frame("launch_server.py", 29, "run_server", "server_args.resolve_once()"),
    Frame("srt/server_args.py", 277, "resolve_once", "run_resolution_pipeline(self)"),
    Frame(
        "srt/arg_groups/pipeline.py",
        306,
        "run_resolution_pipeline",
        "run_hook(handle_speculative_decoding, server_args)",
    ),
    Frame("srt/arg_groups/resolution_hooks.py", 139, "run_hook", "step(server_args)"),
)
# ... then from the algorithm dispatch into the EAGLE-family handler.
EAGLE_CHAIN: tuple[Frame, ...] = (
    Frame(_SH, 284, "handle_speculative_decoding", "algo.handle_server_args(server_args)"),
    Frame(
        "srt/speculative/spec_info.py",
        264,
        "handle_server_args",
        "_handle_eagle_family(server_args)",
    ),
)

FRAMES: dict[str, Frame] = {
    # CPython 3.11 reports a multi-line `assert (a and b)` at its last operand.
    "spec-need-steps": Frame(
        _SH,
        1162,
        "_handle_eagle_family",
        "and cfg.speculative_num_draft_tokens is None",
        "    " + "^" * 40,
    ),
    "spec-steps-need-topk": Frame(
        _SH, 1274, "_handle_eagle_family", "cfg.speculative_eagle_topk > 1"
    ),
    "spec-steps-need-topk-trtllm-mha": Frame(
        _SH, 1177, "_handle_eagle_family", "if cfg.speculative_eagle_topk > 1:", "   " + "^" * 30
    ),
    "spec-tree-page-size": Frame(_SH, 1278, "_handle_eagle_family", "raise ValueError("),
    "spec-trtllm-mha-topk": Frame(_SH, 1178, "_handle_eagle_family", "raise ValueError("),
    "spec-unknown-algorithm-call": Frame(
        _SH,
        242,
        "handle_speculative_decoding",
        "algo = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)",
        "       " + "^" * 59,
    ),
    "spec-unknown-algorithm": Frame(
        "srt/speculative/spec_info.py",
        65,
        "from_string",
        'raise ValueError(f"Unknown speculative algorithm name: {name}")',
    ),
}

CUDA_GRAPH_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
    "(Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)

_NAME = r"[\w.-]+"
_QUOTED = r"'?[\w-]+'?"

MESSAGES: tuple[Message, ...] = (
    # --- speculative decoding (argument resolution) -------------------------------------
    Message(
        "spec-need-steps",
        "",  # a bare assertion: the traceback's last line is just "AssertionError"
        f"{_SH}:1160 _handle_eagle_family",
        exc="AssertionError",
        preflight="spec-params-need-num-steps",
    ),
    Message(
        "spec-steps-need-topk",
        "'>' not supported between instances of 'NoneType' and 'int'",  # CPython's words
        f"{_SH}:1274 _handle_eagle_family (cfg.speculative_eagle_topk > 1 with top-k unset)",
        exc="TypeError",
        preflight="spec-num-steps-needs-topk",
    ),
    Message(
        "spec-tree-page-size",
        "speculative_eagle_topk > 1 with page_size > 1 is only supported on {backends}; "
        "got attention_backend={backend}. Use page_size == 1 or one of those backends.",
        f"{_SH}:1278 _handle_eagle_family",
        exc="ValueError",
        preflight="spec-tree-page-size-backend",
        fields={"backends": r"\([^)]*\)", "backend": _QUOTED},
    ),
    Message(
        "spec-unknown-algorithm",
        "Unknown speculative algorithm name: {name}",
        "srt/speculative/spec_info.py:65 from_string",
        exc="ValueError",
        preflight="spec-unknown-algorithm",
        fields={"name": r".*"},
    ),
    Message(
        "spec-trtllm-mha-topk",
        "trtllm_mha backend only supports topk = 1 for speculative decoding.",
        f"{_SH}:1178 _handle_eagle_family",
        exc="ValueError",
        preflight="spec-trtllm-mha-topk",
    ),
    Message(
        "spec-rejection-algorithm",
        "--speculative-use-rejection-sampling is only supported for EAGLE / EAGLE3 / NEXTN, "
        "not speculative_algorithm={algorithm}.",
        f"{_SH}:1216 _handle_eagle_family",
        exc="NotImplementedError",
        preflight="spec-rejection-sampling",
        fields={"algorithm": _NAME},
    ),
    Message(
        "spec-rejection-topk",
        "--speculative-use-rejection-sampling requires --speculative-eagle-topk=1.",
        f"{_SH}:1222 _handle_eagle_family",
        exc="ValueError",
        preflight="spec-rejection-sampling",
    ),
    Message(
        "spec-standalone-dp",
        "Currently standalone speculative decoding does not support dp attention.",
        f"{_SH}:1082 _handle_eagle_family",
        exc="ValueError",
        preflight="spec-dp-attention",
    ),
    Message(
        "spec-ngram-dp",
        "Currently ngram speculative decoding does not support dp attention.",
        f"{_SH}:1368 _handle_ngram",
        exc="ValueError",
        preflight="spec-dp-attention",
    ),
    Message(
        "spec-ngram-page-size",
        "speculative_eagle_topk({topk}) > 1 with page_size({page}) > 1 is unstable and produces "
        "incorrect results for paged attention backends. This combination is only supported for "
        "the 'flashinfer' backend.",
        f"{_SH}:1361 _handle_ngram",
        exc="ValueError",
        preflight="spec-ngram-page-size",
        fields={"topk": r"\d+", "page": r"\d+"},
    ),
    Message(
        "spec-topk1-draft-adjusted",
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
        "speculative_eagle_topk == 1",
        f"{_SH}:1241 _handle_eagle_family (a warning)",
        preflight="spec-topk1-draft-tokens",
    ),
    # --- attention backends ---------------------------------------------------------------
    Message(
        "trtllm-mla-blackwell",
        "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a "
        "different backend.",
        "srt/arg_groups/overrides.py:1211 (attention backend validation)",
        exc="ValueError",
        preflight="trtllm-mla-needs-blackwell",
    ),
    # --- the EAGLE-3 drafter --------------------------------------------------------------
    Message(
        "eagle3-mla-q-lora",
        "Eagle3 MLA layer requires q_lora_rank in the draft config",
        "srt/models/kimi_k25_eagle3.py:115 Eagle3MLADecoderLayer.__init__",
        exc="ValueError",
        preflight="drafter-architecture",
    ),
    Message(
        "eagle3-one-layer",
        "EAGLE3 currently only supports 1 layer",
        "srt/models/kimi_k25_eagle3.py:244",
        exc="ValueError",
        preflight="drafter-architecture",
    ),
    Message(
        "arch-unsupported",
        "Model architectures {architectures} are not supported for now. Supported "
        "architectures: {supported}",
        "srt/models/registry.py:63 _raise_for_unsupported",
        exc="ValueError",
        fields={"architectures": r"\[[^\]]*\]", "supported": r".*"},
    ),
    Message(
        "no-model-weights",
        "Cannot find any model weights with `{path}`",
        "srt/model_loader/loader.py:581 _prepare_weights",
        exc="RuntimeError",
        preflight="model-path-missing",
        fields={"path": r"[^`]+"},
    ),
    Message(
        "arch-not-inspected",
        "Model architectures {architectures} failed to be inspected. Please check the logs for "
        "more details.",
        "srt/models/registry.py:57 _raise_for_unsupported",
        exc="ValueError",
        fields={"architectures": r"\[[^\]]*\]"},
    ),
    Message(
        "weight-shape-mismatch",
        "Attempted to load weight ({got}) into parameter ({want})",
        "srt/model_loader/weight_utils.py:1582 default_weight_loader",
        exc="AssertionError",
        preflight="drafter-hidden-size",
        fields={"got": r".*?", "want": r".*"},
    ),
    Message(
        "ignore-import-error",
        "Ignore import error when loading {module}: {error}",
        "srt/models/registry.py:132 import_model_classes (a warning)",
        fields={"module": r"[\w.]+", "error": r".*"},
    ),
    # --- memory ---------------------------------------------------------------------------
    Message(
        "not-enough-memory",
        "Not enough memory. Please try to increase --mem-fraction-static.",
        "srt/model_executor/pool_configurator.py:96",
        exc="RuntimeError",
        # sglang 0.1.x (srt/managers/router/model_runner.py), with its typo
        older=("Not enought memory. Please try to increase --mem-fraction-static.",),
    ),
    Message(
        "not-enough-memory-value",
        " Current value: mem_fraction_static={mfs}",
        "srt/model_executor/pool_configurator.py:98 (appended when the value is set)",
        fields={"mfs": r"[\d.]+"},
    ),
    Message(
        "kv-no-room",
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={mfs}. "
        "Raise --mem-fraction-static above {suggested} (minimum viable = 1 - available/pre = "
        "{minimum}). If using speculative decoding, draft weights are now counted.",
        "srt/mem_cache/kv_cache_configurator.py:3050",
        exc="ValueError",
        preflight="gpu-free-memory",
        fields={"mfs": r"[\d.]+", "suggested": r"[\d.]+", "minimum": r"[\d.]+"},
    ),
    Message(
        "memory-unbalanced",
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. {detail}",
        "srt/distributed/bootstrap.py:445 _check_tp_memory_balance",
        exc="RuntimeError",
        preflight="gpu-free-memory",
        fields={"detail": r".*"},
    ),
    Message(
        "cuda-graph-capture-failed",
        "Capture cuda graph failed: {error}",
        "srt/model_executor/runner/decode_cuda_graph_runner.py:603 (and the draft runners)",
        exc="Exception",
        fields={"error": r".*"},
    ),
    Message(
        "cuda-graph-solutions",
        CUDA_GRAPH_SOLUTIONS,
        "srt/model_executor/runner_backend_utils/__init__.py:14 CUDA_GRAPH_CAPTURE_FAILED_MSG",
    ),
    Message(
        "prefill-graph-failed",
        "Fail when using backend: {backend} for prefill runner.",
        "srt/model_executor/runner_backend_utils/__init__.py:24",
        fields={"backend": r"\S+"},
    ),
    # --- packages and ports ---------------------------------------------------------------
    Message(
        "pkg-not-installed",
        "{pkg} with minimum required version {version} is not installed. ",
        "srt/utils/common.py:2435 assert_pkg_version",
        exc="Exception",
        fields={"pkg": r"[\w-]+", "version": r"\S+"},
    ),
    Message(
        "pkg-too-old",
        "{pkg} is installed with version {have}, which is less than the minimum required "
        "version {version}. ",
        "srt/utils/common.py:2431 assert_pkg_version",
        exc="Exception",
        fields={"pkg": r"[\w-]+", "have": r"\S+", "version": r"\S+?"},
    ),
    Message(
        "port-in-use",
        "Port is already in use. {ports}",
        "srt/server_args.py:886 PortArgs.init_new",
        fields={"ports": r".*"},
    ),
    Message(
        "port-not-available",
        "{name} at {port} is not available in {seconds} seconds. {detail}",
        "srt/utils/network.py:103 wait_port_available",
        exc="ValueError",
        fields={"name": r"\w+", "port": r"\d+", "seconds": r"\d+", "detail": r".*"},
    ),
    # --- consequences of an earlier failure (echoes) ------------------------------------
    Message(
        "sigquit",
        "Received sigquit from a child process. It usually means the child failed.",
        "srt/entrypoints/engine.py:1978 launch_phase_sigquit_handler",
    ),
    Message(
        "scheduler-died",
        "Rank {rank} scheduler died during initialization (exit code: {code}). If exit code is "
        "-9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
        "srt/entrypoints/engine.py:2006 _scheduler_died_error",
        exc="RuntimeError",
        fields={"rank": r"\d+", "code": r"-?\d+"},
    ),
    Message(
        "scheduler-exception",
        "Scheduler hit an exception: {traceback}",
        "srt/managers/scheduler.py:6372 run_scheduler_process",
        fields={"traceback": r".*"},
    ),
    Message(
        "init-failed",
        "Initialization failed. Please see the error messages above.",
        "srt/entrypoints/engine.py:2032 _wait_for_scheduler_ready",
        exc="RuntimeError",
    ),
    Message(
        "warmup-failed",
        "Initialization failed. warmup error: {error}",
        "srt/entrypoints/http_server.py:2384 _execute_server_warmup",
        fields={"error": r".*"},
    ),
    # --- after the server was ready (day 2) -----------------------------------------------
    Message(
        "watchdog-timeout",
        "{who} watchdog timeout (self.watchdog_timeout={timeout}, self.soft={soft})",
        "srt/utils/watchdog.py:153",
        fields={"who": r"\w+", "timeout": r"[\d.]+", "soft": r"True|False"},
        older=("Watchdog timeout (self.watchdog_timeout={timeout})",),  # sglang #3752 (0.4.x)
    ),
    Message(
        "kv-retract",
        "KV cache pool is full. Retract requests. #retracted_reqs: {n}{rest}",
        "srt/managers/scheduler.py (the decode retraction warning; occasional ones are normal)",
        fields={"n": r"\d+", "rest": r"[^\n]{0,200}"},
    ),
    Message(
        "pool-leak",
        "{pool} memory leak detected! {detail}",
        "srt/managers/scheduler_components/invariant_checker.py:453 _report_leak (the idle "
        "check of the KV pools; raise_error_or_warn raises ValueError under strict checking, "
        "and 0.4.x raised it always: sglang #6888, #11970)",
        exc="ValueError",
        fields={"pool": r"\w+", "detail": r".*"},
    ),
    Message(
        "kv-retract-no-space",
        "No space left for only one request{detail}",
        "older releases' decode retraction (sglang #14948); 0.5.x raises kv-oom-decode instead",
        exc="AssertionError",
        fields={"detail": r".*"},
    ),
    Message(
        "kv-oom-prefill",
        "Prefill out of memory. Try to lower your batch size.",
        "srt/mem_cache/allocation.py:239",
    ),
    # LoRA: a target module whose shapes SGLang's LoRA code does not know (0.5.11: line 149;
    # nemotron_h.py and qwen3_5.py raise the same for their own modules)
    Message(
        "lora-module-unsupported",
        "get_hidden_dim not implemented for {module}",
        "srt/lora/utils.py:274 get_hidden_dim",
        exc="NotImplementedError",
        fields={"module": r"\S+"},
    ),
    Message(
        "kv-oom-decode",
        "Decode out of memory. Try to lower your batch size.",
        "srt/mem_cache/allocation.py:613",
    ),
    Message(
        "alloc-req-slots",
        "alloc_req_slots runs out of memory. Please set a smaller number for "
        "`--max-running-requests`. {detail}",
        "srt/mem_cache/allocation.py:345",
        exc="RuntimeError",
        fields={"detail": r".*"},
    ),
    Message(
        "detokenizer-exception",
        "DetokenizerManager hit an exception: {traceback}",
        "srt/managers/detokenizer_manager.py:566",
        fields={"traceback": r".*"},
    ),
    Message(
        "tokenizer-exception",
        "TokenizerManager hit an exception: {traceback}",
        "srt/managers/tokenizer_manager.py:4043",
        fields={"traceback": r".*"},
        # 0.1.x and 0.2.x printed it with the traceback on the next lines
        # (srt/managers/tokenizer_manager.py, read off sglang 0.1.14 and 0.2.9)
        older=("Exception in TokenizerManager:{traceback}",),
    ),
    Message(
        "subprocess-crashed",
        "Subprocess {name} (pid={pid}) crashed with exit code {code}. Triggering SIGQUIT for "
        "cleanup...",
        "srt/utils/watchdog.py:218 SubprocessWatchdog",
        fields={"name": r"\w+", "pid": r"\d+", "code": r"-?\d+"},
    ),
    Message(
        "health-check-failed",
        "Health check failed. Server couldn't get a response from detokenizer for last {secs} "
        "seconds. tic start time: {tic}. last_heartbeat time: {last}",
        "srt/entrypoints/http_server.py:792",
        fields={"secs": r"\d+", "tic": r"[\d:]+", "last": r"[\d:]+"},
    ),
    # --- start-up milestones --------------------------------------------------------------
    Message("ms-server-args", "server_args={args}", "srt/server_args.py (print_server_args)"),
    Message("ms-init-begin", "Init parallel begin.", "srt/distributed/bootstrap.py:115"),
    Message(
        "ms-init-end",
        "Init parallel ends. elapsed={elapsed} s",
        "srt/distributed/bootstrap.py:190",
        fields={"elapsed": r"[\d.]+"},
    ),
    Message(
        "ms-load-begin",
        "Load weight begin. avail mem={avail} GB",
        "srt/model_executor/model_runner.py:1274",
        fields={"avail": r"[\d.]+"},
    ),
    Message(
        "ms-load-end",
        "Load weight end. elapsed={elapsed} s, type={arch}, {detail}",
        "srt/model_executor/model_runner.py:1373",
        fields={"elapsed": r"[\d.]+", "arch": r"\w+", "detail": r".*"},
    ),
    Message(
        "ms-kv-cache",
        "KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, KV size: {size} GB",
        "srt/mem_cache/kv_cache_configurator.py (KV pool)",
        fields={"dtype": r"[\w.]+", "tokens": r"\d+", "size": r"[\d.]+"},
    ),
    Message(
        "ms-memory-pool",
        "Memory pool end. avail mem={avail} GB",
        "srt/mem_cache/kv_cache_configurator.py:499",
        fields={"avail": r"[\d.]+"},
    ),
    Message(
        "ms-graph-begin",
        "Capture {name} CUDA graph begin. {detail}",
        "srt/model_executor/model_runner_components/cuda_graph_setup.py:685",
        fields={"name": r"[\w ]+?", "detail": r".*"},
    ),
    Message(
        "ms-graph-end",
        "Capture {name} CUDA graph end. {detail}",
        "srt/model_executor/model_runner_components/cuda_graph_setup.py",
        fields={"name": r"[\w ]+?", "detail": r".*"},
    ),
    Message(
        "ms-ready",
        "The server is fired up and ready to roll!",
        "srt/entrypoints/http_server.py:2600",
    ),
)

MILESTONES: tuple[Milestone, ...] = (
    Milestone("args", "resolving server args", re.compile(r"\bserver_args=(?:ServerArgs\(|\{)")),
    Milestone(
        "init-parallel", "initialising NCCL / parallel groups", re.compile(r"Init parallel begin")
    ),
    Milestone("load-weights", "loading weights", re.compile(r"Load weight begin\.")),
    Milestone("weights-loaded", "weights loaded", re.compile(r"Load weight end\.")),
    Milestone("kv-cache", "allocating KV cache", re.compile(r"KV Cache is allocated\.")),
    Milestone("memory-pool", "memory pool ready", re.compile(r"Memory pool end\.")),
    Milestone(
        "cuda-graphs",
        "capturing CUDA graphs",
        re.compile(
            r"Capture (?:target verify|target decode|draft decode|draft extend|prefill|cuda) "
            r"(?:CUDA |cuda )?graph begin",
            re.I,
        ),
    ),
    Milestone(
        "http",
        "HTTP server starting, warming up",
        re.compile(r"Uvicorn running on|Started server process"),
    ),
    Milestone("ready", "ready", re.compile(r"The server is fired up and ready to roll!")),
)


def resolve_deprecated(name: str, server: Mapping[str, Any]) -> dict[str, Any]:
    """What 0.5.23 makes of a deprecated field set on the command line.

    - `--enable-dp-attention` (DeprecatedStoreTrueAction, server_args.py:418): resolved by
      arg_groups/parallel_hook.py `_handle_deprecated_dp_attention` into `attn_dp_size = dp_size`,
      `dp_size = 1` when `attn_dp_size` is still 1; the flag itself then counts for nothing.
    - `--disable-cuda-graph` (DeprecatedStoreTrueAction, server_args.py:410): read by
      arg_groups/cuda_graph_hook.py as both phases' backend "disabled", below the explicit
      `--cuda-graph-backend-{decode,prefill}` selectors, which win.
    """
    out = dict(server)
    value = out.pop(name, None)
    if name == "enable_dp_attention":
        if value and out.get("attn_dp_size", 1) == 1:
            out["attn_dp_size"] = out.get("dp_size", 1)
            out["dp_size"] = 1
        return out
    if name == "disable_cuda_graph":
        if value:
            out.setdefault("cuda_graph_backend_decode", "disabled")
            out.setdefault("cuda_graph_backend_prefill", "disabled")
        return out
    if value is not None:
        out[name] = value
    return out


RELEASE = Release(
    version=VERSION,
    args_file="args-0.5.23.json",
    messages={m.id: m for m in MESSAGES},
    frames=FRAMES,
    chains={"spec": SPEC_CHAIN, "eagle": EAGLE_CHAIN},
    milestones=MILESTONES,
    algorithms=(
        "EAGLE",
        "EAGLE3",
        "NEXTN",
        "STANDALONE",
        "NGRAM",
        "DFLASH",
        "DSPARK",
        "UNO",
        "FROZEN_KV_MTP",
    ),
    eagle_family=("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"),
    auto_spec_params={
        "LlamaForCausalLM": (5, 4, 8),
        "Grok1ForCausalLM": (5, 4, 8),
        "Grok1VForCausalLM": (5, 4, 8),
        "*": (3, 1, 4),  # DeepseekV3ForCausalLM, KimiK25ForConditionalGeneration, ...
    },
    has_speculative_adaptive=True,
    adaptive_candidate_steps=(1, 3, 5, 7),  # speculative/adaptive_spec_params.py:30
    adaptive_skips_auto_choice=True,
    has_draft_attention_backend=True,
    tree_paged_backends=("flashinfer", "fa3", "triton"),
    # arg_groups/overrides.py _mla_backend_page_constraints and the attention hook
    forced_page_size={
        "trtllm_mla": 64,
        "flashmla": 64,
        "cutlass_mla": 128,
        "cutedsl_mla": 64,
        "trtllm_mha": 64,
    },
    allowed_page_sizes={"trtllm_mla": (32, 64), "trtllm_mha": (16, 32, 64, 128)},
    draft_forced_page_size={"trtllm_mha": 64},
    graph_flags={
        "max_bs": "--cuda-graph-max-bs-decode",
        "disable": "--cuda-graph-backend-decode=disabled",
    },
    graph_flags_since="0.5.20",
    mla_default_backend={"sm100": "trtllm_mla", "hopper": "fa3", "other": "triton"},
    install_hint="pip install 'sglang[all]==0.5.23'",
    renamed={"cuda_graph_max_bs": "cuda_graph_max_bs_decode (and cuda_graph_max_bs_prefill)"},
    resolve_deprecated=resolve_deprecated,
)
