"""Who holds the server's port: /proc read for real, with a socket this test opens."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from orchestrator import preflight, profiles
from orchestrator.preflight.ports import _address, listeners
from tests.helpers import write_profile


def _listening() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_listeners_names_the_process_holding_the_port() -> None:
    with _listening() as s:
        port = s.getsockname()[1]
        (got,) = listeners(port)
        assert got.address == "127.0.0.1" and got.port == port
        assert got.pid == os.getpid()
        assert got.name and got.name.startswith(("python", "pytest"))
        assert f"pid {os.getpid()}" in got.describe()
    assert listeners(port) == []


def test_addresses() -> None:
    assert _address("0100007F") == "127.0.0.1"
    assert _address("00000000000000000000000000000000") == "::"
    assert _address("00000000000000000000000001000000") == "0:0:0:0:0:0:0:1"


def test_up_refuses_a_port_another_process_holds(tmp_path: Path) -> None:
    """On the box (`up`), a port held by another process is an error naming it; off the box
    (`validate` elsewhere) the box's ports say nothing."""
    with _listening() as s:
        port = s.getsockname()[1]
        spec = profiles.load(str(write_profile(tmp_path, "p", server={"port": port})))
        r = preflight.run(spec, gpu="b200", on_box=True)
        (f,) = [f for f in r.errors if f.rule == "port-free"]
        assert f"port {port} is already in use by pid {os.getpid()}" in f.message
        assert "[server] port" in f.fix
        off = preflight.run(spec, gpu="b200", on_box=False)
        assert not [f for f in off.findings if f.rule == "port-free"]
    r = preflight.run(spec, gpu="b200", on_box=True)
    assert not [f for f in r.findings if f.rule == "port-free"]
