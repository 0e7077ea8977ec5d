"""`deploy export k8s PROFILE`: the profile as a LeaderWorkerSet and its Services (and, with
replicas > 1, SGLang's router), after the same preflight as `deploy up`.

Refused (exit 2, nothing on stdout): a profile preflight refuses, a parallelism that does not
fill [cluster] nodes x gpus_per_node, no [k8s] image, models outside the mounted volume.

Imports of stages, asyncio and rich sit inside the functions: `deploy --help` imports this
module, and pays for them only in the command that runs them (orchestrator/cli/__init__.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.cli.common import fail as _fail
from orchestrator.errors import DeployError, PreflightRejected, Refused
from orchestrator.systemd.files import write_atomically

export_app = typer.Typer(
    name="export",
    help="Export a profile for another engine (Kubernetes LeaderWorkerSet).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@export_app.command("k8s")
def export_k8s_cmd(
    profile: Annotated[
        str,
        typer.Argument(
            help="A built-in profile name (see `deploy profiles`) or a path to a .toml file."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write one YAML file per object into this directory."),
    ] = None,
    lws_version: Annotated[
        str | None,
        typer.Option(
            "--lws-version",
            help="The LeaderWorkerSet release installed on the cluster: 0.8, 0.9 or 0.10 "
            "(default: [k8s] lws_version, else 0.10).",
        ),
    ] = None,
    server_dry_run: Annotated[
        bool,
        typer.Option(
            "--server-dry-run",
            help="Also run `kubectl apply --dry-run=server` (needs a reachable cluster with LWS).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Render a LeaderWorkerSet (size = nodes, replicas groups), a Service for the leaders and,
    with replicas > 1, SGLang's router with its RBAC. YAML on stdout, or --out DIR."""

    changed: list[str] = []
    try:
        res = export_k8s(profile, lws_version=lws_version)
        if out is not None:
            changed = write_atomically(res.files, out, field="--out")
    except DeployError as e:
        _fail(e)
    secret_cmd = res.secret_command
    if as_json:
        data = res.to_json()
        if out is not None:
            data["written"] = [str(out / n) for n in res.files]
        typer.echo(json.dumps(data, indent=2))
    elif out is not None:
        for name in res.files:
            typer.echo(f"{out / name}: {'written' if name in changed else 'unchanged'}")
    else:
        typer.echo(res.yaml, nl=False)
    if secret_cmd and not as_json:
        typer.echo(
            f"deploy: create the Secret first (values never go into the YAML): {secret_cmd}",
            err=True,
        )
    if server_dry_run:
        from orchestrator.k8s.validate import server_dry_run as dry_run

        ok, said = dry_run(res.yaml)
        typer.echo(
            f"deploy: kubectl apply --dry-run=server: {'accepted' if ok else 'REFUSED'}", err=True
        )
        if said:
            typer.echo(said, err=True)
        if not ok:
            raise typer.Exit(2)


@dataclass(frozen=True)
class ExportResult:
    profile: str
    lws_version: str
    schema: dict[str, str]  # the closed schema's provenance (CRD file, tag, sha256)
    warnings: list[dict[str, str]]  # preflight's warnings
    secret: str | None
    secret_command: str | None
    objects: list[dict[str, Any]]
    yaml: str
    files: dict[str, str]  # --out DIR: one file per object, in apply order

    def to_json(self) -> dict[str, Any]:
        """Everything but the rendered text (`yaml`, `files`), which --json does not repeat."""
        return {k: v for k, v in asdict(self).items() if k not in ("yaml", "files")}


def export_k8s(profile: str, *, lws_version: str | None = None) -> ExportResult:
    """Load, preflight, build and self-check; everything the command prints, as data."""
    from orchestrator import preflight, profiles
    from orchestrator.k8s import manifests, validate, yamlout

    spec = manifests.with_export_defaults(profiles.load(profile))
    report = preflight.run(spec)
    if not report.ok:
        first = report.errors[0]
        raise PreflightRejected(
            f"preflight refused {spec.name} ({len(report.errors)} error(s)); nothing was exported. "
            f"First: {first.rule}: {first.message}",
            findings=list(report.findings),
            field=", ".join(first.flags) or first.rule,
            fix=first.fix + f" (see `deploy validate {spec.name}` for every finding)",
        )
    exp = manifests.build(spec, lws_version=lws_version)
    for obj in exp.objects:
        if obj["kind"] != "LeaderWorkerSet":
            continue
        bad = validate.schema_errors(obj, exp.lws_version) + validate.webhook_errors(obj)
        if bad:  # deploy's own bug: say so rather than hand the cluster a broken object
            raise Refused(
                f"the rendered LeaderWorkerSet does not validate against LWS {exp.lws_version}: "
                + "; ".join(bad[:3]),
                field="--lws-version",
                fix="try another --lws-version, and report this as a bug in deploy",
            )
    return ExportResult(
        profile=spec.name,
        lws_version=exp.lws_version,
        schema=validate.provenance(exp.lws_version),
        warnings=[
            {"rule": f.rule, "message": f.message}
            for f in report.findings
            if f.severity == "warning"
        ],
        secret=exp.secret_name,
        secret_command=exp.secret_command,
        objects=exp.objects,
        yaml=yamlout.dump(exp.objects),
        files={yamlout.file_name(o, i + 1): yamlout.dump_one(o) for i, o in enumerate(exp.objects)},
    )


def classify_k8s_input(text: str, *, as_json: bool) -> bool:
    """`deploy logs --classify --input` on `kubectl get pod|events -o json`: print the
    diagnosis and say True; False (nothing printed) for any other input."""
    from orchestrator.k8s.pods import diagnose_text

    diag = diagnose_text(text)
    if diag is None:
        return False
    if as_json:
        typer.echo(json.dumps(diag.to_json(), indent=2, default=str))
    else:
        typer.echo(diag.render_text())
    return True
