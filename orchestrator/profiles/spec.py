"""The validated spec: plain, frozen data that every later stage reads.

A `Spec` is what a profile means once `profiles.load` has merged `extends`, checked every key
and type, and filled defaults. `provenance` records who set each value (the arg_groups idea):
"kimi-k26-eagle3 (built-in)", a file path, or "default".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.sglang import api
from orchestrator.sglang.flags import _flag, table, to_argv
from orchestrator.sglang.versions import Choice, resolve
from orchestrator.systemd.multinode import systemd_flags

DEFAULT_MODULE = "sglang.launch_server"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
# Deployment X's helper units are sglang-X-check.service (the checkpoint check before every
# start), sglang-X-liveness.service (the liveness watcher) and sglang-X-incidents.service
# (the incident recorder): no profile name may end in
# these, or its server unit would be another deployment's helper unit.
CHECK_SUFFIX = "-check"
LIVENESS_SUFFIX = "-liveness"
INCIDENTS_SUFFIX = "-incidents"  # sglang-X-incidents.service: the incident recorder
HELPER_SUFFIXES = {
    CHECK_SUFFIX: "checkpoint check that runs before every start",
    LIVENESS_SUFFIX: "liveness watcher",
    INCIDENTS_SUFFIX: "incident recorder",
}


@dataclass(frozen=True)
class UnitConfig:
    python: str
    module: str = DEFAULT_MODULE
    user: str = "sglang"
    group: str | None = None
    working_directory: str = "/var/lib/sglang"
    environment: Mapping[str, str] = field(default_factory=dict)
    environment_file: str | None = None
    restart_sec: int = 30
    start_limit_burst: int = 3
    start_limit_interval_s: int = 7200
    limit_nofile: int = 1048576
    timeout_stop_s: int = 120
    check_models: bool = True
    api_key_env: str | None = None  # --api-key from $NAME of environment_file (KEY_LAUNCHER)
    admin_api_key_env: str | None = None


@dataclass(frozen=True)
class HealthConfig:
    scheme: str = "http"
    host: str = "127.0.0.1"
    port: int = 30000
    path: str = api.HEALTH
    startup_timeout_s: int = 1800
    # After `up`: deploy's liveness watcher (orchestrator/watch/liveness.py). Once the server has
    # answered /health in an invocation, probe it every interval; `liveness_failures` in a
    # row -> incident "hung" and a restart, at most `liveness_restarts_per_hour`, then stop.
    liveness: bool = True
    liveness_interval_s: int = 30
    liveness_failures: int = 3
    liveness_timeout_s: int = 20
    liveness_restarts_per_hour: int = 3

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + self.path


@dataclass(frozen=True)
class ModelFacts:
    """What the profile declares about the checkpoints, for when config.json is not at hand
    (validating off the box). A readable config.json always wins."""

    architecture: str | None = None
    attention: str | None = None  # "mla" | "mha"
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    draft_architecture: str | None = None
    draft_hidden_size: int | None = None


@dataclass(frozen=True)
class HardwareConfig:
    gpu: str | None = None  # b200, h200, ... (see orchestrator/preflight/hardware.py)
    gpu_count: int | None = None


@dataclass(frozen=True)
class ClusterConfig:
    """[cluster]: how many nodes one server spans and how many copies run (see
    orchestrator/systemd/multinode.py for systemd, orchestrator/k8s/ for Kubernetes)."""

    nodes: int = 1
    gpus_per_node: int = 8
    replicas: int = 1
    dist_init_addr: str | None = None  # node 0's host:port, for multi-node on systemd
    declared: bool = False  # the profile has a [cluster] table: the fit is checked
    node_rank: int | None = None  # this node's rank (deploy render|up --node-rank), not a key


@dataclass(frozen=True)
class K8sConfig:
    """[k8s]: what `deploy export k8s` needs beyond the server itself."""

    image: str | None = None
    router_image: str | None = None  # default: image (SGLang's images ship the router)
    python: str = "python3"  # the interpreter inside the image
    namespace: str = "default"
    models_pvc: str | None = None
    models_host_path: str | None = None
    models_mount: str = "/models"  # read-only, in every pod
    secret_name: str | None = None  # default <name>-env when unit.environment_file is set
    shm_size: str = "64Gi"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    rdma: bool = False  # hostNetwork, IPC_LOCK, /dev/infiniband
    lws_version: str = "0.10"


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    source: str  # "built-in" or the profile file's path
    server: Mapping[str, Any]  # ServerArgs field -> value, only what the profile sets
    unit: UnitConfig
    health: HealthConfig
    model: ModelFacts = field(default_factory=ModelFacts)
    hardware: HardwareConfig = field(default_factory=HardwareConfig)
    provenance: Mapping[str, str] = field(default_factory=dict)
    chain: tuple[str, ...] = ()  # the profile and every profile it extends, nearest first
    # The SGLang release this profile runs (found for unit.python, else [sglang] version,
    # else the newest deploy knows): its flag table and rules apply.
    sglang: Choice = field(default_factory=lambda: resolve(None))
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    k8s: K8sConfig = field(default_factory=K8sConfig)
    # Deprecated SGLang flags the profile set (already translated in `server`) -> a warning.
    deprecations: Mapping[str, str] = field(default_factory=dict)

    @property
    def unit_name(self) -> str:
        return f"sglang-{self.name}.service"

    @property
    def check_unit_name(self) -> str:
        return f"sglang-{self.name}{CHECK_SUFFIX}.service"

    @property
    def unit_names(self) -> tuple[str, ...]:
        if self.unit.check_models:
            return (self.unit_name, self.check_unit_name)
        return (self.unit_name,)

    @property
    def speculative(self) -> bool:
        return bool(self.server.get("speculative_algorithm"))

    def argv(self) -> list[Any]:
        """The server's full command line, exactly as the unit runs it. No secret is ever in
        it: with `api_key_env`/`admin_api_key_env` the interpreter runs `KEY_LAUNCHER`
        (`launch_argv`), which takes each key from the environment (the environment file's
        variable), adds it to sys.argv inside the process and runs the module, so the key is in
        neither /proc/PID/cmdline nor journald's _CMDLINE. On a node of a multi-node server
        (`cluster.node_rank` set), the multi-node flags follow."""
        flags = [*self.server_argv(), *systemd_flags(self)]
        return launch_argv(self.unit.python, self.unit.module, self.key_flags(), flags)

    def key_flags(self) -> list[str]:
        """`KEY_LAUNCHER`'s `FLAG=env:NAME` arguments: SGLang's flag for each API key the
        profile takes from the environment (`api_key_env`, `admin_api_key_env`)."""
        return [
            f"{_flag(table(self.sglang.version).fields, field)}=env:{name}"
            for field, name in (
                ("api_key", self.unit.api_key_env),
                ("admin_api_key", self.unit.admin_api_key_env),
            )
            if name
        ]

    def server_argv(self, server: Mapping[str, Any] | None = None) -> list[Any]:
        """The launch_server arguments of this profile (no interpreter, no multi-node flags, no
        API key): the one argument vector the systemd unit and the Kubernetes pods share.
        `server` replaces the [server] values (Kubernetes binds every address). The keys are
        never arguments: both run the server through `launch_argv`."""
        return to_argv(self.server if server is None else server, version=self.sglang.version)


def launch_argv(python: str, module: str, keys: Sequence[str], flags: Sequence[Any]) -> list[Any]:
    """`python -m MODULE FLAGS...`; with API keys (`FLAG=env:NAME`, `Spec.key_flags`), the
    interpreter runs `KEY_LAUNCHER` instead, which adds each key to sys.argv in-process. The
    systemd unit, the Kubernetes pods and the router all start this way, so no key is ever in a
    process's command line (/proc/PID/cmdline is readable by every user of the host)."""
    if not keys:
        return [python, "-m", module, *flags]
    return [python, "-c", KEY_LAUNCHER, module, *keys, "--", *flags]


# Run by the server's interpreter when a key comes from the environment file:
#   python -c KEY_LAUNCHER MODULE --api-key=env:NAME ... -- FLAGS...
# Each NAME is taken out of the environment (children do not inherit it) and added as
# `--api-key VALUE` to sys.argv in-process; a missing or empty one refuses the start, never
# SGLang without authentication. One line: it goes into ExecStart=.
KEY_LAUNCHER = (
    "import os,runpy,sys;a=sys.argv;i=a.index('--');"
    "k=[(f,n,os.environ.pop(n,'')) for f,n in (p.split('=env:',1) for p in a[2:i])];"
    "e=[n for f,n,v in k if not v];"
    "e and sys.exit('deploy: '+' and '.join(e)+' not set or empty in the environment file: "
    "refusing to start without the API key (add it to unit.environment_file)');"
    "sys.argv=[a[1]]+a[i+1:]+[x for f,n,v in k for x in (f,v)];"
    "runpy.run_module(a[1],run_name='__main__',alter_sys=True)"
)
