"""`deploy export k8s` and multi-node on systemd (issue 19).

Every rendered LeaderWorkerSet is validated offline against the closed schema derived from
that LWS release's CRD (orchestrator/k8s/schemas/) and against LWS's webhook rules; the core
objects against kubernetes-validate --strict. A parity test holds the pods' server command
and the systemd unit's ExecStart= to one argument vector.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from orchestrator import profiles
from orchestrator.cli import app
from orchestrator.k8s import manifests, validate, yamlout
from orchestrator.profiles.spec import KEY_LAUNCHER
from orchestrator.sglang.cluster import ROUTER
from orchestrator.systemd import render
from orchestrator.systemd.multinode import with_node_rank
from tests.helpers import ROOT, write_profile

EXAMPLES = ROOT / "k8s" / "examples"
K8S = {"image": "lmsysorg/sglang:v0.5.23-cu129", "models_pvc": "kimi-models"}
VERSIONS = ("0.8", "0.9", "0.10")
LWS_FLAGS = [
    "--dist-init-addr",
    "$(LWS_LEADER_ADDRESS):20000",
    "--nnodes",
    "$(LWS_GROUP_SIZE)",
    "--node-rank",
    "$(LWS_WORKER_INDEX)",
]


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _export(path: Path | str, *extra: str) -> list[dict[str, Any]]:
    r = _run("export", "k8s", str(path), *extra)
    assert r.exit_code == 0, r.stderr
    return yamlout.load_all(r.stdout)


def _kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _commands(obj: dict[str, Any]) -> list[str]:
    """Every argument of every container command in a Kubernetes object."""
    spec = obj.get("spec", {})
    templates = [spec.get("template", {})]
    lwt = spec.get("leaderWorkerTemplate", {})
    templates += [lwt.get("leaderTemplate") or {}, lwt.get("workerTemplate") or {}]
    return [
        a
        for t in templates
        for c in t.get("spec", {}).get("containers", [])
        for a in c.get("command", [])
    ]


def _lws(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (lws,) = _kind(objs, "LeaderWorkerSet")
    return lws


def _unit_argv(spec_path: str, *extra: str) -> list[str]:
    r = _run("render", spec_path, *extra)
    assert r.exit_code == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("ExecStart=/opt"))
    return line.removeprefix("ExecStart=").split()


@pytest.fixture
def k8s_profile(tmp_path: Path) -> Path:
    return write_profile(tmp_path, "kimi-k8s", k8s=K8S)


# --- the acceptance cases of the issue ----------------------------------------------------


def test_builtin_with_image_exports_a_valid_lws_whose_flags_match_render(
    k8s_profile: Path,
) -> None:
    objs = _export(k8s_profile)
    lws = _lws(objs)
    assert validate.schema_errors(lws, "0.10") == []
    assert validate.webhook_errors(lws) == []
    spec = lws["spec"]
    assert spec["leaderWorkerTemplate"]["size"] == 1
    assert spec["replicas"] == 1
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    pod = manifests.argv_of(lws)
    unit = _unit_argv(str(k8s_profile))
    # One argument vector: the same flags after `-m sglang.launch_server`, except the
    # address (a pod binds every interface so the Service and the probes reach it).
    assert pod[1:3] == unit[1:3] == ["-m", "sglang.launch_server"]
    assert _without_host(pod[3:]) == _without_host(unit[3:])
    assert pod[pod.index("--host") + 1] == "0.0.0.0"
    assert [o["kind"] for o in objs] == ["LeaderWorkerSet", "Service"]


def _without_host(argv: list[str]) -> list[str]:
    i = argv.index("--host")
    return argv[:i] + argv[i + 2 :]


def test_parity_is_one_vector_in_code() -> None:
    """The pods' command is Spec.server_argv(), the vector the unit's ExecStart= runs, and
    both pass the API key through KEY_LAUNCHER, never on a command line (issue 21): the
    kubelet would otherwise expand $(NAME) into the node's /proc/PID/cmdline."""
    spec = profiles.load(str(EXAMPLES / "kimi-k26-eagle3-router.toml"))
    unit = [str(a) for a in spec.argv()]
    pod = manifests.server_command(spec)
    for argv in (unit, pod):
        assert argv[1:5] == [
            "-c",
            KEY_LAUNCHER,
            "sglang.launch_server",
            "--api-key=env:SGLANG_API_KEY",
        ]
        assert argv[5] == "--"
        assert "SGLANG_API_KEY)" not in " ".join(argv) and "${" not in " ".join(argv)
    assert pod[0] == spec.k8s.python and unit[0] == spec.unit.python
    unit_tail = unit[unit.index("--") + 1 :]
    pod_tail = pod[pod.index("--") + 1 :]
    assert [manifests.k8s_ref(a) for a in _without_host(unit_tail)] == _without_host(pod_tail)


def test_two_nodes_tp16_gives_size_2_and_identical_lws_flags(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        "tp16",
        k8s=K8S,
        server={"tp_size": 16},
        cluster={"nodes": 2, "gpus_per_node": 8},
    )
    lws = _lws(_export(p))
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2
    assert lws["spec"]["startupPolicy"] == "LeaderCreated"
    leader, worker = manifests.argv_of(lws, "leader"), manifests.argv_of(lws, "worker")
    assert leader == worker
    assert leader[-6:] == LWS_FLAGS
    assert "readinessProbe" in t["leaderTemplate"]["spec"]["containers"][0]
    assert "readinessProbe" not in t["workerTemplate"]["spec"]["containers"][0]
    for tmpl in (t["leaderTemplate"], t["workerTemplate"]):
        c = tmpl["spec"]["containers"][0]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
    for v in VERSIONS:
        assert validate.schema_errors(lws, v) == []


def test_replicas_3_adds_the_router_with_rbac(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "x3", k8s=K8S, cluster={"replicas": 3})
    objs = _export(p)
    assert _lws(objs)["spec"]["replicas"] == 3
    kinds = [o["kind"] for o in objs]
    assert kinds == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "LeaderWorkerSet",
        "Service",
        "Deployment",
        "Service",
    ]
    (role,) = _kind(objs, "Role")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    (dep,) = _kind(objs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "x3-router"
    cmd = pod["containers"][0]["command"]
    assert "--service-discovery" in cmd
    assert "leaderworkerset.sigs.k8s.io/worker-index=0" in cmd
    assert "leaderworkerset.sigs.k8s.io/name=x3" in cmd
    # no router for one replica
    one = _export(write_profile(tmp_path, "x1", k8s=K8S))
    assert "Deployment" not in [o["kind"] for o in one]


SEED = {"speculative_eagle_topk": 4, "speculative_num_draft_tokens": 3}


@pytest.mark.parametrize(
    "case",
    [
        {"server": SEED, "unset": ["server.speculative_num_steps"]},  # the seed's flags
        {"server": {"tp_size": 4}},  # 4 of 8 GPUs
        {"server": {"tp_size": 16}},  # 16 GPUs on one 8-GPU node
        {"server": {"tp_size": 8}, "cluster": {"nodes": 2}},  # 8 over 16
        {"server": {"tp_size": 8, "dp_size": 2}, "cluster": {"nodes": 2}},  # dp across nodes
    ],
)
def test_refused_with_exit_2_and_nothing_on_stdout(tmp_path: Path, case: dict[str, Any]) -> None:
    p = write_profile(tmp_path, "bad", k8s=K8S, **case)
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert r.stderr.startswith("deploy: ") and "Fix: " in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _run("export", "k8s", str(p), "--json")
    assert r.exit_code == 2 and r.stdout == ""


def test_a_fitting_shape_on_smaller_nodes_exports(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path, "fit", k8s=K8S, server={"tp_size": 8}, cluster={"nodes": 2, "gpus_per_node": 4}
    )
    lws = _lws(_export(p))
    c = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert c["resources"]["requests"]["nvidia.com/gpu"] == "4"


@pytest.mark.parametrize(
    ("rule", "bad", "good"),
    [
        ("cluster-fit", {"server": {"tp_size": 4}}, {"server": {"tp_size": 8}}),
        (
            "cluster-fit",
            {"server": {"tp_size": 16}, "cluster": {"nodes": 3}},
            {"server": {"tp_size": 24}, "cluster": {"nodes": 3}},
        ),
        (
            "cluster-dp-multinode",
            {"server": {"tp_size": 8, "dp_size": 2}, "cluster": {"nodes": 2}},
            {"server": {"tp_size": 16}, "cluster": {"nodes": 2}},
        ),
    ],
)
def test_cluster_rules_bad_and_nearest_good(
    tmp_path: Path, rule: str, bad: dict[str, Any], good: dict[str, Any]
) -> None:
    from orchestrator import preflight

    def errors(data: dict[str, Any]) -> set[str]:
        cluster = {"nodes": 1, **data.pop("cluster", {})}
        spec = profiles.load(str(write_profile(tmp_path, "c", cluster=cluster, **data)))
        return {f.rule for f in preflight.run(spec).errors}

    assert rule in errors(copy.deepcopy(bad))
    assert not {"cluster-fit", "cluster-dp-multinode"} & errors(copy.deepcopy(good))


def test_seed_refusal_names_the_rule(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path, "seed", k8s=K8S, server=SEED, unset=["server.speculative_num_steps"]
    )
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 2 and "spec-params-need-num-steps" in r.stderr


def test_fit_is_checked_by_validate_once_cluster_is_declared(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "c", cluster={"nodes": 1}, server={"tp_size": 4})
    r = _run("validate", str(p))
    assert r.exit_code == 2 and "cluster-fit" in r.stdout
    # without [cluster] a one-box profile keeps its old meaning (no fit required)
    p = write_profile(tmp_path, "noc", server={"tp_size": 4})
    r = _run("validate", str(p))
    assert "cluster-fit" not in r.stdout


def test_no_image_and_models_outside_the_volume_are_refused(tmp_path: Path) -> None:
    r = _run("export", "k8s", "kimi-k26-eagle3")
    assert r.exit_code == 2 and r.stdout == "" and "k8s.image" in r.stderr
    p = write_profile(tmp_path, "nov", k8s={"image": K8S["image"]})
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 2 and "models_pvc" in r.stderr
    p = write_profile(tmp_path, "out", k8s={**K8S, "models_mount": "/weights"})
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 2 and "k8s.models_mount" in r.stderr


# --- systemd: --node-rank -------------------------------------------------------------


def test_render_node_rank_1_gives_node_1s_unit(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        "mn",
        server={"tp_size": 16},
        cluster={"nodes": 2, "dist_init_addr": "10.0.0.1:20000"},
    )
    one = _unit_argv(str(p), "--node-rank", "1")
    zero = _unit_argv(str(p), "--node-rank", "0")
    assert one[-6:] == ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:20000"]
    assert zero[:-6] == one[:-6] and zero[-3] == "0"
    spec = with_node_rank(profiles.load(str(p)), 1)
    # the same unit otherwise: same name, same health URL
    units = render.render(spec)
    assert (
        spec.unit_name in units
        and "deploy-health-url: http://127.0.0.1:30000/health" in (units[spec.unit_name])
    )


def test_worker_nodes_are_health_checked_on_sglangs_stub(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        "mn",
        server={"tp_size": 16},
        cluster={"nodes": 2, "dist_init_addr": "10.0.0.1:20000"},
        health={"path": "/v1/models"},
    )
    spec = profiles.load(str(p))
    assert with_node_rank(spec, 0).health.path == "/v1/models"  # node 0 serves the API
    assert with_node_rank(spec, 1).health.path == "/health"  # the stub has no /v1/models


@pytest.mark.parametrize(
    ("cluster", "args", "field"),
    [
        ({"nodes": 2, "dist_init_addr": "10.0.0.1:20000"}, [], "--node-rank"),
        ({"nodes": 2, "dist_init_addr": "10.0.0.1:20000"}, ["--node-rank", "2"], "--node-rank"),
        ({"nodes": 2}, ["--node-rank", "1"], "cluster.dist_init_addr"),
        ({}, ["--node-rank", "1"], "--node-rank"),
    ],
)
def test_node_rank_refusals(
    tmp_path: Path, cluster: dict[str, Any], args: list[str], field: str
) -> None:
    p = write_profile(tmp_path, "mn", server={"tp_size": 16}, cluster=cluster)
    units = tmp_path / "units"
    r = _run("render", str(p), *args, "--out", str(units))
    assert r.exit_code == 2 and field in r.stderr and r.stdout == ""
    assert not units.exists()


# --- profile keys --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"cluster": {"nodes": 0}}, "cluster.nodes"),
        ({"cluster": {"nodes": "2"}}, "cluster.nodes"),
        ({"cluster": {"gpus_per_node": 99}}, "cluster.gpus_per_node"),
        ({"cluster": {"replicas": True}}, "cluster.replicas"),
        ({"cluster": {"dist_init_addr": "10.0.0.1"}}, "cluster.dist_init_addr"),
        ({"cluster": {"dist_init_addr": "h:99999"}}, "cluster.dist_init_addr"),
        ({"cluster": {"node": 2}}, "cluster.node"),
        ({"k8s": {"image": "x y"}}, "k8s.image"),
        ({"k8s": {"namespace": "Prod"}}, "k8s.namespace"),
        ({"k8s": {"shm_size": "lots"}}, "k8s.shm_size"),
        ({"k8s": {"models_host_path": "data"}}, "k8s.models_host_path"),
        ({"k8s": {"models_pvc": "a", "models_host_path": "/d"}}, "k8s.models_pvc"),
        ({"k8s": {"node_selector": {"a b": "c"}}}, "k8s.node_selector"),
        ({"k8s": {"node_selector": "gpu"}}, "k8s.node_selector"),
        ({"k8s": {"tolerations": [{"key": "g", "operator": "maybe"}]}}, "operator"),
        ({"k8s": {"tolerations": [{"kye": "g"}]}}, "kye"),
        ({"k8s": {"rdma": "yes"}}, "k8s.rdma"),
        ({"k8s": {"secret_name": "Bad_Name"}}, "k8s.secret_name"),
        ({"k8s": {"lws_version": "0.7"}}, "k8s.lws_version"),
        ({"k8s": {"image": "a\nb"}}, "k8s.image"),
        ({"server": {"nnodes": 2}}, "server.nnodes"),
        ({"server": {"dist_init_addr": "a:1"}}, "server.dist_init_addr"),
    ],
)
def test_bad_cluster_and_k8s_keys(tmp_path: Path, data: dict[str, Any], field: str) -> None:
    p = write_profile(tmp_path, "bad", **data)
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 2, r.stdout
    assert r.stdout == "" and field in r.stderr and "Fix: " in r.stderr
    assert "Traceback" not in r.stderr


# --- the objects ---------------------------------------------------------------------


def test_probes_cover_the_startup_budget_and_liveness_keys(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        "pr",
        k8s=K8S,
        health={
            "startup_timeout_s": 1234,
            "liveness_interval_s": 17,
            "liveness_failures": 4,
            "liveness_timeout_s": 9,
        },
    )
    c = _lws(_export(p))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    s = c["startupProbe"]
    assert s.get("initialDelaySeconds", 0) + s["periodSeconds"] * s["failureThreshold"] >= 1234
    lp = c["livenessProbe"]
    assert (lp["periodSeconds"], lp["failureThreshold"], lp["timeoutSeconds"]) == (17, 4, 9)
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"


def test_pod_resources_shm_models_and_hardening(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "res", k8s={**K8S, "shm_size": "48Gi"})
    pod = _lws(_export(p))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "48Gi"}
    assert vols["models"]["persistentVolumeClaim"] == {"claimName": "kimi-models", "readOnly": True}
    c = pod["containers"][0]
    assert {"name": "models", "mountPath": "/models", "readOnly": True} in c["volumeMounts"]
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "hostNetwork" not in pod


def test_rdma_mode_adds_only_what_rdma_needs(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "rd", k8s={**K8S, "rdma": True})
    pod = _lws(_export(p))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert pod["hostNetwork"] is True
    c = pod["containers"][0]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert {"name": "infiniband", "mountPath": "/dev/infiniband"} in c["volumeMounts"]


def test_secrets_by_reference_only(tmp_path: Path) -> None:
    env_file = tmp_path / "secrets.env"
    env_file.write_text("SGLANG_API_KEY=sk-topsecret-value-123\nHF_TOKEN=hf_secretvalue456\n")
    env_file.chmod(0o600)
    p = write_profile(
        tmp_path,
        "sec",
        k8s=K8S,
        cluster={"replicas": 2},
        unit={"environment_file": str(env_file), "api_key_env": "SGLANG_API_KEY"},
    )
    r = _run("export", "k8s", str(p))
    assert r.exit_code == 0, r.stderr
    assert "topsecret" not in r.stdout and "secretvalue" not in r.stdout
    assert (
        f"kubectl create secret generic sec-env --namespace default --from-env-file {env_file}"
        in r.stderr
    )
    objs = yamlout.load_all(r.stdout)
    c = _lws(objs)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert c["envFrom"] == [{"secretRef": {"name": "sec-env"}}]
    assert {
        "name": "SGLANG_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "sec-env", "key": "SGLANG_API_KEY"}},
    } in c["env"]
    cmd = c["command"]
    assert cmd[1:5] == ["-c", KEY_LAUNCHER, "sglang.launch_server", "--api-key=env:SGLANG_API_KEY"]
    assert "--api-key" not in cmd  # the value is never an argument: KEY_LAUNCHER adds it
    router = next(o for o in objs if o["kind"] == "Deployment")
    rc = router["spec"]["template"]["spec"]["containers"][0]
    assert rc["command"][1:5] == ["-c", KEY_LAUNCHER, ROUTER.module, "--api-key=env:SGLANG_API_KEY"]
    assert {
        "name": "SGLANG_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "sec-env", "key": "SGLANG_API_KEY"}},
    } in rc["env"]
    assert all("SGLANG_API_KEY)" not in a for o in objs for a in _commands(o))
    j = json.loads(_run("export", "k8s", str(p), "--json").stdout)
    assert j["secret_command"].startswith("kubectl create secret generic sec-env")
    assert "topsecret" not in json.dumps(j)


def test_out_dir_writes_one_file_per_object(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "o", k8s=K8S, cluster={"replicas": 2})
    out = tmp_path / "out"
    r = _run("export", "k8s", str(p), "--out", str(out))
    assert r.exit_code == 0, r.stderr
    names = sorted(f.name for f in out.iterdir())
    assert names[0] == "01-serviceaccount-o-router.yaml" and len(names) == 7
    assert "04-leaderworkerset-o.yaml" in names
    again = _run("export", "k8s", str(p), "--out", str(out))
    assert "unchanged" in again.stdout and "written" not in again.stdout


def test_output_is_deterministic_yaml_from_pyyaml(k8s_profile: Path) -> None:
    a = _run("export", "k8s", str(k8s_profile)).stdout
    b = _run("export", "k8s", str(k8s_profile)).stdout
    assert a == b and a.startswith("---\napiVersion: leaderworkerset.x-k8s.io/v1\nkind:")
    assert "&id" not in a and "*id" not in a


@pytest.mark.parametrize("version", VERSIONS)
def test_every_lws_version_validates(k8s_profile: Path, version: str) -> None:
    lws = _lws(_export(k8s_profile, "--lws-version", version))
    assert validate.schema_errors(lws, version) == []


def test_unknown_lws_version_is_refused(k8s_profile: Path) -> None:
    r = _run("export", "k8s", str(k8s_profile), "--lws-version", "0.7")
    assert r.exit_code == 2 and "--lws-version" in r.stderr and r.stdout == ""


# --- the validators themselves can fail ------------------------------------------------


def _golden_lws() -> dict[str, Any]:
    return _lws(yamlout.load_all((ROOT / "k8s/golden/kimi-k26-eagle3-tp16.yaml").read_text()))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["spec", "leaderWorkerTemplate", "sise"], 2),  # the typo the API server would prune
        (["spec", "startupPolicy"], "LeaderReadyish"),
        (["spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0, "imag"], "x"),
        (["spec", "replicas"], "3"),
        (["metadata", "nam"], "x"),
    ],
)
def test_closed_schema_catches_typos(path: list[Any], value: Any) -> None:
    lws = copy.deepcopy(_golden_lws())
    node: Any = lws
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    assert validate.schema_errors(lws, "0.10")


def test_restart_policy_enum_differs_by_version() -> None:
    lws = copy.deepcopy(_golden_lws())
    lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupAfterStart"
    assert validate.schema_errors(lws, "0.8")
    assert validate.schema_errors(lws, "0.9") == []


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        ({"size": 0}, "size"),
        ({"replicas": -1}, "replicas"),
        ({"replicas": 2**30, "size": 4}, "exceeds"),
        ({"subGroupSize": 3, "size": 5}, "subGroupSize"),
        ({"maxSurge": 0, "maxUnavailable": 0}, "maxUnavailable"),
        ({"maxSurge": "0%", "maxUnavailable": "10%", "replicas": 3}, "maxUnavailable"),
    ],
)
def test_webhook_rules(edit: dict[str, Any], expect: str) -> None:
    lws = copy.deepcopy(_golden_lws())
    spec = lws["spec"]
    t = spec["leaderWorkerTemplate"]
    ru = spec["rolloutStrategy"]["rollingUpdateConfiguration"]
    for k, v in edit.items():
        if k == "size":
            t["size"] = v
        elif k == "replicas":
            spec["replicas"] = v
        elif k == "subGroupSize":
            t["subGroupPolicy"] = {"subGroupSize": v}
        else:
            ru[k] = v
    errs = validate.webhook_errors(lws)
    assert any(expect in e for e in errs), errs


def test_webhook_accepts_what_it_should() -> None:
    lws = copy.deepcopy(_golden_lws())
    lws["spec"]["leaderWorkerTemplate"]["size"] = 5
    lws["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}  # 5-1 = 4
    assert validate.webhook_errors(lws) == []


# --- goldens and the committed schema ---------------------------------------------------


def test_goldens_are_current_and_valid() -> None:
    from orchestrator.docs import golden_k8s

    files = golden_k8s()
    assert len(files) == len(list(EXAMPLES.glob("*.toml"))) >= 3
    for rel, text in files.items():
        assert (ROOT / rel).read_text() == text, (
            f"{rel} is stale: python -m orchestrator.docs --write"
        )
        for obj in yamlout.load_all(text):
            if obj["kind"] == "LeaderWorkerSet":
                assert validate.schema_errors(obj, "0.10") == []
                assert validate.webhook_errors(obj) == []


def _kubernetes_validate() -> list[str]:
    exe = shutil.which("kubernetes-validate")
    if exe is None:
        exe_path = Path(sys.executable).parent / "kubernetes-validate"
        exe = str(exe_path) if exe_path.exists() else None
    if exe is None:
        pytest.fail("kubernetes-validate is not installed (pip install -e '.[test]')")
    return [exe, "--strict"]


@pytest.mark.parametrize(
    "golden", sorted((ROOT / "k8s/golden").glob("*.yaml")), ids=lambda p: p.stem
)
def test_core_objects_pass_kubernetes_validate_strict(tmp_path: Path, golden: Path) -> None:
    core = [o for o in yamlout.load_all(golden.read_text()) if o["kind"] != "LeaderWorkerSet"]
    f = tmp_path / "core.yaml"
    f.write_text(yamlout.dump(core))
    r = subprocess.run([*_kubernetes_validate(), str(f)], capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "couldn't find schema" not in out.lower(), out  # an unchecked kind is a failure
    assert out.count("passed for resource") == len(core)


def test_kubernetes_validate_strict_would_catch_a_typo(tmp_path: Path) -> None:
    svc = _kind(
        yamlout.load_all((ROOT / "k8s/golden/kimi-k26-eagle3-k8s.yaml").read_text()), "Service"
    )[0]
    svc["spec"]["selectr"] = {"a": "b"}
    f = tmp_path / "bad.yaml"
    f.write_text(yamlout.dump([svc]))
    r = subprocess.run([*_kubernetes_validate(), str(f)], capture_output=True, text=True)
    assert r.returncode != 0


def test_committed_schemas_carry_their_provenance() -> None:
    for v in VERSIONS:
        prov = validate.provenance(v)
        assert prov["crd"] == f"lws-v{v}.0-crd.yaml" and prov["tag"] == f"v{v}.0"
        assert len(prov["sha256"]) == 64


def test_schemas_regenerate_from_the_crds_when_at_hand(tmp_path: Path) -> None:
    """Where the CRDs are beside the repo (CI's ../shared/k8s), the generator reproduces the
    committed files byte for byte, and the recorded sha256 is the CRD's."""
    crds = Path(os.environ.get("DEPLOY_LWS_CRDS") or ROOT.parent / "shared" / "k8s")
    if not list(crds.glob("lws-v*-crd.yaml")):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must check the committed schemas against the CRDs, none in {crds}")
        pytest.skip("the LWS CRDs are not beside the repo; the committed schemas are used")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_lws_schema
    finally:
        sys.path.pop(0)
    for crd in sorted(crds.glob("lws-v*-crd.yaml")):
        version, schema = gen_lws_schema.derive(crd)
        committed = ROOT / "orchestrator/k8s/schemas" / f"lws-v{version}.json"
        assert json.loads(committed.read_text()) == schema
        assert (
            schema["x-deploy-provenance"]["sha256"] == hashlib.sha256(crd.read_bytes()).hexdigest()
        )


def test_every_object_in_the_schema_is_closed() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert "additionalProperties" in node, where
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    for v in VERSIONS:
        walk(validate.lws_schema(v), v)


def test_yaml_round_trips() -> None:
    text = (ROOT / "k8s/golden/kimi-k26-eagle3-router.yaml").read_text()
    assert yamlout.dump(yaml.safe_load_all(text)) == text


def test_literal_dollar_paren_is_escaped_for_kubernetes(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "esc", k8s=K8S, server={"served_model_name": "kimi$(HOME)"})
    cmd = manifests.argv_of(_lws(_export(p)))
    assert cmd[cmd.index("--served-model-name") + 1] == "kimi$$(HOME)"  # not expanded
