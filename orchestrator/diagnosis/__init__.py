"""Why did a start (or a serving server) fail? One category, the evidence lines, the fix.

The one public entry point is `classify(entries, ...)` (journal entries of one start, oldest
first) and `classify_text(text)` (a saved log in any shape: journalctl json/short/cat, docker
json-file, CRI, kubectl --prefix, Ray, torchrun, srun, MPI, CI, syslog). Both return a
`Diagnosis`.

Stages (one module each):
- `reader`: turns any log into lines without their shipper's prefix (the prefix is learned
  from the log itself), joins partial and wrapped lines, puts a newest-first export in order;
- `structure`: Python tracebacks as objects (frames, exception chain, root exception) and
  typed events (CUDA, NCCL, Xid, systemd results, HTTP access, SGLang warnings);
- `model`: the one `Rule` / `Pat` shape; `startup` (a package, by failure family) and
  `runtime`: the rules, as data;
  `catalog`: all rules in priority order and the vocabulary derived from them;
- `enrich`: detail fields read around the cause (GPU, versions, host, port);
- `engine`: matching, root-cause choice, the time budget; `answer`: the `Diagnosis` it returns;
  `lexicon`: the corpus vocabulary, the last resort when no rule matches;
  `unknown`: the answer when no rule matches; `flags`: the SGLang flags a log shows;
  `docs`: docs/troubleshooting.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.diagnosis.answer import MAX_EVIDENCE, Diagnosis
    from orchestrator.diagnosis.docs import troubleshooting_markdown
    from orchestrator.diagnosis.engine import classify, classify_text
    from orchestrator.diagnosis.flags import flags_from_argv, flags_from_log, flags_from_server_args
    from orchestrator.diagnosis.model import CAUSE, ECHO, FALLBACK, HINT, READING

__all__ = [
    "CAUSE",
    "ECHO",
    "FALLBACK",
    "HINT",
    "MAX_EVIDENCE",
    "READING",
    "Diagnosis",
    "classify",
    "classify_text",
    "flags_from_argv",
    "flags_from_log",
    "flags_from_server_args",
    "troubleshooting_markdown",
]


# The names load on first use: `orchestrator.diagnosis.journal` reads logs through `diagnosis.reader`
# without compiling every rule.
_HOME = {
    "MAX_EVIDENCE": "answer",
    "Diagnosis": "answer",
    "flags_from_argv": "flags",
    "flags_from_log": "flags",
    "flags_from_server_args": "flags",
    "troubleshooting_markdown": "docs",
    "CAUSE": "model",
    "ECHO": "model",
    "FALLBACK": "model",
    "HINT": "model",
    "READING": "model",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_HOME.get(name, 'engine')}")
    return getattr(module, name)
