"""What Kubernetes says about a group's pods, as a diagnosis.

Input: the text of `kubectl get pod(s) -o json` (a Pod or a List of them) and/or
`kubectl get events -o json` (a List of Events), one document or several concatenated
(`cat pods.json events.json`). Output: a `Diagnosis` of the same shape the log classifier
returns (category, summary, evidence lines, fix), so `deploy logs --classify --input` prints
it the same way. Plain functions, no cluster access.

What it names, most telling first: a pod that cannot be scheduled (Insufficient
nvidia.com/gpu, or no node matches), a container the kernel OOM-killed, a container the
kubelet killed for a failed startup or liveness probe, and a crash loop with the last exit
code. Under LWS's RecreateGroupOnPodRestart any one of these restarts the whole group, so
the pod (and its rank, the worker-index label) that failed first is the one named.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.diagnosis.diagnose import Diagnosis
from orchestrator.diagnosis.journal import JournalEntry
from orchestrator.errors import InputError

if TYPE_CHECKING:
    from orchestrator.diagnosis.diagnose import Diagnosis

INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
KINDS = {"Pod", "Event", "List", "PodList", "EventList"}

# What an exit code says about how the container ended (128 + N: killed by signal N).
EXIT_MEANING = {
    1: "a Python exception (the traceback is in the logs)",
    2: "a command-line error (an unknown or malformed flag)",
    134: "SIGABRT (an abort, e.g. torch's NCCL watchdog)",
    137: "SIGKILL (the OOM killer, or a kill after the grace period)",
    139: "SIGSEGV (a crash in native code)",
    143: "SIGTERM (stopped)",
}


@dataclass(frozen=True)
class Category:
    id: str
    title: str
    doc: str
    rank: int  # lower = more telling (reported first)


CATEGORIES = {
    c.id: c
    for c in (
        Category(
            "k8s-insufficient-gpu",
            "no node has the GPUs a pod asks for",
            "The scheduler found no node with enough free nvidia.com/gpu for a pod of the group "
            "(FailedScheduling: Insufficient nvidia.com/gpu); the group waits, nothing started.",
            0,
        ),
        Category(
            "k8s-unschedulable",
            "a pod of the group cannot be scheduled",
            "FailedScheduling for another reason: no node matches the node selector, an "
            "untolerated taint, or too little memory/CPU.",
            1,
        ),
        Category(
            "k8s-oom-killed",
            "the container was OOM-killed",
            "The kernel killed the container for exceeding its memory limit (reason OOMKilled); "
            "an emptyDir with medium Memory (/dev/shm) counts against that limit too.",
            2,
        ),
        Category(
            "k8s-startup-probe-killed",
            "killed by the startup probe before loading finished",
            "The kubelet killed the container because the startupProbe failed failureThreshold "
            "times: its budget (period x failures) was shorter than the model's load.",
            3,
        ),
        Category(
            "k8s-liveness-killed",
            "killed by the liveness probe",
            "The kubelet killed the container after livenessProbe failures: the server stopped "
            "answering /health in time (hung, overloaded, or a timeout shorter than a 1-token "
            "generation). Under RecreateGroupOnPodRestart the whole group restarts.",
            4,
        ),
        Category(
            "k8s-crashloop",
            "the container keeps exiting (CrashLoopBackOff)",
            "The container exits and the kubelet backs off restarting it; the last state's exit "
            "code says how it ended, its previous logs say why.",
            5,
        ),
    )
}


@dataclass(frozen=True)
class _Hit:
    category: str
    when: datetime | None
    pod: str
    rank: str | None
    line: str
    detail: dict[str, str]


def documents(text: str) -> list[dict[str, Any]] | None:
    """The Kubernetes JSON documents in `text` (one, or several concatenated); None when the
    text is not Kubernetes JSON (then it is a journal or a log for the classifier)."""
    s = text.lstrip()
    if not s.startswith("{"):
        return None
    dec = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i = 0
    try:
        while i < len(s):
            obj, i = dec.raw_decode(s, i)
            while i < len(s) and s[i].isspace():
                i += 1
            if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
                return None
            out.append(obj)
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
        return None
    return out


def _items(
    docs: Iterable[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    pods: list[Mapping[str, Any]] = []
    events: list[Mapping[str, Any]] = []
    for d in docs:
        items = d.get("items", []) if "items" in d else [d]
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            kind = item.get("kind") or ("Event" if "involvedObject" in item else "Pod")
            if kind == "Pod":
                pods.append(item)
            elif kind == "Event":
                events.append(item)
    return pods, events


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _rank(labels: Mapping[str, Any] | None) -> str | None:
    if not labels:
        return None
    v = labels.get(INDEX_LABEL)
    return str(v) if v is not None else None


def _pod_hits(pod: Mapping[str, Any]) -> list[_Hit]:
    meta = pod.get("metadata", {})
    name = str(meta.get("name", "?"))
    rank = _rank(meta.get("labels"))
    out: list[_Hit] = []
    for cs in pod.get("status", {}).get("containerStatuses", []) or []:
        cname = cs.get("name", "?")
        for key in ("state", "lastState"):
            term = (cs.get(key) or {}).get("terminated")
            if term and term.get("reason") == "OOMKilled":
                when = _time(term.get("finishedAt"))
                out.append(
                    _Hit(
                        "k8s-oom-killed",
                        when,
                        name,
                        rank,
                        f"pod {name} container {cname}: terminated, reason OOMKilled, "
                        f"exit code {term.get('exitCode')}",
                        {"exit_code": str(term.get("exitCode"))},
                    )
                )
                break
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            last = (cs.get("lastState") or {}).get("terminated") or {}
            code = last.get("exitCode")
            meaning = EXIT_MEANING.get(int(code), "") if isinstance(code, int) else ""
            out.append(
                _Hit(
                    "k8s-crashloop",
                    _time(last.get("finishedAt")),
                    name,
                    rank,
                    f"pod {name} container {cname}: CrashLoopBackOff after {cs.get('restartCount', '?')} "
                    f"restarts; last exit code {code}"
                    + (f" ({last.get('reason')})" if last.get("reason") else "")
                    + (f": {meaning}" if meaning else ""),
                    {"exit_code": str(code), "restarts": str(cs.get("restartCount", ""))},
                )
            )
    return out


def _event_hits(events: Sequence[Mapping[str, Any]], ranks: Mapping[str, str | None]) -> list[_Hit]:
    out: list[_Hit] = []
    unhealthy: dict[str, str] = {}  # pod -> the last probe failure message before a kill
    ordered = sorted(
        events,
        key=lambda e: str(
            e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or ""
        ),
    )
    for e in ordered:
        obj = e.get("involvedObject", {})
        pod = str(obj.get("name", "?"))
        reason = str(e.get("reason", ""))
        msg = str(e.get("message", "")).strip()
        when = _time(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"))
        rank = ranks.get(pod)
        if reason == "FailedScheduling":
            cat = (
                "k8s-insufficient-gpu"
                if "Insufficient nvidia.com/gpu" in msg
                else "k8s-unschedulable"
            )
            out.append(_Hit(cat, when, pod, rank, f"pod {pod}: FailedScheduling: {msg}", {}))
        elif reason == "Unhealthy" and (
            "Liveness probe failed" in msg or "Startup probe failed" in msg
        ):
            unhealthy[pod] = msg
        elif reason == "Killing" and ("liveness probe" in msg or "startup probe" in msg):
            cat = "k8s-startup-probe-killed" if "startup probe" in msg else "k8s-liveness-killed"
            line = f"pod {pod}: Killing: {msg}"
            if pod in unhealthy:
                line = f"pod {pod}: Unhealthy: {unhealthy[pod]} -> Killing: {msg}"
            out.append(_Hit(cat, when, pod, rank, line, {"probe_failure": unhealthy.get(pod, "")}))
        elif reason == "BackOff" and "Back-off restarting failed container" in msg:
            out.append(_Hit("k8s-crashloop", when, pod, rank, f"pod {pod}: BackOff: {msg}", {}))
    return out


def _fix(category: str, hit: _Hit) -> str:
    where = f"pod {hit.pod}" + (f" (rank {hit.rank})" if hit.rank is not None else "")
    if category == "k8s-insufficient-gpu":
        return (
            "free GPUs or add GPU nodes: every pod of a group needs [cluster] gpus_per_node GPUs "
            "on one node; check `kubectl describe nodes | grep -A5 Allocatable` and lower "
            "gpus_per_node (with tp_size) only if the model fits"
        )
    if category == "k8s-unschedulable":
        return (
            f"read the scheduler's reason for {where}: match [k8s] node_selector to the GPU nodes' "
            "labels and add [k8s] tolerations for their taints"
        )
    if category == "k8s-oom-killed":
        return (
            f"{where} ran out of memory: give the container a higher memory limit (or none), and "
            "remember that /dev/shm ([k8s] shm_size, medium Memory) is charged to it; SGLang's "
            "weight loading also needs host RAM"
        )
    if category == "k8s-startup-probe-killed":
        return (
            f"{where} was still loading when the startupProbe gave up: raise [health] "
            "startup_timeout_s (the probe's period x failureThreshold) above the measured load "
            "time, then `deploy export k8s` again"
        )
    if category == "k8s-liveness-killed":
        return (
            f"{where} stopped answering /health: if it is only slow under load, raise [health] "
            "liveness_timeout_s (SGLang's /health runs a 1-token generation, 20 s timeout) or "
            "liveness_failures; if it hung, classify its previous logs (`kubectl logs --previous "
            f"{hit.pod} > prev.log; deploy logs --classify --input prev.log`)"
        )
    code = hit.detail.get("exit_code", "")
    return (
        f"read why {where} exits (exit code {code or 'unknown'}): `kubectl logs --previous "
        f"{hit.pod} > prev.log && deploy logs --classify --input prev.log`"
    )


def _entry(hit: _Hit) -> JournalEntry:
    ts = int(hit.when.timestamp() * 1_000_000) if hit.when else None
    return JournalEntry(timestamp_us=ts, message=hit.line, source="text", ident=hit.pod)


def diagnose_docs(docs: Sequence[Mapping[str, Any]]) -> Diagnosis:
    """Pods and events -> the most telling failure, earliest first within a kind."""

    pods, events = _items(docs)
    ranks = {
        str(p.get("metadata", {}).get("name")): _rank(p.get("metadata", {}).get("labels"))
        for p in pods
    }
    hits = [h for p in pods for h in _pod_hits(p)] + _event_hits(events, ranks)
    if not hits:
        return Diagnosis(
            category="unknown",
            summary=f"no failure in {len(pods)} pod(s) and {len(events)} event(s): no OOM kill, "
            "probe kill, FailedScheduling or crash loop",
            evidence=[],
            fix="classify the pods' logs: `kubectl logs --prefix --timestamps -l "
            "leaderworkerset.sigs.k8s.io/name=NAME > group.log; deploy logs --classify --input group.log`",
            doc="Kubernetes reports nothing wrong with these pods.",
            title="nothing found",
            role="unknown",
        )

    def key(h: _Hit) -> tuple[int, float]:
        return CATEGORIES[h.category].rank, h.when.timestamp() if h.when else float("inf")

    hits.sort(key=key)
    first = hits[0]
    cat = CATEGORIES[first.category]
    same = [h for h in hits if h.category == first.category]
    evidence = [_entry(h) for h in same[:8]]
    also = sorted(
        {h.category for h in hits if h.category != first.category}, key=lambda c: CATEGORIES[c].rank
    )
    who = f"pod {first.pod}" + (f" (rank {first.rank})" if first.rank is not None else "")
    detail = {
        "pod": first.pod,
        **({"rank": first.rank} if first.rank is not None else {}),
        **first.detail,
    }
    return Diagnosis(
        category=cat.id,
        summary=f"{cat.title}: {who}" + (f", {len(same)} such" if len(same) > 1 else ""),
        evidence=evidence,
        fix=_fix(cat.id, first),
        doc=cat.doc,
        title=cat.title,
        detail={k: v for k, v in detail.items() if v},
        also=also,
    )


def diagnose_text(text: str) -> Diagnosis | None:
    """A diagnosis when `text` is `kubectl get pod|events -o json`; None for anything else."""
    docs = documents(text)
    if docs is None:
        return None
    try:
        return diagnose_docs(docs)
    except (AttributeError, TypeError, ValueError, KeyError, OverflowError) as e:
        # A field of a type kubectl never writes (a list where a pod's status is, a null
        # metadata): bad input, said in one line, not a traceback.

        raise InputError(
            f"the input looks like `kubectl get pod|events -o json` but a field has a type "
            f"kubectl does not write ({type(e).__name__}: {str(e)[:120]})",
            field="--input",
            fix="pass kubectl's own output unedited (kubectl get pods,events -o json > FILE)",
        ) from None
