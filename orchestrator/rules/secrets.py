"""Secrets stay out of unit files: they live in an environment file only root (or the
service user) can read."""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Iterator

from orchestrator.rules.base import Context, Finding, Rule


def environment_file(ctx: Context) -> Iterator[Finding]:
    path = ctx.spec.unit.environment_file
    if not path:
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        yield Finding(
            "environment-file",
            "error" if ctx.on_box else "warning",
            ("unit.environment_file",),
            f"the environment file {path} does not exist"
            + ("; systemd would refuse to start the unit" if ctx.on_box else " on this machine"),
            f"create {path} (owner root, mode 0600) with the secrets as NAME=value lines",
        )
        return
    except OSError as e:
        yield Finding(
            "environment-file",
            "error" if ctx.on_box else "warning",
            ("unit.environment_file",),
            f"the environment file {path} cannot be inspected: {e.strerror}",
            "run as root, or check the path",
        )
        return
    try:
        service_uid = pwd.getpwnam(ctx.spec.unit.user).pw_uid
    except KeyError:
        service_uid = None
    if st.st_uid not in (0, service_uid):
        yield Finding(
            "environment-file",
            "error",
            ("unit.environment_file",),
            f"the environment file {path} is owned by uid {st.st_uid}, neither root nor the service user "
            f"{ctx.spec.unit.user}: whoever owns it can change what the server runs with",
            f"chown root:root {path}",
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        yield Finding(
            "environment-file",
            "error",
            ("unit.environment_file",),
            f"the environment file {path} has mode {stat.S_IMODE(st.st_mode):04o}: other users can read the secrets in it",
            f"chmod 0600 {path}",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "environment-file",
        "unit.environment_file exists, is owned by root or the service user, and has mode 0600 (no group/other access).",
        "systemd reads it as root at start; SGLang never sees the file",
        environment_file,
        "secrets",
    ),
)
