"""Checks of rendered objects, offline and (optionally) against a cluster.

- `schema_errors(obj, version)`: the LeaderWorkerSet against the closed schema derived from
  that LWS release's CRD (orchestrator/k8s/schemas/, scripts/gen_lws_schema.py): every
  object closed, so a misspelt field is an error, not silently pruned.
- `webhook_errors(obj)`: the rules LWS enforces only in its admission webhook
  (pkg/webhooks/leaderworkerset_webhook.go), written here from its documented behaviour.
- `server_dry_run(yaml_text)`: `kubectl apply --dry-run=server` where kubectl reaches a
  cluster (the LWS controller and its webhook must be installed there).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

INT32_MAX = 2**31 - 1
SCHEMA_FILES = {"0.8": "lws-v0.8.0.json", "0.9": "lws-v0.9.0.json", "0.10": "lws-v0.10.0.json"}
_PERCENT = re.compile(r"^(\d+)%$")


@cache
def lws_schema(version: str) -> dict[str, Any]:
    name = SCHEMA_FILES[version]
    text = resources.files("orchestrator.k8s").joinpath("schemas", name).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def provenance(version: str) -> dict[str, str]:
    return dict(lws_schema(version)["x-deploy-provenance"])


def schema_errors(obj: Mapping[str, Any], version: str) -> list[str]:
    """Every way `obj` breaks the closed LWS schema of that release ([] = valid)."""

    validator = jsonschema.Draft7Validator(lws_schema(version))
    out = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.path))):
        where = ".".join(str(p) for p in err.absolute_path) or "(top)"
        out.append(f"{where}: {err.message}")
    return out


def _scaled(value: Any, total: int, *, round_up: bool) -> int | None:
    """An int-or-percent against `total`, as Kubernetes scales it (None: malformed)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = _PERCENT.match(value)
        if m is None:
            return None
        exact = int(m.group(1)) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return None


def webhook_errors(obj: Mapping[str, Any]) -> list[str]:
    """The LWS admission webhook's rules, which the CRD schema does not carry."""
    spec = obj.get("spec", {})
    tmpl = spec.get("leaderWorkerTemplate", {})
    replicas = spec.get("replicas", 1)
    size = tmpl.get("size", 1)
    out: list[str] = []
    if isinstance(replicas, int) and replicas < 0:
        out.append(f"spec.replicas: {replicas} is invalid (must be >= 0)")
    if isinstance(size, int) and size < 1:
        out.append(f"spec.leaderWorkerTemplate.size: {size} is invalid (must be >= 1)")
    if isinstance(replicas, int) and isinstance(size, int) and replicas * size > INT32_MAX:
        out.append(
            f"spec.replicas x spec.leaderWorkerTemplate.size = {replicas * size} exceeds {INT32_MAX}"
        )
    sub = tmpl.get("subGroupPolicy") or {}
    sgs = sub.get("subGroupSize")
    if isinstance(sgs, int) and isinstance(size, int):
        if sgs < 1:
            out.append(f"spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: {sgs} must be >= 1")
        elif size % sgs and (size - 1) % sgs:
            out.append(
                f"spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: {sgs} divides neither "
                f"size {size} nor size - 1"
            )
    ru = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
    if ru is not None and isinstance(replicas, int):
        surge = _scaled(ru.get("maxSurge", 0), replicas, round_up=True)
        unavailable = _scaled(ru.get("maxUnavailable", 1), replicas, round_up=False)
        for key, v in (("maxSurge", surge), ("maxUnavailable", unavailable)):
            if v is None:
                out.append(
                    f"spec.rolloutStrategy.rollingUpdateConfiguration.{key}: not an integer or N%"
                )
            elif v < 0:
                out.append(f"spec.rolloutStrategy.rollingUpdateConfiguration.{key}: must be >= 0")
        if surge == 0 and unavailable == 0:
            out.append(
                "spec.rolloutStrategy.rollingUpdateConfiguration: maxUnavailable may not be 0 "
                "when maxSurge is 0 (a rollout could never make progress)"
            )
    return out


def server_dry_run(yaml_text: str, *, timeout_s: float = 60.0) -> tuple[bool, str]:
    """`kubectl apply --dry-run=server -f -`: (accepted, what kubectl said). Needs kubectl
    and a reachable cluster with LWS installed; not exercised by the tests."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return False, "kubectl is not on PATH"
    try:
        proc = subprocess.run(
            [kubectl, "apply", "--dry-run=server", "-f", "-"],
            input=yaml_text,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return False, f"kubectl did not answer in {timeout_s:.0f} s"
    said = (proc.stdout + proc.stderr).strip()
    return proc.returncode == 0, said
