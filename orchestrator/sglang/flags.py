"""SGLang's own flag table (read from each known release's wheel) and ServerArgs <-> argv.

Profile `[server]` keys are SGLang's ServerArgs field names, so the table is the only
translation needed: field -> `--flag`, plus its type, default and how argparse takes it.
`table(version)` is the table of one release (`orchestrator/sglang/args-<version>.json`);
without a version, the newest deploy knows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import cache
from importlib import resources
from typing import Any

from orchestrator.sglang import RELEASES, release


@dataclass(frozen=True)
class Field:
    name: str
    flag: str
    aliases: tuple[str, ...]
    type: str  # bool | int | float | str | list | dict | any
    optional: bool
    choices: tuple[Any, ...] | None
    default: Any
    no_cli: bool
    action: str | None
    help: str

    @property
    def boolean_optional(self) -> bool:
        return bool(self.action and self.action.endswith("BooleanOptionalAction"))


@dataclass(frozen=True)
class Deprecated:
    """A retired spelling SGLang still registers, and what its argparse action does with it:
    `DeprecatedAction` refuses the launch when it has an `error_message` (else warns and ignores
    the flag), `DeprecatedStoreTrueAction` warns and stores True on `field`,
    `DeprecatedStoreConstAction` warns and stores `const`, `DeprecatedAliasStoreAction` warns and
    stores the value on `field`."""

    flag: str
    field: str
    action: str
    new_flag: str | None
    const: Any
    error_message: str | None
    help: str

    @property
    def refuses(self) -> bool:
        return self.action == "DeprecatedAction" and self.error_message is not None

    @property
    def ignored(self) -> bool:
        return self.action == "DeprecatedAction" and self.error_message is None


@dataclass(frozen=True)
class FlagTable:
    sglang_version: str
    fields: Mapping[str, Field]
    # Retired spellings by ServerArgs field name (`enable_dp_attention` -> --enable-dp-attention).
    deprecated: Mapping[str, Deprecated] = field(default_factory=dict)

    def by_flag(self) -> dict[str, str]:
        """Every spelling (`--tp-size`, `--tensor-parallel-size`, `tp`) -> field name."""
        out: dict[str, str] = {}
        for f in self.fields.values():
            for spelling in (f.flag, *f.aliases):
                out[spelling] = f.name
                out[spelling.lstrip("-")] = f.name
                out[spelling.lstrip("-").replace("-", "_")] = f.name
        for d in self.deprecated.values():  # `--stream-output` -> incremental_streaming_output
            out.setdefault(d.flag, d.field)
        return out

    def defaults(self) -> dict[str, Any]:
        return {n: f.default for n, f in self.fields.items() if f.default != "<computed>"}


@cache
def table(version: str | None = None) -> FlagTable:

    r = release(version)
    raw = json.loads(resources.files("orchestrator.sglang").joinpath(r.args_file).read_text())
    fields = {
        f["name"]: Field(
            name=f["name"],
            flag=f["flag"],
            aliases=tuple(f["aliases"]),
            type=f["type"],
            optional=f["optional"],
            choices=tuple(f["choices"]) if f["choices"] else None,
            default=f["default"],
            no_cli=f["no_cli"],
            action=f["action"],
            help=f["help"],
        )
        for f in raw["fields"]
    }
    deprecated = {d["field"]: Deprecated(**d) for d in raw.get("deprecated", ())}
    return FlagTable(sglang_version=raw["sglang_version"], fields=fields, deprecated=deprecated)


def flag(name: str) -> str:
    """`speculative_eagle_topk` -> `--speculative-eagle-topk` (works for unknown names too)."""
    return _flag(table().fields, name)


def _flag(fields: Mapping[str, Field], name: str) -> str:
    f = fields.get(name)
    return f.flag if f else "--" + name.replace("_", "-")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def to_argv(
    server: Mapping[str, Any], order: Iterable[str] | None = None, *, version: str | None = None
) -> list[str]:
    """The launch_server arguments for these ServerArgs values, in a stable order.

    `model_path` first, then the rest in `order` (default: the mapping's own order).
    A bool True is the bare flag; False is omitted (or `--no-x` where SGLang has it).
    `version`: the SGLang release whose flag table applies (default: the newest known).
    """
    t = table(version).fields
    names = list(order) if order is not None else list(server)
    names.sort(key=lambda n: n != "model_path")
    argv: list[str] = []
    for name in names:
        value = server[name]
        f = t.get(name)
        ftype = f.type if f else "any"
        if ftype == "bool" or isinstance(value, bool):
            if value:
                argv.append(_flag(t, name))
            elif f is not None and f.boolean_optional:
                argv.append("--no-" + f.flag[2:])
            continue
        if isinstance(value, list):
            argv.append(_flag(t, name))
            argv.extend(_scalar(v) for v in value)
            continue
        if isinstance(value, dict):
            argv += [_flag(t, name), json.dumps(value, sort_keys=True, separators=(",", ":"))]
            continue
        argv += [_flag(t, name), _scalar(value)]
    return argv


def _coerce(f: Field | None, raw: str) -> Any:
    kind = f.type if f else "str"
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        return raw
    return raw


def from_argv(argv: Sequence[str], *, version: str | None = None) -> dict[str, Any]:
    """Parse launch_server arguments back to ServerArgs field names (best effort, no argparse
    abbreviations beyond `--tp`). Used on command lines recovered from units and logs."""
    spell = table(version).by_flag()
    t = table(version).fields
    out: dict[str, Any] = {}
    i = 0
    args = list(argv)
    while i < len(args):
        a = args[i]
        if not a.startswith("--"):
            i += 1
            continue
        key, _, inline = a.partition("=")
        name = spell.get(key) or spell.get(key.lstrip("-").replace("-", "_"))
        if name is None and key.startswith("--no-"):
            pos = spell.get("--" + key[5:])
            if pos:
                out[pos] = False
            i += 1
            continue
        if name is None and key == "--tp":
            name = "tp_size"
        f = t.get(name) if name else None
        if name is None:
            name = key[2:].replace("-", "_")
        if f is not None and f.type == "bool" and not inline:
            out[name] = True
            i += 1
            continue
        if inline:
            out[name] = _coerce(f, inline)
            i += 1
            continue
        values = []
        j = i + 1
        while j < len(args) and not args[j].startswith("--"):
            values.append(args[j])
            j += 1
        if f is not None and f.type == "list":
            out[name] = values
        elif values:
            out[name] = _coerce(f, values[0])
        else:
            out[name] = True
        i = j
    return out


@cache
def _spellings() -> tuple[dict[str, str], ...]:
    """`FlagTable.by_flag` of every release deploy knows, built once."""
    return tuple(table(v).by_flag() for v in RELEASES)


def refused_flag_hint(spelling: str) -> str:
    """What the flag tables of the releases deploy knows say of a flag an SGLang argument
    parser refused (`unrecognized arguments: --reasoning-parser`): whether some of them have
    it, else the nearest spellings they do have. For the fix of a log no rule names; it names
    no release number (the log's box may run any)."""
    name = spelling.split("=", 1)[0]
    if any(name in spell for spell in _spellings()):
        return (
            f"{name} is a flag of other SGLang releases (deploy's flag tables), not of the one "
            "that refused it: run a release that has it (`deploy validate` checks a profile's "
            "flags against its release), or drop the flag"
        )
    known = sorted({s for spell in _spellings() for s in spell if s.startswith("--")})
    near = get_close_matches(name, known, n=3, cutoff=0.75)
    also = f" (nearest: {', '.join(near)})" if near else ""
    return (
        f"{name} is no flag of any SGLang release deploy knows{also}: check its spelling against "
        "`python -m sglang.launch_server --help` of the installed release, or drop it"
    )


def refused_choice_hint(spelling: str, value: str) -> str:
    """The same, for a value an SGLang argument parser refused (`argument --tool-call-parser:
    invalid choice: 'llama4'`): whether other releases' choices hold it."""
    for v, spell in zip(RELEASES, _spellings(), strict=True):
        f = table(v).fields.get(spell.get(spelling, ""))
        if f is not None and f.choices and value in f.choices:
            return (
                f"{spelling} {value} is a choice of other SGLang releases (deploy's flag tables), "
                "not of the one that refused it: run a release that has it, or pick a value the "
                "parser lists"
            )
    return f"{value!r} is not among the values {spelling} takes: pick one the parser lists"
