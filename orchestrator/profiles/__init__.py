"""Profiles: TOML in, a validated `Spec` out.

A profile is a built-in name (the TOML files beside this module) or a path to a .toml file.
`extends` inherits another profile and overrides keys; `unset` drops inherited ones. Every
error is an `orchestrator.errors.ProfileError`/`UnsafeValueError` whose message names the
field and the fix; nothing here touches the disk except to read. A loaded profile's
environment file is registered with `orchestrator.redact`, so no command prints its values.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from orchestrator import redact
from orchestrator.errors import ProfileError
from orchestrator.profiles.fields import (
    CLUSTER_FIELDS,
    MAX_PROFILE_BYTES,
    REQUIRED,
    SCHEMA,
    SECRET_FIELDS,
    SERVER_RANGES,
    TOP_LEVEL,
    check_values,
    did_you_mean,
    type_error,
)
from orchestrator.profiles.spec import (
    HELPER_SUFFIXES,
    NAME_RE,
    ClusterConfig,
    HardwareConfig,
    HealthConfig,
    K8sConfig,
    ModelFacts,
    Spec,
    UnitConfig,
)
from orchestrator.sglang import release
from orchestrator.sglang.flags import table
from orchestrator.sglang.versions import resolve


@dataclass(frozen=True)
class BuiltIn:
    name: str
    description: str
    path: str


def builtin_dir() -> Path:
    return Path(str(resources.files("orchestrator.profiles")))


def builtins() -> list[BuiltIn]:
    out = []
    for p in sorted(builtin_dir().glob("*.toml")):
        data = _parse(p, p.stem)
        out.append(BuiltIn(p.stem, str(data.get("description", "")), str(p)))
    return out


def _read_profile(path: Path, shown: str) -> bytes:
    """The bytes of a profile file: a regular file only (a FIFO or a device such as /dev/zero
    would block or never end), opened without blocking, at most MAX_PROFILE_BYTES."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ProfileError(
                f"profile {shown} is not a regular file",
                field="PROFILE",
                fix="give the path of a .toml file (not a FIFO, device or directory)",
            )
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_PROFILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_PROFILE_BYTES:
            raise ProfileError(
                f"profile {shown} is larger than {MAX_PROFILE_BYTES // 1024} KiB",
                field="PROFILE",
                fix="a profile is a short TOML file; check that this is the right file",
            )
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parse(path: Path, shown: str) -> dict[str, Any]:
    try:
        text = _read_profile(path, shown).decode("utf-8")
    except FileNotFoundError:
        raise ProfileError(
            f"profile file {shown} does not exist",
            field="PROFILE",
            fix="give a built-in profile name (see `deploy profiles`) or the path of a .toml file",
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileError(
            f"profile file {shown} cannot be read ({e.__class__.__name__}: {e})",
            field="PROFILE",
            fix="check the path and its permissions; profiles are UTF-8 TOML",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(
            f"profile {shown} is not valid TOML: {e}",
            field="PROFILE",
            fix="correct the TOML syntax at that line (strings need quotes, tables [brackets])",
        ) from None
    except RecursionError:
        raise ProfileError(
            f"profile {shown} nests arrays or tables too deeply to read",
            field="PROFILE",
            fix="a profile needs plain tables of keys and values; flatten it",
        ) from None


def _locate(ref: str, relative_to: Path | None) -> tuple[Path, str]:
    """A built-in name or a path -> (file, how to name it in messages)."""
    if not ref.endswith(".toml") and "/" not in ref:
        p = builtin_dir() / f"{ref}.toml"
        if p.exists():
            return p, f"{ref} (built-in)"
        names = [b.stem for b in builtin_dir().glob("*.toml")]
        hint = did_you_mean(ref, names)
        raise ProfileError(
            f"unknown profile {ref!r}" + (f"; {hint}" if hint else ""),
            field="PROFILE",
            fix=f"use one of the built-in profiles ({', '.join(sorted(names))}) or a path to a .toml file",
        )
    p = Path(ref).expanduser()
    if not p.is_absolute() and relative_to is not None:
        p = relative_to / p
    return p, str(p)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _raw_chain(
    ref: str, relative_to: Path | None, seen: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, str], tuple[str, ...]]:
    path, shown = _locate(ref, relative_to)
    key = str(path.resolve()) if path.exists() else str(path)
    if key in seen:
        raise ProfileError(
            f"profile {shown} extends itself (through {' -> '.join((*seen, key))})",
            field="extends",
            fix="point extends at a different profile, such as a built-in one",
        )
    data = _parse(path, shown)
    for k in data:
        if k not in TOP_LEVEL:
            hint = did_you_mean(k, TOP_LEVEL)
            raise ProfileError(
                f"unknown key {k!r} at the top of profile {shown}" + (f"; {hint}" if hint else ""),
                field=k,
                fix=f"use only {', '.join(TOP_LEVEL)}",
            )
    check_values(data, shown)
    prov: dict[str, str] = {}
    chain: tuple[str, ...] = ()
    merged: dict[str, Any] = {}
    parent = data.get("extends")
    if parent is not None:
        if not isinstance(parent, str):
            raise type_error("extends", "a profile name or path (string)", parent)
        merged, prov, chain = _raw_chain(parent, path.parent, (*seen, key))
    unset = data.get("unset", [])
    if not isinstance(unset, list) or not all(isinstance(u, str) for u in unset):
        raise type_error("unset", 'a list of "table.key" strings', unset)
    for item in unset:
        table_name, _, k = item.partition(".")
        if table_name not in ("server", *SCHEMA) or not k:
            raise ProfileError(
                f"unset entry {item!r} is not of the form table.key",
                field="unset",
                fix='write entries such as "server.speculative_eagle_topk"',
            )
        sect = merged.get(table_name)
        if isinstance(sect, dict):
            sect = dict(sect)
            sect.pop(k, None)
            merged[table_name] = sect
        prov.pop(item, None)
    own = {k: v for k, v in data.items() if k not in ("extends", "unset")}
    for sect_name, sect in own.items():
        if isinstance(sect, dict):
            for k in sect:
                prov[f"{sect_name}.{k}"] = shown
    merged = _merge(merged, own)
    if "name" not in data:
        merged.pop("name", None)
    return merged, prov, (shown, *chain)


def _server(values: Any, version: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The validated [server] as SGLang `version` ends up with it, and a warning per deprecated
    flag the profile sets (field -> text); SGLang's own translation of such a flag is applied."""

    if not isinstance(values, dict):
        raise type_error("server", "a table of SGLang ServerArgs fields", values)
    t = table(version)
    spell = t.by_flag()
    out: dict[str, Any] = {}
    warnings: dict[str, str] = {}
    for k, v in values.items():
        fieldname = f"server.{k}"
        f = t.fields.get(k)
        if f is None:
            name = spell.get(k) or spell.get(k.replace("-", "_"))
            if name is None:  # argparse takes unique prefixes, so `--tp` means --tp-size
                prefix = "--" + k.replace("_", "-")
                hits = {f.name for f in t.fields.values() if f.flag.startswith(prefix)}
                name = hits.pop() if len(hits) == 1 else None
            if name:
                hint = f"did you mean {name!r}? Keys are SGLang's ServerArgs field names, not flags"
            elif k in release(version).renamed:
                hint = f"use {release(version).renamed[k]}"
            else:
                hint = (
                    did_you_mean(k, list(t.fields)) or "see `python -m sglang.launch_server --help`"
                )
            raise ProfileError(
                f"{fieldname} is not a field SGLang {t.sglang_version} knows; {hint}",
                field=fieldname,
                fix="use the ServerArgs field name: --speculative-eagle-topk is speculative_eagle_topk, --tp is tp_size",
            )
        if k in SECRET_FIELDS:
            raise ProfileError(
                f"{fieldname} would put a secret on the command line in the unit file",
                field=fieldname,
                fix=f"put the key in unit.environment_file (e.g. SGLANG_API_KEY=...) and set "
                f'unit.{k}_env = "SGLANG_API_KEY"; the unit then passes it as ${{SGLANG_API_KEY}}',
            )
        retired = t.deprecated.get(k)
        if retired is not None and retired.refuses:
            raise ProfileError(
                f"{fieldname}: SGLang {t.sglang_version} refuses {retired.flag}: "
                f"{retired.error_message}",
                field=fieldname,
                fix=f"remove {k} from [server]"
                + (f" and use {retired.new_flag}" if retired.new_flag else ""),
            )
        if f.no_cli and retired is None:
            raise ProfileError(
                f"{fieldname} is no longer a command-line flag in SGLang {t.sglang_version}",
                field=fieldname,
                fix=f"remove {k} from [server]",
            )
        out[k] = _server_value(f.type, f.choices, v, fieldname)
        if retired is not None and out[k] not in (False, None):
            instead = f"; use {retired.new_flag} instead" if retired.new_flag else ""
            what = "ignores it" if retired.ignored else "translates it"
            warnings[k] = (
                f"{fieldname}: {retired.flag} is deprecated in SGLang {t.sglang_version}, "
                f"which warns and {what}{instead}"
            )
        if k in SERVER_RANGES and isinstance(out[k], (int, float)):
            lo, hi = SERVER_RANGES[k]
            if not lo <= out[k] <= hi:
                raise ProfileError(
                    f"{fieldname} = {v} is out of range",
                    field=fieldname,
                    fix=f"set {k} between {lo:g} and {hi:g}",
                )
    for k in [k for k in out if k in t.deprecated]:
        out = release(version).resolve_deprecated(k, out)
        if t.deprecated[k].ignored:
            out.pop(k, None)
    return out, warnings


def _server_value(kind: str, choices: tuple[Any, ...] | None, v: Any, fieldname: str) -> Any:
    if kind == "bool" and not isinstance(v, bool):
        raise type_error(fieldname, "true or false", v)
    if kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
        raise type_error(fieldname, "an integer", v)
    if kind == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise type_error(fieldname, "a number", v)
        v = float(v)
    if kind == "str" and not isinstance(v, str):
        raise type_error(fieldname, "a string", v)
    if kind == "list":
        if not isinstance(v, list):
            v = [v]
        if not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
            raise type_error(fieldname, "a list of strings or numbers", v)
    if kind == "dict" and not isinstance(v, dict):
        raise type_error(fieldname, "a table", v)
    if isinstance(v, (dict, list)) and kind not in ("list", "dict", "any"):
        raise type_error(fieldname, f"a single {kind}", v)
    if choices and v not in choices:
        raise ProfileError(
            f"{fieldname} = {v!r} is not one of SGLang's choices",
            field=fieldname,
            fix=f"set it to one of: {', '.join(map(str, choices))}",
        )
    return v


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    sect = data.get(name, {})
    if not isinstance(sect, dict):
        raise type_error(name, f"a [{name}] table", sect)
    schema = SCHEMA[name]
    out = {}
    for k, v in sect.items():
        if k not in schema:
            hint = did_you_mean(k, list(schema))
            raise ProfileError(
                f"unknown key {name}.{k}" + (f"; {hint}" if hint else ""),
                field=f"{name}.{k}",
                fix=f"[{name}] takes: {', '.join(schema)}",
            )
        out[k] = schema[k](v, f"{name}.{k}")
    for k in REQUIRED.get(name, ()):
        if k not in out:
            raise ProfileError(
                f"{name}.{k} is missing",
                field=f"{name}.{k}",
                fix=f"set {k} in the [{name}] table (or extend a profile that does)",
            )
    return out


def _cluster_sections(
    data: dict[str, Any], server: Mapping[str, Any]
) -> tuple[ClusterConfig, K8sConfig]:
    """[cluster] and [k8s], checked; [server] may not set what [cluster] sets."""
    for k, where in CLUSTER_FIELDS.items():
        if k in server:
            raise ProfileError(
                f"server.{k} is set, but deploy sets {k} itself from {where}",
                field=f"server.{k}",
                fix=f"remove {k} from [server] and use {where}",
            )
    cluster = _section(data, "cluster")
    k8s = _section(data, "k8s")
    if "models_pvc" in k8s and "models_host_path" in k8s:
        raise ProfileError(
            "k8s.models_pvc and k8s.models_host_path are both set",
            field="k8s.models_pvc",
            fix="mount the models from one place: a PersistentVolumeClaim or a host path",
        )
    return ClusterConfig(**cluster, declared="cluster" in data), K8sConfig(**k8s)


def load(ref: str) -> Spec:
    """Load a built-in profile by name, or a .toml file by path, into a validated Spec."""
    data, prov, chain = _raw_chain(ref, None, ())
    path, shown = _locate(ref, None)
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ProfileError(
            f"profile name {name!r} cannot name a unit",
            field="name",
            fix="use lower-case letters, digits and '-' (at most 63), e.g. name = \"kimi-k26-eagle3\"",
        )
    for suffix, helper in HELPER_SUFFIXES.items():
        if not name.endswith(suffix):
            continue
        owner = name.removesuffix(suffix)
        raise ProfileError(
            f"profile name {name!r} ends in {suffix!r}: its unit sglang-{name}.service is "
            f"also the name of the {helper} of deployment {owner!r}, so the two would "
            "overwrite each other's unit and `deploy status` would not list this one",
            field="name",
            fix=f'choose a name that does not end in {suffix}, e.g. name = "{owner}-server"'
            + (" (or rename the file)" if "name" not in data else ""),
        )
    description = data.get("description", f"SGLang {name}")
    if not isinstance(description, str):
        raise type_error("description", "a string", description)
    unit = _section(data, "unit")
    sglang = resolve(unit["python"], _section(data, "sglang").get("version"))
    server, deprecations = _server(data.get("server", {}), sglang.version)
    if "model_path" not in server:
        raise ProfileError(
            "server.model_path is missing",
            field="server.model_path",
            fix="set model_path in [server] to the base model's directory",
        )
    for k in ("api_key_env", "admin_api_key_env"):
        if k in unit and "environment_file" not in unit:
            raise ProfileError(
                f"unit.{k} names a variable but there is no unit.environment_file to define it",
                field=f"unit.{k}",
                fix="set unit.environment_file to a root-owned 0600 file holding "
                + unit[k]
                + "=...",
            )
    health = _section(data, "health")
    health.setdefault("port", server.get("port", 30000))
    host = str(server.get("host", "127.0.0.1"))
    health.setdefault("host", {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host))
    hw = _section(data, "hardware")
    model = _section(data, "model")
    cluster, k8s = _cluster_sections(data, server)
    for sect in ("unit", "health", "hardware", "model", "sglang", "cluster", "k8s"):
        for k in SCHEMA[sect]:
            prov.setdefault(f"{sect}.{k}", "default")
    spec = Spec(
        name=name,
        description=description,
        source="built-in" if shown.endswith("(built-in)") else str(path),
        server=server,
        unit=UnitConfig(**unit),
        health=HealthConfig(**health),
        model=ModelFacts(**model),
        hardware=HardwareConfig(**hw),
        provenance=prov,
        chain=chain,
        sglang=sglang,
        cluster=cluster,
        k8s=k8s,
        deprecations=deprecations,
    )
    # Whatever the command prints from now on is scrubbed of the environment file's values.
    redact.register_spec(spec)
    return spec
