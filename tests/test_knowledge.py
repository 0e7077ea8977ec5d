"""SGLang's knowledge has one home: orchestrator/sglang/. These tests guard it.

- No SGLang message text is typed anywhere else in the project (code, the stand-in, tests,
  hand-written docs): each literal stretch of every message of every known release is
  searched for. Real logs under tests/logs/ are data from boxes and are exempt, and so are the
  docs generated from the knowledge.
- Every message's regex matches its own text, and each release is complete.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator import sglang
from orchestrator.sglang import Message

ROOT = Path(__file__).resolve().parents[1]
MIN_LEN = (
    18  # shorter stretches ("server_args=", "is not installed.") are too common to mean anything
)

SCANNED = ("orchestrator", "tests", "templates", "scripts", "bench", "docs", "README.md")
EXEMPT = (
    "orchestrator/sglang/",  # the home
    "tests/logs/",  # logs from real boxes and fixtures recorded from them: data
    "docs/preflight.md",  # generated from the knowledge
    "docs/troubleshooting.md",  # generated from the knowledge
    "tests/test_knowledge.py",
)
SUFFIXES = {".py", ".md", ".j2", ".toml", ".sh", ".txt", ""}


def _files() -> list[Path]:
    out: list[Path] = []
    for top in SCANNED:
        p = ROOT / top
        items = [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]
        for q in items:
            rel = q.relative_to(ROOT).as_posix()
            if any(rel.startswith(e) for e in EXEMPT) or "__pycache__" in rel:
                continue
            if q.suffix in SUFFIXES:
                out.append(q)
    return out


def _stretches() -> dict[str, list[str]]:
    """literal stretch -> the message ids it belongs to."""
    out: dict[str, list[str]] = {}
    for r in sglang.RELEASES.values():
        for m in (v for mid in r.messages for v in sglang.all_messages(mid)):
            for lit in m.literals():
                for piece in lit.splitlines():
                    piece = piece.strip()
                    if len(piece) >= MIN_LEN:
                        out.setdefault(piece, []).append(f"{r.version}:{m.id}")
    return out


def test_no_sglang_text_is_typed_outside_its_home() -> None:
    stretches = _stretches()
    assert len(stretches) > 30  # the guard guards something
    found: list[str] = []
    for f in _files():
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for piece, ids in stretches.items():
            if piece in text:
                line = text[: text.index(piece)].count("\n") + 1
                found.append(f"{f.relative_to(ROOT)}:{line}: {piece!r} ({', '.join(ids)})")
    assert not found, (
        "SGLang's words are typed outside orchestrator/sglang/; read them from the release "
        "(orchestrator.sglang.release(...).message(id)) instead:\n" + "\n".join(found)
    )


def test_the_guard_would_catch_a_copy(tmp_path: Path) -> None:
    m = sglang.NEWEST.message("spec-trtllm-mha-topk")
    piece = max((p.strip() for p in m.literals()), key=len)
    assert piece in _stretches()
    assert piece in f'raise ValueError("{m.text}")'


@pytest.mark.parametrize("version", list(sglang.RELEASES))
def test_each_message_matches_its_own_text(version: str) -> None:
    r = sglang.release(version)
    for m in r.messages.values():
        values = {name: _sample(m, name) for _, name in m.parts() if name}
        text = m.format(**values)
        assert re.search(m.regex(), text), (m.id, text)
        assert m.keyword() in text


def _sample(m: Message, name: str) -> str:
    rx = m.fields.get(name, ".+?")
    for cand in (
        "3",
        "False",
        "12:00:01",
        "'trtllm_mla'",
        "('flashinfer', 'fa3', 'triton')",
        "[X]",
        "sgl-kernel",
        "a b",
    ):
        if re.fullmatch(rx, cand):
            return cand
    return "x"


@pytest.mark.parametrize("version", list(sglang.RELEASES))
def test_each_release_is_complete(version: str) -> None:
    """Every release knows every message and frame the newest one does (a text may be
    unchanged; it must still be stated), and its flag table loads."""
    from orchestrator.sglang.flags import table

    r = sglang.release(version)
    missing = set(sglang.NEWEST.messages) - set(r.messages) - set(r.absent)
    assert not missing, missing
    assert set(sglang.NEWEST.frames) <= set(r.frames)
    t = table(version)
    assert t.sglang_version == version
    assert "speculative_num_steps" in t.fields
    assert r.milestones and r.algorithms and r.eagle_family
    assert "*" in r.auto_spec_params


# --- release numbers, source paths and function names of SGLang, outside its home ---

# Where deploy's own code lives (the product, not its tests: tests name releases on purpose).
CODE = ("orchestrator", "templates", "bench")
CODE_EXEMPT: dict[str, str] = {
    "orchestrator/sglang/": "the home",
}
RELEASE_NUMBER = re.compile(r"(?<![\d.])0\.5\.\d+(?![\d])")
SOURCE_PATH = re.compile(r"\bsrt/[\w/]+|\b\w+_hook\.py\b|\bserver_args\.py\b|\barg_groups/")


def _function_names() -> set[str]:
    """SGLang's own function names that the knowledge records (frames and call chains), less
    the ones too generic to mean SGLang (dunders, `<module>`, `run_hook`...)."""
    names = set()
    for r in sglang.RELEASES.values():
        frames = [*r.frames.values(), *(f for chain in r.chains.values() for f in chain)]
        names |= {f.function for f in frames}
    return {n for n in names if n.isidentifier() and not n.startswith("__") and len(n) >= 12}


def _code_files() -> list[Path]:
    out = []
    for top in CODE:
        for q in sorted((ROOT / top).rglob("*")):
            rel = q.relative_to(ROOT).as_posix()
            wanted = q.is_file() and q.suffix in SUFFIXES and "__pycache__" not in rel
            if wanted and not any(rel.startswith(e) for e in CODE_EXEMPT):
                out.append(q)
    return out


def sglang_names_in(text: str, functions: set[str]) -> list[str]:
    hits = [m.group(0) for m in RELEASE_NUMBER.finditer(text)]
    hits += [m.group(0) for m in SOURCE_PATH.finditer(text)]
    hits += [n for n in functions if re.search(rf"\b{re.escape(n)}\b", text)]
    return hits


def test_no_sglang_release_or_source_name_outside_its_home() -> None:
    functions = _function_names()
    assert "_handle_eagle_family" in functions and "prepare_server_args" in functions
    found = []
    for f in _code_files():
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for hit in sglang_names_in(line, functions):
                found.append(f"{f.relative_to(ROOT)}:{n}: {hit}")
    assert not found, (
        "SGLang release numbers, source paths or function names outside orchestrator/sglang/; "
        "read them from orchestrator.sglang instead:\n" + "\n".join(found)
    )


def test_the_release_guard_would_catch_them() -> None:
    functions = _function_names()
    line = 'x = "SGLang 0.5.24 in srt/arg_groups/speculative_hook.py _handle_eagle_family"'
    assert len(sglang_names_in(line, functions)) >= 3
    assert sglang_names_in("python 3.11.5 and numpy 10.5.3", functions) == []
