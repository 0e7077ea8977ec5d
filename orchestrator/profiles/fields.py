"""Profile validation: one checker per field (types, ranges, safe paths, secrets, Kubernetes
names), the bounds on input, and the schema that maps every key to its checker. Each error is a
`ProfileError`/`UnsafeValueError` that names the field and the fix. The loader
(orchestrator.profiles) reads, merges and builds the Spec; this module only judges values.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from orchestrator.errors import ProfileError, UnsafeValueError
from orchestrator.sglang import NEWEST
from orchestrator.systemd.releases import DEFAULT_STATE_DIR, state_dir

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\$?$")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HOST_RE = re.compile(r"^[A-Za-z0-9.:\-\[\]]+$")
# A Hugging Face hub id (org/name) as model_path, not a local path.
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
GPUS = ("b200", "b300", "gb200", "gb300", "h100", "h200", "h20", "h800", "a100", "l40s")

# One checker per key: (value, field) -> normalised value, or raise ProfileError.
Check = Callable[[Any, str], Any]


def type_error(fieldname: str, want: str, value: Any) -> ProfileError:
    got = type(value).__name__
    return ProfileError(
        f"{fieldname} must be {want}, not {got} {value!r}",
        field=fieldname,
        fix=f"write {fieldname} as {want} in the profile",
    )


def _str(value: Any, fieldname: str) -> str:
    if not isinstance(value, str):
        raise type_error(fieldname, "a string", value)
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
            raise type_error(fieldname, "an integer", value)
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
        raise type_error(fieldname, "true or false", value)
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
        raise type_error(fieldname, "a table of NAME = value", value)
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
            raise type_error(f"{fieldname}.{k}", "a string or number", v)
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
        raise type_error(fieldname, "a table of label = value", value)
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
        raise type_error(fieldname, "a list of tables ({ key, operator, value, effect })", value)
    out: list[dict[str, Any]] = []
    for i, t in enumerate(value):
        f = f"{fieldname}[{i}]"
        if not isinstance(t, dict):
            raise type_error(f, "a table { key, operator, value, effect }", t)
        item: dict[str, Any] = {}
        for k, v in t.items():
            if k not in TOLERATION_KEYS:
                hint = did_you_mean(k, TOLERATION_KEYS)
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


def did_you_mean(key: str, options: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def check_values(data: Mapping[str, Any], shown: str) -> None:
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
