"""Compatibility entry point: `python -m orchestrator.incidents` -> orchestrator.watch.incidents.

Units rendered before the package moved into one sub-package per stage (issue 20) run
`ExecStart=... -m orchestrator.incidents follow ...`; an installed box keeps running them until
the next `deploy up` re-renders its units with `-m orchestrator.watch.incidents`. Remove this
module once no supported box can still hold a unit rendered before that release.
"""

from __future__ import annotations

import os
import sys

from orchestrator.watch.incidents import main

if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # as the real entry point: leave without waiting for a journal reader thread
    os._exit(code)
