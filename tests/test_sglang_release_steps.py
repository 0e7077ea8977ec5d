"""docs/sglang-releases.md, "Adding a release", done by its steps on a copy of the project: a fake
SGLang 0.5.24 (0.5.23's flags, one flag fewer) must take exactly one generated flag table and one
release module registered in orchestrator/sglang/__init__.py, touch nothing outside
orchestrator/sglang/, and `deploy validate` / `deploy render` must then run against it."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEW = "0.5.24"
DROPPED = "enable_flashinfer_allreduce_fusion"  # a flag the fake release no longer has


def _type_source(f: dict[str, Any]) -> str:
    if f["choices"]:
        inner = "Literal[" + ", ".join(repr(c) for c in f["choices"]) + "]"
    else:
        inner = {
            "bool": "bool",
            "int": "int",
            "float": "float",
            "str": "str",
            "list": "List[str]",
            "dict": "Dict[str, Any]",
        }.get(f["type"], "Union[int, str]")
    return f"Optional[{inner}]" if f["optional"] else inner


def fake_wheel(tmp: Path) -> Path:
    """An sglang-0.5.24 wheel in the 0.5.20+ layout (arg_groups/fields/*.py, server_args.py),
    written from 0.5.23's table: what step 1's `pip download` would fetch."""
    table = json.loads((ROOT / "orchestrator/sglang/args-0.5.23.json").read_text())
    by_ns: dict[str, list[str]] = {}
    for f in table["fields"]:
        if f["name"] == DROPPED:
            continue
        meta = f"Arg(help={f['help']!r}, aliases={f['aliases']!r}, no_cli={f['no_cli']!r})"
        default = (
            "field(default_factory=list)" if f["default"] == "<computed>" else repr(f["default"])
        )
        line = f"    {f['name']}: A[{_type_source(f)}, {meta}] = {default}"
        by_ns.setdefault(f["namespace"], []).append(line)
    deprecated = "\n".join(
        f"        parser.add_argument({d['flag']!r}, action={d['action']}, "
        f"new_flag={d['new_flag']!r}, dest={d['field']!r})"
        for d in table["deprecated"]
    )
    wheel = tmp / f"sglang-{NEW}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"sglang-{NEW}.dist-info/METADATA", f"Name: sglang\nVersion: {NEW}\n")
        for ns, lines in by_ns.items():
            zf.writestr(
                f"sglang/srt/arg_groups/fields/{ns}.py", f"class F{ns}:\n" + "\n".join(lines) + "\n"
            )
        zf.writestr(
            "sglang/srt/server_args.py",
            "class ServerArgs:\n    @staticmethod\n    def add_cli_args(parser):\n"
            + deprecated
            + "\n",
        )
    return wheel


def _copy_project(dst: Path) -> None:
    for name in ("orchestrator", "templates", "scripts", "docs"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")


def _changed(a: Path, b: Path, rel: str = "") -> list[str]:
    """Files added, removed or changed under b relative to a."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    out = [f"{rel}{n}" for n in (*cmp.left_only, *cmp.right_only, *cmp.diff_files)]
    for sub in cmp.common_dirs:
        out += _changed(a / sub, b / sub, f"{rel}{sub}/")
    return out


def _deploy(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_release_is_one_table_and_one_module(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    _copy_project(copy)
    home = copy / "orchestrator" / "sglang"
    # Step 2: regenerate the flag table from the release's wheel.
    wheel = fake_wheel(tmp_path)
    gen = subprocess.run(
        [sys.executable, str(copy / "scripts/gen_sglang_args.py"), str(wheel), "--version", NEW],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gen.returncode == 0, gen.stderr
    table = json.loads((home / f"args-{NEW}.json").read_text())
    assert table["sglang_version"] == NEW
    assert DROPPED not in {f["name"] for f in table["fields"]}
    assert {d["flag"] for d in table["deprecated"]} >= {"--enable-dp-attention"}
    # Step 3: the differences as data, a delta over the nearest release; register it.
    (home / "v0_5_24.py").write_text(
        '"""SGLang 0.5.24 (a fake release of the test): 0.5.23 with one flag fewer."""\n\n'
        "from __future__ import annotations\n\n"
        "from dataclasses import replace\n\n"
        "from orchestrator.sglang import v0_5_23 as newer\n\n"
        "RELEASE = replace(\n"
        f'    newer.RELEASE, version="{NEW}", args_file="args-{NEW}.json",\n'
        f"    install_hint=\"pip install 'sglang[all]=={NEW}'\",\n"
        ")\n"
    )
    init = home / "__init__.py"
    text = init.read_text()
    text, n_import = re.subn(
        r"^from orchestrator\.sglang import (v0_5_\w+(?:, v0_5_\w+)*)$",
        lambda m: m.group(0) + ", v0_5_24",
        text,
        flags=re.M,
    )
    text, n_register = re.subn(r"v0_5_23\.RELEASE\)", "v0_5_23.RELEASE, v0_5_24.RELEASE)", text)
    assert (n_import, n_register) == (1, 1), "the registration in __init__.py changed shape"
    init.write_text(text)
    # Nothing outside orchestrator/sglang/ was touched.
    changed = _changed(ROOT, copy)
    changed = [
        c for c in changed if c.split("/")[0] in {"orchestrator", "templates", "scripts", "docs"}
    ]
    assert sorted(changed) == sorted(
        [
            "orchestrator/sglang/__init__.py",
            f"orchestrator/sglang/args-{NEW}.json",
            "orchestrator/sglang/v0_5_24.py",
        ]
    )
    # Step 6: deploy knows it, validates and renders against it.
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'extends = "kimi-k26-eagle3"\nname = "kimi-new"\n[sglang]\nversion = "{NEW}"\n'
        "[server]\ndp_size = 8\nenable_dp_attention = true\n"
    )
    v = _deploy(copy, "validate", str(profile), "--no-nvml", "--json")
    assert v.returncode == 0, v.stdout + v.stderr
    report = json.loads(v.stdout)
    assert report["resolved"]["sglang"]["version"] == NEW
    assert "sglang-version-unknown" not in v.stdout
    r = _deploy(copy, "render", str(profile))
    assert r.returncode == 0, r.stderr
    assert "--attn-dp-size 8" in r.stdout
    gone = profile.read_text() + f"{DROPPED} = true\n"
    profile.write_text(gone)
    bad = _deploy(copy, "validate", str(profile), "--no-nvml")
    assert bad.returncode == 2
    assert f"not a field SGLang {NEW} knows" in bad.stderr


@pytest.mark.parametrize("version", ["0.5.23"])
def test_the_fake_wheel_round_trips_the_real_table(tmp_path: Path, version: str) -> None:
    """The fake wheel written from a table gives that table back (less the dropped flag): the
    generator reads what the fake states, so the test above exercises the real step 2."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_sglang_args
    finally:
        sys.path.pop(0)
    got_version, fields = gen_sglang_args.wheel_fields(fake_wheel(tmp_path))
    want = [
        f
        for f in json.loads((ROOT / f"orchestrator/sglang/args-{version}.json").read_text())[
            "fields"
        ]
        if f["name"] != DROPPED
    ]
    assert got_version == NEW
    strip = ("action", "help", "default")
    assert [{k: v for k, v in f.items() if k not in strip} for f in fields] == [
        {k: v for k, v in f.items() if k not in strip} for f in want
    ]
