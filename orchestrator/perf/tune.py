"""`deploy tune PROFILE`: the best speculative settings for one box and one workload.

    grid (steps x top-k x draft tokens, + speculative_adaptive)
      -> preflight each point (`preflight.run`, as `deploy validate`): refused ones pruned,
         top-k 1 duplicates folded (SGLang uses steps + 1 draft tokens there)
      -> order by risk: the deployed settings first, then by draft tokens, top-k, steps
         (the verify and draft CUDA graphs grow with them, so an out-of-memory start comes last)
      -> each candidate: `deployer.up` (the path of `deploy up`: preflight, release recorded,
         a failed start diagnosed and the unit stopped) -> `bench.run` at every concurrency on
         the same sampled requests -> the sweep file rewritten
      -> back to the release the deployment started from (or --apply the winner)

The sweep lives in `<state_dir>/<name>/tune/<UTC stamp>.json`, rewritten atomically after
every candidate, so `--resume` continues after Ctrl-C or a killed process without running a
finished candidate again. Plain data in and out; `cli_tune.py` prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator import preflight, profiles
from orchestrator.errors import InputError, LockedError, PreflightRejected
from orchestrator.perf import bench
from orchestrator.perf.bench import BenchRun, LevelResult
from orchestrator.profiles.spec import Spec
from orchestrator.sglang.flags import flag
from orchestrator.systemd import control as deployer
from orchestrator.systemd import render
from orchestrator.systemd import status as status_
from orchestrator.systemd.files import held_lock, write_atomically
from orchestrator.systemd.releases import Store, digest
from orchestrator.timefmt import now_iso

STEPS, TOPK, DRAFT, ADAPTIVE = (
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_adaptive",
)
TOPK1_RULE = "spec-topk1-draft-tokens"  # preflight's warning: top-k 1 uses steps + 1
MAX_GRID = 1000
FORMAT = 1

Event = Callable[[dict[str, Any]], None]
ProgressFactory = Callable[[], contextlib.AbstractContextManager[Callable[[Any], None] | None]]


# ---- settings and candidates ----------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Settings:
    steps: int
    topk: int
    draft: int
    adaptive: bool = False

    def server(self) -> dict[str, Any]:
        """As `[server]` keys."""
        return {STEPS: self.steps, TOPK: self.topk, DRAFT: self.draft, ADAPTIVE: self.adaptive}

    @property
    def label(self) -> str:
        s = f"steps={self.steps} topk={self.topk} draft={self.draft}"
        return s + " adaptive" if self.adaptive else s

    @classmethod
    def from_server(cls, d: Mapping[str, Any]) -> Settings:
        return cls(int(d[STEPS]), int(d[TOPK]), int(d[DRAFT]), bool(d.get(ADAPTIVE)))


@dataclass
class Candidate:
    settings: Settings
    outcome: str = "pending"  # pending | measured | failed | pruned
    reason: str | None = None
    rules: list[str] = field(default_factory=list)  # preflight rules that pruned it
    warnings: list[str] = field(default_factory=list)  # preflight warnings, low accept length
    levels: list[LevelResult] = field(default_factory=list)
    release: int | None = None
    load_s: float | None = None  # `up`, from the restart to healthy (None: nothing restarted)
    bench_s: float | None = None
    diagnosis: dict[str, Any] | None = None
    finished_at: str | None = None

    @property
    def done(self) -> bool:
        return self.outcome != "pending"

    def level(self, c: int) -> LevelResult | None:
        return next((lv for lv in self.levels if lv.concurrency == c), None)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["settings"] = self.settings.server()
        d["levels"] = [lv.to_json() for lv in self.levels]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Candidate:
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        kw["settings"] = Settings.from_server(d["settings"])
        kw["levels"] = [LevelResult.from_json(lv) for lv in d.get("levels") or ()]
        return cls(**kw)


@dataclass
class Sweep:
    name: str  # the deployment
    profile: str  # the PROFILE it was started with: a built-in name or an absolute path
    started_at: str
    options: dict[str, Any]  # levels, requests, dataset, seed, lengths, timeout_s, grid
    start: dict[str, Any]  # {"running": bool, "release": N | None}: where it goes back to
    candidates: list[Candidate]
    pruned_by_rule: dict[str, int] = field(default_factory=dict)
    grid_size: int = 0
    baseline: dict[str, Any] | None = (
        None  # {"kind": "file"|"profile", "ref", "outcome", "levels", ...}
    )
    dataset: dict[str, Any] | None = None
    finished_at: str | None = None
    end: dict[str, Any] | None = None  # what was done at the end: restored / applied / stopped
    path: str = ""  # the sweep file (not saved in it)

    @property
    def levels(self) -> list[int]:
        return list(self.options["levels"])

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "path"}
        d["candidates"] = [c.to_json() for c in self.candidates]
        return {"format": FORMAT, **d}

    @classmethod
    def from_json(cls, d: Mapping[str, Any], path: str = "") -> Sweep:
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "path"}
        kw["candidates"] = [Candidate.from_json(c) for c in d.get("candidates") or ()]
        return cls(**kw, path=path)


def parse_list(text: str, option: str, lo: int = 1, hi: int = 64) -> list[int]:
    """ "1,3,5" -> [1, 3, 5] (sorted, unique), or InputError naming the option."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or not lo <= int(part) <= hi:
            raise InputError(
                f"{option} {text!r} is not a comma-separated list of integers from {lo} to {hi}",
                field=option,
                fix=f"give the values to try, e.g. {option} "
                + {"--steps": "1,3,5,7", "--topk": "1,2,4,8"}.get(option, "2,4,8,16,32"),
            )
        out.add(int(part))
    return sorted(out)


def grid(steps: Sequence[int], topks: Sequence[int], drafts: Sequence[int]) -> list[Settings]:
    points = [Settings(s, k, d) for s in steps for k in topks for d in drafts]
    if len(points) > MAX_GRID:
        raise InputError(
            f"the grid has {len(points)} points ({len(steps)} steps x {len(topks)} top-k x "
            f"{len(drafts)} draft tokens), more than {MAX_GRID}",
            field="--steps",
            fix="give fewer values to --steps, --topk or --draft-tokens",
        )
    return points


def candidate_spec(spec: Spec, s: Settings) -> Spec:
    """The profile with these speculative settings. The deployed settings render the very
    units the profile does (so `up` restarts nothing for them); others say they are a tune
    candidate in the unit file's header."""
    server = {**spec.server, STEPS: s.steps, TOPK: s.topk, DRAFT: s.draft}
    if s.adaptive:
        server[ADAPTIVE] = True
    elif ADAPTIVE in spec.server:
        server[ADAPTIVE] = False
    if server == dict(spec.server):
        return spec
    return replace(spec, server=server, source=f"{spec.source}; deploy tune candidate {s.label}")


def current_settings(spec: Spec) -> Settings | None:
    """The profile's own speculative settings, when all three are set."""
    srv = spec.server
    if all(isinstance(srv.get(k), int) for k in (STEPS, TOPK, DRAFT)):
        return Settings(srv[STEPS], srv[TOPK], srv[DRAFT], bool(srv.get(ADAPTIVE)))
    return None


def has_adaptive(spec: Spec) -> bool:
    """Whether the SGLang release the profile runs has speculative_adaptive."""
    return spec.sglang.release.has_speculative_adaptive


@dataclass(frozen=True)
class Plan:
    """The grid after preflight: what runs, in order, and what was pruned and why."""

    candidates: list[Candidate]
    pruned: list[Candidate]
    pruned_by_rule: dict[str, int]
    grid_size: int
    common_warnings: list[str] = field(default_factory=list)  # preflight's, on every candidate
    outside: dict[str, str] = field(default_factory=dict)  # rules that name no grid flag: why


def plan(
    spec: Spec,
    points: Sequence[Settings],
    *,
    adaptive: bool,
    gpu: str | None = None,
    gpus: Any = None,
    on_box: bool = True,
    user_mode: bool = False,
) -> Plan:
    """Preflight every point as `deploy validate` would (for the target GPU: NVML's, or
    --gpu, or the profile's [hardware] gpu), prune what it refuses, fold top-k 1 duplicates,
    add the adaptive candidate, and order the rest by risk. on_box: judge as `up` does on
    this box (model paths must exist there, and who can change the code root runs: the
    same checks as `up`, which installs the winner with --apply); off, as `deploy validate`
    does anywhere. user_mode: for a user manager (nothing runs as root)."""

    def check(s: Settings) -> Any:
        return preflight.run(
            candidate_spec(spec, s), gpu=gpu, on_box=on_box, gpus=gpus, user_mode=user_mode
        )

    kept: dict[Settings, Candidate] = {}
    pruned: list[Candidate] = []
    counts: dict[str, int] = {}
    grid_flags = {flag(k) for k in (STEPS, TOPK, DRAFT, ADAPTIVE)}
    outside: dict[str, str] = {}

    def prune(c: Candidate, rule: str) -> None:
        c.outcome = "pruned"
        counts[rule] = counts.get(rule, 0) + 1
        pruned.append(c)

    # Points SGLang runs as given first, so a top-k 1 point with other draft tokens folds into
    # the one that says steps + 1.
    for s in sorted(points, key=lambda p: p.topk == 1 and p.draft != p.steps + 1):
        report = check(s)
        for f in report.errors:
            if not grid_flags & set(f.flags):
                outside.setdefault(f.rule, f"{f.message} (fix: {f.fix})")
        if not report.ok:
            first = report.errors[0]
            c = Candidate(s, rules=sorted({f.rule for f in report.errors}))
            c.reason = f"{first.rule}: {first.message}"
            prune(c, first.rule)
            continue
        eff = Settings(s.steps, 1, s.steps + 1, s.adaptive) if s.topk == 1 else s
        if eff in kept:
            c = Candidate(s, rules=[TOPK1_RULE])
            c.reason = (
                f"{TOPK1_RULE}: the same run as {eff.label}: with top-k 1 SGLang replaces the "
                f"draft tokens by steps + 1 = {eff.draft}"
            )
            prune(c, TOPK1_RULE)
            continue
        if eff != s:
            report = check(eff)
        kept[eff] = Candidate(eff, warnings=_warnings(report))
    if adaptive:
        # adaptive moves num_steps among the release's candidate steps (top-k 1 only), and
        # refuses to start outside them
        candidates = spec.sglang.release.adaptive_candidate_steps
        chains = sorted({s.steps for s in kept if s.topk == 1 and s.steps in candidates})
        if chains:
            start = chains[len(chains) // 2]  # SGLang starts in the middle of its candidates
            a = Settings(start, 1, start + 1, True)
            report = check(a)
            if report.ok:
                kept[a] = Candidate(a, warnings=_warnings(report))
            else:
                c = Candidate(a, rules=sorted({f.rule for f in report.errors}))
                c.reason = f"{report.errors[0].rule}: {report.errors[0].message}"
                prune(c, report.errors[0].rule)
    common: list[str] = []
    if kept:
        lists = [c.warnings for c in kept.values()]
        common = [w for w in lists[0] if all(w in ws for ws in lists[1:])]
        for c in kept.values():
            c.warnings = [w for w in c.warnings if w not in common]
    now = current_settings(spec)
    ordered = sorted(kept.values(), key=lambda c: _risk(c, now))
    extra = 1 if adaptive and any(c.settings.adaptive for c in (*ordered, *pruned)) else 0
    pruned.sort(key=lambda c: c.settings)
    return Plan(ordered, pruned, counts, len(points) + extra, common, outside)


def refused_outright(p: Plan) -> tuple[str, str] | None:
    """A rule about something other than the grid that refused every point: the profile
    itself will not start, whatever the settings. (rule, why)"""
    if p.candidates or not p.pruned:
        return None
    common = set.intersection(*(set(c.rules) for c in p.pruned)) & set(p.outside)
    if not common:
        return None
    rule = sorted(common)[0]
    return rule, p.outside[rule]


def _warnings(report: Any) -> list[str]:
    return [
        f"{f.rule}: {f.message}"
        for f in report.findings
        if f.severity == "warning" and f.rule != TOPK1_RULE
    ]


def _risk(c: Candidate, now: Settings | None) -> tuple[Any, ...]:
    """Least risky first: the deployed settings (they start today), then fewer draft tokens
    and a narrower tree (smaller CUDA graphs, less memory), warnings and adaptive (graphs for
    every step count) last."""
    s = c.settings
    return (s != now, s.adaptive, bool(c.warnings), s.draft, s.topk, s.steps)


# ---- the sweep file and the lock -----------------------------------------------------------


def tune_dir(state_root: Path, name: str) -> Path:
    return Path(state_root) / name / "tune"


def save(sweep: Sweep) -> None:

    p = Path(sweep.path)
    text = json.dumps(sweep.to_json(), indent=1) + "\n"
    write_atomically({p.name: text}, p.parent, mode=0o600, field="--state-dir")


def new_path(state_root: Path, name: str) -> Path:
    d = tune_dir(state_root, name)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    p = d / f"{stamp}.json"
    n = 1
    while p.exists():
        p = d / f"{stamp}-{n}.json"
        n += 1
    return p


def sweeps(state_root: Path, name: str) -> list[Sweep]:
    """Saved sweeps of a deployment, oldest first (files that do not parse are skipped)."""
    d = tune_dir(state_root, name)
    out = []
    for p in sorted(d.glob("*.json")) if d.is_dir() else ():
        try:
            out.append(Sweep.from_json(json.loads(p.read_text(encoding="utf-8")), str(p)))
        except (OSError, ValueError, TypeError, KeyError):
            continue
    return out


def unfinished(state_root: Path, name: str) -> Sweep | None:
    runs = [s for s in sweeps(state_root, name) if s.finished_at is None]
    return runs[-1] if runs else None


def lock(state_root: Path, name: str) -> contextlib.AbstractContextManager[None]:
    """One sweep per deployment at a time (flock; released when the process dies)."""

    def held(pid: str, since: str, _action: str) -> LockedError:
        return LockedError(
            f"a deploy tune of {name} is already running (pid {pid} since {since})",
            field="PROFILE",
            fix="wait for it to finish or stop it (Ctrl-C); then `deploy tune --resume` continues it",
        )

    return held_lock(tune_dir(state_root, name), "tune", held)


# ---- where the deployment starts from ------------------------------------------------------


async def starting_point(
    spec: Spec, *, unit_dir: Path, state_root: Path, user: bool
) -> dict[str, Any]:
    """Whether the deployment serves now, and the release whose units are installed: the
    sweep goes back to it at the end. Connects to systemd (refused when unreachable)."""

    now = await status_.status(unit_dir, state_root=state_root, user=user, only=spec.name)
    row = now.deployments[0] if now.deployments else None
    running = bool(row and row.active_state == "active" and row.health.status == 200)
    release = None
    names = render.render(spec, user_mode=user)
    installed = {}
    for n in names:
        with contextlib.suppress(OSError):
            installed[n] = (unit_dir / n).read_text()
    if installed:
        d = digest(installed)
        with contextlib.suppress(OSError, InputError):
            hits = [r for r in Store(state_root, spec.name).releases() if r.digest == d]
            release = hits[-1].number if hits else None
    return {"running": running, "release": release}


# ---- running it ------------------------------------------------------------------------------


@dataclass
class Runner:
    """Everything one sweep needs besides the Sweep itself (not saved)."""

    spec: Spec
    unit_dir: Path
    state_root: Path
    workload: list[tuple[Any, ...]]  # datasets.sample(): one tuple of items per level
    dataset: Any  # datasets.Dataset
    user: bool = False
    gpus: Any = None
    baseline_spec: Spec | None = None
    apply: bool = False
    for_concurrency: int | None = None
    on_event: Event | None = None
    progress: ProgressFactory | None = None

    def emit(self, **event: Any) -> None:
        if self.on_event is not None:
            self.on_event(event)


async def run(sweep: Sweep, r: Runner) -> Sweep:
    """Measure every pending entry (baseline first), saving after each; then go back to the
    starting release, or apply the winner. Safe to call again on a resumed sweep."""
    total = len([c for c in sweep.candidates if c.outcome != "pruned"])
    b = sweep.baseline
    if b is not None and b.get("kind") == "profile" and b.get("outcome") == "pending":
        assert r.baseline_spec is not None
        entry = Candidate(Settings(0, 0, 0))
        r.emit(type="deploy", what="baseline", label=f"baseline {b['ref']}", index=0, total=total)
        await _measure(sweep, r, entry, r.baseline_spec, label="baseline")
        b.update(
            outcome=entry.outcome,
            reason=entry.reason,
            levels=[lv.to_json() for lv in entry.levels],
            release=entry.release,
            load_s=entry.load_s,
            bench_s=entry.bench_s,
            diagnosis=entry.diagnosis,
            finished_at=entry.finished_at,
        )
        save(sweep)
        r.emit(type="done", what="baseline", candidate=entry, eta_s=eta(sweep))
    for i, c in enumerate((c for c in sweep.candidates if c.outcome != "pruned"), 1):
        if c.done:
            continue
        r.emit(type="deploy", what="candidate", label=c.settings.label, index=i, total=total)
        await _measure(sweep, r, c, candidate_spec(r.spec, c.settings), label=c.settings.label)
        save(sweep)
        r.emit(type="done", what="candidate", candidate=c, eta_s=eta(sweep))
    if sweep.end is None or not sweep.end.get("done"):
        sweep.end = await _finish(sweep, r)
        sweep.finished_at = now_iso()
        save(sweep)
    return sweep


async def _measure(sweep: Sweep, r: Runner, c: Candidate, spec: Spec, *, label: str) -> None:
    """Deploy through `up` (no rollback: a failed start is stopped, the next candidate
    starts), then bench it; the outcome lands in `c`."""

    opts = sweep.options
    cm = r.progress() if r.progress is not None else contextlib.nullcontext(None)
    try:
        with cm as on_progress:
            res = await deployer.up(
                spec,
                unit_dir=r.unit_dir,
                state_root=r.state_root,
                user=r.user,
                timeout_s=opts.get("timeout_s"),
                rollback=False,
                gpus=r.gpus,
                on_progress=on_progress,
            )
    except PreflightRejected as e:  # the box changed since the plan (GPU memory, processes)
        c.outcome, c.reason = "failed", f"refused by preflight at deploy time: {e.paragraph()}"
        c.finished_at = now_iso()
        return
    c.release = res.release if res.release is not None else _latest_release(r, spec)
    c.load_s = None if res.unchanged else res.elapsed_s
    r.emit(type="up", label=label, result=res)
    if res.outcome != "healthy":
        c.outcome = "failed"
        diag = res.diagnosis
        c.diagnosis = diag.to_json() if diag is not None else None
        why = f"{diag.category}: {diag.summary}" if diag is not None else res.detail
        c.reason = f"start {res.outcome} (release {c.release}): {why}"
        c.finished_at = now_iso()
        return
    t = time.monotonic()
    try:
        wrong = mismatch(spec, await bench.server_facts(spec.health.base_url, _api_key(spec)))
    except InputError as e:  # healthy a moment ago, gone now
        wrong = f"the server stopped answering after its start: {e.paragraph()}"
    if wrong is not None:
        c.outcome, c.reason = "failed", wrong
        c.finished_at = now_iso()
        return
    try:
        run_ = await bench.run(
            spec,
            sweep.levels,
            requests=opts.get("requests"),
            input_len=opts["input_len"],
            output_len=opts["output_len"],
            profile=spec.name,
            dataset=r.dataset,
            seed=opts["seed"],
            workload=r.workload,
            on_level=lambda conc, n: r.emit(
                type="level", label=label, concurrency=conc, requests=n
            ),
        )
    except InputError as e:  # not reachable or not healthy any more
        c.outcome, c.reason = "failed", f"bench: {e.paragraph()}"
        c.bench_s = round(time.monotonic() - t, 3)
        c.finished_at = now_iso()
        return
    c.bench_s = round(time.monotonic() - t, 3)
    c.levels = list(run_.levels)
    c.warnings += bench.accept_warnings(run_)
    c.finished_at = now_iso()
    if all(not lv.ok for lv in run_.levels):
        samples = [e for lv in run_.levels for e in lv.error_samples]
        c.outcome = "failed"
        c.reason = "every request failed" + (f", e.g. {samples[0]}" if samples else "")
        return
    c.outcome = "measured"
    failed = sum(lv.errors or 0 for lv in run_.levels)
    if failed:
        c.reason = f"{failed} request(s) failed; levels with failures do not compete for best"


def _api_key(spec: Spec) -> str | None:
    key = spec.server.get("api_key")
    return str(key) if key else None


def mismatch(spec: Spec, facts: Mapping[str, Any]) -> str | None:
    """Whether the server answering at the health URL is not the one just deployed (another
    server on that port makes `up` see a healthy /health): what /server_info says against
    the spec's speculative settings. None when they agree or the server does not say."""
    want_algo = str(spec.server.get("speculative_algorithm") or "").upper() or None
    got_algo = str(facts.get("speculative_algorithm") or "").upper() or None
    diffs = []
    if "speculative_algorithm" in facts and got_algo != want_algo:
        diffs.append(f"speculative_algorithm {got_algo} (deployed: {want_algo})")
    # speculative_adaptive moves steps (and so draft tokens) at run time: top-k only then.
    keys = (TOPK,) if spec.server.get(ADAPTIVE) else (STEPS, TOPK, DRAFT)
    if want_algo is not None:
        for k in keys:
            want = spec.server.get(k)
            if want is not None and k in facts and facts[k] != want:
                if k == DRAFT and spec.server.get(TOPK) == 1:
                    want = int(spec.server.get(STEPS) or 0) + 1
                if facts[k] != want:
                    diffs.append(f"{k} {facts[k]} (deployed: {want})")
    if not diffs:
        return None
    return (
        f"the server at {spec.health.base_url} is not the one deployed: it reports "
        + ", ".join(diffs)
        + "; is another server listening on that port? Nothing was measured"
    )


def _latest_release(r: Runner, spec: Spec) -> int | None:

    with contextlib.suppress(OSError, InputError):
        latest = Store(r.state_root, spec.name).latest()
        return latest.number if latest else None
    return None


async def _finish(sweep: Sweep, r: Runner) -> dict[str, Any]:
    """--apply: deploy the winner (through `up`, with its rollback on failure). Otherwise back
    to the starting release (nothing to do when the last candidate is that very release and
    healthy), or stopped when nothing was serving at the start."""

    spec = r.spec
    if r.apply:
        win = winner(sweep, r.for_concurrency)
        if win is None:
            r.emit(type="end", action="nothing to apply")
            return _finish_back(sweep, r, await _back(sweep, r), note="no candidate was measured")
        cm = r.progress() if r.progress is not None else contextlib.nullcontext(None)
        r.emit(type="end", action="applying", label=win.settings.label)
        with cm as on_progress:
            res = await deployer.up(
                candidate_spec(spec, win.settings),
                unit_dir=r.unit_dir,
                state_root=r.state_root,
                user=r.user,
                timeout_s=sweep.options.get("timeout_s"),
                gpus=r.gpus,
                on_progress=on_progress,
            )
        return {
            "done": True,
            "action": "applied",
            "settings": win.settings.server(),
            "outcome": res.outcome,
            "release": res.release if res.release is not None else _latest_release(r, spec),
            "restarted": not res.unchanged,
            "rollback": res.rollback.to_json() if res.rollback is not None else None,
        }
    store = Store(r.state_root, spec.name)
    latest = store.latest()
    start = sweep.start
    if (
        start.get("running")
        and start.get("release") is not None
        and latest is not None
        and latest.outcome == "healthy"
        and latest.digest == store.get(int(start["release"])).digest
    ):
        st = await status_.status(r.unit_dir, state_root=r.state_root, user=r.user, only=spec.name)
        if st.deployments and st.deployments[0].health.status == 200:
            return {
                "done": True,
                "action": "unchanged",
                "release": latest.number,
                "outcome": "healthy",
                "detail": f"the last deployed candidate is release {start['release']}'s config; nothing restarted",
            }
    r.emit(
        type="end", action="restoring", release=start.get("release"), running=start.get("running")
    )
    return _finish_back(sweep, r, await _back(sweep, r))


async def _back(sweep: Sweep, r: Runner) -> dict[str, Any]:

    spec, start = r.spec, sweep.start
    if not start.get("running"):
        down = await deployer.down(spec.name, spec.unit_name, state_root=r.state_root, user=r.user)
        return {"action": "stopped", "outcome": "stopped", "actions": down.actions}
    cm = r.progress() if r.progress is not None else contextlib.nullcontext(None)
    with cm as on_progress:
        if start.get("release") is not None:
            rb = await deployer.rollback(
                spec,
                unit_dir=r.unit_dir,
                state_root=r.state_root,
                to=int(start["release"]),
                user=r.user,
                on_progress=on_progress,
            )
            return {
                "action": "restored",
                "release": rb.as_release,
                "to_release": rb.to_release,
                "outcome": rb.outcome,
                "diagnosis": rb.to_json()["diagnosis"],
            }
        res = await deployer.up(  # serving, but from units no release recorded: the profile
            spec,
            unit_dir=r.unit_dir,
            state_root=r.state_root,
            user=r.user,
            gpus=r.gpus,
            on_progress=on_progress,
        )
    return {"action": "restored", "release": res.release, "outcome": res.outcome}


def _finish_back(sweep: Sweep, r: Runner, back: dict[str, Any], note: str = "") -> dict[str, Any]:
    out = {"done": True, **back}
    if note:
        out["note"] = note
    return out


# ---- results ---------------------------------------------------------------------------------


def eta(sweep: Sweep) -> float | None:
    """Seconds left: pending entries x (mean measured load + bench), plus one more load for
    going back at the end. None until a restart has been measured."""
    done = [c for c in sweep.candidates if c.done and c.outcome != "pruned"]
    b = sweep.baseline or {}
    loads = [c.load_s for c in done if c.load_s] + ([b["load_s"]] if b.get("load_s") else [])
    benches = [c.bench_s for c in done if c.bench_s] + ([b["bench_s"]] if b.get("bench_s") else [])
    if not loads:
        return None
    pending = sum(1 for c in sweep.candidates if c.outcome == "pending")
    if b.get("kind") == "profile" and b.get("outcome") == "pending":
        pending += 1
    load = statistics.mean(loads)
    each = load + (statistics.mean(benches) if benches else 0.0)
    return round(pending * each + load, 1)


def _usable(lv: LevelResult | None) -> bool:
    return lv is not None and lv.output_tok_s is not None and bool(lv.ok) and not lv.errors


def best(sweep: Sweep) -> dict[int, Candidate]:
    """The measured candidate with the highest output tok/s at each concurrency (levels with
    failed requests do not compete)."""
    out: dict[int, Candidate] = {}
    for conc in sweep.levels:
        contenders = [
            c for c in sweep.candidates if c.outcome == "measured" and _usable(c.level(conc))
        ]
        if contenders:
            out[conc] = max(contenders, key=lambda c: c.level(conc).output_tok_s or 0.0)  # type: ignore[union-attr]
    return out


def winner(sweep: Sweep, for_concurrency: int | None) -> Candidate | None:
    """The best at --for-concurrency (default: the highest level)."""
    conc = for_concurrency if for_concurrency is not None else max(sweep.levels)
    return best(sweep).get(conc)


def baseline_levels(sweep: Sweep) -> dict[int, float]:
    b = sweep.baseline or {}
    return {
        int(lv["concurrency"]): float(lv["output_tok_s"])
        for lv in b.get("levels") or ()
        if isinstance(lv, dict) and isinstance(lv.get("output_tok_s"), (int, float))
    }


def speedup(sweep: Sweep, conc: int, tok_s: float | None) -> float | None:
    base = baseline_levels(sweep).get(conc)
    return round(tok_s / base, 3) if tok_s is not None and base else None


def result_json(sweep: Sweep) -> dict[str, Any]:
    """The `--json` shape: candidates (settings as [server] keys, outcome, reason, levels)
    and the best per concurrency, with what the sweep knows besides."""
    bests = best(sweep)
    return {
        "profile": sweep.name,
        "source": sweep.profile,
        "sweep_file": sweep.path,
        "started_at": sweep.started_at,
        "finished_at": sweep.finished_at,
        "dataset": sweep.dataset,
        "seed": sweep.options.get("seed"),
        "concurrency": sweep.levels,
        "grid": {
            "size": sweep.grid_size,
            "pruned": sum(sweep.pruned_by_rule.values()),
            "pruned_by_rule": dict(sweep.pruned_by_rule),
            "run": sum(1 for c in sweep.candidates if c.outcome != "pruned"),
        },
        "baseline": sweep.baseline,
        "candidates": [
            {
                "settings": c.settings.server(),
                "outcome": c.outcome,
                "reason": c.reason,
                "levels": [lv.to_json() for lv in c.levels],
                "rules": c.rules,
                "warnings": c.warnings,
                "release": c.release,
                "load_s": c.load_s,
                "bench_s": c.bench_s,
                "diagnosis": c.diagnosis,
            }
            for c in sweep.candidates
        ],
        "best": {
            str(conc): {
                "settings": c.settings.server(),
                "output_tok_s": c.level(conc).output_tok_s,  # type: ignore[union-attr]
                "accept_length": c.level(conc).accept_length,  # type: ignore[union-attr]
                "speedup": speedup(sweep, conc, c.level(conc).output_tok_s),  # type: ignore[union-attr]
            }
            for conc, c in bests.items()
        },
        "end": sweep.end,
    }


def runs_for_plot(sweep: Sweep, baseline_run: BenchRun | None = None) -> list[BenchRun]:
    """One BenchRun per measured candidate (and the baseline) for `bench.plot`."""
    out = [
        BenchRun(profile=c.settings.label, levels=tuple(c.levels), speculative_algorithm="EAGLE3")
        for c in sweep.candidates
        if c.outcome == "measured"
    ]
    b = sweep.baseline
    if baseline_run is not None:
        out.append(baseline_run)
    elif b and b.get("levels"):
        levels = tuple(LevelResult.from_json(lv) for lv in b["levels"])
        out.append(BenchRun(profile=f"baseline {b.get('ref')}", levels=levels))
    return out


# ---- --write ---------------------------------------------------------------------------------


def check_write_path(path: Path, spec: Spec) -> Path:
    """Before any restart: a .toml path in a writable directory, not the profile itself."""
    p = path.expanduser().absolute()
    fix = "give a new .toml file in a writable directory, e.g. --write /etc/deploy/tuned.toml"
    if p.suffix != ".toml":
        raise InputError(f"--write {path} is not a .toml file", field="--write", fix=fix)
    if spec.source != "built-in" and Path(spec.source).absolute() == p:
        raise InputError(
            f"--write {path} is the profile being tuned; the written one extends it",
            field="--write",
            fix=fix,
        )
    parent = p.parent
    probe = parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise InputError(
            f"--write {path}: cannot write there as this user", field="--write", fix=fix
        )
    return p


def profile_text(sweep: Sweep, c: Candidate, conc: int) -> str:
    """A profile that extends the tuned one with the winner's settings (same deployment)."""
    lv = c.level(conc)
    tok = f"{lv.output_tok_s:.1f}" if lv and lv.output_tok_s is not None else "?"
    sp = speedup(sweep, conc, lv.output_tok_s if lv else None)
    vs = f", {sp:.2f}x the baseline" if sp is not None else ""
    ds = (sweep.dataset or {}).get("name", "?")
    lines = [
        f"# Written by `deploy tune` at {now_iso()}: the fastest speculative settings measured",
        f"# for {sweep.name} at concurrency {conc}: {tok} output tok/s{vs}.",
        f"# Dataset: {ds} (seed {sweep.options.get('seed')}).",
        f"# The sweep: {sweep.path}",
        f"extends = {json.dumps(sweep.profile)}",
        f"name = {json.dumps(sweep.name)}",
        "",
        "[server]",
        f"{STEPS} = {c.settings.steps}",
        f"{TOPK} = {c.settings.topk}",
        f"{DRAFT} = {c.settings.draft}",
    ]
    if c.settings.adaptive or sweep.options.get("grid", {}).get("adaptive"):
        lines.append(f"{ADAPTIVE} = {'true' if c.settings.adaptive else 'false'}")
    return "\n".join(lines) + "\n"


def write_profile(sweep: Sweep, path: Path, conc: int | None) -> tuple[Path, Candidate] | None:
    """Write the winner at `conc` (default the highest level) as a profile extending the
    tuned one, then load it back to prove it is valid. None when nothing was measured."""

    conc = conc if conc is not None else max(sweep.levels)
    c = best(sweep).get(conc)
    if c is None:
        return None
    write_atomically({path.name: profile_text(sweep, c, conc)}, path.parent, field="--write")
    loaded = profiles.load(str(path))
    want = c.settings.server()
    got = {k: loaded.server.get(k, False if k == ADAPTIVE else None) for k in want}
    if got != want:  # pragma: no cover - the profile chain overrode what was written
        raise InputError(
            f"--write {path}: the written profile loads with {got}, not {want}",
            field="--write",
            fix="check the profile it extends",
        )
    return path, c
