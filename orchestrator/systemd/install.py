"""systemd over D-Bus (dbus-fast, asyncio), and atomic installation of unit files.

Calls go straight to org.freedesktop.systemd1 as raw messages: no introspection, one
round trip per call. Job-producing calls (start/stop/restart) wait for the job's
JobRemoved signal; `watch` turns the unit's PropertiesChanged signals into fresh
`UnitState`s, so a failure is seen when systemd announces it, not at the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.errors import AuthError, InvalidAddressError

from orchestrator.errors import Refused, SystemdUnavailable
from orchestrator.systemd.files import default_unit_dir, remove_files, write_atomically

SD_NAME = "org.freedesktop.systemd1"
SD_PATH = "/org/freedesktop/systemd1"
MANAGER = "org.freedesktop.systemd1.Manager"
UNIT = "org.freedesktop.systemd1.Unit"
SERVICE = "org.freedesktop.systemd1.Service"
JOB = "org.freedesktop.systemd1.Job"
PROPS = "org.freedesktop.DBus.Properties"
DBUS_NAME = "org.freedesktop.DBus"
DBUS_PATH = "/org/freedesktop/DBus"
UNIT_PATH_PREFIX = "/org/freedesktop/systemd1/unit/"

__all__ = [
    "Systemd",
    "SystemdError",
    "UnitState",
    "default_unit_dir",
    "install_units",
    "remove_units",
]

_DENIED = {
    "org.freedesktop.DBus.Error.AccessDenied",
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
}
_ABSENT = {
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
}


_LOST_FIX = (
    "check the D-Bus daemon (systemctl status dbus); once it is back, `deploy status` shows "
    "where the deployment stands and `deploy up` finishes what was begun"
)


class SystemdError(Refused):
    """A systemd call was refused or failed (unit not found, bad unit file, the bus lost, ...).
    A refusal as raised here; the deployer turns it into a `Failed` past its first change."""

    def __init__(self, message: str, *, dbus_error: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.dbus_error = dbus_error


@dataclass(frozen=True)
class UnitState:
    """One snapshot of a unit, as systemd reports it."""

    name: str
    load_state: str
    active_state: str
    sub_state: str
    result: str
    exec_main_code: int
    exec_main_status: int
    main_pid: int
    invocation_id: str
    n_restarts: int
    state_change_timestamp_us: int
    active_enter_timestamp_us: int
    fragment_path: str

    @property
    def failed(self) -> bool:
        """Failed, or waiting to be restarted after a failure."""
        return self.active_state == "failed" or self.sub_state == "auto-restart"

    @property
    def running(self) -> bool:
        return self.active_state == "active" and self.sub_state == "running"


def unit_object_path(unit: str) -> str:
    """The D-Bus object path of a unit (sd_bus_path_encode)."""
    if not unit:
        return UNIT_PATH_PREFIX + "_"
    out = []
    for i, ch in enumerate(unit.encode()):
        c = chr(ch)
        if (c.isascii() and c.isalpha()) or (c.isdigit() and i > 0):
            out.append(c)
        else:
            out.append(f"_{ch:02x}")
    return UNIT_PATH_PREFIX + "".join(out)


def _v(props: Mapping[str, Any], key: str, default: Any) -> Any:
    var = props.get(key)
    return default if var is None else var.value


def _state_from(name: str, unit: Mapping[str, Any], service: Mapping[str, Any]) -> UnitState:
    inv = _v(unit, "InvocationID", b"")
    return UnitState(
        name=_v(unit, "Id", name),
        load_state=_v(unit, "LoadState", ""),
        active_state=_v(unit, "ActiveState", ""),
        sub_state=_v(unit, "SubState", ""),
        result=_v(service, "Result", ""),
        exec_main_code=int(_v(service, "ExecMainCode", 0)),
        exec_main_status=int(_v(service, "ExecMainStatus", 0)),
        main_pid=int(_v(service, "MainPID", 0)),
        invocation_id=bytes(inv).hex(),
        n_restarts=int(_v(service, "NRestarts", 0)),
        state_change_timestamp_us=int(_v(unit, "StateChangeTimestamp", 0)),
        active_enter_timestamp_us=int(_v(unit, "ActiveEnterTimestamp", 0)),
        fragment_path=_v(unit, "FragmentPath", ""),
    )


def _bus_address(user: bool) -> str:
    if user:
        addr = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if addr:
            return addr
        runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
        return f"unix:path={runtime}/bus"
    return os.environ.get("DBUS_SYSTEM_BUS_ADDRESS") or "unix:path=/run/dbus/system_bus_socket"


def _unavailable(user: bool, address: str, cause: str) -> SystemdUnavailable:
    where = "the user bus" if user else "the system bus"
    if user:
        fix = (
            "log in to a session with a running user manager (systemd --user), or run "
            "`loginctl enable-linger $USER` and set XDG_RUNTIME_DIR; or drop --user to use "
            "the system manager"
        )
    else:
        fix = (
            "run deploy on the server itself, on a host booted with systemd, as root "
            "(or with sudo); or pass --user to use your own user manager"
        )
    return SystemdUnavailable(f"cannot reach systemd on {where} at {address}: {cause}", fix=fix)


class _Watch:
    """Async iterator of fresh UnitStates, fed by PropertiesChanged for one unit path."""

    def __init__(self, sd: Systemd, unit: str) -> None:
        self._sd = sd
        self.unit = unit
        self.path = unit_object_path(unit)
        self._event = asyncio.Event()
        self._last: UnitState | None = None
        self._first = True
        self._match = (
            f"type='signal',sender='{SD_NAME}',path='{self.path}',"
            f"interface='{PROPS}',member='PropertiesChanged'"
        )

    def poke(self) -> None:
        self._event.set()

    async def __aenter__(self) -> _Watch:
        await self._sd._add_match(self._match)
        self._sd._watches.setdefault(self.path, set()).add(self)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._sd._watches.get(self.path, set()).discard(self)
        if self._sd._bus.connected:
            with contextlib.suppress(Exception):
                await self._sd._remove_match(self._match)

    def __aiter__(self) -> _Watch:
        return self

    async def __anext__(self) -> UnitState:
        while True:
            if not self._first:
                await self._event.wait()  # poked by a change, or by the bus going away
            self._first = False
            self._event.clear()
            st = await self._sd.state(self.unit)
            if st != self._last:
                self._last = st
                return st


class _Changes:
    """Async iterator of one unit's PropertiesChanged signals, each as it came and in the order
    systemd sent them: (interface, {property: value}, [invalidated property names]). systemd
    sends a change of the type-specific interface (Service) before the Unit interface's.
    Raises SystemdError when the bus goes away."""

    def __init__(self, sd: Systemd, unit: str) -> None:
        self._sd = sd
        self.unit = unit
        self.path = unit_object_path(unit)
        self._queue: asyncio.Queue[tuple[str, dict[str, Any], list[str]] | None] = asyncio.Queue()
        self._match = (
            f"type='signal',sender='{SD_NAME}',path='{self.path}',"
            f"interface='{PROPS}',member='PropertiesChanged'"
        )

    def push(self, item: tuple[str, dict[str, Any], list[str]] | None) -> None:
        self._queue.put_nowait(item)

    async def __aenter__(self) -> _Changes:
        await self._sd._add_match(self._match)
        self._sd._changes.setdefault(self.path, set()).add(self)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._sd._changes.get(self.path, set()).discard(self)
        if self._sd._bus.connected:
            with contextlib.suppress(Exception):
                await self._sd._remove_match(self._match)

    def __aiter__(self) -> _Changes:
        return self

    async def __anext__(self) -> tuple[str, dict[str, Any], list[str]]:
        item = await self._queue.get()
        if item is None:
            raise SystemdError(
                "the connection to systemd was lost (the D-Bus daemon went away)", fix=_LOST_FIX
            )
        return item


class Systemd:
    """A connection to the system (or user) service manager."""

    def __init__(self, bus: MessageBus, user: bool) -> None:
        self._bus = bus
        self.user = user
        self._job_waiters: dict[str, asyncio.Future[str]] = {}
        self._jobs_done: OrderedDict[str, str] = OrderedDict()
        self._reload_waiters: list[asyncio.Future[None]] = []
        self._watches: dict[str, set[_Watch]] = {}
        self._changes: dict[str, set[_Changes]] = {}
        self._closing = False
        bus.add_message_handler(self._on_message)
        # A lost bus must end every wait at once (a watch, a job), not at a deadline.
        self._lost = asyncio.ensure_future(bus.wait_for_disconnect())
        self._lost.add_done_callback(self._on_lost)

    @classmethod
    async def connect(cls, user: bool = False) -> Systemd:
        """Connect to the manager and subscribe to its signals."""
        address = _bus_address(user)
        try:
            bus = await MessageBus(
                bus_address=address,
                bus_type=BusType.SESSION if user else BusType.SYSTEM,
                auth_timeout=5.0,
            ).connect()
        except FileNotFoundError as e:
            raise _unavailable(user, address, "no such socket (is this a systemd host?)") from e
        except ConnectionRefusedError as e:
            raise _unavailable(user, address, "connection refused (dbus not running?)") from e
        except PermissionError as e:
            raise _unavailable(user, address, "permission denied on the socket") from e
        except (AuthError, InvalidAddressError, OSError) as e:
            raise _unavailable(user, address, f"{type(e).__name__}: {e}") from e
        sd = cls(bus, user)
        try:
            await asyncio.gather(
                sd._add_match(
                    f"type='signal',sender='{SD_NAME}',path='{SD_PATH}',"
                    f"interface='{MANAGER}',member='JobRemoved'"
                ),
                sd._add_match(
                    f"type='signal',sender='{SD_NAME}',path='{SD_PATH}',"
                    f"interface='{MANAGER}',member='Reloading'"
                ),
                sd._manager("Subscribe"),
            )
        except SystemdError as e:
            sd.close()
            raise _unavailable(user, address, e.message) from e
        except BaseException:
            sd.close()
            raise
        return sd

    def _on_lost(self, fut: asyncio.Future[None]) -> None:
        if not fut.cancelled():
            fut.exception()  # retrieved: the calls below say what happened
        if self._closing:
            return
        lost = SystemdError(
            "the connection to systemd was lost (the D-Bus daemon went away)", fix=_LOST_FIX
        )
        waiting: list[asyncio.Future[str] | asyncio.Future[None]] = [
            *self._job_waiters.values(),
            *self._reload_waiters,
        ]
        for waiter in waiting:
            if not waiter.done():
                waiter.set_exception(lost)
        for watches in self._watches.values():
            for w in watches:
                w.poke()  # its next state() call raises
        for followers in self._changes.values():
            for c in followers:
                c.push(None)

    def close(self) -> None:
        self._closing = True
        self._lost.cancel()
        self._bus.remove_message_handler(self._on_message)
        self._bus.disconnect()
        waiting: list[asyncio.Future[str] | asyncio.Future[None]] = [
            *self._job_waiters.values(),
            *self._reload_waiters,
        ]
        for fut in waiting:
            if not fut.done():
                fut.cancel()

    async def __aenter__(self) -> Systemd:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- low level -------------------------------------------------------------------

    def _on_message(self, msg: Message) -> None:
        if msg.message_type != MessageType.SIGNAL:
            return None
        if msg.interface == MANAGER and msg.path == SD_PATH:
            if msg.member == "JobRemoved":
                _id, job, _unit, result = msg.body
                fut = self._job_waiters.pop(job, None)
                if fut is not None:
                    if not fut.done():
                        fut.set_result(result)
                else:
                    self._jobs_done[job] = result
                    while len(self._jobs_done) > 512:
                        self._jobs_done.popitem(last=False)
            elif msg.member == "Reloading" and msg.body and not msg.body[0]:
                waiters, self._reload_waiters = self._reload_waiters, []
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_result(None)
        elif msg.member == "PropertiesChanged" and msg.interface == PROPS:
            for w in self._watches.get(msg.path or "", ()):
                w.poke()
            followers = self._changes.get(msg.path or "", ())
            if followers and len(msg.body) == 3:
                iface, changed, invalidated = msg.body
                values = {k: v.value for k, v in changed.items()}
                for c in followers:
                    c.push((str(iface), dict(values), list(invalidated)))
        return None

    async def _call(
        self,
        member: str,
        signature: str = "",
        body: Sequence[Any] = (),
        *,
        path: str = SD_PATH,
        interface: str = MANAGER,
        destination: str = SD_NAME,
    ) -> list[Any]:
        if not self._bus.connected:
            raise SystemdError(
                f"systemd {member} was not sent: the connection to systemd was lost (the D-Bus daemon went away)",
                fix=_LOST_FIX,
            )
        try:
            reply = await self._bus.call(
                Message(
                    destination=destination,
                    path=path,
                    interface=interface,
                    member=member,
                    signature=signature,
                    body=list(body),
                )
            )
        except (EOFError, OSError) as e:
            raise SystemdError(
                f"systemd {member} got no answer: the connection to systemd was lost ({type(e).__name__}: {e})",
                fix=_LOST_FIX,
            ) from e
        if reply is None:  # the connection was closed while the call was pending
            raise SystemdError(f"systemd {member} got no answer: the connection was closed")
        if reply.message_type == MessageType.ERROR:
            name = reply.error_name or "unknown"
            text = str(reply.body[0]) if reply.body else name
            if name in _DENIED:
                raise SystemdUnavailable(
                    f"systemd refused {member}: {text}",
                    fix="run as root (sudo), or pass --user to use your own user manager",
                )
            if name in _ABSENT:
                raise SystemdError(
                    f"systemd is not on the bus ({text})",
                    dbus_error=name,
                    fix="run on a host booted with systemd",
                )
            raise SystemdError(f"systemd {member} failed: {text}", dbus_error=name)
        return list(reply.body)

    async def _manager(self, member: str, signature: str = "", *body: Any) -> list[Any]:
        return await self._call(member, signature, body)

    async def _add_match(self, rule: str) -> None:
        await self._call(
            "AddMatch",
            "s",
            [rule],
            path=DBUS_PATH,
            interface=DBUS_NAME,
            destination=DBUS_NAME,
        )

    async def _remove_match(self, rule: str) -> None:
        await self._call(
            "RemoveMatch",
            "s",
            [rule],
            path=DBUS_PATH,
            interface=DBUS_NAME,
            destination=DBUS_NAME,
        )

    async def _job(self, member: str, unit: str, mode: str, timeout_s: float | None) -> str:
        (job,) = await self._manager(member, "ss", unit, mode)
        if job in self._jobs_done:
            return self._jobs_done.pop(job)
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._job_waiters[job] = fut
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            raise SystemdError(
                f"{member} {unit}: the job did not finish within {timeout_s:g} s (still queued)"
            ) from None
        finally:
            self._job_waiters.pop(job, None)

    # -- public ----------------------------------------------------------------------

    async def reload(self, timeout_s: float = 90.0) -> None:
        """daemon-reload; returns once the new configuration is in effect."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reload_waiters.append(fut)
        ping: asyncio.Future[list[Any]] | None = None
        try:
            await self._manager("Reload")
            # systemd answers Reload either after reloading or (older versions) before;
            # Reloading(false) marks the end. A call sent now is served only after the
            # reload, so its answer also proves the reload is over.
            ping = asyncio.ensure_future(
                self._call("Get", "ss", [MANAGER, "Version"], interface=PROPS)
            )
            either: list[asyncio.Future[None] | asyncio.Future[list[Any]]] = [fut, ping]
            done, _ = await asyncio.wait(
                either, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                raise SystemdError(f"daemon-reload did not finish within {timeout_s:.0f} s")
        finally:
            if fut in self._reload_waiters:
                self._reload_waiters.remove(fut)
            fut.cancel()
            if ping is not None and not ping.done():
                ping.cancel()
            if ping is not None:
                with contextlib.suppress(BaseException):
                    await ping

    async def start(
        self, unit: str, *, mode: str = "replace", timeout_s: float | None = None
    ) -> str:
        """Start `unit`; the job result ("done", "failed", "canceled", "timeout", ...)."""
        return await self._job("StartUnit", unit, mode, timeout_s)

    async def stop(
        self, unit: str, *, mode: str = "replace", timeout_s: float | None = None
    ) -> str:
        """Stop `unit`; the job result."""
        return await self._job("StopUnit", unit, mode, timeout_s)

    async def restart(
        self, unit: str, *, mode: str = "replace", timeout_s: float | None = None
    ) -> str:
        """Restart `unit` (start it if stopped); the job result."""
        return await self._job("RestartUnit", unit, mode, timeout_s)

    async def enable(self, units: Iterable[str]) -> list[tuple[str, str, str]]:
        """Enable unit files, then reload. The changes: (type, symlink, target)."""
        _carries, changes = await self._manager(
            "EnableUnitFiles", "asbb", list(units), False, False
        )
        await self.reload()
        return [tuple(c) for c in changes]

    async def disable(self, units: Iterable[str]) -> list[tuple[str, str, str]]:
        """Disable unit files, then reload."""
        (changes,) = await self._manager("DisableUnitFiles", "asb", list(units), False)
        await self.reload()
        return [tuple(c) for c in changes]

    async def reset_failed(self, unit: str) -> None:
        """Clear the failed state and restart counter of `unit` (no-op if not loaded)."""
        try:
            await self._manager("ResetFailedUnit", "s", unit)
        except SystemdError as e:
            if e.dbus_error != "org.freedesktop.systemd1.NoSuchUnit":
                raise

    async def state(self, unit: str) -> UnitState:
        """A fresh snapshot of `unit` (loads it if needed)."""
        path = unit_object_path(unit)
        # Unpacked in a second step: mypy cannot infer the element types when the awaited
        # gather() is unpacked directly ("Cannot determine type").
        replies = await asyncio.gather(
            self._call("GetAll", "s", [UNIT], path=path, interface=PROPS),
            self._call("GetAll", "s", [SERVICE], path=path, interface=PROPS),
            return_exceptions=True,
        )
        unit_props, svc_props = replies
        if isinstance(unit_props, BaseException):
            raise unit_props
        svc = {} if isinstance(svc_props, BaseException) else svc_props[0]
        return _state_from(unit, unit_props[0], svc)

    async def properties(self, unit: str, interface: str = SERVICE) -> dict[str, Any]:
        """Every property of one interface of `unit` (Service by default), as plain values."""
        (props,) = await self._call(
            "GetAll", "s", [interface], path=unit_object_path(unit), interface=PROPS
        )
        return {k: v.value for k, v in props.items()}

    async def pending_job(self, unit: str) -> str | None:
        """The type of the job queued or running on `unit` ("stop", "restart", "start", ...),
        or None. A stop that systemd runs for such a job was asked for; one without was not."""
        job_id, job_path = (await self.properties(unit, UNIT))["Job"]
        if not job_id or job_path == "/":
            return None
        try:
            (kind,) = await self._call(
                "Get", "ss", [JOB, "JobType"], path=job_path, interface=PROPS
            )
        except SystemdError:  # the job finished in between
            return None
        return str(kind.value)

    async def job_type(self, job_path: str) -> str | None:
        """The JobType of a job ("stop", "restart", "start", ...); None once it is gone."""
        try:
            (kind,) = await self._call(
                "Get", "ss", [JOB, "JobType"], path=job_path, interface=PROPS
            )
        except SystemdError:
            return None
        return str(kind.value)

    def changes(self, unit: str) -> _Changes:
        """`async with sd.changes(u) as ch: async for iface, changed, invalidated in ch: ...`:
        every PropertiesChanged of the unit, unmerged, in order (see `_Changes`)."""
        return _Changes(self, unit)

    def watch(self, unit: str) -> _Watch:
        """`async with sd.watch(u) as states: async for st in states: ...`

        Yields the current state first, then a fresh state each time systemd announces
        a change of the unit (identical consecutive states are not repeated).
        """
        return _Watch(self, unit)


def install_units(files: Mapping[str, str], unit_dir: Path) -> list[str]:
    """Write unit files atomically (see `files.write_atomically`); the names that changed."""
    return write_atomically(files, unit_dir)


def remove_units(names: Iterable[str], unit_dir: Path) -> list[str]:
    """Delete unit files; the names that existed."""
    return remove_files(names, unit_dir)
