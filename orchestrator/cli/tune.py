"""`deploy tune`: the command. Thin, like cli.py: read the options, call orchestrator.perf.tune,
print. Registered in cli.py with `app.command("tune")(tune_cmd)`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.cli.common import fail as _fail
from orchestrator.cli.common import out as _out
from orchestrator.cli.common import table as _table
from orchestrator.errors import DeployError, InputError


def _err(line: str) -> None:
    typer.echo(line, err=True)


def tune_cmd(
    profile: Annotated[
        str,
        typer.Argument(help="The deployment's profile: a built-in name or a path to a .toml file."),
    ],
    steps: Annotated[
        str | None,
        typer.Option("--steps", help="speculative_num_steps to try (default 1,3,5,7)."),
    ] = None,
    topk: Annotated[
        str | None,
        typer.Option("--topk", help="speculative_eagle_topk to try (default 1,2,4,8)."),
    ] = None,
    draft_tokens: Annotated[
        str | None,
        typer.Option(
            "--draft-tokens", help="speculative_num_draft_tokens to try (default 2,4,8,16,32)."
        ),
    ] = None,
    adaptive: Annotated[
        bool | None,
        typer.Option(
            "--adaptive/--no-adaptive",
            help="Also try speculative_adaptive (top-k 1; default: where this SGLang has it).",
        ),
    ] = None,
    concurrency: Annotated[
        str | None,
        typer.Option("--concurrency", help="Requests in flight, one level each (default 1,8,32)."),
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option("--requests", help="Requests per level (default 4 per slot, at least 8)."),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            help="sharegpt (default; needs deploy[bench]), FILE (ShareGPT JSON or JSONL), or random.",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed (default 0).")] = None,
    input_len: Annotated[
        int | None,
        typer.Option("--input-len", help="Longest prompt in tokens (default 1024)."),
    ] = None,
    output_len: Annotated[
        int | None,
        typer.Option("--output-len", help="Most tokens generated per request (default 256)."),
    ] = None,
    compare_with: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="The baseline: a saved bench run's JSON (e.g. bench/reference/kimi-k26-baseline.json).",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="The baseline: a profile deployed and measured the same way first (e.g. one that unsets the speculative keys).",
        ),
    ] = None,
    for_concurrency: Annotated[
        int | None,
        typer.Option(
            "--for-concurrency",
            help="The level whose best is written/applied (default: the highest).",
        ),
    ] = None,
    write: Annotated[
        Path | None,
        typer.Option(
            "--write", help="Write FILE.toml: a profile extending this one with the winner."
        ),
    ] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Leave the winner deployed (default: back to the starting release)."
        ),
    ] = False,
    plot_path: Annotated[
        Path | None,
        typer.Option("--plot", help="Write a PNG of tok/s against concurrency per candidate."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the unfinished sweep of this deployment.")
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option("--fresh", help="Start a new sweep even though an unfinished one exists."),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Show the plan (pruned, order) and restart nothing."),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds each start may take (default: the profile's)."),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", help="With --dry-run: judge the grid for this GPU (b200, h200, ...)."
        ),
    ] = None,
    no_nvml: Annotated[
        bool, typer.Option("--no-nvml", help="Do not read the GPUs from NVML.")
    ] = False,
    unit_dir: Annotated[
        Path | None,
        typer.Option("--unit-dir", help="Where unit files live (default /etc/systemd/system)."),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="Releases and sweeps (default $DEPLOY_STATE_DIR or /var/lib/deploy).",
        ),
    ] = None,
    user: Annotated[bool, typer.Option("--user", help="Use the user manager.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Find the fastest EAGLE settings for this box: sweep steps x top-k x draft tokens, each
    deployed like `up` and benchmarked, pruned by preflight first; then back to where it was."""
    import asyncio

    from orchestrator import profiles
    from orchestrator.perf import bench, datasets, tune
    from orchestrator.preflight import gpus
    from orchestrator.sglang import is_eagle_draft

    given = {
        "--steps": steps,
        "--topk": topk,
        "--draft-tokens": draft_tokens,
        "--adaptive": adaptive,
        "--concurrency": concurrency,
        "--requests": requests,
        "--dataset": dataset,
        "--seed": seed,
        "--input-len": input_len,
        "--output-len": output_len,
        "--compare": compare_with,
        "--baseline": baseline,
        "--timeout": timeout,
    }
    try:
        if resume and fresh:
            raise InputError(
                "--resume and --fresh contradict each other",
                field="--resume",
                fix="--resume continues the unfinished sweep; --fresh starts a new one: give one",
            )
        if gpu is not None and not dry_run:
            raise InputError(
                f"--gpu {gpu} judges the grid for another GPU, but a sweep runs on this box's",
                field="--gpu",
                fix="add --dry-run to see the plan for that GPU, or drop --gpu",
            )
        state = bench.state_dir(state_dir)
        spec = profiles.load(profile)
        if not is_eagle_draft(spec.server.get("speculative_algorithm"), spec.sglang.version):
            raise InputError(
                f"{spec.name} does not use EAGLE speculative decoding, so there is nothing to tune",
                field="PROFILE",
                fix='tune a profile with speculative_algorithm = "EAGLE3" (e.g. one extending kimi-k26-eagle3)',
            )
        box = gpus.probe_for_cli(not no_nvml)
        write_path = tune.check_write_path(write, spec) if write is not None else None
        if plot_path is not None:
            from orchestrator.cli.bench import _need_matplotlib

            _need_matplotlib()
        baseline_run = None
        baseline_spec = None
        if resume:
            extra = [k for k, v in given.items() if v is not None]
            if extra:
                raise InputError(
                    f"{', '.join(extra)} would change the saved sweep, and --resume continues "
                    "it with its own options",
                    field=extra[0],
                    fix="drop those options to resume, or start a new sweep with --fresh",
                )
            sweep = tune.unfinished(state, spec.name)
            if sweep is None:
                raise InputError(
                    f"no unfinished sweep of {spec.name} under {tune.tune_dir(state, spec.name)}",
                    field="--resume",
                    fix=f"start one with `deploy tune {profile}` (or give the --state-dir it used)",
                )
            opts = sweep.options
            data, workload = _workload(opts, for_concurrency)
            b = sweep.baseline or {}
            if b.get("kind") == "profile":
                baseline_spec = _baseline_spec(str(b["ref"]), spec)
        else:
            old = tune.unfinished(state, spec.name)
            if old is not None and not fresh and not dry_run:
                done = sum(1 for c in old.candidates if c.outcome in ("measured", "failed"))
                todo = sum(1 for c in old.candidates if c.outcome != "pruned")
                raise InputError(
                    f"a sweep of {spec.name} started {old.started_at} is unfinished "
                    f"({done} of {todo} candidates done; {old.path})",
                    field="--resume",
                    fix=f"continue it with `deploy tune {profile} --resume`, or start over with --fresh",
                )
            if compare_with is not None and baseline is not None:
                raise InputError(
                    "--compare and --baseline both name a baseline",
                    field="--baseline",
                    fix="give a saved run with --compare FILE, or a profile to measure with --baseline PROFILE",
                )
            levels = bench.parse_concurrency(concurrency or "1,8,32")
            opts = {
                "levels": levels,
                "requests": requests,
                "dataset": _dataset_ref(dataset),
                "seed": 0 if seed is None else seed,
                "input_len": 1024 if input_len is None else input_len,
                "output_len": 256 if output_len is None else output_len,
                "timeout_s": timeout,
            }
            bench.check_inputs(levels, requests, opts["input_len"], opts["output_len"])
            if timeout is not None and not 1 <= timeout <= 86400:
                raise InputError(
                    "--timeout must be between 1 and 86400 seconds",
                    field="--timeout",
                    fix="give each start's deadline in seconds, e.g. --timeout 1800",
                )
            if adaptive and not tune.has_adaptive(spec):
                raise InputError(
                    f"--adaptive: SGLang {spec.sglang.version} has no speculative_adaptive",
                    field="--adaptive",
                    fix="drop --adaptive",
                )
            data, workload = _workload(opts, for_concurrency)
            use_adaptive = tune.has_adaptive(spec) if adaptive is None else adaptive
            grid_steps = tune.parse_list(steps or "1,3,5,7", "--steps")
            grid_topk = tune.parse_list(topk or "1,2,4,8", "--topk")
            grid_draft = tune.parse_list(draft_tokens or "2,4,8,16,32", "--draft-tokens", 2, 256)
            opts["grid"] = {
                "steps": grid_steps,
                "topk": grid_topk,
                "draft_tokens": grid_draft,
                "adaptive": use_adaptive,
            }
            if compare_with is not None:
                baseline_run = bench.resolve_other(compare_with, state)
            if baseline is not None:
                baseline_spec = _baseline_spec(baseline, spec)
            points = tune.grid(grid_steps, grid_topk, grid_draft)
            the_plan = tune.plan(
                spec,
                points,
                adaptive=use_adaptive,
                gpu=gpu,
                gpus=box,
                on_box=not dry_run,
                user_mode=user,
            )
            outright = tune.refused_outright(the_plan)
            if outright is not None:
                raise InputError(
                    f"preflight refuses {spec.name} whatever the speculative settings "
                    f"({outright[0]}: {outright[1]}); no setting of the grid can start",
                    field="PROFILE",
                    fix=f"see `deploy validate {profile}` for the finding and its fix, then tune again",
                )
            if not the_plan.candidates:
                raise InputError(
                    f"preflight refused every one of the {the_plan.grid_size} settings "
                    f"({_counts(the_plan.pruned_by_rule)}); nothing to run",
                    field="--topk",
                    fix=f"see `deploy validate {profile}` for why, and give settings it accepts "
                    "(on Blackwell with the default trtllm_mla backend: --topk 1)",
                )
        levels = list(opts["levels"])
        if dry_run:
            if resume:
                _print_plan_of(sweep, as_json)
            else:
                _print_plan(spec, the_plan, opts, data, workload, as_json)
            return
        if not resume:
            tune.tune_dir(state, spec.name).mkdir(parents=True, exist_ok=True)
        with tune.lock(state, spec.name):
            unit_root = unit_dir or _default_unit_dir(user)
            if not resume:
                start = asyncio.run(
                    tune.starting_point(spec, unit_dir=unit_root, state_root=state, user=user)
                )
                sweep = tune.Sweep(
                    name=spec.name,
                    profile=profile
                    if spec.source == "built-in"
                    else str(Path(spec.source).absolute()),
                    started_at=tune.now_iso(),
                    options=opts,
                    start=start,
                    candidates=[*the_plan.candidates, *the_plan.pruned],
                    pruned_by_rule=the_plan.pruned_by_rule,
                    grid_size=the_plan.grid_size,
                    baseline=_baseline_entry(compare_with, baseline_run, baseline),
                    dataset=datasets.describe(data, workload),
                    path=str(tune.new_path(state, spec.name)),
                )
                if old is not None and fresh:
                    old.finished_at, old.end = tune.now_iso(), {"done": True, "action": "abandoned"}
                    tune.save(old)
                tune.save(sweep)
            if not as_json:
                _err(_intro(sweep, resume))
            runner = tune.Runner(
                spec=spec,
                unit_dir=unit_root,
                state_root=state,
                workload=workload,
                dataset=data,
                user=user,
                gpus=box,
                baseline_spec=baseline_spec,
                apply=apply,
                for_concurrency=for_concurrency,
                on_event=None if as_json else _Printer(),
                progress=_progress(spec.unit_name, enabled=not as_json),
            )
            assert sweep is not None
            try:
                sweep = asyncio.run(tune.run(sweep, runner))
            except KeyboardInterrupt:
                _interrupted(profile, sweep)
                raise typer.Exit(130) from None
        written = tune.write_profile(sweep, write_path, for_concurrency) if write_path else None
        plotted = None
        if plot_path is not None:
            runs = tune.runs_for_plot(sweep, baseline_run)
            plotted = bench.plot(runs, plot_path) if runs else None
    except DeployError as e:
        _fail(e)
    result = tune.result_json(sweep)
    result["for_concurrency"] = for_concurrency if for_concurrency is not None else max(levels)
    result["written"] = str(written[0]) if written else None
    result["plot"] = str(plotted) if plotted else None
    if as_json:
        _out(result)
    else:
        typer.echo(result_text(sweep, result))
    measured = any(c.outcome == "measured" for c in sweep.candidates)
    end_ok = (sweep.end or {}).get("outcome") in ("healthy", "stopped")
    raise typer.Exit(0 if measured and end_ok else 1)


def _workload(opts: dict[str, Any], for_concurrency: int | None) -> tuple[Any, Any]:
    """The dataset and the requests of every level, sampled once for the whole sweep."""
    from orchestrator.perf import bench, datasets

    levels = list(opts["levels"])
    if for_concurrency is not None and for_concurrency not in levels:
        raise InputError(
            f"--for-concurrency {for_concurrency} is not one of the levels {levels}",
            field="--for-concurrency",
            fix=f"give one of --concurrency's levels, e.g. --for-concurrency {max(levels)}",
        )
    data = datasets.load(opts["dataset"])
    counts = [opts["requests"] or bench.default_requests(c) for c in levels]
    workload = datasets.sample(
        data,
        counts,
        seed=opts["seed"],
        input_len=opts["input_len"],
        output_len=opts["output_len"],
    )
    return data, workload


def _default_unit_dir(user: bool) -> Path:
    return Path.home() / ".config/systemd/user" if user else Path("/etc/systemd/system")


def _dataset_ref(name: str | None) -> str:
    """The dataset as the sweep saves it: sharegpt, random, or an absolute path."""
    from orchestrator.perf import datasets

    if name is None:
        return datasets.default_name()
    if name in ("sharegpt", "random"):
        return name
    return str(Path(name).expanduser().absolute())


def _baseline_spec(ref: str, spec: Any) -> Any:
    """The --baseline profile, deployed as this deployment (same unit, same state)."""
    from dataclasses import replace

    from orchestrator import profiles

    b = profiles.load(ref)
    return replace(b, name=spec.name)


def _baseline_entry(
    compare_with: str | None, run: Any, profile: str | None
) -> dict[str, Any] | None:
    if run is not None:
        return {
            "kind": "file",
            "ref": compare_with,
            "label": run.label,
            "note": run.note,
            "outcome": "measured",
            "levels": [lv.to_json() for lv in run.levels],
        }
    if profile is not None:
        return {
            "kind": "profile",
            "ref": profile,
            "label": f"baseline {profile}",
            "outcome": "pending",
        }
    return None


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _duration(s: float | None) -> str:
    if s is None:
        return "-"
    n = round(s)
    return f"{n // 3600}:{n % 3600 // 60:02d}:{n % 60:02d}"


def _progress(unit: str, *, enabled: bool) -> Any:
    from orchestrator.cli.progress import UpProgress

    return lambda: UpProgress(unit, enabled=enabled)


class _Printer:
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


def _intro(sweep: Any, resumed: bool) -> str:
    todo = [c for c in sweep.candidates if c.outcome != "pruned"]
    left = sum(1 for c in todo if not c.done)
    head = f"{'resuming' if resumed else 'tuning'} {sweep.name}: {sweep.grid_size} settings in the grid"
    head += f", {sum(sweep.pruned_by_rule.values())} pruned by preflight, {len(todo)} to run"
    if resumed:
        head += f" ({len(todo) - left} done, {left} left)"
    lines = [head]
    if sweep.pruned_by_rule:
        lines.append(f"  pruned before any restart: {_counts(sweep.pruned_by_rule)}")
    ds = sweep.dataset or {}
    lines.append(
        f"  dataset {ds.get('name')} (seed {sweep.options.get('seed')}), concurrency "
        f"{','.join(map(str, sweep.levels))}; sweep file {sweep.path}"
    )
    return "\n".join(lines)


def _interrupted(profile: str, sweep: Any) -> None:
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


def _print_plan(
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
        lines.append(f"pruned before any restart: {_counts(plan.pruned_by_rule)}")
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


def _print_plan_of(sweep: Any, as_json: bool) -> None:
    from orchestrator.perf import tune

    if as_json:
        _out(tune.result_json(sweep))
    else:
        typer.echo(_intro(sweep, True))


def result_text(sweep: Any, result: dict[str, Any]) -> str:
    from orchestrator.perf import tune

    lines = [_intro(sweep, False).splitlines()[0].replace("tuning", "tuned")]
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
        lines.append(f"pruned before any restart ({len(pruned)}): {_counts(sweep.pruned_by_rule)}")
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
