"""Classifier speed: a 200k-line realistic journal, classified from text, must take <= 1 s; one failed start <= 0.2 s.

Run: python bench/classify_bench.py [--lines N] [--limit SECONDS]
Builds the journal (SGLang start-up, the real error early, then 200k lines of serving noise
from 8 ranks, then the echo cascade) in `journalctl -o json`, `-o short-precise` and `-o cat`
form, classifies each from its text (`orchestrator.diagnosis.diagnose.classify_text`, what
`deploy logs --classify --input FILE` does) and also the already-parsed entries
(`classify(entries)`, what `deploy up` does). Prints seconds and lines/s; exits 1 when any
text classification takes longer than the limit.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.diagnosis.diagnose import classify, classify_text  # noqa: E402
from orchestrator.diagnosis.journal import parse_text  # noqa: E402


def _fixtures() -> ModuleType:
    path = ROOT / "tests" / "logs" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NOISE = (
    "[2026-12-02 {h:02d}:{m:02d}:{s:02d} TP{r}] Decode batch. #running-req: {q}, #token: {t}, "
    "token usage: 0.04, accept len: 2.71, cuda graph: True, gen throughput (token/s): 1042.33, #queue-req: 0",
    "[2026-12-02 {h:02d}:{m:02d}:{s:02d} TP{r}] Prefill batch. #new-seq: 1, #new-token: 812, "
    "#cached-token: 4096, token usage: 0.04, #running-req: {q}, #queue-req: 0",
    'INFO:     127.0.0.1:{p} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'INFO:     127.0.0.1:{p} - "GET /health HTTP/1.1" 200 OK',
)


def build(mf: ModuleType, n: int) -> list[str]:
    cause = mf.sched_exc(
        "14:07:06",
        3,
        mf.OOM_FRAMES,
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.21 GiB. GPU 3 has a "
            "total capacity of 178.35 GiB of which 2.87 GiB is free."
        ],
    )
    head = [*mf.START, *mf.LAUNCH, mf.SERVER_ARGS, *mf.init_parallel(), *mf.load_weights()]
    lines = [*head, *cause]
    tail = mf.echo_tail("23:59:59", dead_rank=3, code="1")
    for i in range(max(0, n - len(lines) - len(tail))):
        sec = 8 * 3600 + i // 50
        h, rem = divmod(sec, 3600)
        m, s = divmod(rem, 60)
        lines.append(
            NOISE[i % 4].format(
                h=14 + h % 9, m=m, s=s, r=i % 8, q=i % 48, t=i % 90000, p=40000 + i % 20000
            )
        )
    return lines + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--limit", type=float, default=1.0)
    args = ap.parse_args(argv)
    mf = _fixtures()
    lines = build(mf, args.lines)
    worst = 0.0

    def kubectl(ls: list[str]) -> str:  # a shipper's prefix the reader must learn
        return "\n".join(
            f"[pod/sglang-0/sglang] 2026-12-02T10:00:{i % 60:02d}.123456789Z {ln}"
            for i, ln in enumerate(mf.to_cat(ls).split("\n"))
        )

    for fmt, conv in (
        ("json", mf.to_json),
        ("short", mf.to_short_precise),
        ("cat", mf.to_cat),
        ("kubectl", kubectl),
    ):
        text = conv(lines)
        t0 = time.perf_counter()
        d = classify_text(text)
        dt = time.perf_counter() - t0
        if fmt != "kubectl":  # the limit is for a journal; a shipper's prefix is shown beside
            worst = max(worst, dt)
        ok = d.category == "cuda-oom"
        print(
            f"{fmt:7s} text   {len(lines):7d} lines  {len(text) / 1e6:6.1f} MB  {dt:6.3f} s  "
            f"{len(lines) / dt:10.0f} lines/s  -> {d.category}{'' if ok else '  (WRONG)'}"
        )
        if not ok:
            return 1
        entries = parse_text(text)
        t0 = time.perf_counter()
        d2 = classify(entries)
        dt2 = time.perf_counter() - t0
        print(
            f"{fmt:7s} parsed {len(entries):7d} lines             {dt2:6.3f} s  {len(entries) / dt2:10.0f} lines/s  -> {d2.category}"
        )
    # one failed start, as `up` diagnoses it: the seed's journal (a few hundred lines)
    seed = (ROOT / "tests" / "logs" / "seed_spec_assert.json").read_text()
    t0 = time.perf_counter()
    d3 = classify_text(seed)
    one = time.perf_counter() - t0
    print(f"one failed start (seed_spec_assert.json): {one:.3f} s -> {d3.category} (limit 0.2 s)")
    if one > 0.2:
        worst = max(worst, args.limit + one)
    verdict = "OK" if worst <= args.limit else "TOO SLOW"
    print(f"worst text classification: {worst:.3f} s (limit {args.limit:.1f} s): {verdict}")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
