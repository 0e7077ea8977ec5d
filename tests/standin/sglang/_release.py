"""Which SGLang release the stand-in imitates, and deploy's knowledge of it.

The stand-in prints SGLang's words, and those live in one place: deploy's
`orchestrator.sglang` package (standard library only). STANDIN_SGLANG_VERSION picks the
release (default: the newest deploy knows); its texts, traceback frames and flag table are
what the stand-in prints and parses. The repository (or the copy the box tests install) is
two folders above this package.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:
    sys.path.append(str(_ROOT))

from orchestrator import sglang as knowledge  # noqa: E402
from orchestrator.sglang.model import Frame, Release  # noqa: E402

RELEASE: Release = knowledge.release(os.environ.get("STANDIN_SGLANG_VERSION") or None)
ARGS_JSON = _ROOT / "orchestrator" / "sglang" / RELEASE.args_file

__all__ = ["ARGS_JSON", "RELEASE", "Frame", "knowledge"]
