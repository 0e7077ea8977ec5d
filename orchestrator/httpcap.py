"""Bounded HTTP response bodies: read a server's answer up to a cap, never all of it blindly.

A health probe, `/server_info`, `/v1/models` and a benchmark stream come from a server that
may be broken or hostile; an answer of gigabytes (or a gzip bomb, which httpx inflates) must
cost deploy at most the cap in memory. Standard library only at import time: `status` and the
liveness watcher use the `http.client` form without paying for httpx.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

# /health is empty, /server_info a few kB (tens with many DP ranks), /v1/models under 1 kB.
MAX_BODY_BYTES = 1 << 20
# One server-sent-events line of a streamed completion: one token's chunk, well under 64 kB.
MAX_LINE_BYTES = 1 << 20


class BodyTooLarge(Exception):
    """The answer went past the cap; reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


def read_capped(resp: http.client.HTTPResponse, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body of an http.client response, at most `limit` bytes; BodyTooLarge beyond."""
    data = resp.read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge(limit)
    return data


@dataclass(frozen=True)
class Answer:
    """A bounded GET: the status, its reason phrase, the body (within the cap)."""

    status: int
    reason: str
    body: bytes

    def json(self) -> Any:

        return json.loads(self.body)


async def aget(client: Any, url: str, *, limit: int = MAX_BODY_BYTES, **kw: Any) -> Answer:
    """GET with an httpx.AsyncClient, streaming the body and stopping at `limit` bytes
    (BodyTooLarge). httpx's own errors pass through."""
    async with client.stream("GET", url, **kw) as r:
        return Answer(r.status_code, r.reason_phrase, await aread(r, limit))


async def aread(response: Any, limit: int = MAX_BODY_BYTES) -> bytes:
    """The rest of an httpx streaming response's body, at most `limit` bytes."""
    buf = bytearray()
    async for chunk in response.aiter_bytes():
        buf += chunk
        if len(buf) > limit:
            raise BodyTooLarge(limit)
    return bytes(buf)


async def alines(response: Any, limit: int = MAX_LINE_BYTES) -> AsyncIterator[str]:
    """The lines of an httpx streaming response (text, without line ends), each at most
    `limit` bytes: a line that grows past it raises BodyTooLarge instead of filling memory."""
    buf = bytearray()
    async for chunk in response.aiter_bytes():
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line = bytes(buf[:i]).rstrip(b"\r")
            del buf[: i + 1]
            yield line.decode("utf-8", "replace")
        if len(buf) > limit:
            raise BodyTooLarge(limit)
    if buf:
        yield bytes(buf).rstrip(b"\r").decode("utf-8", "replace")
