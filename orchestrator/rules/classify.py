"""The failure classifier's rules, as data: what SGLang / PyTorch / NCCL / CUDA / systemd print
when a start fails, which category that is, and the fix.

Read off sglang 0.5.23 (arg_groups/speculative_hook.py, arg_groups/overrides.py,
entrypoints/engine.py, managers/scheduler.py, model_executor/pool_configurator.py,
model_executor/runner_backend_utils, model_loader/weight_utils.py, layers/linear.py,
models/kimi_k25_eagle3.py, utils/common.py, utils/network.py) and from what PyTorch, NCCL,
huggingface_hub, uvicorn, the kernel and systemd print.

Roles
-----
- ``cause``: the line names a root cause.
- ``fallback``: a cause only when no ``cause`` line is in the log (systemd gave up or our
  deadline passed: the real error, if any was logged, explains it).
- ``hint``: weak evidence (a bare SIGKILL): used only when there is neither a cause nor a
  fallback, and the summary says it is inferred.
- ``echo``: a consequence of an earlier failure ("Received sigquit from a child process",
  "Scheduler hit an exception:", "Initialization failed. Please see the error messages above",
  systemd's "Failed with result 'exit-code'"). An echo never names the category.

Order and tie-break (see `orchestrator.diagnose.classify`)
----------------------------------------------------------
Among the cause matches the diagnosis names the EARLIEST: by timestamp truncated to the
second, then by the rule's position in `RULES` (its priority: the more specific, more
root-ward rule first), then by line order. If any cause match has no timestamp, line order
decides, then priority. A rule's ``explains`` drops another category's matches when both
are present (a host OOM kill makes the other ranks' NCCL errors consequences, whatever their
order in the journal).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CAUSE = "cause"
FALLBACK = "fallback"
HINT = "hint"
ECHO = "echo"

# An exception line at the end of a traceback: optional indent, optional dotted module path.
_EXC = r"^\s*(?:[\w.]+\.)?"
# The traceback frames of SGLang's speculative argument handling.
_SPEC_FRAMES = (
    r"speculative_hook\.py|spec_info\.py|in _handle_eagle_family|in _handle_speculative_decoding"
)
# Frames of the draft model / draft worker (the EAGLE-3 drafter).
_DRAFT_FRAMES = r"_eagle3?\.py|eagle_worker|draft_worker|/speculative/|in init_draft|draft_model"


# A regex that begins (after _EXC) with an exception name or a group of them, all *Error.
_MANDATORY_ERROR = re.compile(
    re.escape(_EXC) + r"(?:\(\?P<exc>)?(?:\(\?:)?\w*Error(?:\|\w*Error)*\)?:"
)


@dataclass(frozen=True)
class Pat:
    """One pattern of a rule.

    ``keywords``: substrings, one of which every line this regex matches contains (the
    classifier tries the regex only on lines that hold a keyword). ``context``: regexes that
    must ALL match somewhere in the traceback the line ends (the lines back to
    "Traceback (most recent call last):", same PID). ``summary``/``fix`` override the rule's.
    """

    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    context: tuple[re.Pattern[str], ...] = ()
    role: str | None = None  # None: the rule's role
    preflight: str | None = None  # None: the rule's preflight_rule
    gate: str | None = None  # a substring the regex itself guarantees (first-stage prefilter)
    summary: str | None = None
    fix: str | None = None
    detail: Mapping[str, str] = field(default_factory=dict)


def pat(
    regex: str,
    keywords: tuple[str, ...] | str,
    *,
    context: tuple[str, ...] | str = (),
    role: str | None = None,
    preflight: str | None = None,
    gate: str | None = None,
    summary: str | None = None,
    fix: str | None = None,
    flags: int = 0,
    **detail: str,
) -> Pat:
    kws = (keywords,) if isinstance(keywords, str) else keywords
    ctx = (context,) if isinstance(context, str) else context
    if gate is None and _MANDATORY_ERROR.match(regex):
        gate = "rror"  # the line holds "...Error:", so "rror" finds it
    return Pat(
        regex=re.compile(regex, flags),
        keywords=kws,
        context=tuple(re.compile(c, re.M) for c in ctx),
        role=role,
        preflight=preflight,
        gate=gate,
        summary=summary,
        fix=fix,
        detail=detail,
    )


@dataclass(frozen=True)
class Rule:
    id: str  # stable category id (used in --json output and docs anchors)
    title: str
    summary: str  # one line; a str.format template over the detail fields
    fix: str  # template over the detail fields
    doc: str  # what it means, for docs/troubleshooting.md
    patterns: tuple[Pat, ...]
    role: str = CAUSE
    defaults: Mapping[str, str] = field(default_factory=dict)
    explains: tuple[str, ...] = ()
    preflight_rule: str | None = None  # the preflight twin that catches it before a start
    examples: tuple[str, ...] = ()  # what is printed (docs; every example must classify here)
    # Builds (summary, fix) itself, from the detail and the unit's flags (shared knowledge).
    explain: Callable[[Mapping[str, str], Mapping[str, Any]], tuple[str, str]] | None = None


def _need_steps(detail: Mapping[str, str], flags: Mapping[str, Any]) -> tuple[str, str]:
    """spec-params-need-num-steps: the words come from preflight (rules/speculative.py)."""
    try:
        from orchestrator.rules.speculative import need_steps_explanation
    except ImportError:  # preflight's module not there (partial install): same facts, plainly
        return (
            "speculative_num_steps is unset while --speculative-eagle-topk and/or "
            "--speculative-num-draft-tokens are set: SGLang then auto-chooses all three and "
            "asserts that top-k and draft tokens are unset (a bare AssertionError)",
            "set --speculative-num-steps (and keep the three consistent) or drop both",
        )
    return need_steps_explanation(dict(flags))


RULES: tuple[Rule, ...] = (
    Rule(
        id="spec-params-need-num-steps",
        title="speculative top-k / draft tokens set without --speculative-num-steps",
        summary="speculative_num_steps is unset while top-k or draft tokens are set (bare AssertionError in SGLang's EAGLE argument handling)",
        fix="set --speculative-num-steps (and keep the three consistent) or drop both",
        doc=(
            "SGLang 0.5.23 auto-chooses (num_steps, eagle_topk, num_draft_tokens) when "
            "--speculative-num-steps is unset, and first asserts that the other two are unset "
            "too (arg_groups/speculative_hook.py, `_handle_eagle_family`; `server_args.py "
            "_handle_speculative_decoding` in older releases). The assertion has no message: "
            "the log shows a bare `AssertionError` under that frame."
        ),
        patterns=(
            pat(
                _EXC + r"AssertionError\s*$",
                "AssertionError",
                context=(
                    r"in _handle_eagle_family|in _handle_speculative_decoding",
                    r"speculative_eagle_topk is None|speculative_num_draft_tokens is None|^\s*assert\s*\(?\s*$",
                ),
            ),
        ),
        preflight_rule="spec-params-need-num-steps",
        explain=_need_steps,
        examples=(
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/arg_groups/speculative_hook.py", line 1162, in _handle_eagle_family\n'
            "    and cfg.speculative_num_draft_tokens is None\n"
            "AssertionError",
        ),
    ),
    Rule(
        id="spec-config-invalid",
        title="SGLang rejected the speculative-decoding settings",
        summary="SGLang rejected the speculative-decoding settings: {msg}",
        fix="change the speculative settings named in the message; `deploy validate` runs the same checks before a start",
        doc=(
            "A ValueError / TypeError / NotImplementedError raised while SGLang resolves the "
            "speculative arguments (arg_groups/speculative_hook.py, speculative/spec_info.py, "
            "arg_groups/overrides.py)."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>TypeError): (?P<msg>'[<>]=?' not supported between instances of 'NoneType' and 'int')",
                "TypeError",
                context=_SPEC_FRAMES,
                preflight="spec-num-steps-needs-topk",
                summary="--speculative-num-steps is set but --speculative-eagle-topk is not: SGLang compares the unset top-k with an int ({exc}: {msg})",
                fix="set --speculative-eagle-topk (and --speculative-num-draft-tokens) together with --speculative-num-steps, or set none of the three and let SGLang choose",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError): (?P<msg>speculative_eagle_topk > 1 with page_size > 1 is only supported on .*?got attention_backend=(?P<backend>'?[\w-]+'?).*)",
                "page_size > 1",
                preflight="spec-tree-page-size-backend",
                summary="speculative top-k > 1 needs a tree-capable attention backend with paged KV; got attention_backend={backend}",
                fix="use --speculative-eagle-topk 1 (on B200 the default trtllm_mla backend forces page size 64), or set --attention-backend fa3, flashinfer or triton",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError): (?P<msg>Unknown speculative algorithm name: (?P<algo>.*))",
                "Unknown speculative algorithm",
                preflight="spec-unknown-algorithm",
                summary="unknown speculative algorithm {algo!r}",
                fix="set --speculative-algorithm to one SGLang knows (EAGLE3 for an EAGLE-3 drafter; EAGLE, NEXTN, STANDALONE, NGRAM, ...)",
            ),
            pat(
                _EXC + r"(?P<exc>ValueError): (?P<msg>trtllm_mha backend only supports topk = 1.*)",
                "trtllm_mha backend only supports topk",
                preflight="spec-trtllm-mha-topk",
                fix="use --speculative-eagle-topk 1 with the trtllm_mha (draft) attention backend, or pick another draft attention backend",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError|NotImplementedError): (?P<msg>--speculative-use-rejection-sampling .*)",
                "--speculative-use-rejection-sampling",
                preflight="spec-rejection-sampling",
                fix="rejection sampling needs EAGLE/EAGLE3 with --speculative-eagle-topk 1 and default accept thresholds: change those or drop --speculative-use-rejection-sampling",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError): (?P<msg>TRTLLM MLA backend is only supported on Blackwell GPUs.*)",
                "TRTLLM MLA backend is only supported on Blackwell",
                preflight="trtllm-mla-needs-blackwell",
                fix="this GPU is not Blackwell: drop --attention-backend trtllm_mla (and --speculative-draft-attention-backend trtllm_mla) or set fa3 / flashinfer / triton",
            ),
            pat(
                _EXC
                + r"(?P<exc>ValueError|TypeError|NotImplementedError|AssertionError): (?P<msg>.+)$",
                ("ValueError", "TypeError", "NotImplementedError", "AssertionError"),
                context=_SPEC_FRAMES,
            ),
        ),
        preflight_rule=None,
        defaults={"msg": "?", "exc": "ValueError", "backend": "?", "algo": "?"},
        examples=(
            "TypeError: '>' not supported between instances of 'NoneType' and 'int'   (under speculative_hook.py)",
            "ValueError: speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', 'fa3', 'triton'); got attention_backend='trtllm_mla'. Use page_size == 1 or one of those backends.",
            "ValueError: Unknown speculative algorithm name: EAGLE4",
            "ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding.",
            "ValueError: --speculative-use-rejection-sampling requires --speculative-eagle-topk=1.",
            "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend.",
        ),
    ),
    Rule(
        id="drafter-mismatch",
        title="the EAGLE-3 drafter does not fit the target model",
        summary="the draft model does not fit the target: {msg}",
        fix=(
            "use an EAGLE-3 drafter trained for this base model: its `target_hidden_size` (else "
            "`hidden_size`) must equal the base's (7168 for Kimi K2.x), same vocabulary; an MLA "
            "drafter (Eagle3DeepseekV2ForCausalLM) needs 1 layer and q_lora_rank; check "
            "--speculative-draft-model-path"
        ),
        doc=(
            "SGLang does not compare the drafter's and the target's hidden size or vocabulary "
            "before loading: a mismatch surfaces as a shape assertion while the draft worker "
            'loads weights (model_loader/weight_utils.py `default_weight_loader`: "Attempted to '
            'load weight (…) into parameter (…)"; layers/linear.py: `param_data.shape == '
            "loaded_weight.shape`), a state-dict size mismatch, a matmul shape error in the "
            "first draft forward, or a config check in models/kimi_k25_eagle3.py."
        ),
        patterns=(
            pat(
                _EXC
                + r"AssertionError: (?P<msg>Attempted to load weight \((?P<got>.*?)\) into parameter \((?P<want>.*)\))",
                "Attempted to load weight",
                context=_DRAFT_FRAMES,
            ),
            pat(
                _EXC + r"AssertionError: (?P<msg>.*(?:param_data\.shape|loaded_weight\.shape).*)",
                "loaded_weight.shape",
                context=_DRAFT_FRAMES,
            ),
            pat(
                _EXC
                + r"RuntimeError: (?P<msg>.*(?:size mismatch for|Error\(s\) in loading state_dict|shapes cannot be multiplied).*)",
                ("size mismatch", "state_dict", "shapes cannot be multiplied"),
                context=_DRAFT_FRAMES,
            ),
            pat(
                _EXC
                + r"ValueError: (?P<msg>Eagle3 MLA layer requires q_lora_rank in the draft config|EAGLE3 currently only supports 1 layer)",
                ("q_lora_rank", "only supports 1 layer"),
            ),
            pat(
                _EXC
                + r"ValueError: (?P<msg>Model architectures \[[^\]]*\] (?:are not supported for now|failed to be inspected))",
                "Model architectures",
                context=_DRAFT_FRAMES,
                preflight="drafter-architecture",
            ),
        ),
        preflight_rule="drafter-hidden-size",
        defaults={"msg": "?"},
        examples=(
            '  File ".../sglang/srt/models/llama_eagle3.py", line 373, in load_weights\n'
            "AssertionError: Attempted to load weight (torch.Size([6144, 8192])) into parameter (torch.Size([6144, 14336]))",
            "ValueError: Eagle3 MLA layer requires q_lora_rank in the draft config",
        ),
    ),
    Rule(
        id="python-import-error",
        title="a Python module is missing or broken",
        summary="Python could not import {module}: {msg}",
        fix="install the missing package into the service's Python environment (the venv of ExecStart): e.g. `pip install 'sglang[all]==0.5.23'`, then check `python -c 'import sglang'` as the service user",
        doc=(
            "The interpreter of the unit lacks a module (ModuleNotFoundError / ImportError), "
            "often because ExecStart uses another Python than the one SGLang was installed into, "
            "or a compiled extension (sgl_kernel, flashinfer) does not match torch/CUDA "
            '("undefined symbol", "cannot open shared object file").'
        ),
        patterns=(
            pat(
                r"Error while finding module specification for '(?P<spec>[^']+)' \((?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)')\)",
                "Error while finding module specification",
            ),
            pat(
                _EXC
                + r"(?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)'.*)",
                "ModuleNotFoundError",
            ),
            pat(
                _EXC
                + r"(?P<exc>ImportError): (?P<msg>(?:cannot import name '(?P<name>[^']+)' from '(?P<module>[^']+)'|(?P<lib>\S+?): (?:cannot open shared object file|undefined symbol)).*)",
                "ImportError",
            ),
            pat(_EXC + r"(?P<exc>ImportError): (?P<msg>.+)", "ImportError"),
            pat(r"^\S*python[\d.]*: (?P<msg>No module named (?P<module>\S+))$", "No module named"),
        ),
        defaults={"module": "a module", "msg": "?"},
        examples=(
            "/opt/sglang/bin/python3: Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
            "ModuleNotFoundError: No module named 'sgl_kernel'",
            "ImportError: /opt/sglang/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
        ),
    ),
    Rule(
        id="exec-failed",
        title="systemd could not start the command",
        summary="systemd could not run the service's command: {msg}",
        fix="check ExecStart= (the Python path {path} must exist and be executable), WorkingDirectory= and User= of the unit; re-render it with `deploy up`",
        doc=(
            "systemd failed before SGLang ran: the executable, working directory or user of the "
            "unit is wrong (status=203/EXEC, 200/CHDIR, 217/USER)."
        ),
        patterns=(
            pat(
                r"Failed to locate executable (?P<path>\S+): (?P<msg>.*)",
                "Failed to locate executable",
            ),
            pat(
                r"Failed at step (?P<step>[A-Z_]+) spawning (?P<path>\S+): (?P<msg>.*)",
                "Failed at step",
            ),
            pat(
                r"Main process exited, code=exited, status=(?P<msg>(?:203/EXEC|200/CHDIR|217/USER|209/STDOUT|226/NAMESPACE))",
                "code=exited, status=2",
            ),
        ),
        defaults={"path": "?", "msg": "?"},
        examples=(
            "sglang-kimi.service: Failed to locate executable /opt/sglang/bin/python3: No such file or directory",
            "sglang-kimi.service: Failed at step EXEC spawning /opt/sglang/bin/python3: No such file or directory",
        ),
    ),
    Rule(
        id="gpu-unavailable",
        title="no usable CUDA device",
        summary="no usable CUDA GPU: {msg}",
        fix="{fixhint}",
        doc=(
            "PyTorch cannot use the GPUs: no driver, driver older than the CUDA runtime, "
            'CUDA_VISIBLE_DEVICES hides them, fewer GPUs than --tp-size ("invalid device '
            'ordinal"), devices busy (exclusive mode), or on HGX B200/H200 the NVIDIA '
            'fabric manager not running ("Error 802: system not yet initialized").'
        ),
        patterns=(
            pat(
                r"(?P<msg>Error 802: system not yet initialized|cudaErrorSystemNotReady)",
                ("Error 802", "cudaErrorSystemNotReady"),
                fixhint="start the NVIDIA fabric manager (`systemctl enable --now nvidia-fabricmanager`, version = driver version) and check `nvidia-smi -q | grep -i fabric`",
            ),
            pat(
                r"(?P<msg>CUDA driver version is insufficient for CUDA runtime version.*)",
                "CUDA driver version is insufficient",
                fixhint="the NVIDIA driver is older than the CUDA runtime torch was built for: upgrade the driver or install a torch/SGLang build for this CUDA version",
            ),
            pat(
                r"(?P<msg>(?:No CUDA GPUs are available|Found no NVIDIA driver on your system|no CUDA-capable device is detected|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver).*)",
                (
                    "No CUDA GPUs",
                    "no NVIDIA driver",
                    "no CUDA-capable device",
                    "NVIDIA-SMI has failed",
                ),
            ),
            pat(
                r"(?P<msg>.*invalid device ordinal.*)",
                "invalid device ordinal",
                fixhint="fewer GPUs are visible than the unit asks for: --tp-size (x --dp-size, + --base-gpu-id) must fit in the GPUs CUDA_VISIBLE_DEVICES leaves visible (check `nvidia-smi -L`)",
            ),
            pat(
                r"(?P<msg>.*CUDA-capable device\(s\) (?:is|are) busy or unavailable.*)",
                "busy or unavailable",
                fixhint="another process holds the GPUs (or they are in exclusive-process mode): find it with `nvidia-smi` and stop it",
            ),
        ),
        preflight_rule="gpus-for-tp",
        defaults={
            "msg": "?",
            "fixhint": "check `nvidia-smi` as the service user: driver loaded, GPUs visible (CUDA_VISIBLE_DEVICES), at least --tp-size of them",
        },
        examples=(
            "RuntimeError: No CUDA GPUs are available",
            "RuntimeError: CUDA error: invalid device ordinal",
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). ... CUDA driver version is insufficient for CUDA runtime version",
        ),
    ),
    Rule(
        id="kernel-unsupported-arch",
        title="kernels not built for this GPU (or too old)",
        summary="GPU kernels do not support this GPU or are too old: {msg}",
        fix="install builds for this GPU's architecture (B200 is sm_100: CUDA 12.8+ wheels of torch, sglang-kernel, flashinfer), matching SGLang 0.5.23: `pip install 'sglang[all]==0.5.23'` pulls the matching sglang-kernel",
        doc=(
            'A CUDA kernel has no code for this GPU ("no kernel image is available for execution '
            'on the device"; PyTorch\'s "sm_100 is not compatible with the current PyTorch '
            "installation\"), or SGLang's start-up version check found sglang-kernel missing or "
            "older than required (utils/common.py `assert_pkg_version`)."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*no kernel image is available for execution on the device.*)",
                "no kernel image",
            ),
            pat(
                r"(?P<msg>(?P<pkg>[\w-]+) with minimum required version (?P<ver>\S+) is not installed\..*)",
                "with minimum required version",
            ),
            pat(
                r"(?P<msg>(?P<pkg>[\w-]+) is installed with version (?P<have>\S+), which is less than the minimum required version (?P<ver>\S+?)\..*)",
                "less than the minimum required version",
            ),
            pat(
                r"(?P<msg>.*with CUDA capability (?P<sm>sm_\d+a?) is not compatible with the current PyTorch installation.*)",
                "is not compatible with the current PyTorch",
            ),
            pat(
                r"(?P<msg>.*(?:the provided PTX was compiled with an unsupported toolchain|device kernel image is invalid).*)",
                ("unsupported toolchain", "kernel image is invalid"),
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
            "Exception: sglang-kernel with minimum required version 0.4.9 is not installed. Please reinstall the latest version with `pip install sglang-kernel --force-reinstall`",
            "UserWarning: NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.",
        ),
    ),
    Rule(
        id="hf-hub-unreachable",
        title="the Hugging Face Hub cannot be reached",
        summary="the model had to come from the Hugging Face Hub, which is unreachable: {msg}",
        fix="download the model (and drafter) ahead and point --model-path / --speculative-draft-model-path at the local directories, or allow outbound HTTPS to huggingface.co (proxy: HTTPS_PROXY in the unit's Environment=); with HF_HUB_OFFLINE=1 the files must already be in HF_HOME",
        doc=(
            "A Hub id (not a local path) was given and the host is offline, behind a proxy, or "
            "has HF_HUB_OFFLINE=1 with an empty cache. huggingface_hub / transformers print "
            "\"We couldn't connect to 'https://huggingface.co' …\", LocalEntryNotFoundError, or "
            "a requests ConnectionError naming huggingface.co."
        ),
        patterns=(
            pat(
                r"(?P<msg>We couldn't connect to '(?P<url>https?://[^']+)'.*)",
                "couldn't connect to",
            ),
            pat(_EXC + r"(?P<msg>LocalEntryNotFoundError: .*)", "LocalEntryNotFoundError"),
            pat(
                r"(?P<msg>.*Cannot find the requested files in the (?:disk )?cache and outgoing traffic has been disabled.*)",
                "outgoing traffic has been disabled",
            ),
            pat(
                r"(?P<msg>.*huggingface\.co.*(?:Max retries exceeded|NameResolutionError|Failed to resolve|Temporary failure in name resolution|timed out|Connection refused|Network is unreachable|ConnectTimeout|ProxyError).*)",
                "huggingface.co",
            ),
        ),
        preflight_rule="model-path-hub",
        defaults={"msg": "?"},
        examples=(
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.",
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.",
        ),
    ),
    Rule(
        id="model-not-found",
        title="the model path or Hub id does not exist",
        summary="model not found: {msg}",
        fix="check --model-path and --speculative-draft-model-path: a local directory must exist for the service user and hold config.json and the *.safetensors (path: {path}); a Hub id must be 'org/name' (a gated model needs HF_TOKEN in unit.environment_file)",
        doc=(
            "The model or drafter path is wrong: a local path that does not exist is taken for a "
            'Hub repo id (huggingface_hub\'s HFValidationError "Repo id must be in the form …"), '
            "the directory lacks config.json, the Hub repo does not exist or is gated."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?:HFValidationError): (?P<msg>Repo id must be in the form .*?: '(?P<path>[^']+)'.*)",
                "HFValidationError",
            ),
            pat(
                _EXC
                + r"(?:\w+Error): (?P<msg>(?P<path>\S+) does not appear to have a file named (?P<file>[\w.-]+).*)",
                "does not appear to have a file named",
            ),
            pat(
                r"(?P<msg>.*(?:is not a local folder and is not a valid model identifier|Can't load the configuration of '(?P<path>[^']+)').*)",
                ("is not a local folder", "Can't load the configuration"),
            ),
            pat(
                _EXC + r"(?P<msg>(?:RepositoryNotFoundError|GatedRepoError): .*)",
                ("RepositoryNotFoundError", "GatedRepoError"),
            ),
            pat(
                r"(?P<msg>.*Repository Not Found for url: (?P<path>\S+).*)", "Repository Not Found"
            ),
            pat(
                _EXC
                + r"FileNotFoundError: (?P<msg>\[Errno 2\] No such file or directory: '(?P<path>[^']+)')",
                "FileNotFoundError",
            ),
            pat(
                _EXC
                + r"ValueError: (?P<msg>Unrecognized model in (?P<path>\S+)\. Should have a `model_type` key.*)",
                "Unrecognized model in",
            ),
            # deploy's own check oneshot (templates/sglang-check.service.j2), before any load
            pat(
                r"deploy-check: (?P<msg>(?:model|drafter) (?:directory )?(?P<path>/\S*?)(?:/config\.json)? (?:does not exist|is missing or not readable.*|has no weight files.*))",
                "deploy-check:",
            ),
        ),
        preflight_rule="model-path-missing",
        defaults={"msg": "?", "path": "the path in the message"},
        examples=(
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/Kimi-K2.6'. Use `repo_type` argument if needed.",
            "OSError: /models/Kimi-K2.6 does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/Kimi-K2.6/tree/None' for available files.",
            "deploy-check: drafter directory /models/Kimi-K2.6-EAGLE3 does not exist",
        ),
    ),
    Rule(
        id="port-in-use",
        title="a port SGLang needs is taken",
        summary="port {port} is already in use: {msg}",
        fix="stop what listens there (`ss -ltnp 'sport = :{port}'`) or give this deployment another --port; SGLang also needs --port+1.. and the NCCL / dist-init ports free ",
        doc=(
            "SGLang never checks the HTTP port before loading the model: uvicorn fails to bind "
            'after minutes of loading ("[Errno 98] … address already in use"). The internal '
            'ports (ZMQ, dist-init / torch TCPStore, NCCL) fail earlier ("Port is already in '
            'use", "EADDRINUSE", "… is not available in 30 seconds").'
        ),
        patterns=(
            pat(
                r"(?P<msg>\[Errno 98\] (?:error while attempting to bind on address \((?P<addr>'[^']*'), (?P<port>\d+)\): )?[Aa]ddress already in use)",
                "Errno 98",
            ),
            pat(
                r"(?P<msg>.*The server socket has failed to listen on any local network address\..*?port: (?P<port>\d+).*EADDRINUSE.*)",
                "EADDRINUSE",
            ),
            pat(
                r"(?P<msg>(?P<name>\w+) at (?P<port>\d+) is not available in \d+ seconds.*)",
                "is not available in",
            ),
            pat(
                r"(?P<msg>Port is already in use\..*?(?:nccl_port=(?P<port>\d+))?.*)",
                "Port is already in use",
            ),
            pat(r"(?P<msg>.*?(?P<port>\d+) is already in use.*)", "is already in use"),
        ),
        preflight_rule=None,
        defaults={"port": "?", "msg": "?"},
        examples=(
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 25000, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        ),
    ),
    Rule(
        id="host-oom-killed",
        title="the kernel OOM killer killed the server (host RAM)",
        summary="the kernel OOM killer killed {comm} (host memory, not GPU memory)",
        fix=(
            "give the service more host RAM: raise or remove MemoryMax=/MemoryHigh= in the unit, "
            "stop other memory users, check /dev/shm and page cache; loading a TP=8 Kimi K2.6 "
            "maps the checkpoint in every rank (confirm with `dmesg -T | grep -i oom`)"
        ),
        doc=(
            "The kernel's OOM killer (or the unit's cgroup memory limit) sent SIGKILL: systemd logs "
            '"A process of this unit has been killed by the OOM killer." and "Failed with '
            "result 'oom-kill'\"; the kernel logs \"Out of memory: Killed process …\"; SGLang's "
            'parent logs "Rank N scheduler died during initialization (exit code: -9)". A bare '
            "SIGKILL (status=9/KILL, exit 137, exit code -9) without those is reported as a hint "
            "only when nothing else explains the failure."
        ),
        patterns=(
            pat(r"A process of this unit has been killed by the OOM killer", "OOM killer"),
            pat(r"Failed with result 'oom-kill'", "'oom-kill'"),
            pat(
                r"(?:Memory cgroup )?[Oo]ut of memory: Killed process (?P<pid>\d+) \((?P<comm>[^)]*)\)",
                ("of memory: Killed process",),
            ),
            pat(r"oom-kill:constraint=\S+.*?task=(?P<comm>[^,]+),pid=(?P<pid>\d+)", "oom-kill:"),
            pat(
                r"Main process exited, code=killed, status=(?P<sig>9/KILL)",
                "status=9/KILL",
                role=HINT,
                summary="a process of the service was killed with SIGKILL and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            pat(
                r"Rank (?P<rank>\d+) scheduler died during initialization \(exit code: -9\)",
                "exit code: -9",
                role=HINT,
                summary="scheduler rank {rank} was killed with SIGKILL (exit code -9) and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
        ),
        explains=("nccl-error",),
        defaults={"comm": "a process of the service"},
        examples=(
            "sglang-kimi.service: A process of this unit has been killed by the OOM killer.",
            "sglang-kimi.service: Failed with result 'oom-kill'.",
            "Out of memory: Killed process 48213 (sglang::schedul) total-vm:912345678kB, anon-rss:201234567kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:401234kB oom_score_adj:0",
        ),
    ),
    Rule(
        id="cuda-graph-capture-failed",
        title="CUDA graph capture failed",
        summary="CUDA graph capture failed: {msg}",
        fix="lower --mem-fraction-static (e.g. 0.8), or --cuda-graph-max-bs-decode (e.g. 16); last resort --cuda-graph-backend-decode=disabled (slow). With EAGLE-3 the draft and verify graphs need extra memory",
        doc=(
            "SGLang captures CUDA graphs (target verify/decode, draft decode/extend) after the KV "
            "cache is allocated; the capture failed, usually out of memory (model_executor/"
            "runner/decode_cuda_graph_runner.py, speculative/eagle_draft_*_cuda_graph_runner.py: "
            '"Capture cuda graph failed: …" followed by "Possible solutions").'
        ),
        patterns=(
            pat(r"Capture cuda graph failed: (?P<msg>.*)", "Capture cuda graph failed"),
            pat(
                r"(?P<msg>Fail when using backend: (?P<backend>\S+) for prefill runner\.)",
                "for prefill runner",
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 178.35 GiB of which 1.12 GiB is free.",
        ),
    ),
    Rule(
        id="cuda-oom",
        title="out of GPU memory",
        summary="GPU {gpu} ran out of memory (tried to allocate {tried}, {free} free of {total})",
        fix="lower --mem-fraction-static (e.g. 0.85 -> 0.80), --max-running-requests or --chunked-prefill-size; check no other process uses the GPUs (`nvidia-smi`); the EAGLE-3 drafter and its CUDA graphs need memory outside the KV pool",
        doc=(
            'PyTorch could not allocate GPU memory (torch.OutOfMemoryError "CUDA out of memory"), '
            'or SGLang found no room left for the KV cache after the weights ("Not enough memory. '
            'Please try to increase --mem-fraction-static."), or GPUs differ in free memory '
            "because another process holds some."
        ),
        patterns=(
            pat(
                r"CUDA out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B)\. GPU (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]?i?B) of which (?P<free>[\d.]+ [KMGT]?i?B) is free",
                "CUDA out of memory",
            ),
            pat(
                r"CUDA out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B) \(GPU (?P<gpu>\d+); (?P<total>[\d.]+ [KMGT]?i?B) total capacity; .*?(?P<free>[\d.]+ [KMGT]?i?B) free",
                "CUDA out of memory",
            ),
            pat(
                r"(?P<msg>CUDA out of memory.*|CUDA error: out of memory.*|CUBLAS_STATUS_ALLOC_FAILED.*|NCCL WARN Cuda failure 'out of memory'.*)",
                ("out of memory", "ALLOC_FAILED"),
                summary="GPU out of memory: {msg}",
            ),
            pat(
                r"(?P<msg>Not enough memory\. Please try to increase --mem-fraction-static\.(?: Current value: mem_fraction_static=(?P<mfs>[\d.]+))?)",
                "Not enough memory",
                summary="no GPU memory left for the KV cache after the weights (mem_fraction_static={mfs})",
                fix="raise --mem-fraction-static (e.g. to 0.88-0.92) so the pool gets room, or free GPU memory: other processes, a smaller --cuda-graph-max-bs-decode, or more GPUs (--tp-size)",
            ),
            pat(
                r"(?P<msg>The memory capacity is unbalanced\..*)",
                "memory capacity is unbalanced",
                summary="GPUs have unequal free memory: {msg}",
                fix="another process uses some of the GPUs: stop it (`nvidia-smi`), then start again",
            ),
        ),
        preflight_rule=None,
        defaults={"gpu": "?", "tried": "?", "free": "?", "total": "?", "msg": "?", "mfs": "?"},
        examples=(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 139.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 138.69 GiB memory in use.",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.6",
        ),
    ),
    Rule(
        id="nccl-error",
        title="NCCL / torch.distributed communication failed",
        summary="NCCL communication between the GPUs failed: {msg}",
        fix="check `nvidia-smi topo -m` and the fabric manager (HGX NVSwitch), that no other job uses the GPUs, shared memory (/dev/shm large enough; no PrivateTmp/ProtectSystem blocking it); rerun with Environment=NCCL_DEBUG=INFO for the detail; NCCL_P2P_DISABLE=1 / NCCL_IB_DISABLE=1 narrow it down",
        doc=(
            'NCCL (the GPU collective library) failed during init or a collective: "NCCL error '
            'in: …, unhandled system error", ncclInternalError/ncclSystemError, "NCCL WARN …", '
            'or torch\'s watchdog "caught collective operation timeout". When one rank dies '
            "first, the others print NCCL errors as consequences: the earlier cause wins."
        ),
        patterns=(
            pat(r"NCCL error in: (?P<where>\S+?),? (?P<msg>.*)", "NCCL error in"),
            pat(r"NCCL error: (?P<msg>.*)", "NCCL error:"),
            pat(
                r"Watchdog caught collective operation timeout: (?P<msg>.*)",
                "Watchdog caught collective",
            ),
            pat(r"NCCL WARN (?P<msg>.*)", "NCCL WARN"),
            pat(
                r"(?P<msg>.*\bnccl(?:InternalError|SystemError|UnhandledCudaError|RemoteError|InvalidUsage|InvalidArgument)\b.*)",
                (
                    "ncclInternalError",
                    "ncclSystemError",
                    "ncclUnhandledCudaError",
                    "ncclRemoteError",
                    "ncclInvalid",
                ),
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
            "[rank3]:[E1202 14:11:02.381928 48213 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600085 milliseconds before timing out.",
        ),
    ),
    Rule(
        id="start-limit-hit",
        title="systemd stopped restarting the service",
        summary="systemd refused to start the unit again: it failed too often in a row (start-limit-hit)",
        fix="find why the earlier starts failed (`deploy logs --classify` on an earlier invocation), fix that, then `systemctl reset-failed <unit>` and start again",
        doc=(
            "Restart= kept restarting a failing service until StartLimitBurst= starts within "
            'StartLimitIntervalSec=; systemd then logs "Start request repeated too quickly." and '
            "gives up (Result=start-limit-hit). The cause is in the earlier invocations."
        ),
        patterns=(
            pat(r"Start request repeated too quickly", "repeated too quickly"),
            pat(r"Failed with result 'start-limit-hit'", "'start-limit-hit'", gate="ailed"),
        ),
        role=FALLBACK,
        examples=("sglang-kimi.service: Start request repeated too quickly.",),
    ),
    Rule(
        id="startup-timeout",
        title="the start did not finish in time",
        summary="the start did not finish in time; no error in the log (last step reached: {phase})",
        fix="if it was still progressing ({phase}), raise the deadline (profile start_timeout / TimeoutStartSec=): loading Kimi K2.6 and capturing EAGLE-3 CUDA graphs takes many minutes; if it hung, look for a stuck NCCL init (NCCL_DEBUG=INFO) or slow storage",
        doc=(
            "`deploy up` gave up waiting for /health, or systemd's TimeoutStartSec= passed "
            '("start operation timed out. Terminating.", Result=timeout), and the log holds no '
            "error. The summary names the last start-up milestone reached."
        ),
        patterns=(
            pat(r"start(?:-pre|-post)? operation timed out\. Terminating", "operation timed out"),
            pat(r"Failed with result 'timeout'", "'timeout'"),
        ),
        role=FALLBACK,
        defaults={"phase": "none seen"},
        examples=("sglang-kimi.service: start operation timed out. Terminating.",),
    ),
)
from orchestrator.rules.runtime import RUNTIME_RULES  # noqa: E402 (built on Rule/pat above)

RULES += RUNTIME_RULES  # causes while serving, GPU Xids (lowest priority on a tie)

# Consequences of an earlier failure: matched so that they are never taken for the cause.
ECHOES: tuple[Pat, ...] = (
    pat(r"Received sigquit from a child process", "Received sigquit"),
    pat(
        r"Rank \d+ scheduler (?:died during initialization|is dead)",
        ("scheduler died", "scheduler is dead"),
    ),
    pat(r"Scheduler hit an exception:", "Scheduler hit an exception"),
    pat(r"Initialization failed\.", "Initialization failed"),
    pat(r"Exit code: -?\d+", "Exit code:"),
    pat(r"Child process unexpectedly failed", "Child process unexpectedly failed"),
    pat(
        r"Failed with result '(?:exit-code|signal|core-dump|watchdog|protocol|resources)'",
        "Failed with result",
    ),
    pat(r"Main process exited, code=(?:exited|killed|dumped), status=", "Main process exited"),
    pat(r"Killing process \d+ \(.*\) with signal SIGKILL", "with signal SIGKILL"),
    pat(r"Failed to start ", "Failed to start"),
)

# Lines that look like errors (for `unknown`: show the last ones).
ERRORISH_KEYWORDS: tuple[str, ...] = (
    "Error",
    "error",
    "ERROR",
    "Exception",
    "Traceback",
    "Failed",
    "failed",
    "Fatal",
    "fatal",
    "Killed",
    "killed",
    "Abort",
    "abort",
    "exited",
)
ERRORISH = re.compile(
    r"Error|Exception|Traceback|[Ff]ail|FAIL|[Ff]atal|[Kk]illed|[Aa]bort|exited|ERROR|error"
)

# Error-looking lines SGLang prints on every healthy start.
BENIGN = re.compile(r"can be ignored|error_on_|error-on-")

# Start-up progress (for startup-timeout: which step was reached).
MILESTONE_KEYWORDS: tuple[str, ...] = (
    "server_args=",
    "Init parallel",
    "Load weight",
    "KV Cache is allocated",
    "Memory pool end",
    "graph begin",
    "Uvicorn running",
    "Started server process",
    "fired up",
)
PROGRESS = re.compile(
    r"Loading safetensors checkpoint shards:\s*(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+)"
)
PROGRESS_KEYWORD = "checkpoint shards"

UNKNOWN_DOC = (
    "No rule matched. `deploy` does not guess: it says so and shows the first exception and "
    'the last error-looking lines of the log. If the log holds only consequences ("Received '
    'sigquit from a child process", "Rank N scheduler died"), the original error went '
    "elsewhere (an earlier invocation, a rotated journal, or a rank that printed nothing)."
)


def rule(category: str) -> Rule | None:
    for r in RULES:
        if r.id == category:
            return r
    return None


def all_keywords() -> tuple[str, ...]:
    """Every keyword of the rules, echoes, error-looking and progress lines, deduplicated."""
    seen: dict[str, None] = {}
    for r in RULES:
        for p in r.patterns:
            for k in p.keywords:
                seen[k] = None
    for p in ECHOES:
        for k in p.keywords:
            seen[k] = None
    for k in (*ERRORISH_KEYWORDS, *MILESTONE_KEYWORDS, PROGRESS_KEYWORD, "Traceback"):
        seen[k] = None
    return tuple(seen)


# First-stage prefilter: short substrings, one of which every keyword above contains (`gates`
# adds any keyword that contains none). Fewer, shorter gates = fewer passes over the text.
BASE_GATES: tuple[str, ...] = (
    "rror",
    "ailed",
    "xit",
    "emory",
    "OOM",
    "oom",
    "KILL",
    "illed",
    "NCCL",
    "nccl",
    "in use",
    "CUDA",
    "NVIDIA",
    "Traceback",
    "xception",
    "sigquit",
    "scheduler",
    "timed out",
    "timeout",
    "repeated too quickly",
    "huggingface",
    "minimum required",
    "kernel image",
    "bort",
    "atal",
    "Init parallel",
    "Load weight",
    "KV Cache",
    "graph begin",
    "Uvicorn",
    "Started server",
    "fired up",
    "checkpoint shards",
    "server_args=",
)


def gates() -> tuple[str, ...]:
    """The first-stage substrings: every line any rule can match contains one of them."""
    out: dict[str, None] = dict.fromkeys(BASE_GATES)
    for k in _gate_keywords():
        if not any(g in k for g in out):
            out[k] = None
    return tuple(out)


def _gate_keywords() -> tuple[str, ...]:
    """all_keywords, with a pattern's own `gate` standing in for its keywords."""
    seen: dict[str, None] = {}
    for r in RULES:
        for p in r.patterns:
            for k in (p.gate,) if p.gate else p.keywords:
                seen[k] = None
    for p in ECHOES:
        for k in p.keywords:
            seen[k] = None
    for k in (*ERRORISH_KEYWORDS, *MILESTONE_KEYWORDS, PROGRESS_KEYWORD, "Traceback"):
        seen[k] = None
    return tuple(seen)


def troubleshooting_markdown() -> str:
    """docs/troubleshooting.md, generated from `RULES` (regenerate: python -m orchestrator.diagnose --write-docs)."""
    out: list[str] = [
        "# Troubleshooting a failed start",
        "",
        "<!-- Generated from orchestrator/rules/classify.py by "
        "`python -m orchestrator.diagnose --write-docs`. Do not edit by hand. -->",
        "",
        "When a start fails, `deploy` reads the journal of that start (one systemd invocation) "
        "and names one category, the evidence lines and the fix. `deploy logs --classify "
        "[--input FILE]` does the same for a saved log (`journalctl -o json`, `-o short*` or "
        "`-o cat`).",
        "",
        "How the cause is chosen: lines that are consequences (echoes) never name the "
        "category; among the cause lines the earliest wins (by the second, then by the order "
        "of the categories below, then by line); systemd's give-up results (start-limit-hit, "
        "timeout) count only when no cause line is found, and a bare SIGKILL only as a last "
        "hint. Categories below are in priority order.",
        "",
        "| id | what it means |",
        "| --- | --- |",
    ]
    for r in RULES:
        out.append(f"| [`{r.id}`](#{r.id}) | {r.title} |")
    out.append("| [`unknown`](#unknown) | no rule matched (never guessed) |")
    out.append("")
    for r in RULES:
        out += [f"## {r.id}", "", f"**{r.title}.** {r.doc}", ""]
        if r.role != CAUSE:
            out += [f"Role: {r.role} (counts only when no cause line is found).", ""]
        if r.examples:
            out += ["What is printed:", "", "```"]
            out += [line for ex in r.examples for line in ex.splitlines()]
            out += ["```", ""]
        fix = r.fix
        with contextlib.suppress(KeyError, ValueError):
            fix = fix.format_map(_Blank(r.defaults))
        out += [f"Fix: {fix}", ""]
        if r.preflight_rule:
            out += [
                f"Preflight twin: `{r.preflight_rule}` (`deploy validate` catches it before a start).",
                "",
            ]
    out += ["## unknown", "", UNKNOWN_DOC, ""]
    out += [
        "## Echoes (never the cause)",
        "",
        "```",
        "Received sigquit from a child process. It usually means the child failed.",
        "Rank 3 scheduler died during initialization (exit code: -9). ...",
        "Scheduler hit an exception: Traceback (most recent call last):   (the traceback below it is read)",
        "Initialization failed. Please see the error messages above.",
        "sglang-kimi.service: Main process exited, code=exited, status=1/FAILURE",
        "sglang-kimi.service: Failed with result 'exit-code'.",
        "```",
        "",
    ]
    return "\n".join(out)


class _Blank(dict[str, str]):
    """format_map helper: a missing field reads as its name in angle brackets."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"
