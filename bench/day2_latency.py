"""Day-2 latencies and costs, measured in a real systemd (PID 1) box with the SGLang stand-in.

Run (root; boots a throwaway systemd-nspawn box, see tests/box.py):

    python bench/day2_latency.py [--runs 5] [--hang-runs 3] [--json bench/results/day2_latency.json]

crash -> incident on disk (median of --runs)
    The stand-in serves, then dies as SGLang does after a CUDA illegal memory access while
    drafting (STANDIN_CRASH_AFTER_S=1: the traceback, then SIGKILL of the tree). From PID 1's
    "Main process exited" journal entry (its __REALTIME_TIMESTAMP) to the incident file's
    mtime (both CLOCK_REALTIME of the same kernel). Also: to the incident's own recorded_us,
    and the stop hook's run time (PID 1's "Failed with result" line, logged once ExecStopPost=
    has finished, minus the exit line). A fresh deployment per run; `down` after each.

hang -> restart (median of --hang-runs)
    STANDIN_HANG_AFTER_S=1 (alive, /health never answers again) under a liveness watcher with
    interval 1 s, 2 failures, 1 s timeout. From the hang (the stand-in's "fired up" line + 1 s)
    to the "hung" incident on disk and to PID 1's "Started" line of the next invocation. The
    bound the tests hold it to is interval x failures + 5 s; what to expect is about
    interval x failures + the probe phase (<= interval) + the probe timeout.

CPU cost of one liveness probe
    A healthy deployment, watcher interval 1 s. The watcher's CPU time (utime + stime of its
    main process, /proc/PID/stat) over --probe-seconds, divided by the probes it made in that
    time (counted from the stand-in's access log: one "GET /health" line each). Each probe is a
    D-Bus read of the unit, one HTTP GET, and liveness.json rewritten. For scale: the CPU time
    of a one-shot process doing one probe (what a timer + oneshot design would pay per probe).

Prints a table and writes JSON. Exit status 2 when the box is unavailable or a run misbehaves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.box import Box, BoxUnavailable  # noqa: E402
from tests.e2e import deploy, prepare, profile, show  # noqa: E402

DEADLINE_S = 120.0
LIVENESS = {"liveness_interval_s": 1, "liveness_failures": 2, "liveness_timeout_s": 1}
FAST = {"STANDIN_READY_DELAY_S": "1.0"}


class BenchError(RuntimeError):
    pass


def _stats(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"median": None, "min": None, "max": None}
    return {
        "median": round(statistics.median(xs), 3),
        "min": round(min(xs), 3),
        "max": round(max(xs), 3),
    }


def _wait(what: str, check: Any, deadline_s: float = DEADLINE_S) -> Any:
    t = time.monotonic()
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() - t > deadline_s:
            raise BenchError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _journal(box: Box, *matches: str) -> list[dict[str, Any]]:
    out = box.run(["journalctl", "-b", "-o", "json", "--no-pager", *matches]).stdout
    return [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]


def _lines(box: Box, holding: str, *matches: str) -> list[dict[str, Any]]:
    return [
        e
        for e in _journal(box, *matches)
        if isinstance(e.get("MESSAGE"), str) and holding in e["MESSAGE"]
    ]


def _files(box: Box, name: str) -> list[str]:
    r = box.run(["sh", "-c", 'ls "$1" 2>/dev/null', "sh", f"/var/lib/deploy/{name}/incidents"])
    return [f for f in r.stdout.split() if f.endswith(".json")]


def _stat_incident(box: Box, name: str, fname: str) -> tuple[int, dict[str, Any]]:
    path = f"/var/lib/deploy/{name}/incidents/{fname}"
    code = (
        "import json, os, sys; p = sys.argv[1]; "
        "print(json.dumps([os.stat(p).st_mtime_ns // 1000, json.load(open(p))]))"
    )
    r = box.run([sys.executable, "-c", code, path])
    mtime, data = json.loads(r.stdout)
    return int(mtime), data


def crash_run(box: Box, i: int) -> dict[str, Any]:
    name = f"b2-crash-{i}"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=31400 + i,
        env={**FAST, "STANDIN_CRASH_AFTER_S": "1", "STANDIN_CRASH": "illegal-memory"},
        unit_extra={"restart_sec": 600},
        health=LIVENESS,
    )
    up = deploy(box, "up", p, "--json")
    if up.rc != 0:
        raise BenchError(f"up {name}: {up.stdout}{up.stderr}")
    inv = up.json()["invocation_id"]
    (fname,) = _wait("the incident", lambda: _files(box, name))
    mtime_us, inc = _stat_incident(box, name, fname)
    (exited,) = _wait(
        "the exit line",
        lambda: _lines(box, "Main process exited", f"UNIT={unit}", f"INVOCATION_ID={inv}"),
    )
    (failed,) = _wait(
        "the result line",
        lambda: _lines(box, "Failed with result", f"UNIT={unit}", f"INVOCATION_ID={inv}"),
    )
    exit_us = int(exited["__REALTIME_TIMESTAMP"])
    deploy(box, "down", name)
    return {
        "name": name,
        "category": inc["category"],
        "kind": inc["kind"],
        "exit_to_file_s": round((mtime_us - exit_us) / 1e6, 3),
        "exit_to_recorded_s": round((inc["recorded_us"] - exit_us) / 1e6, 3),
        "hook_s": round((int(failed["__REALTIME_TIMESTAMP"]) - exit_us) / 1e6, 3),
    }


def hang_run(box: Box, i: int) -> dict[str, Any]:
    name = f"b2-hang-{i}"
    unit = f"sglang-{name}.service"
    p = profile(
        name,
        port=31420 + i,
        env={**FAST, "STANDIN_HANG_AFTER_S": "1"},
        unit_extra={"restart_sec": 600},
        health=LIVENESS,
    )
    up = deploy(box, "up", p, "--json")
    if up.rc != 0:
        raise BenchError(f"up {name}: {up.stdout}{up.stderr}")
    first = up.json()["invocation_id"]

    def new_invocation() -> str | None:
        inv = show(box, unit, "InvocationID")["InvocationID"]
        return inv if inv and inv != first else None

    second = _wait("the restart", new_invocation)
    (ready,) = _lines(box, "fired up and ready to roll", f"_SYSTEMD_INVOCATION_ID={first}")
    hung_us = int(ready["__REALTIME_TIMESTAMP"]) + 1_000_000
    (started,) = _wait(
        "the new start",
        lambda: _lines(box, "Started sglang-", f"UNIT={unit}", f"INVOCATION_ID={second}"),
    )
    (fname,) = [f for f in _files(box, name) if "-hung-" in f][:1]
    mtime_us, inc = _stat_incident(box, name, fname)
    deploy(box, "down", name)
    return {
        "name": name,
        "kind": inc["kind"],
        "hang_to_incident_s": round((mtime_us - hung_us) / 1e6, 3),
        "hang_to_restart_s": round((int(started["__REALTIME_TIMESTAMP"]) - hung_us) / 1e6, 3),
    }


def _cpu_s(box: Box, pid: int) -> float:
    stat = box.run(["cat", f"/proc/{pid}/stat"]).stdout
    fields = stat[stat.rfind(")") + 2 :].split()
    ticks = int(box.run(["getconf", "CLK_TCK"]).stdout.strip() or 100)
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def probe_cost(box: Box, seconds: float) -> dict[str, Any]:
    name = "b2-probe"
    watcher = f"sglang-{name}-liveness.service"
    p = profile(name, port=31440, env=FAST, health=LIVENESS)
    up = deploy(box, "up", p, "--json")
    if up.rc != 0:
        raise BenchError(f"up {name}: {up.stdout}{up.stderr}")
    inv = up.json()["invocation_id"]
    pid = int(show(box, watcher, "MainPID")["MainPID"])

    def health_gets() -> int:
        return len(_lines(box, '"GET /health HTTP/1.1" 200', f"_SYSTEMD_INVOCATION_ID={inv}"))

    _wait("the first probe", lambda: health_gets() > 1)
    n0, c0, t0 = health_gets(), _cpu_s(box, pid), time.monotonic()
    time.sleep(seconds)  # the watcher runs on its own cadence; we only sample it
    n1, c1, t1 = health_gets(), _cpu_s(box, pid), time.monotonic()
    rss_kb = int(
        next(
            ln.split()[1]
            for ln in box.run(["cat", f"/proc/{pid}/status"]).stdout.splitlines()
            if ln.startswith("VmRSS:")
        )
    )
    probes = n1 - n0
    url = "http://127.0.0.1:31440/health"
    # The same probe as a process of its own (what a timer + oneshot design pays each time).
    one_shot = (
        "import resource, subprocess, sys; "
        "subprocess.run([sys.executable, '-P', '-c', "
        "'import sys; from orchestrator.watch.liveness import probe; probe(sys.argv[1], 5)', "
        "sys.argv[1]], check=True); "
        "r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime + r.ru_stime)"
    )
    shots = []
    for _ in range(5):
        r = box.run([sys.executable, "-c", one_shot, url])
        if r.returncode != 0:
            raise BenchError(f"one-shot probe: {r.stderr[-500:]}")
        shots.append(float(r.stdout.strip()))
    deploy(box, "down", name)
    if probes <= 0:
        raise BenchError("the watcher made no probe")
    return {
        "seconds": round(t1 - t0, 1),
        "probes": probes,
        "watcher_cpu_s": round(c1 - c0, 3),
        "cpu_ms_per_probe": round((c1 - c0) / probes * 1000, 2),
        "watcher_rss_mb": round(rss_kb / 1024, 1),
        "one_shot_process_cpu_ms": _stats([x * 1000 for x in shots]),
    }


def _git() -> dict[str, Any]:
    def g(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return {"commit": g("rev-parse", "HEAD"), "dirty": bool(g("status", "--porcelain"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="crash runs (median)")
    ap.add_argument("--hang-runs", type=int, default=3, help="hang runs (median)")
    ap.add_argument("--probe-seconds", type=float, default=30.0)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "day2_latency.json")
    args = ap.parse_args()
    results: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "python": sys.version.split()[0],
        },
        "git": _git(),
        "setup": {"liveness": LIVENESS, "stand_in": "ready after 1 s; crash/hang 1 s after ready"},
    }
    try:
        box = Box().start()
    except (BoxUnavailable, OSError, subprocess.SubprocessError) as e:
        print(f"day2_latency: the systemd box is unavailable: {e}", file=sys.stderr)
        return 2
    try:
        prepare(box)
        crash_run(box, 0)  # warm-up (pyc, page cache), not counted
        crashes = []
        for i in range(1, args.runs + 1):
            r = crash_run(box, i)
            crashes.append(r)
            print(f"crash run {i}: {r}", flush=True)
        hangs = []
        for i in range(1, args.hang_runs + 1):
            r = hang_run(box, i)
            hangs.append(r)
            print(f"hang run {i}: {r}", flush=True)
        probe = probe_cost(box, args.probe_seconds)
        print(f"probe: {probe}", flush=True)
    except BenchError as e:
        print(f"day2_latency: {e}", file=sys.stderr)
        return 2
    finally:
        box.stop()
    results["crash_to_incident"] = {
        "runs": crashes,
        "exit_to_file_s": _stats([r["exit_to_file_s"] for r in crashes]),
        "exit_to_recorded_s": _stats([r["exit_to_recorded_s"] for r in crashes]),
        "hook_s": _stats([r["hook_s"] for r in crashes]),
    }
    results["hang_to_restart"] = {
        "runs": hangs,
        "hang_to_incident_s": _stats([r["hang_to_incident_s"] for r in hangs]),
        "hang_to_restart_s": _stats([r["hang_to_restart_s"] for r in hangs]),
        "bound_s": LIVENESS["liveness_interval_s"] * LIVENESS["liveness_failures"] + 5,
    }
    results["probe"] = probe
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    c, h = results["crash_to_incident"], results["hang_to_restart"]
    print()
    print(
        f"crash -> incident on disk:  median {c['exit_to_file_s']['median']} s "
        f"(min {c['exit_to_file_s']['min']}, max {c['exit_to_file_s']['max']}; n={len(crashes)}); "
        f"stop hook {c['hook_s']['median']} s"
    )
    print(
        f"hang -> restart:            median {h['hang_to_restart_s']['median']} s "
        f"(incident at {h['hang_to_incident_s']['median']} s; bound {h['bound_s']} s; n={len(hangs)})"
    )
    print(
        f"one liveness probe:         {probe['cpu_ms_per_probe']} ms CPU "
        f"({probe['probes']} probes in {probe['seconds']} s; watcher RSS {probe['watcher_rss_mb']} MB; "
        f"a one-shot probe process: {probe['one_shot_process_cpu_ms']['median']} ms)"
    )
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
