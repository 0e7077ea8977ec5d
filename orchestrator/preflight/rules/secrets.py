"""Secrets and the server's environment.

Secrets stay out of unit files (world-readable): they live in an environment file that root
owns and only root can read (systemd reads it as root at each start). What the environment
may hold is bounded too: variables that make a program load other code (LD_*, PYTHON*, HOME)
are refused wherever they would reach the server, and a key the profile passes to SGLang
(`api_key_env`) must really be in the file, or SGLang would start without authentication.
The file is parsed the way systemd parses it (`orchestrator.envfile`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping

from orchestrator import envfile
from orchestrator.preflight.rules.base import Context, Finding, Rule

# Variables that change what code a process loads: the dynamic loader's (LD_PRELOAD,
# LD_LIBRARY_PATH, ...), Python's (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PYTHONUSERBASE, ...)
# and HOME (~/.local site-packages, dotfiles). PYTHON* variables that only change how output
# is written are allowed.
HARMLESS_PYTHON = frozenset({"PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PYTHONDONTWRITEBYTECODE"})


def code_loading(name: str) -> bool:
    """Whether the variable `name` makes a program load code from elsewhere."""
    if name in HARMLESS_PYTHON:
        return False
    return name.startswith(("LD_", "PYTHON")) or name == "HOME"


def _loading(rule: str, where: str, field: str, names: list[str], fix: str) -> Finding:
    return Finding(
        rule,
        "error",
        (field,),
        f"{where} sets {', '.join(names)}: these make the server load code from wherever they "
        "point (the dynamic loader's LD_*, Python's PYTHON* search paths and start-up files, "
        "HOME's ~/.local site-packages), outside what deploy checks",
        fix,
    )


def unit_environment(ctx: Context) -> Iterator[Finding]:
    env: Mapping[str, str] = ctx.spec.unit.environment
    loading = sorted(k for k in env if code_loading(k))
    if loading:
        yield _loading(
            "environment-code",
            "[unit.environment]",
            "unit.environment",
            loading,
            "remove " + ", ".join(loading) + " from [unit.environment]: install what the server "
            "needs into the interpreter's own environment (unit.python's venv)",
        )


def _owner_ok(ctx: Context, uid: int) -> bool:
    if ctx.user_mode:  # a user manager reads it as the calling user
        return uid in (0, os.geteuid())
    return uid == 0


def environment_file(ctx: Context) -> Iterator[Finding]:
    path = ctx.spec.unit.environment_file
    keys = {n for n in (ctx.spec.unit.api_key_env, ctx.spec.unit.admin_api_key_env) if n}
    if not path:  # api_key_env without a file: refused by the profile loader
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
    if not _owner_ok(ctx, st.st_uid):
        yield Finding(
            "environment-file",
            "error",
            ("unit.environment_file",),
            f"the environment file {path} is owned by uid {st.st_uid}, not root: whoever owns "
            "it decides what the server runs with (an LD_PRELOAD, a PYTHONPATH, a key)",
            f"chown root:root {path} && chmod 0600 {path}",
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        yield Finding(
            "environment-file",
            "error",
            ("unit.environment_file",),
            f"the environment file {path} has mode {stat.S_IMODE(st.st_mode):04o}: other users "
            "can read the secrets in it" + (" or change it" if st.st_mode & 0o022 else ""),
            f"chmod 0600 {path}",
        )
    try:
        parsed = envfile.read(path)
    except OSError as e:
        if keys:
            yield Finding(
                "api-key-env",
                "error" if ctx.on_box else "warning",
                ("unit.api_key_env",),
                f"cannot read {path} ({e.strerror}) to see that it sets {', '.join(sorted(keys))}",
                "run as root (sudo), which is how `deploy up` runs",
            )
        return
    for line, text in parsed.ignored:
        name = text.split("=", 1)[0]
        yield Finding(
            "environment-file",
            "error",
            ("unit.environment_file",),
            f"{path} line {line}: {name!r} is not a variable name; systemd ignores the line, so "
            "the server would run without it",
            f"write it as NAME=value (no 'export', letters, digits and '_' only) in {path}",
        )
    loading = sorted(k for k in parsed.values if code_loading(k))
    if loading:
        yield _loading(
            "environment-file",
            f"the environment file {path}",
            "unit.environment_file",
            loading,
            f"remove {', '.join(loading)} from {path}",
        )
    for field_, var in (
        ("unit.api_key_env", ctx.spec.unit.api_key_env),
        ("unit.admin_api_key_env", ctx.spec.unit.admin_api_key_env),
    ):
        if var and not parsed.values.get(var):
            how = "sets it empty" if var in parsed.values else "does not set it"
            yield Finding(
                "api-key-env",
                "error",
                (field_,),
                f"{field_} is {var}, but {path} {how}: SGLang would refuse every request, or, "
                "had the key been passed as an empty value, start with authentication off",
                f"add the line {var}=<the key> to {path}",
            )


RULES: tuple[Rule, ...] = (
    Rule(
        "environment-file",
        "unit.environment_file exists, is owned by root, has mode 0600 and only lines systemd "
        "accepts; it sets no LD_*, PYTHON* or HOME, and sets every key api_key_env and "
        "admin_api_key_env name.",
        "systemd reads it as root at start; SGLang never sees the file",
        environment_file,
        "secrets",
        also=("api-key-env",),
    ),
    Rule(
        "environment-code",
        "[unit.environment] sets no LD_*, PYTHON* (other than output settings such as "
        "PYTHONUNBUFFERED) or HOME (a URL with a password is refused when the profile loads).",
        "not checked by SGLang: the loader and Python act on these before any SGLang code",
        unit_environment,
        "secrets",
    ),
)
