"""Wait for a started unit to become healthy: unit active/running AND GET url -> 200.

Three things run side by side until one decides: a watch on the unit (systemd's own
signals, so a crash or an auto-restart ends the wait at once), an HTTP poller (tenacity,
backoff capped at 0.25 s), and an optional reader of the start's journal lines that
keeps the current start-up phase. The deadline ends it otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_never, wait_exponential

from orchestrator.serverapi import BodyTooLarge, aget
from orchestrator.sglang import Milestone, phase_of
from orchestrator.systemd.install import Systemd, UnitState

POLL_MAX_WAIT_S = 0.25
TICK_S = 1.0


@dataclass(frozen=True)
class Progress:
    """What the live line shows."""

    elapsed_s: float
    phase: str | None  # Milestone.phase, None before the first milestone
    phase_label: str | None
    sub_state: str  # the unit's sub-state ("start-pre", "running", ...), "" before the first
    http_status: int | None  # last HTTP status; None while nothing answered
    http_detail: str  # plain words: "connection refused (not listening yet)", "503 ..."


@dataclass
class HealthOutcome:
    """How the wait ended."""

    status: Literal["healthy", "failed", "timeout"]
    elapsed_s: float
    unit: UnitState | None
    http_status: int | None
    phase: str | None
    detail: str


class _NotYet(Exception):
    """This probe did not find the service healthy; try again."""


_RETRY_ON = (_NotYet, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def describe_unit(st: UnitState) -> str:
    """The unit's state in plain words, e.g. 'failed (exit-code, status 1)'."""
    words = f"{st.active_state}/{st.sub_state}"
    extra = []
    if st.result and st.result != "success":
        extra.append(st.result)
    if st.exec_main_code == 1 and st.exec_main_status:  # CLD_EXITED
        extra.append(f"exit status {st.exec_main_status}")
    elif st.exec_main_code in (2, 3) and st.exec_main_status:  # CLD_KILLED / CLD_DUMPED
        extra.append(f"killed by signal {st.exec_main_status}")
    if st.n_restarts:
        extra.append(f"{st.n_restarts} restart{'s' if st.n_restarts != 1 else ''}")
    return words + (f" ({', '.join(extra)})" if extra else "")


class _Waiter:
    def __init__(
        self,
        systemd: Systemd,
        unit: str,
        url: str,
        timeout_s: float,
        on_progress: Callable[[Progress], None] | None,
        lines: AsyncIterator[str] | None,
        http_timeout_s: float,
    ) -> None:
        self.systemd = systemd
        self.unit_name = unit
        self.url = url
        self.timeout_s = timeout_s
        self.on_progress = on_progress
        self.lines = lines
        self.http_timeout_s = http_timeout_s
        self.t0 = time.monotonic()
        self.unit: UnitState | None = None
        self.seen_up = False  # the unit was activating/active during this wait
        self.http_status: int | None = None
        self.http_detail = "not asked yet"
        self.milestone: Milestone | None = None
        self.done: asyncio.Future[HealthOutcome] = asyncio.get_running_loop().create_future()
        self._last_progress: Progress | None = None

    # -- bookkeeping -----------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def progress(self, force: bool = False) -> None:
        if self.on_progress is None:
            return
        p = Progress(
            elapsed_s=self.elapsed(),
            phase=self.milestone.phase if self.milestone else None,
            phase_label=self.milestone.label if self.milestone else None,
            sub_state=self.unit.sub_state if self.unit else "",
            http_status=self.http_status,
            http_detail=self.http_detail,
        )
        last = self._last_progress
        if (
            force
            or last is None
            or (p.phase, p.sub_state, p.http_status, p.http_detail)
            != (last.phase, last.sub_state, last.http_status, last.http_detail)
        ):
            self._last_progress = p
            self.on_progress(p)

    def finish(self, status: Literal["healthy", "failed", "timeout"], detail: str) -> None:
        if self.done.done():
            return
        self.done.set_result(
            HealthOutcome(
                status=status,
                elapsed_s=self.elapsed(),
                unit=self.unit,
                http_status=self.http_status,
                phase=self.milestone.phase if self.milestone else None,
                detail=detail,
            )
        )

    def phase_words(self) -> str:
        return f"during '{self.milestone.label}'" if self.milestone else "before any milestone"

    def check_healthy(self) -> None:
        if self.http_status == 200 and self.unit is not None and self.unit.running:
            self.finish(
                "healthy",
                f"{self.unit_name} is running and {self.url} answered 200 "
                f"after {self.elapsed():.1f} s",
            )

    # -- the three watchers ----------------------------------------------------------

    async def watch_unit(self) -> None:
        async with self.systemd.watch(self.unit_name) as states:
            async for st in states:
                self.unit = st
                self.progress()
                if st.failed:
                    self.finish(
                        "failed",
                        f"{self.unit_name} failed after {self.elapsed():.1f} s "
                        f"{self.phase_words()}: {describe_unit(st)}",
                    )
                    return
                if st.active_state in ("activating", "active", "reloading"):
                    self.seen_up = True
                elif st.active_state in ("inactive", "deactivating") and self.seen_up:
                    self.finish(
                        "failed",
                        f"{self.unit_name} stopped after {self.elapsed():.1f} s "
                        f"{self.phase_words()}: {describe_unit(st)}",
                    )
                    return
                self.check_healthy()

    async def poll_http(self) -> None:
        async with httpx.AsyncClient(timeout=self.http_timeout_s, trust_env=False) as client:

            async def probe() -> None:
                try:
                    r = await aget(client, self.url)
                except BodyTooLarge as e:
                    self.http_status = None
                    self.http_detail = f"an answer larger than {e.limit} bytes (not read)"
                    raise _NotYet from None
                except httpx.ConnectError:
                    self.http_status = None
                    self.http_detail = "connection refused (not listening yet)"
                    raise
                except httpx.TimeoutException:
                    self.http_status = None
                    self.http_detail = f"no answer within {self.http_timeout_s:g} s"
                    raise
                except (httpx.NetworkError, httpx.RemoteProtocolError) as e:
                    self.http_status = None
                    self.http_detail = f"connection broken ({type(e).__name__})"
                    raise
                finally:
                    self.progress()
                self.http_status = r.status
                if r.status == 200:
                    self.http_detail = "200 OK"
                elif r.status == 503:
                    self.http_detail = "503 (loading or warming up)"
                else:
                    self.http_detail = f"{r.status} {r.reason}".strip()
                self.progress()
                self.check_healthy()
                if not self.done.done():
                    raise _NotYet

            retrying = AsyncRetrying(
                wait=wait_exponential(multiplier=0.02, min=0.02, max=POLL_MAX_WAIT_S),
                retry=retry_if_exception_type(_RETRY_ON),
                stop=stop_never,
                reraise=True,
            )
            await retrying(probe)

    async def read_lines(self) -> None:
        assert self.lines is not None
        async for line in self.lines:
            m = phase_of(line)
            if m is not None and m != self.milestone:
                self.milestone = m
                self.progress()

    async def tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.progress(force=True)


async def wait_until_healthy(
    systemd: Systemd,
    unit: str,
    url: str,
    *,
    timeout_s: float,
    on_progress: Callable[[Progress], None] | None = None,
    lines: AsyncIterator[str] | None = None,
    http_timeout_s: float = 2.0,
) -> HealthOutcome:
    """Wait until `unit` is active/running and GET `url` answers 200.

    Ends at once with "failed" when the unit fails, enters auto-restart, or stops after
    having started; with "timeout" after `timeout_s`. Call it once the start/restart job
    has returned (a restart still in progress would look like a stop). Errors of the
    unit watch (bus lost) or of the URL (bad scheme) are raised.
    """
    w = _Waiter(systemd, unit, url, timeout_s, on_progress, lines, http_timeout_s)

    def crashed(t: asyncio.Task[None]) -> None:
        # the unit watch or the poller broke (bus gone, bad URL): end the wait with it
        if not t.cancelled() and t.exception() is not None and not w.done.done():
            w.done.set_exception(t.exception())  # type: ignore[arg-type]

    tasks = [
        asyncio.create_task(w.watch_unit(), name="health:unit"),
        asyncio.create_task(w.poll_http(), name="health:http"),
        asyncio.create_task(w.tick(), name="health:tick"),
    ]
    if lines is not None:
        tasks.append(asyncio.create_task(w.read_lines(), name="health:lines"))
    for t in tasks[:2]:
        t.add_done_callback(crashed)
    try:
        try:
            return await asyncio.wait_for(asyncio.shield(w.done), timeout_s)
        except TimeoutError:
            w.finish("timeout", _timeout_detail(w))
            return w.done.result()
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        if not w.done.done():
            w.done.cancel()
        elif not w.done.cancelled():
            w.done.exception()  # mark retrieved: no "exception never retrieved" warning


def _timeout_detail(w: _Waiter) -> str:
    unit = describe_unit(w.unit) if w.unit else "state unknown"
    return (
        f"{w.unit_name} was not healthy within {w.timeout_s:g} s: unit {unit}, "
        f"last HTTP answer: {w.http_detail}, {w.phase_words()}"
    )
