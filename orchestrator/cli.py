"""The `deploy` command line: thin. Each command reads its inputs, calls one pipeline stage
after another, and prints. Heavy modules are imported inside commands so `--help` is fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from orchestrator.errors import DeployError

app = typer.Typer(
    name="deploy",
    help="Bring up SGLang with EAGLE-3 speculative decoding as systemd services, and say why a launch failed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
UnitDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--unit-dir",
        help="Where unit files live (default /etc/systemd/system, or the user dir with --user).",
    ),
]


def _fail(err: DeployError) -> NoReturn:
    typer.echo(f"deploy: {err.paragraph()}", err=True)
    raise typer.Exit(err.exit_code)


def _out(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


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
    sglang: Annotated[
        bool,
        typer.Option(
            "--sglang",
            help="Also run SGLang's own argument resolution in the profile's interpreter.",
        ),
    ] = False,
) -> None:
    """Preflight: exit 0 when the config will start, 2 when it will not, with every finding named."""
    from dataclasses import replace

    from orchestrator import preflight, profiles

    try:
        spec = profiles.load(profile)
        report = preflight.run(spec, gpu=gpu)
    except DeployError as e:
        _fail(e)
    if sglang:
        report = replace(report, sglang=preflight.sglang_verdict(spec))
    if as_json:
        _out(report.to_json())
    else:
        typer.echo(_report_text(report))
    if not report.ok:
        raise typer.Exit(2)


def _report_text(report: object) -> str:
    from orchestrator.preflight import Report

    assert isinstance(report, Report)
    errors = len(report.errors)
    warnings = sum(f.severity == "warning" for f in report.findings)
    verdict = "will start" if report.ok else "will NOT start"
    lines = [f"{report.name}: {verdict} ({errors} error(s), {warnings} warning(s))"]
    r = report.resolved
    if r.get("speculative_algorithm"):
        lines.append(
            f"  speculative: {r['speculative_algorithm']} steps={r['speculative_num_steps']} "
            f"topk={r['speculative_eagle_topk']} draft_tokens={r['speculative_num_draft_tokens']}"
        )
    ab, ps = r["attention_backend"], r["page_size"]
    lines.append(
        f"  attention backend: {ab['value']} ({ab['set_by']}); page size: {ps['value']} ({ps['set_by']})"
    )
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
) -> None:
    """Render the systemd units for a profile (stdout, --out DIR, or --diff against installed)."""
    from orchestrator import profiles, render
    from orchestrator.files import write_atomically

    try:
        spec = profiles.load(profile)
        files = render.render(spec)
        if show_diff:
            d = render.diff(files, unit_dir or _default_unit_dir(user))
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


def _default_unit_dir(user: bool) -> Path:
    return Path.home() / ".config/systemd/user" if user else Path("/etc/systemd/system")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
