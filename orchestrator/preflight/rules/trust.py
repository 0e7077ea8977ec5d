"""Who can change what runs: deploy's own code that root runs, and what the service user needs.

`root-code`: the incident recorder and the liveness watcher run deploy's code as root, with
the interpreter and the code tree that rendered them (`liveness.Runner`). Root must run only
what root alone can change: the interpreter (and the directories on its path), its
site-packages (each entry, and every .pth file, which runs at start-up), the standard
library's directory and deploy's own tree (every file), each owned by root and writable by no
group or other user. A parent directory writable by all is accepted only with the sticky bit
and owned by root (/tmp): there nobody else can rename or replace what root owns in it.

`service-user`: the server runs as unit.user. An interpreter it cannot execute (a venv built
from a Python under /root), or checkpoints and a working directory it cannot read, pass
every other check and then fail at once (203/EXEC) or after minutes.
"""

from __future__ import annotations

import grp
import os
import pwd
import site
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orchestrator
from orchestrator.preflight.rules.base import Context, Finding, Rule
from orchestrator.systemd.render import local_checkpoints
from orchestrator.watch.liveness import Runner

MAX_REPORTED = 3


def _who(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def unsafe(path: str | Path, *, parent: bool = False) -> str | None:
    """Why root should not trust `path` itself (lstat; a symlink's own bits do not matter):
    not owned by root, or writable by its group or by others. None when it is fine.
    `parent`: a directory on the way to something, where root-owned + sticky is accepted."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{path} cannot be inspected ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return (
            None if st.st_uid == 0 or parent else f"{path} is a symlink owned by {_who(st.st_uid)}"
        )
    if st.st_uid != 0:
        return f"{path} is owned by {_who(st.st_uid)}"
    writable = st.st_mode & 0o022
    if writable and parent and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX:
        return None
    if writable:
        who = (
            "its group and others"
            if writable == 0o022
            else ("its group" if writable & 0o020 else "others")
        )
        return f"{path} (mode {stat.S_IMODE(st.st_mode):04o}) is writable by {who}"
    return None


def _chain(path: str | Path) -> list[Path]:
    """Every directory from / down to `path`'s parent, for the path as written and resolved."""
    out: list[Path] = []
    for p in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        out.extend(reversed(p.parents))
    return list(dict.fromkeys(out))


def path_problems(path: str | Path, *, tree: bool = False) -> Iterator[str]:
    """Why root should not run code from `path`: the directories leading to it, it (as
    written and resolved), and with `tree` everything below it."""
    for d in _chain(path):
        if (why := unsafe(d, parent=True)) is not None:
            yield why
    for p in dict.fromkeys((Path(os.path.abspath(path)), Path(os.path.realpath(path)))):
        if (why := unsafe(p)) is not None:
            yield why
    if tree and os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                if (why := unsafe(os.path.join(root, name))) is not None:
                    yield why


@dataclass(frozen=True)
class CodeRoot:
    """What root runs for deploy: the interpreter, and the code it imports."""

    python: str
    tree: str  # the directory holding deploy's `orchestrator` package
    site_dirs: tuple[str, ...]  # the interpreter's site-packages
    stdlib: str

    @classmethod
    def current(cls) -> CodeRoot:
        """This process's, which `deploy up` renders into the root units (Runner.current)."""

        return cls(
            python=Runner.current().python,
            tree=str(Path(orchestrator.__file__).resolve().parent),
            site_dirs=tuple(d for d in site.getsitepackages() if os.path.isdir(d)),
            stdlib=os.path.dirname(os.__file__),
        )

    def problems(self) -> Iterator[tuple[str, str]]:
        """(what, why) for each path root should not trust."""
        for why in path_problems(self.python):
            yield "the interpreter", why
        for why in path_problems(self.tree, tree=True):
            yield "deploy's code", why
        for why in path_problems(self.stdlib):
            yield "the standard library", why
        cfg = os.path.join(os.path.dirname(os.path.dirname(self.python)), "pyvenv.cfg")
        if os.path.exists(cfg) and (venv := unsafe(cfg)) is not None:  # a venv's: names its home
            yield "the venv", venv
        for d in self.site_dirs:
            for why in path_problems(d):
                yield "site-packages", why
            try:
                entries = sorted(os.listdir(d))
            except OSError:
                continue
            for name in entries:
                if (entry := unsafe(os.path.join(d, name))) is not None:
                    yield "site-packages", entry


def _first(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in items:
        out.append(item)
        if len(out) >= MAX_REPORTED:
            break
    return out


@cache
def _problems(code: CodeRoot) -> list[tuple[str, str]]:
    """The first few problems of `code`, once a process (tune judges many candidates)."""
    return _first(code.problems())


def root_code(ctx: Context) -> Iterator[Finding]:
    if not ctx.on_box or ctx.user_mode:
        return
    code = CodeRoot.current()
    bad = _problems(code)
    if not bad:
        return
    what = "; ".join(f"{w}: {why}" for w, why in bad)
    yield Finding(
        "root-code",
        "error",
        ("deploy installation",),
        f"root would run deploy's incident recorder and liveness watcher with {code.python} "
        f"and the code in {code.tree}, but someone other than root can change them ({what}): "
        "whoever can would run code as root",
        "install deploy where only root can write, e.g. `sudo python3 -m venv /opt/deploy && "
        "sudo /opt/deploy/bin/pip install <deploy>` and run `sudo /opt/deploy/bin/deploy up`; "
        "or make the paths named root-owned and not group/world-writable "
        "(chown -R root:root, chmod -R go-w)",
    )


# --------------------------------------------------------------------------- the service user


@dataclass(frozen=True)
class Account:
    uid: int
    gids: frozenset[int]
    name: str

    @classmethod
    def of(cls, user: str, group: str | None) -> Account | None:
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            return None
        gid = pw.pw_gid
        if group:
            try:
                gid = grp.getgrnam(group).gr_gid
            except KeyError:
                return None
        return cls(pw.pw_uid, frozenset({gid, *os.getgrouplist(user, pw.pw_gid)}), user)

    def can(self, path: str | Path, want: int) -> bool | None:
        """Whether this account has the `want` bits (4 r, 2 w, 1 x) on `path` by its mode;
        None when that cannot be told from the mode (an ACL) or the path is gone."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        try:
            if os.getxattr(path, "system.posix_acl_access"):
                return None
        except OSError:
            pass
        if self.uid == 0:
            return not (want & 1) or bool(st.st_mode & 0o111) or stat.S_ISDIR(st.st_mode)
        if st.st_uid == self.uid:
            bits = (st.st_mode >> 6) & 7
        elif st.st_gid in self.gids:
            bits = (st.st_mode >> 3) & 7
        else:
            bits = st.st_mode & 7
        return bits & want == want


def unreachable(acct: Account, path: str, want: int) -> str | None:
    """Why `acct` cannot use `path` with `want` (every directory on the way needs x)."""
    real = os.path.realpath(path)
    for d in _chain(path):
        if acct.can(d, 1) is False:
            return f"{acct.name} cannot enter {d}"
    if acct.can(real, want) is False:
        need = {4: "read", 1: "execute", 5: "read and list"}.get(want, "use")
        shown = path if real == os.path.abspath(path) else f"{path} (-> {real})"
        return f"{acct.name} cannot {need} {shown}"
    return None


def service_user(ctx: Context) -> Iterator[Finding]:
    if not ctx.on_box or ctx.user_mode:
        return
    u = ctx.spec.unit
    acct = Account.of(u.user, u.group)
    if acct is None:
        return  # the user (or group) is missing: systemd says so at start

    checks: list[tuple[str, str, int]] = [("unit.python", u.python, 1)]
    if os.path.isdir(u.working_directory):
        checks.append(("unit.working_directory", u.working_directory, 1))
    for role, p in local_checkpoints(ctx.spec):
        key = "server.model_path" if role == "model" else "server.speculative_draft_model_path"
        if os.path.isdir(p):
            checks.append((key, p, 5))
            if os.path.exists(os.path.join(p, "config.json")):
                checks.append((key, os.path.join(p, "config.json"), 4))
    for field_, path, want in checks:
        why = unreachable(acct, path, want)
        if why is None:
            continue
        yield Finding(
            "service-user",
            "error",
            (field_,),
            f"the server runs as User={u.user}, and {why}: it would fail at once "
            "(status 203/EXEC for the interpreter, 200/CHDIR for the directory) or, for "
            "checkpoints, after the start-up check",
            f"give {u.user} access (e.g. a venv built from a Python outside /root, "
            f"`chmod o+rx` on the directories, or a group {u.user} is in), or change {field_}",
        )


RULES: tuple[Rule, ...] = (
    Rule(
        "root-code",
        "On the box, the interpreter, site-packages and deploy's code that root runs for the "
        "incident recorder and the liveness watcher are owned by root and writable by no one else.",
        "not SGLang's: deploy's own units, which run as root",
        root_code,
        "secrets",
    ),
    Rule(
        "service-user",
        "On the box, unit.user can execute unit.python and read the checkpoints and the working "
        "directory.",
        "not checked by SGLang: systemd fails with 203/EXEC or 200/CHDIR, or SGLang cannot open the weights",
        service_user,
        "secrets",
    ),
)
