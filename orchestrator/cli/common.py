"""Plumbing every command shares: error-to-exit mapping and --json output.

Kept light (typer and the error classes only) so each command module can import it without
importing cli.py, and cli.py can import the command modules without a cycle."""

from __future__ import annotations

import json
from typing import NoReturn

import typer

from orchestrator.errors import DeployError


def out(data: object) -> None:
    """Print a --json result."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def fail(err: DeployError, *, as_json: bool = False, profile: str | None = None) -> NoReturn:
    """Report an error and exit with its class's status: 2 refused (nothing changed), 1 failed
    (after a change). With --json, commands that report an outcome (up, rollback) print it
    as {"outcome": "refused" | "failed", ...} on stdout instead."""
    if as_json:
        out(
            {
                "profile": profile,
                "outcome": err.outcome,
                "error": err.paragraph(),
                "findings": [f.to_json() for f in getattr(err, "findings", [])],
            }
        )
    else:
        typer.echo(f"deploy: {err.paragraph()}", err=True)
    raise typer.Exit(err.exit_code)
