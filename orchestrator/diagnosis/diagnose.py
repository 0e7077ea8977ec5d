"""The classifier's old import path and its command line.

`orchestrator.diagnosis` is the package; this module keeps `orchestrator.diagnosis.diagnose.classify`
(and the rest of the public surface) working for callers, and runs
`python -m orchestrator.diagnosis.diagnose FILE` / `--write-docs`.
"""

from __future__ import annotations

import sys

from orchestrator.diagnosis import (
    MAX_EVIDENCE,
    Diagnosis,
    classify,
    classify_text,
    flags_from_argv,
    flags_from_log,
    flags_from_server_args,
    troubleshooting_markdown,
)
from orchestrator.diagnosis.engine import main, write_docs

__all__ = [
    "MAX_EVIDENCE",
    "Diagnosis",
    "classify",
    "classify_text",
    "flags_from_argv",
    "flags_from_log",
    "flags_from_server_args",
    "main",
    "troubleshooting_markdown",
    "write_docs",
]

if __name__ == "__main__":
    sys.exit(main())
