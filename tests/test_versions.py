"""Which SGLang release a profile is judged against, and who set each resolved value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import preflight, profiles, sglang
from orchestrator.cli import app
from orchestrator.errors import ProfileError
from orchestrator.sglang import versions
from tests.helpers import write_profile

OLDEST = next(iter(sglang.RELEASES))
NEWEST = sglang.NEWEST.version


def venv(
    root: Path, version: str | None, *, pyver: str = "3.11", system: Path | None = None
) -> Path:
    """A venv as `python -m venv` lays it out, with sglang's metadata when `version` is given."""
    (root / "bin").mkdir(parents=True)
    py = root / "bin" / "python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    cfg = f"home = {system or '/usr/bin'}\nversion = {pyver}.7\n"
    cfg += f"include-system-site-packages = {'true' if system else 'false'}\n"
    (root / "pyvenv.cfg").write_text(cfg)
    site = root / "lib" / f"python{pyver}" / "site-packages"
    site.mkdir(parents=True)
    if version:
        meta = site / f"sglang-{version}.dist-info" / "METADATA"
        meta.parent.mkdir()
        meta.write_text(f"Metadata-Version: 2.4\nName: sglang\nVersion: {version}\n\nREADME\n")
    return py


def test_installed_reads_the_venvs_metadata(tmp_path: Path) -> None:
    py = venv(tmp_path / "v", "0.5.23")
    got = versions.installed(str(py))
    assert got is not None and got.version == "0.5.23"
    assert got.metadata.endswith("sglang-0.5.23.dist-info/METADATA")


def test_installed_without_sglang_is_none(tmp_path: Path) -> None:
    assert versions.installed(str(venv(tmp_path / "v", None))) is None
    assert versions.installed(str(tmp_path / "nowhere" / "bin" / "python")) is None


def test_system_interpreter_and_system_site_packages(tmp_path: Path) -> None:
    usr = tmp_path / "usr"
    (usr / "bin").mkdir(parents=True)
    (usr / "bin" / "python3.11").write_text("")
    meta = usr / "local/lib/python3.11/dist-packages/sglang-0.5.23.dist-info/METADATA"
    meta.parent.mkdir(parents=True)
    meta.write_text("Name: sglang\nVersion: 0.5.23\n")
    got = versions.installed(str(usr / "bin" / "python3.11"))
    assert got is not None and got.version == "0.5.23"
    # a venv that includes the system site-packages sees it too
    py = venv(tmp_path / "v", None, system=usr / "bin")
    got = versions.installed(str(py))
    assert got is not None and got.version == "0.5.23"


def test_installed_wins_over_configured_with_a_note(tmp_path: Path) -> None:
    py = venv(tmp_path / "v", NEWEST)
    c = versions.resolve(str(py), configured="0.1.0")
    assert c.version == NEWEST and c.found == NEWEST and c.source.startswith("installed for")
    assert c.warning is not None and "the installed one counts" in c.warning


def test_configured_then_newest() -> None:
    c = versions.resolve("/nonexistent/bin/python", configured=OLDEST)
    assert c.version == OLDEST and c.source == "[sglang] version in the profile"
    assert c.warning is None
    c = versions.resolve("/nonexistent/bin/python")
    assert c.version == NEWEST and c.found is None and "newest release deploy knows" in c.source


def test_unknown_versions_fall_back_with_a_warning() -> None:
    newer = ".".join(map(str, (*sglang.version_key(NEWEST)[:-1], 99)))
    c = versions.resolve(None, configured=newer)
    assert c.version == NEWEST and c.found == newer
    assert c.warning is not None and "not a release deploy knows" in c.warning
    assert "nearest older" in c.warning
    c = versions.resolve(None, configured="0.0.1")
    assert c.version == OLDEST and c.warning is not None and "oldest" in c.warning


def test_a_post_release_is_its_release() -> None:
    c = versions.resolve(None, configured=NEWEST + ".post1")
    assert c.version == NEWEST and c.warning is None


def test_version_key() -> None:
    assert sglang.version_key("0.5.23") == (0, 5, 23)
    assert sglang.version_key("0.5.23rc1+cu128") == (0, 5, 23)
    assert sglang.version_key("0.5.9") < sglang.version_key("0.5.23")


def test_profile_sglang_version_is_checked(tmp_path: Path) -> None:
    p = write_profile(tmp_path, "bad", **{"extends": "kimi-k26", "sglang": {"version": 523}})
    with pytest.raises(ProfileError) as e:
        profiles.load(str(p))
    assert e.value.field == "sglang.version"
    p = write_profile(tmp_path, "bad2", **{"extends": "kimi-k26", "sglang": {"versoin": "0.5.23"}})
    with pytest.raises(ProfileError) as e:
        profiles.load(str(p))
    assert "did you mean 'version'" in str(e.value)


def test_validate_names_the_release_and_warns_for_an_unknown_one(tmp_path: Path) -> None:
    p = write_profile(
        tmp_path, "u", **{"extends": "kimi-k26-eagle3", "sglang": {"version": "9.9.9"}}
    )
    r = CliRunner().invoke(app, ["validate", str(p), "--gpu", "b200", "--no-nvml", "--json"])
    data = json.loads(r.stdout)
    assert data["resolved"]["sglang"]["version"] == NEWEST
    assert data["resolved"]["sglang"]["found"] == "9.9.9"
    assert any(f["rule"] == "sglang-version-unknown" for f in data["findings"])
    r = CliRunner().invoke(app, ["validate", str(p), "--gpu", "b200", "--no-nvml"])
    assert f"judged against SGLang {NEWEST} ([sglang] version in the profile)" in r.stdout
    assert "sglang-version-unknown" in r.stdout


def test_validate_detects_the_installed_release(tmp_path: Path) -> None:
    py = venv(tmp_path / "v", NEWEST)
    p = write_profile(tmp_path, "i", **{"extends": "kimi-k26-eagle3", "unit": {"python": str(py)}})
    spec = profiles.load(str(p))
    assert spec.sglang.found == NEWEST and str(tmp_path) in spec.sglang.source
    r = preflight.run(spec, gpu="b200")
    assert r.resolved["sglang"]["source"].startswith(f"installed for {py}")


def test_provenance_profile_builtin_auto_and_forced(tmp_path: Path) -> None:
    own = write_profile(
        tmp_path,
        "own",
        **{"extends": "kimi-k26-eagle3", "server": {"speculative_num_draft_tokens": 6}},
    )
    r = preflight.run(profiles.load(str(own)), gpu="b200")
    prov = r.resolved["provenance"]
    assert "inherited from kimi-k26-eagle3 (built-in)" in prov["speculative_num_steps"]
    assert r.resolved["speculative_num_draft_tokens"] == 4
    assert prov["speculative_num_draft_tokens"].startswith("forced to steps + 1 by top-k 1")
    assert str(own) in prov["speculative_num_draft_tokens"]
    assert prov["attention_backend"] == f"SGLang {NEWEST}'s default for an MLA model on b200"
    assert prov["page_size"] == "forced by the trtllm_mla attention backend"

    auto = write_profile(
        tmp_path,
        "auto",
        **{
            "extends": "kimi-k26-eagle3",
            "unset": [
                "server.speculative_num_steps",
                "server.speculative_eagle_topk",
                "server.speculative_num_draft_tokens",
            ],
            "server": {"attention_backend": "flashinfer"},
        },
    )
    r = preflight.run(profiles.load(str(auto)), gpu="b200")
    prov = r.resolved["provenance"]
    assert (r.resolved["speculative_num_steps"], r.resolved["speculative_eagle_topk"]) == (3, 1)
    assert prov["speculative_num_steps"].startswith(f"chosen by SGLang {NEWEST}")
    assert prov["attention_backend"] == f"--attention-backend in the profile {auto}"
    # the profile keeps the built-in's trtllm_mha draft backend, which forces page size 64
    assert prov["page_size"] == "forced by the trtllm_mha draft attention backend"
