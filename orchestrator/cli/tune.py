"""`deploy tune`: the command. Thin, like cli.py: read the options, call orchestrator.perf.tune,
print. Registered in cli.py with `app.command("tune")(tune_cmd)`.

Imports of stages, asyncio and rich sit inside the functions: `deploy --help` imports this
module, and pays for them only in the command that runs them (orchestrator/cli/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from orchestrator.cli import tune_text
from orchestrator.cli.bench import _need_matplotlib
from orchestrator.cli.common import fail as _fail
from orchestrator.cli.common import out as _out
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
    asked = _Asked(
        profile=profile,
        steps=steps,
        topk=topk,
        draft_tokens=draft_tokens,
        adaptive=adaptive,
        concurrency=concurrency,
        requests=requests,
        dataset=dataset,
        seed=seed,
        input_len=input_len,
        output_len=output_len,
        compare_with=compare_with,
        baseline=baseline,
        timeout=timeout,
        for_concurrency=for_concurrency,
        gpu=gpu,
        dry_run=dry_run,
        user=user,
        fresh=fresh,
    )
    try:
        setup = _setup(
            asked,
            resume=resume,
            no_nvml=no_nvml,
            state_dir=state_dir,
            write=write,
            plot=plot_path is not None,
        )
        prepared = _plan_resumed(asked, setup) if resume else _plan_new(asked, setup)
        if dry_run:
            _print_dry_run(setup, prepared, as_json)
            return
        sweep = _run_sweep(asked, setup, prepared, unit_dir=unit_dir, apply=apply, as_json=as_json)
        written, plotted = _outputs(sweep, setup, prepared, for_concurrency, plot_path)
    except DeployError as e:
        _fail(e)
    _report(sweep, prepared, for_concurrency, written, plotted, as_json)


@dataclass(frozen=True)
class _Asked:
    """The options of one `deploy tune` that shape the sweep (the rest go where they are used)."""

    profile: str
    steps: str | None
    topk: str | None
    draft_tokens: str | None
    adaptive: bool | None
    concurrency: str | None
    requests: int | None
    dataset: str | None
    seed: int | None
    input_len: int | None
    output_len: int | None
    compare_with: str | None
    baseline: str | None
    timeout: float | None
    for_concurrency: int | None
    gpu: str | None
    dry_run: bool
    user: bool
    fresh: bool

    def sweep_options(self) -> dict[str, Any]:
        """The options a resumed sweep takes from its saved file: any of them given is refused."""
        return {
            "--steps": self.steps,
            "--topk": self.topk,
            "--draft-tokens": self.draft_tokens,
            "--adaptive": self.adaptive,
            "--concurrency": self.concurrency,
            "--requests": self.requests,
            "--dataset": self.dataset,
            "--seed": self.seed,
            "--input-len": self.input_len,
            "--output-len": self.output_len,
            "--compare": self.compare_with,
            "--baseline": self.baseline,
            "--timeout": self.timeout,
        }


@dataclass
class _Setup:
    """What every sweep needs, new or resumed: the profile, the state dir, this box's GPUs and
    the checked --write path."""

    spec: Any  # profiles.Spec
    state: Path
    box: Any  # gpus.GpuReport, or None without NVML
    write_path: Path | None


@dataclass
class _Prepared:
    """A sweep ready to run: a resumed one (`sweep`) or the plan of a new one (`plan`)."""

    opts: dict[str, Any]
    data: Any  # datasets.Dataset
    workload: Any  # datasets.sample(): one tuple of items per level
    sweep: Any = None  # tune.Sweep, when resumed
    plan: Any = None  # tune.Plan, when new
    old: Any = None  # an unfinished sweep that --fresh abandons
    baseline_spec: Any = None
    baseline_run: Any = None  # bench.BenchRun of --compare


def _setup(
    asked: _Asked,
    *,
    resume: bool,
    no_nvml: bool,
    state_dir: Path | None,
    write: Path | None,
    plot: bool,
) -> _Setup:
    """Refuse contradicting options, load the profile (an EAGLE one), read the GPUs."""
    from orchestrator import profiles
    from orchestrator.perf import bench, tune
    from orchestrator.preflight import gpus
    from orchestrator.sglang import is_eagle_draft

    if resume and asked.fresh:
        raise InputError(
            "--resume and --fresh contradict each other",
            field="--resume",
            fix="--resume continues the unfinished sweep; --fresh starts a new one: give one",
        )
    if asked.gpu is not None and not asked.dry_run:
        raise InputError(
            f"--gpu {asked.gpu} judges the grid for another GPU, but a sweep runs on this box's",
            field="--gpu",
            fix="add --dry-run to see the plan for that GPU, or drop --gpu",
        )
    state = bench.state_dir(state_dir)
    spec = profiles.load(asked.profile)
    if not is_eagle_draft(spec.server.get("speculative_algorithm"), spec.sglang.version):
        raise InputError(
            f"{spec.name} does not use EAGLE speculative decoding, so there is nothing to tune",
            field="PROFILE",
            fix='tune a profile with speculative_algorithm = "EAGLE3" (e.g. one extending kimi-k26-eagle3)',
        )
    box = gpus.probe_for_cli(not no_nvml)
    write_path = tune.check_write_path(write, spec) if write is not None else None
    if plot:
        _need_matplotlib()
    return _Setup(spec, state, box, write_path)


def _plan_resumed(asked: _Asked, setup: _Setup) -> _Prepared:
    """--resume: the unfinished sweep with its own saved options (none may be given again)."""
    from orchestrator.perf import tune

    spec = setup.spec
    extra = [k for k, v in asked.sweep_options().items() if v is not None]
    if extra:
        raise InputError(
            f"{', '.join(extra)} would change the saved sweep, and --resume continues "
            "it with its own options",
            field=extra[0],
            fix="drop those options to resume, or start a new sweep with --fresh",
        )
    sweep = tune.unfinished(setup.state, spec.name)
    if sweep is None:
        raise InputError(
            f"no unfinished sweep of {spec.name} under {tune.tune_dir(setup.state, spec.name)}",
            field="--resume",
            fix=f"start one with `deploy tune {asked.profile}` (or give the --state-dir it used)",
        )
    opts = sweep.options
    data, workload = _workload(opts, asked.for_concurrency)
    b = sweep.baseline or {}
    baseline_spec = _baseline_spec(str(b["ref"]), spec) if b.get("kind") == "profile" else None
    return _Prepared(opts, data, workload, sweep=sweep, baseline_spec=baseline_spec)


def _plan_new(asked: _Asked, setup: _Setup) -> _Prepared:
    """A new sweep: check the options, sample the workload, and let preflight prune the grid
    (refused when an unfinished sweep exists, unless --fresh or --dry-run)."""
    from orchestrator.perf import bench, tune

    spec, state, profile = setup.spec, setup.state, asked.profile
    old = tune.unfinished(state, spec.name)
    if old is not None and not asked.fresh and not asked.dry_run:
        done = sum(1 for c in old.candidates if c.outcome in ("measured", "failed"))
        todo = sum(1 for c in old.candidates if c.outcome != "pruned")
        raise InputError(
            f"a sweep of {spec.name} started {old.started_at} is unfinished "
            f"({done} of {todo} candidates done; {old.path})",
            field="--resume",
            fix=f"continue it with `deploy tune {profile} --resume`, or start over with --fresh",
        )
    if asked.compare_with is not None and asked.baseline is not None:
        raise InputError(
            "--compare and --baseline both name a baseline",
            field="--baseline",
            fix="give a saved run with --compare FILE, or a profile to measure with --baseline PROFILE",
        )
    levels = bench.parse_concurrency(asked.concurrency or "1,8,32")
    opts: dict[str, Any] = {
        "levels": levels,
        "requests": asked.requests,
        "dataset": _dataset_ref(asked.dataset),
        "seed": 0 if asked.seed is None else asked.seed,
        "input_len": 1024 if asked.input_len is None else asked.input_len,
        "output_len": 256 if asked.output_len is None else asked.output_len,
        "timeout_s": asked.timeout,
    }
    bench.check_inputs(levels, asked.requests, opts["input_len"], opts["output_len"])
    if asked.timeout is not None and not 1 <= asked.timeout <= 86400:
        raise InputError(
            "--timeout must be between 1 and 86400 seconds",
            field="--timeout",
            fix="give each start's deadline in seconds, e.g. --timeout 1800",
        )
    if asked.adaptive and not tune.has_adaptive(spec):
        raise InputError(
            f"--adaptive: SGLang {spec.sglang.version} has no speculative_adaptive",
            field="--adaptive",
            fix="drop --adaptive",
        )
    data, workload = _workload(opts, asked.for_concurrency)
    use_adaptive = tune.has_adaptive(spec) if asked.adaptive is None else asked.adaptive
    grid_steps = tune.parse_list(asked.steps or "1,3,5,7", "--steps")
    grid_topk = tune.parse_list(asked.topk or "1,2,4,8", "--topk")
    grid_draft = tune.parse_list(asked.draft_tokens or "2,4,8,16,32", "--draft-tokens", 2, 256)
    opts["grid"] = {
        "steps": grid_steps,
        "topk": grid_topk,
        "draft_tokens": grid_draft,
        "adaptive": use_adaptive,
    }
    baseline_run = (
        bench.resolve_other(asked.compare_with, state) if asked.compare_with is not None else None
    )
    baseline_spec = _baseline_spec(asked.baseline, spec) if asked.baseline is not None else None
    the_plan = tune.plan(
        spec,
        tune.grid(grid_steps, grid_topk, grid_draft),
        adaptive=use_adaptive,
        gpu=asked.gpu,
        gpus=setup.box,
        on_box=not asked.dry_run,
        user_mode=asked.user,
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
            f"({tune_text.rule_counts(the_plan.pruned_by_rule)}); nothing to run",
            field="--topk",
            fix=f"see `deploy validate {profile}` for why, and give settings it accepts "
            "(on Blackwell with the default trtllm_mla backend: --topk 1)",
        )
    return _Prepared(
        opts,
        data,
        workload,
        plan=the_plan,
        old=old,
        baseline_spec=baseline_spec,
        baseline_run=baseline_run,
    )


def _print_dry_run(setup: _Setup, prepared: _Prepared, as_json: bool) -> None:
    """--dry-run: the plan (a resumed sweep's, or the new one's); nothing restarts."""
    if prepared.sweep is not None:
        tune_text.print_plan_of(prepared.sweep, as_json)
    else:
        p = prepared
        tune_text.print_plan(setup.spec, p.plan, p.opts, p.data, p.workload, as_json)


def _run_sweep(
    asked: _Asked,
    setup: _Setup,
    prepared: _Prepared,
    *,
    unit_dir: Path | None,
    apply: bool,
    as_json: bool,
) -> Any:
    """Under the deployment's tune lock: record where it starts and save the new sweep (an
    abandoned one closed), then run it; Ctrl-C says how to resume and exits 130."""
    import asyncio

    from orchestrator.perf import datasets, tune

    spec, state, user = setup.spec, setup.state, asked.user
    resumed = prepared.sweep is not None
    if not resumed:
        tune.tune_dir(state, spec.name).mkdir(parents=True, exist_ok=True)
    with tune.lock(state, spec.name):
        unit_root = unit_dir or _default_unit_dir(user)
        sweep = prepared.sweep
        if sweep is None:
            the_plan, old = prepared.plan, prepared.old
            start = asyncio.run(
                tune.starting_point(spec, unit_dir=unit_root, state_root=state, user=user)
            )
            sweep = tune.Sweep(
                name=spec.name,
                profile=asked.profile
                if spec.source == "built-in"
                else str(Path(spec.source).absolute()),
                started_at=tune.now_iso(),
                options=prepared.opts,
                start=start,
                candidates=[*the_plan.candidates, *the_plan.pruned],
                pruned_by_rule=the_plan.pruned_by_rule,
                grid_size=the_plan.grid_size,
                baseline=_baseline_entry(asked.compare_with, prepared.baseline_run, asked.baseline),
                dataset=datasets.describe(prepared.data, prepared.workload),
                path=str(tune.new_path(state, spec.name)),
            )
            if old is not None and asked.fresh:
                old.finished_at, old.end = tune.now_iso(), {"done": True, "action": "abandoned"}
                tune.save(old)
            tune.save(sweep)
        if not as_json:
            _err(tune_text.intro(sweep, resumed))
        runner = tune.Runner(
            spec=spec,
            unit_dir=unit_root,
            state_root=state,
            workload=prepared.workload,
            dataset=prepared.data,
            user=user,
            gpus=setup.box,
            baseline_spec=prepared.baseline_spec,
            apply=apply,
            for_concurrency=asked.for_concurrency,
            on_event=None if as_json else tune_text.Printer(),
            progress=tune_text.progress_factory(spec.unit_name, enabled=not as_json),
        )
        try:
            return asyncio.run(tune.run(sweep, runner))
        except KeyboardInterrupt:
            tune_text.interrupted(asked.profile, sweep)
            raise typer.Exit(130) from None


def _outputs(
    sweep: Any,
    setup: _Setup,
    prepared: _Prepared,
    for_concurrency: int | None,
    plot_path: Path | None,
) -> tuple[Any, Any]:
    """--write's profile and --plot's PNG, when asked: (written, plotted), None each if not."""
    from orchestrator.perf import bench, tune

    written = (
        tune.write_profile(sweep, setup.write_path, for_concurrency) if setup.write_path else None
    )
    plotted = None
    if plot_path is not None:
        runs = tune.runs_for_plot(sweep, prepared.baseline_run)
        plotted = bench.plot(runs, plot_path) if runs else None
    return written, plotted


def _report(
    sweep: Any,
    prepared: _Prepared,
    for_concurrency: int | None,
    written: Any,
    plotted: Any,
    as_json: bool,
) -> NoReturn:
    """The result (text or --json); exit 0 when something was measured and the deployment
    ended healthy or stopped as it started, else 1."""
    from orchestrator.perf import tune

    levels = list(prepared.opts["levels"])
    result = tune.result_json(sweep)
    result["for_concurrency"] = for_concurrency if for_concurrency is not None else max(levels)
    result["written"] = str(written[0]) if written else None
    result["plot"] = str(plotted) if plotted else None
    if as_json:
        _out(result)
    else:
        typer.echo(tune_text.result_text(sweep, result))
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
