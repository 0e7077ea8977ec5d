"""Writing unit files so they change atomically or not at all."""

from __future__ import annotations

import contextlib
import fcntl
import os
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


@contextlib.contextmanager
def held_lock(
    directory: Path, action: str, held: Callable[[str, str, str], LockedError]
) -> Iterator[None]:
    """flock `directory`/lock for the life of the block; the kernel releases it when the process
    dies, however it dies. The file records "pid since action" so that a second caller is told
    who holds it: `held(pid, since, action)` builds that caller's error."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise InputError(
            f"cannot use the state dir {directory}: {e.strerror}",
            field="--state-dir",
            fix="run as root for /var/lib/deploy, or pass --state-dir (or DEPLOY_STATE_DIR) with a directory you can write",
        ) from None
    try:
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
