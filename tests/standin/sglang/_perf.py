"""The stand-in's deterministic performance model (tests only; not SGLang's).

Tokens per second of one request as a function of the speculative settings (steps, top-k,
draft tokens) and the batch (requests in flight), so that a test knows the optimum of a
`deploy tune` sweep before it runs. A roofline: a forward pass costs `base_ms` until the
tokens it processes pass `knee`, then grows with them.

    verify step (ms) = base_ms * max(1, batch * draft_tokens / knee)
                     + steps * draft_ms * max(1, batch * topk / knee)
    no speculation   = base_ms * max(1, batch / knee)

Acceptance: the drafter's token at depth i is accepted with probability alpha while
i <= depth (what it was trained for), alpha * fall beyond; a tree of top-k > 1 offers n =
min(topk, (draft_tokens - 1) // steps) candidates per depth, accepted with 1 - (1 - a)^n.
The accept length (tokens per verify step) is 1 + sum over depths of the product of the
acceptances so far, the depths being min(steps, draft_tokens - 1). A request then gets
accept_length / step_ms tokens per ms.

Enabled by STANDIN_PERF=1; STANDIN_PERF_ALPHA, _DEPTH, _FALL, _BASE_MS, _KNEE, _DRAFT_MS
override the defaults below. STANDIN_MAX_DRAFT=N makes every config with more than N
draft tokens die in CUDA graph capture (out of memory), as a too-wide verify graph does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    alpha: float = 0.7
    depth: int = 3
    fall: float = 0.5
    base_ms: float = 10.0
    knee: float = 4.0
    draft_ms: float = 1.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Model:
        env = dict(os.environ if env is None else env)
        kw: dict[str, float | int] = {}
        for name, key, kind in (
            ("alpha", "ALPHA", float),
            ("depth", "DEPTH", int),
            ("fall", "FALL", float),
            ("base_ms", "BASE_MS", float),
            ("knee", "KNEE", float),
            ("draft_ms", "DRAFT_MS", float),
        ):
            raw = env.get(f"STANDIN_PERF_{key}")
            if raw:
                kw[name] = kind(raw)
        return cls(**kw)  # type: ignore[arg-type]

    def accept_length(self, steps: int | None, topk: int | None, draft: int | None) -> float:
        if not steps or not topk or not draft:
            return 1.0
        depth = min(steps, draft - 1)
        n = max(1, min(topk, (draft - 1) // steps))
        total, p = 1.0, 1.0
        for i in range(1, depth + 1):
            a = self.alpha if i <= self.depth else self.alpha * self.fall
            p *= 1.0 - (1.0 - a) ** n
            total += p
        return total

    def step_ms(self, batch: int, steps: int | None, topk: int | None, draft: int | None) -> float:
        b = max(1, batch)
        if not steps or not topk or not draft:
            return self.base_ms * max(1.0, b / self.knee)
        verify = self.base_ms * max(1.0, b * draft / self.knee)
        return verify + steps * self.draft_ms * max(1.0, b * topk / self.knee)

    def tokens_per_s(
        self, batch: int, steps: int | None, topk: int | None, draft: int | None
    ) -> float:
        """One request's decode speed with `batch` requests in flight."""
        return (
            1000.0
            * self.accept_length(steps, topk, draft)
            / self.step_ms(batch, steps, topk, draft)
        )

    def throughput(
        self, concurrency: int, steps: int | None, topk: int | None, draft: int | None
    ) -> float:
        """Output tok/s of the server with `concurrency` requests in flight all the time."""
        return concurrency * self.tokens_per_s(concurrency, steps, topk, draft)


def enabled(env: dict[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("STANDIN_PERF", "") not in ("", "0")


def max_draft_tokens(env: dict[str, str] | None = None) -> int | None:
    raw = (os.environ if env is None else env).get("STANDIN_MAX_DRAFT", "")
    return int(raw) if raw.strip().isdigit() else None
