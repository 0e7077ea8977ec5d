"""STAND-IN for `python -m sglang.launch_server` (SGLang 0.5.23). Not SGLang.

Behaves like the real entry point from the outside: same flags (from
orchestrator/rules/sglang_args.json), same log lines and tracebacks, same
HTTP endpoints. See tests/standin/README.md.
"""

import sys

__standin__ = True

if __name__ == "__main__":
    from sglang._runtime import main

    main(sys.argv[1:])
