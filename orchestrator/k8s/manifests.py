"""A Spec -> Kubernetes objects (plain dicts, in the order they are applied).

One LeaderWorkerSet runs `cluster.replicas` groups of `cluster.nodes` pods. Leader and
workers run ONE argument vector: `Spec.server_argv()`, what the systemd unit's ExecStart=
runs, with the address bound to every interface and, over several nodes, the three flags
LWS fills in per pod (`$(LWS_LEADER_ADDRESS)`, `$(LWS_GROUP_SIZE)`, `$(LWS_WORKER_INDEX)`).
Secrets are referenced (envFrom / secretKeyRef), never written. With replicas > 1, SGLang's
router discovers the leaders through the API server (its RBAC is here too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.errors import InputError
from orchestrator.profiles.spec import Spec, launch_argv
from orchestrator.sglang.cluster import MULTINODE, ROUTER
from orchestrator.sglang.flags import flag

API_VERSION = "leaderworkerset.x-k8s.io/v1"
LWS_VERSIONS = ("0.8", "0.9", "0.10")
# Labels LWS puts on every pod of a group (kubernetes-sigs/lws api/leaderworkerset/v1).
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # "0" = the leader
# Environment LWS injects into every pod of a group.
LWS_LEADER_ADDRESS = "LWS_LEADER_ADDRESS"
LWS_GROUP_SIZE = "LWS_GROUP_SIZE"
LWS_WORKER_INDEX = "LWS_WORKER_INDEX"
DEFAULT_DIST_PORT = 20000  # the rendezvous port on the leader when [cluster] names none
STARTUP_PERIOD_S = 10
READINESS_PERIOD_S = 10
CONTAINER = "sglang"


@dataclass(frozen=True)
class Export:
    """What `deploy export k8s` writes: the objects, and how to create the Secret."""

    spec_name: str
    lws_version: str
    objects: list[dict[str, Any]]
    secret_name: str | None
    secret_command: str | None  # kubectl create secret generic ... --from-env-file ...


def k8s_ref(value: object) -> str:
    """An argument for a container's command: a literal `$(` is escaped, so the kubelet
    expands nothing in it (only `lws_flags` use $(NAME), for what LWS injects)."""
    return str(value).replace("$(", "$$(")


def pod_server(spec: Spec) -> dict[str, Any]:
    """[server] as a pod runs it: bound to every interface, so the Service, the router and
    the kubelet's probes reach it (the systemd unit keeps the profile's host)."""
    return {**spec.server, "host": "0.0.0.0"}


def lws_flags(spec: Spec) -> list[str]:
    """The multi-node flags, from what LWS injects: identical text on leader and workers."""
    if spec.cluster.nodes <= 1:
        return []

    port = DEFAULT_DIST_PORT
    if spec.cluster.dist_init_addr:
        port = int(spec.cluster.dist_init_addr.rpartition(":")[2])
    return [
        flag(MULTINODE.dist_init_addr),
        f"$({LWS_LEADER_ADDRESS}):{port}",
        flag(MULTINODE.nnodes),
        f"$({LWS_GROUP_SIZE})",
        flag(MULTINODE.node_rank),
        f"$({LWS_WORKER_INDEX})",
    ]


def server_command(spec: Spec) -> list[str]:
    """The container command of every pod of a group (leader and workers alike). API keys
    go through `KEY_LAUNCHER` as in the systemd unit (`launch_argv`): the kubelet sets them
    in the environment from the Secret, and the launcher moves them into sys.argv
    in-process, so no key is in the node's /proc/PID/cmdline."""
    flags = [k8s_ref(a) for a in spec.server_argv(pod_server(spec))] + lws_flags(spec)
    argv = launch_argv(spec.k8s.python, spec.unit.module, spec.key_flags(), flags)
    return [str(a) for a in argv]


def secret_name(spec: Spec) -> str | None:
    if spec.k8s.secret_name:
        return spec.k8s.secret_name
    if spec.unit.environment_file:
        return f"{spec.name}-env"
    return None


def _labels(spec: Spec, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "sglang",
        "app.kubernetes.io/instance": spec.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "deploy",
    }


def _meta(spec: Spec, name: str, component: str) -> dict[str, Any]:
    return {"name": name, "namespace": spec.k8s.namespace, "labels": _labels(spec, component)}


def _probe(path: str, port: str, period: int, failures: int, timeout: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "failureThreshold": failures,
        "timeoutSeconds": timeout,
    }


def probes(spec: Spec, *, readiness: bool) -> dict[str, Any]:
    """startupProbe (its budget, period x failures, covers [health] startup_timeout_s),
    livenessProbe from the liveness_* keys, and readinessProbe where asked (the leader)."""
    h = spec.health
    out: dict[str, Any] = {
        "startupProbe": _probe(
            h.path,
            "http",
            STARTUP_PERIOD_S,
            math.ceil(h.startup_timeout_s / STARTUP_PERIOD_S),
            min(h.liveness_timeout_s, STARTUP_PERIOD_S),
        ),
    }
    if h.liveness:
        out["livenessProbe"] = _probe(
            h.path, "http", h.liveness_interval_s, h.liveness_failures, h.liveness_timeout_s
        )
    if readiness:
        out["readinessProbe"] = _probe(
            h.path, "http", READINESS_PERIOD_S, 3, min(h.liveness_timeout_s, READINESS_PERIOD_S)
        )
    return out


def _env(spec: Spec, secret: str | None) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        {"name": k, "value": v} for k, v in sorted(spec.unit.environment.items())
    ]
    for key in (spec.unit.api_key_env, spec.unit.admin_api_key_env):
        if key and secret:  # KEY_LAUNCHER takes it out of the environment
            env.append({"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    out: dict[str, Any] = {}
    if env:
        out["env"] = env
    if secret:
        out["envFrom"] = [{"secretRef": {"name": secret}}]
    return out


def _security(spec: Spec) -> dict[str, Any]:
    """The intent of the unit's hardening (NoNewPrivileges=, CapabilityBoundingSet= empty):
    no privilege escalation, every capability dropped; RDMA mode keeps IPC_LOCK to pin
    memory for the NICs."""
    caps: dict[str, Any] = {"drop": ["ALL"]}
    if spec.k8s.rdma:
        caps["add"] = ["IPC_LOCK"]
    return {"allowPrivilegeEscalation": False, "capabilities": caps}


def _volumes(spec: Spec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    k = spec.k8s
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes: list[dict[str, Any]] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": k.shm_size}}
    ]
    if k.models_pvc or k.models_host_path:
        mounts.append({"name": "models", "mountPath": k.models_mount, "readOnly": True})
        if k.models_pvc:
            volumes.append(
                {
                    "name": "models",
                    "persistentVolumeClaim": {"claimName": k.models_pvc, "readOnly": True},
                }
            )
        else:
            volumes.append(
                {"name": "models", "hostPath": {"path": k.models_host_path, "type": "Directory"}}
            )
    if k.rdma:
        mounts.append({"name": "infiniband", "mountPath": "/dev/infiniband"})
        volumes.append({"name": "infiniband", "hostPath": {"path": "/dev/infiniband"}})
    return mounts, volumes


def pod_template(spec: Spec, role: str, *, readiness: bool) -> dict[str, Any]:
    secret = secret_name(spec)
    mounts, volumes = _volumes(spec)
    port = int(spec.server.get("port", 30000))
    gpus = spec.cluster.gpus_per_node
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.k8s.image,
        "command": server_command(spec),
        **_env(spec, secret),
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": {
            "limits": {"nvidia.com/gpu": str(gpus)},
            "requests": {"nvidia.com/gpu": str(gpus)},
        },
        **probes(spec, readiness=readiness),
        "securityContext": _security(spec),
        "volumeMounts": mounts,
    }
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": spec.unit.timeout_stop_s,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": volumes,
    }
    if spec.k8s.rdma:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    if spec.k8s.node_selector:
        pod["nodeSelector"] = dict(sorted(spec.k8s.node_selector.items()))
    if spec.k8s.tolerations:
        pod["tolerations"] = [dict(t) for t in spec.k8s.tolerations]
    return {"metadata": {"labels": _labels(spec, role)}, "spec": pod}


def leader_worker_set(spec: Spec) -> dict[str, Any]:
    c = spec.cluster
    template: dict[str, Any] = {"size": c.nodes, "restartPolicy": "RecreateGroupOnPodRestart"}
    if c.nodes > 1:
        # Workers answer SGLang's stub /health once their schedulers joined; only the
        # leader serves requests, so only it has a readiness probe.
        template["leaderTemplate"] = pod_template(spec, "leader", readiness=True)
        template["workerTemplate"] = pod_template(spec, "worker", readiness=False)
    else:
        template["workerTemplate"] = pod_template(spec, "leader", readiness=True)
    return {
        "apiVersion": API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": _meta(spec, spec.name, "server"),
        "spec": {
            "replicas": c.replicas,
            # The leader cannot become ready before its workers join: never LeaderReady.
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "leaderWorkerTemplate": template,
        },
    }


def leader_service(spec: Spec) -> dict[str, Any]:
    port = int(spec.server.get("port", 30000))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec, spec.name, "server"),
        "spec": {
            "type": "ClusterIP",
            "selector": {LWS_NAME_LABEL: spec.name, LWS_INDEX_LABEL: "0"},
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def router_objects(spec: Spec) -> list[dict[str, Any]]:
    """SGLang's router as a Deployment that discovers the leaders by label, its Service,
    and the namespaced RBAC it needs (pods: get, list, watch)."""
    name = f"{spec.name}-router"
    port = int(spec.server.get("port", 30000))
    labels = _labels(spec, "router")
    secret = secret_name(spec)
    flags = [
        ROUTER.service_discovery,
        ROUTER.selector,
        f"{LWS_NAME_LABEL}={spec.name}",
        f"{LWS_INDEX_LABEL}=0",
        ROUTER.namespace,
        spec.k8s.namespace,
        ROUTER.port_flag,
        str(port),
        ROUTER.host,
        "0.0.0.0",
        ROUTER.port,
        str(ROUTER.default_port),
    ]
    keys: list[str] = []
    env: list[dict[str, Any]] = []
    if spec.unit.api_key_env and secret:  # the router's own key, through KEY_LAUNCHER
        keys.append(f"{ROUTER.api_key}=env:{spec.unit.api_key_env}")
        env.append(
            {
                "name": spec.unit.api_key_env,
                "valueFrom": {"secretKeyRef": {"name": secret, "key": spec.unit.api_key_env}},
            }
        )
    argv = launch_argv(spec.k8s.python, ROUTER.module, keys, [k8s_ref(a) for a in flags])
    container: dict[str, Any] = {
        "name": "router",
        "image": spec.k8s.router_image or spec.k8s.image,
        "command": [str(a) for a in argv],
        **({"env": env} if env else {}),
        "ports": [{"name": "http", "containerPort": ROUTER.default_port, "protocol": "TCP"}],
        "readinessProbe": _probe(ROUTER.health_path, "http", 10, 3, 5),
        "livenessProbe": _probe(ROUTER.health_path, "http", 30, 3, 10),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(spec, name, "router"),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(spec, name, "router"),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": list(ROUTER.rbac_resources),
                    "verbs": list(ROUTER.rbac_verbs),
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(spec, name, "router"),
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": spec.k8s.namespace}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(spec, name, "router"),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": name,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [container],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(spec, name, "router"),
            "spec": {
                "type": "ClusterIP",
                "selector": labels,
                "ports": [
                    {
                        "name": "http",
                        "port": ROUTER.default_port,
                        "targetPort": "http",
                        "protocol": "TCP",
                    }
                ],
            },
        },
    ]


def _check_exportable(spec: Spec) -> None:
    """What export needs beyond preflight: an image, and the models where the pods see them."""
    k = spec.k8s
    if not k.image:
        raise InputError(
            f"profile {spec.name} names no container image for Kubernetes",
            field="k8s.image",
            fix='set [k8s] image = "lmsysorg/sglang:<tag>" (the SGLang release the profile '
            f"runs is {spec.sglang.version}; pin a tag or digest)",
        )
    mounted = bool(k.models_pvc or k.models_host_path)
    root = k.models_mount.rstrip("/") + "/"
    for key in ("model_path", "speculative_draft_model_path", "tokenizer_path"):
        p = spec.server.get(key)
        if not isinstance(p, str) or not p.startswith("/"):
            continue  # a hub id: the pod downloads it (HF_TOKEN from the Secret)
        if not mounted:
            raise InputError(
                f"server.{key} = {p!r} is a local path, but no models volume is mounted in the pods",
                field="k8s.models_pvc",
                fix="set [k8s] models_pvc (a PersistentVolumeClaim holding the checkpoints) or "
                f"models_host_path (a directory on every GPU node), mounted at {k.models_mount}",
            )
        if not p.startswith(root):
            raise InputError(
                f"server.{key} = {p!r} is outside the models volume, mounted at {k.models_mount}",
                field="k8s.models_mount",
                fix=f"set [k8s] models_mount to the directory holding {p}, or move the path "
                f"under {k.models_mount}",
            )


def build(spec: Spec, *, lws_version: str | None = None) -> Export:
    """Every object for this spec (refused, exit 2: no image, models outside the volume)."""
    version = lws_version or spec.k8s.lws_version
    if version not in LWS_VERSIONS:
        raise InputError(
            f"--lws-version {version} is not one deploy knows",
            field="--lws-version",
            fix=f"use one of {', '.join(LWS_VERSIONS)}",
        )
    _check_exportable(spec)
    objects: list[dict[str, Any]] = []
    if spec.cluster.replicas > 1:
        objects += router_objects(spec)[:3]
    objects += [leader_worker_set(spec), leader_service(spec)]
    if spec.cluster.replicas > 1:
        objects += router_objects(spec)[3:]
    secret = secret_name(spec)
    command = None
    if secret:
        env_file = spec.unit.environment_file or "FILE.env"
        command = (
            f"kubectl create secret generic {secret} --namespace {spec.k8s.namespace} "
            f"--from-env-file {env_file}"
        )
    return Export(spec.name, version, objects, secret, command)


def argv_of(obj: Mapping[str, Any], role: str = "leader") -> Sequence[str]:
    """The server command of a LeaderWorkerSet's leader (or worker) pod."""
    t = obj["spec"]["leaderWorkerTemplate"]
    tmpl = t.get(f"{role}Template") or t["workerTemplate"]
    return list(tmpl["spec"]["containers"][0]["command"])


def with_export_defaults(spec: Spec) -> Spec:
    """The spec as export judges it: the [cluster] fit is always checked on Kubernetes,
    where gpus_per_node is what each pod asks for."""
    return replace(spec, cluster=replace(spec.cluster, declared=True))
