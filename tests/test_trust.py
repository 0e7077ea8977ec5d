"""Who can make root or the server run what (issue 21, items 1, 2 and 5): the code root runs,
the environment file, the server's environment, the API key, and what the service user can
reach. Each preflight refusal, and what systemd itself would do with an environment file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator import envfile, preflight, profiles
from orchestrator.errors import UnsafeValueError
from orchestrator.preflight.rules import trust
from orchestrator.preflight.rules.trust import Account, CodeRoot
from orchestrator.profiles.spec import KEY_LAUNCHER
from tests.helpers import write_profile

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="chown needs root")


def report(tmp_path: Path, *, name: str = "p", user_mode: bool = False, **data: Any) -> Any:
    spec = profiles.load(str(write_profile(tmp_path, name=name, **data)))
    return preflight.run(spec, on_box=True, user_mode=user_mode)


def errors(r: Any, rule: str) -> list[Any]:
    return [f for f in r.findings if f.rule == rule and f.severity == "error"]


def private_env(tmp_path: Path, text: str, name: str = "s.env") -> Path:
    p = tmp_path / name
    p.write_text(text)
    p.chmod(0o600)
    return p


# --------------------------------------------------------------------------- the env file parser


def test_envfile_parses_as_systemd_does() -> None:
    text = (
        "# comment \\\n"
        "  continued comment\n"
        "; also a comment\n"
        "A=1\n"
        "  B = two words  \n"
        'C="dq \\"x\\" \\$HOME \\n"\n'
        "D='sq \\ $x'\n"
        "E=joined\\\n"
        "line\n"
        "F=\n"
        'G="a"b\n'
        "no assignment here\n"
        "export H=1\n"
        "I-J=2\n"
        "A=last wins"
    )
    got = envfile.parse(text)
    assert got.values == {
        "A": "last wins",
        "B": "two words",
        "C": 'dq "x" $HOME \\n',
        "D": "sq \\ $x",
        "E": "joinedline",
        "F": "",
        "G": "ab",
    }
    assert [t.split("=")[0] for _, t in got.ignored] == ["export H", "I-J"]
    assert [n for n, _ in got.ignored] == [13, 14]


def test_redaction_uses_the_same_parser(tmp_path: Path) -> None:
    from orchestrator import redact

    env = private_env(tmp_path, 'KEY="quoted-secret-1"\nOTHER=cont\\\ninued-secret\n')
    assert set(redact.file_values(str(env))) == {"quoted-secret-1", "continued-secret"}


# --------------------------------------------------------------------------- the environment


def test_code_loading_variables_are_refused_in_unit_environment(tmp_path: Path) -> None:
    for bad in ("LD_PRELOAD", "PYTHONPATH", "HOME", "PYTHONSTARTUP"):
        r = report(tmp_path, unit={"environment": {bad: "/srv/x"}})
        (f,) = errors(r, "environment-code")
        assert bad in f.message and f.flags == ("unit.environment",)
    ok = report(tmp_path, unit={"environment": {"PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}})
    assert not errors(ok, "environment-code")


def test_proxy_password_is_refused_in_the_unit_file(tmp_path: Path) -> None:
    """Refused when the profile loads (exit 2 before any rule runs), naming the field and the
    environment file as the place for it."""
    with pytest.raises(UnsafeValueError) as e:
        report(tmp_path, unit={"environment": {"HTTPS_PROXY": "http://bob:hunter2@proxy:3128"}})
    assert e.value.field == "unit.environment.HTTPS_PROXY" and "environment_file" in e.value.fix
    report(tmp_path, unit={"environment": {"HTTPS_PROXY": "http://proxy:3128"}})


def test_code_loading_variables_are_refused_in_the_environment_file(tmp_path: Path) -> None:
    for line in ("LD_PRELOAD=/home/sglang/x.so", "PYTHONPATH=/home/sglang", "HOME=/home/sglang"):
        env = private_env(tmp_path, f"HF_TOKEN=hf_x\n{line}\n")
        r = report(tmp_path, unit={"environment_file": str(env)})
        assert any(line.split("=")[0] in f.message for f in errors(r, "environment-file")), line


def test_a_line_systemd_ignores_is_refused(tmp_path: Path) -> None:
    env = private_env(tmp_path, "export SGLANG_API_KEY=k-123456\n")
    r = report(tmp_path, unit={"environment_file": str(env)})
    assert any("'export SGLANG_API_KEY'" in f.message for f in errors(r, "environment-file"))


@needs_root
def test_environment_file_owned_by_the_service_user_is_refused(tmp_path: Path) -> None:
    env = private_env(tmp_path, "HF_TOKEN=hf_x\n")
    os.chown(env, 65534, 65534)  # whoever: not root
    r = report(tmp_path, unit={"environment_file": str(env), "user": "nobody"})
    assert any("not root" in f.message for f in errors(r, "environment-file"))
    os.chown(env, 0, 0)
    assert not errors(report(tmp_path, unit={"environment_file": str(env)}), "environment-file")


def test_api_key_env_must_be_set_in_the_file(tmp_path: Path) -> None:
    unit: dict[str, Any] = {"api_key_env": "SGLANG_API_KEY"}
    for text, how in (
        ("HF_TOKEN=hf_x\n", "does not set it"),
        ("SGLANG_API_KEY=\n", "sets it empty"),
    ):
        env = private_env(tmp_path, text)
        r = report(tmp_path, unit={**unit, "environment_file": str(env)})
        (f,) = errors(r, "api-key-env")
        assert how in f.message and f.flags == ("unit.api_key_env",)
    env = private_env(tmp_path, 'SGLANG_API_KEY="k-1234567"\n')
    assert not errors(report(tmp_path, unit={**unit, "environment_file": str(env)}), "api-key-env")


def test_security_rules_run_without_preflight(tmp_path: Path) -> None:
    spec = profiles.load(
        str(write_profile(tmp_path, unit={"environment": {"LD_PRELOAD": "/x.so"}}))
    )
    assert any(f.rule == "environment-code" for f in preflight.security(spec))


# --------------------------------------------------------------------------- the API key


def test_api_key_is_not_in_the_command_line(tmp_path: Path) -> None:
    env = private_env(tmp_path, "SGLANG_API_KEY=k-abcdef123\n")
    spec = profiles.load(
        str(
            write_profile(
                tmp_path, unit={"api_key_env": "SGLANG_API_KEY", "environment_file": str(env)}
            )
        )
    )
    argv = [str(a) for a in spec.argv()]
    assert "${SGLANG_API_KEY}" not in " ".join(argv) and "k-abcdef123" not in argv
    assert argv[1:4] == ["-c", KEY_LAUNCHER, "sglang.launch_server"]
    assert "--api-key=env:SGLANG_API_KEY" in argv


def _run_launcher(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    mod = tmp_path / "fakeserver.py"
    mod.write_text(
        "import os, sys\n"
        "cmd = open('/proc/self/cmdline', 'rb').read().decode()\n"
        "print(repr(sys.argv[1:]), 'KEY' in cmd, 'k-secret-42' in cmd, 'K' in os.environ)\n"
    )
    argv = [
        sys.executable,
        "-c",
        KEY_LAUNCHER,
        "fakeserver",
        "--api-key=env:K",
        "--",
        "--port",
        "1",
    ]
    return subprocess.run(
        argv, env={"PYTHONPATH": str(tmp_path), **env}, capture_output=True, text=True, timeout=30
    )


def test_launcher_adds_the_key_in_process_only(tmp_path: Path) -> None:
    r = _run_launcher(tmp_path, {"K": "k-secret-42"})
    assert r.returncode == 0, r.stderr
    # In sys.argv for the server; not in /proc/self/cmdline; not inherited by children.
    assert r.stdout.strip() == "['--port', '1', '--api-key', 'k-secret-42'] False False False"


@pytest.mark.parametrize("env", [{}, {"K": ""}])
def test_launcher_refuses_to_start_without_the_key(tmp_path: Path, env: dict[str, str]) -> None:
    r = _run_launcher(tmp_path, env)
    assert r.returncode == 1 and "K not set or empty" in r.stderr and not r.stdout


# --------------------------------------------------------------------------- the code root runs


def _tree(base: Path) -> CodeRoot:
    """A fake deploy install: interpreter, site-packages, stdlib and the code tree."""
    for d in ("bin", "site", "lib", "src/orchestrator/rules"):
        (base / d).mkdir(parents=True, exist_ok=True)
    (base / "bin/python").write_text("#!/bin/sh\n")
    (base / "bin/python").chmod(0o755)
    (base / "site/dep.pth").write_text("import dep\n")
    (base / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (base / "src/orchestrator/__init__.py").write_text("")
    (base / "src/orchestrator/rules/x.py").write_text("")
    for p in [base, *base.rglob("*")]:
        p.chmod(0o755 if p.is_dir() or p.name == "python" else 0o644)
    return CodeRoot(
        python=str(base / "bin/python"),
        tree=str(base / "src/orchestrator"),
        site_dirs=(str(base / "site"),),
        stdlib=str(base / "lib"),
    )


def test_a_root_owned_install_is_trusted(tmp_path: Path) -> None:
    code = _tree(tmp_path / "ok")
    if ROOT:
        assert list(code.problems()) == []


@pytest.mark.parametrize(
    ("rel", "mode", "what"),
    [
        ("src/orchestrator/rules/x.py", 0o664, "deploy's code"),
        ("src/orchestrator/rules", 0o777, "deploy's code"),
        ("src", 0o775, "deploy's code"),  # a parent of the tree
        ("bin/python", 0o757, "the interpreter"),
        ("site/dep.pth", 0o666, "site-packages"),
        ("site", 0o777, "site-packages"),
        ("pyvenv.cfg", 0o666, "the venv"),
    ],
)
def test_writable_code_is_refused(tmp_path: Path, rel: str, mode: int, what: str) -> None:
    code = _tree(tmp_path / "t")
    (tmp_path / "t" / rel).chmod(mode)
    found = list(code.problems())
    assert any(w == what and rel.split("/")[-1] in why for w, why in found), found


@needs_root
def test_code_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    code = _tree(tmp_path / "t")
    os.chown(tmp_path / "t/src/orchestrator/__init__.py", 65534, 65534)
    assert any("owned by nobody" in why for _, why in code.problems())


def test_sticky_root_directory_is_a_safe_parent(tmp_path: Path) -> None:
    d = tmp_path / "sticky"
    d.mkdir()
    d.chmod(0o1777)
    if ROOT:
        assert trust.unsafe(d, parent=True) is None
    assert trust.unsafe(d) is not None  # but never the code itself


def test_root_code_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _tree(tmp_path / "bad")
    (tmp_path / "bad/src/orchestrator/__init__.py").chmod(0o666)
    monkeypatch.setattr(CodeRoot, "current", classmethod(lambda cls: bad))
    (f,) = errors(report(tmp_path), "root-code")
    assert "__init__.py" in f.message and "writable" in f.message and f.fix
    assert not errors(report(tmp_path, user_mode=True), "root-code")  # nothing runs as root
    good = _tree(tmp_path / "good")
    monkeypatch.setattr(CodeRoot, "current", classmethod(lambda cls: good))
    if ROOT:
        assert not errors(report(tmp_path), "root-code")


# --------------------------------------------------------------------------- the service user


def test_service_user_cannot_use_an_interpreter_under_a_private_dir(tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / "venv/bin").mkdir(parents=True)
    private.chmod(0o700)
    py = private / "venv/bin/python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    nobody = Account.of("nobody", None)
    assert nobody is not None
    assert "cannot enter" in (trust.unreachable(nobody, str(py), 1) or "")
    r = report(tmp_path, unit={"user": "nobody", "python": str(py)})
    (f,) = errors(r, "service-user")
    assert f.flags == ("unit.python",) and "203/EXEC" in f.message
    ok = report(tmp_path, unit={"user": "nobody", "python": "/bin/sh"})
    assert not errors(ok, "service-user")


def test_service_user_cannot_read_a_checkpoint() -> None:
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="deploy-trust-", dir="/tmp"))  # /tmp: every user enters
    try:
        d.chmod(0o755)
        (d / "m").mkdir(mode=0o755)
        (d / "m/config.json").write_text("{}")
        (d / "m/config.json").chmod(0o600)
        stranger = Account(uid=54321, gids=frozenset({54321}), name="stranger")
        assert trust.unreachable(stranger, str(d / "m"), 5) is None
        assert "cannot read" in (trust.unreachable(stranger, str(d / "m/config.json"), 4) or "")
        (d / "m").chmod(0o700)
        assert "cannot read and list" in (trust.unreachable(stranger, str(d / "m"), 5) or "")
    finally:
        shutil.rmtree(d)


def test_tune_goes_through_the_same_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tune` installs candidates (and the winner with --apply) through `up`; its plan refuses
    what `up` would, before any restart."""
    from orchestrator.perf import tune

    bad = _tree(tmp_path / "bad")
    (tmp_path / "bad/site").chmod(0o777)
    monkeypatch.setattr(CodeRoot, "current", classmethod(lambda cls: bad))
    spec = profiles.load(str(write_profile(tmp_path)))
    the_plan = tune.plan(spec, tune.grid([3], [1, 2], [4]), adaptive=False, gpu="b200")
    assert not the_plan.candidates and tune.refused_outright(the_plan) is not None
    assert the_plan.pruned and all("root-code" in c.rules for c in the_plan.pruned)
    user = tune.plan(spec, tune.grid([3], [1], [4]), adaptive=False, gpu="b200", user_mode=True)
    assert all("root-code" not in c.rules for c in user.pruned)
