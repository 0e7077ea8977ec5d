"""One SGLang server over several nodes, on systemd: the same unit on every node, each with
its own rank (`deploy render|up PROFILE --node-rank N`).

No SSH and no coordinator: the operator (or their config management) runs the same command
on each node. Node 0 serves the API and is health-checked on /health; ranks >= 1 serve only
SGLang's stub health endpoint once their schedulers are ready (orchestrator/sglang/cluster.py),
so `up` on such a node waits for its unit and that stub, and a failure there is read from its
own journal.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from orchestrator.errors import InputError
from orchestrator.sglang.cluster import MULTINODE
from orchestrator.sglang.flags import flag

if TYPE_CHECKING:
    from orchestrator.profiles.spec import Spec


def _flag(field: str) -> str:

    return flag(field)


def systemd_flags(spec: Spec) -> list[str]:
    """`--nnodes N --node-rank R --dist-init-addr HOST:PORT` for a node of a multi-node
    server (`cluster.node_rank` set by `with_node_rank`); nothing on one node."""
    c = spec.cluster
    if c.nodes <= 1 or c.node_rank is None:
        return []
    assert c.dist_init_addr is not None  # with_node_rank refuses it missing
    return [
        _flag(MULTINODE.nnodes),
        str(c.nodes),
        _flag(MULTINODE.node_rank),
        str(c.node_rank),
        _flag(MULTINODE.dist_init_addr),
        c.dist_init_addr,
    ]


def with_node_rank(spec: Spec, node_rank: int | None) -> Spec:
    """The spec as node `node_rank` runs it. Refused (exit 2): a rank on a one-node profile,
    a rank out of range, no rank (or no cluster.dist_init_addr) on a multi-node profile."""
    c = spec.cluster
    if c.nodes <= 1:
        if node_rank is not None and node_rank != 0:
            raise InputError(
                f"--node-rank {node_rank} was given, but profile {spec.name} runs on one node "
                "([cluster] nodes = 1)",
                field="--node-rank",
                fix="leave --node-rank out, or set [cluster] nodes to the number of nodes the "
                "server spans",
            )
        return spec
    if node_rank is None:
        raise InputError(
            f"profile {spec.name} spans {c.nodes} nodes ([cluster] nodes), so each node needs "
            "its rank",
            field="--node-rank",
            fix=f"run the same command on every node with --node-rank 0 .. {c.nodes - 1} "
            "(0 on the node at cluster.dist_init_addr)",
        )
    if not 0 <= node_rank < c.nodes:
        raise InputError(
            f"--node-rank {node_rank} is out of range for {c.nodes} nodes",
            field="--node-rank",
            fix=f"give a rank between 0 and {c.nodes - 1}",
        )
    if not c.dist_init_addr:
        raise InputError(
            f"profile {spec.name} spans {c.nodes} nodes but names no rendezvous address",
            field="cluster.dist_init_addr",
            fix='set [cluster] dist_init_addr = "HOST:PORT" of node 0 (reachable from every '
            'node, a port free there, e.g. "10.0.0.1:20000")',
        )
    spec = replace(spec, cluster=replace(c, node_rank=node_rank))
    if node_rank >= 1 and spec.health.path not in MULTINODE.worker_health_paths:
        # A worker node answers only SGLang's stub endpoints: wait on its /health.
        spec = replace(spec, health=replace(spec.health, path=MULTINODE.worker_health_path))
    return spec
