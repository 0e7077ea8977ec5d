"""CLI start-up speed: `deploy --help` <= 0.3 s and `deploy status` <= 0.4 s wall.

Run (root, for the status part: it boots a throwaway systemd box, see tests/box.py):

    python bench/cli_speed.py [--runs 10] [--json bench/results/cli_speed.json] [--no-box]

--help: timed on the host, as a subprocess, median of --runs, three ways: the `deploy`
console script of this interpreter (judged against the target), `python -m orchestrator.cli`,
and `deploy` as found on PATH (with pyenv that is a bash shim that adds its own time; shown,
not judged).

status: needs a systemd, so it runs inside the box with one healthy deployment (the
stand-in), so it does the D-Bus calls and the HTTP requests (/health, /server_info). It is
timed INSIDE the box by a small Python loop (subprocess.run, time.monotonic), so nsenter's
overhead is not counted. Bytecode caching is left on, as on a real machine.

Also prints `python -X importtime` offenders for each command (best of 3 runs per module):
the top-level imports by cumulative time, the modules by self time, and self time summed per
top-level package. Prints PASS/FAIL per target but always exits 0 (the figures guide the
import trimming; they are not a gate).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HELP_TARGET_S = 0.3
STATUS_TARGET_S = 0.4
SCRIPT = str(Path(sys.executable).parent / "deploy")  # this interpreter's console script
HEAVY = (
    "httpx",
    "httpcore",
    "anyio",
    "dbus_fast",
    "tenacity",
    "rich",
    "jinja2",
    "pydantic",
    "orchestrator.diagnosis.diagnose",
    "orchestrator.diagnosis.journal",
    "orchestrator.preflight",
    "orchestrator.systemd.render",
    "orchestrator.perf.bench",
    "orchestrator.systemd.install",
    "orchestrator.watch.health",
    "orchestrator.systemd.control",
)

# Run inside the box: time each argv `runs` times (after one warm-up), print JSON.
TIMER = r"""
import json, subprocess, sys, time
cmds, runs = json.loads(sys.argv[1]), int(sys.argv[2])
out = {}
for label, argv in cmds.items():
    r = subprocess.run(argv, capture_output=True, text=True)
    xs = []
    for _ in range(runs):
        t = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True)
        xs.append(time.monotonic() - t)
    out[label] = {"argv": argv, "secs": xs, "rc": r.returncode, "stdout": r.stdout[-400:], "stderr": r.stderr[-400:]}
print(json.dumps(out))
"""


def _stats(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {
        "median": round(statistics.median(s), 4),
        "min": round(s[0], 4),
        "max": round(s[-1], 4),
        "runs": len(s),
    }


def time_host(argv: list[str], runs: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    subprocess.run(argv, capture_output=True, env=env, cwd=ROOT)  # warm-up (pyc, page cache)
    xs = []
    rc = 0
    for _ in range(runs):
        t = time.monotonic()
        r = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT)
        xs.append(time.monotonic() - t)
        rc = r.returncode
    return {"argv": argv, "rc": rc, **_stats(xs)}


def parse_importtime(stderr: str) -> list[dict[str, Any]]:
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3:
            continue
        field = parts[2].rstrip()
        level = (len(field) - len(field.lstrip()) - 1) // 2
        rows.append(
            {
                "module": field.strip(),
                "self_ms": int(parts[0]) / 1000,
                "cum_ms": int(parts[1]) / 1000,
                "level": level,
            }
        )
    return rows


def importtime_report(runs_stderr: list[str], top: int = 12) -> dict[str, Any]:
    """Best of the runs per module (less noise), then the offenders."""
    best: dict[str, dict[str, Any]] = {}
    for err in runs_stderr:
        for r in parse_importtime(err):
            b = best.get(r["module"])
            if b is None or r["cum_ms"] < b["cum_ms"]:
                best[r["module"]] = r
    rows = list(best.values())
    per_pkg: dict[str, float] = defaultdict(float)
    for r in rows:
        name = r["module"]
        key = (
            ".".join(name.split(".")[:2]) if name.startswith("orchestrator") else name.split(".")[0]
        )
        per_pkg[key] += r["self_ms"]
    top_level = sorted((r for r in rows if r["level"] == 0), key=lambda r: -r["cum_ms"])
    return {
        "modules": len(rows),
        "total_ms": round(sum(r["self_ms"] for r in rows), 1),
        "top_level_by_cumulative": [
            {"module": r["module"], "cum_ms": round(r["cum_ms"], 1)} for r in top_level[:top]
        ],
        "by_self": [
            {
                "module": r["module"],
                "self_ms": round(r["self_ms"], 1),
                "cum_ms": round(r["cum_ms"], 1),
            }
            for r in sorted(rows, key=lambda r: -r["self_ms"])[:top]
        ],
        "per_package_self_ms": {
            k: round(v, 1) for k, v in sorted(per_pkg.items(), key=lambda kv: -kv[1])[:top]
        },
        "heavy_imported": [h for h in HEAVY if h in best],
    }


def print_importtime(title: str, rep: dict[str, Any]) -> None:
    print(
        f"\n{title}: {rep['modules']} modules, {rep['total_ms']:.0f} ms of imports (self, summed)"
    )
    print("  top-level imports by cumulative ms:")
    for r in rep["top_level_by_cumulative"]:
        print(f"    {r['cum_ms']:7.1f}  {r['module']}")
    print("  per package, self ms summed:")
    for k, v in rep["per_package_self_ms"].items():
        print(f"    {v:7.1f}  {k}")
    print("  heavy modules imported: " + (", ".join(rep["heavy_imported"]) or "none"))


def host_part(runs: int) -> dict[str, Any]:
    env = {**os.environ}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out: dict[str, Any] = {}
    if Path(SCRIPT).exists():
        out["deploy --help (console script)"] = time_host([SCRIPT, "--help"], runs, env)
    out["python -m orchestrator.cli --help"] = time_host(
        [sys.executable, "-m", "orchestrator.cli", "--help"], runs, env
    )
    on_path = shutil.which("deploy")
    if on_path and on_path != SCRIPT:
        out[f"deploy --help (PATH: {on_path})"] = time_host([on_path, "--help"], runs, env)
    errs = [
        subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "orchestrator.cli", "--help"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        ).stderr
        for _ in range(3)
    ]
    out["importtime"] = importtime_report(errs)
    return out


def box_part(runs: int) -> dict[str, Any]:
    from tests.box import Box
    from tests.e2e import deploy, prepare, profile

    with Box() as box:
        prepare(box)
        p = profile("bench-status", port=31400, env={"STANDIN_READY_DELAY_S": "1.0"})
        r = deploy(box, "up", p)
        if r.rc != 0:
            raise RuntimeError(f"up of the status deployment failed: {r.stdout}{r.stderr}")
        env = {"PYTHONDONTWRITEBYTECODE": ""}  # caching on, as on a real machine
        cmds = {
            "deploy status (console script)": [SCRIPT, "status"],
            "python -m orchestrator.cli status": [
                sys.executable,
                "-m",
                "orchestrator.cli",
                "status",
            ],
            "deploy --help (console script, in the box)": [SCRIPT, "--help"],
        }
        t = box.run(
            [sys.executable, "-c", TIMER, json.dumps(cmds), str(runs)], timeout=300, env=env
        )
        if t.returncode != 0:
            raise RuntimeError(f"timer failed in the box: {t.stderr[-2000:]}")
        timed = json.loads(t.stdout)
        out: dict[str, Any] = {
            k: {"argv": v["argv"], "rc": v["rc"], **_stats(v["secs"])} for k, v in timed.items()
        }
        out["status_sample"] = timed["deploy status (console script)"]["stdout"]
        errs = [
            box.run(
                [sys.executable, "-X", "importtime", "-m", "orchestrator.cli", "status"], env=env
            ).stderr
            for _ in range(3)
        ]
        out["importtime"] = importtime_report(errs)
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "cli_speed.json")
    ap.add_argument("--no-box", action="store_true", help="host --help only (no root needed)")
    args = ap.parse_args()
    res: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "targets_s": {"help": HELP_TARGET_S, "status": STATUS_TARGET_S},
        "help": host_part(args.runs),
    }
    if not args.no_box:
        try:
            res["status"] = box_part(args.runs)
        except Exception as e:  # the box is optional here: report and go on
            print(f"cli_speed: status not measured: {e}", file=sys.stderr)
            res["status"] = {"error": str(e)}

    rows = [["command", "where", "median", "min / max", "target", "pass"]]

    def add(label: str, where: str, d: dict[str, Any], target: float | None) -> None:
        ok = "-" if target is None else ("PASS" if d["median"] <= target else "FAIL")
        if d.get("rc"):
            ok += f" (rc {d['rc']})"
        rows.append(
            [
                label,
                where,
                f"{d['median']:.3f} s",
                f"{d['min']:.3f} / {d['max']:.3f} s",
                f"<= {target:g} s" if target else "-",
                ok,
            ]
        )

    for k, v in res["help"].items():
        if k != "importtime":
            add(k, "host", v, HELP_TARGET_S if k == "deploy --help (console script)" else None)
    verdict = {"help": res["help"].get("deploy --help (console script)", {}).get("median")}
    st = res.get("status", {})
    for k, v in st.items():
        if isinstance(v, dict) and "median" in v:
            target = STATUS_TARGET_S if k == "deploy status (console script)" else None
            add(k, "box", v, target)
    verdict["status"] = st.get("deploy status (console script)", {}).get("median")
    res["pass"] = {
        "help": verdict["help"] is not None and verdict["help"] <= HELP_TARGET_S,
        "status": verdict["status"] is not None and verdict["status"] <= STATUS_TARGET_S,
    }
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for i, r in enumerate(rows):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    print_importtime("importtime, deploy --help (host)", res["help"]["importtime"])
    if "importtime" in st:
        print_importtime("importtime, deploy status (box)", st["importtime"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=2) + "\n")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
