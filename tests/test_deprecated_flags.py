"""Deprecated SGLang flags are treated the way SGLang treats them: `Deprecated*Action`s that warn
and translate are accepted with a warning naming the new flag and rendered as SGLang resolves
them; only a `DeprecatedAction(error_message=...)` refuses (exit 2)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import profiles
from orchestrator.cli import app
from orchestrator.errors import ProfileError
from orchestrator.sglang import flags

DP_ATTENTION = """extends = "kimi-k26"
name = "kimi-dp"
[server]
dp_size = 8
enable_dp_attention = true
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(text)
    return p


def test_table_records_what_sglang_does_with_retired_flags() -> None:
    t = flags.table("0.5.23")
    dp = t.deprecated["enable_dp_attention"]
    assert dp.action == "DeprecatedStoreTrueAction" and not dp.refuses
    assert dp.new_flag is not None and "--attn-dp-size" in dp.new_flag
    assert t.deprecated["disable_cuda_graph"].action == "DeprecatedStoreTrueAction"
    assert t.deprecated["enable_amd_monokernel"].action == "DeprecatedStoreConstAction"
    older = flags.table("0.5.11").deprecated
    assert older["incremental_streaming_output"].flag == "--stream-output"
    assert older["hybrid_kvcache_ratio"].ignored


def test_kimi_dp_attention_on_8_gpus_validates_with_a_warning(tmp_path: Path) -> None:
    p = _write(tmp_path, DP_ATTENTION)
    spec = profiles.load(str(p))
    # SGLang 0.5.23 resolves `--dp-size 8 --enable-dp-attention` to attn_dp_size 8, dp_size 1.
    assert spec.server["attn_dp_size"] == 8
    assert spec.server["dp_size"] == 1
    assert "enable_dp_attention" not in spec.server
    r = CliRunner().invoke(app, ["validate", str(p), "--no-nvml"])
    assert r.exit_code == 0, r.output
    assert "sglang-flag-deprecated" in r.output
    assert "--attn-dp-size" in r.output
    plain = CliRunner().invoke(app, ["validate", "kimi-k26", "--no-nvml"])
    assert "sglang-flag-deprecated" not in plain.output


def test_dp_attention_renders_the_translation(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["render", str(_write(tmp_path, DP_ATTENTION))])
    assert r.exit_code == 0, r.output
    exec_start = next(ln for ln in r.output.splitlines() if ln.startswith("ExecStart="))
    assert "--attn-dp-size 8" in exec_start
    assert "--enable-dp-attention" not in exec_start
    assert "--dp-size 1" in exec_start
    assert "deploy: warning: server.enable_dp_attention" in r.output


def test_disable_cuda_graph_becomes_both_backends_disabled(tmp_path: Path) -> None:
    p = _write(tmp_path, 'extends = "kimi-k26"\n[server]\ndisable_cuda_graph = true\n')
    spec = profiles.load(str(p))
    assert spec.server["cuda_graph_backend_decode"] == "disabled"
    assert spec.server["cuda_graph_backend_prefill"] == "disabled"
    assert "disable_cuda_graph" not in spec.server
    assert "--cuda-graph-backend" in spec.deprecations["disable_cuda_graph"]


def test_an_explicit_backend_wins_over_disable_cuda_graph(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        'extends = "kimi-k26"\n[server]\ndisable_cuda_graph = true\n'
        'cuda_graph_backend_decode = "full"\n',
    )
    spec = profiles.load(str(p))
    assert spec.server["cuda_graph_backend_decode"] == "full"
    assert spec.server["cuda_graph_backend_prefill"] == "disabled"


def test_only_an_error_message_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = flags.table("0.5.23")
    refused = replace(
        real.deprecated["enable_dp_attention"],
        action="DeprecatedAction",
        error_message="use --attn-dp-size instead",
    )
    fake = replace(real, deprecated={**real.deprecated, "enable_dp_attention": refused})
    # the loader holds `table` by name (imported at its module's top), so it is patched there
    monkeypatch.setattr(profiles, "table", lambda version=None: fake)
    with pytest.raises(ProfileError) as e:
        profiles.load(str(_write(tmp_path, DP_ATTENTION)))
    assert e.value.field == "server.enable_dp_attention"
    assert e.value.exit_code == 2
    assert "use --attn-dp-size instead" in e.value.paragraph()
