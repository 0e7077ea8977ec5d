"""`deploy logs --classify --input` on `kubectl get pod -o json` and `kubectl get events -o
json`: OOM kills, probe kills, FailedScheduling, crash loops, named by pod and rank.

The documents are built here in kubectl's output shape (synthetic: the message texts are
those the kubelet and the scheduler print)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.k8s import pods

GROUP = "kimi-0"


def pod(index: int, statuses: list[dict[str, Any]]) -> dict[str, Any]:
    name = GROUP if index == 0 else f"{GROUP}-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "kimi",
                "leaderworkerset.sigs.k8s.io/worker-index": str(index),
                "leaderworkerset.sigs.k8s.io/group-index": "0",
            },
        },
        "spec": {"containers": [{"name": "sglang", "image": "lmsysorg/sglang:v0.5.23"}]},
        "status": {"phase": "Running", "containerStatuses": statuses},
    }


def status(**kw: Any) -> dict[str, Any]:
    return {"name": "sglang", "ready": False, "restartCount": kw.pop("restarts", 0), **kw}


def pod_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}


def event(
    pod_name: str, reason: str, message: str, when: str, kind: str = "Warning"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": "default"},
        "reason": reason,
        "message": message,
        "type": kind,
        "firstTimestamp": when,
        "lastTimestamp": when,
    }


def classify(*docs: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(json.dumps(d, indent=2) for d in docs)
    r = CliRunner().invoke(app, ["logs", "--classify", "--input", "-", "--json"], input=text)
    assert r.exit_code == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


OOM = status(
    restarts=1,
    state={"running": {"startedAt": "2026-12-03T08:10:00Z"}},
    lastState={
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "startedAt": "2026-12-03T08:00:00Z",
            "finishedAt": "2026-12-03T08:09:30Z",
        }
    },
)


def test_oom_killed_worker_is_named_with_its_rank() -> None:
    d = classify(pod_list(pod(0, [status(state={"running": {}})]), pod(1, [OOM])))
    assert d["category"] == "k8s-oom-killed"
    assert d["detail"]["pod"] == "kimi-0-1" and d["detail"]["rank"] == "1"
    assert "OOMKilled" in d["evidence"][0]["message"]
    assert "shm_size" in d["fix"]


def test_a_single_pod_document_works_too() -> None:
    d = classify(pod(1, [OOM]))
    assert d["category"] == "k8s-oom-killed"


def test_liveness_kill_from_events() -> None:
    events = pod_list(
        event(GROUP, "Started", "Started container sglang", "2026-12-03T08:00:00Z", "Normal"),
        event(
            GROUP,
            "Unhealthy",
            'Liveness probe failed: Get "http://10.1.2.3:30000/health": context deadline '
            "exceeded (Client.Timeout exceeded while awaiting headers)",
            "2026-12-03T09:00:00Z",
        ),
        event(
            GROUP,
            "Killing",
            "Container sglang failed liveness probe, will be restarted",
            "2026-12-03T09:00:01Z",
            "Normal",
        ),
    )
    d = classify(events)
    assert d["category"] == "k8s-liveness-killed"
    assert "Liveness probe failed" in d["evidence"][0]["message"]
    assert "liveness_timeout_s" in d["fix"]


def test_startup_probe_kill_points_at_the_startup_budget() -> None:
    d = classify(
        pod_list(
            event(
                GROUP,
                "Unhealthy",
                'Startup probe failed: Get "http://10.1.2.3:30000/health": dial tcp '
                "10.1.2.3:30000: connect: connection refused",
                "2026-12-03T08:30:00Z",
            ),
            event(
                GROUP,
                "Killing",
                "Container sglang failed startup probe, will be restarted",
                "2026-12-03T08:30:01Z",
                "Normal",
            ),
        )
    )
    assert d["category"] == "k8s-startup-probe-killed"
    assert "startup_timeout_s" in d["fix"]


def test_failed_scheduling_insufficient_gpu_outranks_the_rest() -> None:
    events = pod_list(
        event(
            f"{GROUP}-1",
            "FailedScheduling",
            "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are "
            "available: 4 No preemption victims found for incoming pod.",
            "2026-12-03T08:00:00Z",
        ),
    )
    pods_doc = pod_list(pod(0, [OOM]), pod(1, []))
    d = classify(pods_doc, events)  # two documents, concatenated
    assert d["category"] == "k8s-insufficient-gpu"
    assert d["detail"]["rank"] == "1"
    assert "k8s-oom-killed" in d["also"]


def test_other_failed_scheduling() -> None:
    d = classify(
        event(
            GROUP,
            "FailedScheduling",
            "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
            "2026-12-03T08:00:00Z",
        )
    )
    assert d["category"] == "k8s-unschedulable" and "node_selector" in d["fix"]


@pytest.mark.parametrize(
    ("code", "meaning"), [(1, "Python exception"), (2, "command-line"), (134, "SIGABRT")]
)
def test_crashloop_with_the_last_exit_code(code: int, meaning: str) -> None:
    st = status(
        restarts=5,
        state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
        lastState={
            "terminated": {
                "exitCode": code,
                "reason": "Error",
                "finishedAt": "2026-12-03T08:20:00Z",
            }
        },
    )
    d = classify(pod_list(pod(0, [st])))
    assert d["category"] == "k8s-crashloop"
    assert f"last exit code {code}" in d["evidence"][0]["message"]
    assert meaning in d["evidence"][0]["message"]
    assert "kubectl logs --previous kimi-0" in d["fix"]


def test_earliest_failing_rank_is_named_first() -> None:
    late = json.loads(json.dumps(OOM))
    late["lastState"]["terminated"]["finishedAt"] = "2026-12-03T08:15:00Z"
    d = classify(pod_list(pod(0, [late]), pod(1, [OOM])))
    assert d["detail"]["rank"] == "1"
    assert len(d["evidence"]) == 2


def test_healthy_pods_say_nothing_found() -> None:
    d = classify(pod_list(pod(0, [status(ready=True, state={"running": {}})])))
    assert d["category"] == "unknown" and "kubectl logs --prefix" in d["fix"]


def test_text_output_has_the_classifier_shape() -> None:
    text = json.dumps(pod_list(pod(1, [OOM])))
    r = CliRunner().invoke(app, ["logs", "--classify", "--input", "-"], input=text)
    assert r.exit_code == 0
    assert r.stdout.startswith("cause: k8s-oom-killed:")
    assert "\nfix: " in r.stdout


def test_non_kubernetes_input_is_left_to_the_log_classifier() -> None:
    assert pods.diagnose_text("Dec 02 13:50:01 host sglang[1]: hello") is None
    assert pods.diagnose_text('{"MESSAGE": "x", "__REALTIME_TIMESTAMP": "1"}') is None
    assert pods.diagnose_text('{"kind": "Pod"') is None  # truncated: not ours
