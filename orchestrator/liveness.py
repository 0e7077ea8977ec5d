"""Compatibility entry point: `python -m orchestrator.liveness` -> orchestrator.watch.liveness.

Units rendered before the package moved into one sub-package per stage (issue 20) run
`ExecStart=... -m orchestrator.liveness`; an installed box keeps running them until the next
`deploy up` re-renders its units with `-m orchestrator.watch.liveness`. Remove this module once
no supported box can still hold a unit rendered before that release.
"""

from __future__ import annotations

import sys

from orchestrator.watch.liveness import main

if __name__ == "__main__":
    sys.exit(main())
