"""The package's shape: no import cycle (imports inside functions count), every module imports
on its own, no module over 900 lines, and imports inside functions only where listed with a
reason. Read with `ast`, except the import-alone check, which imports each module afresh.

The exclusions below are what the code has today; each names its reason. Tighten them as the
modules move (issue 20): an entry that no longer applies fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "orchestrator"
MAX_LINES = 900

# Modules over MAX_LINES today -> why they are still allowed (none: keep it that way).
TOO_LONG: dict[str, str] = {}

# Import cycles today (each as its members) -> why they are still allowed.
CYCLES: dict[tuple[str, ...], str] = {}

# Modules that import inside a function -> why. Everything else imports at its top (issue 20):
# an import inside a function only where a measured start-up cost needs it, an optional
# dependency may be absent, or the code runs in another interpreter. Each module also says so
# where it does it. Figures: `python -X importtime`, on a loaded 2-core dev box.
LAZY_IMPORTS: dict[str, str] = {
    "orchestrator.cli": "`deploy --help` imports every command module: each stage (profiles, preflight, systemd, perf, k8s, diagnosis) and asyncio load only in the command that runs them; `--help` is 1.2x `import typer` so, the bar 1.6x (perf.tune alone is ~1 s of imports)",
    "orchestrator.cli.bench": "on the `deploy --help` path (see orchestrator.cli): perf.bench (httpx), datasets, asyncio, rich load in the command",
    "orchestrator.cli.tune": "on the `deploy --help` path (see orchestrator.cli): perf.tune, perf.bench, profiles, preflight load in the command",
    "orchestrator.cli.tune_text": "on the `deploy --help` path (see orchestrator.cli): perf.tune, datasets, rich (progress) load when printing",
    "orchestrator.cli.export": "on the `deploy --help` path (see orchestrator.cli): k8s (jsonschema, yaml), profiles, diagnosis load in the command",
    "orchestrator.cli.progress": "on the `deploy --help` path: rich (~30-40 ms) loads only when `up` draws its progress",
    "orchestrator.cli.common": "on the `deploy --help` path: rich (~30 ms) loads only when bench or tune print a table",
    "orchestrator.serverapi": "httpx (~100 ms) only on bench's and tune's async path: `deploy status` and the liveness watcher use the stdlib client",
    "orchestrator.watch.liveness": "`deploy status` imports it: the journal reader (~20-30 ms) loads only when a hang is recorded",
    "orchestrator.watch.incidents": "`deploy status` (through watch.liveness) and the recorder (Type=notify: the server waits for it) import it: the classifier (diagnosis.diagnose, ~120-240 ms) loads only when an incident is recorded",
    "orchestrator.perf.bench": "matplotlib is optional (deploy[bench]); imported for --plot only, its absence is a PlotUnavailable",
    "orchestrator.preflight.gpus": "pynvml is absent off GPU boxes; imported where NVML is read, its absence is reported",
    "orchestrator.sglang.probe": "runs in the profile's interpreter, the only one where SGLang is installed",
    "orchestrator.diagnosis.xid": "pynvml is absent off GPU boxes (and optional); imported where a PCI bus id is mapped to a GPU index, its absence falls back to /proc/driver/nvidia",
    "orchestrator.diagnosis.startup.sglang_args": "preflight (its rules, profiles: ~250-470 ms on top of the classifier's ~500 ms) loads only when spec-params-need-num-steps builds its fix text",
}
# Packages the function-level check skips, with why (none: keep it that way).
LAZY_IMPORTS_SKIPPED: dict[str, str] = {}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of the package that `name` imports, at any depth (functions included).

    `from a.b import c` counts as importing `a.b.c` when that is a module, else `a.b`. Imports
    under `if TYPE_CHECKING:` are not run, so they do not count."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                for i in range(len(parts), 0, -1):
                    if ".".join(parts[:i]) in known:
                        out.add(".".join(parts[:i]))
                        break
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                head = base[: len(base) - node.level + 1]
                mod = ".".join([*head, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                if sub in known:
                    out.add(sub)
                elif mod in known:
                    out.add(mod)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {n: imports_of(n, p, known) for n, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[tuple[str, ...]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_checker_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [("a", "b", "c")]
    p = tmp_path / "x.py"
    p.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from orchestrator import redact\n"
        "def f():\n    from orchestrator import errors\n"
    )
    known = {"orchestrator", "orchestrator.errors", "orchestrator.redact"}
    assert imports_of("x", p, known) == {"orchestrator.errors"}


def test_no_import_cycle() -> None:
    found = cycles(graph())
    allowed = {frozenset(c) for c in CYCLES}  # as sets: a rename may reorder the members
    unexpected = [c for c in found if frozenset(c) not in allowed]
    assert not unexpected, f"import cycles: {unexpected}"
    stale = [c for c in CYCLES if frozenset(c) not in {frozenset(f) for f in found}]
    assert not stale, f"no longer cycles, drop them from CYCLES: {stale}"


def test_no_module_over_900_lines() -> None:
    sizes = {n: len(p.read_text().splitlines()) for n, p in modules().items()}
    over = {n: s for n, s in sizes.items() if s > MAX_LINES}
    unexpected = {n: s for n, s in over.items() if n not in TOO_LONG}
    assert not unexpected, f"modules over {MAX_LINES} lines: {unexpected}"
    stale = [n for n in TOO_LONG if n not in over]
    assert not stale, f"no longer over {MAX_LINES} lines, drop them from TOO_LONG: {stale}"


def function_level_imports(path: Path) -> list[str]:
    """`line: import ...` for each import inside a function (not under `if TYPE_CHECKING:`)."""
    out: list[str] = []

    def walk(node: ast.AST, in_func: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if in_func and isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(f"{child.lineno}: {ast.unparse(child)}")
            walk(child, in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(ast.parse(path.read_text(), filename=str(path)), False)
    return out


def test_the_checker_finds_a_function_level_import(tmp_path: Path) -> None:
    p = tmp_path / "x.py"
    p.write_text(
        "import os\nfrom typing import TYPE_CHECKING\n"
        "def f():\n    if TYPE_CHECKING:\n        import json\n    import re\n"
        "class C:\n    async def g(self):\n        from os import path\n"
    )
    assert function_level_imports(p) == ["6: import re", "9: from os import path"]


def test_imports_inside_functions_only_where_listed() -> None:
    skipped = tuple(LAZY_IMPORTS_SKIPPED)
    found = {
        n: imps
        for n, p in modules().items()
        if not n.startswith(skipped) and (imps := function_level_imports(p))
    }
    unexpected = {n: found[n] for n in sorted(set(found) - set(LAZY_IMPORTS))}
    assert not unexpected, (
        "imports inside functions; move them to the module's top, or (a measured start-up "
        f"cost, an optional dependency) list the module in LAZY_IMPORTS with why: {unexpected}"
    )
    stale = [n for n in LAZY_IMPORTS if n not in found]
    assert not stale, f"no import inside a function any more, drop from LAZY_IMPORTS: {stale}"


IMPORT_EACH = """
import importlib, sys
bad = []
for name in sys.argv[1:]:
    for m in [m for m in sys.modules if m == "orchestrator" or m.startswith("orchestrator.")]:
        del sys.modules[m]
    try:
        importlib.import_module(name)
    except Exception as e:
        bad.append(f"{name}: {type(e).__name__}: {e}")
print("\\n".join(bad))
"""


def test_every_module_imports_on_its_own() -> None:
    """Each module imported first, in a clean `orchestrator` namespace: a cycle through a
    package's __init__ (which the graph above does not count) fails here as it would for a
    caller that imports that module first."""

    names = [
        n for n in modules() if n != "orchestrator.sglang.probe" and not n.endswith("__main__")
    ]
    r = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, *names],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert r.stdout.strip() == "", r.stdout
