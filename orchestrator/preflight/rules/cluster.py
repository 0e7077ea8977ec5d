"""[cluster]: the server's parallelism must fill nodes x gpus_per_node exactly.

Applies once a profile declares [cluster] (or spans several nodes), and to every
`deploy export k8s`, where gpus_per_node is what each pod asks the scheduler for. SGLang's
own rules come from orchestrator/sglang/cluster.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.preflight.rules.base import Context, Finding, Rule
from orchestrator.sglang.cluster import MULTINODE, gpus_of


def cluster_fit(ctx: Context) -> Iterator[Finding]:
    c = ctx.spec.cluster
    if not c.declared and c.nodes <= 1:
        return
    tp = int(ctx.args.get("tp_size") or 1)
    pp = int(ctx.args.get("pp_size") or 1)
    dp = int(ctx.args.get("dp_size") or 1)
    used = gpus_of(tp, pp, dp)
    have = c.nodes * c.gpus_per_node
    shape = (
        f"tp_size {tp}"
        + (f" x pp_size {pp}" if pp > 1 else "")
        + (f" x dp_size {dp}" if dp > 1 else "")
    )
    if c.nodes > 1 and dp > 1:
        yield Finding(
            "cluster-dp-multinode",
            "error",
            ("--dp-size", "--nnodes"),
            f"dp_size {dp} over {c.nodes} nodes: SGLang refuses data-parallel replicas across "
            f"nodes ({MULTINODE.dp_multinode_source})",
            "for copies of the server use [cluster] replicas (one group each); inside one "
            "server use attn_dp_size",
        )
        return
    if c.nodes > 1 and (tp * pp) % c.nodes:
        yield Finding(
            "cluster-fit",
            "error",
            ("--tp-size", "--pp-size", "--nnodes"),
            f"{shape} = {tp * pp} GPUs does not split evenly over {c.nodes} nodes "
            f"(SGLang asserts it: {MULTINODE.divisible_source})",
            f"set tp_size x pp_size to a multiple of {c.nodes}, e.g. tp_size = "
            f"{c.nodes * c.gpus_per_node}",
        )
        return
    if used != have:
        yield Finding(
            "cluster-fit",
            "error",
            ("--tp-size", "--pp-size", "--dp-size"),
            f"{shape} = {used} GPUs, but [cluster] gives {c.nodes} node(s) x "
            f"{c.gpus_per_node} GPUs = {have}: "
            + (
                "the server would ask for GPUs that are not there"
                if used > have
                else f"{have - used} GPUs would sit idle in every copy"
            ),
            f"make tp_size x pp_size x dp_size equal nodes x gpus_per_node (e.g. tp_size = "
            f"{have}), or change [cluster] nodes / gpus_per_node",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "cluster-fit",
        "With [cluster] (or on `export k8s`): tp_size x pp_size x dp_size fills nodes x "
        "gpus_per_node exactly, splits evenly over the nodes, and no dp_size > 1 spans nodes.",
        "SGLang asserts (tp x pp) % nnodes == 0 and dp_size 1 over nodes; it does not check "
        "that the GPUs are used",
        cluster_fit,
        "cluster",
        ("cluster-dp-multinode",),
    ),
)
