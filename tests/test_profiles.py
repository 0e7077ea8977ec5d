"""Profiles: loading, inheritance, and every kind of bad input refused with field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import profiles
from orchestrator.errors import ProfileError, UnsafeValueError
from tests.helpers import write_profile


def test_builtins_listed_and_loadable() -> None:
    names = {b.name for b in profiles.builtins()}
    assert {"kimi-k26", "kimi-k26-eagle3"} <= names
    spec = profiles.load("kimi-k26-eagle3")
    assert spec.server["tp_size"] == 8
    assert spec.server["speculative_algorithm"] == "EAGLE3"
    assert spec.unit_name == "sglang-kimi-k26-eagle3.service"
    assert spec.health.startup_timeout_s == 1800
    assert spec.provenance["server.tp_size"] == "kimi-k26 (built-in)"
    assert spec.provenance["server.speculative_num_steps"] == "kimi-k26-eagle3 (built-in)"
    assert spec.provenance["unit.restart_sec"] == "default"


def test_extends_and_overrides(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path, name="mine", server={"port": 31000}, unset=["server.served_model_name"]
    )
    spec = profiles.load(str(p))
    assert spec.name == "mine"
    assert spec.server["port"] == 31000 and spec.health.port == 31000
    assert "served_model_name" not in spec.server
    assert spec.server["speculative_num_steps"] == 3
    assert spec.provenance["server.port"] == str(p)
    assert spec.chain[1:] == ("kimi-k26-eagle3 (built-in)", "kimi-k26 (built-in)")


def test_health_host_follows_server_host(tmp_path: Path) -> None:
    spec = profiles.load(str(write_profile(tmp_path, server={"host": "0.0.0.0"})))
    assert spec.health.host == "127.0.0.1"


def _err(tmp_path: Path, text: str) -> ProfileError:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ProfileError) as ei:
        profiles.load(str(p))
    return ei.value


BAD = [
    ("malformed", 'extends = "kimi-k26"\n[server\n', "PROFILE", "not valid TOML"),
    (
        "unknown-server-key",
        'extends = "kimi-k26"\n[server]\nspeculative_eagle_topK = 2\n',
        "server.speculative_eagle_topK",
        "did you mean 'speculative_eagle_topk'",
    ),
    (
        "flag-spelling",
        'extends = "kimi-k26"\n[server]\ntp = 8\n',
        "server.tp",
        "did you mean 'tp_size'",
    ),
    ("unknown-top", 'extends = "kimi-k26"\n[servr]\n', "servr", "did you mean 'server'"),
    (
        "unknown-unit-key",
        'extends = "kimi-k26"\n[unit]\npyton = "/usr/bin/python3"\n',
        "unit.pyton",
        "did you mean 'python'",
    ),
    (
        "wrong-type-int",
        'extends = "kimi-k26"\n[server]\ntp_size = "8"\n',
        "server.tp_size",
        "must be an integer",
    ),
    (
        "wrong-type-bool",
        'extends = "kimi-k26"\n[server]\ntrust_remote_code = "yes"\n',
        "server.trust_remote_code",
        "true or false",
    ),
    (
        "bool-for-int",
        'extends = "kimi-k26"\n[server]\nspeculative_num_steps = true\n',
        "server.speculative_num_steps",
        "integer",
    ),
    (
        "out-of-range",
        'extends = "kimi-k26"\n[server]\nport = 70000\n',
        "server.port",
        "out of range",
    ),
    (
        "mem-fraction",
        'extends = "kimi-k26"\n[server]\nmem_fraction_static = 1.5\n',
        "server.mem_fraction_static",
        "out of range",
    ),
    (
        "startup-timeout",
        'extends = "kimi-k26"\n[health]\nstartup_timeout_s = 0\n',
        "health.startup_timeout_s",
        "out of range",
    ),
    (
        "relative-python",
        'extends = "kimi-k26"\n[unit]\npython = "python3"\n',
        "unit.python",
        "absolute path",
    ),
    (
        "bad-user",
        'extends = "kimi-k26"\n[unit]\nuser = "root; rm"\n',
        "unit.user",
        "user or group name",
    ),
    (
        "env-key",
        'extends = "kimi-k26"\n[unit.environment]\n"A B" = "1"\n',
        "unit.environment.A B",
        "environment variable",
    ),
    (
        "no-cli",
        'extends = "kimi-k26"\n[server]\nsampling_backend = "pytorch"\n',
        "server.sampling_backend",
        "no longer a command-line flag",
    ),
    ("bad-name", 'extends = "kimi-k26"\nname = "Kimi K26"\n', "name", "cannot name a unit"),
    ("no-python", '[server]\nmodel_path = "/m"\n', "unit.python", "missing"),
    ("no-model", '[unit]\npython = "/usr/bin/python3"\n', "server.model_path", "missing"),
    ("gpu", 'extends = "kimi-k26"\n[hardware]\ngpu = "rtx9090"\n', "hardware.gpu", "not one of"),
    ("unset-form", 'extends = "kimi-k26"\nunset = ["tp_size"]\n', "unset", "table.key"),
]


@pytest.mark.parametrize(("case", "text", "field", "words"), BAD, ids=[b[0] for b in BAD])
def test_bad_input(tmp_path: Path, case: str, text: str, field: str, words: str) -> None:
    e = _err(tmp_path, text)
    assert e.field == field
    assert words in e.paragraph()
    assert e.fix
    assert e.exit_code == 2
    assert "\n" not in e.paragraph()


@pytest.mark.parametrize(
    "text",
    [
        'extends = "kimi-k26"\n[server]\nserved_model_name = "x\\nExecStartPre=/bin/rm -rf /"\n',
        'extends = "kimi-k26"\n[unit.environment]\nHF = "a\\rb"\n',
        'extends = "kimi-k26"\ndescription = "tab\\there"\n',
        'extends = "kimi-k26"\n[server]\nmodel_path = "/models/\\u0000x"\n',
    ],
)
def test_control_characters_refused(tmp_path: Path, text: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(UnsafeValueError) as ei:
        profiles.load(str(p))
    assert "control character" in ei.value.paragraph()


def test_unknown_profile() -> None:
    with pytest.raises(ProfileError) as ei:
        profiles.load("kimi-k26-eagle")
    assert "did you mean 'kimi-k26-eagle3'" in ei.value.paragraph()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as ei:
        profiles.load(str(tmp_path / "nope.toml"))
    assert "does not exist" in ei.value.paragraph()


def test_extends_itself(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    with pytest.raises(ProfileError) as ei:
        profiles.load(str(tmp_path / "a.toml"))
    assert ei.value.field == "extends"
    (tmp_path / "c.toml").write_text('extends = "c.toml"\n')
    with pytest.raises(ProfileError, match="extends itself"):
        profiles.load(str(tmp_path / "c.toml"))


@pytest.mark.parametrize(
    ("suffix", "named"),
    [("-check", True), ("-check", False), ("-liveness", True), ("-liveness", False)],
)
def test_a_name_ending_in_a_helper_suffix_is_refused(
    tmp_path: Path, suffix: str, named: bool
) -> None:
    """`foo-check` would be `foo`'s check unit (sglang-foo-check.service), `foo-liveness` its
    liveness watcher: the units would overwrite each other, and status would hide one."""
    name = f"foo{suffix}"
    p = tmp_path / f"{name}.toml"
    p.write_text('extends = "kimi-k26-eagle3"\n' + (f'name = "{name}"\n' if named else ""))
    with pytest.raises(ProfileError) as ei:
        profiles.load(str(p))
    e = ei.value
    assert e.field == "name" and e.exit_code == 2
    text = e.paragraph()
    assert f"sglang-{name}.service" in text and "deployment 'foo'" in text
    assert 'name = "foo-server"' in text
    assert "\n" not in text
    assert profiles.load(str(write_profile(tmp_path, name="foo-checked"))).name == "foo-checked"


def test_a_name_ending_in_check_is_exit_2_on_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from orchestrator.cli import app

    p = write_profile(tmp_path, name="foo-check")
    r = CliRunner().invoke(app, ["validate", str(p), "--no-nvml"])
    assert r.exit_code == 2
    assert r.stderr.startswith("deploy: profile name 'foo-check' ends in '-check'")
    assert len(r.stderr.strip().splitlines()) == 1
