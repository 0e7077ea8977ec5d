"""Runs one of deploy's modules, as root, from the tree this file is in.

The units that run deploy's code as root (the incident recorder, the liveness watcher) run
`<python> -I <tree>/orchestrator/rootexec.py <module> <args...>` when deploy is not installed
in the interpreter's own site-packages: -I ignores every PYTHON* variable, the user's
site-packages and the working directory, so the only code on the path is the interpreter's
own, and the tree named here, which preflight (rule `root-code`) has checked is root-owned
and writable by root alone.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -I rootexec.py MODULE [ARGS...]")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    module = sys.argv[1]
    if not module.startswith("orchestrator."):
        sys.exit(f"rootexec: runs deploy's own modules only, not {module!r}")
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
