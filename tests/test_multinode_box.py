"""Multi-node on the real systemd in the box: `deploy up PROFILE --node-rank 1` installs node
1's unit (the same unit with --nnodes, --node-rank, --dist-init-addr) and waits for it like
any start. The stand-in accepts SGLang's multi-node flags and serves /health on the port."""

from __future__ import annotations

import pytest

from tests.box import Box
from tests.e2e import UNIT_DIR, deploy, prepare, profile

pytestmark = pytest.mark.box


def test_up_node_rank_1_runs_node_1s_unit(box: Box) -> None:
    prepare(box)
    p = profile(
        "e2e-node1",
        port=31191,
        env={"STANDIN_READY_DELAY_S": "0.5"},
        server={"tp_size": 16},
        cluster={"nodes": 2, "gpus_per_node": 8, "dist_init_addr": "127.0.0.1:31192"},
    )
    refused = deploy(box, "up", p)  # a multi-node profile needs the node's rank
    assert refused.rc == 2 and "--node-rank" in refused.stderr
    r = deploy(box, "up", p, "--node-rank", "1", "--no-rollback")
    assert r.rc == 0, r.stdout + r.stderr
    unit = box.run(["cat", f"{UNIT_DIR}/sglang-e2e-node1.service"]).stdout
    (exec_start,) = [
        ln for ln in unit.splitlines() if ln.startswith("ExecStart=") and "--tp-size" in ln
    ]
    assert exec_start.endswith("--nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:31192")
    d = deploy(box, "down", "e2e-node1")
    assert d.rc == 0, d.stderr
