"""Objects -> YAML: PyYAML, keys in the order the builder set them, one document each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Block style; lists indented under their key, as kubectl prints them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True  # a label map used twice is written twice, never as &anchor / *alias


def dump_one(obj: Mapping[str, Any]) -> str:
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )


def dump(objects: Iterable[Mapping[str, Any]]) -> str:
    """A multi-document stream: `---` before each object."""
    return "".join("---\n" + dump_one(o) for o in objects)


def load_all(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def file_name(obj: Mapping[str, Any], index: int) -> str:
    """`--out DIR` file of one object: 01-leaderworkerset-NAME.yaml (apply order)."""
    return f"{index:02d}-{str(obj['kind']).lower()}-{obj['metadata']['name']}.yaml"
