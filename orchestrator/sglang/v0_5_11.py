"""SGLang 0.5.11: the release of the seed's traceback (its build lay between 0.5.11 and 0.5.12,
whose speculative checks are word for word 0.5.11's).

Everything here differs from 0.5.23 (`v0_5_23.py`) or was checked to be the same, read off the
cp311 wheel (paths under sglang/) and the release's real argument resolution on the CPU
(`scripts/sglang-cpu-venv DIR 0.5.11`). What is not restated is 0.5.23's, checked identical:
the top-k 1 warning, the STANDALONE/NGRAM DP-attention texts, the TRTLLM MLA Blackwell text, the
memory, scheduler, sigquit and warm-up texts, the auto-chosen (steps, top-k, draft) per
architecture, trtllm_mla as the MLA default on sm100 and fa3 on Hopper, and the serving-time
texts (watchdog, KV allocation, detokenizer exception, health check: mem_cache/common.py,
utils/watchdog.py, managers/detokenizer_manager.py, entrypoints/http_server.py).

How 0.5.11 differs where it matters to deploy:
- the speculative checks live in `server_args.py` `_handle_speculative_decoding`, run from
  `ServerArgs.__post_init__` while the arguments are parsed;
- a tree draft (top-k > 1) with page size > 1 is allowed on flashinfer and fa3 only (0.5.23 adds
  triton), with another message;
- `--speculative-adaptive` exists but does not skip the assertion when steps are unset;
- a draft attention backend of trtllm_mha does not force page size 64;
- `--speculative-algorithm` and `--attention-backend` are argparse choices (a wrong one exits 2
  while parsing); no `--attn-dp-size`, `--cuda-graph-*-decode/prefill` or
  `--speculative-use-rejection-sampling`; `--enable-dp-attention`, `--cuda-graph-max-bs` and
  `--disable-cuda-graph` are plain flags;
- start-up milestones: "Init torch distributed begin.", "Capture cuda graph begin.",
  "Capture draft cuda graph begin.", a KV-cache line without "dtype:";
- the CUDA-graph failure's remedies name `--cuda-graph-max-bs` and `--disable-cuda-graph`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from orchestrator.sglang import v0_5_23 as newer
from orchestrator.sglang.model import Frame, Message, Milestone, Release

VERSION = "0.5.11"

_SA = "srt/server_args.py"

# python -m sglang.launch_server -> prepare_server_args -> the dataclass's __init__ ->
# __post_init__ -> _handle_speculative_decoding (read off a real run in the CPU venv).
SPEC_CHAIN: tuple[Frame, ...] = (
    Frame("launch_server.py", 66, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
    Frame(
        _SA,
        7299,
        "prepare_server_args",
        "return ServerArgs.from_cli_args(raw_args)",
        "       " + "^" * 34,
    ),
    Frame(
        _SA,
        6685,
        "from_cli_args",
        "return cls(**{attr: getattr(args, attr) for attr in attrs})",
        "       " + "^" * 52,
    ),
    Frame("<string>", 371, "__init__"),  # the dataclass's generated __init__ (368 fields)
    Frame(_SA, 882, "__post_init__", "self._handle_speculative_decoding()"),
)

FRAMES: dict[str, Frame] = {
    "spec-need-steps": Frame(
        _SA,
        3521,
        "_handle_speculative_decoding",
        "and self.speculative_num_draft_tokens is None",
        "    " + "^" * 41,
    ),
    "spec-steps-need-topk": Frame(
        _SA, 3549, "_handle_speculative_decoding", "self.speculative_eagle_topk > 1"
    ),
    "spec-steps-need-topk-trtllm-mha": Frame(
        _SA, 3534, "_handle_speculative_decoding", "if self.speculative_eagle_topk > 1:"
    ),
    "spec-tree-page-size": Frame(_SA, 3553, "_handle_speculative_decoding", "raise ValueError("),
    "spec-trtllm-mha-topk": Frame(_SA, 3535, "_handle_speculative_decoding", "raise ValueError("),
    # Not reached from the command line (argparse choices refuse first); kept for completeness.
    "spec-unknown-algorithm-call": Frame(
        "srt/speculative/spec_info.py", 30, "from_string", "return cls[name.upper()]"
    ),
    "spec-unknown-algorithm": Frame(
        "srt/speculative/spec_info.py",
        32,
        "from_string",
        'raise ValueError(f"Unknown speculative algorithm name: {name}")',
    ),
}

CUDA_GRAPH_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)

_CHANGED: tuple[Message, ...] = (
    Message(
        "spec-need-steps",
        "",
        f"{_SA}:3518 _handle_speculative_decoding",
        exc="AssertionError",
        preflight="spec-params-need-num-steps",
    ),
    Message(
        "spec-steps-need-topk",
        "'>' not supported between instances of 'NoneType' and 'int'",
        f"{_SA}:3549 _handle_speculative_decoding (self.speculative_eagle_topk > 1, top-k unset)",
        exc="TypeError",
        preflight="spec-num-steps-needs-topk",
    ),
    Message(
        "spec-tree-page-size",
        "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect "
        "results for paged attention backends. This combination is only supported for the "
        "'flashinfer' backend.",
        f"{_SA}:3553 _handle_speculative_decoding (allows flashinfer and fa3)",
        exc="ValueError",
        preflight="spec-tree-page-size-backend",
    ),
    Message(
        "spec-unknown-algorithm",
        "argument --speculative-algorithm: invalid choice: {name} (choose from {choices})",
        f"{_SA}:5365 add_cli_args (argparse choices; exit status 2)",
        preflight="spec-unknown-algorithm",
        fields={"name": r"'[^']*'", "choices": r"[^)]*"},
    ),
    Message(
        "spec-trtllm-mha-topk",
        "trtllm_mha backend only supports topk = 1 for speculative decoding.",
        f"{_SA}:3535 _handle_speculative_decoding",
        exc="ValueError",
        preflight="spec-trtllm-mha-topk",
    ),
    Message(
        "spec-topk1-draft-adjusted",
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
        "speculative_eagle_topk == 1",
        f"{_SA}:3543 _handle_speculative_decoding (a warning)",
        preflight="spec-topk1-draft-tokens",
    ),
    Message(
        "piecewise-graph-failed",
        "Piecewise CUDA Graph failed with error: {error}",
        "srt/compilation/piecewise_context_manager.py:49 enable_piecewise_cuda_graph (logged, "
        "then re-raised)",
        fields={"error": r".*"},
    ),
    Message(
        "cuda-graph-solutions",
        CUDA_GRAPH_SOLUTIONS,
        "srt/model_executor/cuda_graph_runner.py:1431",
    ),
    Message(
        "cuda-graph-capture-failed",
        "Capture cuda graph failed: {error}",
        "srt/model_executor/cuda_graph_runner.py:717 (and the draft runners)",
        exc="Exception",
        fields={"error": r".*"},
    ),
    Message(
        "ms-init-begin",
        "Init torch distributed begin.",
        "srt/model_executor/model_runner.py:1103",
    ),
    Message(
        "ms-init-end",
        "Init torch distributed ends. elapsed={elapsed} s, mem usage={usage} GB",
        "srt/model_executor/model_runner.py:1236",
        fields={"elapsed": r"[\d.]+", "usage": r"[\d.]+"},
    ),
    Message(
        "ms-kv-cache",
        "KV Cache is allocated. #tokens: {tokens}, KV size: {size} GB",
        "srt/mem_cache/memory_pool.py:741",
        fields={"tokens": r"\d+", "size": r"[\d.]+"},
    ),
    Message(
        "ms-memory-pool",
        "Memory pool end. avail mem={avail} GB",
        "srt/model_executor/model_runner_kv_cache_mixin.py:769",
        fields={"avail": r"[\d.]+"},
    ),
    Message(
        "ms-graph-begin",
        "Capture {name} graph begin. This can take up to several minutes. avail mem={avail} GB",
        "srt/model_executor/model_runner.py:2779 (target: 'cuda'; speculative/eagle_worker.py: "
        "'draft cuda', 'draft extend cuda')",
        fields={"name": r"[\w ]+?", "avail": r"[\d.]+"},
    ),
    Message(
        "ms-graph-end",
        "Capture {name} graph end. Time elapsed: {elapsed} s. mem usage={usage} GB. avail "
        "mem={avail} GB.",
        "srt/model_executor/model_runner.py:2797",
        fields={"name": r"[\w ]+?", "elapsed": r"[\d.]+", "usage": r"[\d.]+", "avail": r"[\d.]+"},
    ),
    Message(
        "ms-ready",
        "The server is fired up and ready to roll!",
        "srt/entrypoints/http_server.py:2032",
    ),
)

MILESTONES: tuple[Milestone, ...] = tuple(
    replace(
        m,
        pattern=re.compile(r"Init torch distributed begin|Init parallel begin"),
    )
    if m.phase == "init-parallel"
    else replace(
        m,
        pattern=re.compile(
            r"Capture (?:cuda|draft cuda|draft extend cuda|piecewise CUDA|target verify|"
            r"target decode|draft decode|draft extend) (?:CUDA )?graph begin",
            re.I,
        ),
    )
    if m.phase == "cuda-graphs"
    else m
    for m in newer.MILESTONES
)

RELEASE = Release(
    version=VERSION,
    args_file="args-0.5.11.json",
    messages={**newer.RELEASE.messages, **{m.id: m for m in _CHANGED}},
    frames=FRAMES,
    chains={"spec": SPEC_CHAIN, "eagle": ()},
    milestones=MILESTONES,
    algorithms=("DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"),
    eagle_family=("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"),
    auto_spec_params=newer.RELEASE.auto_spec_params,
    has_speculative_adaptive=True,
    adaptive_candidate_steps=(1, 3, 7),  # speculative/adaptive_spec_params.py:98
    adaptive_skips_auto_choice=False,
    has_draft_attention_backend=True,
    tree_paged_backends=("flashinfer", "fa3"),
    forced_page_size={"trtllm_mla": 64, "flashmla": 64, "cutlass_mla": 128, "trtllm_mha": 64},
    allowed_page_sizes={"trtllm_mla": (32, 64), "trtllm_mha": (16, 32, 64)},
    draft_forced_page_size={},
    mla_default_backend=newer.RELEASE.mla_default_backend,
    graph_flags={"max_bs": "--cuda-graph-max-bs", "disable": "--disable-cuda-graph"},
    # utils/watchdog.py has no SubprocessWatchdog yet: a scheduler dying silently is noticed by
    # the sigquit handler alone.
    absent=("subprocess-crashed",),
    install_hint="pip install 'sglang[all]==0.5.11'",
)
