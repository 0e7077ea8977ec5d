"""The server's HTTP port must be free on the box (SGLang never checks it before loading)."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.preflight.ports import listeners
from orchestrator.preflight.rules.base import Context, Finding, Rule


def port_free(ctx: Context) -> Iterator[Finding]:
    if not ctx.on_box:
        return

    port = int(ctx.args.get("port") or 30000)
    own = set(ctx.spec.unit_names)
    others = [lst for lst in listeners(port) if lst.unit not in own]
    if not others:
        return
    held = "; ".join(dict.fromkeys(lst.describe() for lst in others))
    yield Finding(
        "port-free",
        "error",
        ("--port",),
        f"port {port} is already in use by {held}: SGLang binds it only after loading the "
        "model (minutes), then fails with [Errno 98] address already in use, and until then "
        "/health would answer from the other server",
        f"stop what listens there (`ss -ltnp 'sport = :{port}'`) or give this deployment "
        "another port ([server] port)",
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "port-free",
        "On the box, nothing but this deployment's own unit listens on the server's port.",
        "not checked by SGLang: uvicorn fails to bind after the model has loaded",
        port_free,
        "box",
    ),
)
