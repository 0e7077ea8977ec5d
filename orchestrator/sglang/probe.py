"""SGLang's own argument resolution, run by path in the profile's interpreter (no GPU work):

    <unit.python> orchestrator/sglang/probe.py <launch_server arguments>

prints one JSON line: {"available", "accepted", "detail", "resolved"}. `preflight.sglang_verdict`
runs it with the GPUs hidden (CUDA_VISIBLE_DEVICES=""), so SGLang's device detection (get_device(),
reached from serving_hook.handle_missing_default_values) would find no accelerator and reject
every config with "RuntimeError: No accelerator ...". Unless the arguments name a device, the probe
resolves for the one the unit runs on: cuda. SGLang then sees no GPU model or memory, so
GPU-dependent defaults (the attention backend, for one) are those of an unknown GPU, not the box's.

Standard library and sglang only: it runs in SGLang's interpreter, never in deploy's.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

KEYS = (
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "attention_backend",
    "page_size",
    "speculative_draft_attention_backend",
    "device",
)


def resolver() -> Callable[[list[str]], Any]:
    """How this release resolves its arguments, picked by what its sglang offers.

    0.5.19 and later: prepare_server_args() only parses; resolve_once() runs the resolution
    pipeline (arg_groups/), and resolving_view() shows the resolved values. Before (0.5.11, the
    seed's release, for one): ServerArgs is a dataclass whose __post_init__ resolves everything
    while prepare_server_args() builds it; there is no resolve_once().
    """
    from sglang.srt.server_args import ServerArgs, prepare_server_args

    if hasattr(ServerArgs, "resolve_once"):
        from sglang.srt.arg_groups.overrides import resolving_view

        def resolve_once(argv: list[str]) -> Any:
            sa = prepare_server_args(argv)
            sa.resolve_once()
            return resolving_view(sa)

        return resolve_once

    def post_init(argv: list[str]) -> Any:
        return prepare_server_args(argv)

    return post_init


def main(args: Sequence[str]) -> None:
    argv = list(args)
    try:
        resolve = resolver()
    except Exception as e:
        print(json.dumps({"available": False, "detail": f"{type(e).__name__}: {e}"}))
        return
    if not any(a == "--device" or a.startswith("--device=") for a in argv):
        argv += ["--device", "cuda"]
    try:
        cfg = resolve(argv)
        resolved = {k: getattr(cfg, k, None) for k in KEYS}
        print(
            json.dumps(
                {"available": True, "accepted": True, "detail": "accepted", "resolved": resolved},
                default=str,
            )
        )
    except SystemExit as e:
        detail = f"argument parsing exited {e.code}"
        print(json.dumps({"available": True, "accepted": False, "detail": detail}))
    except BaseException as e:
        tb = traceback.extract_tb(e.__traceback__)
        detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if tb:
            f = tb[-1]
            where = f.filename.split("site-packages/")[-1]
            detail += f" ({where}:{f.lineno} in {f.name}: {f.line})"
        print(json.dumps({"available": True, "accepted": False, "detail": detail}))


if __name__ == "__main__":
    # Run by path, Python puts this folder first on sys.path; its modules (model.py, ...) must
    # not shadow anything sglang imports.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    main(sys.argv[1:])
