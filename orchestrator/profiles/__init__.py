"""Profiles: TOML in, a validated `Spec` out.

A profile is a built-in name (the TOML files beside this module) or a path to a .toml file.
`extends` inherits another profile and overrides keys; `unset` drops inherited ones. Every
error is an `orchestrator.errors.ProfileError`/`UnsafeValueError` whose message names the
field and the fix; nothing here touches the disk except to read. A loaded profile's
environment file is registered with `orchestrator.redact`, so no command prints its values.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from orchestrator import redact
from orchestrator.errors import ProfileError, UnsafeValueError
from orchestrator.sglang import NEWEST
from orchestrator.sglang.versions import resolve
from orchestrator.spec import (
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

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\$?$")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HOST_RE = re.compile(r"^[A-Za-z0-9.:\-\[\]]+$")
GPUS = ("b200", "b300", "gb200", "gb300", "h100", "h200", "h20", "h800", "a100", "l40s")

# One checker per key: (value, field) -> normalised value, or raise ProfileError.
Check = Callable[[Any, str], Any]


@dataclass(frozen=True)
class BuiltIn:
    name: str
    description: str
    path: str


def _type_error(fieldname: str, want: str, value: Any) -> ProfileError:
    got = type(value).__name__
    return ProfileError(
        f"{fieldname} must be {want}, not {got} {value!r}",
        field=fieldname,
        fix=f"write {fieldname} as {want} in the profile",
    )


def _str(value: Any, fieldname: str) -> str:
    if not isinstance(value, str):
        raise _type_error(fieldname, "a string", value)
    return value


def _matching(pattern: re.Pattern[str], what: str, fix: str) -> Check:
    """A string that must match `pattern`; `what` completes "X = 'v' is not ...", and `fix`
    may name the field as {field}."""

    def check(value: Any, fieldname: str) -> str:
        s = _str(value, fieldname)
        if not pattern.match(s):
            raise ProfileError(
                f"{fieldname} = {s!r} is not {what}",
                field=fieldname,
                fix=fix.format(field=fieldname),
            )
        return s

    return check


# ------------------------------------------------------------------ bounds on input

MAX_PROFILE_BYTES = 1 << 20  # a profile is a few hundred bytes; 1 MiB is generous
MAX_DEPTH = 8  # tables and arrays nest at most this deep (a profile needs 3)
MAX_ITEMS = 1024  # keys in one table, items in one array
MAX_STRING = 4096  # any string value (PATH_MAX); the description has its own, smaller cap
MAX_DESCRIPTION = 512
MAX_PATH_COMPONENT = 255

# Characters a path that reaches a unit file may not hold: whitespace separates the items of
# list directives (ReadWritePaths=, StateDirectory=), a backslash escapes or, at the end of a
# line, continues it into the next directive, quotes start a quoted item.
PATH_BAD_CHAR = re.compile(r"[\s\\\"'\x00-\x1f\x7f-\x9f]")
# Trees a working directory (ReadWritePaths=, StateDirectory=) may be neither in nor above:
# the service user could then write the system, or have systemd chown it to itself.
SYSTEM_TREES = (
    "/etc",
    "/usr",
    "/boot",
    "/efi",
    "/proc",
    "/sys",
    "/dev",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/var/lib/systemd",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/private",
    "/var/log/journal",
    "/run/systemd",
)
# A system unit's service user may not write root's home either; a user manager's unit runs
# as its own user, for whom /root may be home (checked by the renderer, which knows which).
SYSTEM_ONLY_TREES = ("/root",)
# Shared directories a working directory may lie inside but may not be (nor be above).
SHARED_DIRS = (
    "/",
    "/var",
    "/var/lib",
    "/var/cache",
    "/var/log",
    "/var/tmp",
    "/tmp",
    "/home",
    "/srv",
    "/opt",
    "/run",
    "/mnt",
    "/media",
)
# A URL with user information (user:password@ or token@) in it: a credential in the profile,
# which ends up in a world-readable unit file.
URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]+@")


def path_problem(value: str) -> str | None:
    """Why `value` cannot be a path in a unit file (None: it can). Absolute, normalised (no
    `.`, `..`, `//` or trailing `/`), no whitespace, backslash, quote or control character."""
    if not value.startswith("/"):
        return "is not an absolute path"
    m = PATH_BAD_CHAR.search(value)
    if m:
        return (
            f"holds {m.group()!r}: in a unit file whitespace splits a list of paths, a "
            "backslash escapes or continues the line, a quote starts a quoted item"
        )
    if len(value) > MAX_STRING:
        return f"is {len(value)} characters long"
    if value != "/":
        parts = value[1:].split("/")
        if any(p in ("", ".", "..") for p in parts):
            return "is not normalised (it has '.', '..', '//' or a trailing '/')"
        if any(len(p.encode()) > MAX_PATH_COMPONENT for p in parts):
            return f"has a component longer than {MAX_PATH_COMPONENT} bytes"
    return None


def _safe_path(value: Any, fieldname: str) -> str:
    s = _str(value, fieldname)
    why = path_problem(s)
    if why is not None:
        example = {
            "unit.python": "/opt/sglang/bin/python",
            "unit.environment_file": "/etc/sglang/secrets.env",
        }.get(fieldname, "/var/lib/sglang")
        cls = ProfileError if not s.startswith("/") else UnsafeValueError
        raise cls(
            f"{fieldname} = {s[:200]!r} {why}",
            field=fieldname,
            fix=f"give {fieldname} as a plain absolute path such as {example} "
            "(no spaces, quotes, backslashes, '.' or '..' in it)",
        )
    return s


def _within(path: str, tree: str) -> bool:
    return tree == "/" or path == tree or path.startswith(tree + "/")


def writable_tree_problem(
    path: str, state_dirs: tuple[str, ...], *, system: bool = False
) -> str | None:
    """Why the service may not be given `path` as its writable working directory (systemd's
    ReadWritePaths=, and StateDirectory= under /var/lib, which it chowns to the service user).
    None when it may. `state_dirs`: deploy's own state directories; `system`: for a system
    unit (also SYSTEM_ONLY_TREES)."""
    cands = [path]
    try:  # an existing path may be a symlink into one of these trees
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = path
    if real != path:
        cands.append(real)
    for p in cands:
        for sd in state_dirs:
            sd = os.path.normpath(sd)
            if _within(p, sd) or _within(sd, p):
                return (
                    f"{p} overlaps deploy's state directory {sd}, which holds the releases "
                    "that `deploy rollback` installs as root: the service user would own it"
                )
        for tree in SYSTEM_TREES + (SYSTEM_ONLY_TREES if system else ()):
            if _within(p, tree) or _within(tree, p):
                return f"{p} is in or above the system tree {tree}: the service user would own it"
        for shared in SHARED_DIRS:
            if p == shared or (shared != "/" and _within(shared, p)):
                return f"{p} is the shared directory {shared} itself"
    return None


def _working_directory(value: Any, fieldname: str) -> str:
    from orchestrator.releases import DEFAULT_STATE_DIR, state_dir

    s = _safe_path(value, fieldname)
    why = writable_tree_problem(s, (str(DEFAULT_STATE_DIR), str(state_dir())))
    if why is not None:
        raise UnsafeValueError(
            f"{fieldname} = {s!r} cannot be the server's writable directory: {why}",
            field=fieldname,
            fix=f"give {fieldname} a directory of its own, such as /var/lib/sglang",
        )
    return s


_abspath = _safe_path
_path_str = _matching(
    re.compile(r"^/[^\s\\\"'\x00-\x1f\x7f-\x9f]*$"),
    "a URL path starting with /",
    'write {field} as an URL path such as "/health"',
)
_user = _matching(
    USER_RE,
    "a valid user or group name",
    "use a name of lower-case letters, digits, '_' and '-', such as sglang",
)
_env_name = _matching(
    ENV_KEY_RE,
    "an environment variable name",
    "use letters, digits and '_' only, e.g. SGLANG_API_KEY",
)
_host = _matching(HOST_RE, "a host name or address", "set {field} to an address such as 127.0.0.1")


def _int(lo: int, hi: int) -> Check:
    def check(value: Any, fieldname: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(fieldname, "an integer", value)
        if not lo <= value <= hi:
            raise ProfileError(
                f"{fieldname} = {value} is out of range",
                field=fieldname,
                fix=f"set {fieldname} between {lo} and {hi}",
            )
        return value

    return check


def _bool(value: Any, fieldname: str) -> bool:
    if not isinstance(value, bool):
        raise _type_error(fieldname, "true or false", value)
    return value


def _one_of(*options: str) -> Check:
    def check(value: Any, fieldname: str) -> str:
        s = _str(value, fieldname).lower()
        if s not in options:
            raise ProfileError(
                f"{fieldname} = {value!r} is not one of {', '.join(options)}",
                field=fieldname,
                fix=f"set {fieldname} to one of: {', '.join(options)}",
            )
        return s

    return check


SECRET_KEY = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.I
)
SECRET_FIELDS = ("api_key", "admin_api_key")


def _environment(value: Any, fieldname: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _type_error(fieldname, "a table of NAME = value", value)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not ENV_KEY_RE.match(k):
            raise ProfileError(
                f"{fieldname}.{k} is not a valid environment variable name",
                field=f"{fieldname}.{k}",
                fix="use letters, digits and '_' only, not starting with a digit",
            )
        if SECRET_KEY.search(k):
            raise ProfileError(
                f"{fieldname}.{k} looks like a secret, and [unit.environment] values are written into "
                "the unit file, which every user can read",
                field=f"{fieldname}.{k}",
                fix=f"put {k}=... in a root-owned file with mode 0600 and name it in unit.environment_file",
            )
        if isinstance(v, bool):
            v = "1" if v else "0"
        if not isinstance(v, (str, int, float)):
            raise _type_error(f"{fieldname}.{k}", "a string or number", v)
        out[k] = str(v)
    return out


_sglang_version = _matching(
    re.compile(r"^\d+\.\d+(?:\.\d+)*(?:[.+-]?[A-Za-z0-9]+)*$"),
    "an SGLang version",
    "write {field} as a release number such as "
    + f'"{NEWEST.version}" (`pip show sglang` prints it)',
)


def _gpu(value: Any, fieldname: str) -> str:
    return _one_of(*GPUS)(value, fieldname)


# [cluster] and [k8s] (multi-node on systemd, `deploy export k8s`).
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$"
)
IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,511}$")
QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$")
LABEL_KEY_RE = re.compile(
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _host_port(value: Any, fieldname: str) -> str:
    s = _str(value, fieldname)
    host, sep, port = s.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if (
        not sep
        or not host
        or not HOST_RE.match(host)
        or not port.isdigit()
        or not 0 < int(port) < 65536
    ):
        raise ProfileError(
            f"{fieldname} = {s!r} is not HOST:PORT",
            field=fieldname,
            fix=f'set {fieldname} to node 0\'s address and a free port, e.g. "10.0.0.1:20000"',
        )
    return s


_image = _matching(
    IMAGE_RE,
    "a container image reference",
    "set {field} to an image such as "
    + f'"lmsysorg/sglang:v{NEWEST.version}-cu129" (pin a tag or digest)',
)
_dns_label = _matching(
    DNS_LABEL,
    "a Kubernetes name (lower-case letters, digits and '-', at most 63)",
    'set {field} to a name such as "inference"',
)
_dns_subdomain = _matching(
    DNS_SUBDOMAIN,
    "a Kubernetes object name (lower-case letters, digits, '-' and '.')",
    'set {field} to a name such as "kimi-models"',
)
_quantity = _matching(
    QUANTITY_RE,
    "a Kubernetes quantity",
    'write {field} as a size such as "64Gi"',
)


def _lws_version(value: Any, fieldname: str) -> str:
    return _one_of("0.8", "0.9", "0.10")(value, fieldname)


def _node_selector(value: Any, fieldname: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _type_error(fieldname, "a table of label = value", value)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not LABEL_KEY_RE.match(k):
            raise ProfileError(
                f"{fieldname}: {k!r} is not a Kubernetes label key",
                field=f"{fieldname}.{k}",
                fix='use a label key such as "nvidia.com/gpu.product" (quote keys with / or .)',
            )
        if not isinstance(v, str) or not LABEL_VALUE_RE.match(v) or len(v) > 63:
            raise ProfileError(
                f"{fieldname}.{k} = {v!r} is not a Kubernetes label value",
                field=f"{fieldname}.{k}",
                fix="use a string of letters, digits, '-', '_' and '.' (at most 63)",
            )
        out[k] = v
    return out


TOLERATION_KEYS = ("key", "operator", "value", "effect", "toleration_seconds")


def _tolerations(value: Any, fieldname: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise _type_error(fieldname, "a list of tables ({ key, operator, value, effect })", value)
    out: list[dict[str, Any]] = []
    for i, t in enumerate(value):
        f = f"{fieldname}[{i}]"
        if not isinstance(t, dict):
            raise _type_error(f, "a table { key, operator, value, effect }", t)
        item: dict[str, Any] = {}
        for k, v in t.items():
            if k not in TOLERATION_KEYS:
                hint = _did_you_mean(k, TOLERATION_KEYS)
                raise ProfileError(
                    f"unknown key {f}.{k}" + (f"; {hint}" if hint else ""),
                    field=f"{f}.{k}",
                    fix=f"a toleration takes: {', '.join(TOLERATION_KEYS)}",
                )
            if k == "operator":
                item["operator"] = {"exists": "Exists", "equal": "Equal"}[
                    _one_of("exists", "equal")(v, f"{f}.operator")
                ]
            elif k == "effect":
                item["effect"] = {
                    "noschedule": "NoSchedule",
                    "prefernoschedule": "PreferNoSchedule",
                    "noexecute": "NoExecute",
                }[_one_of("noschedule", "prefernoschedule", "noexecute")(v, f"{f}.effect")]
            elif k == "toleration_seconds":
                item["tolerationSeconds"] = _int(0, 1 << 31)(v, f"{f}.{k}")
            elif k == "key":
                item["key"] = _matching(
                    LABEL_KEY_RE, "a taint key", 'use a taint key such as "nvidia.com/gpu"'
                )(v, f"{f}.key")
            else:
                item[k] = _str(v, f"{f}.{k}")
        if item.get("operator") == "Exists" and "value" in item:
            raise ProfileError(
                f"{f} has operator Exists and a value",
                field=f"{f}.value",
                fix='drop value, or use operator = "Equal"',
            )
        out.append(item)
    return tuple(out)


SCHEMA: dict[str, dict[str, Check]] = {
    "unit": {
        "python": _abspath,
        "module": _str,
        "user": _user,
        "group": _user,
        "working_directory": _working_directory,
        "environment": _environment,
        "environment_file": _abspath,
        "restart_sec": _int(1, 3600),
        "start_limit_burst": _int(1, 100),
        "start_limit_interval_s": _int(1, 86400),
        "limit_nofile": _int(1024, 1 << 30),
        "timeout_stop_s": _int(1, 3600),
        "check_models": _bool,
        "api_key_env": _env_name,
        "admin_api_key_env": _env_name,
    },
    "health": {
        "scheme": _one_of("http", "https"),
        "host": _host,
        "port": _int(1, 65535),
        "path": _path_str,
        "startup_timeout_s": _int(10, 86400),
        "liveness": _bool,
        "liveness_interval_s": _int(1, 86400),
        "liveness_failures": _int(1, 100),
        "liveness_timeout_s": _int(1, 3600),
        "liveness_restarts_per_hour": _int(0, 100),
    },
    "model": {
        "architecture": _str,
        "attention": _one_of("mla", "mha"),
        "hidden_size": _int(1, 1 << 20),
        "num_attention_heads": _int(1, 1 << 16),
        "draft_architecture": _str,
        "draft_hidden_size": _int(1, 1 << 20),
    },
    "hardware": {"gpu": _gpu, "gpu_count": _int(1, 64)},
    "sglang": {"version": _sglang_version},
    "cluster": {
        "nodes": _int(1, 64),
        "gpus_per_node": _int(1, 16),
        "replicas": _int(1, 1000),
        "dist_init_addr": _host_port,
    },
    "k8s": {
        "image": _image,
        "router_image": _image,
        "python": _str,
        "namespace": _dns_label,
        "models_pvc": _dns_subdomain,
        "models_host_path": _abspath,
        "models_mount": _abspath,
        "secret_name": _dns_subdomain,
        "shm_size": _quantity,
        "node_selector": _node_selector,
        "tolerations": _tolerations,
        "rdma": _bool,
        "lws_version": _lws_version,
    },
}
# [server] fields that [cluster] sets (and `deploy render|up --node-rank`): never both.
CLUSTER_FIELDS = {
    "nnodes": "[cluster] nodes",
    "node_rank": "--node-rank N on `deploy render|up`",
    "dist_init_addr": "[cluster] dist_init_addr",
}
TOP_LEVEL = ("name", "description", "extends", "unset", "server", *SCHEMA)
REQUIRED = {"unit": ("python",), "server": ("model_path",)}

# Ranges on SGLang values that are never right, whatever SGLang itself accepts.
SERVER_RANGES: dict[str, tuple[float, float]] = {
    "tp_size": (1, 64),
    "dp_size": (1, 64),
    "pp_size": (1, 64),
    "attn_dp_size": (1, 64),
    "port": (1, 65535),
    "mem_fraction_static": (0.01, 0.99),
    "page_size": (1, 1024),
    "max_running_requests": (1, 1 << 20),
    "context_length": (1, 1 << 24),
    "chunked_prefill_size": (-1, 1 << 24),
}


def _did_you_mean(key: str, options: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _check_values(data: Mapping[str, Any], shown: str) -> None:
    """Every value of a parsed profile, walked without recursion: no newline or control
    character (in a unit file it would end the line and start a directive of its own), no
    credentials inside a URL, and nothing nested, long or numerous beyond a profile's needs."""
    stack: list[tuple[str, Any, int]] = [(k, v, 1) for k, v in data.items()]
    while stack:
        fieldname, value, depth = stack.pop()
        if isinstance(value, str):
            _check_string(value, fieldname)
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise ProfileError(
                    f"{fieldname} in profile {shown} nests tables or arrays more than "
                    f"{MAX_DEPTH} deep",
                    field=fieldname,
                    fix="a profile needs plain tables of keys and values; flatten it",
                )
            if len(value) > MAX_ITEMS:
                raise ProfileError(
                    f"{fieldname} in profile {shown} has {len(value)} entries",
                    field=fieldname,
                    fix=f"keep tables and arrays under {MAX_ITEMS} entries",
                )
            if isinstance(value, dict):
                for k, v in value.items():
                    _check_string(k, f"{fieldname}.{k[:40]}")
                    stack.append((f"{fieldname}.{k}", v, depth + 1))
            else:
                stack.extend((f"{fieldname}[{i}]", v, depth + 1) for i, v in enumerate(value))


def _check_string(value: str, fieldname: str) -> None:
    cap = MAX_DESCRIPTION if fieldname == "description" else MAX_STRING
    if len(value) > cap:
        raise ProfileError(
            f"{fieldname} is {len(value)} characters long",
            field=fieldname,
            fix=f"shorten {fieldname} to at most {cap} characters",
        )
    if CONTROL.search(value):
        raise UnsafeValueError(
            f"{fieldname} contains a newline or control character ({value!r}); "
            "in a unit file it would start a new directive",
            field=fieldname,
            fix=f"remove the control characters from {fieldname}",
        )
    if URL_CREDENTIALS.search(value):
        raise UnsafeValueError(
            f"{fieldname} holds a URL with credentials in it (user:password@ or token@); the "
            "profile ends up in a unit file that every user can read",
            field=fieldname,
            fix=f"drop the user:password@ part from {fieldname} and put the credential in "
            "unit.environment_file (root-owned, mode 0600), e.g. HTTPS_PROXY=http://user:pass@host:3128",
        )


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
        hint = _did_you_mean(ref, names)
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
            hint = _did_you_mean(k, TOP_LEVEL)
            raise ProfileError(
                f"unknown key {k!r} at the top of profile {shown}" + (f"; {hint}" if hint else ""),
                field=k,
                fix=f"use only {', '.join(TOP_LEVEL)}",
            )
    _check_values(data, shown)
    prov: dict[str, str] = {}
    chain: tuple[str, ...] = ()
    merged: dict[str, Any] = {}
    parent = data.get("extends")
    if parent is not None:
        if not isinstance(parent, str):
            raise _type_error("extends", "a profile name or path (string)", parent)
        merged, prov, chain = _raw_chain(parent, path.parent, (*seen, key))
    unset = data.get("unset", [])
    if not isinstance(unset, list) or not all(isinstance(u, str) for u in unset):
        raise _type_error("unset", 'a list of "table.key" strings', unset)
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
    from orchestrator.flags import table
    from orchestrator.sglang import release

    if not isinstance(values, dict):
        raise _type_error("server", "a table of SGLang ServerArgs fields", values)
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
                    _did_you_mean(k, list(t.fields))
                    or "see `python -m sglang.launch_server --help`"
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
        raise _type_error(fieldname, "true or false", v)
    if kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
        raise _type_error(fieldname, "an integer", v)
    if kind == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _type_error(fieldname, "a number", v)
        v = float(v)
    if kind == "str" and not isinstance(v, str):
        raise _type_error(fieldname, "a string", v)
    if kind == "list":
        if not isinstance(v, list):
            v = [v]
        if not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
            raise _type_error(fieldname, "a list of strings or numbers", v)
    if kind == "dict" and not isinstance(v, dict):
        raise _type_error(fieldname, "a table", v)
    if isinstance(v, (dict, list)) and kind not in ("list", "dict", "any"):
        raise _type_error(fieldname, f"a single {kind}", v)
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
        raise _type_error(name, f"a [{name}] table", sect)
    schema = SCHEMA[name]
    out = {}
    for k, v in sect.items():
        if k not in schema:
            hint = _did_you_mean(k, list(schema))
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
        raise _type_error("description", "a string", description)
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
