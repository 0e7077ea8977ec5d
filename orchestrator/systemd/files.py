"""Writing unit files so they change atomically or not at all."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.errors import InputError, LockedError


def default_unit_dir(user: bool) -> Path:
    """Where unit files go: /etc/systemd/system, or $XDG_CONFIG_HOME/systemd/user (default
    ~/.config) for a user manager. Here, not in systemd.py, so that `render --diff` does not
    import the D-Bus client."""
    if not user:
        return Path("/etc/systemd/system")
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", "..") or name.startswith(".") or "\0" in name:
        raise ValueError(f"bad unit file name: {name!r}")


def write_atomically(
    files: Mapping[str, str], directory: Path, mode: int = 0o644, *, field: str = "--unit-dir"
) -> list[str]:
    """Write every file into `directory`: all temp files first (same dir, fsynced), then one
    rename each, then fsync the directory. Returns the names whose content changed; unchanged
    files are left alone. If anything fails before the renames, nothing is changed."""
    for name in files:
        _check_name(name)
    changed = [n for n, text in files.items() if _read(directory / n) != text]
    if not changed:
        return []
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(
            f"cannot create the directory {directory}: {e.strerror}",
            field=field,
            fix=f"run as root, or choose a directory you can write with {field}",
        ) from None
    temps: dict[str, str] = {}
    try:
        for name in changed:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            temps[name] = tmp
            _write_fd(fd, files[name].encode("utf-8"), fsync=True)
            os.chmod(tmp, mode)
    except OSError as e:
        _unlink_all(temps.values())
        raise InputError(
            f"cannot write files in {directory}: {e.strerror}; nothing was changed",
            field=field,
            fix=f"run as root, or choose a directory you can write with {field}",
        ) from None
    except BaseException:  # an interrupt, a bad encoding: no temp file stays behind either
        _unlink_all(temps.values())
        raise
    try:
        for name in list(temps):
            os.replace(temps[name], directory / name)
            del temps[name]
    finally:
        _unlink_all(temps.values())  # the renames that did not happen (a failed one, an interrupt)
    fsync_dir(directory)
    return changed


def write_file(path: Path, data: bytes, mode: int = 0o600, *, fsync: bool = True) -> None:
    """Replace one file atomically: a temp file beside it, then a rename. On any failure (a
    full disk, an interrupt) the temp file is removed and the error raised; the old file stays.
    `fsync=False` for a file rewritten so often that losing the last version to a power cut
    does not matter (the liveness watcher's state)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _write_fd(fd, data, fsync=fsync)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        _unlink_all([tmp])
        raise


def _write_fd(fd: int, data: bytes, *, fsync: bool) -> None:
    """Write all of `data` to `fd` (a short write is retried), optionally fsync, close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_all(paths: Iterable[str]) -> None:
    for tmp in list(paths):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def remove_files(names: Iterable[str], directory: Path) -> list[str]:
    """Delete files from `directory`; the names that existed."""
    removed: list[str] = []
    for name in names:
        _check_name(name)
        try:
            (directory / name).unlink()
        except FileNotFoundError:
            continue
        removed.append(name)
    if removed:
        fsync_dir(directory)
    return removed


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError):
        return None


_STATE_FIX = (
    "make the state dir and everything in it owned by the user deploy runs as (root for "
    "/var/lib/deploy) and not writable by group or others (chmod -R go-w), with no symlinks; "
    "or pass another --state-dir"
)
MAX_STATE_ENTRIES = 20000  # lstat()ed per lock; a deployment keeps a few hundred files


def _state_refusal(path: Path, why: str) -> InputError:
    return InputError(
        f"refusing the state dir: {path} {why}; whoever controls it controls what deploy "
        "installs as root",
        field="--state-dir",
        fix=_STATE_FIX,
    )


def _check_state_entry(path: Path, st: os.stat_result, uid: int, *, above: bool = False) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise _state_refusal(path, "is a symbolic link")
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise _state_refusal(path, "is neither a directory nor a regular file")
    if st.st_uid != uid:
        raise _state_refusal(path, f"is owned by uid {st.st_uid}, not {uid}")
    sticky = above and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
    if st.st_mode & 0o022 and not sticky:  # a sticky /tmp above the state dir is fine
        raise _state_refusal(
            path, f"is writable by group or others (mode {st.st_mode & 0o7777:04o})"
        )


def check_state_tree(directory: Path, root: Path | None = None) -> None:
    """lstat() the state tree without following a link: `root` (default: the parent of
    `directory`), every directory from there down to `directory`, and everything inside
    `directory`. Each must be a directory or regular file, owned by this process's user (root
    when deploy runs as root) and not writable by group or others; InputError otherwise.
    Paths that do not exist yet are skipped (deploy creates them, 0700/0600)."""
    uid = os.geteuid()
    root = directory.parent if root is None else root
    chain = [directory]
    while chain[-1] != root and chain[-1].parent != chain[-1]:
        chain.append(chain[-1].parent)
    for d in reversed(chain):
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise _state_refusal(d, f"cannot be inspected ({e.strerror})") from None
        _check_state_entry(d, st, uid, above=d != directory)
    stack, seen = [directory], 0
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise _state_refusal(d, f"cannot be listed ({e.strerror})") from None
        for entry in entries:
            seen += 1
            if seen > MAX_STATE_ENTRIES:
                return
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            _check_state_entry(Path(entry.path), st, uid)
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(entry.path))


def read_state(path: Path, limit: int = 16 << 20) -> str:
    """A state file's text, opened without following a symlink and without blocking (a FIFO
    or device planted there is refused, not waited on), at most `limit` bytes.
    FileNotFoundError when absent; OSError (ELOOP for a link) or ValueError when unusable."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{path} is larger than {limit} bytes")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")


@contextlib.contextmanager
def held_lock(
    directory: Path,
    action: str,
    held: Callable[[str, str, str], LockedError],
    *,
    root: Path | None = None,
) -> Iterator[None]:
    """flock `directory`/lock for the life of the block; the kernel releases it when the process
    dies, however it dies. The file records "pid since action" so that a second caller is told
    who holds it: `held(pid, since, action)` builds that caller's error.

    The state tree is checked first (`check_state_tree`, from `root` down), and the lock file
    is opened with O_NOFOLLOW: a symlink planted as `lock` is refused, never written through."""
    check_state_tree(directory, root)
    # What deploy creates from here on is never group- or world-writable (a umask of 002
    # would otherwise make the next check_state_tree refuse deploy's own directories).
    os.umask(os.umask(0o022) | 0o022)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(
            directory / "lock",
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            0o600,
        )
    except OSError as e:
        raise InputError(
            f"cannot use the state dir {directory}: {e.strerror}"
            + (" (the lock file is a symbolic link)" if e.errno == 40 else ""),
            field="--state-dir",
            fix="run as root for /var/lib/deploy, or pass --state-dir (or DEPLOY_STATE_DIR) with a directory you can write",
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise _state_refusal(directory / "lock", "is not a regular file of this user")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = [*os.pread(fd, 200, 0).decode(errors="replace").split(), "?", "?", "?"]
            raise held(holder[0], holder[1], holder[2]) from None
        since = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {since} {action}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the flock
