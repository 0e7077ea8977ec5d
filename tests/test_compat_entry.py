"""The old entry modules that units rendered before issue 20 still run must reach the new mains."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("old", "prog"),
    [
        ("orchestrator.liveness", "orchestrator.watch.liveness"),
        ("orchestrator.incidents", "orchestrator.watch.incidents"),
    ],
)
def test_old_module_path_runs_the_new_main(old: str, prog: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", old, "--help"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert prog in r.stdout
