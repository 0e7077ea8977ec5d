"""`deploy bench`: the command. Thin, like cli.py: read the options, call orchestrator.perf.bench,
print. Registered in cli.py with `app.command("bench")(bench_cmd)`.

Imports of stages, asyncio and rich sit inside the functions: `deploy --help` imports this
module, and pays for them only in the command that runs them (orchestrator/cli/__init__.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator import redact
from orchestrator.cli.common import fail as _fail
from orchestrator.cli.common import out as _out
from orchestrator.cli.common import table as _table
from orchestrator.errors import DeployError, InputError, ProfileError


def bench_cmd(
    profile: Annotated[
        str,
        typer.Argument(
            help="A built-in profile name, a path to a .toml file, or (with --base-url or --history) a deployment name."
        ),
    ],
    concurrency: Annotated[
        str,
        typer.Option(
            "--concurrency", help="Requests in flight at once, one level each: e.g. 1,8,32."
        ),
    ] = "1,8,32",
    requests: Annotated[
        int | None,
        typer.Option(
            "--requests",
            help="Requests per level (at least the highest concurrency; default 4 per slot, at least 8).",
        ),
    ] = None,
    input_len: Annotated[
        int,
        typer.Option(
            "--input-len",
            help="Longest prompt in tokens: longer conversations are skipped (random: the exact length).",
        ),
    ] = 1024,
    output_len: Annotated[
        int,
        typer.Option(
            "--output-len",
            help="Most tokens generated per request: the conversation's answer length, capped (ignore_eos, exact).",
        ),
    ] = 256,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            help="sharegpt (the default; needs deploy[bench]), FILE (ShareGPT JSON, or JSONL of messages or prompts), or random (acceptance then not representative).",
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed", help="Sampling seed: two runs with one seed send the same requests."
        ),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    compare_with: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="Put this run beside another: a profile name (its latest saved run) or a saved run's JSON file.",
        ),
    ] = None,
    show_history: Annotated[
        bool,
        typer.Option("--history", help="Show the saved runs of PROFILE instead of running."),
    ] = False,
    plot_path: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write a PNG of tok/s against concurrency (needs matplotlib: the bench extra).",
        ),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="Where runs are saved (default $DEPLOY_STATE_DIR or /var/lib/deploy).",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="The server to drive, e.g. http://127.0.0.1:30000 (default: the profile's health URL).",
        ),
    ] = None,
) -> None:
    """Benchmark the deployed server: output tok/s, TTFT, ITL and accept length at each concurrency."""
    import asyncio

    from orchestrator.perf import bench

    try:
        state = bench.state_dir(state_dir)
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise InputError(
                f"--base-url {base_url!r} is not an http(s) URL",
                field="--base-url",
                fix="give the server's base URL, e.g. --base-url http://127.0.0.1:30000",
            )
        spec, name = _target(profile, loose=base_url is not None or show_history)
        if show_history:
            _history(bench, state, name, compare_with, plot_path, as_json)
            return
        levels = bench.parse_concurrency(concurrency)
        bench.check_inputs(levels, requests, input_len, output_len)
        other = bench.resolve_other(compare_with, state) if compare_with else None
        if plot_path is not None:
            _need_matplotlib()
        bench.check_writable(state, name)
        from orchestrator.perf import datasets

        data = datasets.load(dataset)
        target: Any = base_url if base_url is not None else spec
        with _Bars(enabled=not as_json) as bars:
            run = asyncio.run(
                bench.run(
                    target,
                    levels,
                    requests=requests,
                    input_len=input_len,
                    output_len=output_len,
                    profile=name,
                    api_key=spec.server.get("api_key") if spec is not None else None,
                    on_level=bars.level,
                    dataset=data,
                    seed=seed,
                )
            )
        saved = bench.save(run, state)
        rows = bench.compare(run, other) if other is not None else None
        plotted = bench.plot([run, *([other] if other else [])], plot_path) if plot_path else None
    except DeployError as e:
        _fail(e)
    _report(run, saved, other, rows, plotted, as_json)


def _report(
    run: Any, saved: Path, other: Any, rows: Any, plotted: Path | None, as_json: bool
) -> None:
    """The run (and its comparison, plot, where saved) as text or --json; exit 1 when any
    request failed."""
    if as_json:
        _out(
            {
                "run": run.to_json(),
                "saved": str(saved),
                "compare": None
                if other is None
                else {"a": run.label, "b": other.label, "rows": rows},
                "plot": str(plotted) if plotted else None,
            }
        )
    else:
        typer.echo(run_text(run))
        if other is not None and rows is not None:
            typer.echo()
            typer.echo(compare_text(run, other, rows))
        typer.echo(f"\nsaved {saved}")
        if plotted:
            typer.echo(f"plot  {plotted}")
    if sum(lv.errors or 0 for lv in run.levels):
        raise typer.Exit(1)


def _target(profile: str, *, loose: bool) -> tuple[Any, str]:
    """(Spec or None, the deployment name runs are saved under)."""
    from orchestrator import profiles
    from orchestrator.profiles.spec import NAME_RE

    try:
        spec = profiles.load(profile)
    except ProfileError:
        if loose and NAME_RE.match(profile):
            return None, profile
        raise
    return spec, spec.name


def _need_matplotlib() -> None:

    if importlib.util.find_spec("matplotlib") is None:
        from orchestrator.perf.bench import PlotUnavailable

        raise PlotUnavailable(
            "--plot needs matplotlib, which is not installed",
            field="--plot",
            fix="pip install 'deploy[bench]' (or pip install matplotlib), or leave out --plot",
        )


def _history(
    bench: Any,
    state: Path,
    name: str,
    compare_with: str | None,
    plot_path: Path | None,
    as_json: bool,
) -> None:
    runs = bench.history(state, name)
    other = bench.resolve_other(compare_with, state) if compare_with else None
    if other is not None and not runs:
        raise InputError(
            f"no saved bench runs for {name} under {bench.bench_dir(state, name)} to compare",
            field="--history",
            fix=f"bench it first (`deploy bench {name}`) or give the right --state-dir",
        )
    rows = bench.compare(runs[-1], other) if other is not None else None
    plotted = None
    if plot_path is not None and (runs or other):
        plotted = bench.plot([*runs, *([other] if other else [])], plot_path)
    if as_json:
        _out(
            {
                "profile": name,
                "state_dir": str(state),
                "runs": [r.to_json() for r in runs],
                "compare": None
                if other is None
                else {"a": runs[-1].label, "b": other.label, "rows": rows},
                "plot": str(plotted) if plotted else None,
            }
        )
        return
    if not runs:
        typer.echo(f"no saved bench runs for {name} under {bench.bench_dir(state, name)}")
    else:
        typer.echo(history_text(runs))
    if other is not None and rows is not None:
        typer.echo()
        typer.echo(compare_text(runs[-1], other, rows))
    if plotted:
        typer.echo(f"plot  {plotted}")


class _Bars:
    """One rich progress bar per level, on stderr; nothing when disabled (--json)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Any = None

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def _start(self) -> Any:
        """Started at the first level, so a refusal before any request leaves no trace."""

        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("concurrency {task.fields[c]:>4}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            # Numbers only, drawn with cursor controls: below the output boundary (redact).
            console=Console(file=redact.terminal(sys.stderr)),
        )
        self.progress.__enter__()
        return self.progress

    def level(self, concurrency: int, total: int) -> Any:
        if not self.enabled:
            return None
        progress = self.progress or self._start()
        task = progress.add_task("", total=total, c=concurrency)

        def update(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        return update


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def run_text(run: Any) -> str:
    algo = run.speculative_algorithm or "autoregressive"
    ds = run.dataset or {}
    if ds.get("kind") == "chat":
        what = (
            f"{ds.get('requests')} conversations of {ds.get('name')} (seed {run.seed}), "
            f"input <= {run.input_len} / output <= {run.output_len} tokens"
        )
    else:
        what = f"random words, input {run.input_len} / output {run.output_len} tokens"
    head = f"{run.profile}: {run.model} ({algo}) at {run.base_url}, {what}, {run.started_at}"
    rows = []
    for lv in run.levels:
        rows.append(
            [
                str(lv.concurrency),
                f"{lv.ok}/{lv.requests}",
                _f(lv.output_tok_s),
                _f(lv.per_request_tok_s),
                f"{_f(lv.ttft_p50_ms)} / {_f(lv.ttft_p99_ms)}",
                f"{_f(lv.itl_p50_ms, '{:.2f}')} / {_f(lv.itl_p99_ms, '{:.2f}')}",
                _f(lv.accept_length, "{:.2f}"),
            ]
        )
    header = [
        "concurrency",
        "ok",
        "out tok/s",
        "per-req tok/s",
        "TTFT p50/p99 ms",
        "ITL p50/p99 ms",
        "accept len",
    ]
    out = [head, _table(header, rows)]
    for lv in run.levels:
        for e in lv.error_samples:
            out.append(f"  concurrency {lv.concurrency}: {lv.errors} failed, e.g. {e}")
    out += [f"warning: {w}" for w in run.warnings]
    return "\n".join(out)


def compare_text(a: Any, b: Any, rows: list[dict[str, Any]]) -> str:
    body = [
        [
            str(r["concurrency"]),
            _f(r["a_tok_s"]),
            _f(r["b_tok_s"]),
            _f(r["speedup"], "{:.2f}x"),
        ]
        for r in rows
    ]
    lines = [f"A: {a.label}", f"B: {b.label}"]
    if b.note:
        lines.append(f"   ({b.note})")
    lines.append(_table(["concurrency", "A tok/s", "B tok/s", "speedup A/B"], body))
    return "\n".join(lines)


def history_text(runs: list[Any]) -> str:
    cs = sorted({lv.concurrency for r in runs for lv in r.levels})
    header = ["started (UTC)", "algorithm", "in/out", *(f"c={c} tok/s" for c in cs)]
    rows = []
    for r in runs:
        cells = [
            r.started_at or "-",
            r.speculative_algorithm or "autoregressive",
            f"{r.input_len or '-'}/{r.output_len or '-'}",
        ]
        for c in cs:
            lv = r.level(c)
            cells.append(_f(lv.output_tok_s if lv else None))
        rows.append(cells)
    return _table(header, rows)
