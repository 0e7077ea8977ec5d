"""Rendering: golden units, escaping, and `systemd-analyze verify` on what is rendered."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import docs, profiles
from orchestrator.errors import UnsafeValueError
from orchestrator.systemd import render
from tests.helpers import ROOT, write_profile


def test_golden_units_are_current() -> None:
    for rel, text in docs.golden_units().items():
        path = ROOT / rel
        assert path.exists(), f"{rel} missing: run `python -m orchestrator.docs --write`"
        assert path.read_text() == text, (
            f"{rel} differs from the renderer: run `python -m orchestrator.docs --write`"
        )
    on_disk = {p.relative_to(ROOT) for p in (ROOT / "units").rglob("*.service")}
    assert on_disk == set(docs.golden_units()), "units/ holds files no built-in profile renders"


def test_generated_docs_are_current() -> None:
    assert docs.stale() == [], "run `python -m orchestrator.docs --write`"


def test_server_unit_settings() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    text = render.render(spec)[spec.unit_name]
    for line in (
        "Restart=on-failure",
        "RestartSec=30",
        "LimitMEMLOCK=infinity",
        "LimitNOFILE=1048576",
        "User=sglang",
        f"TimeoutStartSec={1800 + 600}",
        "StartLimitBurst=3",
        f"Requires={spec.check_unit_name}",
    ):
        assert line in text.splitlines(), line
    unit_section = text.split("[Service]")[0]
    assert "StartLimitIntervalSec=" in unit_section  # start limits belong in [Unit]
    exec_line = next(ln for ln in text.splitlines() if ln.startswith("ExecStart="))
    assert exec_line.startswith(
        "ExecStart=/opt/sglang/bin/python -m sglang.launch_server --model-path /models/Kimi-K2.6 "
    )
    assert "--tp-size 8" in exec_line
    assert (
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
        in exec_line
    )
    assert "--speculative-draft-attention-backend trtllm_mha" in exec_line


def test_exec_words_are_escaped() -> None:
    assert render.sd_exec_word("/models/Kimi K2.6") == '"/models/Kimi K2.6"'
    assert render.sd_exec_word("100%") == '"100%%"'
    assert render.sd_exec_word("$HOME") == '"$$HOME"'
    assert render.sd_exec_word('a"b\\c') == '"a\\"b\\\\c"'
    assert render.sd_exec_word(";") == '";"'
    assert render.sd_value("50% of %n") == "50%% of %%n"
    with pytest.raises(UnsafeValueError):
        render.sd_exec_word("a\nExecStartPre=/bin/true")
    with pytest.raises(UnsafeValueError):
        render.sd_value("x\r")


def test_hostile_values_stay_in_their_line(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path,
        description="50% %n $USER; rm -rf /",
        server={"model_path": "/models/Kimi K2.6 %h", "served_model_name": 'k"2 $(id)'},
        unit={"environment": {"NOTE": 'say "hi" %i $HOME'}},
    )
    spec = profiles.load(str(p))
    text = render.render(spec)[spec.unit_name]
    assert "Description=50%% %%n $USER; rm -rf /" in text
    assert '"/models/Kimi K2.6 %%h"' in text
    assert '"k\\"2 $$(id)"' in text
    assert 'Environment="NOTE=say \\"hi\\" %%i $HOME"' in text


@pytest.fixture
def analyzable(tmp_path: Path) -> Path:
    """Built-in profiles with executable paths and checkpoints that exist here."""
    if shutil.which("systemd-analyze") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("systemd-analyze is missing: .ci/run must install systemd")
        pytest.skip("systemd-analyze not installed")
    return tmp_path


@pytest.mark.parametrize("builtin", [b.name for b in profiles.builtins()])
def test_systemd_analyze_verify(analyzable: Path, builtin: str) -> None:
    models = analyzable / "models"
    (models / "base").mkdir(parents=True)
    (models / "draft").mkdir(parents=True)
    server = {"model_path": str(models / "base")}
    if "eagle3" in builtin:
        server["speculative_draft_model_path"] = str(models / "draft")
    p = write_profile(
        analyzable,
        name=f"verify-{builtin}",
        extends=builtin,
        server=server,
        unit={"python": sys.executable, "working_directory": str(analyzable), "user": "root"},
    )
    spec = profiles.load(str(p))
    out = analyzable / "units"
    out.mkdir()
    files = render.render(spec)
    for name, text in files.items():
        (out / name).write_text(text)
    proc = subprocess.run(
        ["systemd-analyze", "verify", *(str(out / n) for n in files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sglang" not in proc.stderr, proc.stderr  # no warnings about our units either


def test_diff_against_installed(tmp_path: Path) -> None:
    spec = profiles.load("kimi-k26-eagle3")
    files = render.render(spec)
    assert (
        render.diff(files, tmp_path).count("+++ ") == len(files) == 4
    )  # + check, liveness, incidents
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert render.diff(files, tmp_path) == ""
    (tmp_path / spec.unit_name).write_text(
        files[spec.unit_name].replace("RestartSec=30", "RestartSec=5")
    )
    d = render.diff(files, tmp_path)
    assert "-RestartSec=5" in d and "+RestartSec=30" in d


@pytest.mark.parametrize("user_mode", [False, True])
def test_templates_get_exactly_the_variables_they_use(user_mode: bool) -> None:
    """No variable passed for nothing (the old `gpu=`), none missing."""
    from jinja2 import meta

    env = render._env()
    spec = profiles.load("kimi-k26-eagle3")
    units = render.template_vars(spec, user_mode=user_mode)
    assert {t for t, _ in units.values()} == {
        "sglang.service.j2",
        "sglang-liveness.service.j2",
        "sglang-check.service.j2",
        "sglang-incidents.service.j2",
    }
    for template, variables in units.values():
        assert env.loader is not None
        source = env.loader.get_source(env, template)[0]
        assert meta.find_undeclared_variables(env.parse(source)) == set(variables), template


def test_user_unit_dir_follows_xdg_config_home(tmp_path: Path) -> None:
    """`--user` without --unit-dir means $XDG_CONFIG_HOME/systemd/user, as systemd has it."""
    from typer.testing import CliRunner

    from orchestrator.cli import app

    installed = tmp_path / "cfg" / "systemd" / "user"
    installed.mkdir(parents=True)
    spec = profiles.load("kimi-k26-eagle3")
    for name, text in render.render(spec, user_mode=True).items():
        (installed / name).write_text(text)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home")}
    r = CliRunner().invoke(app, ["render", "kimi-k26-eagle3", "--user", "--diff"], env=env)
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "# installed units are identical to the rendered ones"


def test_the_check_script_exits_with_the_status_its_table_names(tmp_path: Path) -> None:
    """CHECK_SCRIPT (run by /bin/sh as the unit runs it) and CHECK_FAILURES agree: each failed
    check exits with its role's base + its index and prints the line the table rebuilds."""
    spec = profiles.load("kimi-k26-eagle3")
    model = tmp_path / "model"
    cases = []  # (what to make, index in CHECK_FAILURES or None for ok)
    cases.append((lambda: None, 0))
    cases.append((lambda: model.mkdir(), 1))
    cases.append((lambda: (model / "config.json").write_text("{}"), 2))
    cases.append((lambda: (model / "model-00001.safetensors").write_bytes(b""), None))
    for make, index in cases:
        make()
        for role, base in render.CHECK_EXIT_BASE.items():
            r = subprocess.run(
                ["/bin/sh", "-c", render.CHECK_SCRIPT, "deploy-check", role, str(model), str(base)],
                capture_output=True,
                text=True,
                check=False,
            )
            if index is None:
                assert r.returncode == 0 and r.stdout.strip() == f"deploy-check: {role} {model} ok"
                continue
            assert r.returncode == base + index, (role, index, r)
            s = dataclasses.replace(
                spec,
                server={
                    **spec.server,
                    "model_path": str(model),
                    "speculative_draft_model_path": str(model),
                },
            )
            user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
            want = render.CHECK_FAILURES[index].format(role=role, dir=model, user=user)
            assert r.stderr.strip() == want
            assert render.check_failure_line(s, str(r.returncode), user) == want
    assert render.check_failure_line(spec, "1", "sglang") is None
    assert render.check_failure_line(spec, "9/KILL", "sglang") is None
