"""deployer's plain-data pieces, without systemd: what a release records."""

from __future__ import annotations

import json

from orchestrator import deployer, profiles


def test_the_applied_spec_is_recorded_as_plain_json() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    data = deployer._spec_json(spec)
    assert json.loads(json.dumps(data)) == data
    assert data["name"] == "kimi-k26-eagle3"
    assert data["server"]["speculative_algorithm"] == "EAGLE3"
    assert data["sglang"]["version"] == spec.sglang.version
    assert data["unit"]["python"] == spec.unit.python
