"""Run-time causes: why a server that was serving stopped (or stopped answering).

The start-up rules in `orchestrator.diagnosis.startup` name why a start failed; these name what
kills (or wedges) SGLang after its ready line, read off the newest release's source (the one
`orchestrator.sglang.NEWEST` describes) and from field reports (tests/logs/real keeps such logs):

- a CUDA kernel faults while decoding, drafting or verifying (EAGLE tree decoding: sglang
  #24402, #6309, #9481, #8336): `torch.AcceleratorError: CUDA error: an illegal memory access
  was encountered` in the scheduler's traceback (managers/scheduler.py `run_scheduler_process`
  -> `event_loop_*` -> `run_batch` -> speculative/eagle_worker_v2.py), or a device-side
  assertion (`...IndexKernel.cu:92: ... Assertion ... failed.`);
- torch's NCCL watchdog aborts a rank whose collective timed out (`Watchdog caught collective
  operation timeout: WorkNCCL(...)`, `terminate called after throwing an instance of
  'c10::DistBackendError'`, SIGABRT); sglang #3783, #1693, #18421;
- SGLang's own scheduler watchdog (utils/watchdog.py, message `watchdog-timeout`), then
  SIGQUIT to the parent;
- the KV cache runs out of slots at run time (mem_cache/allocation.py, messages
  `kv-oom-decode`, `kv-oom-prefill`, `alloc-req-slots`);
- the tokenizer or detokenizer manager dies (`detokenizer-exception`, `tokenizer-exception`,
  utils/watchdog.py's SubprocessWatchdog: `subprocess-crashed`);
- any other exception in the scheduler loop while serving (the scheduler's exception wrapper
  around a traceback through `event_loop_normal` / `run_batch` / ...);
- a zombie: the HTTP server answers but the scheduler is gone or stuck (sglang #18421,
  #21486, #3099; entrypoints/http_server.py's failed health check, `health-check-failed`).

SGLang's words come from `orchestrator.sglang` (every known release's, and older wordings
field reports show), like the start-up rules'.

GPU hardware: the kernel's `NVRM: Xid` lines (see `orchestrator.diagnosis.xid_codes`). `orchestrator.diagnosis.xid`
adds the kernel lines of the failure's time window to the journal the classifier reads; a
hardware Xid `explains` the software errors it causes, so it outranks them whatever their
order. An application Xid (13, 31, 43) is the driver's view of a software fault: a hint only.

`RUNTIME_RULES` comes after the start-up rules in `catalog.RULES` (lowest priority on a same-second tie: a more
specific start-up rule such as cuda-oom wins the same line).
"""

from __future__ import annotations

import re

from orchestrator import sglang
from orchestrator.diagnosis import xid_codes
from orchestrator.diagnosis.model import (
    CAUSE,
    FALLBACK,
    HINT,
    Family,
    Pat,
    Rule,
    example,
    pat,
    said,
    under,
)
from orchestrator.sglang import code as sgl_code

__all__ = ["RUNTIME_RULES"]

_EXC = r"^\s*(?:[\w.]+\.)?"
# An exception line: "torch.AcceleratorError: ...", "RuntimeError: ...", "KeyError: 'x'".
_ANY_EXC = _EXC + r"(?P<exc>\w*(?:Error|Exception|Exit)): (?P<msg>.*)$"
# (a paste or a hard-wrapped line often stops after "an illegal memory access was": the
# words up to there are CUDA's cudaErrorIllegalAddress string alone)
_CUDA_FAULT = (
    r"an illegal memory access(?: was(?: encountered)?)?\b|misaligned address|"
    r"an illegal instruction was encountered|unspecified launch failure|"
    # cudaErrorContained (CUDA 12), cudaErrorHardwareStackError, cudaErrorInvalidPc: a kernel
    # that faulted, in the runtime's own strings
    r"Invalid access of peer GPU memory over nvlink or a hardware error|hardware stack error|"
    r"invalid program counter"
)
# SGLang's frames (orchestrator/sglang/code.py): the draft and verify steps, the serving loop
_DRAFT_STEP = sgl_code.DRAFT_STEP
_VERIFY_STEP = sgl_code.VERIFY_STEP
_SERVING_LOOP = sgl_code.SERVING_LOOP
# CUDA's and ROCm's HIP runtime print the same status strings ("HIP error: an illegal memory
# access was encountered"); their enum names too (cudaErrorIllegalAddress, hipErrorIllegalAddress)
# (older torch printed the same status as "THCudaCheck FAIL file=… line=N error=4 : <string>"
# and "cuda runtime error (4) : <string>"; NCCL's and nccl-tests' CUDACHECK say "Cuda failure
# '<string>'", "Test CUDA failure common.cu:334 '<string>'")
_CUDA_FAULT_LINE = (
    r"(?:(?P<exc>[\w.]*(?:Error|Exception)): )?(?:Failed: )?(?:(?:CUDA|HIP|Cuda|Hip|cuda)(?: driver| runtime)? (?:[Ee]rror|failure)\b[^'\n]*?'?|Triton Error \[(?:CUDA|HIP)\]: |THCudaCheck FAIL\b[^\n]{0,300}? error=\d{1,4} : )(?P<msg>"
    + _CUDA_FAULT
    + r"|(?:cuda|hip)Error(?:IllegalAddress|MisalignedAddress|IllegalInstruction|LaunchFailure|Contained|HardwareStackError|InvalidPc))"
)
# (a paste that elided the address, "PCI:...", keeps the code and the words)
_PCI = r"(?:(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?|\.\.\.|\u2026)"


# retractions in one log that make a storm (SGLang's docs: about one a minute is normal)
RETRACT_STORM = 5
_XID_SUMMARY = "the GPU at PCI {pci} reported Xid {code}, {xname}: {meaning}"


def _xid_patterns() -> tuple[Pat, ...]:
    """One pattern per known Xid code, carrying its meaning and action. A hardware code is a
    cause (and explains its software echoes); an application code (13, 31, 43) is a hint: the
    driver's view of a software fault, named only when the software error itself is not."""
    out = []
    for code in xid_codes.codes_of("gpu-xid"):
        x = xid_codes.XIDS[code]
        out.append(
            pat(
                rf"NVRM: Xid \(PCI:{_PCI}\): (?P<code>{code}),(?P<msg>.*)",
                role=CAUSE if x.kind == "hardware" else HINT,
                # a hint's summary would read "(inferred)": an Xid line is not inferred
                summary=None if x.kind == "hardware" else _XID_SUMMARY,
                xname=x.name,
                meaning=x.meaning,
                action=x.action,
            )
        )
    # The driver's cleanup of a process (Xid 45, an echo) names the Xid that caused it ("45, pid=…,
    # Ch 00000001 caused by previous Xid 149"): a hardware code there is the cause, even when
    # its own line is not in the paste
    hardware = [
        x
        for x in map(xid_codes.XIDS.__getitem__, xid_codes.codes_of("gpu-xid"))
        if x.kind == "hardware"
    ]
    for x in hardware:
        code = x.code
        out.append(
            pat(
                rf"NVRM: Xid \(PCI:{_PCI}\): 45,(?P<msg>.*?\bcaused by previous Xid (?P<code>{code})\b.*)",
                summary=None,
                xname=x.name,
                meaning=x.meaning,
                action=x.action,
            )
        )
    # A hardware code as other tools report it, without the kernel's NVRM line: GPU health
    # monitors and exporters (gpud's "XID 79(GPU has fallen off the bus) detected on PCI:…",
    # DCGM's and node-problem-detector's "Xid 48 occurred"): the token, then the code
    for x in hardware:
        code = x.code
        out.append(
            pat(
                rf"(?P<msg>.*?(?<![\w-])(?:XID|Xid|xid)[ _:=#-]{{0,3}}(?P<code>{code})(?![\w.]).*)",
                keywords=("XID", "Xid", "xid"),
                summary=None,
                xname=x.name,
                meaning=x.meaning,
                action=x.action,
                pci="?",
            )
        )
    # The driver's words for a hardware code's condition without the Xid token: newer drivers
    # report a GPU that fell off the bus over three lines ("NVRM: The NVIDIA GPU 0000:b3:00.0" /
    # "... installed in this system has" / this one); the GSP firmware's RPC timeout
    # (_kgspLogRpcTimeout) is logged with or before its Xid line
    for code, regex, what in (
        (
            79,
            r"NVRM: fallen off the bus and is not responding to commands",
            "a GPU fell off the bus",
        ),
        (
            119,
            r"NVRM: (?:GPU\d{1,3} )?_kgspLogRpcTimeout\b(?P<msg>.*)",
            "the GPU's GSP firmware stopped answering the driver",
        ),
        # the same condition in NVML's words, as nvidia-smi, DCGM or pynvml print them: its
        # NVML_ERROR_GPU_IS_LOST string ("GPU is lost"), nvidia-smi's device handle lost with
        # it or with NVML's "Unknown Error" (what a GPU off the bus answers), a monitor's "GPU
        # has fallen off the bus"
        (
            79,
            r"(?P<msg>.*?(?:\bGPU is lost\b|\bUnable to determine the device handle for (?:GPU )?[\w:.]{1,40}: Unknown Error\b|\bGPU has fallen off the bus\b).*)",
            "NVML lost the GPU: it fell off the bus or stopped answering",
        ),
    ):
        x = xid_codes.XIDS[code]
        out.append(
            pat(
                regex,
                summary=f"{what} (the condition Xid {code} reports): {{meaning}}",
                xname=x.name,
                meaning=x.meaning,
                action=x.action,
                code=str(code),
            )
        )
    return tuple(out)


_SOFTWARE_ECHOES = (
    "cuda-illegal-access",
    "cuda-device-assert",
    "gpu-ecc-uncorrectable",
    "nccl-error",
    "nccl-watchdog-timeout",
    "sglang-watchdog-timeout",
    "scheduler-exception",
    "scheduler-crashed",
    "scheduler-unresponsive",
)
_XID_DOC = (
    " The line is the kernel's (`journalctl -k`); deploy reads the kernel log of the failure's "
    "time window with the unit's journal. A hardware Xid outranks the software errors it causes "
    "(CUDA errors, NCCL timeouts on the other ranks); the GPU is named by its index where NVML "
    "(or /proc/driver/nvidia) maps the PCI bus id."
)
_XID_DEFAULTS = {"pci": "?", "code": "?", "xname": "a GPU fault", "meaning": "?", "action": "?"}


def _said_context(mid: str) -> str:
    """A context regex for an SGLang message's fixed words (its longest literal stretch)."""
    return "|".join(re.escape(m.keyword().strip()) for m in sglang.all_messages(mid))


def _make() -> tuple[Rule, ...]:
    rules: tuple[Rule, ...] = (
        Rule(
            id="gpu-xid",
            title="the GPU driver reported an Xid (a GPU fault)",
            summary=_XID_SUMMARY,
            fix="{action}",
            doc=(
                "The NVIDIA driver's `NVRM: Xid (PCI:…): <code>, …` kernel line. Hardware codes "
                "(79 fallen off the bus; 48, 63, 64, 94, 95 ECC; 119, 120 GSP firmware) are the "
                "cause: every process on that GPU fails (CUDA errors on its rank, NCCL timeouts on "
                "the others), and those software errors are its echo. Application codes (31 page "
                "fault, 13 SM exception, 43 stopped channel) are the driver's view of a software "
                "fault: they back up the CUDA error the process printed and are named only when "
                "it is not there. Newer drivers print a fallen-off GPU without the Xid token."
                + _XID_DOC
            ),
            patterns=_xid_patterns(),
            defaults=_XID_DEFAULTS,
            explains=_SOFTWARE_ECHOES,
            examples=(
                "NVRM: Xid (PCI:0000:3b:00): 79, pid=48305, name=sglang::schedul, GPU has fallen off the bus.",
                "NVRM: Xid (PCI:0000:9b:00): 94, pid=48307, name=sglang::schedul, Contained ECC error.",
                "NVRM: Xid (PCI:0000:bb:00): 119, pid=48309, name=sglang::schedul, Timeout after 6s of waiting for RPC response from GPU5 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).",
                # not from the corpus: the driver's cleanup naming an NVLink error as its cause
                "NVRM: Xid (PCI:0000:18:00): 45, pid=4242, name=sglang::schedul, Ch 00000008 caused by previous Xid 74",
            ),
        ),
        Rule(
            id="gpu-ecc-uncorrectable",
            title="CUDA reported an uncorrectable GPU memory (ECC) error",
            summary="CUDA reported an uncorrectable ECC error in GPU memory: the GPU's memory is failing (hardware, not the software)",
            fix=(
                "find the GPU in the kernel log (`journalctl -k | grep Xid`: 48, 63, 64, 94 or 95 "
                "name it) and in `nvidia-smi -q -d ECC,ROW_REMAPPER`; reset that GPU "
                "(`nvidia-smi -r -i <index>`) or reboot so the bad row is remapped; if it comes "
                "back, take the GPU out of service"
            ),
            doc=(
                "`CUDA error: uncorrectable ECC error encountered` (cudaErrorECCUncorrectable) in "
                "the process: the software's side of an ECC Xid, when the kernel log is not at hand. "
                "With the kernel's Xid line in the window, gpu-xid names the GPU instead."
            ),
            patterns=(
                pat(
                    r"CUDA error\b.*?(?P<msg>uncorrectable ECC error encountered)",
                ),
                # the same status in any framework's words or by its enum (TensorFlow's
                # "CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered", Paddle's
                # "Cuda Error: uncorrectable ECC error encountered", ROCm's
                # hipErrorECCNotCorrectable)
                pat(
                    r"(?P<msg>.*?(?:\buncorrectable ECC error encountered\b|\bCUDA_ERROR_ECC_UNCORRECTABLE\b|\bcudaErrorECCUncorrectable\b|\bhipErrorECCNotCorrectable\b).*)",
                ),
            ),
            examples=(
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                # not from the corpus: the driver API's enum, and HIP's
                "jax.errors.JaxRuntimeError: INTERNAL: cuModuleLoadData failed: CUDA_ERROR_ECC_UNCORRECTABLE",
                "RuntimeError: HIP error: hipErrorECCNotCorrectable",
            ),
        ),
        Rule(
            id="cuda-illegal-access",
            families=(
                Family(
                    ("AcceleratorError", "RuntimeError"),
                    words=(
                        "illegal memory access",
                        "misaligned address",
                        "illegal instruction",
                        "unspecified launch failure",
                    ),
                ),
            ),
            title="a CUDA kernel faulted while serving (illegal memory access)",
            summary="a CUDA kernel hit '{msg}' while {step}: the scheduler died and SGLang took the server down",
            fix=(
                "a kernel read or wrote out of bounds. With EAGLE-3 this is most often a speculative "
                "tree-decoding bug (sglang #24402, #6309, #9481): update SGLang, or shrink the tree "
                "(--speculative-eagle-topk 1, fewer --speculative-num-draft-tokens); to find the "
                "kernel, reproduce with Environment=CUDA_LAUNCH_BLOCKING=1. If the kernel log shows "
                "a hardware Xid on that GPU, deploy reports that instead"
            ),
            doc=(
                "`torch.AcceleratorError` (or `RuntimeError`): `CUDA error: an illegal memory access "
                "was encountered` (also misaligned address, illegal instruction, unspecified launch "
                "failure) in a scheduler's traceback while serving. CUDA reports kernel faults "
                "asynchronously, so the frame is where the error surfaced, often a later sync; the "
                "draft (`eagle_worker_v2.py draft_forward`) or verify (`run_eagle_verify`) frames "
                "say which speculative step was running. The driver logs Xid 31/13 for it."
            ),
            patterns=(
                pat(
                    _CUDA_FAULT_LINE,
                    context=_DRAFT_STEP,
                    step="drafting (EAGLE-3 draft model)",
                ),
                pat(
                    _CUDA_FAULT_LINE,
                    context=_VERIFY_STEP,
                    step="verifying draft tokens (EAGLE-3 target verify)",
                ),
                # NCCL's own CUDA check meeting the fault ("NCCL WARN Cuda failure 'an illegal
                # memory access was encountered'"): the rank's NCCL errors that follow, and its
                # peers' (a connection reset by the rank that died), are the fault's echoes
                pat(
                    r"NCCL WARN Cuda failure '(?P<msg>(?:" + _CUDA_FAULT + r"))'",
                    explains=("nccl-error",),
                ),
                pat(
                    _CUDA_FAULT_LINE,
                ),
                # the fault by its code name alone, runtime or driver API, CUDA or HIP (a
                # library's own check printing only the enum: "CUDA_ERROR_ILLEGAL_ADDRESS",
                # "hipErrorIllegalAddress")
                pat(
                    r"(?P<msg>\b(?:(?:cuda|hip)Error(?:IllegalAddress|MisalignedAddress|IllegalInstruction|LaunchFailure)|(?:CUDA|HIP)_ERROR_(?:ILLEGAL_ADDRESS|MISALIGNED_ADDRESS|ILLEGAL_INSTRUCTION|LAUNCH_FAILED))\b.*)",
                ),
                # ROCm's own report of a GPU page fault (the HIP runtime aborts the process)
                pat(
                    r"(?P<msg>Memory access fault by GPU node-\d+\b.*)",
                ),
                # the amdgpu kernel driver's report of the same fault (dmesg: "amdgpu: [gfxhub0]
                # retry page fault", "amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x…"), AMD's
                # counterpart of NVIDIA's Xid 31
                pat(
                    r"(?P<msg>.*?\bamdgpu: (?:\[gfxhub\d{0,2}\] (?:retry |no-retry )?page fault\b|VM_L2_PROTECTION_FAULT_STATUS\b).*)",
                ),
            ),
            defaults={"msg": "?", "exc": "RuntimeError", "step": "running a batch"},
            examples=(
                under(
                    f".../{sgl_code.EXAMPLE_FILES['eagle-worker-v2']}",
                    "draft_forward",
                    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                ),
                # not from the corpus: the same line, a paste cut before its last word
                f'  File ".../{sgl_code.EXAMPLE_FILES["scheduler"]}", line 1, in run_batch\n'
                "RuntimeError: CUDA error: an illegal memory access was",
                # not from the corpus: ROCm's page-fault report
                "Memory access fault by GPU node-2 (Agent handle: 0x55d1c0a3e2a0) on address 0x7f2a1c000000. Reason: Page not present or supervisor privilege.",
                # not from the corpus: the driver API's enum, and a kernel library's own check
                "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                "Failed: Cuda error /workspace/csrc/attention.cu:212 'an illegal memory access was encountered'",
                # not from the corpus: the same report hard-wrapped by a terminal, other reason
                "Memory access fault by GPU node-1 (Agent handle: 0x5601) on address",
            ),
        ),
        Rule(
            id="cuda-device-assert",
            # cudaErrorAssert's / hipErrorAssert's own text, never torch's trailer under every
            # CUDA or HIP error ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side
            # assertions."), which would make any CUDA error a device assertion
            families=(
                Family(
                    ("AcceleratorError", "RuntimeError"),
                    words=("device-side assert triggered", "cudaErrorAssert", "hipErrorAssert"),
                ),
            ),
            title="a device-side assertion failed in a CUDA kernel",
            summary="a device-side assertion failed in a CUDA kernel: {msg}",
            fix=(
                "an index (a token id, a KV slot, a tree position) was out of range inside a kernel: "
                "often a drafter whose vocabulary does not match the target, or a speculative "
                "decoding bug; check --speculative-draft-model-path (same tokenizer/vocabulary) and "
                "update SGLang; reproduce with Environment=CUDA_LAUNCH_BLOCKING=1 for the kernel"
            ),
            doc=(
                "A kernel assertion (`…/IndexKernel.cu:92: operator(): block: […], thread: […] "
                'Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
                "failed.`), then `CUDA error: device-side assert triggered` in the scheduler's "
                "traceback. The assertion line says what went out of range."
            ),
            patterns=(
                pat(
                    r"(?P<file>[\w/.\\-]+\.(?:cu|py)):(?P<line>\d+): [^\n]*?block: \[[\d,]+\], thread: \[[\d,]+\] Assertion `(?P<msg>.*)` failed",
                ),
                # ROCm's kernels say it their way ("…/native/hip/Indexing.hip:1294:
                # indexSelectLargeIndex: Device-side assertion `srcIndex < srcSelectDimSize'
                # failed.")
                pat(
                    r"(?P<file>[\w/.\\-]+\.hip):(?P<line>\d+): [^\n]{0,200}?Device-side assertion `(?P<msg>[^\n]{1,400}?)' failed",
                ),
                pat(
                    r"(?:(?P<exc>[\w.]*(?:Error|Exception)): )?(?:CUDA|HIP) error: (?P<msg>device-side assert triggered)",
                ),
                # older torch's THC check, the status by its number (cudaErrorAssert, 59): "cuda
                # runtime error (59) : device-side assert triggered at …/THCTensorCopy.cu:100"
                pat(
                    r"(?P<msg>.*?\b(?:cuda|CUDA) runtime error \(59\) ?: device-side assert triggered\b.*)",
                ),
                # torch's pointer to CUDA's status enum under a CUDA error (torch >= 2.6), where
                # the error line itself was cut: the enum names the assertion
                pat(r"(?P<msg>Search for `cudaErrorAssert' in https?://\S+)"),
            ),
            defaults={"msg": "?"},
            examples=(
                '/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [1305,0,0], thread: [82,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.',
                "torch.AcceleratorError: CUDA error: device-side assert triggered",
                # not from the corpus: ROCm's wording
                "RuntimeError: HIP error: device-side assert triggered",
            ),
        ),
        Rule(
            id="nccl-watchdog-timeout",
            title="an NCCL collective timed out (torch's NCCL watchdog)",
            summary=(
                "an NCCL {op} on rank {rank} waited {ran_ms} ms (timeout {timeout_ms} ms): one rank "
                "stopped taking part (stuck, dead, or its GPU or NVLink failed) and the others timed "
                "out waiting for it"
            ),
            fix=(
                "find the rank that stopped first: the earliest error of another rank, or a GPU Xid "
                "in `journalctl -k`; check NVLink and the fabric manager (`nvidia-smi nvlink -s`, "
                "`systemctl status nvidia-fabricmanager`); a rank stuck in a collective (sglang "
                "#3099) leaves the others waiting: restart the service; Environment=NCCL_DEBUG=INFO "
                "shows the collective"
            ),
            doc=(
                "torch's ProcessGroupNCCL watchdog: \"[Rank N] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=…, OpType=ALLREDUCE, …, Timeout(ms)=600000) ran for 600085 "
                'milliseconds before timing out.", then `terminate called after throwing an '
                "instance of 'c10::DistBackendError'` and SIGABRT (exit 134) of that scheduler. "
                f"SGLang {sglang.NEWEST.version}'s SubprocessWatchdog then takes the server down; older releases "
                "left a zombie (HTTP up, scheduler gone: sglang #18421, #21486). Outranks the "
                "generic nccl-error it also matches."
            ),
            patterns=(
                # every torch release's words: "[Rank N]", "[PG 0 Rank N]" or "[PG ID 2 PG GUID 3
                # Rank N]" before it; SeqNum (torch >= 1.13) and the Numel fields optional
                # the head alone says it: a line cut short (a paste, a log shipper's limit) or
                # a release's other tail still names the timed-out collective
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout"
                    r"(?:: Work(?:NCCL|HCCL|XCCL|Gloo|UCC)\((?:SeqNum=(?P<seq>\d+), )?(?:OpType=(?P<op>\w+))?"
                    r"(?:[^)\n]{0,200}?Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
                    r"(?: ran for (?P<ran_ms>\d+) milliseconds before timing out)?)?)?",
                ),
                # its head cut short within "operation timeout" (a paste's or a shipper's line
                # limit), at the line's end: torch's watchdog says nothing else in these words
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?Watchdog caught collective(?: op[a-z]{0,7})?\s*$",
                ),
                # torch's heartbeat monitor (ProcessGroupNCCL.cpp, torch >= 2.3): the watchdog
                # itself stuck behind a hung NCCL/CUDA call ("ProcessGroupNCCL's watchdog got
                # stuck for 600 seconds without making progress in monitoring enqueued
                # collectives"), after which it aborts the process
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?(?P<msg>ProcessGroupNCCL's watchdog got stuck for (?P<stuck_s>\d+) seconds\b.*)",
                    summary="torch's NCCL watchdog itself was stuck for {stuck_s} s behind a hung NCCL or CUDA call on rank {rank}, and torch aborted the process",
                ),
                # torch >= 2.4 splits it: "[PG ID 2 PG GUID 3 Rank 3] Timeout at NCCL work: 32,
                # last enqueued NCCL work: 32, last completed NCCL work: 31."
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?Timeout at NCCL work: (?P<seq>\d+), last enqueued NCCL work",
                    summary=(
                        "an NCCL collective (work {seq}) on rank {rank} timed out: one rank stopped "
                        "taking part (stuck, dead, or its GPU or NVLink failed) and the others "
                        "timed out waiting for it"
                    ),
                ),
                # torch >= 2.3's flight-recorder notice on the rank that timed out ("Received a
                # dump signal due to a collective timeout from this local rank"), and the C++
                # stack of its watchdog's own check (checkTimeout in ProcessGroupNCCL.cpp)
                pat(
                    r"(?:Rank (?P<rank>\d+)\] )?Received a dump signal due to a collective timeout from (?:this local rank|rank \d+)",
                ),
                pat(
                    r"Exception raised from checkTimeout at \S*ProcessGroupNCCL\.cpp:\d+",
                    summary=(
                        "torch's NCCL watchdog raised on a collective that timed out (its C++ stack "
                        "names checkTimeout): one rank stopped taking part and the others timed "
                        "out waiting for it"
                    ),
                ),
            ),
            explains=("nccl-error",),
            defaults={"rank": "?", "op": "collective", "ran_ms": "?", "timeout_ms": "?"},
            examples=(
                "[rank3]:[E1202 14:11:02.381928 48213 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=7340032, NumelOut=7340032, Timeout(ms)=600000) ran for 600085 milliseconds before timing out.",
                # not from the corpus: torch 1.x, before SeqNum was printed
                "[E ProcessGroupNCCL.cpp:587] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800742 milliseconds before timing out.",
                # not from the corpus: the line cut by a paste's limit
                "[rank1]:[E1203 10:02:11.000000 7 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective opera",
                # not from the corpus: torch >= 2.4's PG-tagged split form
                "[rank5]:[E1203 10:02:11.000000 7 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 5] Timeout at NCCL work: 118, last enqueued NCCL work: 118, last completed NCCL work: 117.",
                # not from the corpus: the terminate path's what() (torch >= 2.2), cut short
                "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=1",
            ),
        ),
        Rule(
            id="sglang-watchdog-timeout",
            title="SGLang's scheduler watchdog killed the server",
            summary=(
                "SGLang's scheduler watchdog fired: one forward batch ran longer than "
                "--watchdog-timeout ({timeout} s), so SGLang took the server down rather than hang"
            ),
            fix=(
                "a forward that never ends is usually a collective waiting on a stuck or dead rank "
                "or a GPU fault: read the lines before it and `journalctl -k` for an Xid; if batches "
                "are legitimately that slow (very long prefills), raise --watchdog-timeout"
            ),
            doc=(
                "utils/watchdog.py: when the scheduler's forward counter stops moving for "
                "--watchdog-timeout seconds (default 300) during a batch, SGLang logs that its "
                "watchdog timed out, dumps the schedulers with py-spy, and 5 s later sends "
                "SIGQUIT to its parent, which kills the process tree. The soft watchdog "
                "(soft=True) only dumps."
            ),
            patterns=(*said("watchdog-timeout", anywhere=True, fields={"soft": "False"}),),
            defaults={"timeout": "?", "who": "Scheduler"},
            examples=(example("watchdog-timeout", who="Scheduler", timeout=300, soft=False),),
        ),
        Rule(
            id="kv-cache-oom-runtime",
            title="the KV cache ran out of slots while serving",
            summary="the KV cache ran out of slots while serving: {msg}",
            fix=(
                "fewer tokens in flight: lower --max-running-requests and --chunked-prefill-size, or "
                "give the KV pool more room (a higher --mem-fraction-static, e.g. +0.02, if the GPUs "
                "have it); with EAGLE-3 every running request also holds "
                "--speculative-num-draft-tokens slots per step"
            ),
            doc=(
                "mem_cache/allocation.py: the scheduler admitted more tokens than the KV pool "
                "holds and the allocation failed (SGLang's decode or prefill allocation error, "
                "or its request-slot error asking for a smaller --max-running-requests, raised "
                "in the scheduler loop). GPU memory itself (torch's CUDA out of memory) is "
                "cuda-oom."
            ),
            patterns=(
                *said("kv-oom-decode", anywhere=True, stage="decode"),
                *said("kv-oom-prefill", anywhere=True, stage="prefill"),
                *said("alloc-req-slots", anywhere=True, stage="request slots"),
                *said("kv-retract-no-space", anywhere=True, stage="decode retraction"),
                # a retraction storm and no error: the pool is too small for the load
                *said(
                    "kv-retract",
                    anywhere=True,
                    role=HINT,
                    min_count=RETRACT_STORM,
                    stage="decode retraction",
                    summary="SGLang kept retracting requests because its KV cache pool was full ({msg}) and logged no error: the pool is too small for the load it admits (inferred from a retraction storm)",
                ),
            ),
            # vLLM V0's block allocator with no free KV block left for a running sequence
            # (vllm.core.block.interfaces.BlockAllocator.NoFreeBlocksError, any wrapper): the
            # same pool, another engine
            families=(
                Family(
                    ("NoFreeBlocksError",),
                    summary="the KV cache ran out of blocks while serving: {exc} {msg}",
                ),
            ),
            defaults={"msg": "?", "stage": "?"},
            examples=("RuntimeError: " + example("kv-oom-decode"),),
        ),
        Rule(
            id="tokenizer-manager-died",
            # the family: any exception raised in the detokenizer's own module (it runs as its
            # own process; an exception there ends it), whatever its type and wrapper
            families=(
                Family(
                    (),
                    frames=sgl_code.DETOKENIZER_MODULES,
                    summary="SGLang's detokenizer manager died ({exc}: {msg}): nothing turns tokens into text any more, so SGLang took the server down",
                ),
            ),
            title="SGLang's tokenizer or detokenizer manager died",
            summary="SGLang's {who} died ({exc}: {msg}): nothing turns tokens into text any more, so SGLang took the server down",
            fix=(
                "restart it (systemd does: Restart=on-failure); if it repeats, the traceback is an "
                "SGLang bug or a request it cannot handle: update SGLang or report it with the "
                "traceback; a {who} killed by a signal (exit code -9) points at the host's OOM killer "
                "(`journalctl -k | grep -i oom`)"
            ),
            doc=(
                "managers/detokenizer_manager.py and tokenizer_manager.py log that they hit an "
                "exception, with the traceback, then SIGQUIT the parent; or utils/watchdog.py's "
                "SubprocessWatchdog reports the detokenizer process crashed with an exit code. "
                "The cause is the exception at the end of the traceback."
            ),
            patterns=(
                pat(
                    _ANY_EXC,
                    ("Error", "Exception"),
                    context=_said_context("detokenizer-exception") + r"|MultiDetokenizerRouter hit",
                    who="detokenizer manager",
                ),
                pat(
                    _ANY_EXC,
                    ("Error", "Exception"),
                    context=r"(?<!De)"
                    + _said_context("tokenizer-exception")
                    + r"|MultiTokenizerRouter hit",
                    who="tokenizer manager",
                ),
                *said(
                    "subprocess-crashed",
                    anywhere=True,
                    fields={"name": r"detokenizer\w*"},
                    who="detokenizer",
                    summary="SGLang's detokenizer process died with exit code {code} (no Python traceback: killed or aborted): SGLang took the server down",
                ),
            ),
            defaults={"who": "tokenizer manager", "exc": "Exception", "msg": "?", "code": "?"},
            examples=(
                example("detokenizer-exception", traceback="Traceback (most recent call last):")
                + f'\n  File ".../{sgl_code.EXAMPLE_FILES["detokenizer"]}", line 1, in event_loop'
                + "\n    ...\nKeyError: 17",
                example("subprocess-crashed", name="detokenizer", pid=48290, code=-9),
            ),
        ),
        Rule(
            id="scheduler-exception",
            # the family: any exception raised under SGLang's serving loop (its functions or
            # its serving-only modules), whatever its type and words; tried only when no
            # pattern names a cause, and after every other rule's family (a CUDA fault, a
            # KV-cache or memory error in the same loop stays theirs)
            families=(
                Family((), frames=sgl_code.SERVING_MODULES, functions=sgl_code.SERVING_FUNCTIONS),
            ),
            title="an exception in SGLang's scheduler loop while serving",
            summary="an exception in SGLang's scheduler loop while serving: {exc}: {msg}",
            fix=(
                "this is an SGLang bug or a request it cannot handle: update SGLang, or report the "
                "traceback (`deploy logs --invocation ID`) with the request pattern that triggers it; "
                "systemd restarts the server meanwhile"
            ),
            doc=(
                "managers/scheduler.py `run_scheduler_process`: any exception out of the serving "
                "loop (`event_loop_normal`/`event_loop_overlap` -> `run_batch` / "
                "`process_batch_result`) is logged with its traceback under the scheduler's "
                "exception wrapper, and the scheduler SIGQUITs its parent, which kills the tree. Named only when no more "
                "specific rule (CUDA fault, KV cache, GPU memory) matches the same line."
            ),
            patterns=(
                # SGLang's own invariant check of its KV pools, raised in the scheduler loop; a
                # paste often holds this line alone, without the traceback or the wrapper
                *said(
                    "pool-leak",
                    anywhere=True,
                    summary="SGLang's scheduler found its KV pool accounting broken while serving: {msg}",
                ),
                pat(_ANY_EXC, ("Error", "Exception"), context=_SERVING_LOOP),
                # vLLM's engine loop, the same failure there: "[v1/engine/core.py:720] IndexError: ..."
                pat(
                    r"^\[v1/engine/core\.py:\d+\] (?P<exc>\w*(?:Error|Exception)): (?P<msg>.*)$",
                    summary="an exception in the engine loop while serving: {exc}: {msg}",
                ),
                # the same, where the reader took the logger's prefix off as the line's origin
                pat(
                    _ANY_EXC,
                    ("Error", "Exception"),
                    origin=r"\[v1/engine/core\.py:\d+\]",
                    summary="an exception in the engine loop while serving: {exc}: {msg}",
                ),
                # the scheduler's traceback through its serving loop with the exception line
                # cut off (a paste, a terminal, a log shipper's size limit): the loop's frame
                # says it died while serving; any line that names a cause wins over this
                pat(
                    r'^\s*File "[^"\n]{0,300}'
                    + re.escape(sgl_code.SCHEDULER_FILE)
                    + r'", line \d+, in (?P<fn>'
                    + "|".join(sgl_code.SERVING_FUNCTIONS)
                    + r")$",
                    role=FALLBACK,
                    summary="SGLang's scheduler died on an exception while serving (in {fn}); the log ends before the exception line",
                ),
            ),
            defaults={"exc": "Exception", "msg": "?"},
            examples=(
                under(
                    f".../{sgl_code.EXAMPLE_FILES['scheduler']}",
                    "process_batch_result",
                    "KeyError: 'rid-7f3a'",
                ),
                "ValueError: "
                + example(
                    "pool-leak",
                    pool="token_to_kv_pool_allocator",
                    detail="available_size=2048, protected_size=0, self.max_total_num_tokens=1024",
                ),
            ),
        ),
        Rule(
            id="scheduler-crashed",
            title="a scheduler process died without a traceback",
            summary="SGLang's {name} died with exit code {code} and printed no Python traceback (a C++ abort such as NCCL's watchdog, a CUDA error in an extension, or a kill)",
            fix=(
                "look at the lines just before it for the rank's last words (NCCL, CUDA, `terminate "
                "called`) and at `journalctl -k` (GPU Xid, OOM killer); exit code -6 is SIGABRT "
                "(an abort), -9 SIGKILL (often the OOM killer)"
            ),
            doc=(
                "utils/watchdog.py's SubprocessWatchdog (sglang #18421, #21486) reports a "
                "scheduler process that crashed with an exit code, when it died without running "
                "Python's exception handler. Counts only when no cause line is found."
            ),
            patterns=(
                *said("subprocess-crashed", anywhere=True, fields={"name": r"scheduler_\d+"}),
            ),
            role=FALLBACK,
            defaults={"name": "scheduler", "code": "?"},
            examples=(example("subprocess-crashed", name="scheduler_3", pid=48303, code=-6),),
        ),
        Rule(
            id="scheduler-unresponsive",
            title="the HTTP server answers but the scheduler does not (a zombie)",
            summary="/health's 1-token generation got no answer for {secs} s: the scheduler (or detokenizer) is dead or stuck while the HTTP server still runs",
            fix=(
                "restart the service (deploy's liveness watcher does); then find why it stopped: the "
                "first error before this line, a GPU Xid in `journalctl -k`, or a rank stuck in a "
                "collective (sglang #3099); SGLang's --watchdog-timeout bounds a stuck forward"
            ),
            doc=(
                "entrypoints/http_server.py `/health`: it submits a 1-token generation and waits "
                "SGLANG_HEALTH_CHECK_TIMEOUT (20 s) for any answer; without one it logs that no "
                "response came from the detokenizer and answers 503. systemd sees an active "
                "unit; only a liveness probe notices (sglang #18421, #21486)."
            ),
            patterns=(
                *said("health-check-failed", anywhere=True),
                # the same line cut after its seconds (a paste, a router quoting it)
                *(
                    pat(r"(?P<msg>" + re.escape(m.literals()[0]) + r"(?P<secs>\d+) seconds\..*)")
                    for m in sglang.all_messages("health-check-failed")
                ),
            ),
            role=FALLBACK,
            defaults={"secs": "?"},
            examples=(example("health-check-failed", secs=20, tic="14:02:11", last="14:01:47"),),
        ),
    )

    assert all(r.role in (CAUSE, FALLBACK, HINT) for r in rules)
    return rules


RUNTIME_RULES: tuple[Rule, ...] = _make()
