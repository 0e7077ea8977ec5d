"""STAND-IN for the `sglang` package (SGLang 0.5.23), used by deploy's tests.

This is NOT SGLang. It imitates `python -m sglang.launch_server` from the
outside (argument parsing, log lines, HTTP endpoints, failure modes) so that
deploy's orchestration can be tested on machines without a GPU. Everything it
prints copies SGLang 0.5.23's real formats; see tests/standin/README.md.
"""

__standin__ = True
__version__ = "0.5.23"
