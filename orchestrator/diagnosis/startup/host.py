"""Start-up rules, as data: the host and the distributed start-up: the executable, proxies, ports, rendezvous, Ray, host memory and disk, systemd's limits (NCCL: `collectives`).

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

from orchestrator.diagnosis.enrich import (
    _enrich_disk,
    _enrich_port,
    _enrich_rendezvous,
    _enrich_warmup,
)
from orchestrator.diagnosis.model import (
    _EXC,
    FALLBACK,
    HINT,
    Family,
    Rule,
    Signal,
    pat,
    said,
    under,
)
from orchestrator.diagnosis.startup.patterns import (
    _ADDR_IN_USE,
    _BUILD_TOOLS,
    _LOOPBACK,
    _NVIDIA_HOOKS,
)
from orchestrator.sglang import code

__all__ = ["RULES"]

# The body of an OpenAI-style API error (SGLang's and vLLM's ErrorResponse, as JSON or as a
# Python dict): the server itself answered the request
_SERVER_ERROR_BODY = ('"object":"error"', '"object": "error"', "'object': 'error'")

# not a line about shared memory: NCCL's and torch's segments in /dev/shm run out with the same
# errno, and that is host-memory-exhausted (a tmpfs sized by the container, not a disk)
_NOT_SHM = r"\A(?!.*(?:shm|shared memory|posix_fallocate|/torch_))"


# startup-timeout's summary for a launcher's own readiness timeout
_LAUNCHER_GAVE_UP = "the launcher around the server gave up waiting for it to be ready, and the log holds no error of the server's own: {msg}"

RULES: tuple[Rule, ...] = (
    Rule(
        id="exec-failed",
        title="systemd could not start the command",
        summary="systemd could not run the service's command: {msg}",
        fix="check ExecStart= (the Python path {path} must exist and be executable), WorkingDirectory= and User= of the unit; re-render it with `deploy up`",
        doc=(
            "systemd failed before SGLang ran: the executable, working directory or user of the "
            "unit is wrong (status=203/EXEC, 200/CHDIR, 217/USER)."
        ),
        patterns=(
            pat(
                r"Failed to locate executable (?P<path>\S+): (?P<msg>.*)",
            ),
            # a Cloud Native Buildpacks image started with no command (its launcher has no
            # default process to run)
            pat(
                r"(?P<msg>.*?\bfailed to launch: determine start command: when there is no default process a command is required\b.*)",
                fixhint="the image (built with buildpacks) has no default process: give the container its command (ExecStart= / the pod's command and args), or build the image with a default process",
            ),
            pat(
                r"Failed at step (?P<step>[A-Z_]+) spawning (?P<path>\S+): (?P<msg>.*)",
            ),
            pat(
                r"Main process exited, code=exited, status=(?P<msg>(?:203/EXEC|200/CHDIR|217/USER|209/STDOUT|226/NAMESPACE))",
            ),
            # the shell that runs the unit's script refused it (no execute bit, a noexec mount):
            # bash's "<script>: Permission denied", exit status 126
            pat(
                r"(?P<msg>.*?\b(?:/(?:usr/)?bin/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?(?P<path>/[^\s:]{1,300}): Permission denied.*)",
                fixhint="the script or program ExecStart= runs is not executable for the service user: `chmod +x {path}`, check the mount is not noexec and the user may read it (or run it through its interpreter: ExecStart=/bin/bash {path})",
            ),
            # a container runtime's exec of the entrypoint (runc, crun, containerd, docker,
            # podman, a Kubernetes pod's event): the command is not in the image or its PATH
            # (not a GPU tool the vendor's container runtime mounts in, nor the NVIDIA
            # toolkit's OCI hook the runtime runs before it: no GPU runtime is a GPU problem,
            # not the entrypoint's)
            pat(
                r"(?P<msg>.*?\bexec:? \x22?(?!(?:nvidia|rocm|npu|hl|xpu)-smi\b)(?![^\x22\s:]{0,300}?"
                + _NVIDIA_HOOKS
                + r")(?P<path>[^\x22\s:]{1,300})\x22?: (?:executable file not found in \$PATH|no such file or directory|permission denied).*)",
                summary="the container runtime could not run the entrypoint {path}: {msg}",
                fix="the image has no executable {path} on its PATH: use the image's own entrypoint (or the full path of the command, e.g. `python3 -m <module>`), or install the package that provides it",
            ),
            # the kernel refused to run a file built for another CPU (ENOEXEC: an amd64 image
            # on an arm64 host, or the reverse), as runc, crun, a shell or Python report it
            pat(
                r"(?P<msg>.*?\b[Ee]xec format error\b.*)",
                summary="the program is built for another CPU architecture than this host: {msg}",
                fix="the image or binary is for another CPU architecture (amd64 vs arm64): pull or build the image for this host's platform (`--platform linux/$(uname -m)`, a multi-arch tag), or run it on a host of that architecture",
            ),
            # a container's init process (catatonit for podman, tini, dumb-init) could not exec
            # the container's command: the entrypoint is not in the image or not executable
            pat(
                r"(?P<msg>.*?(?:\(catatonit:\d+\): failed to exec (?:pid1|\S+)|\[FATAL tini \(\d+\)\] exec (?P<path>\S{1,300}) failed|\[dumb-init\] \S{1,300}: (?:No such file or directory|Permission denied)).*)",
                summary="the container's init could not run its command: {msg}",
                fix="the container's command (its entrypoint or the image's CMD) is not in the image, not executable, or its interpreter is missing: check the image and the command the runtime passes (`podman inspect` / `docker inspect`, the Config.Cmd and Entrypoint)",
            ),
            # a launcher's subprocess call of the engine's executable (Python's
            # FileNotFoundError, errno 2 in any language of the OS's text): a path under bin/
            pat(
                r"(?P<msg>.*?\[Errno 2\] [^'\n]{1,80}: '(?P<path>[^'\n]{0,300}?/s?bin/(?!"
                + _BUILD_TOOLS
                + r"'|(?:nvidia|rocm|npu|hl|xpu)-smi')[^'/\n]{1,80})'.*)",
                summary="the launcher could not run {path}: {msg}",
                fix="{path} does not exist: install the engine into the environment the launcher uses (the path is its console script) or point the launcher at the right environment",
            ),
        ),
        defaults={"path": "?", "msg": "?"},
        examples=(
            # not from the corpus: a pod's event for an image without the command, podman's,
            # and a launcher's subprocess call in a German locale
            'Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "sglang": executable file not found in $PATH: unknown',
            'Error: crun: executable file `python3` not found in $PATH: No such file or directory: OCI runtime attempted to invoke a command that was not found\nexec: "python3": executable file not found in $PATH',
            "FileNotFoundError: [Errno 2] Datei oder Verzeichnis nicht gefunden: '/opt/venv/bin/sglang'",
            "sglang-kimi.service: Failed to locate executable /opt/sglang/bin/python3: No such file or directory",
            # not from the corpus: tini's words, dumb-init's
            "[FATAL tini (7)] exec /opt/entrypoint.sh failed: No such file or directory",
            "[dumb-init] /opt/entrypoint.sh: Permission denied",
            "sglang-kimi.service: Failed at step EXEC spawning /opt/sglang/bin/python3: No such file or directory",
        ),
    ),
    Rule(
        id="warmup-proxy",
        families=(
            # raised by SGLang's warm-up code itself (its status assertion, its readiness wait),
            # not deeper in the model it ran: the request to its own port did not get through
            # (not when the body is the server's own error JSON, OpenAI-style: SGLang answered,
            # and the error it reports is the cause, named by its own rule or by none)
            Family((), site_functions=code.WARMUP_FUNCTIONS, unless=_SERVER_ERROR_BODY),
            # the HTTP client under SGLang's warm-up got an answer that is not SGLang's: a body
            # that is not JSON, a proxy's refusal, an HTTP error status (requests, httpx, urllib3)
            Family(
                ("JSONDecodeError", "ProxyError", "HTTPError", "HTTPStatusError"),
                functions=code.WARMUP_FUNCTIONS,
                summary="the warm-up request to the server's own port got an answer that is not SGLang's: {exc}: {msg}",
            ),
        ),
        signals=(
            # SGLang's "warmup error" wrapper with no cause logged anywhere (a truncated paste)
            Signal(("sglang-warmup",), role=FALLBACK, unless_logged=_SERVER_ERROR_BODY),
        ),
        title="SGLang's warm-up request did not reach SGLang (an HTTP proxy answered)",
        summary="the warm-up request to the server's own port got HTTP {status} instead of 200: {msg}",
        fix="{fixhint}",
        doc=(
            "After the HTTP server starts, SGLang sends itself a warm-up request; it fails when an "
            "HTTP proxy from the environment (http_proxy / HTTPS_PROXY, often set system-wide) "
            "intercepts the request to 127.0.0.1 and answers 502/403/407 itself. The server "
            "then kills itself although it was healthy."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>AssertionError): (?P<msg>res=<Response \[(?P<status>(?!200)\d{3})\]>.*)",
            ),
            pat(
                r"(?P<msg>.*warmup error:.*(?:ProxyError|Tunnel connection failed|407 Proxy Authentication Required).*)",
                status="407",
            ),
            # a request to this host's own loopback or wildcard address written in proxy form
            # (an absolute URL as the target: urllib3/requests log it so only when they send it
            # to a proxy) and refused: whoever sent it, a proxy answered for the server
            pat(
                r'"(?:GET|POST|HEAD|PUT) (?P<target>https?://'
                + _LOOPBACK
                + r'(?::\d{1,5})?/\S{0,300}) HTTP/[\d.]{1,3}" (?P<status>[45]\d\d)\b',
                role=FALLBACK,
                summary="a request to the server's own address went through an HTTP proxy, which answered HTTP {status} ({target})",
            ),
            # requests' raise_for_status on a loopback URL with a proxy's typical status (never
            # the Hub's 403: the URL is this host's), or a ProxyError on a loopback host: the
            # proxy variables cover 127.0.0.1
            pat(
                r"(?P<msg>.*\b(?P<status>403|407|502|504) (?:Client|Server) Error: [\w ]{1,60} for url: https?://"
                + _LOOPBACK
                + r"\b.*)",
            ),
            pat(
                r"(?P<msg>.*host='"
                + _LOOPBACK
                + r"'.{0,300}?(?:ProxyError|Tunnel connection failed|Proxy Authentication Required).*)",
                status="407",
            ),
        ),
        defaults={"msg": "?", "status": "?"},
        enrich=_enrich_warmup,
        examples=(
            under(
                f".../{code.EXAMPLE_FILES['http-server']}",
                "_execute_server_warmup",
                "AssertionError: res=<Response [502]>, res.text=''",
            ),
            # not from the corpus: httpx under the warm-up, a proxy's 502 page
            "Traceback (most recent call last):\n"
            f'  File ".../{code.EXAMPLE_FILES["http-server"]}", line 1, in _wait_and_warmup\n'
            "    ...\n"
            '  File "/opt/venv/lib/python3.12/site-packages/httpx/_models.py", line 829, in raise_for_status\n'
            "    raise HTTPStatusError(message, request=request, response=self)\n"
            "httpx.HTTPStatusError: Server error '502 Bad Gateway' for url 'http://127.0.0.1:30000/get_model_info'",
            # not from the corpus: the proxy's answer as urllib3's debug log shows it
            'http://proxy.corp:3128 "POST http://127.0.0.1:30000/generate HTTP/1.1" 502 0',
            # not from the corpus: requests refused by a proxy on the way to 127.0.0.1
            "requests.exceptions.ProxyError: HTTPConnectionPool(host='127.0.0.1', port=30000): Max retries exceeded with url: /get_model_info (Caused by ProxyError('Unable to connect to proxy', OSError('Tunnel connection failed: 403 Forbidden')))",
        ),
    ),
    Rule(
        id="port-in-use",
        families=(
            # EADDRINUSE in any library's words (uvicorn, zmq, c10d, gloo, asyncio), any type
            Family((), words=_ADDR_IN_USE),
        ),
        signals=(Signal(("error-level",), words=_ADDR_IN_USE),),
        title="a port SGLang needs is taken",
        summary="port {port} is already in use: {msg}",
        fix="{fixhint}",
        doc=(
            "SGLang never checks the HTTP port before loading the model: uvicorn fails to bind "
            'after minutes of loading ("[Errno 98] … address already in use"). The internal '
            "ports (ZMQ, dist-init / torch TCPStore, NCCL) fail earlier (SGLang's own port "
            'checks, torch\'s "EADDRINUSE").'
        ),
        patterns=(
            pat(
                r"(?P<msg>\[(?:Errno|WinError) (?:98|48|10048)\] (?:error while attempting to bind on address \((?P<addr>'[^']*'), (?P<port>\d+)(?:, \d+, \d+)?\): )?(?:[Aa]ddress already in use|[Oo]nly one usage of each socket address))",
            ),
            # the errno alone says it, whatever language the OS wrote its text in (Windows'
            # FormatMessage is localized: "[WinError 10048] Normalerweise darf …"); 98 is
            # EADDRINUSE on Linux, 10048 WSAEADDRINUSE (48, macOS', needs the English text)
            pat(
                r"(?P<msg>\[(?:Errno|WinError) (?:98|10048)\] (?:error while attempting to bind on address \((?P<addr>'[^']*'), (?P<port>\d+)(?:, \d+, \d+)?\): )?.*)",
            ),
            # c10d's TCPStore server could not listen: the port is taken (its detail, when the
            # paste keeps it, says EADDRINUSE; another errno named there is not this cause)
            pat(
                r"(?P<msg>.*The server socket has failed to listen on any local network address\.(?![^\n]{0,300}?(?:EADDRNOTAVAIL|EACCES|EPERM|code: -(?:99|13|1)\b|errno: (?:99|13|1)\b|Permission denied|Cannot assign requested address))(?:.*?port: (?P<port>\d+))?.*)",
            ),
            *said("port-not-available", anywhere=True),
            *said(
                "port-in-use", anywhere=True, fields={"ports": r"(?:.*?nccl_port=(?P<port>\d+))?.*"}
            ),
            pat(r"(?P<msg>.*?(?P<port>\d+) is already in use.*)"),
            # c10d's TCPStore (its warning per address; its give-up line names no errno, and
            # errno 13 there is a privileged port, not a taken one), Go's and Node's net errors: a bind/listen on host:port refused with
            # EADDRINUSE ("failed to bind to 0.0.0.0:1034 (errno: 98 - Address already in
            # use)", "listen tcp :8080: bind: address already in use", "listen EADDRINUSE:
            # address already in use :::3000")
            pat(
                r"(?P<msg>.*?\b(?:bind|listen)\b[^:\n]{0,40}?(?:[\w.-]+|\[[0-9a-fA-F:]*\])?:(?P<port>\d{2,5})\b.{0,80}?(?:[Aa]ddress already in use|EADDRINUSE|errno: (?:98|48|10048)\b).*)",
            ),
            # pyzmq's bind error, which names the endpoint ("Address already in use
            # (addr='tcp://10.0.0.5:20012')"): a KV-transfer connector, a scheduler's IPC port,
            # logged or raised, in any engine
            pat(
                r"(?P<msg>.*?\b[Aa]ddress already in use \(addr='[a-z]{2,8}://[^'\n]{0,200}?:(?P<port>\d{1,5})'\).*)",
            ),
            pat(
                r"(?P<msg>.*listen EADDRINUSE: address already in use \S*?:(?P<port>\d+).*)",
            ),
            # a program's own bind error with the OS's words after it, naming no port ("Error
            # binding/connecting recv socket to endpoint: Address already in use"; strerror of
            # EADDRINUSE, as C/C++ servers print it)
            pat(
                r"(?P<msg>.*?\b(?:[Ee]rror|[Ff]ailed to|[Cc]annot|[Cc]ould not|[Uu]nable to) bind(?:ing)?\b[^\n]{0,120}?: Address already in use\b.*)",
            ),
            # Go's net package on Windows: "listen tcp 127.0.0.1:11434: bind: " then the
            # system's text for WSAEADDRINUSE (10048), in English or in the OS's language; in
            # every language that text names the triple "(protocol/network address/port)" (slashes or commas),
            # which WSAEACCES' and WSAEADDRNOTAVAIL's texts do not
            pat(
                r"(?P<msg>.*?\blisten (?:tcp|tcp4|tcp6|udp)\S{0,2} (?:[\w.-]+|\[[0-9a-fA-F:.]*\])?:(?P<port>\d{1,5}): bind: (?:[Oo]nly one usage of each socket address|[^()\n]{0,200}\([^()/,\n]{1,60}[/,][^()\n]{1,120}\)).*)",
            ),
            # Rust's std::io::Error (Display "… (os error 98)", Debug "kind: AddrInUse") and
            # Java's BindException: EADDRINUSE named by the runtime, the port often not
            pat(
                r"(?P<msg>.*(?:[Aa]ddress already in use \(os error (?:98|48|10048)\)|\bkind: AddrInUse\b|BindException: Address already in use).*)",
            ),
            # a server's own words for a bind that failed, naming the port but no errno
            # (llama.cpp's "couldn't bind HTTP server socket, hostname: …, port: 8080"): a taken
            # port, unless the line names a privileged port's or a missing address's errno
            pat(
                r"\A(?!.*(?:[Pp]ermission denied|EACCES|Errno 13|WinError 10013|assign requested address|EADDRNOTAVAIL|Errno 99))(?P<msg>.*?\b(?:couldn't|could not|can't|cannot|unable to|[Ff]ailed to) bind\b[^\n]{0,80}?\bport[:= ]\s{0,3}(?P<port>\d{2,5})\b.*)",
                keywords=("bind",),
            ),
            # a server that scans for a free port and finds none (gradio's launch())
            pat(
                r"(?P<msg>.*Cannot find empty port in range: (?P<port>\d+)-\d+.*)",
            ),
        ),
        preflight_rule=None,
        defaults={"port": "?", "msg": "?"},
        enrich=_enrich_port,
        examples=(
            # not from the corpus: Go's net package, Node's, gradio's own scan
            "listen tcp 0.0.0.0:8080: bind: address already in use",
            "Error: listen EADDRINUSE: address already in use :::3000",
            # not from the corpus: pyzmq's bind error, raised under a traceback
            "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5557')",
            "OSError: Cannot find empty port in range: 7861-7861. You can specify a different port by setting the GRADIO_SERVER_PORT environment variable or passing the `server_port` parameter to `launch()`.",
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 25000, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
            # not from the corpus: Windows' WSAEADDRINUSE as Python's asyncio prints it
            "OSError: [Errno 10048] error while attempting to bind on address ('0.0.0.0', 30000): only one usage of each socket address (protocol/network address/port) is normally permitted",
            # not from the corpus: Go on a German Windows (WSAEADDRINUSE, localized)
            "Error: listen tcp 0.0.0.0:8080: bind: Normalerweise darf jede Socketadresse (Protokoll, Netzwerkadresse oder Anschluss) nur jeweils einmal verwendet werden.",
            "Error: listen tcp 127.0.0.1:11434: bind: Only one usage of each socket address (protocol/network address/port) is normally permitted.",
            # not from the corpus: Python on a German Windows (the errno, localized text)
            "OSError: [WinError 10048] Normalerweise darf jede Socketadresse (Protokoll, Netzwerkadresse oder Anschluss) nur jeweils einmal verwendet werden",
            # not from the corpus: a Rust server's panic, and Java's
            "thread 'main' panicked at src/main.rs:42:10: called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: AddrInUse, message: \"Address already in use\" }",
            "java.net.BindException: Address already in use",
            # not from the corpus: llama.cpp's server, another of its bind failures
            "main: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8000",
            "error: failed to bind listening socket on port 11434",
        ),
    ),
    Rule(
        id="dist-init-timeout",
        families=(
            Family(
                (
                    "DistNetworkError",
                    "DistStoreError",
                    "RendezvousConnectionError",
                    "RendezvousTimeoutError",
                ),
                # the master's socket refused a privileged port (EACCES, errno 13): a local
                # permission, not the ranks failing to meet (a taken port is port-in-use's,
                # whose family comes first; an address not on this host, errno 99, is a wrong
                # --dist-init-addr and stays here)
                unless=("Permission denied", "errno: 13", "EACCES"),
            ),
            Family(
                ("TimeoutError", "RuntimeError"),
                # Gloo's store wait ("RuntimeError: Wait timeout", a FileStore/TCPStore the
                # other ranks never joined) in the same frames
                words=(
                    "TCPStore",
                    "rendezvous",
                    "Socket Timeout",
                    "timed out",
                    "Timed out",
                    "Wait timeout",
                    "wait timeout",
                ),
                frames=code.DISTRIBUTED_PACKAGES,
                both=True,
            ),
            # the rendezvous host's name does not resolve (a pod's DNS name not there yet, a
            # typo in MASTER_ADDR / --dist-init-addr), under torch.distributed's frames
            Family(
                ("ValueError", "RuntimeError", "gaierror", "OSError"),
                words=(
                    "Name or service not known",
                    "Temporary failure in name resolution",
                    "nodename nor servname provided",
                ),
                frames=code.DISTRIBUTED_PACKAGES,
                both=True,
                summary="the rendezvous host's name does not resolve: {exc}: {msg}",
                fix="the ranks cannot find the rendezvous host by name: check MASTER_ADDR / --dist-init-addr (on Kubernetes, the leader's headless-service name resolves only once its pod is ready: wait for it, or use the pod IP)",
            ),
        ),
        # torch's C++ store/rendezvous logging its own failure (glog E lines, elastic agent)
        signals=(
            Signal(
                ("c10d", "error-level"),
                words=("timed out", "Timed out", "failed to connect", "Connection refused"),
            ),
            Signal(("c10d",), words=("RendezvousConnectionError", "RendezvousTimeoutError")),
        ),
        title="the ranks could not meet: torch.distributed rendezvous failed",
        summary="torch.distributed could not connect the ranks: {msg}",
        fix="{fixhint}",
        doc=(
            "Before NCCL, the ranks meet over TCP (torch's c10d store at --dist-init-addr, and "
            "Gloo for the CPU group). In a multi-node (or containerised) deployment this fails "
            'when a node cannot reach the address or Gloo picks the wrong interface: "Gloo '
            'connectFullMesh failed", "The client socket has failed to connect to any network '
            'address of (host, port)", "Timed out waiting …ms for send operation".'
        ),
        patterns=(
            # (its words cut anywhere after the function's name, by a paste or a terminal)
            pat(r"(?P<msg>.*Gloo connectFullMesh\b.*)"),
            pat(
                r"(?P<msg>.*The client socket has timed out after \d+m?s while trying to connect to \((?P<host>[^,]+), (?P<port>\d+)\).*)",
            ),
            pat(r"(?P<msg>.*connect\(\) timed out\. Original timeout was \d+ ms.*)"),
            pat(
                r"(?P<msg>.*Unable to find address for: (?P<iface>[\w.:-]+).*)",
                fixhint="GLOO_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) names a network interface this host does not have: set it to one `ip -br addr` lists, the same network on every node",
            ),
            pat(
                r"(?P<msg>.*The client socket has failed to connect to any network address of \((?P<host>[^,]+), (?P<port>\d+)\).*)",
            ),
            pat(
                r"(?P<msg>.*(?:gloo|Gloo).*Timed out waiting \d+ms for (?:send|recv) operation to complete.*)",
            ),
            # c10d's store socket (the TCPStore at --dist-init-addr) waiting for the master's
            # answer until its timeout, in torch's socket.cpp words of any release
            # ("[c10d] waitForInput: socket SocketImpl(fd=103, addr=…, remote=[…]:5000) timed
            # out after 1800000ms"; the glog level W or E, whatever the prefix)
            pat(
                r"(?P<msg>.*?\[c10d\] (?:waitForInput|recvBytes|sendBytes|recvValue|sendValue|pollFd|read|write)\w{0,12}: socket [^\n]{0,400}? timed out after \d+ ?m?s.*)",
            ),
            # the store client retrying or losing its connection to the master's TCPStore
            # (TCPStore.cpp's "TCP client failed to connect/validate to host", its recvValue /
            # sendValue on a socket the peer reset) and socket.cpp's refused connect with any
            # OS error after the address (Windows' 10049, Linux's errno). Not a recv that "got
            # 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?":
            # the store's process (rank 0) closed it on exiting, a consequence of its own failure
            pat(
                r"(?P<msg>.*?\[c10d\] (?:TCP client failed to connect/validate to host (?P<host>[\w.:-]{1,200}?):(?P<port>\d+)\b|(?:recvValue|sendValue|recvBytes|sendBytes) failed on SocketImpl\b(?![^\n]{0,400}?got 0 bytes)|The client socket has failed to connect to \[(?P<host2>[^\]]{1,200})\]:(?P<port2>\d+) \((?:system error|errno): ).*)",
            ),
            # Gloo's TCP transport (gloo/transport/tcp/pair.cc) failing to connect to a peer,
            # whatever the OS's words after the address (refused, timed out, no route, in any
            # language): a loopback address there is a hostname that resolves to 127.0.1.1
            pat(
                r"(?P<msg>.*?gloo/transport/\w+/\w+\.cc:\d+\] connect \[?(?P<host>[\w.:-]{1,200}?)\]?:(?P<port>\d+): .*)",
            ),
            # NCCL's bootstrap through the c10d store (torch's ProcessGroupNCCL): the store's get
            # of rank 0's ncclUniqueId failed, so the ranks never met (the error after "got
            # error:" is the store's: a timeout, a refused or malformed address)
            pat(
                r"(?P<msg>.*?retrieving ncclUniqueId from \[\d+\] via c10d key-value store by key '[^']{0,100}', but store->get\('[^']{0,100}'\) got error: .*)",
            ),
            pat(
                _EXC
                + r"(?P<exc>(?:torch\.distributed\.)?DistStoreError|(?:torch\.distributed\.)?DistNetworkError|RuntimeError): (?P<msg>.*(?:Timed out after \d+ seconds waiting for clients|Timed out initializing process group in store based barrier|Socket Timeout|wait timeout after|Connection reset by peer|Connection refused).*)",
            ),
        ),
        defaults={"msg": "?", "host": "", "port": "?"},
        enrich=_enrich_rendezvous,
        examples=(
            "[rank1]:[E528 08:52:46.164 ProcessGroupGloo.cpp:145] Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
            "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (node-0, 47389).",
            # not from the corpus: torch >= 2.2's client timeout
            "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500).",
            # not from the corpus: Gloo's connect to a peer (gloo/transport/tcp/pair.cc), another errno
            "terminate called after throwing an instance of 'gloo::IoException'\n  what():  [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] connect [10.0.0.2]:41234: No route to host",
            # not from the corpus: ProcessGroupNCCL's bootstrap over the store, timed out
            "torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, keys: /default_pg/0//cuda//0",
            # not from the corpus: the store client's read, at error level
            "[rank1]:[E1203 10:02:11.000000 7 socket.cpp:492] [c10d] recvBytes: socket SocketImpl(fd=12, addr=[node-1]:40112, remote=[node-0]:29500) timed out after 600000ms",
        ),
    ),
    Rule(
        id="ray-init-failed",
        title="Ray did not come up",
        summary="Ray, which runs the engine's workers, failed before the model loaded: {msg}",
        fix="the Ray runtime under the server is broken: stop stale Ray processes (`ray stop --force`), make sure /tmp (Ray's session dir) is writable and not full, or run without Ray (a single node needs no Ray executor)",
        doc=(
            "When the engine runs its workers under Ray, a Ray runtime that cannot start (a core "
            "worker that cannot register with its raylet, a stale session, a full /tmp) fails "
            "the start before any model code runs."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*(?:Failed to register worker .* to Raylet|Unable to register worker with raylet|RaySystemError|The raylet died|Failed to connect to GCS|(?:Couldn't|Could not|Failed to) reconnect to (?:the )?GCS).*)",
            ),
            # Ray's head could not bring up its own services (ray.init / `ray start`): the GCS
            # server, the raylet, the dashboard, plasma; their logs under /tmp/ray/session_*
            pat(
                r"(?P<msg>.*(?:Failed to start (?:the )?(?:GCS|gcs_server|[Rr]aylet|plasma store|Ray (?:head|cluster|dashboard))\b|\b(?:GCS|gcs_server|[Rr]aylet) (?:server )?(?:failed to start|exited unexpectedly|has (?:died|exited))|Could not (?:start|connect to) (?:the )?(?:GCS|Ray head|Ray cluster)\b|Timed out (?:while )?waiting for (?:the )?(?:GCS|raylet|file /tmp/ray/\S*)).*)",
            ),
            # Ray's own native services (gcs_server, raylet) that the host's loader cannot run
            # (a glibc older than the wheel's, a missing shared library, another CPU
            # architecture): `ray start`/ray.init then fail with their .err logs
            pat(
                r"(?P<msg>.*?/ray/(?:gcs/gcs_server|raylet/raylet)\b[^\n]{0,40}?: (?:[^\n]{0,300}?version `GLIBC[\w.]*' not found|error while loading shared libraries|cannot execute binary file|Exec format error|Illegal instruction).*)",
                summary="Ray's own services cannot run on this host: {msg}",
                fix="the Ray wheel's native binaries (gcs_server, raylet) do not run here: install a Ray build for this host's glibc and CPU architecture (`ldd --version`, `uname -m`), or run the engine without Ray",
            ),
            # the same, where the reader took the binary's path for the lines' prefix (a
            # gcs_server.err / raylet.err pasted whole: every line opens with it)
            pat(
                r"(?P<msg>.*?(?:version `GLIBC[\w.]*' not found|error while loading shared libraries|cannot execute binary file|Exec format error|Illegal instruction).*)",
                origin=r"/ray/(?:gcs/gcs_server|raylet/raylet)\b",
                summary="Ray's own services cannot run on this host: {msg}",
                fix="the Ray wheel's native binaries (gcs_server, raylet) do not run here: install a Ray build for this host's glibc and CPU architecture (`ldd --version`, `uname -m`), or run the engine without Ray",
            ),
            # Ray's temp dir (/tmp/ray by default: its sessions, sockets and logs) that this
            # user may not write (made by another user, a read-only /tmp): errno 1, 13 or 30 in
            # any language of the OS text, or the English words without the errno
            pat(
                r"(?P<msg>.*?(?:(?:\[Errno (?:1|13|30)\]|\b(?:Permission denied|Operation not permitted|Read-only file system)\b).{0,120}?['\"]?/tmp/ray(?![\w.-])|/tmp/ray(?![\w.-])\S{0,300}?:? (?:Permission denied|Operation not permitted|Read-only file system)\b).*)",
                summary="Ray cannot write its temp dir: {msg}",
                fix="Ray's temp dir belongs to another user or is read-only: remove the stale /tmp/ray (or chown it to this user), or give Ray its own (`ray start --temp-dir`, `ray.init(_temp_dir=...)`, RAY_TMPDIR)",
            ),
            # the GCS's health check gave a node up (gcs_health_check_manager: the monitor's or the
            # detector's missed heartbeats, in every Ray release's words): its raylet died (OOM,
            # preemption) or the network between the nodes dropped
            pat(
                r"(?P<msg>.*?\bhas been marked dead because the (?:detector|monitor) has missed too many heartbeats from it.*)",
                summary="Ray marked a node of the cluster dead (missed heartbeats): {msg}",
                fix="a Ray node stopped answering its head: look at that node's raylet.out/raylet.err and dmesg (an OOM kill or a preempted host), the network between the nodes, and the health-check timeout on a busy head (RAY_health_check_timeout_ms)",
            ),
            # the raylet's worker pool: a worker process that never registered (raylet
            # worker_pool.cc), which is a worker crashing while it starts
            pat(
                r"(?P<msg>.*?\bSome workers of the worker process\(\d+\) have not registered within the timeout\b.*)",
            ),
            # a node's record missing from the GCS (the head restarted, a stale session, two
            # clusters on one host): `ray start` / ray.init cannot register the node
            pat(
                r"(?P<msg>.*?\bGCS (?:cannot|can't|could not|failed to) find (?:the )?node\b.*)",
            ),
        ),
        defaults={"msg": "?"},
        examples=(
            # not from the corpus: Ray's raylet binary that the host's loader cannot run
            "/opt/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet: error while loading shared libraries: libstdc++.so.6: cannot open shared object file: No such file or directory",
            # not from the corpus: Ray's session dir left by another user (os.makedirs' words)
            "PermissionError: [Errno 13] Permission denied: '/tmp/ray/session_2024-05-01_10-00-00_123456_789'",
            # not from the corpus: a worker node whose node record the head's GCS lacks
            "RuntimeError: b'GCS cannot find the node with node ID 5c3fcbef4daf379d364d'",
            "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: Failed to register worker 01000000ffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory",
            # not from the corpus: `ray start --head` whose raylet died at once
            "RuntimeError: Failed to start the raylet. Last 20 lines of error files: see /tmp/ray/session_latest/logs/raylet.err",
            "RuntimeError: Failed to start GCS.  Last 0 lines of error files:",
        ),
    ),
    Rule(
        id="host-oom-killed",
        title="the kernel OOM killer killed the server (host RAM)",
        summary="the kernel OOM killer killed {comm} (host memory, not GPU memory)",
        fix=(
            "give the service more host RAM: raise or remove MemoryMax=/MemoryHigh= in the unit, "
            "stop other memory users, check /dev/shm and page cache; loading a TP=8 Kimi K2.6 "
            "maps the checkpoint in every rank (confirm with `dmesg -T | grep -i oom`)"
        ),
        doc=(
            "The kernel's OOM killer (or the unit's cgroup memory limit) sent SIGKILL: systemd logs "
            '"A process of this unit has been killed by the OOM killer." and "Failed with '
            "result 'oom-kill'\"; the kernel logs \"Out of memory: Killed process …\"; SGLang's "
            "parent reports the scheduler rank that died with exit code -9. A bare "
            "SIGKILL (status=9/KILL, exit 137, exit code -9) without those is reported as a hint "
            "only when nothing else explains the failure."
        ),
        patterns=(
            pat(r"A process of this unit has been killed by the OOM killer"),
            pat(r"Failed with result 'oom-kill'"),
            pat(
                r"(?:Memory cgroup )?[Oo]ut of memory: Killed process (?P<pid>\d+) \((?P<comm>[^)]*)\)",
            ),
            pat(r"oom-kill:constraint=\S+.*?task=(?P<comm>[^,]+),pid=(?P<pid>\d+)"),
            pat(
                r"oom_reaper: reaped process (?P<pid>\d+) \((?P<comm>[^)]*)\)",
            ),
            # Kubernetes' (and docker inspect's) reason for a container its cgroup's OOM
            # killer ended: the pod's memory limit, host memory as the container sees it
            pat(
                r"(?P<msg>.*(?:\bReason:\s{0,20}OOMKilled\b|\"reason\":\s?\"OOMKilled\"|\"OOMKilled\":\s?true|\b\d+/\d+\s+OOMKilled\b).*)",
                summary="the container was killed by its cgroup's OOM killer (OOMKilled: the memory limit, host memory, not GPU memory): {msg}",
                fix="raise the container's memory limit (resources.limits.memory / --memory) or lower what the server maps in host RAM; loading a TP=8 model maps the checkpoint in every rank",
            ),
            # Slurm's step daemon counting its cgroup's OOM kills (slurmstepd, task/cgroup)
            pat(
                r"(?P<msg>.*?\bslurmstepd\S{0,40}: error: Detected \d+ oom[-_ ]kill event\(?s?\)? in (?:StepId|step)\b.*)",
                summary="Slurm's cgroup OOM killer killed a process of the job step (host memory, not GPU memory): {msg}",
                fix="give the job more host RAM (--mem / --mem-per-cpu / --mem-per-gpu in the sbatch or srun line) or lower what each rank maps in host RAM; loading a TP=8 model maps the checkpoint in every rank",
            ),
            # the kernel's first OOM line (dmesg, journalctl -k), before it names its victim:
            # "<comm> invoked oom-killer: gfp_mask=…", or its call trace's oom_kill_process
            pat(
                r"(?P<invoker>\S+) invoked oom-killer: gfp_mask=",
                summary="the kernel OOM killer ran (invoked by {invoker}): host RAM ran out and it killed a process, most likely the server (host memory, not GPU memory)",
            ),
            pat(
                r"(?P<msg>.*(?:Task was killed due to the node running low on memory|killed due to memory pressure|memory_monitor\.cc.*Killing|Ray's memory monitor|which exceeds the memory usage threshold\b|OutOfMemoryError: Task was killed|\bRefer to the documentation on how to address the out of memory issue: \S{0,80}ray-oom-prevention\b).*)",
                comm="a worker (killed by Ray's memory monitor)",
            ),
            pat(
                r"(?P<msg>.*The actor is dead because its worker process has died.*)",
                role=HINT,
                summary="a Ray worker of the server died without an error of its own; Ray names the OOM killer (SIGKILL for host memory) as the usual cause (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            # Ray's report of a worker that died without an error of its own (a SIGKILL; Ray
            # lists the OOM killer first among the causes)
            pat(
                r"(?P<msg>.*?\bA worker died or was killed while executing a task\b(?! by an unexpected system error).*)",
                role=HINT,
                summary="a Ray worker of the server died without an error of its own; Ray names the OOM killer (SIGKILL for host memory) as the usual cause (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            # a container's exit status 137 (128 + SIGKILL) as Kubernetes, docker, compose and
            # the serving frameworks' status report it: its cgroup's OOM killer, unless said
            # otherwise
            pat(
                r"(?P<msg>.*?(?:\bexit ?[Cc]ode|\bexitCode|\bExit Code|\bexited with (?:code|status))[\"']?[:=]?\s{0,20}\(?137\b.*)",
                role=HINT,
                summary="a container of the server was killed with SIGKILL (exit code 137) and no error was logged before it: the usual sender is the OOM killer of its memory limit (inferred, confirm with `kubectl describe pod` / `docker inspect` for OOMKilled)",
            ),
            # the shell's report of a SIGKILLed foreground command: bash's "Killed" on its own
            # line or after a progress bar's \r (no newline: "Loading checkpoint shards:  38%|…|
            # 3/8 [00:02<00:03]Killed"), macOS's "Killed: 9", bash's job line "line 1: 4242
            # Killed  python …", zsh's "zsh: killed  python …"
            pat(
                r"\A(?P<msg>(?:.*[\]|])?\s*Killed(?:: 9)?)\s*\Z",
                role=HINT,
                summary="the shell reports the process was killed (SIGKILL) with no error logged before it: the usual sender is the kernel OOM killer, out of host RAM while loading (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            pat(
                r"\A(?P<msg>.*?(?:\b\d+ Killed|zsh: killed)\s+\S.*)",
                role=HINT,
                summary="the shell reports the process was killed (SIGKILL) with no error logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            pat(
                r"Main process exited, code=killed, status=(?P<sig>9/KILL)",
                role=HINT,
                summary="a process of the service was killed with SIGKILL and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
            *said(
                "scheduler-died",
                anywhere=True,
                fields={"code": "-9"},
                role=HINT,
                summary="scheduler rank {rank} was killed with SIGKILL (exit code -9) and no error was logged before it: the usual sender is the kernel OOM killer (inferred, confirm with `dmesg -T | grep -i oom`)",
            ),
        ),
        explains=("nccl-error",),
        defaults={"comm": "a process of the service", "msg": "?"},
        examples=(
            "sglang-kimi.service: A process of this unit has been killed by the OOM killer.",
            # not from the corpus: Slurm's step daemon reporting its cgroup's OOM kills
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have been killed by the cgroup out-of-memory handler.",
            "sglang-kimi.service: Failed with result 'oom-kill'.",
            "Out of memory: Killed process 48213 (sglang::schedul) total-vm:912345678kB, anon-rss:201234567kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:401234kB oom_score_adj:0",
            # not from the corpus: the kernel's first line, journalctl -k
            "Dec 03 10:02:11 gpu-7 kernel: python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
            # not from the corpus: kubectl describe pod, and the kernel's reaper
            "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
            "sglang-kimi-0   0/1     OOMKilled   3 (41s ago)   12m",
            "[ 4242.424242] oom_reaper: reaped process 4242 (sglang::schedul), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
            # not from the corpus: the shell's words for the SIGKILL
            "Loading safetensors checkpoint shards:  41% Completed | 7/17 [00:31<00:44,  3.42s/it]Killed",
            "run.sh: line 3: 48213 Killed                  python3 -m sglang.launch_server --model-path /models/kimi",
        ),
    ),
    Rule(
        id="host-memory-exhausted",
        families=(Family(("MemoryError",)),),
        title="host memory or shared memory ran out (without the OOM killer)",
        summary="the host could not give the server memory: {msg}",
        fix="{fixhint}",
        doc=(
            "A process of the server could not allocate host memory or shared memory: "
            '"OSError: [Errno 12] Cannot allocate memory" (RAM, overcommit or a cgroup limit), '
            'NCCL\'s "posix_fallocate failed: No space left on device" or torch\'s "unable to '
            'write to file </torch_…>" (a /dev/shm too small, typically 64 MB in a container).'
        ),
        patterns=(
            pat(
                r"(?P<msg>.*(?:posix_fallocate failed ?: ?No space left on device|Error while creating shared memory segment|unable to (?:write to|open shared memory object <?/torch_)|No space left on device.*(?:/dev/shm|shm)|/dev/shm/\S.{0,300}?No space left on device).*)",
                fixhint="/dev/shm is too small for NCCL and torch's shared memory: give it several GB (containers: --shm-size 16g or --ipc=host; systemd: no PrivateTmp= on /dev/shm, or a larger tmpfs), or set NCCL_SHM_DISABLE=1 (slower)",
            ),
            # a SIGBUS whose reason is BUS_ADRERR, as UCX's handler reports it ("Caught signal
            # 7 (Bus error: nonexistent physical address)"): a shared mapping touched past the
            # memory backing it, a tmpfs (/dev/shm) that ran full under NCCL's or torch's
            # shared-memory segments (a bare SIGBUS, without that reason, is not read)
            pat(
                r"(?P<msg>.*?\bCaught signal 7 \(Bus error: nonexistent physical address\).*)",
                fixhint="a process touched shared memory that had no memory behind it, most often a /dev/shm too small for NCCL's and torch's segments: give it several GB (containers: --shm-size 16g or --ipc=host; Kubernetes: an emptyDir with medium: Memory on /dev/shm), or set NCCL_SHM_DISABLE=1 (slower)",
            ),
            # a shared-memory request larger than the /dev/shm there is (Ray's object store:
            # "System memory request exceeds memory available in /dev/shm"), or the advice to
            # enlarge it that a runtime prints with its failure
            pat(
                r"(?P<msg>.*(?:/dev/shm\b.{0,60}?\b(?:is too small|too small|is full|exceeded|not large enough)|\b(?:exceeds|larger than|more than)\b.{0,60}?\bavailable in /dev/shm|[Ii]nsufficient (?:space|room|memory) (?:in|on|for) (?:/dev/shm|shared memory)\b|insufficient shared memory|not enough shared memory|shared memory \(?(?:/dev/)?shm\)? (?:is )?too small).*)",
                fixhint="/dev/shm is smaller than the server's shared memory needs (Ray's object store, NCCL, torch): give it several GB (containers: --shm-size 16g or --ipc=host; Kubernetes: an emptyDir with medium: Memory on /dev/shm)",
            ),
            # Ray's warning that the object store it was told to make is larger than /dev/shm
            # ("The configured object store size (20.24 GB) exceeds /dev/shm size (10.73 GB)"):
            # Ray goes on, slower, and a later failure may name another cause: a fallback
            pat(
                r"(?P<msg>.*?\bobject store size \([\d.]{1,12} ?[KMGT]?i?B\) exceeds /dev/shm size\b.*)",
                role=FALLBACK,
                fixhint="/dev/shm is smaller than Ray's object store: give it more room (containers: --shm-size 32g or --ipc=host; Kubernetes: an emptyDir with medium: Memory on /dev/shm) or start Ray with a smaller --object-store-memory",
            ),
            # the kubelet evicting the pod whose emptyDir for /dev/shm outgrew its sizeLimit (a
            # volume named for shm: a Memory-medium emptyDir mounted there)
            pat(
                r"(?P<msg>.*?\bUsage of EmptyDir volume \\?\"?[\w.-]{0,60}shm[\w.-]{0,60}\\?\"? exceeds the limit\b.*)",
                fixhint="the pod's /dev/shm (an emptyDir with medium: Memory) outgrew its sizeLimit: raise the sizeLimit to several GB (NCCL and torch use /dev/shm) or drop the limit",
            ),
            # the kubelet evicting the pod for the node's memory pressure (not its own limit,
            # which is OOMKilled)
            pat(
                r"(?P<msg>.*?\bThe node was low on resource: memory\b.*)",
                fixhint="the node ran short of memory and the kubelet evicted the pod: give the pod a memory request that reserves what it maps (the checkpoint in every rank), move other workloads off the node, or use a node with more RAM",
            ),
            pat(
                _EXC
                + r"(?P<exc>OSError|MemoryError): (?P<msg>\[Errno 12\] Cannot allocate memory.*)",
                fixhint="a process could not get host memory (Errno 12, ENOMEM): free RAM or raise the unit's MemoryMax=/LimitAS=, check vm.overcommit_memory (2 refuses large mappings) and /dev/shm; a TP=8 server starts 8+ processes that each map the checkpoint",
            ),
            # torch's CPU allocator, and Windows' commit limit (a paging file too small for
            # the process's mappings: error 1455)
            pat(
                r"(?P<msg>.*(?:DefaultCPUAllocator: (?:can't allocate memory|not enough memory)|model requires more system memory \([^)\n]{1,40}\) than is available|WinError 1455\]|The paging file is too small for this operation to complete|Unable to allocate [\d.]+ [KMGTP]?i?B for an array|unable to mmap \d+ bytes from file .*Cannot allocate memory).*)",
                fixhint="the host could not commit the memory a process asked for: free RAM or raise the unit's MemoryMax=; on Windows enlarge the paging file (the loader maps every checkpoint shard)",
            ),
            # Rust's global allocator refusing (a tokenizers / safetensors / hf-transfer thread
            # of the process): it prints this and aborts the whole process
            pat(
                r"(?P<msg>memory allocation of (?P<bytes>\d{1,20}) bytes failed\b.*)",
                fixhint="a process could not get {bytes} bytes of host memory (Rust's allocator aborted it): free RAM or raise the unit's MemoryMax=; with several ranks each loading the checkpoint, start fewer at once or give the host more RAM",
            ),
            pat(
                # the first "Bus error" is kept (atomic group): linear even when no shm word follows
                r"\A(?P<msg>(?>.*?(?:Bus error|SIGBUS)).*(?:shm|shared memory|DataLoader).*)",
                fixhint="a bus error on shared memory: /dev/shm is too small (containers: --shm-size 16g or --ipc=host)",
            ),
        ),
        defaults={"msg": "?", "fixhint": "free host memory or enlarge /dev/shm"},
        explains=("nccl-error",),
        examples=(
            "OSError: [Errno 12] Cannot allocate memory",
            "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device",
            # NCCL's shm transport names the segment first and the errno after it
            "gpu-node-07:48304:48391 [4] transport/shm.cc:590 NCCL WARN Error: failed to extend /dev/shm/nccl-Xf3k2a to 9637892 bytes, error: No space left on device (28)",
            # not from the corpus: torch's CPU allocator refusing
            "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)",
            # not from the corpus: torch's DataLoader worker on a container's 64 MB /dev/shm
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
            # not from the corpus: Rust's allocator (the tokenizers library) aborting
            "memory allocation of 1073741824 bytes failed",
            # not from the corpus: ollama's host-memory check
            "Error: model requires more system memory (24.5 GiB) than is available (12.1 GiB)",
            # not from the corpus: an engine's own /dev/shm check
            "RuntimeError: Insufficient space in /dev/shm: 512 MiB required, 64 MiB free. Increase /dev/shm (e.g. --shm-size or --ipc=host).",
        ),
    ),
    Rule(
        id="disk-full",
        title="a disk or a quota ran full",
        summary="a write failed for lack of disk space: {msg}",
        fix="{fixhint}",
        doc=(
            "A write of the server or of what it runs ran out of disk space or quota (ENOSPC, "
            'errno 28: "No space left on device"; EDQUOT, errno 122: "Disk quota exceeded"): '
            "downloading the weights into the Hugging Face cache, the compile caches of "
            "Triton, torch.compile and FlashInfer, a container's writable layer, or a pod's "
            "ephemeral storage. Not /dev/shm: that is host-memory-exhausted."
        ),
        patterns=(
            # the errno as Python, Rust, Go, C and Node word it, not on shared memory (NCCL's
            # and torch's segments in /dev/shm are host-memory-exhausted's); a Python OSError
            # names the file
            pat(
                _NOT_SHM
                + r"(?P<msg>.*?(?:\[Errno (?:28|122)\] (?:No space left on device|Disk quota exceeded)(?:: '(?P<path>[^'\n]{1,300})')?|[Nn]o space left on device|[Dd]isk quota exceeded|\bENOSPC\b|\bEDQUOT\b|kind: (?:StorageFull|FilesystemQuotaExceeded)).*)",
                fixhint="free space on the filesystem the write went to{where} (df -h and df -i show which): the Hugging Face cache (HF_HOME / HF_HUB_CACHE), the model directory, the compile caches, a container's writable layer; or point the cache at a disk with room for the whole checkpoint",
            ),
            # huggingface_hub's check before a download: the file will not fit where it goes
            pat(
                r"(?P<msg>Not enough free disk space to download the file\. The expected file size is: (?P<need>[\d.]+ ?[KMGT]?B)\. The target location (?P<path>\S{1,300}) only has (?P<free>[\d.]+ ?[KMGT]?B) free disk space\.?)",
                fixhint="the Hub's download needs {need} in {path}, which has {free} free: free space there or point HF_HOME / HF_HUB_CACHE at a disk with room for the whole checkpoint",
            ),
            # the kubelet evicting a pod for its disk: the node's ephemeral storage, the pod's
            # limit, an emptyDir's sizeLimit (a download into it)
            pat(
                _NOT_SHM
                + r"(?P<msg>.*(?:The node was low on resource: (?:ephemeral-storage|nodefs|imagefs)|ephemeral local storage usage exceeds the total limit|Usage of EmptyDir volume \S{1,253} exceeds the limit|exceeded its local ephemeral storage limit).*)",
                fixhint="the pod was evicted for its disk use: raise its ephemeral-storage request/limit or the emptyDir's sizeLimit to hold the weights, or load them from a PersistentVolume",
            ),
        ),
        defaults={"msg": "?", "where": "", "fixhint": "free disk space"},
        enrich=_enrich_disk,
        examples=(
            "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/models--moonshotai--Kimi-K2.6/blobs/7f3c2a.incomplete'",
            # not from the corpus: Rust's io::Error (safetensors, hf-transfer), Go's (docker)
            'Error: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })',
            "docker: failed to register layer: write /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so: no space left on device.",
            "OSError: [Errno 122] Disk quota exceeded: '/home/svc/.triton/cache/ab12/kernel.cubin'",
            # not from the corpus: huggingface_hub's warning before the download that then fails
            "UserWarning: Not enough free disk space to download the file. The expected file size is: 4997.68 MB. The target location /root/.cache/huggingface/hub/models--moonshotai--Kimi-K2.6/blobs only has 1021.35 MB free disk space.",
            # not from the corpus: kubectl describe pod
            '  Warning  Evicted  12s  kubelet  Usage of EmptyDir volume "models" exceeds the limit "100Gi".',
            "  Warning  Evicted  3m  kubelet  The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi.",
        ),
    ),
    Rule(
        id="start-limit-hit",
        title="systemd stopped restarting the service",
        summary="systemd refused to start the unit again: it failed too often in a row (start-limit-hit)",
        fix="find why the earlier starts failed (`deploy logs --classify` on an earlier invocation), fix that, then `systemctl reset-failed <unit>` and start again",
        doc=(
            "Restart= kept restarting a failing service until StartLimitBurst= starts within "
            'StartLimitIntervalSec=; systemd then logs "Start request repeated too quickly." and '
            "gives up (Result=start-limit-hit). The cause is in the earlier invocations."
        ),
        patterns=(
            pat(r"Start request repeated too quickly"),
            pat(r"Failed with result 'start-limit-hit'", gate="ailed"),
        ),
        role=FALLBACK,
        examples=("sglang-kimi.service: Start request repeated too quickly.",),
    ),
    Rule(
        id="startup-timeout",
        title="the start did not finish in time",
        summary="the start did not finish in time; no error in the log (last step reached: {phase})",
        fix="if it was still progressing ({phase}), raise the deadline (profile start_timeout / TimeoutStartSec=): loading Kimi K2.6 and capturing EAGLE-3 CUDA graphs takes many minutes; if it hung, look for a stuck NCCL init (NCCL_DEBUG=INFO) or slow storage",
        doc=(
            "`deploy up` gave up waiting for /health, or systemd's TimeoutStartSec= passed "
            '("start operation timed out. Terminating.", Result=timeout), and the log holds no '
            "error. The summary names the last start-up milestone reached."
        ),
        patterns=(
            pat(r"start(?:-pre|-post)? operation timed out\. Terminating"),
            pat(r"Failed with result 'timeout'"),
            # a launcher around the server (a pipeline, an RL trainer, a desktop wrapper) gave
            # up waiting for it to be ready, in its own words: the server, not becoming ready
            # or not starting, and the wait or the timeout ("sglang server did not become ready
            # after waiting", "vllm-server failed to start within timeout", "Timed out waiting
            # for the server to start")
            pat(
                r"(?P<msg>.*?\b(?:[Ss]erver|[Ee]ngine)\b[^\n]{0,60}?\b(?:did not|didn't|does not|never|failed to|could not|couldn't) (?:become (?:ready|healthy)|get ready|start(?: up)?|come up)\b[^\n]{0,40}?\b(?:within|after|in) [^\n]{0,30}?\b(?:timeout|time|waiting|seconds|s\b|minutes).*)",
                summary=_LAUNCHER_GAVE_UP,
            ),
            pat(
                r"(?P<msg>.*?\b[Tt]imed out waiting for (?:the )?[\w.-]{0,40}? ?(?:server|engine)\b[^\n]{0,40}?\b(?:to (?:start|be ready|become ready|come up|be healthy)|readiness|health)\b.*)",
                summary=_LAUNCHER_GAVE_UP,
            ),
        ),
        role=FALLBACK,
        defaults={"phase": "none seen", "msg": "?"},
        examples=("sglang-kimi.service: start operation timed out. Terminating.",),
    ),
)
