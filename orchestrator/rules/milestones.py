"""SGLang 0.5.x start-up milestones, as printed to the journal, in the order they appear.

Read off sglang 0.5.23 (model_executor/model_runner.py, cuda graph runners,
entrypoints/http_server.py). `phase_of` maps a log line to the phase it starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Milestone:
    phase: str  # short id, stable: used in --json output
    label: str  # what the operator reads on the live line
    pattern: re.Pattern[str]


MILESTONES: tuple[Milestone, ...] = (
    Milestone("args", "resolving server args", re.compile(r"\bserver_args=(?:ServerArgs\(|\{)")),
    Milestone(
        "init-parallel", "initialising NCCL / parallel groups", re.compile(r"Init parallel begin")
    ),
    Milestone("load-weights", "loading weights", re.compile(r"Load weight begin\.")),
    Milestone("weights-loaded", "weights loaded", re.compile(r"Load weight end\.")),
    Milestone("kv-cache", "allocating KV cache", re.compile(r"KV Cache is allocated\.")),
    Milestone("memory-pool", "memory pool ready", re.compile(r"Memory pool end\.")),
    Milestone(
        "cuda-graphs",
        "capturing CUDA graphs",
        re.compile(
            r"Capture (?:target verify|target decode|draft decode|draft extend|prefill|cuda) (?:CUDA |cuda )?graph begin",
            re.I,
        ),
    ),
    Milestone(
        "http",
        "HTTP server starting, warming up",
        re.compile(r"Uvicorn running on|Started server process"),
    ),
    Milestone("ready", "ready", re.compile(r"The server is fired up and ready to roll!")),
)


def phase_of(line: str) -> Milestone | None:
    """The milestone this log line marks, or None for every other line."""
    for m in MILESTONES:
        if m.pattern.search(line):
            return m
    return None
