"""Who listens on a TCP port of this machine: read from /proc (no ss, no psutil).

SGLang binds its HTTP port only after minutes of loading, and never checks it first; a port
already held makes the start fail late (uvicorn's "[Errno 98] address already in use") or,
worse, lets `/health` answer from the other server. `listeners(port)` names the holders:
the sockets in LISTEN state on that port (/proc/net/tcp, tcp6), and for each the process that
has it open (/proc/PID/fd, readable for every process when root) and its systemd unit.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.preflight.gpus import process_info

__all__ = ["Listener", "listeners"]

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


@dataclass(frozen=True)
class Listener:
    address: str  # "0.0.0.0", "127.0.0.1", "::", ...
    port: int
    pid: int | None  # None: the process could not be found (no permission)
    name: str | None = None  # its comm
    unit: str | None = None  # its systemd unit, from /proc/PID/cgroup

    def describe(self) -> str:
        if self.pid is None:
            return f"a process this user cannot see ({self.address}:{self.port})"
        what = f"pid {self.pid}" + (f" ({self.name})" if self.name else "")
        return what + (f", unit {self.unit}" if self.unit else "")


def _address(hex_addr: str) -> str:
    if len(hex_addr) == 8:  # IPv4, little-endian
        b = bytes.fromhex(hex_addr)[::-1]
        return ".".join(str(x) for x in b)
    words = [bytes.fromhex(hex_addr[i : i + 8])[::-1].hex() for i in range(0, 32, 8)]
    full = "".join(words)
    groups = [full[i : i + 4].lstrip("0") or "0" for i in range(0, 32, 4)]
    text = ":".join(groups)
    return "::" if text == "0:0:0:0:0:0:0:0" else text


def _sockets(port: int, proc: Path) -> dict[str, str]:
    """inode -> address of the LISTEN sockets on `port`."""
    out: dict[str, str] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) < 10 or f[3] != _LISTEN:
                continue
            addr, _, hex_port = f[1].partition(":")
            if int(hex_port, 16) == port:
                out[f[9]] = _address(addr)
    return out


def _owners(inodes: set[str], proc: Path) -> dict[str, int]:
    """inode -> pid of a process holding it open."""
    want = {f"socket:[{i}]" for i in inodes}
    found: dict[str, int] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.scandir(d / "fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(fd.path)
                    if link in want:
                        found[link[8:-1]] = int(d.name)
        if len(found) == len(inodes):
            break
    return found


def listeners(port: int, *, proc: Path = Path("/proc")) -> list[Listener]:
    """The sockets listening on `port` here, each with the process and unit holding it."""

    socks = _sockets(port, proc)
    if not socks:
        return []
    owners = _owners(set(socks), proc)
    out: list[Listener] = []
    for inode, addr in sorted(socks.items()):
        pid = owners.get(inode)
        if pid is None:
            out.append(Listener(addr, port, None))
            continue
        info = process_info(pid, None)
        out.append(Listener(addr, port, pid, info.name, info.unit))
    return out
