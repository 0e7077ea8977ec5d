"""The `deploy` command line: thin. Each command reads its inputs, calls one pipeline stage
after another, and prints.

The stages (profiles, preflight, systemd, perf, k8s, diagnosis) and asyncio are imported
inside the commands: `--help` loads only this package, typer and the error classes, 1.2x
`import typer` (the bar is 1.6x; bench/cli_speed.py); perf.tune alone is ~1 s of imports."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator import redact
from orchestrator.cli.bench import bench_cmd
from orchestrator.cli.common import fail, out
from orchestrator.cli.export import classify_k8s_input, export_app
from orchestrator.cli.tune import tune_cmd
from orchestrator.errors import DeployError, InputError, ProfileError
from orchestrator.systemd.files import default_unit_dir, write_atomically

if TYPE_CHECKING:
    from collections.abc import Sequence

    from orchestrator.diagnosis.journal import JournalEntry
    from orchestrator.preflight import Report
    from orchestrator.profiles.spec import Spec
    from orchestrator.systemd.control import RollbackResult, UpResult
    from orchestrator.systemd.status import DeploymentStatus

app = typer.Typer(
    name="deploy",
    help="Bring up SGLang with EAGLE-3 speculative decoding as systemd services, and say why a launch failed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: typer's rich formatter costs ~130 ms of imports
)

ProfileArg = Annotated[
    str,
    typer.Argument(
        help="A built-in profile name (see `deploy profiles`) or a path to a .toml file."
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
GpuOpt = Annotated[
    str | None, typer.Option("--gpu", help="Target GPU when not read from the box: b200, h200, ...")
]
NoNvmlOpt = Annotated[
    bool, typer.Option("--no-nvml", help="Do not read the GPUs from NVML (judge off the box).")
]
NodeRankOpt = Annotated[
    int | None,
    typer.Option(
        "--node-rank",
        help="This node's rank in a multi-node server ([cluster] nodes > 1): 0 .. nodes-1.",
    ),
]
UnitDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--unit-dir",
        help="Where unit files live (default /etc/systemd/system, or the user dir with --user).",
    ),
]


@app.callback()
def _boundary(ctx: typer.Context) -> None:
    """Every command's output, stdout and stderr, text and JSON, passes through one
    redaction boundary (orchestrator/redact.py) until the command ends."""
    ctx.with_resource(redact.guard())


_fail = fail
_out = out


@app.command("profiles")
def profiles_cmd(as_json: JsonOpt = False) -> None:
    """List the built-in profiles."""
    from orchestrator import profiles

    items = profiles.builtins()
    if as_json:
        _out([{"name": b.name, "description": b.description, "path": b.path} for b in items])
        return
    width = max(len(b.name) for b in items)
    for b in items:
        typer.echo(f"{b.name:<{width}}  {b.description}")


@app.command("validate")
def validate_cmd(
    profile: ProfileArg,
    as_json: JsonOpt = False,
    gpu: GpuOpt = None,
    no_nvml: NoNvmlOpt = False,
    sglang: Annotated[
        bool,
        typer.Option(
            "--sglang",
            help="Also run SGLang's own argument resolution in the profile's interpreter.",
        ),
    ] = False,
) -> None:
    """Preflight: exit 0 when the config will start, 2 when it will not, with every finding named."""

    from orchestrator import preflight, profiles
    from orchestrator.preflight import gpus

    box = gpus.probe_for_cli(not no_nvml)
    try:
        spec = profiles.load(profile)
        report = preflight.run(spec, gpu=gpu, gpus=box)
    except DeployError as e:
        _fail(e)
    if sglang:
        report = replace(report, sglang=preflight.sglang_verdict(spec))
    if as_json:
        _out(report.to_json())
    else:
        typer.echo(_report_text(report))
        if box is not None and box.available:
            typer.echo("\n".join("  " + ln for ln in box.table()))
    if not report.ok:
        raise typer.Exit(2)


def _report_text(report: Report) -> str:
    errors = len(report.errors)
    warnings = sum(f.severity == "warning" for f in report.findings)
    verdict = "will start" if report.ok else "will NOT start"
    lines = [f"{report.name}: {verdict} ({errors} error(s), {warnings} warning(s))"]
    r = report.resolved
    sg = r["sglang"]
    lines.append(f"  judged against SGLang {sg['version']} ({sg['source']})")
    prov = r["provenance"]
    rows: list[tuple[str, object, str]] = []
    if r.get("speculative_algorithm"):
        lines.append(f"  speculative: {r['speculative_algorithm']}")
        for key, label in (
            ("speculative_num_steps", "steps"),
            ("speculative_eagle_topk", "top-k"),
            ("speculative_num_draft_tokens", "draft tokens"),
        ):
            rows.append((label, r[key], prov[key]))
    rows.append(("attention backend", r["attention_backend"]["value"], prov["attention_backend"]))
    rows.append(("page size", r["page_size"]["value"], prov["page_size"]))
    width = max(len(f"{label} {value}") for label, value, _ in rows)
    for label, value, who in rows:
        lines.append(f"    {f'{label} {value}':<{width}}  set by: {who}")
    for f in report.findings:
        lines.append("  " + f.text().replace("\n", "\n  "))
    if report.sglang is not None:
        s = report.sglang
        if not s.available:
            lines.append(f"  SGLang's own check: not available ({s.detail})")
        else:
            lines.append(
                f"  SGLang's own check: {'accepted' if s.accepted else 'rejected'}: {s.detail}"
            )
        if report.disagreement:
            lines.append(f"  DISAGREEMENT: {report.disagreement}")
    return "\n".join(lines)


@app.command("render")
def render_cmd(
    profile: ProfileArg,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the unit files into this directory (atomically)."),
    ] = None,
    show_diff: Annotated[
        bool, typer.Option("--diff", help="Show a unified diff against the installed units.")
    ] = False,
    unit_dir: UnitDirOpt = None,
    user: Annotated[bool, typer.Option("--user", help="The user manager's unit dir.")] = False,
    gpu: GpuOpt = None,
    node_rank: NodeRankOpt = None,
) -> None:
    """Render the systemd units for a profile (stdout, --out DIR, or --diff against installed)."""
    from orchestrator import profiles
    from orchestrator.systemd import render
    from orchestrator.systemd.multinode import with_node_rank

    try:
        spec = with_node_rank(profiles.load(profile), node_rank)
        files = render.render(spec, user_mode=user)
        _render_warnings(spec, gpu)
        if show_diff:
            d = render.diff(files, unit_dir or default_unit_dir(user))
            typer.echo(d if d else "# installed units are identical to the rendered ones", nl=not d)
            return
        if out is not None:
            changed = write_atomically(files, out)
            for name in files:
                typer.echo(f"{out / name}: {'written' if name in changed else 'unchanged'}")
            return
    except DeployError as e:
        _fail(e)
    for i, (name, text) in enumerate(files.items()):
        if i:
            typer.echo()
        typer.echo(f"### {name}")
        typer.echo(text, nl=False)


UserOpt = Annotated[bool, typer.Option("--user", help="Use the user manager (systemctl --user).")]
StateDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Where releases are kept (default /var/lib/deploy, or $DEPLOY_STATE_DIR).",
    ),
]


def _state_root(explicit: Path | None) -> Path:
    from orchestrator.systemd.releases import state_dir

    return state_dir(explicit)


@app.command("up")
def up_cmd(
    profile: ProfileArg,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds to wait for health (default: the profile's startup_timeout_s).",
        ),
    ] = None,
    no_preflight: Annotated[
        bool, typer.Option("--no-preflight", help="Skip preflight (for debugging SGLang itself).")
    ] = False,
    force_restart: Annotated[
        bool,
        typer.Option(
            "--force-restart", help="Restart even when nothing changed and the server is healthy."
        ),
    ] = False,
    no_rollback: Annotated[
        bool,
        typer.Option(
            "--no-rollback", help="On failure, leave it failed (stopped) instead of rolling back."
        ),
    ] = False,
    no_nvml: NoNvmlOpt = False,
    unit_dir: UnitDirOpt = None,
    state_dir: StateDirOpt = None,
    user: UserOpt = False,
    as_json: JsonOpt = False,
    node_rank: NodeRankOpt = None,
) -> None:
    """Preflight, render, install, reload, restart, and wait until healthy (exit 0), failed (1) or refused (2)."""
    import asyncio

    from orchestrator import profiles
    from orchestrator.cli.progress import UpProgress
    from orchestrator.preflight import gpus
    from orchestrator.systemd import control as deployer
    from orchestrator.systemd.multinode import with_node_rank

    try:
        spec = with_node_rank(profiles.load(profile), node_rank)
        if timeout is not None and not 1 <= timeout <= 86400:
            raise InputError(
                "--timeout must be between 1 and 86400 seconds",
                field="--timeout",
                fix="give the wait in seconds, e.g. --timeout 1800",
            )
        with UpProgress(spec.unit_name, enabled=not as_json) as progress:
            res = asyncio.run(
                deployer.up(
                    spec,
                    unit_dir=unit_dir or default_unit_dir(user),
                    state_root=_state_root(state_dir),
                    user=user,
                    timeout_s=timeout,
                    preflight=not no_preflight,
                    force_restart=force_restart,
                    rollback=not no_rollback,
                    gpus=gpus.probe_for_cli(not no_nvml and not no_preflight),
                    on_progress=progress,
                )
            )
    except DeployError as e:
        _fail(e, as_json=as_json, profile=profile)
    if as_json:
        _out(res.to_json())
    else:
        typer.echo(_up_text(res))
    raise typer.Exit(res.exit_code)


UP_AGAIN = ", then run `deploy up` again"


def _unwatched_text(res: UpResult | RollbackResult, then: str = "") -> list[str]:
    """A healthy server whose liveness watcher is not probing it: said, and exit 1."""
    w = res.watcher
    if w is None or not res.unwatched:
        return []
    return [
        f"BUT NOT WATCHED: {w.get('unit')} {w.get('detail')}. The server stays up, but a hang "
        f"will not be noticed or restarted: fix the watcher (`deploy status` shows it){then}"
    ]


def _up_text(res: UpResult) -> str:
    lines = [f"warning: {w['rule']}: {w['message']}" for w in res.warnings]
    lines.extend(a for a in res.actions if a.startswith("found an interrupted"))
    if res.unchanged:
        lines.append(f"{res.unit}: {res.detail} (invocation {res.invocation_id[:12]})")
        return "\n".join(lines + _unwatched_text(res, UP_AGAIN))
    if res.outcome == "healthy":
        lines.append(
            f"{res.unit} is healthy after {res.elapsed_s:.1f} s "
            f"(release {res.release}, invocation {res.invocation_id[:12]})"
        )
        return "\n".join(lines + _unwatched_text(res, UP_AGAIN))
    lines.append(f"{res.unit} {res.outcome.upper()} (release {res.release}): {res.detail}")
    if res.diagnosis is not None:
        lines.append(res.diagnosis.render_text())
    lines.extend(f"  {a}" for a in res.actions if a.startswith("stop "))
    rb = res.rollback
    if rb is not None:
        lines.append(
            f"rolled back to release {rb.to_release} (recorded as release {rb.as_release}): "
            + (rb.outcome if rb.outcome == "healthy" else f"{rb.outcome}, {rb.detail}")
        )
    return "\n".join(lines)


@app.command("status")
def status_cmd(
    profile: Annotated[
        str | None, typer.Argument(help="One deployment (profile name); default: all.")
    ] = None,
    unit_dir: UnitDirOpt = None,
    state_dir: StateDirOpt = None,
    user: UserOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """For each deployment: unit state, since when, restarts, health, and what the server reports."""
    import asyncio

    from orchestrator.systemd import status as status_

    name = None
    try:
        if profile is not None:
            name = _deployment_name(profile)
        res = asyncio.run(
            status_.status(
                unit_dir or default_unit_dir(user),
                state_root=_state_root(state_dir),
                user=user,
                only=name,
            )
        )
    except DeployError as e:
        _fail(e)
    if as_json:
        _out(res.to_json())
        return
    if not res.deployments:
        typer.echo(f"no deployments{f' named {name}' if name else ''} in {res.unit_dir}")
        if name:
            raise typer.Exit(1)
        return
    for d in res.deployments:
        typer.echo(_status_text(d))


def _status_text(d: DeploymentStatus) -> str:
    since = f"for {_ago(d.for_s)}" if d.for_s is not None else ""
    lines = [
        f"{d.profile}  {d.unit}",
        f"  unit:     {d.active_state}/{d.sub_state} {since} (result {d.result}, restarts {d.restarts}, pid {d.main_pid or '-'})",
        f"  health:   {d.health.detail}  ({d.health_url})",
    ]
    s = d.server
    if s:
        spec = ""
        if s.get("speculative_algorithm"):
            spec = f", {s['speculative_algorithm']} steps={s.get('speculative_num_steps')} topk={s.get('speculative_eagle_topk')} draft={s.get('speculative_num_draft_tokens')}"
            if "avg_spec_accept_length" in s:
                spec += f", accept length {s['avg_spec_accept_length']}"
        lines.append(f"  server:   {s.get('model_path')} tp={s.get('tp_size')}{spec}")
    rel = d.release
    if rel:
        lines.append(f"  release:  {rel.number} ({rel.outcome}, {rel.created})")
    from orchestrator.watch.report import status_lines

    lines += status_lines(d.to_json())
    intr = d.interrupted
    if intr:
        lines.append(
            f"  INTERRUPTED: a {intr.get('action')} by pid {intr.get('pid')} since {intr.get('since')} stopped at step "
            f"{intr.get('step')}; run `deploy up` again to finish it"
        )
    return "\n".join(lines)


def _ago(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _deployment_name(profile: str) -> str:
    """A profile argument to the deployment name (see `_try_profile`)."""
    spec = _try_profile(profile)
    return spec.name if spec is not None else profile


@app.command("down")
def down_cmd(
    profile: ProfileArg,
    state_dir: StateDirOpt = None,
    user: UserOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop and disable a deployment; its unit files are kept for the next `up`."""
    import asyncio

    from orchestrator.systemd import control as deployer

    try:
        name = _deployment_name(profile)
        unit = f"sglang-{name}.service"
        res = asyncio.run(deployer.down(name, unit, state_root=_state_root(state_dir), user=user))
    except DeployError as e:
        _fail(e)
    if as_json:
        _out(res.to_json())
    else:
        typer.echo("\n".join(res.actions))


@app.command("history")
def history_cmd(
    profile: ProfileArg, state_dir: StateDirOpt = None, as_json: JsonOpt = False
) -> None:
    """The releases of a deployment (number, time, outcome, diagnosis), and its incidents in
    between (`!`: a stop nobody asked for, or a hang the liveness watcher restarted)."""
    from orchestrator.systemd.releases import history
    from orchestrator.watch import report

    try:
        res = history(_state_root(state_dir), _deployment_name(profile))
    except DeployError as e:
        _fail(e)
    if as_json:
        _out(res.to_json())
        return
    if not res.releases and not res.incidents:
        typer.echo(f"{res.profile}: no releases in {res.dir}")
        return
    timeline = [(report.history_sort_key(i.when), report.history_line(i)) for i in res.incidents]
    for r in res.releases:
        extra = f" diagnosis={r.diagnosis}" if r.diagnosis else ""
        note = (
            f"  ({r.note})"
            if r.note
            else (f"  ({r.source})" if r.source.startswith("rollback") else "")
        )
        line = f"{r.number:4d}  {r.created}  {r.outcome:<11} {r.digest}{extra}{note}"
        timeline.append((report.history_sort_key(r.created), line))
    for _, line in sorted(timeline, key=lambda t: t[0]):
        typer.echo(line)


@app.command("rollback")
def rollback_cmd(
    profile: ProfileArg,
    to: Annotated[
        int | None, typer.Option("--to", help="Release number (default: the last healthy one).")
    ] = None,
    unit_dir: UnitDirOpt = None,
    state_dir: StateDirOpt = None,
    user: UserOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Put back an earlier release's units, restart, and wait until healthy."""
    import asyncio

    from orchestrator import profiles
    from orchestrator.cli.progress import UpProgress
    from orchestrator.systemd import control as deployer

    try:
        spec = profiles.load(profile)
        with UpProgress(spec.unit_name, enabled=not as_json) as progress:
            res = asyncio.run(
                deployer.rollback(
                    spec,
                    unit_dir=unit_dir or default_unit_dir(user),
                    state_root=_state_root(state_dir),
                    to=to,
                    user=user,
                    on_progress=progress,
                )
            )
    except DeployError as e:
        _fail(e, as_json=as_json, profile=profile)
    if as_json:
        _out(res.to_json())
    else:
        typer.echo(
            f"{spec.unit_name}: rolled back to release {res.to_release} (release {res.as_release}): {res.outcome}"
        )
        if res.diagnosis is not None:
            typer.echo(res.diagnosis.summary)
        for line in _unwatched_text(res):
            typer.echo(line)
    raise typer.Exit(res.exit_code)


@app.command("logs")
def logs_cmd(
    profile: Annotated[
        str | None,
        typer.Argument(help="The deployment (profile name or file); optional with --input."),
    ] = None,
    classify: Annotated[
        bool,
        typer.Option(
            "--classify", help="Name the cause of the failed start, the evidence and the fix."
        ),
    ] = False,
    input_file: Annotated[
        str | None,
        typer.Option(
            "--input", help="Classify a saved log (journalctl -o json/short/cat); - for stdin."
        ),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines.")
    ] = False,
    since: Annotated[
        str | None, typer.Option("--since", help="As journalctl --since, e.g. '10 min ago'.")
    ] = None,
    invocation: Annotated[
        str | None,
        typer.Option("--invocation", help="One start by its InvocationID (default: the latest)."),
    ] = None,
    lines: Annotated[
        int | None, typer.Option("-n", "--lines", help="Only the last N lines.")
    ] = None,
    user: UserOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """The journal of one start of a deployment, like journalctl; --classify diagnoses it."""
    from orchestrator.diagnosis import journal

    spec: Spec | None = None
    try:
        if profile is not None:
            spec = _try_profile(profile)
        if profile is None and input_file is None:
            raise InputError(
                "deploy logs needs a deployment or a saved log",
                field="PROFILE",
                fix="name the profile (deploy logs kimi-k26-eagle3) or pass --input FILE",
            )
        unit = spec.unit_name if spec else f"sglang-{profile}.service"
        if spec is None and profile is not None:  # a bare name: the installed unit's secrets
            redact.register_units({unit: _read_unit(default_unit_dir(user) / unit)})
        if input_file is not None:
            text = _read_input(input_file)

            if classify and classify_k8s_input(text, as_json=as_json):  # kubectl ... -o json
                return
            entries: Sequence[JournalEntry] = journal.JournalLines(text)
        else:
            if follow and not classify:
                _follow(unit, invocation, user, since)
                return
            inv = invocation if invocation or since else journal.latest_invocation(unit, user=user)
            entries = journal.read(unit, user=user, invocation=inv, lines=lines, since=since)
        if not classify:
            if as_json:
                for e in entries:
                    typer.echo(json.dumps(e.to_json(), default=str))
            else:
                for e in entries:
                    typer.echo(e.format_short())
            return
        from orchestrator.diagnosis import diagnose

        diag = diagnose.classify(
            entries,
            flags=dict(spec.server) if spec else None,
            release=spec.sglang.release if spec else None,
        )
    except DeployError as e:
        _fail(e)
    if as_json:
        typer.echo(json.dumps(diag.to_json(), indent=2, default=str))
    else:
        typer.echo(diag.render_text())


def _try_profile(profile: str) -> Spec | None:
    """The spec when PROFILE is a profile; None for a bare deployment name with no profile."""
    from orchestrator import profiles
    from orchestrator.profiles.spec import NAME_RE

    try:
        return profiles.load(profile)
    except ProfileError:
        if NAME_RE.match(profile):
            return None
        raise


def _read_input(path: str) -> str:
    """A saved journal (- for stdin), through journal.read_capped: long lines cut, size capped.
    A FIFO is read (`--input <(journalctl ...)`); a device or directory is refused."""

    from orchestrator.diagnosis import journal

    if path == "-":
        return journal.read_capped(sys.stdin.buffer, "the log on stdin", field="--input")
    try:
        with open(path, "rb") as fh:
            if not (stat.S_ISREG(mode := os.fstat(fh.fileno()).st_mode) or stat.S_ISFIFO(mode)):
                raise InputError(
                    f"the log file {path} is not a regular file or a pipe",
                    field="--input",
                    fix="give the path of a saved journal (journalctl -u UNIT -o json > FILE), or - for stdin",
                )
            return journal.read_capped(fh, f"the log file {path}", field="--input")
    except OSError as e:
        raise InputError(
            f"cannot read the log file {path}: {e.strerror}",
            field="--input",
            fix="give the path of a saved journal (journalctl -u UNIT -o json > FILE), or - for stdin",
        ) from None


def _read_unit(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _follow(unit: str, invocation: str | None, user: bool, since: str | None) -> None:
    import asyncio

    from orchestrator.diagnosis import journal

    async def run() -> None:
        async for e in journal.follow(
            unit, invocation=invocation, user=user, lines=10, since=since
        ):
            typer.echo(e.format_short())

    asyncio.run(run())


def _register_bench() -> None:

    app.command("bench")(bench_cmd)
    app.command("tune")(tune_cmd)
    app.add_typer(export_app)  # deploy export k8s


_register_bench()


def _render_warnings(spec: Spec, gpu: str | None) -> None:
    """render renders what it is given, but says on stderr when preflight would refuse it."""
    from orchestrator import preflight

    for text in spec.deprecations.values():
        typer.echo(f"deploy: warning: {text}", err=True)
    report = preflight.run(spec, gpu=gpu)
    for f in report.errors:
        typer.echo(f"deploy: warning: this config will not start: {f.rule}: {f.message}", err=True)


def main() -> None:
    """Run the CLI, then leave without the interpreter's ~0.2 s module teardown: every file
    deploy writes is closed and fsynced by then, so only the output streams need flushing."""
    try:
        with redact.guard():  # also around what typer prints itself, tracebacks included
            app()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            sys.stderr.write(f"{e.code}\n")
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
