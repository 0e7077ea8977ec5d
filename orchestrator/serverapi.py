"""The deployed server's HTTP API, one home for every caller: GET /health, /server_info (with
what status and bench show of it), /v1/models, and the bounded readers of a streamed completion
(`alines`, `aread`, re-exported from httpcap).

Which paths and what the answers mean are SGLang facts (`orchestrator.sglang.api`); the byte
caps are `orchestrator.httpcap`'s. Two transports:

- `get` / `health` / `server_facts`: the standard library's `http.client`. `deploy status` and
  the liveness watcher (a small daemon probing every 30 s) use these and never import httpx.
- `aget_json` / `aserver_facts` / `aaccept_length`: an `httpx.AsyncClient` the caller owns
  (bench and tune, with the profile's API key and a connection pool). httpx is imported inside
  these only: at module level it would cost `status` and the watcher its import (~60 ms).
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from orchestrator.httpcap import MAX_BODY_BYTES, BodyTooLarge, aget, alines, aread, read_capped
from orchestrator.sglang import api

__all__ = [
    "BodyTooLarge",
    "Reply",
    "aaccept_length",
    "aget",
    "aget_json",
    "alines",
    "aread",
    "aserver_facts",
    "base_of",
    "get",
    "health",
    "server_facts",
]


@dataclass(frozen=True)
class Reply:
    """One GET: the HTTP status (None: no answer), its reason phrase, the body (None when not
    read: no answer, or over the cap) and, when something went wrong, what in words."""

    status: int | None
    reason: str = ""
    body: bytes | None = None
    error: str | None = None

    @property
    def words(self) -> str:
        """'200 OK', '503 Service Unavailable', 'connection refused', 'no answer in 2 s', ..."""
        return self.error if self.error is not None else f"{self.status} {self.reason}".strip()

    def json(self) -> Any:
        """The body as JSON; None when there is none or it does not parse."""
        if self.body is None:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def base_of(url: str) -> str:
    """The server's root URL from its health URL: http://h:p/health -> http://h:p."""
    return url.rsplit("/", 1)[0] if url.count("/") > 2 else url


def get(url: str, timeout_s: float, *, limit: int = MAX_BODY_BYTES) -> Reply:
    """GET url with the standard library's client; the body read up to `limit` bytes (an
    endless answer would keep the socket busy past every timeout). Never raises for the
    network: what went wrong is in the Reply."""
    u = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = cls(u.hostname or "127.0.0.1", u.port, timeout=timeout_s)
    try:
        conn.request("GET", u.path or "/", headers={"Accept": "application/json"})
        r = conn.getresponse()
        try:
            return Reply(r.status, r.reason, read_capped(r, limit))
        except BodyTooLarge as e:
            return Reply(
                r.status,
                r.reason,
                None,
                f"{r.status} {r.reason} (body cut at {e.limit} bytes, not read)",
            )
    except ConnectionRefusedError:
        return Reply(None, error="connection refused")
    except TimeoutError:
        return Reply(None, error=f"no answer in {timeout_s:g} s")
    except (OSError, http.client.HTTPException) as e:
        return Reply(None, error=type(e).__name__)
    finally:
        conn.close()


def health(url: str, timeout_s: float = 2.0, *, limit: int = MAX_BODY_BYTES) -> Reply:
    """GET a health URL (the profile's, SGLang's /health by default): 200 is healthy."""
    return get(url, timeout_s, limit=limit)


def server_facts(base_url: str, timeout_s: float = 2.0) -> dict[str, Any]:
    """What /server_info says (sglang.api.server_facts); {} when it does not answer 200."""
    r = get(base_url.rstrip("/") + api.SERVER_INFO, timeout_s)
    return api.server_facts(r.json()) if r.status == 200 else {}


async def aget_json(client: Any, url: str, **kw: Any) -> Any:
    """GET url with an httpx.AsyncClient: the JSON of a 200 answer within the cap; None for
    anything else (no answer, another status, too large, not JSON)."""
    import httpx  # bench's and tune's path only: status and the watcher never import it

    try:
        r = await aget(client, url, **kw)
        return r.json() if r.status == 200 else None
    except (httpx.HTTPError, ValueError, BodyTooLarge):
        return None


async def aserver_facts(client: Any, base_url: str, **kw: Any) -> dict[str, Any]:
    """/server_info's facts; the served model name from /v1/models when it does not say."""
    base_url = base_url.rstrip("/")
    facts = api.server_facts(await aget_json(client, base_url + api.SERVER_INFO, **kw))
    if not facts.get("served_model_name"):
        name = api.model_id(await aget_json(client, base_url + api.MODELS, **kw))
        if name is not None:
            facts["served_model_name"] = name
    return facts


async def aaccept_length(client: Any, base_url: str) -> float | None:
    """The accept length /server_info reports now, over DP ranks; None when not told."""
    return api.accept_length(await aget_json(client, base_url.rstrip("/") + api.SERVER_INFO))
