"""Regenerate orchestrator/rules/sglang_args.json from an SGLang wheel, without importing it.

SGLang 0.5.x declares every ServerArgs field in `sglang/srt/arg_groups/fields/*.py` as
`name: A[type, "help" | Arg(...)] = default`. This reads those declarations with `ast`, so
it works on a machine without torch or a GPU:

    pip download --no-deps sglang==0.5.23 -d /tmp/sgl
    python scripts/gen_sglang_args.py /tmp/sgl/sglang-0.5.23-*.whl
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "orchestrator" / "rules" / "sglang_args.json"
FIELDS_DIR = "sglang/srt/arg_groups/fields/"


def _kind(annotation: str) -> tuple[str, bool, list[Any] | None]:
    """Reduce a type annotation to (kind, optional, literal choices)."""
    optional = annotation.startswith("Optional[") or "None" in annotation.split("|")
    inner = annotation
    m = re.fullmatch(r"Optional\[(.*)\]", annotation)
    if m:
        inner = m.group(1)
    choices = None
    lit = re.fullmatch(r"Literal\[(.*)\]", inner)
    if lit:
        try:
            value = ast.literal_eval("[" + lit.group(1) + "]")
            choices = [v for v in value if v is not None]
        except (ValueError, SyntaxError):
            choices = None
        kinds = {type(c).__name__ for c in choices or []}
        return (kinds.pop() if len(kinds) == 1 else "str"), optional, choices
    for k in ("bool", "int", "float", "str"):
        if inner == k:
            return k, optional, None
    if inner.startswith(("List[", "list[")):
        return "list", optional, None
    if inner.startswith(("Dict[", "dict[")):
        return "dict", optional, None
    if "Union[" in inner or "|" in inner:
        return "any", optional, None
    return "any", optional, None


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return "<computed>"


def fields_from_source(name: str, source: str) -> list[dict[str, Any]]:
    out = []
    tree = ast.parse(source, filename=name)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            ann = stmt.annotation
            if not (isinstance(ann, ast.Subscript) and getattr(ann.value, "id", None) == "A"):
                continue
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            type_src = ast.unparse(elts[0])
            meta = elts[1] if len(elts) > 1 else None
            help_text, aliases, no_cli, action = "", [], False, None
            if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
                help_text = meta.value
            elif isinstance(meta, ast.Call):
                for kw in meta.keywords:
                    if kw.arg == "help":
                        v = _literal(kw.value)
                        help_text = v if isinstance(v, str) else ""
                    elif kw.arg == "aliases":
                        v = _literal(kw.value)
                        aliases = v if isinstance(v, list) else []
                    elif kw.arg == "action":
                        action = ast.unparse(kw.value)
                    elif kw.arg == "no_cli":
                        no_cli = bool(_literal(kw.value))
            kind, optional, choices = _kind(type_src)
            field = stmt.target.id
            out.append(
                {
                    "name": field,
                    "flag": "--" + field.replace("_", "-"),
                    "aliases": aliases,
                    "type": kind,
                    "optional": optional,
                    "choices": choices,
                    "default": _literal(stmt.value),
                    "no_cli": no_cli,
                    "action": action,
                    "help": help_text.split(". ")[0][:160],
                    "namespace": Path(name).stem,
                }
            )
    return out


def main(wheel: str) -> None:
    fields: list[dict[str, Any]] = []
    with zipfile.ZipFile(wheel) as zf:
        version = next(
            n.split("/")[0].removesuffix(".dist-info").split("-")[1]
            for n in zf.namelist()
            if n.endswith(".dist-info/METADATA")
        )
        for n in sorted(zf.namelist()):
            if n.startswith(FIELDS_DIR) and n.endswith(".py") and not n.endswith("__init__.py"):
                fields += fields_from_source(n, zf.read(n).decode())
    fields.sort(key=lambda f: f["name"])
    OUT.write_text(
        json.dumps({"sglang_version": version, "fields": fields}, indent=1, sort_keys=True) + "\n"
    )
    print(f"wrote {len(fields)} fields of sglang {version} to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
