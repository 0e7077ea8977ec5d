"""`deploy tune` without systemd: the grid, preflight pruning, the order, the sweep file,
the best per concurrency, --write, and the command's refusals. The sweep itself runs against
the real systemd in tests/test_tune_box.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator import profiles
from orchestrator.errors import InputError, LockedError
from orchestrator.perf import tune
from orchestrator.perf.bench import LevelResult
from tests.helpers import (
    EAGLE3_DRAFTER_CONFIG,
    KIMI_K26_CONFIG,
    ROOT,
    checkpoint,
    write_profile,
)

S = tune.Settings


def _plan(gpu: str | None = None, **kw: object) -> tune.Plan:
    spec = profiles.load("kimi-k26-eagle3")
    points = tune.grid([1, 3, 5, 7], [1, 2], [4])
    return tune.plan(spec, points, adaptive=bool(kw.get("adaptive")), gpu=gpu, on_box=False)


def test_preflight_prunes_trees_on_blackwell_and_folds_topk1() -> None:
    p = _plan()
    # b200 (the profile's [hardware] gpu): trtllm_mla forces page size 64, which refuses every
    # top-k > 1; (1, 2, 4) is also larger than its tree, the first error it hits.
    assert p.pruned_by_rule == {"spec-tree-page-size-backend": 3, "spec-draft-tokens-range": 1}
    assert {c.settings.topk for c in p.pruned} == {2}
    assert all(c.outcome == "pruned" and c.reason for c in p.pruned)
    # top-k 1 runs steps + 1 draft tokens whatever is asked: (1, 1, 4) runs as (1, 1, 2)
    assert [c.settings for c in p.candidates] == [S(3, 1, 4), S(1, 1, 2), S(5, 1, 6), S(7, 1, 8)]
    assert p.grid_size == 8
    # the profile's own settings first (they start today), then by draft tokens
    assert tune.current_settings(profiles.load("kimi-k26-eagle3")) == S(3, 1, 4)


def test_duplicates_are_pruned_naming_the_warning() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    p = tune.plan(spec, tune.grid([3], [1], [2, 4, 8]), adaptive=False, on_box=False)
    assert [c.settings for c in p.candidates] == [S(3, 1, 4)]
    assert p.pruned_by_rule == {"spec-topk1-draft-tokens": 2}
    assert all("the same run as steps=3 topk=1 draft=4" in (c.reason or "") for c in p.pruned)


def test_hopper_keeps_trees_and_orders_by_risk() -> None:
    p = _plan(gpu="h200")
    got = [c.settings for c in p.candidates]
    assert got[0] == S(3, 1, 4)
    assert S(3, 2, 4) in got and S(1, 2, 4) not in got  # 4 > the tree of 1 step x top-k 2 (3)
    rest = [
        (s.draft, s.topk, s.steps) for s, c in zip(got, p.candidates, strict=True) if not c.warnings
    ][1:]
    assert rest == sorted(rest)  # fewer draft tokens (smaller graphs) first
    warned = [c for c in p.candidates if c.warnings]
    assert warned and all(
        p.candidates.index(c) > len(p.candidates) - 1 - len(warned) for c in warned
    )
    assert any("spec-draft-tokens-range" in w for c in warned for w in c.warnings)


def test_adaptive_candidate_where_sglang_has_it() -> None:
    assert tune.has_adaptive(profiles.load("kimi-k26-eagle3"))  # its release has the flag
    p = _plan(adaptive=True)
    (a,) = [c for c in p.candidates if c.settings.adaptive]
    assert a.settings == S(5, 1, 6, True)  # the middle of the chains 1, 3, 5, 7
    assert p.candidates[-1] is a and p.grid_size == 9
    spec = tune.candidate_spec(profiles.load("kimi-k26-eagle3"), a.settings)
    assert spec.server["speculative_adaptive"] is True
    assert "--speculative-adaptive" in [str(x) for x in spec.argv()]


def test_candidate_spec_keeps_the_deployed_settings_byte_for_byte() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    assert tune.candidate_spec(spec, S(3, 1, 4)) is spec  # `up` restarts nothing for it
    other = tune.candidate_spec(spec, S(1, 1, 2))
    assert other.name == spec.name and other.unit_name == spec.unit_name
    assert other.server["speculative_num_steps"] == 1 and "tune candidate" in other.source
    assert S.from_server(S(2, 4, 8, True).server()) == S(2, 4, 8, True)


@pytest.mark.parametrize("text", ["", "0", "1,x", "65", "1,,2"])
def test_bad_grid_lists_name_the_option(text: str) -> None:
    with pytest.raises(InputError) as e:
        tune.parse_list(text, "--steps")
    assert e.value.field == "--steps" and "--steps 1,3,5,7" in e.value.paragraph()


def test_grid_too_large() -> None:
    with pytest.raises(InputError) as e:
        tune.grid(list(range(1, 21)), list(range(1, 11)), list(range(2, 12)))
    assert "2000 points" in e.value.paragraph()


# ---- results ---------------------------------------------------------------------------------


def _lv(c: int, tok: float, errors: int = 0) -> LevelResult:
    return LevelResult(
        concurrency=c, output_tok_s=tok, requests=4, ok=4 - errors, errors=errors, accept_length=2.0
    )


def _sweep(tmp_path: Path) -> tune.Sweep:
    a = tune.Candidate(
        S(3, 1, 4), "measured", levels=[_lv(1, 190.0), _lv(4, 230.0)], load_s=2.0, bench_s=1.0
    )
    b = tune.Candidate(
        S(1, 1, 2), "measured", levels=[_lv(1, 150.0), _lv(4, 310.0)], load_s=4.0, bench_s=1.0
    )
    c = tune.Candidate(S(5, 1, 6), "measured", levels=[_lv(1, 200.0, errors=1), _lv(4, 100.0)])
    d = tune.Candidate(S(7, 1, 8), "failed", reason="start failed")
    e = tune.Candidate(S(9, 1, 10))
    f = tune.Candidate(S(3, 2, 4), "pruned", reason="spec-tree-page-size-backend: ...")
    return tune.Sweep(
        name="kimi-k26-eagle3",
        profile="kimi-k26-eagle3",
        started_at="2026-01-01T00:00:00Z",
        options={"levels": [1, 4], "seed": 0, "input_len": 1024, "output_len": 32, "requests": 4, "dataset": "random"},
        start={"running": True, "release": 1},
        candidates=[a, b, c, d, e, f],
        pruned_by_rule={"spec-tree-page-size-backend": 1},
        grid_size=6,
        baseline={"kind": "file", "ref": "x.json", "levels": [{"concurrency": 1, "output_tok_s": 100.0}, {"concurrency": 4, "output_tok_s": 400.0}]},
        path=str(tmp_path / "tune" / "s.json"),
    )  # fmt: skip


def test_best_per_concurrency_ignores_levels_with_failed_requests(tmp_path: Path) -> None:
    sw = _sweep(tmp_path)
    best = tune.best(sw)
    assert best[1].settings == S(3, 1, 4)  # (5, 1, 6) was faster but lost a request there
    assert best[4].settings == S(1, 1, 2)
    assert tune.winner(sw, None) is best[4] and tune.winner(sw, 1) is best[1]
    assert tune.speedup(sw, 1, 190.0) == 1.9
    out = tune.result_json(sw)
    assert out["best"] == {
        "1": {"settings": S(3, 1, 4).server(), "output_tok_s": 190.0, "accept_length": 2.0, "speedup": 1.9},
        "4": {"settings": S(1, 1, 2).server(), "output_tok_s": 310.0, "accept_length": 2.0, "speedup": 0.775},
    }  # fmt: skip
    first = out["candidates"][0]
    assert first["settings"] == {
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4,
        "speculative_adaptive": False,
    }
    assert first["outcome"] == "measured" and first["levels"][0]["concurrency"] == 1
    assert [c["outcome"] for c in out["candidates"]][3:] == ["failed", "pending", "pruned"]
    assert out["grid"] == {
        "size": 6,
        "pruned": 1,
        "pruned_by_rule": {"spec-tree-page-size-backend": 1},
        "run": 5,
    }


def test_eta_from_measured_loads(tmp_path: Path) -> None:
    sw = _sweep(tmp_path)
    # one pending: mean load 3 s + mean bench 1 s, then one more load to go back
    assert tune.eta(sw) == 4.0 + 3.0
    sw.candidates = [tune.Candidate(S(1, 1, 2)), tune.Candidate(S(3, 1, 4))]
    assert tune.eta(sw) is None  # nothing measured yet


def test_sweep_file_round_trip_and_unfinished(tmp_path: Path) -> None:
    sw = _sweep(tmp_path)
    sw.path = str(tune.new_path(tmp_path, sw.name))
    tune.save(sw)
    assert oct(Path(sw.path).stat().st_mode & 0o777) == "0o600"
    (back,) = tune.sweeps(tmp_path, sw.name)
    assert back == sw
    assert tune.unfinished(tmp_path, sw.name) == sw
    sw.finished_at = "2026-01-01T01:00:00Z"
    tune.save(sw)
    assert tune.unfinished(tmp_path, sw.name) is None


def test_lock_refuses_a_second_sweep(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from orchestrator.perf import tune\n"
        "with tune.lock(Path(sys.argv[1]), 'x'):\n    print('held', flush=True); sys.stdin.read()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        with pytest.raises(LockedError) as e, tune.lock(tmp_path, "x"):
            pass
        assert f"pid {p.pid}" in e.value.paragraph() and "--resume" in e.value.paragraph()
    finally:
        p.communicate("")
    with tune.lock(tmp_path, "x"):  # released when its holder ends
        pass


def test_write_extends_the_profile_with_the_winner(tmp_path: Path) -> None:
    sw = _sweep(tmp_path)
    user = write_profile(
        tmp_path, "mine", server={"model_path": "/data/k", "speculative_num_steps": 3}
    )
    sw.profile = str(user)
    sw.name = "mine"
    out = tmp_path / "out" / "best.toml"
    written = tune.write_profile(sw, out, None)
    assert written is not None and written[1].settings == S(1, 1, 2)
    loaded = profiles.load(str(out))
    assert loaded.name == "mine"  # the same deployment, not a new one named "best"
    assert loaded.server["model_path"] == "/data/k"  # extended, not copied
    assert (
        loaded.server["speculative_num_steps"],
        loaded.server["speculative_num_draft_tokens"],
    ) == (1, 2)
    text = out.read_text()
    assert "310.0 output tok/s, 0.78x the baseline" in text and f'extends = "{user}"' in text
    assert tune.write_profile(sw, out, 1) is not None
    assert profiles.load(str(out)).server["speculative_num_steps"] == 3


def test_write_path_is_checked_before_any_restart(tmp_path: Path) -> None:
    spec = profiles.load(str(write_profile(tmp_path, "mine", server={"model_path": "/x"})))
    for bad, words in (
        (tmp_path / "x.txt", "not a .toml file"),
        (tmp_path / "mine.toml", "is the profile being tuned"),
    ):
        with pytest.raises(InputError) as e:
            tune.check_write_path(bad, spec)
        assert e.value.field == "--write" and words in e.value.paragraph()
    assert tune.check_write_path(tmp_path / "new" / "t.toml", spec) == tmp_path / "new" / "t.toml"


# ---- the command without a box ---------------------------------------------------------------


def _app() -> typer.Typer:
    from orchestrator.cli.tune import tune_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    app.command("tune")(tune_cmd)
    app.command("other")(lambda: None)
    return app


def test_dry_run_shows_the_plan(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["tune", "kimi-k26-eagle3", "--dry-run", "--no-nvml", "--dataset", "random"]
    args += ["--state-dir", str(tmp_path)]
    r = runner.invoke(_app(), args)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "81 settings in the grid, 76 pruned by preflight, 5 to run" in out
    assert "1. steps=3 topk=1 draft=4" in out and "5. steps=5 topk=1 draft=6 adaptive" in out
    assert (
        "spec-tree-page-size-backend 47, spec-topk1-draft-tokens 16, spec-draft-tokens-range 13"
        in out
    )
    r = runner.invoke(_app(), [*args, "--json", "--gpu", "h200", "--no-adaptive"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["grid"]["run"] > 40 and plan["grid"]["size"] == 80
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def _local_profile(tmp_path: Path) -> str:
    """kimi-k26-eagle3 with checkpoints that exist here: only the grid can be refused."""
    base = checkpoint(tmp_path / "Kimi-K2.6", KIMI_K26_CONFIG)
    draft = checkpoint(tmp_path / "Kimi-K2.6-EAGLE3", EAGLE3_DRAFTER_CONFIG)
    server = {"model_path": str(base), "speculative_draft_model_path": str(draft)}
    return str(write_profile(tmp_path, "local", server=server))


@pytest.mark.parametrize(
    ("extra", "option", "words"),
    [
        (["--gpu", "h200"], "--gpu", "add --dry-run"),
        (["--resume", "--fresh"], "--resume", "contradict"),
        (["--resume", "--steps", "1"], "--steps", "would change the saved sweep"),
        (["--resume"], "--resume", "no unfinished sweep"),
        (["--steps", "0"], "--steps", "from 1 to 64"),
        (["--concurrency", "1,4", "--for-concurrency", "8"], "--for-concurrency", "not one of"),
        (["--compare", "a.json", "--baseline", "kimi-k26"], "--compare", "both name"),
        (["--write", "x.txt"], "--write", "not a .toml"),
        (["--topk", "2"], "--topk", "refused every one"),
        (["--dataset", "nope.jsonl"], "--dataset", "no such file"),
    ],
)
def test_bad_input_exit_2_before_anything(
    tmp_path: Path, extra: list[str], option: str, words: str
) -> None:
    args = ["tune", _local_profile(tmp_path), "--no-nvml", "--state-dir", str(tmp_path / "s")]
    r = CliRunner().invoke(_app(), [*args, *extra])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"deploy: {option}"), r.stderr
    assert words in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "s").exists()


def test_not_eagle_and_refused_outright(tmp_path: Path) -> None:
    r = CliRunner().invoke(_app(), ["tune", "kimi-k26", "--no-nvml", "--state-dir", str(tmp_path)])
    assert r.exit_code == 2 and "does not use EAGLE" in r.stderr
    r = CliRunner().invoke(
        _app(),
        [
            "tune",
            "kimi-k26-eagle3",
            "--no-nvml",
            "--dataset",
            "random",
            "--state-dir",
            str(tmp_path),
        ],
    )
    # on this machine the built-in's model paths do not exist: every point refused for it
    assert (
        r.exit_code == 2
        and "whatever the speculative settings (model-path-missing: the base model path" in r.stderr
    )


def test_an_unfinished_sweep_must_be_resumed_or_replaced(tmp_path: Path) -> None:
    sw = _sweep(tmp_path)
    sw.path = str(tune.new_path(tmp_path, sw.name))
    tune.save(sw)
    r = CliRunner().invoke(
        _app(),
        [
            "tune",
            "kimi-k26-eagle3",
            "--no-nvml",
            "--dataset",
            "random",
            "--state-dir",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 2 and r.stderr.startswith("deploy: --resume")
    assert "is unfinished (4 of 5 candidates done" in r.stderr and "--fresh" in r.stderr
    r = CliRunner().invoke(
        _app(),
        [
            "tune",
            "kimi-k26-eagle3",
            "--no-nvml",
            "--resume",
            "--dry-run",
            "--state-dir",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "resuming kimi-k26-eagle3" in r.stdout and "(4 done, 1 left)" in r.stdout


def test_mismatch_spots_another_server_on_the_port() -> None:
    spec = profiles.load("kimi-k26-eagle3")
    cand = tune.candidate_spec(spec, S(1, 1, 2))
    same = {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 1}
    same |= {"speculative_eagle_topk": 1, "speculative_num_draft_tokens": 2}
    assert tune.mismatch(cand, same) is None
    assert tune.mismatch(cand, {}) is None  # a server that does not say
    other = dict(same, speculative_num_steps=3, speculative_num_draft_tokens=4)
    why = tune.mismatch(cand, other)
    assert why and "speculative_num_steps 3 (deployed: 1)" in why and "another server" in why
    base = profiles.load("kimi-k26")
    assert tune.mismatch(base, {"speculative_algorithm": "EAGLE3"}) is not None
    assert tune.mismatch(base, {"tp_size": 8}) is None
    adaptive = tune.candidate_spec(spec, S(5, 1, 6, True))
    assert (
        tune.mismatch(
            adaptive,
            dict(
                same,
                speculative_eagle_topk=1,
                speculative_num_steps=3,
                speculative_num_draft_tokens=6,
            ),
        )
        is None
    )
