"""Plumbing every command shares: error-to-exit mapping, --json output and tables.

Kept light (typer and the error classes only) so each command module can import it without
importing cli.py, and cli.py can import the command modules without a cycle. rich (~30 ms)
is imported inside `table`: `deploy --help` imports this module."""

from __future__ import annotations

import io
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


def table(header: list[str], rows: list[list[str]], *, left: int = 0) -> str:
    """Plain text columns two spaces apart (rich's Table without borders or colour): the
    first `left` columns aligned left (names), the rest right (numbers)."""

    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, pad_edge=False, show_edge=False, header_style=None)
    for i, name in enumerate(header):
        t.add_column(name, justify="left" if i < left else "right", no_wrap=True)
    for row in rows:
        t.add_row(*row)
    buf = io.StringIO()
    Console(file=buf, width=10_000, color_system=None, highlight=False).print(t)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())
