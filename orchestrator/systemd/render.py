"""Spec -> systemd unit files (text), via the Jinja templates in templates/.

Every value that reaches a unit goes through one of the escaping filters below; values with
newlines or control characters never get here (profiles refuses them), and the filters
refuse them again so no caller can slip one past.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from orchestrator.errors import UnsafeValueError
from orchestrator.profiles.fields import HUB_ID, PATH_BAD_CHAR, writable_tree_problem
from orchestrator.profiles.spec import INCIDENTS_SUFFIX, Spec
from orchestrator.systemd.releases import DEFAULT_STATE_DIR, state_dir
from orchestrator.watch.liveness import Runner, render_context

SAFE_WORD = re.compile(r"^[A-Za-z0-9_@+=:,./-]+$")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# systemd's own line limit is 1 MiB; no value deploy writes comes near this.
MAX_VALUE = 8192
# The check oneshot's checks, in order: the shell test, and the line it prints when the test
# fails ({role}, {dir}, {user} filled in by the shell). Failure i of a role exits with
# CHECK_EXIT_BASE[role] + i, so the cause is known from D-Bus even when the line reaches the
# journal late or without the start's invocation id (journald reads a short-lived process's
# stream after PID 1's exit lines); check_failure_line rebuilds the line from the status.
_CHECKS = (
    ('[ -d "$dir" ]', "deploy-check: {role} directory {dir} does not exist"),
    (
        '[ -r "$dir/config.json" ]',
        "deploy-check: {role} {dir}/config.json is missing or not readable by {user}",
    ),
    (
        'ls "$dir" | grep -Eq "[.](safetensors|bin)$"',
        "deploy-check: {role} {dir} has no weight files (*.safetensors)",
    ),
)
CHECK_FAILURES = tuple(said for _, said in _CHECKS)
CHECK_EXIT_BASE = {"model": 10, "drafter": 20}
# The script; the role, directory and exit base come in as $1, $2 and $3, never spliced in.
CHECK_SCRIPT = (
    "role=$1; dir=$2; e=$3; "
    + "".join(
        f'{test} || {{ echo "{said.format(role="$role", dir="$dir", user="$(id -un)")}" >&2; '
        f"exit $((e+{i})); }}; "
        for i, (test, said) in enumerate(_CHECKS)
    )
    + 'echo "deploy-check: $role $dir ok"'
)


def check_failure_line(spec: Spec, status: str | None, user: str) -> str | None:
    """The line the check oneshot printed before exiting with `status` ("10", as systemd
    writes an exit status), rebuilt from the status; None for any other status."""
    if not status or not status.isdigit():
        return None
    code = int(status)
    for role, path in local_checkpoints(spec):
        i = code - CHECK_EXIT_BASE[role]
        if 0 <= i < len(CHECK_FAILURES):
            return CHECK_FAILURES[i].format(role=role, dir=path, user=user)
    return None


def _refuse_control(value: str) -> str:
    """Refuse what would end the line (a control character) or continue it into the next
    one (a trailing backslash), and what no unit needs (a value over MAX_VALUE)."""
    if CONTROL.search(value):
        raise UnsafeValueError(
            f"refusing to write {value[:200]!r} into a unit file: it contains a control character",
            field="value",
            fix="remove newlines and control characters from the profile",
        )
    if value.endswith("\\"):
        raise UnsafeValueError(
            f"refusing to write {value[:200]!r} into a unit file: a trailing backslash would "
            "join the next line to this one, swallowing that directive",
            field="value",
            fix="remove the trailing backslash from the profile's value",
        )
    if len(value) > MAX_VALUE:
        raise UnsafeValueError(
            f"refusing to write a value of {len(value)} characters into a unit file",
            field="value",
            fix="shorten the profile's value",
        )
    return value


def sd_value(value: object) -> str:
    """A plain setting value: only specifiers (%) are special."""
    return _refuse_control(str(value)).replace("%", "%%")


def sd_comment(value: object) -> str:
    return _refuse_control(str(value))


def sd_path(value: object) -> str:
    """One path in a path or list-of-paths directive (WorkingDirectory=, EnvironmentFile=,
    ReadWritePaths=, StateDirectory=): whitespace would split it into two items, a quote or a
    backslash would be unquoted or unescaped by systemd, so all of them are refused."""

    s = _refuse_control(str(value))
    m = PATH_BAD_CHAR.search(s)
    if m or not s or any(p in (".", "..") for p in s.split("/")):
        raise UnsafeValueError(
            f"refusing to write the path {s[:200]!r} into a unit file: "
            + (f"it holds {m.group()!r}, which" if m else "it is empty or has '.' or '..', which")
            + " would change which paths the directive names",
            field="path",
            fix="use plain absolute paths (no spaces, quotes, backslashes, '.' or '..')",
        )
    return s.replace("%", "%%")


def sd_exec_word(value: object) -> str:
    """One word of an Exec*= command line: quoted when needed, % and $ doubled so systemd
    neither expands specifiers nor environment variables in it."""
    s = _refuse_control(str(value))
    out = s.replace("%", "%%").replace("$", "$$")
    if SAFE_WORD.match(s):
        return out
    return '"' + out.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sd_argv(argv: Sequence[object]) -> str:
    return " ".join(sd_exec_word(a) for a in argv)


def sd_arg(value: object) -> str:
    """A quoted assignment such as Environment="KEY=value" (no $ expansion there)."""
    s = _refuse_control(str(value)).replace("%", "%%")
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def templates_dir() -> Path:
    """templates/ at the top of the project; installed as the orchestrator.templates package."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "templates", here / "templates"):
        if (cand / "sglang.service.j2").exists():
            return cand

    return Path(str(resources.files("orchestrator.templates")))


@cache
def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        sd_value=sd_value, sd_comment=sd_comment, sd_argv=sd_argv, sd_arg=sd_arg, sd_path=sd_path
    )
    return env


def local_checkpoints(spec: Spec) -> list[tuple[str, str]]:
    out = []
    for role, key in (("model", "model_path"), ("drafter", "speculative_draft_model_path")):
        p = spec.server.get(key)
        if isinstance(p, str) and p.startswith("/") and not HUB_ID.match(p):
            out.append((role, p))
    return out


def _state_directory(working_directory: str) -> str | None:
    """/var/lib/X is systemd's StateDirectory=X: created at start, owned by the user."""
    rel = working_directory.rstrip("/").removeprefix("/var/lib/")
    if rel == working_directory.rstrip("/") or not rel or ".." in rel.split("/"):
        return None
    return rel


def recorder_unit(name: str) -> str:
    """The incident recorder of deployment `name` (templates/sglang-incidents.service.j2)."""
    return f"sglang-{name}{INCIDENTS_SUFFIX}.service"


def recorder_argv(spec: Spec, runner: Runner, state_dir: str, user_mode: bool) -> list[str]:
    """What the recorder runs (as root on a system manager): `python -I`, deploy's code by
    its explicit path, the environment file only as a file to read secrets from."""
    argv = ["follow", "--state-dir", state_dir]
    if user_mode:
        argv.append("--user")
    if spec.unit.environment_file:
        argv += ["--secrets-from", spec.unit.environment_file]
    return runner.argv("orchestrator.watch.incidents", *argv, spec.name)


def template_vars(
    spec: Spec,
    *,
    user_mode: bool = False,
    state_root: Path | None = None,
    runner: Runner | None = None,
) -> dict[str, tuple[str, dict[str, object]]]:
    """unit file name -> (template, the variables it is rendered with), for every unit this
    spec needs. Each template gets exactly the variables it uses (a test holds them together,
    so none is passed for nothing, as `gpu=` once was). See `render` for the arguments."""

    runner = runner or Runner.current()
    root = state_root or state_dir()
    # Defence in depth (profiles.load checks the default state dirs): the directory the
    # server may write must not overlap the state dir these units are rendered for.
    why = writable_tree_problem(
        spec.unit.working_directory,
        (str(root), str(DEFAULT_STATE_DIR), str(state_dir())),
        system=True,
    )
    if why is not None and not user_mode:
        raise UnsafeValueError(
            f"unit.working_directory = {spec.unit.working_directory!r} cannot be the server's "
            f"writable directory: {why}",
            field="unit.working_directory",
            fix="give unit.working_directory a directory of its own, such as /var/lib/sglang",
        )
    day2 = render_context(
        spec,
        user_mode=user_mode,
        state_root=root,
        runner=runner,
    )
    recorder = recorder_unit(spec.name)
    out: dict[str, tuple[str, dict[str, object]]] = {
        spec.unit_name: (
            "sglang.service.j2",
            {
                "spec": spec,
                "argv": spec.argv(),
                "timeout_start_s": spec.health.startup_timeout_s + 600,
                "state_directory": _state_directory(spec.unit.working_directory),
                "user_mode": user_mode,
                "watcher": day2["watcher"],
                "recorder": recorder,
            },
        ),
        recorder: (
            "sglang-incidents.service.j2",
            {
                "spec": spec,
                "user_mode": user_mode,
                "recorder_argv": recorder_argv(spec, runner, day2["state_dir"], user_mode),
                "state_dir": day2["state_dir"],
            },
        ),
    }
    if day2["watcher"]:
        out[day2["watcher"]] = (
            "sglang-liveness.service.j2",
            {
                "spec": spec,
                "user_mode": user_mode,
                "watcher_argv": day2["watcher_argv"],
                "ip_allow": day2["ip_allow"],
                "state_dir": day2["state_dir"],
            },
        )
    if spec.unit.check_models:
        checks = local_checkpoints(spec)
        lines = [
            ["/bin/sh", "-c", CHECK_SCRIPT, "deploy-check", role, p, str(CHECK_EXIT_BASE[role])]
            for role, p in checks
        ]
        if not lines:
            lines = [["/bin/echo", "deploy-check: no local checkpoint to check (hub ids only)"]]
        out[spec.check_unit_name] = (
            "sglang-check.service.j2",
            {"spec": spec, "check_argvs": lines, "user_mode": user_mode},
        )
    return out


def render(
    spec: Spec,
    *,
    user_mode: bool = False,
    state_root: Path | None = None,
    runner: Runner | None = None,
) -> dict[str, str]:
    """unit file name -> content, for every unit this spec needs. `user_mode`: for a user
    manager (systemctl --user), which runs units as the calling user: no User=, no sandbox.
    `state_root` (default: releases.state_dir()) is where the incident recorder and the liveness
    watcher keep their records; `runner` how those units run deploy (default: as now)."""
    env = _env()
    units = template_vars(spec, user_mode=user_mode, state_root=state_root, runner=runner)
    return {
        name: env.get_template(template).render(**variables)
        for name, (template, variables) in units.items()
    }


def diff(files: Mapping[str, str], unit_dir: Path) -> str:
    """A unified diff of what is installed in unit_dir against these files ('' = identical)."""
    chunks: list[str] = []
    for name, new in sorted(files.items()):
        path = unit_dir / name
        try:
            old = path.read_text()
        except FileNotFoundError:
            old = ""
        except OSError as e:
            old = f"# cannot read {path}: {e}\n"
        chunks.extend(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=str(path) if old else "/dev/null",
                tofile=f"{path} (rendered)",
            )
        )
    return "".join(chunks)
