"""What deploy knows about running SGLang across nodes and behind its router (data).

Read off the sglang 0.5.23 wheel (paths under sglang/srt/) and SGLang's model-gateway docs;
the multi-node flags are the same in 0.5.11. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.sglang import api


@dataclass(frozen=True)
class MultiNode:
    """The ServerArgs fields of a multi-node launch: every node runs the same command with
    its own rank; node 0 serves HTTP, the others join the collective."""

    nnodes: str = "nnodes"  # --nnodes
    node_rank: str = "node_rank"  # --node-rank
    dist_init_addr: str = "dist_init_addr"  # --dist-init-addr host:port (node 0's)
    # Where SGLang asserts the fit: arg_groups/validation_hook.py check_server_args.
    divisible_source: str = "srt/arg_groups/validation_hook.py:179 check_server_args"
    # dp_size > 1 across nodes is refused there too (use attention DP instead).
    dp_multinode_source: str = "srt/arg_groups/validation_hook.py:199 check_server_args"
    # Ranks >= 1 run no tokenizer and no HTTP API: once their schedulers are ready they serve
    # a stub on the same host:port whose /health, /health_generate and /ping always answer
    # 200 (srt/utils/common.py launch_dummy_health_check_server, started from
    # srt/entrypoints/engine.py _launch_subprocesses). Before that the port is closed.
    # So on a worker node /health = 200 means "this node's schedulers joined and are
    # ready", never that the model answers; the process exits when its schedulers do.
    worker_health_path: str = api.HEALTH
    worker_health_paths: tuple[str, ...] = ("/health", "/health_generate", "/ping")
    worker_health_source: str = "srt/utils/common.py:3624 launch_dummy_health_check_server"


MULTINODE = MultiNode()


def gpus_of(tp_size: int, pp_size: int, dp_size: int) -> int:
    """GPUs one server uses over all its nodes: dp_size replicas of a tp x pp group
    (managers/data_parallel_controller.py moves base_gpu_id by one group per DP rank).
    attn_dp_size, ep_size and moe_dp_size split the TP group; they add no GPUs."""
    return tp_size * pp_size * dp_size


@dataclass(frozen=True)
class Router:
    """SGLang's model gateway (the `sglang-router` package; SGLang's images ship it, and
    lmsysorg/sgl-model-gateway is its own image), watching Kubernetes pods by label selector
    and routing to each discovered server."""

    module: str = "sglang_router.launch_router"
    service_discovery: str = "--service-discovery"
    selector: str = "--selector"  # key=value ... (one argument each)
    namespace: str = "--service-discovery-namespace"
    port_flag: str = "--service-discovery-port"  # the workers' HTTP port (default 80)
    host: str = "--host"
    port: str = "--port"
    api_key: str = "--api-key"  # the router's own key (clients send Authorization: Bearer)
    default_port: int = 30000
    health_path: str = api.HEALTH
    # What its service account needs to discover workers.
    rbac_resources: tuple[str, ...] = ("pods",)
    rbac_verbs: tuple[str, ...] = ("get", "list", "watch")


ROUTER = Router()
