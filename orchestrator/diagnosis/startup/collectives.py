"""Start-up rules, as data: NCCL and the other collective libraries (RCCL, HCCL, oneCCL, the
engines' own all-reduce) failing to set up or run a collective.

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

from orchestrator.diagnosis.model import (
    Family,
    Rule,
    pat,
)

__all__ = ["RULES"]


# an NCCL WARN that says NCCL went on another way (a topology search falling back to a simple
# order, an option ignored, a transport used instead): no failure
_NCCL_GOES_ON = r"(?![^\n]{0,400}?(?:\b[Ff]alling back\b|\bfall(?:s|ing)? back to\b|\b[Ii]gnoring\b|\binstead\b))"

# NCCL's result strings (ncclGetErrorString, nccl.h), as its callers quote them
_NCCL_RESULT = (
    r"(?:unhandled (?:cuda|CUDA|system) error|internal error|invalid (?:argument|usage)"
    r"|remote process exited|unknown result code|operation in progress)"
)

RULES: tuple[Rule, ...] = (
    Rule(
        id="nccl-error",
        families=(
            Family(("DistBackendError", "NcclError")),
            Family(
                ("RuntimeError",),
                words=(
                    "NCCL error",
                    "NCCL Error",
                    "ncclSystemError",
                    "ncclInternalError",
                    "ncclUnhandledCudaError",
                    "ncclRemoteError",
                ),
            ),
        ),
        title="NCCL / torch.distributed communication failed",
        summary="NCCL communication between the GPUs failed: {msg}",
        fix="check `nvidia-smi topo -m` and the fabric manager (HGX NVSwitch), that no other job uses the GPUs, shared memory (/dev/shm large enough; no PrivateTmp/ProtectSystem blocking it); rerun with Environment=NCCL_DEBUG=INFO for the detail; NCCL_P2P_DISABLE=1 / NCCL_IB_DISABLE=1 narrow it down",
        doc=(
            'NCCL (the GPU collective library) failed during init or a collective: "NCCL error '
            'in: …, unhandled system error", ncclInternalError/ncclSystemError, "NCCL WARN …", '
            'or torch\'s watchdog "caught collective operation timeout". When one rank dies '
            "first, the others print NCCL errors as consequences: the earlier cause wins."
        ),
        patterns=(
            pat(r"NCCL error in: (?P<where>\S+?),? (?P<msg>.*)"),
            pat(
                r"(?P<msg>.*(?:HCCL function error|RCCL error|ProcessGroupHCCL).*)",
            ),
            pat(r"NCCL error: (?P<msg>.*)"),
            # the engines' own all-reduce kernel for NVLink peers (vLLM's and SGLang's custom
            # all-reduce, which replaces NCCL for small tensors) failing a CUDA call
            # (a CUDA status that names its own cause, a kernel fault, an ECC error, the GPU's
            # memory, is that cause: the all-reduce only met it)
            pat(
                r"(?P<msg>.*?\bcustom_all_reduce\.cuh?:\d+ '(?!an illegal memory access|misaligned address|an illegal instruction|unspecified launch failure|uncorrectable ECC error|out of memory)[^'\n]{1,200}'.*)",
                summary="the custom all-reduce kernel (the engine's own, beside NCCL) failed: {msg}",
                fix="start without the custom all-reduce (--disable-custom-all-reduce; NCCL then does all reductions) and check peer access between the GPUs (`nvidia-smi topo -m`; in a container, --ipc=host)",
            ),
            # Intel's oneCCL (XPU's collective library, NCCL's role there) at its error level
            pat(
                r"(?P<msg>.*?\|CCL_ERROR\|.*)",
                summary="oneCCL communication between the accelerators failed: {msg}",
            ),
            # an engine's or a test's own NCCL check, which prints the call site and NCCL's
            # result string (ncclGetErrorString) in quotes: TensorRT-LLM's plugins and
            # TurboMind ("Failed, NCCL error …/allreducePlugin.cpp:183 'unknown result code'"),
            # nccl-tests ("NCCL failure all_reduce.cu:95 'unhandled cuda error'")
            pat(
                r"(?P<msg>.*?\bNCCL (?:[Ee]rror|[Ff]ailure)\b[^'\n]{0,300}?'"
                + _NCCL_RESULT
                + r"[^'\n]{0,200}'.*)",
            ),
            # an NCCL call that failed, with NCCL's result string, as a framework's op wraps it
            # (TensorFlow/Horovod's "ncclCommInitRank failed: unhandled system error", JAX/XLA,
            # MXNet): the call's name is NCCL's own (ncclCommInitRank, ncclAllReduce, ...)
            pat(
                r"(?P<msg>.*?\b(?P<fn>nccl[A-Z]\w{2,40})(?:\(\))? failed:? ?"
                + _NCCL_RESULT
                + r".*)",
            ),
            # NCCL's network transport reporting a failed work completion from a peer (NET/IB,
            # NET/IBext, a plugin's NET/<name>: "Got completion from peer <addr> with status=12"
            # or "with error 12"): the InfiniBand/RoCE link or a peer failed, with or without
            # the WARN level in front of it
            pat(
                r"(?P<msg>.*?\bNET/\w{1,20} ?: ?Got completion from peer\b[^\n]{0,200}?\bwith (?:status=|error )(?!0\b)\d.*)",
            ),
            # torch's older NCCL check ("NCCL Error <code>: <result string>", torch 0.4-1.4,
            # often only as the C++ terminate's `what():` line): the code and NCCL's own string
            pat(
                r"(?P<msg>.*?\bNCCL [Ee]rror \d{1,2}: " + _NCCL_RESULT + r".*)",
            ),
            # NCCL's own result strings (ncclGetErrorString, nccl.h), whatever wraps them: each
            # carries NCCL's advice or its name, so no other library prints them
            pat(
                r"(?P<msg>.*?(?:unhandled (?:cuda|CUDA|system) error \(run with NCCL_DEBUG=INFO for details\)|invalid (?:argument|usage) \(run with NCCL_DEBUG=WARN for details\)|remote process exited or there was a network error|internal error - please report this issue to the NCCL developers).*)",
            ),
            pat(
                r"Watchdog caught collective operation timeout: (?P<msg>.*)",
            ),
            # NCCL's NVLink SHARP set-up: the multicast memory could not be bound (NCCL says
            # it is "usually caused by a system or configuration error in the Fabric Manager or
            # NVSwitches")
            pat(
                r"(?P<msg>.*?\bFailed to bind NVLink SHARP \(NVLS\) Multicast memory\b.*)",
                fix="NCCL could not set up NVLink SHARP multicast: check the Fabric Manager service and the NVSwitches (`systemctl status nvidia-fabricmanager`, `nvidia-smi -q | grep -i fabric`), or set NCCL_NVLS_ENABLE=0 to run without NVLS",
            ),
            # NCCL's shared-memory call refused by permission, not by size (a /dev/shm not
            # writable by the service user, a sandbox, a segment left by another user): the
            # "Error while creating shared memory segment" that follows is its wrapper, no
            # sign of a full /dev/shm
            pat(
                r"NCCL WARN (?P<msg>Call to (?:shm_open|open|mmap|ftruncate|fallocate|posix_fallocate|shm_unlink)\w{0,8} failed ?: ?(?:Permission denied|Operation not permitted|EACCES|EPERM).*)",
                summary="NCCL may not use shared memory here (permission, not size): {msg}",
                fix="let the service user create segments in /dev/shm (mode 1777, no ProtectSystem=/PrivateDevices= hiding it, no stale nccl-* segments owned by another user: `ls -l /dev/shm`), or set NCCL_SHM_DISABLE=1 (slower)",
                explains=("host-memory-exhausted",),
            ),
            # (not a WARN that says NCCL went on another way: "Could not find a path for pattern
            # 4, falling back to simple order", "… ignoring", "using … instead")
            pat(r"NCCL WARN " + _NCCL_GOES_ON + r"(?P<msg>.*)"),
            # NCCL's own line shape (host:pid:tid [device] file:line) with the level alone, as
            # releases before 2.4 print it ("include/socket.h:360 WARN Call to connect failed")
            pat(
                r"^\S{1,200}:\d+:\d+ \[\d+\] [\w/.-]{1,120}\.(?:h|cc|cu|cpp):\d+ WARN "
                + _NCCL_GOES_ON
                + r"(?P<msg>.*)",
                keywords=(" WARN ",),
            ),
            # the same, where the reader took NCCL's host:pid:tid [device] off as the prefix
            pat(
                r"^[\w/.-]{1,120}\.(?:h|cc|cu|cpp):\d+ WARN " + _NCCL_GOES_ON + r"(?P<msg>.*)",
                keywords=(" WARN ",),
                origin=r"\S:\d+:\d+ \[\d+\]",
            ),
            # a native crash inside NCCL itself: a crash handler's symbolised frame in NCCL's
            # C++ sources ('File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()'), or
            # glibc's backtrace through libnccl ("libnccl.so.2(ncclCommInitRank+0x1f)"): no
            # Python frame is named like that, and only a crash prints them
            pat(
                r"(?P<msg>.*?(?:File \"[^\"\n]{0,300}?\.(?:cc|cpp|cu|cuh|h)\", line \d+, in (?P<fn>nccl\w+)|\blibnccl\.so[.\d]*\((?P<sym>nccl\w+)\+0x[0-9a-f]+\)).*)",
                summary="the process crashed inside NCCL ({fn}{sym}): {msg}",
            ),
            # Python's faulthandler dump of a process killed by a fatal signal or abort ("Fatal
            # Python error: Segmentation fault / Aborted", then 'File "…/pynccl_wrapper.py",
            # line 277 in ncclCommInitRank', its frames written without the traceback's comma):
            # a thread was inside an NCCL call when the process died
            pat(
                r"(?P<msg>^\s*File \"[^\"\n]{0,300}\", line \d+ in (?P<fn>nccl[A-Z]\w{0,60})\s*$)",
                summary="the process died inside NCCL ({fn}{sym}): {msg}",
            ),
            # the same in UCX's backtrace of a caught signal ("Caught signal 11 (Segmentation
            # fault …)" then "<n> 0x<addr> <function>()  <file>:<line>"): a frame in NCCL's own
            # sources (…/nccl/…/src/enqueue.cc) or an NCCL entry point
            pat(
                r"(?P<msg>^\s*\d{1,3} 0x[0-9a-f]{4,16} (?:(?P<fn>nccl\w{1,80})\(\)|(?P<sym>\w{1,80})\(\)\s{1,8}[^\s:]{0,300}/nccl/[^\s:]{0,200}\.(?:cc|cu|cpp|h):\d+).*)",
                keywords=(" 0x",),
                summary="the process crashed inside NCCL ({fn}{sym}): {msg}",
            ),
            pat(
                r"(?P<msg>.*\bnccl(?:InternalError|SystemError|UnhandledCudaError|RemoteError|InvalidUsage|InvalidArgument)\b.*)",
            ),
        ),
        defaults={"msg": "?", "fn": "", "sym": ""},
        examples=(
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
            "node-3:48213:48390 [3] NCCL WARN socketProgress: Connection closed by remote peer node-5<47642>",
            # not from the corpus: a segment refused by permission, and NCCL's wrapper after it
            "gpu-7:4242:4300 [1] include/shm.h:27 NCCL WARN Call to shm_open failed : Operation not permitted\ngpu-7:4242:4300 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-send-0a1b-0-1-0 (size 9637888)",
            "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5 ncclUnhandledCudaError: Call to CUDA function failed.",
            # not from the corpus: a native engine's NCCL check with NCCL's result string
            "[TensorRT-LLM][ERROR] Failed, NCCL error /app/cpp/tensorrt_llm/runtime/ncclCommunicator.cpp:61 'remote process exited or there was a network error'",
            # not from the corpus: oneCCL's error line on Intel XPUs
            "2024:10:01-10:00:00:(12345) |CCL_ERROR| atl_ofi.cpp:1234 open_providers: fi_getinfo error: ret -61, providers 0",
            # not from the corpus: JAX/XLA's wrapper of an NCCL call, and nccl-tests' words
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ncclAllReduce failed: internal error - please report this issue to the NCCL developers",
            "gpu-3: Test NCCL failure all_gather.cu:51 'unhandled CUDA error'",
            # not from the corpus: glibc's backtrace of a segfault in NCCL's init
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2(ncclCommInitRankConfig+0x2f4)[0x7f3a9c1e2f44]",
        ),
    ),
)
