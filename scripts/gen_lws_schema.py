"""Derive closed JSON Schemas for LeaderWorkerSet from the LWS CRDs, for offline validation.

    python scripts/gen_lws_schema.py [CRD_DIR]    # default: ../shared/k8s beside the repo

For each CRD (`lws-v<version>-crd.yaml`, a verbatim copy of kubernetes-sigs/lws'
config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml at that tag) it writes
orchestrator/k8s/schemas/lws-v<version>.json: the v1 openAPIV3Schema with

- every object node closed (`additionalProperties: false`): the API server prunes unknown
  fields instead of rejecting them, so a typo would otherwise pass;
- `x-kubernetes-int-or-string` spelled as JSON Schema (`anyOf` integer | string);
- the top-level `metadata` given the ObjectMeta fields a manifest sets (the CRD leaves it
  `type: object` with no properties);
- descriptions dropped (size), and its provenance (file, tag, sha256) under
  `x-deploy-provenance`.

The derived files are committed: the tests never read the CRDs themselves.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "orchestrator" / "k8s" / "schemas"
NAME = re.compile(r"^lws-v(\d+\.\d+\.\d+)-crd\.yaml$")

# What a manifest may set in the LeaderWorkerSet's own metadata.
TOP_METADATA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def close(node: Any) -> Any:
    """A copy of a schema node with every object closed and descriptions dropped."""
    if isinstance(node, list):
        return [close(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "description":
            continue
        if k == "properties":
            out[k] = {name: close(sub) for name, sub in v.items()}
        else:
            out[k] = close(v)
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("type") == "object" and "additionalProperties" not in out:
        if out.get("x-kubernetes-preserve-unknown-fields"):
            raise SystemExit("a preserve-unknown-fields node cannot be closed")
        out["additionalProperties"] = False
        out.setdefault("properties", {})
    return out


def derive(crd_path: Path) -> tuple[str, dict[str, Any]]:
    m = NAME.match(crd_path.name)
    if m is None:
        raise SystemExit(f"{crd_path}: not named lws-v<version>-crd.yaml")
    version = m.group(1)
    raw = crd_path.read_bytes()
    crd = yaml.safe_load(raw)
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = close(v1["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = TOP_METADATA
    schema["properties"]["apiVersion"] = {"const": "leaderworkerset.x-k8s.io/v1"}
    schema["properties"]["kind"] = {"const": "LeaderWorkerSet"}
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["x-deploy-provenance"] = {
        "crd": crd_path.name,
        "source": "kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "tag": f"v{version}",
        "sha256": hashlib.sha256(raw).hexdigest(),
        "generator": "scripts/gen_lws_schema.py",
    }
    return version, schema


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else ROOT.parent / "shared" / "k8s"
    crds = sorted(src.glob("lws-v*-crd.yaml"))
    if not crds:
        print(f"no lws-v*-crd.yaml in {src}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for p in crds:
        version, schema = derive(p)
        dest = OUT / f"lws-v{version}.json"
        dest.write_text(json.dumps(schema, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"{dest.relative_to(ROOT)}: from {p.name} ({dest.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
