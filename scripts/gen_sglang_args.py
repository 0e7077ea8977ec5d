"""Regenerate deploy's SGLang flag table from an SGLang wheel, without importing it.

Two layouts, both read with `ast`, so it works on a machine without torch or a GPU:
- 0.5.20 and later declare every ServerArgs field in `sglang/srt/arg_groups/fields/*.py` as
  `name: A[type, "help" | Arg(...)] = default`.
- Older 0.5.x releases (e.g. 0.5.11) have one `@dataclass class ServerArgs` in
  `sglang/srt/server_args.py` (the fields, their types and defaults) and a
  `ServerArgs.add_cli_args` that calls `parser.add_argument(...)` for each flag (spellings,
  choices, action, help, the default the command line really gets).

    python scripts/gen_sglang_args.py                   # 0.5.23 -> orchestrator/sglang/args-0.5.23.json
    python scripts/gen_sglang_args.py --version 0.5.11  # -> orchestrator/sglang/args-0.5.11.json
    python scripts/gen_sglang_args.py /tmp/sgl/sglang-0.5.23-*.whl --out /tmp/table.json

Without a wheel, `pip download --no-deps sglang==VERSION` fetches it into a temporary folder.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KNOWLEDGE = Path(__file__).resolve().parent.parent / "orchestrator" / "sglang"
DEFAULT_VERSION = "0.5.23"  # the newest release deploy knows; each goes to args-VERSION.json
FIELDS_DIR = "sglang/srt/arg_groups/fields/"
SERVER_ARGS = "sglang/srt/server_args.py"


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


# --- older releases: one dataclass ServerArgs + argparse calls in ServerArgs.add_cli_args ---


def _first_sentence(text: str) -> str:
    return text.split(". ")[0][:160]


def _leading_text(node: ast.AST | None) -> str:
    """The help text, or its leading constant part when it is `"..." + f"..."`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _leading_text(node.left)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    return ""


class _Module:
    """Module-level list constants (`ATTENTION_BACKEND_CHOICES = [...]`) of server_args.py."""

    def __init__(self, tree: ast.Module) -> None:
        self.lists: dict[str, list[Any]] = {}
        for stmt in tree.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                value = _literal(stmt.value)
                if isinstance(value, list | tuple):
                    self.lists[stmt.targets[0].id] = list(value)

    def value(self, node: ast.AST | None, class_defaults: dict[str, Any] | None = None) -> Any:
        """A literal, a module list (or one item of it), `ServerArgs.x`, else `<computed>`."""
        if node is None:
            return None
        if isinstance(node, ast.Name) and node.id in self.lists:
            return self.lists[node.id]
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.lists
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            return self.lists[node.value.id][node.slice.value]
        if (
            class_defaults is not None
            and isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ServerArgs"
        ):
            return class_defaults.get(node.attr, "<computed>")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "dataclasses.field",
            "field",
        ):
            for kw in node.keywords:
                if kw.arg == "default":
                    return self.value(kw.value)
                if kw.arg == "default_factory" and ast.unparse(kw.value) in ("list", "dict"):
                    return [] if ast.unparse(kw.value) == "list" else {}
            return "<computed>"
        return _literal(node)


def fields_from_server_args(name: str, source: str) -> list[dict[str, Any]]:
    tree = ast.parse(source, filename=name)
    module = _Module(tree)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    declared: dict[str, tuple[str, Any]] = {}  # field -> (annotation, dataclass default)
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = ast.unparse(stmt.annotation)
            if not ann.startswith(("ClassVar", "typing.ClassVar")):
                declared[stmt.target.id] = (ann, module.value(stmt.value))
    class_defaults = {k: v[1] for k, v in declared.items()}
    cli = _cli_calls(cls)
    out = []
    for field, (annotation, class_default) in declared.items():
        kind, optional, choices = _kind(annotation)
        canonical = "--" + field.replace("_", "-")
        help_text, aliases, action, default = "", [], None, class_default
        if field in cli:
            options, kws = cli[field]
            flag = canonical if canonical in options else options[0]
            aliases = [o for o in options if o != flag]
            help_text = _leading_text(kws.get("help"))
            act = kws.get("action")
            if isinstance(act, ast.Constant):
                # store_true is the plain boolean flag: the newer table's None for a bool.
                action = None if act.value == "store_true" else str(act.value)
            elif act is not None:
                action = ast.unparse(act)
            if "choices" in kws:
                c = module.value(kws["choices"])
                choices = [v for v in c if v is not None] if isinstance(c, list) else None
            # What the command line gives the field when the flag is absent: from_cli_args
            # passes argparse's value, whatever the dataclass default says.
            if "default" in kws:
                default = module.value(kws["default"], class_defaults)
            elif act is not None and _literal(act) == "store_true":
                default = False
            elif act is not None and _literal(act) == "store_false":
                default = True
            else:
                default = None
        else:
            flag = canonical
        out.append(
            {
                "name": field,
                "flag": flag,
                "aliases": aliases,
                "type": kind,
                "optional": optional,
                "choices": choices,
                "default": default,
                "no_cli": field not in cli,
                "action": action,
                "help": _first_sentence(help_text),
                "namespace": "server_args",
            }
        )
    return out


def _add_argument_calls(cls: ast.ClassDef) -> Iterator[ast.Call]:
    """Every `parser.add_argument(...)` call in ServerArgs.add_cli_args."""
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "add_cli_args":
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"
                ):
                    yield node


def _cli_calls(cls: ast.ClassDef) -> dict[str, tuple[list[str], dict[str, ast.expr]]]:
    """field -> (option strings, keywords) of its `parser.add_argument` call.

    argparse's dest is the first long option (`--tensor-parallel-size` -> tensor_parallel_size);
    `from_cli_args` copies some onto the field (`args.tp_size = args.tensor_parallel_size`).
    """
    calls: dict[str, tuple[list[str], dict[str, ast.expr]]] = {}
    for node in _add_argument_calls(cls):
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        dest = _literal(kws["dest"]) if "dest" in kws else None
        if not isinstance(dest, str):
            long = next((o for o in options if o.startswith("--")), options[0])
            dest = long.lstrip("-").replace("-", "_")
        if dest in calls:  # a second spelling of the same field (`--stream-output`)
            calls[dest][0].extend(options)
        else:
            calls[dest] = (options, kws)
    for fn in cls.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "from_cli_args"):
            continue
        for stmt in fn.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.value, ast.Attribute)
                and stmt.value.attr in calls
            ):
                calls[stmt.targets[0].attr] = calls.pop(stmt.value.attr)
    return calls


def cli_only_flags(source: str) -> list[str]:
    """Flags argparse takes that are no ServerArgs field (deprecated ones that only warn)."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    declared = {
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    return sorted(opts[0] for dest, (opts, _) in _cli_calls(cls).items() if dest not in declared)


DEPRECATED_ACTIONS = (
    "DeprecatedAction",
    "DeprecatedStoreTrueAction",
    "DeprecatedStoreConstAction",
    "DeprecatedAliasStoreAction",
)


def deprecated_flags(source: str) -> list[dict[str, Any]]:
    """The retired spellings `ServerArgs.add_cli_args` registers with one of SGLang's
    `Deprecated*Action`s, and what each does: `DeprecatedAction` with `error_message=` stops the
    launch (without one it warns and ignores the flag); `DeprecatedStoreTrueAction` warns and
    stores True on its field; `DeprecatedStoreConstAction` warns and stores `const_value`;
    `DeprecatedAliasStoreAction` warns and stores the value on the new field."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    out = []
    for node in _add_argument_calls(cls):
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        action = ast.unparse(kws["action"]).split(".")[-1] if "action" in kws else ""
        if action not in DEPRECATED_ACTIONS:
            continue
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        dest = _literal(kws["dest"]) if "dest" in kws else None
        if not isinstance(dest, str):
            long = next((o for o in options if o.startswith("--")), options[0])
            dest = long.lstrip("-").replace("-", "_")
        error = _literal(kws.get("error_message"))
        out.append(
            {
                "flag": options[0],
                "field": dest,
                "action": action,
                "new_flag": _literal(kws.get("new_flag")),
                "const": _literal(kws.get("const_value")),
                "error_message": _leading_text(kws["error_message"])
                if "error_message" in kws and error == "<computed>"
                else error,
                "help": _first_sentence(_leading_text(kws.get("help"))),
            }
        )
    return sorted(out, key=lambda d: d["flag"])


def wheel_fields(wheel: Path) -> tuple[str, list[dict[str, Any]]]:
    """(version, fields) of the wheel, whichever layout it has."""
    fields: list[dict[str, Any]] = []
    with zipfile.ZipFile(wheel) as zf:
        version = next(
            n.split("/")[0].removesuffix(".dist-info").split("-")[1]
            for n in zf.namelist()
            if n.endswith(".dist-info/METADATA")
        )
        names = sorted(zf.namelist())
        if any(n.startswith(FIELDS_DIR) for n in names):
            for n in names:
                if n.startswith(FIELDS_DIR) and n.endswith(".py") and not n.endswith("__init__.py"):
                    fields += fields_from_source(n, zf.read(n).decode())
        else:
            source = zf.read(SERVER_ARGS).decode()
            fields = fields_from_server_args(SERVER_ARGS, source)
            extra = cli_only_flags(source)
            if extra:
                print(f"not in the table (argparse flags without a field): {' '.join(extra)}")
    fields.sort(key=lambda f: f["name"])
    return version, fields


def wheel_deprecated(wheel: Path) -> list[dict[str, Any]]:
    """`deprecated_flags` of the wheel's server_args.py (both layouts register them there)."""
    with zipfile.ZipFile(wheel) as zf:
        return deprecated_flags(zf.read(SERVER_ARGS).decode())


def download(version: str, into: Path) -> Path:
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    subprocess.run(
        [*pip, "--python-version", "3.11", f"sglang=={version}", "-d", str(into)], check=True
    )
    return next(into.glob(f"sglang-{version}-*.whl"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wheel", nargs="?", help="an sglang wheel (default: pip download it)")
    ap.add_argument("--version", help=f"the sglang release (default {DEFAULT_VERSION})")
    ap.add_argument(
        "--out",
        type=Path,
        help="where to write (default orchestrator/sglang/args-VERSION.json)",
    )
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(a.wheel) if a.wheel else download(a.version or DEFAULT_VERSION, Path(tmp))
        version, fields = wheel_fields(wheel)
        deprecated = wheel_deprecated(wheel)
    if a.version and a.version != version:
        sys.exit(f"{wheel} is sglang {version}, not {a.version}")
    out = a.out or KNOWLEDGE / f"args-{version}.json"
    out.write_text(
        json.dumps(
            {"sglang_version": version, "fields": fields, "deprecated": deprecated},
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {len(fields)} fields of sglang {version} to {out}")


if __name__ == "__main__":
    main()
