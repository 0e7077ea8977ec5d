"""STAND-IN for the `sglang` package, used by deploy's tests (release: see _release.py).

This is NOT SGLang. It imitates `python -m sglang.launch_server` from the
outside (argument parsing, log lines, HTTP endpoints, failure modes) so that
deploy's orchestration can be tested on machines without a GPU. Everything it
prints copies SGLang 0.5.23's real formats; see tests/standin/README.md.
"""

from ._release import RELEASE

__standin__ = True
__version__ = RELEASE.version
