"""Every rule in priority order (start-up, then run-time), the echoes, and the derived
vocabulary: keywords and first-stage gates come from the patterns, never typed twice."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from orchestrator import sglang
from orchestrator.diagnosis import structure as S
from orchestrator.diagnosis.model import (
    CAUSE,
    ECHO,
    FALLBACK,
    HINT,
    READING,
    Pat,
    Rule,
    Signal,
    pat,
    said,
)
from orchestrator.diagnosis.runtime import RUNTIME_RULES
from orchestrator.diagnosis.startup import STARTUP_RULES
from orchestrator.diagnosis.startup.patterns import PROBE_NOTICE

# causes while serving and GPU Xids come last (lowest priority on a tie)
__all__ = [
    "BENIGN",
    "CAUSE",
    "ECHO",
    "ECHOES",
    "ERRORISH",
    "FALLBACK",
    "HINT",
    "READING",
    "RULES",
    "Pat",
    "Rule",
    "all_keywords",
    "gates",
    "rule",
]

RULES: tuple[Rule, ...] = STARTUP_RULES + RUNTIME_RULES

# Consequences of an earlier failure: matched so that they are never taken for the cause.
ECHOES: tuple[Pat, ...] = (
    *said("sigquit", anywhere=True),
    *said("scheduler-died", anywhere=True),
    pat(r"Rank \d+ scheduler is dead"),
    *said("scheduler-exception", anywhere=True),
    *said("init-failed", anywhere=True),
    *said("warmup-failed", anywhere=True),
    pat(r"Exit code: -?\d+"),
    pat(r"Child process unexpectedly failed"),
    pat(
        r"Failed with result '(?:exit-code|signal|core-dump|watchdog|protocol|resources)'",
    ),
    pat(r"Main process exited, code=(?:exited|killed|dumped), status="),
    pat(r"Killing process \d+ \(.*\) with signal SIGKILL"),
    pat(r"Failed to start "),
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
    # an exception type named for what was not found (pkg_resources.DistributionNotFound)
    "NotFound",
)
ERRORISH = re.compile(
    r"Error|Exception|Traceback|[Ff]ail|FAIL|[Ff]atal|[Kk]illed|[Aa]bort|exited|ERROR|error|NotFound"
)

# Lines a healthy server prints by the thousand (SGLang's batch statistics, uvicorn's access
# log of successful requests): no rule can match them, so a long journal's search skips them.
NOISE: tuple[str, ...] = (
    "] Decode batch",
    "] Prefill batch",
    '" 200 OK',
)
NOISE_RE = re.compile("|".join(re.escape(n) for n in NOISE))

# Error-looking lines SGLang prints on every healthy start.
BENIGN = re.compile(
    r"can be ignored|error_on_|error-on-|"
    # vLLM's and SGLang's platform probes (startup.patterns.PROBE_NOTICE)
    + PROBE_NOTICE
    + r" (?:ModuleNotFoundError|ImportError)\b|"
    + "|".join(re.escape(m.literals()[0]) for m in sglang.all_messages("ignore-import-error"))
)

# Start-up progress (for startup-timeout: which step was reached).
MILESTONE_KEYWORDS: tuple[str, ...] = (
    *dict.fromkeys(
        m.keyword()
        for r in sglang.RELEASES.values()
        for mid, m in r.messages.items()
        if mid.startswith("ms-")
    ),
    "Uvicorn running",
    "Started server process",
)
PROGRESS = re.compile(
    r"Loading safetensors checkpoint shards:\s*(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+)"
)
PROGRESS_KEYWORD = "checkpoint shards"

UNKNOWN_DOC = (
    "No rule matched, and no error line reads as a category's cause line. `deploy` does not "
    "guess: it says so and shows the first exception and "
    "the last error-looking lines of the log. If the log holds only consequences (a sigquit "
    "from a child process, a scheduler rank that died), the original error went "
    "elsewhere (an earlier invocation, a rotated journal, or a rank that printed nothing)."
)


def rule(category: str) -> Rule | None:
    for r in RULES:
        if r.id == category:
            return r
    return None


def signal_keywords(sg: Signal) -> tuple[str, ...]:
    """The pre-filter keywords of a signal's lines: its words, or one of its event kinds'
    derived keywords (structure.EVENT_KEYWORDS) when those are fewer (every line of the
    signal holds one of each)."""
    sets = [s for s in (sg.words, *(S.EVENT_KEYWORDS.get(k) for k in sg.kinds)) if s]
    if not sets:
        raise ValueError(f"signal {sg.kinds}: no words and no kind with derived keywords")
    return min(sets, key=lambda ks: (len(ks), -min(len(k) for k in ks)))


def all_keywords() -> tuple[str, ...]:
    """Every keyword of the rules, echoes, error-looking and progress lines, deduplicated."""
    return _keywords_with(lambda p: p.keywords)


def _keywords_with(rule_keywords: Callable[[Pat], Iterable[str]]) -> tuple[str, ...]:
    """The keywords `all_keywords` lists, in its order, with `rule_keywords(p)` standing for
    each rule pattern's own (the echoes, signals and error words always by their keywords)."""
    seen: dict[str, None] = {}
    for r in RULES:
        for p in r.patterns:
            for k in rule_keywords(p):
                seen[k] = None
    for p in ECHOES:
        for k in p.keywords:
            seen[k] = None
    for r in RULES:
        for sg in r.signals:
            for k in signal_keywords(sg):
                seen[k] = None
    for k in (*ERRORISH_KEYWORDS, "Traceback"):
        seen[k] = None
    return tuple(seen)


# First-stage prefilter: short substrings, one of which every keyword above contains (`gates`
# adds any keyword that contains none). Fewer, shorter gates = fewer passes over the text.
BASE_GATES: tuple[str, ...] = (
    # exceptions, failures, kills
    "rror",
    "ailed",
    "xit",
    "xception",
    "Traceback",
    "illed",
    "KILL",
    "bort",
    "atal",
    "ERROR",
    "SIGBUS",
    "Watchdog",
    "ALLOC_FAILED",
    # resources
    "emory",
    "OOM",
    "oom",
    "No space",
    "posix_",
    "write to file",
    "KV cache",
    # GPUs, drivers, kernels, packages
    "CUDA",
    "NVIDIA",
    "NCCL",
    "nccl",
    "CCL",
    "driver",
    "kernel image",
    "apability",
    "upported",
    "only support",
    "requires SM",
    "not valid",
    "ymbol",
    "odule",
    "minimum required",
    "ninja",
    "nvcc",
    "ld:",
    "head",
    # processes, ports, networks
    "sigquit",
    "scheduler",
    "in use",
    "Errno",
    "EADDR",
    "onnect",
    "imed out",
    "imeout",
    "aylet",
    "actor",
    "GCS",
    "ot available",
    "Proxy",
    "repeated too quickly",
    # models and the Hub
    "huggingface",
    "gated",
    "estricted",
    "nvalid",
    "ffline",
    "outgoing",
    "Not Found",
    "appear to have",
    "local folder",
    "Can't",
    "annot",
    "ould not",
    "recognize",
    "trust_remote_code",
    "deploy-check",
    "ivisible",
    "must be",
    "Fail when",
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
    return _keywords_with(lambda p: (p.gate,) if p.gate else p.keywords)
