"""The stand-in server: start-up log, HTTP endpoints and failure modes (stdlib only).

Environment (all optional):
  STANDIN_FAIL          oom | hang | graph | crash_at=S   (default: start normally)
  STANDIN_FAIL_RANK     TP rank that fails for oom/graph/crash_at (default 3, capped to tp-1)
  STANDIN_INIT_S        "Init parallel" duration (0.2)
  STANDIN_LOAD_S        weight loading duration (1.0)
  STANDIN_KV_S          KV cache / memory pool duration (0.1)
  STANDIN_GRAPH_S       CUDA graph capture duration, all graphs together (0.4)
  STANDIN_WARMUP_S      from port bound (503) to /health 200 (0.8)
  STANDIN_READY_DELAY_S if set: seconds from start to /health 200; stretches/shrinks LOAD_S
  STANDIN_READY_FILE    if set: warm-up (so /health 503) lasts until this file exists, so a
                        test decides when the server becomes healthy (an event, not a delay)
  STANDIN_TOKENS_PER_S  generation rate per request (200)
  STANDIN_ACCEPT_LEN    reported speculative accept length (2.6)
  STANDIN_EMIT_LOG      if set: a file to which each generation appends one JSON line, when it
                        arrived and when each token went out (CLOCK_MONOTONIC, shared by every
                        process of the machine): the truth a test measures bench against
  STANDIN_PERF          1: rate and accept length from the performance model in _perf.py
                        (speculative settings x requests in flight; STANDIN_PERF_* knobs)
  STANDIN_MAX_DRAFT  configs with more draft tokens die in CUDA graph capture (OOM)
  STANDIN_MODEL_ARCH    model class in "Load weight end." (DeepseekV3ForCausalLM)
  STANDIN_GPU_TOTAL_GB  per-GPU capacity (139.81); STANDIN_WEIGHTS_GB per-rank weights (62.4)
  STANDIN_SGLANG_PREFIX site-packages shown in tracebacks (interpreter's purelib)
  STANDIN_CRASH_AFTER_S, STANDIN_CRASH, STANDIN_HANG_AFTER_S, STANDIN_HANG_HEALTH,
  STANDIN_ZOMBIE_AFTER_S: failures after "ready" (see _day2.py)
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
import time
import urllib.request
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sglang import __version__
from sglang._args import parse, resolved_dict, resolved_spec, speculative_verdict
from sglang._day2 import Day2
from sglang._perf import Model, enabled, max_draft_tokens
from sglang._release import RELEASE
from sglang._texts import (
    USER_WARNING,
    scheduler_graph_traceback,
    scheduler_oom_traceback,
    spec_traceback,
)

_LOCK = threading.Lock()


def _env_f(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _write(stream, text: str) -> None:
    with _LOCK:
        stream.write(text)
        stream.flush()


def _say(mid: str, **values: object) -> str:
    """SGLang's words for message `mid`, as the imitated release prints them."""
    return RELEASE.message(mid).format(**values)


def log(msg: str, prefix: str = "") -> None:
    """SGLang's configure_logger format: `[%(asctime)s{prefix}] %(message)s`."""
    ts = time.strftime("%Y-%m-%d %H:%M:%S")
    _write(sys.stderr, f"[{ts}{prefix}] {msg}\n")


def uvicorn_log(msg: str) -> None:
    """uvicorn's default formatter as SGLang sets it: `[%(asctime)s] %(levelprefix)s %(message)s`."""
    ts = time.strftime("%Y-%m-%d %H:%M:%S")
    _write(sys.stderr, f"[{ts}] INFO:     {msg}\n")


def kill_tree_and_die(include_parent: bool = True) -> None:
    pid = os.getpid()
    log(f"kill_process_tree called: parent_pid={pid}, include_parent={include_parent}, pid={pid}")
    if include_parent:
        sys.stderr.flush()
        sys.stdout.flush()
        os.kill(pid, signal.SIGKILL)


class Sim:
    def __init__(self, ns) -> None:
        self.ns = ns
        self.args = resolved_dict(ns)
        self.algo, self.steps, self.topk, self.draft = resolved_spec(ns)
        self.start = time.monotonic()
        self.tp = max(1, ns.tp_size)
        self.pp = max(1, ns.pp_size)
        self.status = "starting"  # starting -> up -> shutdown
        self.rate = max(1e-3, _env_f("STANDIN_TOKENS_PER_S", 200.0))
        self.accept_len = _env_f("STANDIN_ACCEPT_LEN", 2.6)
        self.arch = os.environ.get("STANDIN_MODEL_ARCH", "DeepseekV3ForCausalLM")
        self.total = _env_f("STANDIN_GPU_TOTAL_GB", 139.81)
        self.weights = _env_f("STANDIN_WEIGHTS_GB", 62.4)
        self.context_len = ns.context_length or 262144
        fail = os.environ.get("STANDIN_FAIL", "").strip().lower()
        self.fail = fail.split("=", 1)[0]
        self.crash_at = _env_f("STANDIN_CRASH_AT_S", 0.0)
        if self.fail == "crash_at":
            try:
                self.crash_at = float(fail.split("=", 1)[1])
            except (IndexError, ValueError):
                self.crash_at = 1.0
        self.fail_rank = min(int(_env_f("STANDIN_FAIL_RANK", 3)), self.tp - 1)
        self.init_s = _env_f("STANDIN_INIT_S", 0.2)
        self.load_s = _env_f("STANDIN_LOAD_S", 1.0)
        self.kv_s = _env_f("STANDIN_KV_S", 0.1)
        self.graph_s = _env_f("STANDIN_GRAPH_S", 0.4)
        self.warmup_s = _env_f("STANDIN_WARMUP_S", 0.8)
        if "STANDIN_READY_DELAY_S" in os.environ:
            ready = _env_f("STANDIN_READY_DELAY_S", 3.0)
            other = self.init_s + self.kv_s + self.graph_s + self.warmup_s
            self.load_s = max(0.0, ready - other)
        self.max_total_tokens = 0
        self.httpd: ThreadingHTTPServer | None = None
        self.perf = Model.from_env() if enabled() else None
        if self.perf is not None:
            self.accept_len = round(self.perf.accept_length(self.steps, self.topk, self.draft), 4)
        self.max_draft = max_draft_tokens()
        self.inflight = 0  # generation requests being answered now (the model's batch)
        self.day2 = Day2(self)  # failures after ready: crash, hang, zombie (see _day2.py)

    def token_gap_s(self) -> float:
        """Seconds to the next token of a request: the model's speed at the current batch."""
        if self.perf is None:
            return 1.0 / self.rate
        tps = self.perf.tokens_per_s(self.inflight, self.steps, self.topk, self.draft)
        return 1.0 / tps

    # ---- helpers -------------------------------------------------------------
    def prefixes(self) -> list[str]:
        if self.pp > 1:
            return [f" PP{p} TP{t}" for p in range(self.pp) for t in range(self.tp)]
        return [f" TP{t}" for t in range(self.tp)]

    def all_ranks(self, msg: str) -> None:
        for p in self.prefixes():
            log(msg, p)

    def sleep(self, s: float) -> None:
        """Sleep, dying on the crash_at deadline if it falls inside."""
        end = time.monotonic() + max(0.0, s)
        while True:
            now = time.monotonic()
            if self.fail == "crash_at" and now - self.start >= self.crash_at:
                self.scheduler_death(self.oom_tb())
            if now >= end:
                return
            time.sleep(min(0.05, end - now))

    def kv_line(self, kv_gb: float) -> str:
        return _say(
            "ms-kv-cache", dtype="torch.bfloat16", tokens=self.max_total_tokens, size=f"{kv_gb:.2f}"
        )

    def oom_tb(self) -> str:
        return scheduler_oom_traceback(self.fail_rank, 8.42, self.total, 412.19)

    def scheduler_death(self, tb: str) -> None:
        prefix = self.prefixes()[self.fail_rank] if self.pp == 1 else self.prefixes()[0]
        log(_say("scheduler-exception", traceback=tb), prefix)
        log(_say("sigquit"))
        kill_tree_and_die(include_parent=True)

    # ---- start-up ------------------------------------------------------------
    def run(self) -> None:
        log(_say("ms-server-args", args=repr(self.args)))
        self.all_ranks(_say("ms-init-begin"))
        self.sleep(self.init_s)
        self.all_ranks(_say("ms-init-end", elapsed=f"{self.init_s + random.uniform(0, 0.02):.2f}"))
        avail = self.total - 0.85
        self.all_ranks(_say("ms-load-begin", avail=f"{avail:.2f}"))
        if self.fail == "hang":
            while True:
                time.sleep(3600)
        spec = self.algo is not None
        self.sleep(self.load_s * (0.85 if spec else 1.0))
        after = avail - self.weights
        self.all_ranks(
            _say(
                "ms-load-end",
                elapsed=f"{self.load_s:.2f}",
                arch=self.arch,
                detail=f"quant=fp8, fmt=e4m3, avail mem={after:.2f} GB, mem usage={self.weights:.2f} GB.",
            )
        )
        if spec:
            self.all_ranks(_say("ms-load-begin", avail=f"{after:.2f}"))
            self.sleep(self.load_s * 0.15)
            draft_gb = 1.86
            self.all_ranks(
                _say(
                    "ms-load-end",
                    elapsed=f"{self.load_s * 0.15:.2f}",
                    arch="LlamaForCausalLMEagle3" if self.algo == "EAGLE3" else self.arch,
                    detail=f"avail mem={after - draft_gb:.2f} GB, mem usage={draft_gb:.2f} GB.",
                )
            )
            after -= draft_gb
        frac = self.args.get("mem_fraction_static") or 0.835
        kv_gb = max(1.0, after - (1 - frac) * self.total)
        per_token = 61 * 576 * 2
        self.max_total_tokens = int(kv_gb * (1 << 30) / per_token)
        if self.fail == "oom":
            for i, p in enumerate(self.prefixes()):
                if i == self.fail_rank:
                    continue
                log(self.kv_line(kv_gb), p)
            self.sleep(self.kv_s)
            self.scheduler_death(self.oom_tb())
        self.sleep(self.kv_s)
        self.all_ranks(self.kv_line(kv_gb))
        avail = after - kv_gb
        self.all_ranks(_say("ms-memory-pool", avail=f"{avail:.2f}"))
        self.capture_graphs(avail)
        tp0 = self.prefixes()[0]
        log(
            f"max_total_num_tokens={self.max_total_tokens}, "
            f"chunked_prefill_size={self.args.get('chunked_prefill_size')}, "
            f"max_prefill_tokens={self.args.get('max_prefill_tokens') or 16384}, "
            f"max_running_requests={self.ns.max_running_requests or 64}, "
            f"context_len={self.context_len}, available_gpu_mem={avail - 2.1:.2f} GB",
            tp0,
        )
        self.serve()

    def capture_graphs(self, avail: float) -> None:
        bs = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64]
        spec = self.algo is not None
        parts = 3 if spec else 1
        each = self.graph_s / parts
        name = "target verify" if spec else "target decode"
        per_req = self.draft if spec else 1
        self.all_ranks(
            _say(
                "ms-graph-begin",
                name=name,
                detail=f"backend=full, num_tokens_per_req={per_req}, avail mem={avail:.2f} GB",
            )
        )
        too_wide = spec and self.max_draft is not None and (self.draft or 0) > self.max_draft
        if self.fail == "graph" or too_wide:
            self.sleep(each / 2)
            self.scheduler_death(scheduler_graph_traceback(self.fail_rank))
        self.sleep(each)
        used = 1.12
        self.all_ranks(
            _say(
                "ms-graph-end",
                name=name,
                detail=f"bs={bs}, elapsed={each:.2f} s, mem usage={used:.2f} GB, "
                f"avail mem={avail - used:.2f} GB.",
            )
        )
        if not spec:
            return
        tp0 = self.prefixes()[0]
        avail -= used
        for kind, per in (("draft decode", self.topk), ("draft extend", self.draft)):
            log(
                _say(
                    "ms-graph-begin",
                    name=kind,
                    detail=f"backend=full, num_tokens_per_req={per}, bs={bs}, avail mem={avail:.2f} GB",
                ),
                tp0,
            )
            self.sleep(each)
            log(
                _say(
                    "ms-graph-end",
                    name=kind,
                    detail=f"elapsed={each:.2f} s, mem usage=0.31 GB, avail mem={avail - 0.31:.2f} GB.",
                ),
                tp0,
            )
            avail -= 0.31

    # ---- HTTP ------------------------------------------------------------------
    def serve(self) -> None:
        host, port = self.ns.host, self.ns.port
        try:
            httpd = ThreadingHTTPServer((host, port), make_handler(self))
        except OSError as e:
            uvicorn_log(f"Started server process [{os.getpid()}]")
            uvicorn_log("Waiting for application startup.")
            uvicorn_log("Application startup complete.")
            ts = time.strftime("%Y-%m-%d %H:%M:%S")
            _write(
                sys.stderr,
                f"[{ts}] ERROR:    [Errno {e.errno}] error while attempting to bind on address "
                f"({host!r}, {port}): {e.strerror.lower() if e.strerror else e}\n",
            )
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            kill_tree_and_die(include_parent=False)
            sys.exit(1)
        httpd.daemon_threads = True
        self.httpd = httpd
        uvicorn_log(f"Started server process [{os.getpid()}]")
        uvicorn_log("Waiting for application startup.")
        uvicorn_log("Application startup complete.")
        uvicorn_log(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        threading.Thread(target=self.warmup, daemon=True).start()
        try:
            httpd.serve_forever(poll_interval=0.1)
        finally:
            httpd.server_close()
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        kill_tree_and_die(include_parent=False)
        sys.exit(0)

    def _on_term(self, signum, frame) -> None:
        uvicorn_log("Shutting down")
        self.status = "shutdown"
        self.day2.stop.set()
        threading.Thread(target=self.httpd.shutdown, daemon=True).start()

    def warmup(self) -> None:
        base = f"http://{'127.0.0.1' if self.ns.host in ('0.0.0.0', '', '::') else self.ns.host}:{self.ns.port}"
        headers = {"Content-Type": "application/json"}
        if self.ns.api_key:
            headers["Authorization"] = f"Bearer {self.ns.api_key}"
        time.sleep(max(0.0, self.warmup_s - 0.05))
        gate = os.environ.get("STANDIN_READY_FILE")
        while gate and not os.path.exists(gate):
            time.sleep(0.05)
        try:
            urllib.request.urlopen(
                urllib.request.Request(base + "/model_info", headers=headers), timeout=5
            ).read()
            body = json.dumps(
                {
                    "sampling_params": {"temperature": 0, "max_new_tokens": 8, "_warmup": True},
                    "text": "The capital city of France is",
                }
            ).encode()
            req = urllib.request.Request(base + "/generate", data=body, headers=headers)
            urllib.request.urlopen(req, timeout=30).read()
            self.status = "up"
            req = urllib.request.Request(base + "/freeze_gc", data=b"", headers=headers)
            urllib.request.urlopen(req, timeout=10).read()
        except Exception as e:  # pragma: no cover - mirrors SGLang's warm-up failure
            log(_say("warmup-failed", error=e))
            kill_tree_and_die(include_parent=True)
            return
        log(_say("ms-ready"))
        self.day2.start()

    # ---- payloads ----------------------------------------------------------------
    def model_info(self) -> dict[str, Any]:
        return {
            "model_path": self.args["model_path"],
            "served_model_name": self.args["served_model_name"],
            "tokenizer_path": self.args["tokenizer_path"],
            "is_generation": True,
            "preferred_sampling_params": self.args.get("preferred_sampling_params"),
            "weight_version": self.args.get("weight_version", "default"),
            "load_format": self.args.get("load_format", "auto"),
            "reasoning_parser": self.args.get("reasoning_parser"),
            "tool_call_parser": self.args.get("tool_call_parser"),
            "disaggregation_mode": self.args.get("disaggregation_mode", "null"),
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "deepseek_v3" if self.arch.startswith("DeepseekV3") else None,
            "architectures": [self.arch],
        }

    def server_info(self) -> dict[str, Any]:
        info = dict(self.args)
        info["launch_command"] = " ".join(sys.argv[1:])
        info["max_total_num_tokens"] = self.max_total_tokens
        info["max_req_input_len"] = self.max_total_tokens - 1
        info["kv_events"] = None
        info["startup_time"] = round(time.monotonic() - self.start, 3)
        states = []
        for _ in range(max(1, self.ns.dp_size)):
            st: dict[str, Any] = {
                "attention_backend": self.args.get("attention_backend") or "fa3",
                "max_total_num_tokens": self.max_total_tokens,
                "last_gen_throughput": 0.0,
                "memory_usage": {
                    "weight": self.weights,
                    "kvcache": 0.0,
                    "token_capacity": self.max_total_tokens,
                },
            }
            if self.algo is not None:
                st["avg_spec_accept_length"] = self.accept_len
            states.append(st)
        info["internal_states"] = states
        info["version"] = __version__
        info["frontend"] = "python"
        return info


WORDS = ("the", "a", "model", "answer", "is", "of", "and", "to", "in", "that", "it", "for")


def _tok(i: int) -> str:
    return " " + WORDS[i % len(WORDS)]


def make_handler(sim: Sim):
    served = sim.args["served_model_name"]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_request(self, code="-", size="-") -> None:
            if isinstance(code, HTTPStatus):
                code = code.value
            try:
                phrase = HTTPStatus(int(code)).phrase
            except ValueError:
                phrase = ""
            ts = time.strftime("%Y-%m-%d %H:%M:%S")
            _write(
                sys.stdout,
                f"[{ts}] INFO:     {self.client_address[0]}:{self.client_address[1]} - "
                f'"{self.requestline}" {code} {phrase}\n',
            )

        def log_message(self, format, *args) -> None:  # silence stdlib logging
            pass

        # -- plumbing --
        def _send(self, code: int, body: bytes = b"", ctype: str = "application/json") -> None:
            self.send_response(code)
            if body or ctype == "application/json":
                self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, code: int, obj: Any) -> None:
            self._send(code, json.dumps(obj).encode())

        def _body(self) -> dict[str, Any]:
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                return json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                return {}

        def _authorized(self) -> bool:
            key = sim.ns.api_key
            if not key:
                return True
            return self.headers.get("Authorization", "") == f"Bearer {key}"

        # -- routes --
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/health", "/health_generate"):
                code = sim.day2.health()
                if code is not None:
                    return self._send(code, b"", "")
                return self._send(200 if sim.status == "up" else 503, b"", "")
            if path in ("/ready", "/ping"):
                return self._send(200 if sim.status == "up" else 503, b"", "")
            if not self._authorized():
                return self._json(401, {"error": "Unauthorized"})
            if path in ("/model_info", "/get_model_info"):
                return self._json(200, sim.model_info())
            if path in ("/server_info", "/get_server_info"):
                return self._json(200, sim.server_info())
            if path == "/v1/models":
                return self._json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": served,
                                "object": "model",
                                "created": int(time.time()),
                                "owned_by": "sglang",
                                "root": served,
                                "parent": None,
                                "max_model_len": sim.context_len,
                            }
                        ],
                    },
                )
            return self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            body = self._body()
            if not self._authorized():
                return self._json(401, {"error": "Unauthorized"})
            if path == "/freeze_gc":
                return self._send(200, b"", "")
            if path == "/generate":
                return self._generate(body)
            if path == "/v1/completions":
                return self._openai(body, chat=False)
            if path == "/v1/chat/completions":
                return self._openai(body, chat=True)
            return self._json(404, {"detail": "Not Found"})

        # -- generation --
        def _emit(self, n: int, on_token) -> None:
            """Call on_token(i) for i in 1..n, token i one gap after token i - 1 (no drift):
            1/rate, or the performance model's gap at the batch in flight at that moment."""
            with _LOCK:
                sim.inflight += 1
            arrived = time.monotonic()
            sent: list[float] = []
            try:
                due = arrived
                for i in range(1, n + 1):
                    due += sim.token_gap_s()
                    delay = due - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    on_token(i)
                    sent.append(time.monotonic())
            finally:
                with _LOCK:
                    sim.inflight -= 1
                    path = os.environ.get("STANDIN_EMIT_LOG")
                    if path:
                        with open(path, "a") as f:
                            f.write(json.dumps({"arrived": arrived, "sent": sent}) + "\n")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _start_sse(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _spec_meta(self, n: int) -> dict[str, Any]:
            if sim.algo is None or n == 0:
                return {}
            verify_ct = max(1, round(n / sim.accept_len))
            proposed = verify_ct * ((sim.draft or 1) - 1)
            correct = max(0, n - verify_ct)
            return {
                "spec_accept_rate": (correct / proposed) if proposed else 0.0,
                "spec_accept_length": n / verify_ct,
                "spec_num_correct_drafts": correct,
                "spec_num_proposed_drafts": proposed,
                "spec_verify_ct": verify_ct,
            }

        def _generate(self, body: dict[str, Any]) -> None:
            sp = body.get("sampling_params") or {}
            n = int(sp.get("max_new_tokens") or 128)
            prompt = body.get("text") or ""
            ptoks = max(1, len(str(prompt).split()))
            rid = uuid.uuid4().hex
            if sp.get("_warmup"):
                text = "".join(_tok(i) for i in range(1, n + 1))
            else:
                out: list[str] = []
                self._emit(n, lambda i: out.append(_tok(i)))
                text = "".join(out)
            meta = {
                "id": rid,
                "finish_reason": {"type": "length", "length": n},
                "prompt_tokens": ptoks,
                "weight_version": "default",
                "completion_tokens": n,
                "cached_tokens": 0,
                "e2e_latency": n / sim.rate,
                **self._spec_meta(n),
            }
            if body.get("stream"):
                self._start_sse()
                acc: list[str] = []

                def tok(i: int) -> None:
                    acc.append(_tok(i))
                    m = dict(meta, completion_tokens=i)
                    m["finish_reason"] = meta["finish_reason"] if i == n else None
                    d = {"text": "".join(acc), "output_ids": list(range(i)), "meta_info": m}
                    self._chunk(f"data: {json.dumps(d)}\n\n".encode())

                self._emit(n, tok)
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
                return None
            return self._json(200, {"text": text, "output_ids": list(range(n)), "meta_info": meta})

        def _openai(self, body: dict[str, Any], chat: bool) -> None:
            model = body.get("model") or served
            default_max = 16 if not chat else 256
            n = body.get("max_completion_tokens") or body.get("max_tokens") or default_max
            n = int(n)
            if n <= 0:
                return self._json(
                    400,
                    {
                        "object": "error",
                        "message": "max_tokens must be positive",
                        "type": "BadRequestError",
                        "param": None,
                        "code": 400,
                    },
                )
            if chat:
                msgs = body.get("messages") or []
                ptext = " ".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
            else:
                p = body.get("prompt") or ""
                ptext = p if isinstance(p, str) else " ".join(map(str, p))
            ptoks = max(1, len(ptext.split()))
            rid = uuid.uuid4().hex
            created = int(time.time())
            obj = "chat.completion" if chat else "text_completion"
            usage = {
                "prompt_tokens": ptoks,
                "total_tokens": ptoks + n,
                "completion_tokens": n,
                "prompt_tokens_details": None,
                "reasoning_tokens": 0,
            }
            spec = self._spec_meta(n)
            sglext = (
                {"spec_tokens_details": {**spec, "spec_cap_length": 0.0}}
                if spec and body.get("return_spec_tokens_details")
                else None
            )
            if body.get("stream"):
                so = body.get("stream_options") or {}
                include_usage = bool(so.get("include_usage")) or bool(
                    sim.args.get("stream_response_default_include_usage")
                )
                continuous = bool(so.get("continuous_usage_stats"))
                self._start_sse()
                chunk_obj = "chat.completion.chunk" if chat else "text_completion"

                def send(d: dict[str, Any]) -> None:
                    self._chunk(f"data: {json.dumps(d)}\n\n".encode())

                if chat:
                    send(
                        {
                            "id": rid,
                            "object": chunk_obj,
                            "created": created,
                            "model": model,
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {"role": "assistant", "content": ""},
                                    "logprobs": None,
                                    "finish_reason": None,
                                    "matched_stop": None,
                                }
                            ],
                            "usage": None,
                        }
                    )

                def tok(i: int) -> None:
                    fin = "length" if i == n else None
                    if chat:
                        choice = {
                            "index": 0,
                            "delta": {"role": None, "content": _tok(i)},
                            "logprobs": None,
                            "finish_reason": fin,
                            "matched_stop": None,
                        }
                    else:
                        choice = {
                            "index": 0,
                            "text": _tok(i),
                            "logprobs": None,
                            "finish_reason": fin,
                            "matched_stop": None,
                        }
                    u = None
                    if continuous:
                        u = dict(usage, completion_tokens=i, total_tokens=ptoks + i)
                    send(
                        {
                            "id": rid,
                            "object": chunk_obj,
                            "created": created,
                            "model": model,
                            "choices": [choice],
                            "usage": u,
                        }
                    )

                self._emit(n, tok)
                if sglext:
                    send(
                        {
                            "id": rid,
                            "object": chunk_obj,
                            "created": created,
                            "model": model,
                            "choices": [],
                            "sglext": sglext,
                        }
                    )
                if include_usage:
                    u = {k: v for k, v in usage.items() if v is not None}
                    send(
                        {
                            "id": rid,
                            "object": chunk_obj,
                            "created": created,
                            "model": model,
                            "choices": [],
                            "usage": u,
                        }
                    )
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
                return None
            out: list[str] = []
            self._emit(n, lambda i: out.append(_tok(i)))
            text = "".join(out)
            if chat:
                choice = {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "reasoning_content": None,
                        "tool_calls": None,
                    },
                    "logprobs": None,
                    "finish_reason": "length",
                    "matched_stop": None,
                }
            else:
                choice = {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": "length",
                    "matched_stop": None,
                }
            resp: dict[str, Any] = {
                "id": rid,
                "object": obj,
                "created": created,
                "model": model,
                "choices": [choice],
                "usage": usage,
                "metadata": {"weight_version": "default"},
            }
            if sglext:
                resp["sglext"] = sglext
            return self._json(200, resp)

    return Handler


def main(argv: list[str]) -> None:
    # launch_server.py:71 warnings.warn(...) runs before anything else.
    _write(sys.stderr, USER_WARNING)
    ns = parse(argv)  # argparse: usage + "unrecognized arguments", exit 2
    log_level = (ns.log_level or "info").upper()
    verdict = speculative_verdict(ns)
    if verdict is not None:
        # run_server -> resolve_once raises; launch_server.py's `finally:` logs
        # kill_process_tree(include_parent=False), then the traceback, exit 1.
        if log_level in ("DEBUG", "INFO"):
            kill_tree_and_die(include_parent=False)
        _write(sys.stderr, spec_traceback(verdict, ns.speculative_algorithm, ns.attention_backend))
        sys.exit(1)
    Sim(ns).run()
