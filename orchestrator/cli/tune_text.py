"""`deploy tune`'s words: the live event lines on stderr, the dry-run plan, the result table
and what Ctrl-C says (the command itself is orchestrator/cli/tune.py).

Imports of stages, asyncio and rich sit inside the functions: `deploy --help` imports this
module, and pays for them only in the command that runs them (orchestrator/cli/__init__.py)."""

from __future__ import annotations

from typing import Any

import typer

from orchestrator.cli.common import out as _out
from orchestrator.cli.common import table as _table


def _err(line: str) -> None:
    typer.echo(line, err=True)


def rule_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _duration(s: float | None) -> str:
    if s is None:
        return "-"
    n = round(s)
    return f"{n // 3600}:{n % 3600 // 60:02d}:{n % 60:02d}"


def progress_factory(unit: str, *, enabled: bool) -> Any:
    from orchestrator.cli.progress import UpProgress

    return lambda: UpProgress(unit, enabled=enabled)


class Printer:
    """Sweep events as lines on stderr."""

    def __call__(self, ev: dict[str, Any]) -> None:
        t = ev.get("type")
        if t == "deploy":
            where = "baseline" if ev["what"] == "baseline" else f"[{ev['index']}/{ev['total']}]"
            _err(f"{where} {ev['label']}: deploying")
        elif t == "up":
            res = ev["result"]
            if res.unchanged:
                _err(f"    already serving these settings: nothing restarted (release {_rel(res)})")
            elif res.outcome == "healthy":
                _err(f"    healthy after {res.elapsed_s:.1f} s (release {res.release})")
            else:
                d = res.diagnosis
                why = f"{d.category}: {d.summary}" if d is not None else res.detail
                _err(f"    {res.outcome.upper()} (release {res.release}): {why}")
        elif t == "level":
            _err(f"    bench: concurrency {ev['concurrency']}, {ev['requests']} requests")
        elif t == "done":
            c = ev["candidate"]
            if c.outcome == "measured":
                parts = [
                    f"c={lv.concurrency} {_f(lv.output_tok_s)} tok/s accept {_f(lv.accept_length, '{:.2f}')}"
                    for lv in c.levels
                ]
                _err("    " + " | ".join(parts))
                for w in c.warnings:
                    if w.startswith("accept length"):
                        _err(f"    warning: {w}")
            left = ev.get("eta_s")
            _err(
                f"    ETA {_duration(left)}"
                if left is not None
                else "    ETA: after the first restart"
            )
        elif t == "end":
            action = ev.get("action")
            if action == "restoring":
                if ev.get("running"):
                    _err(f"back to release {ev.get('release')}, where the sweep started")
                else:
                    _err("stopping: nothing was serving when the sweep started")
            elif action == "applying":
                _err(f"applying the winner: {ev.get('label')}")
            else:
                _err(str(action))


def _rel(res: Any) -> str:
    return str(res.release) if res.release is not None else "unchanged"


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def intro(sweep: Any, resumed: bool) -> str:
    todo = [c for c in sweep.candidates if c.outcome != "pruned"]
    left = sum(1 for c in todo if not c.done)
    head = f"{'resuming' if resumed else 'tuning'} {sweep.name}: {sweep.grid_size} settings in the grid"
    head += f", {sum(sweep.pruned_by_rule.values())} pruned by preflight, {len(todo)} to run"
    if resumed:
        head += f" ({len(todo) - left} done, {left} left)"
    lines = [head]
    if sweep.pruned_by_rule:
        lines.append(f"  pruned before any restart: {rule_counts(sweep.pruned_by_rule)}")
    ds = sweep.dataset or {}
    lines.append(
        f"  dataset {ds.get('name')} (seed {sweep.options.get('seed')}), concurrency "
        f"{','.join(map(str, sweep.levels))}; sweep file {sweep.path}"
    )
    return "\n".join(lines)


def interrupted(profile: str, sweep: Any) -> None:
    done = sum(1 for c in sweep.candidates if c.outcome in ("measured", "failed"))
    todo = sum(1 for c in sweep.candidates if c.outcome != "pruned")
    start = sweep.start
    back = (
        f"`deploy rollback {profile} --to {start['release']}` goes back now"
        if start.get("running") and start.get("release") is not None
        else f"`deploy down {profile}` stops it now"
    )
    _err(
        f"deploy: interrupted with {done} of {todo} candidates done; the results so far are in "
        f"{sweep.path}. The deployment may be on a candidate's settings now: "
        f"`deploy tune {profile} --resume` continues (without repeating a finished candidate) "
        f"and goes back at the end; {back}."
    )


def print_plan(
    spec: Any, plan: Any, opts: dict[str, Any], data: Any, workload: Any, as_json: bool
) -> None:
    from orchestrator.perf import datasets

    described = datasets.describe(data, workload)
    if as_json:
        _out(
            {
                "profile": spec.name,
                "grid": {
                    "size": plan.grid_size,
                    "pruned": len(plan.pruned),
                    "pruned_by_rule": plan.pruned_by_rule,
                    "run": len(plan.candidates),
                },
                "candidates": [
                    {
                        "settings": c.settings.server(),
                        "outcome": c.outcome,
                        "reason": c.reason,
                        "rules": c.rules,
                        "warnings": c.warnings,
                    }
                    for c in [*plan.candidates, *plan.pruned]
                ],
                "dataset": described,
                "concurrency": opts["levels"],
            }
        )
        return
    n = len(plan.candidates)
    lines = [
        f"{spec.name}: {plan.grid_size} settings in the grid, {len(plan.pruned)} pruned by "
        f"preflight, {n} to run in this order (least risky first):"
    ]
    for i, c in enumerate(plan.candidates, 1):
        lines.append(f"  {i:>3}. {c.settings.label}")
        lines += [f"         warning: {w}" for w in c.warnings]
    lines += [f"  warning (every candidate): {w}" for w in plan.common_warnings]
    if plan.pruned:
        lines.append(f"pruned before any restart: {rule_counts(plan.pruned_by_rule)}")
        lines += _pruned_lines(plan.pruned)
    lines.append(
        f"each candidate: one restart, then {len(opts['levels'])} levels "
        f"({', '.join(map(str, opts['levels']))} in flight) of {described['name']} requests; "
        f"the sweep takes about ({n} + 1) x the load time + {n} x the bench time"
    )
    typer.echo("\n".join(lines))


def _pruned_lines(pruned: list[Any]) -> list[str]:
    """Grouped by the rule that pruned them: the first one's reason, then every setting as
    steps/topk/draft."""
    by: dict[str, list[Any]] = {}
    for c in pruned:
        by.setdefault((c.reason or "?").split(":", 1)[0], []).append(c)
    out = []
    for rule, cs in sorted(by.items(), key=lambda kv: -len(kv[1])):
        out.append(
            f"  {rule} ({len(cs)}): {cs[0].reason.split(': ', 1)[-1] if cs[0].reason else ''}"
        )
        out.append(
            "    steps/topk/draft: "
            + " ".join(
                f"{c.settings.steps}/{c.settings.topk}/{c.settings.draft}"
                + ("a" if c.settings.adaptive else "")
                for c in cs
            )
        )
    return out


def print_plan_of(sweep: Any, as_json: bool) -> None:
    from orchestrator.perf import tune

    if as_json:
        _out(tune.result_json(sweep))
    else:
        typer.echo(intro(sweep, True))


def result_text(sweep: Any, result: dict[str, Any]) -> str:
    from orchestrator.perf import tune

    lines = [intro(sweep, False).splitlines()[0].replace("tuning", "tuned")]
    base = tune.baseline_levels(sweep)
    b = sweep.baseline or {}
    header = ["settings", "c", "out tok/s", "vs base", "TTFT p50 ms", "ITL p50 ms", "accept"]
    rows: list[list[str]] = []
    if b:
        label = b.get("label") or f"baseline {b.get('ref')}"
        if b.get("outcome") == "failed":
            rows.append([label, "-", "FAILED", "", "", "", ""])
        for lv in b.get("levels") or ():
            rows.append(
                [
                    label if not rows else "",
                    str(lv["concurrency"]),
                    _f(lv.get("output_tok_s")),
                    "1.00x" if lv.get("output_tok_s") else "-",
                    _f(lv.get("ttft_p50_ms")),
                    _f(lv.get("itl_p50_ms"), "{:.2f}"),
                    _f(lv.get("accept_length"), "{:.2f}"),
                ]
            )
    notes: list[str] = []
    for c in sweep.candidates:
        if c.outcome == "pruned":
            continue
        if c.outcome != "measured":
            rows.append([c.settings.label, "-", c.outcome.upper(), "", "", "", ""])
            notes.append(f"{c.settings.label}: {c.reason}")
            continue
        for i, lv in enumerate(c.levels):
            sp = tune.speedup(sweep, lv.concurrency, lv.output_tok_s)
            rows.append(
                [
                    c.settings.label if i == 0 else "",
                    str(lv.concurrency),
                    _f(lv.output_tok_s) + ("" if not lv.errors else f" ({lv.errors} failed)"),
                    _f(sp, "{:.2f}x") if base else "-",
                    _f(lv.ttft_p50_ms),
                    _f(lv.itl_p50_ms, "{:.2f}"),
                    _f(lv.accept_length, "{:.2f}"),
                ]
            )
    lines += ["", _table(header, rows, left=1)]
    lines += [f"  {n}" for n in notes]
    pruned = [c for c in sweep.candidates if c.outcome == "pruned"]
    if pruned:
        lines.append(
            f"pruned before any restart ({len(pruned)}): {rule_counts(sweep.pruned_by_rule)}"
        )
    best = result["best"]
    if best:
        lines.append("best per concurrency:")
        for conc, entry in best.items():
            s = tune.Settings.from_server(entry["settings"])
            sp = entry.get("speedup")
            vs = f" ({sp:.2f}x the baseline)" if sp is not None else ""
            if sp is not None and sp < 1:
                vs = f" ({sp:.2f}x the baseline: without speculation is faster at {conc} in flight)"
            lines.append(f"  c={conc}: {s.label}: {_f(entry['output_tok_s'])} tok/s{vs}")
    else:
        lines.append("no candidate was measured")
    warned = {w for c in sweep.candidates for w in c.warnings if w.startswith("accept length")}
    lines += [
        f"warning: {c.settings.label}: {w}"
        for c in sweep.candidates
        for w in c.warnings
        if w in warned
    ]
    end = sweep.end or {}
    action = end.get("action")
    if action == "restored":
        lines.append(
            f"the deployment is back on release {end.get('to_release', '-')} "
            f"(recorded as release {end.get('release')}): {end.get('outcome')}"
        )
    elif action == "unchanged":
        lines.append(
            f"the deployment is on release {end.get('release')}, where it started: nothing restarted"
        )
    elif action == "stopped":
        lines.append("the deployment is stopped, as it was when the sweep started")
    elif action == "applied":
        s = tune.Settings.from_server(end["settings"])
        lines.append(f"applied {s.label}: {end.get('outcome')} (release {end.get('release')})")
    if result.get("written"):
        lines.append(
            f"wrote {result['written']} (the best at concurrency {result['for_concurrency']})"
        )
    if result.get("plot"):
        lines.append(f"plot  {result['plot']}")
    lines.append(f"sweep {sweep.path}")
    return "\n".join(lines)
