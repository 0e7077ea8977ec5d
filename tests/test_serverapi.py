"""The server's HTTP API in one home: SGLang's answers parsed by orchestrator.sglang.api, read by
orchestrator.serverapi's two clients (stdlib for status and the watcher, httpx for bench)."""

from __future__ import annotations

import asyncio
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator import serverapi
from orchestrator.sglang import api

ROOT = Path(__file__).resolve().parents[1]

INFO = {
    "model_path": "/models/m",
    "served_model_name": None,
    "tp_size": 8,
    "speculative_algorithm": "EAGLE3",
    "speculative_num_steps": 3,
    "unrelated": "x",
    "internal_states": [
        {"avg_spec_accept_length": 2.0},
        {"avg_spec_accept_length": 3.0},
        {"avg_spec_accept_length": True},  # not a number: ignored
        "not a dict",
    ],
}
MODELS = {"object": "list", "data": [{"id": "kimi", "object": "model"}]}


def test_server_facts_average_the_accept_length_over_dp_ranks() -> None:
    facts = api.server_facts(INFO)
    assert facts == {
        "model_path": "/models/m",
        "tp_size": 8,
        "speculative_algorithm": "EAGLE3",
        "speculative_num_steps": 3,
        api.ACCEPT_LENGTH: 2.5,
    }
    assert api.accept_length({"internal_states": [{}]}) is None
    assert api.server_facts(["not", "an", "object"]) == {}
    assert api.model_id(MODELS) == "kimi"
    assert api.model_id({"data": []}) is None
    assert api.spec_verify_ct({"sglext": {"spec_tokens_details": {"spec_verify_ct": 7}}}) == 7
    assert api.spec_verify_ct({"choices": []}) is None


def test_base_of_a_health_url() -> None:
    assert serverapi.base_of("http://127.0.0.1:30000/health") == "http://127.0.0.1:30000"
    assert serverapi.base_of("http://127.0.0.1:30000") == "http://127.0.0.1:30000"


class _Server:
    def __init__(self) -> None:
        answers: dict[str, tuple[int, bytes]] = {
            api.HEALTH: (200, b""),
            api.SERVER_INFO: (200, json.dumps(INFO).encode()),
            api.MODELS: (200, json.dumps(MODELS).encode()),
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, body = answers.get(self.path, (404, b"not found"))
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def test_the_stdlib_client_reads_health_and_server_info(server: _Server) -> None:
    r = serverapi.health(server.url + api.HEALTH)
    assert (r.status, r.words, r.error) == (200, "200 OK", None)
    missing = serverapi.get(server.url + "/nothing", 2)
    assert missing.status == 404 and missing.words == "404 Not Found" and missing.json() is None
    facts = serverapi.server_facts(server.url)
    assert facts["tp_size"] == 8 and facts[api.ACCEPT_LENGTH] == 2.5


def test_the_async_client_fills_the_model_name_from_v1_models(server: _Server) -> None:
    async def go() -> tuple[dict[str, Any], float | None]:
        async with httpx.AsyncClient(trust_env=False) as c:
            return (
                await serverapi.aserver_facts(c, server.url),
                await serverapi.aaccept_length(c, server.url),
            )

    facts, acc = asyncio.run(go())
    assert facts["served_model_name"] == "kimi" and acc == 2.5


def test_status_and_the_watcher_do_not_import_httpx() -> None:
    code = (
        "import sys, orchestrator.serverapi, orchestrator.systemd.status, "
        "orchestrator.watch.liveness; print('httpx' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"
