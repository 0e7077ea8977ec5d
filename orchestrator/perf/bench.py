"""`deploy bench`: drive a deployed server's OpenAI-compatible API and measure it.

Plain data in and out; the CLI (`cli_bench.py`) prints it.

Each level sends `requests` streaming requests with `concurrency` in flight at once, every one
with `max_tokens` set, `ignore_eos: true` (SGLang's extension, so each request generates
exactly max_tokens tokens) and `stream_options.include_usage`. What is sent comes from a
dataset (`orchestrator.perf.datasets`): conversations to `POST /v1/chat/completions`, sampled
with a seed, or (`random`) common-word prompts to `POST /v1/completions`.

The figures are defined the way SGLang's `bench_serving` defines them:

- TTFT: from sending the request to the first chunk that carries text.
- ITL: the gaps between successive text chunks of one request (one gap per chunk; with
  speculative decoding a chunk may carry several tokens, as in bench_serving).
- per-request tok/s: 1 / TPOT = (output tokens - 1) / (latency - TTFT), the decode speed of one
  request once its first token is out (latency = send to end of stream).
- output tok/s: all output tokens of the level / the level's wall time (first send to last
  end of stream): the server's throughput at that concurrency.
- output tokens: `usage.completion_tokens` when the server sends usage, else the text chunks.
- accept length: `internal_states[].avg_spec_accept_length` of `GET /server_info` read right
  after the level (what SGLang's bench_serving and its own tests read; averaged over DP
  ranks). When the server also answers `return_spec_tokens_details` (sglext, per request),
  `request_accept_length` is the token-weighted accept length over the level's requests.

Runs are saved as JSON under `<state_dir>/<profile>/bench/<UTC timestamp>.json`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import matplotlib.pyplot as plt

from orchestrator import serverapi
from orchestrator.errors import InputError
from orchestrator.perf.datasets import (
    RANDOM_WARNING,
    Dataset,
    Item,
    describe,
    sample,
    synthetic_prompt,
)
from orchestrator.profiles.spec import NAME_RE
from orchestrator.sglang import api, is_eagle_draft
from orchestrator.systemd.releases import state_dir as shared

STATE_DIR_ENV = "DEPLOY_STATE_DIR"  # named in messages; read by releases.state_dir
MAX_CONCURRENCY = 4096
MAX_REQUESTS = 100_000
INPUT_LEN_RANGE = (1, 1_000_000)
OUTPUT_LEN_RANGE = (2, 1_000_000)  # >= 2: one token gives no decode speed and no ITL
FORMAT_VERSION = 1
LOW_ACCEPT_LENGTH = 1.5  # below this an EAGLE drafter barely pays for itself


ProgressFn = Callable[[int, int], None]


# ---- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestResult:
    ok: bool
    error: str | None = None
    ttft_s: float | None = None
    latency_s: float | None = None
    output_tokens: int = 0
    chunks: int = 0
    itl_s: tuple[float, ...] = ()
    spec_verify_ct: int | None = None  # from sglext.spec_tokens_details, when sent

    @property
    def decode_tok_s(self) -> float | None:
        """1 / TPOT: (output tokens - 1) / (latency - TTFT)."""
        if not self.ok or self.ttft_s is None or self.latency_s is None or self.output_tokens < 2:
            return None
        decode = self.latency_s - self.ttft_s
        return (self.output_tokens - 1) / decode if decode > 0 else None


@dataclass(frozen=True)
class LevelResult:
    concurrency: int
    output_tok_s: float | None
    requests: int | None = None
    ok: int | None = None
    errors: int | None = None
    output_tokens: int | None = None
    wall_s: float | None = None
    per_request_tok_s: float | None = None  # mean over requests of 1 / TPOT
    ttft_mean_ms: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    accept_length: float | None = None  # /server_info avg_spec_accept_length after the level
    request_accept_length: float | None = None  # sglext spec_tokens_details, token-weighted
    error_samples: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["error_samples"] = list(self.error_samples)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LevelResult:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["error_samples"] = tuple(kw.get("error_samples") or ())
        return cls(**kw)


@dataclass(frozen=True)
class BenchRun:
    profile: str
    levels: tuple[LevelResult, ...]
    base_url: str | None = None
    model: str | None = None
    speculative_algorithm: str | None = None
    server: dict[str, Any] = field(default_factory=dict)  # facts from /server_info
    input_len: int | None = None
    output_len: int | None = None
    started_at: str | None = None  # ISO 8601, UTC
    tool: str = "deploy bench"
    note: str | None = None
    dataset: dict[str, Any] | None = None  # datasets.describe(): name, source, requests
    seed: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        algo = self.speculative_algorithm or "autoregressive"
        when = f" {self.started_at[:16]}" if self.started_at else ""
        return f"{self.profile} ({algo}){when}"

    def level(self, concurrency: int) -> LevelResult | None:
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT_VERSION}
        for f in fields(self):
            v = getattr(self, f.name)
            d[f.name] = [lv.to_json() for lv in v] if f.name == "levels" else v
        for key in ("note", "dataset", "seed"):
            if d[key] is None:
                d.pop(key)
        if not self.warnings:
            d.pop("warnings")
        return d

    @classmethod
    def from_json(cls, d: Any) -> BenchRun:
        """Raise ValueError on anything that is not a saved run."""
        if not isinstance(d, dict) or not isinstance(d.get("levels"), list):
            raise ValueError("not a saved bench run (no 'levels' list)")
        if not isinstance(d.get("profile"), str):
            raise ValueError("not a saved bench run (no 'profile' name)")
        levels = []
        for lv in d["levels"]:
            if not isinstance(lv, dict) or not isinstance(lv.get("concurrency"), int):
                raise ValueError("a level without an integer 'concurrency'")
            tok = lv.get("output_tok_s")
            if tok is not None and not isinstance(tok, (int, float)):
                raise ValueError(f"level {lv['concurrency']}: output_tok_s is not a number")
            levels.append(LevelResult.from_json(lv))
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known and k != "levels"}
        kw["server"] = dict(kw.get("server") or {})
        kw["warnings"] = [str(w) for w in kw.get("warnings") or ()]
        return cls(levels=tuple(levels), **kw)


# ---- validation ------------------------------------------------------------------------------


def parse_concurrency(text: str) -> list[int]:
    """ "1,8,32" -> [1, 8, 32] (sorted, unique), or InputError naming --concurrency."""
    bad = InputError(
        f"--concurrency {text!r} is not a comma-separated list of positive integers",
        field="--concurrency",
        fix=f"give the in-flight request counts to test, e.g. --concurrency 1,8,32 (each 1 to {MAX_CONCURRENCY})",
    )
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise bad
        n = int(part)
        if not 1 <= n <= MAX_CONCURRENCY:
            raise bad
        out.add(n)
    if not out:
        raise bad
    return sorted(out)


def default_requests(concurrency: int) -> int:
    """Requests for a level when --requests is not given: 4 per slot, at least 8."""
    return max(8, 4 * concurrency)


def check_inputs(
    levels: Sequence[int], requests: int | None, input_len: int, output_len: int
) -> None:
    if not levels or any(
        isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CONCURRENCY
        for c in levels
    ):
        raise InputError(
            f"--concurrency {list(levels)} is not a list of positive integers",
            field="--concurrency",
            fix=f"give the in-flight request counts to test, e.g. --concurrency 1,8,32 (each 1 to {MAX_CONCURRENCY})",
        )
    if requests is not None:
        top = max(levels)
        if requests < top or requests > MAX_REQUESTS:
            raise InputError(
                f"--requests {requests} is "
                + (f"fewer than the highest concurrency ({top})" if requests < top else "too many"),
                field="--requests",
                fix=f"give at least as many requests as the highest --concurrency, e.g. --requests {max(4 * top, 8)} "
                f"(at most {MAX_REQUESTS}), or leave it out for 4 per slot",
            )
    for name, value, (lo, hi) in (
        ("--input-len", input_len, INPUT_LEN_RANGE),
        ("--output-len", output_len, OUTPUT_LEN_RANGE),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InputError(
                f"{name} {value} is out of range",
                field=name,
                fix=f"give {name} in tokens between {lo} and {hi}, e.g. {name} {1024 if name == '--input-len' else 256}",
            )


# ---- measuring -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: int) -> float | None:
    """The q-th percentile (1..99), interpolated between closest ranks: `statistics.quantiles`'
    inclusive method, which is numpy's default, as bench_serving uses."""
    if not values:
        return None
    if len(values) == 1:  # quantiles needs two points before Python 3.13
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000.0, 3)


def _round(x: float | None, n: int = 3) -> float | None:
    return None if x is None else round(x, n)


def _client(max_connections: int, api_key: str | None = None) -> Any:

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, read=600.0),
        limits=httpx.Limits(
            max_connections=max_connections + 4, max_keepalive_connections=max_connections + 4
        ),
        headers=headers,
        trust_env=False,
    )


async def _one_request(
    client: Any,
    base_url: str,
    body: dict[str, Any],
    clock: Callable[[], float],
    path: str = api.COMPLETIONS,
) -> RequestResult:

    t0 = clock()
    first: float | None = None
    last: float | None = None
    gaps: list[float] = []
    chunks = 0
    usage_tokens: int | None = None
    verify_ct: int | None = None
    try:
        async with client.stream("POST", base_url + path, json=body) as r:
            if r.status_code != 200:
                try:
                    text = (await serverapi.aread(r, 64 * 1024)).decode("utf-8", "replace")[:200]
                except serverapi.BodyTooLarge as e:
                    text = f"(an error body over {e.limit} bytes)"
                return RequestResult(False, f"HTTP {r.status_code}: {text}")
            async for line in serverapi.alines(r):
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                now = clock()
                try:
                    obj = json.loads(data)
                except ValueError:
                    return RequestResult(False, f"unparsable stream chunk: {data[:100]!r}")
                if isinstance(obj, dict) and "error" in obj and not obj.get("choices"):
                    return RequestResult(
                        False, f"server error in stream: {str(obj['error'])[:200]}"
                    )
                for choice in obj.get("choices") or ():
                    if choice.get("text") or (choice.get("delta") or {}).get("content"):
                        chunks += 1
                        if first is None:
                            first = now
                        else:
                            gaps.append(now - last)  # type: ignore[operator]
                        last = now
                usage = obj.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    usage_tokens = usage["completion_tokens"]
                ct = api.spec_verify_ct(obj)
                if ct is not None:
                    verify_ct = ct
    except httpx.HTTPError as e:
        return RequestResult(False, f"{type(e).__name__}: {e}"[:200])
    except serverapi.BodyTooLarge as e:
        return RequestResult(False, f"a stream line longer than {e.limit} bytes")
    end = clock()
    if first is None:
        return RequestResult(False, "the stream ended without any text")
    return RequestResult(
        True,
        ttft_s=first - t0,
        latency_s=end - t0,
        output_tokens=usage_tokens if usage_tokens is not None else chunks,
        chunks=chunks,
        itl_s=tuple(gaps),
        spec_verify_ct=verify_ct,
    )


def _body(model: str, prompt: str, output_len: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": output_len,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        **api.REQUEST_EXTRAS,
    }


def _chat_body(model: str, messages: Sequence[dict[str, str]], output_len: int) -> dict[str, Any]:
    body = _body(model, "", output_len)
    del body["prompt"]
    body["messages"] = list(messages)
    return body


def _request(model: str, item: Item) -> tuple[str, dict[str, Any]]:
    """(path, body) of one dataset item: chat messages or a raw prompt."""
    if item.messages is not None:
        return api.CHAT_COMPLETIONS, _chat_body(model, item.messages, item.output_len)
    return api.COMPLETIONS, _body(model, item.prompt or "", item.output_len)


async def run_level(
    base_url: str,
    *,
    model: str,
    concurrency: int,
    requests: int,
    input_len: int,
    output_len: int,
    on_progress: ProgressFn | None = None,
    api_key: str | None = None,
    client: Any = None,
    seed: int = 0,
    items: Sequence[Item] | None = None,
) -> LevelResult:
    """`requests` streaming completions, `concurrency` in flight at once: the dataset's
    `items` when given (one request each), else common-word prompts of input_len tokens."""
    if items is not None:
        requests = len(items)
    check_inputs([concurrency], requests, input_len, output_len)
    base_url = base_url.rstrip("/")
    own = client is None
    if own:
        client = _client(concurrency, api_key)
    clock = time.perf_counter
    results: list[RequestResult] = []
    todo = iter(range(requests))
    try:

        async def worker() -> None:
            for i in todo:  # shared iterator: each slot takes the next request when free
                if items is not None:
                    path, body = _request(model, items[i])
                else:
                    prompt = synthetic_prompt(input_len, seed * 1_000_003 + concurrency * 7919 + i)
                    path, body = api.COMPLETIONS, _body(model, prompt, output_len)
                res = await _one_request(client, base_url, body, clock, path)
                results.append(res)
                if on_progress is not None:
                    on_progress(len(results), requests)

        t0 = clock()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = clock() - t0
        accept = await serverapi.aaccept_length(client, base_url)
    finally:
        if own:
            await client.aclose()
    good = [r for r in results if r.ok]
    total = sum(r.output_tokens for r in good)
    decode = [x for x in (r.decode_tok_s for r in good) if x is not None]
    ttfts = [r.ttft_s for r in good if r.ttft_s is not None]
    itls = [g for r in good for g in r.itl_s]
    with_ct = [r for r in good if r.spec_verify_ct]
    req_accept = (
        sum(r.output_tokens for r in with_ct) / sum(r.spec_verify_ct or 0 for r in with_ct)
        if with_ct
        else None
    )
    errors = [r.error or "failed" for r in results if not r.ok]
    return LevelResult(
        concurrency=concurrency,
        requests=requests,
        ok=len(good),
        errors=len(errors),
        output_tokens=total,
        wall_s=_round(wall, 4),
        output_tok_s=_round(total / wall if good and wall > 0 else None),
        per_request_tok_s=_round(sum(decode) / len(decode) if decode else None),
        ttft_mean_ms=_ms(sum(ttfts) / len(ttfts) if ttfts else None),
        ttft_p50_ms=_ms(percentile(ttfts, 50)),
        ttft_p99_ms=_ms(percentile(ttfts, 99)),
        itl_p50_ms=_ms(percentile(itls, 50)),
        itl_p99_ms=_ms(percentile(itls, 99)),
        accept_length=accept,
        request_accept_length=_round(req_accept),
        error_samples=tuple(dict.fromkeys(errors))[:3],
    )


async def server_facts(base_url: str, api_key: str | None = None) -> dict[str, Any]:
    """/health must answer 200; then what /server_info (and /v1/models) say. InputError when
    the server is not reachable or not healthy."""

    base_url = base_url.rstrip("/")
    fix = (
        "start it with `deploy up PROFILE` and wait until `deploy status` says healthy, "
        "or point --base-url at a running server, e.g. --base-url http://127.0.0.1:30000"
    )
    async with _client(1, api_key) as client:
        try:
            r = await serverapi.aget(client, base_url + api.HEALTH, timeout=10.0)
        except (httpx.HTTPError, serverapi.BodyTooLarge) as e:
            raise InputError(
                f"the server at {base_url} is not reachable ({type(e).__name__})",
                field="--base-url",
                fix=fix,
            ) from None
        if r.status != 200:
            raise InputError(
                f"the server at {base_url} is not healthy (/health answered {r.status})",
                field="--base-url",
                fix=fix,
            )
        facts = await serverapi.aserver_facts(client, base_url, timeout=10.0)
    return facts


async def run(
    target: Any,
    levels: Sequence[int],
    *,
    requests: int | None = None,
    input_len: int = 1024,
    output_len: int = 256,
    profile: str | None = None,
    api_key: str | None = None,
    on_level: Callable[[int, int], ProgressFn | None] | None = None,
    warmup: bool = True,
    dataset: Dataset | None = None,
    seed: int = 0,
    workload: Sequence[Sequence[Item]] | None = None,
) -> BenchRun:
    """Every level in turn against a Spec (its health.base_url) or a base URL.

    Requests come from `dataset` (sampled here with `seed`), or from `workload` (one tuple
    of items per level, as `datasets.sample` makes them: `deploy tune` samples once and sends
    the same to every candidate); with neither, common-word prompts of input_len tokens.
    on_level(concurrency, requests) is called as a level starts and may return the
    on_progress(done, total) callback for that level."""
    check_inputs(list(levels), requests, input_len, output_len)
    levels = sorted(set(levels))
    if workload is None and dataset is not None:
        counts = [requests if requests is not None else default_requests(c) for c in levels]
        workload = sample(dataset, counts, seed=seed, input_len=input_len, output_len=output_len)
    if workload is not None and len(workload) != len(levels):
        raise ValueError("one tuple of items per level")
    if isinstance(target, str):
        base_url, name = target.rstrip("/"), profile or "adhoc"
    else:
        base_url, name = target.health.base_url, profile or target.name
        if api_key is None:
            api_key = target.server.get("api_key")
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    facts = await server_facts(base_url, api_key)
    model = str(facts.get("served_model_name") or facts.get("model_path") or "default")
    out: list[LevelResult] = []
    async with _client(max(levels), api_key) as client:
        if warmup:  # one short request, not counted (bench_serving does the same)
            first = workload[0][0] if workload and workload[0] else None
            if first is not None and first.messages is not None:
                path, body = _request(model, replace(first, output_len=min(first.output_len, 16)))
            else:
                prompt = synthetic_prompt(min(input_len, 32), -1)
                path, body = api.COMPLETIONS, _body(model, prompt, min(output_len, 16))
            await _one_request(client, base_url, body, time.perf_counter, path)
        for i, c in enumerate(levels):
            n = requests if requests is not None else default_requests(c)
            if workload is not None:
                n = len(workload[i])
            cb = on_level(c, n) if on_level is not None else None
            out.append(
                await run_level(
                    base_url,
                    model=model,
                    concurrency=c,
                    requests=n,
                    input_len=input_len,
                    output_len=output_len,
                    on_progress=cb,
                    client=client,
                    seed=i + 1,
                    items=workload[i] if workload is not None else None,
                )
            )
    server = {k: v for k, v in facts.items() if k != api.ACCEPT_LENGTH}
    described = None
    notes: list[str] = []
    if dataset is not None and workload is not None:
        described = describe(dataset, workload)
        notes = list(dataset.notes)
    elif workload is None:
        notes = [RANDOM_WARNING]
    run = BenchRun(
        profile=name,
        levels=tuple(out),
        base_url=base_url,
        model=model,
        speculative_algorithm=facts.get("speculative_algorithm"),
        server=server,
        input_len=input_len,
        output_len=output_len,
        started_at=started,
        dataset=described if described else {"name": "random"} if workload is None else None,
        seed=seed,
    )
    return replace(run, warnings=[*notes, *accept_warnings(run)])


def accept_warnings(run: BenchRun) -> list[str]:
    """An EAGLE deployment whose accept length is below LOW_ACCEPT_LENGTH at some level."""
    if not is_eagle_draft(run.speculative_algorithm):
        return []
    low = [
        lv
        for lv in run.levels
        if lv.accept_length is not None and lv.accept_length < LOW_ACCEPT_LENGTH
    ]
    if not low:
        return []
    where = ", ".join(f"{lv.accept_length:.2f} at concurrency {lv.concurrency}" for lv in low)
    return [
        f"accept length {where} is below {LOW_ACCEPT_LENGTH}: each verify step keeps few drafted "
        "tokens, so speculation barely pays for its draft steps. Either the drafter does not fit "
        "this model (check speculative_draft_model_path is the EAGLE-3 head trained for it) or "
        "the prompts are not representative (bench with --dataset sharegpt or your own traffic)"
    ]


# ---- saving, history, compare, plot -----------------------------------------------------------


def state_dir(given: str | os.PathLike[str] | None = None) -> Path:
    """The state dir releases use too (see `releases.state_dir`)."""

    return shared(given)


def bench_dir(state: Path, profile: str) -> Path:
    return Path(state) / profile / "bench"


def check_writable(state: Path, profile: str) -> Path:
    """Make the bench dir (before minutes of benchmarking), or InputError naming --state-dir."""
    d = bench_dir(state, profile)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise InputError(
            f"cannot save bench results under {d} ({e.strerror or type(e).__name__})",
            field="--state-dir",
            fix=f"run as a user who may write there, or give a writable directory with --state-dir or ${STATE_DIR_ENV}, e.g. --state-dir ~/.local/state/deploy",
        ) from None
    return d


def save(run: BenchRun, state: str | os.PathLike[str]) -> Path:
    """Write the run to <state>/<profile>/bench/<UTC timestamp>.json (atomically)."""
    d = check_writable(Path(state), run.profile)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if run.started_at:
        with contextlib.suppress(ValueError):
            stamp = datetime.strptime(run.started_at, "%Y-%m-%dT%H:%M:%SZ").strftime(
                "%Y%m%dT%H%M%SZ"
            )
    path = d / f"{stamp}.json"
    n = 1
    while path.exists():
        path = d / f"{stamp}-{n}.json"
        n += 1
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(run.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_file(path: str | os.PathLike[str], option: str = "--compare") -> BenchRun:
    p = Path(path).expanduser()
    try:
        return BenchRun.from_json(json.loads(p.read_text(encoding="utf-8")))
    except FileNotFoundError:
        msg = f"{option} {p}: no such file"
    except (OSError, UnicodeDecodeError) as e:
        msg = f"{option} {p} cannot be read ({type(e).__name__})"
    except ValueError as e:
        msg = f"{option} {p} is not a saved bench run ({e})"
    raise InputError(
        msg,
        field=option,
        fix=f"give a JSON file written by `deploy bench` (see `deploy bench PROFILE --history`) or a profile name with saved runs, e.g. {option} bench/reference/kimi-k26-baseline.json",
    )


def history(state: str | os.PathLike[str], profile: str) -> list[BenchRun]:
    """Saved runs of a profile, oldest first. Files that do not parse are skipped."""
    d = bench_dir(Path(state), profile)
    out = []
    for p in sorted(d.glob("*.json")) if d.is_dir() else ():
        try:
            out.append(BenchRun.from_json(json.loads(p.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return out


def resolve_other(ref: str, state: str | os.PathLike[str]) -> BenchRun:
    """--compare: a saved-run JSON file, or a profile name whose latest saved run is used."""

    p = Path(ref).expanduser()
    if p.suffix == ".json" or "/" in ref or p.is_file():
        return load_file(p)
    name = ref
    if not NAME_RE.match(name):
        return load_file(p)
    runs = history(state, name)
    if not runs:
        raise InputError(
            f"--compare {ref}: no saved bench runs for profile {name} under {bench_dir(Path(state), name)}",
            field="--compare",
            fix=f"bench it first (`deploy bench {name}`), give the right --state-dir, or give a saved run's JSON file such as bench/reference/kimi-k26-baseline.json",
        )
    return runs[-1]


def compare(a: BenchRun, b: BenchRun) -> list[dict[str, Any]]:
    """Per concurrency (union of both runs): tok/s of a, of b, and a's speedup over b."""
    rows = []
    for c in sorted({lv.concurrency for lv in (*a.levels, *b.levels)}):
        la, lb = a.level(c), b.level(c)
        ta = la.output_tok_s if la else None
        tb = lb.output_tok_s if lb else None
        speedup = round(ta / tb, 3) if ta is not None and tb else None
        rows.append({"concurrency": c, "a_tok_s": ta, "b_tok_s": tb, "speedup": speedup})
    return rows


class PlotUnavailable(InputError):
    """matplotlib is not installed."""


def plot(runs: Iterable[BenchRun], path: str | os.PathLike[str]) -> Path:
    """PNG of output tok/s against concurrency (log x), one line per run."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(
            "--plot needs matplotlib, which is not installed",
            field="--plot",
            fix="pip install 'deploy[bench]' (or pip install matplotlib), or leave out --plot",
        ) from None
    matplotlib.use("Agg", force=True)

    out = Path(path).expanduser()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    try:
        ticks: set[int] = set()
        for r in runs:
            pts = [(lv.concurrency, lv.output_tok_s) for lv in r.levels if lv.output_tok_s]
            if not pts:
                continue
            xs, ys = zip(*sorted(pts), strict=True)
            ticks.update(xs)
            ax.plot(xs, ys, marker="o", label=r.label)
            for x, y in pts:
                ax.annotate(f"{y:.0f}", (x, y), textcoords="offset points", xytext=(4, 4))
        ax.set_xscale("log", base=2)
        if ticks:
            ax.set_xticks(sorted(ticks), [str(t) for t in sorted(ticks)])
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel("output tok/s")
        ax.set_title("Output throughput against concurrency")
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize="small")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(out, format="png", bbox_inches="tight")
        except OSError as e:
            raise InputError(
                f"--plot {out} cannot be written ({e.strerror or type(e).__name__})",
                field="--plot",
                fix="give a path in a writable directory, e.g. --plot /tmp/bench.png",
            ) from None
    finally:
        plt.close(fig)
    return out
