"""Enrichers: each reads the lines around the cause and adds detail fields, so that a fix speaks
of the GPU, versions, host and port of the box that printed the log."""

from __future__ import annotations

import re

# Each reads the lines around the cause and adds detail fields, so that a fix speaks of the
# GPU, versions, host and port of the box that printed the log.

_SM_RX = re.compile(
    r"\bsm_?(?P<a>\d{2,3})a?\b|[Cc]ompute [Cc]apability(?: of)?:? (?P<b>\d{1,2})\.?(?P<c>\d)\b"
)
_TORCH_RX = re.compile(
    r"\btorch(?:==| |-|: |/)(?:version:? )?(?P<v>\d+\.\d+(?:\.\d+)?(?:[.+][\w.]+)?)"
)
_CU_TAG = re.compile(r"\+cu(?P<v>\d{3})\b")
# The CUDA version a GPU generation needs at least, by compute capability.
_CUDA_FOR_SM = {
    120: "CUDA 12.8",
    121: "CUDA 12.9",
    110: "CUDA 13.0",
    103: "CUDA 12.9",
    100: "CUDA 12.8",
    90: "CUDA 11.8",
    89: "CUDA 11.8",
    86: "CUDA 11.1",
    80: "CUDA 11.0",
    75: "CUDA 10.0",
    70: "CUDA 9.0",
}
# import name -> pip name, for the packages an SGLang install brings
_PIP_NAME = {
    "sgl_kernel": "sgl-kernel",
    "sglang": "sglang",
    "flashinfer": "flashinfer-python",
    "flash_attn": "flash-attn",
    "vllm": "vllm",
    "triton": "triton",
    "torch": "torch",
    "transformers": "transformers",
    "xgrammar": "xgrammar",
    "outlines": "outlines",
    "decord": "decord",
    "cv2": "opencv-python-headless",
}


def _sm_of(text: str) -> int | None:
    for m in _SM_RX.finditer(text):
        if m["a"]:
            return int(m["a"])
        if m["b"]:
            return int(m["b"]) * 10 + int(m["c"])
    return None


def _torch_of(text: str) -> str | None:
    m = _TORCH_RX.search(text)
    if m:
        return m["v"]
    m = _CU_TAG.search(text)
    return f"a +cu{m['v']} build" if m else None


def _capability(figure: str) -> str:
    """A compute capability as "8.9", from "8.9" or vLLM's "89"; "" when it is none."""
    if re.fullmatch(r"\d+\.\d", figure):
        return figure
    if re.fullmatch(r"\d\d\d?", figure):
        return f"{figure[:-1]}.{figure[-1]}"
    return ""


def _enrich_arch(detail: dict[str, str], text: str) -> None:
    floor = _capability(detail.get("need", ""))
    if floor:
        # a feature's capability floor ("needs 8.9 or higher", "Minimum capability: 89"): the
        # GPU is below it, so a rebuild for this GPU cannot help; the GPU's own figure, when
        # the line gives it
        figures = [
            _capability(m[1])
            for m in re.finditer(
                r"[Cc]apability(?: of| is|:)? ?(\d+(?:\.\d)?)\b(?! or )", detail.get("msg", "")
            )
        ]
        have = next((f for f in figures if f and f != floor), "")
        here = f" (this GPU is {have})" if have else ""
        detail["fixhint"] = (
            f"this kernel or data type needs a GPU of compute capability {floor} or newer{here}: "
            "choose a checkpoint, quantisation or attention backend this GPU supports (FP8 "
            "kernels need 8.9+, for one), or run on a newer GPU"
        )
        return
    sm = (
        int(detail["sm"].strip("sm_a"))
        if detail.get("sm", "?")[-1:].isdigit()
        else _sm_of(detail.get("msg", "") + "\n" + text)
    )
    if sm is None:
        detail["fixhint"] = (
            "find the GPU's compute capability (`nvidia-smi --query-gpu=name,compute_cap "
            "--format=csv`) and install torch, sgl-kernel and flashinfer builds that include it"
        )
        return
    need = _CUDA_FOR_SM.get(sm)
    detail["sm"] = f"sm_{sm}"
    detail["fixhint"] = (
        f"this GPU is sm_{sm}: install torch, sgl-kernel and flashinfer builds that include "
        f"sm_{sm}" + (f" (built with {need} or newer)" if need else "")
    )
    if sm < 80:
        detail["fixhint"] += (
            f"; sm_{sm} predates bfloat16 and FlashAttention-2 kernels: run with "
            'dtype = "float16" and a backend that supports it (triton), or use a newer GPU'
        )


def _enrich_ext(detail: dict[str, str], text: str) -> None:
    """kernel-package-mismatch: which compiled package, and what it was built against."""
    captured = detail.get("pkg", "")
    lib = detail.get("lib") or detail.get("pkg") or ""
    m = re.search(
        r"(sgl_kernel|sgl-kernel|flashinfer|flash_attn|vllm|deep_gemm|xformers|triton|torchvision|torchaudio|torchao)",
        lib + " " + detail.get("msg", ""),
    )
    if m is None:
        # the library does not say whose it is (common_ops.abi3.so): the lines around it do
        m = re.search(r"(sgl_kernel|flashinfer|flash_attn|vllm|deep_gemm|xformers)", text)
    if m is not None:
        pkg = m[1].replace("_", "-")
    else:
        # a package the list above does not know, named by the pattern itself (an operator
        # namespace: fbgemm, a vendor's kernels)
        pkg = (
            lib
            if lib and lib != "the compiled package" and "/" not in lib
            else "the compiled package"
        )
    if pkg == "sgl-kernel" or "sgl_kernel" in lib:
        pkg = "sgl-kernel"
    detail["pkg"] = pkg
    sym = detail.get("symbol", "")
    torch = _torch_of(text)
    if detail.get("have") and "NumPy" in detail.get("msg", ""):
        # a module built against NumPy 1.x under NumPy 2: the log names the module below
        around = re.search(r"site-packages/([\w-]+)/", text)
        who = around[1] if around else "a compiled module"
        detail["pkg"] = who
        detail["fixhint"] = (
            f"{who} was compiled against NumPy {detail['have']}.x and NumPy 2 is installed: "
            f"install 'numpy<2' into the unit's Python, or a {who} release built for NumPy 2"
        )
        return
    if detail.get("who"):
        # a library's own check that what it builds on is recent enough
        who = detail["who"]
        dep = captured
        dep = dep if dep and dep != "the compiled package" else who.split()[0]
        detail["pkg"] = dep
        detail["fixhint"] = (
            f"{who} needs {dep} {detail.get('version', '?')} or newer and "
            f"{detail.get('have', '?')} is installed: upgrade {dep} where the unit runs (its pip "
            "wheel, or the container image that ships it), or turn off the feature that needs it"
        )
        return
    if detail.get("other"):
        # two packages of one project at different releases (flashinfer and its cubins)
        mine, other = detail.get("mine", pkg), detail["other"]
        detail["pkg"] = mine
        detail["fixhint"] = (
            f"{mine} {detail.get('have', '?')} and {other} {detail.get('version', '?')} are "
            f"installed together and must be the same release: install the matching pair into "
            f"the unit's Python (`pip install '{mine}=={detail.get('version', '?')}'`, or pin "
            f"{other} to {detail.get('have', '?')}), at the version your SGLang release pins"
        )
        return
    if detail.get("version") and detail.get("version") != "?":
        detail["fixhint"] = (
            f"install {pkg} {detail['version']} or newer into the unit's Python "
            f"(`pip install '{pkg}>={detail['version']}'`), the version this SGLang requires"
        )
        return
    if sym and re.search(r"c10|at|torch|3jit", sym[:40]):
        built = "against another PyTorch (C++ ABI mismatch)"
        want = f"the installed torch {torch}" if torch else "the installed torch (`pip show torch`)"
    elif sym and sym.startswith("cu"):
        built = f"for a newer CUDA than this box's driver/runtime ({sym} is missing)"
        want = "this box's CUDA (`nvidia-smi` shows the driver's CUDA version)"
    else:
        built = "against other versions than the ones installed"
        want = f"the installed torch {torch}" if torch else "the installed torch (`pip show torch`)"
    detail["fixhint"] = (
        f"{pkg} was built {built}: install the {pkg} wheel built for {want}, as the SGLang "
        f"release you run pins it (`{detail.get('install', 'pip install sglang[all]==<version>')}` reinstalls the "
        "matching set), or pin torch back to the version the wheel was built for"
    )


def _cuda_library_missing(detail: dict[str, str], text: str) -> None:
    """A library of the CUDA runtime/toolkit of one major version is not on the loader's path:
    either its wheels are not installed (or not found), or what needs it was built for another
    CUDA than the box's torch. The fix names both."""
    major = detail["cuda_major"]
    lib = detail.get("lib") or "its CUDA library"
    who = re.search(r"(sgl_kernel|flashinfer|flash_attn|vllm|deep_gemm|xformers|llama_cpp)", text)
    pkg = who[1].replace("_", "-") if who else "the package that loads it"
    detail["module"] = pkg if who else (detail.get("module") or lib)
    torch = _torch_of(text)
    torch_cuda = f"torch {torch}" if torch else "torch"
    detail["fixhint"] = (
        f"the loader cannot find {lib} (CUDA {major}), which {pkg} needs: if {torch_cuda} uses "
        f"CUDA {major} (`python -c 'import torch; print(torch.version.cuda)'`), install the CUDA "
        f"{major} runtime wheels (nvidia-*-cu{major}) into the unit's Python or add the CUDA "
        f"{major} lib64 directory to LD_LIBRARY_PATH in the unit's environment; if torch uses "
        f"another CUDA, install the {pkg} build for that CUDA (or a torch for CUDA {major}), "
        "as the SGLang release you run pins them"
    )


def _enrich_import(detail: dict[str, str], text: str) -> None:
    module = detail.get("module", "").strip("'\"")
    top = module.split(".")[0] if module else ""
    if detail.get("critical"):
        detail["fixhint"] = (
            "sgl_kernel's compiled library did not load and the log does not say why: run "
            "`python -c 'import sgl_kernel'` as the service user, then `ldd` on the common_ops "
            "library it names for missing system libraries (e.g. libnuma), and check that "
            "sgl-kernel matches the installed torch"
        )
        return
    if detail.get("cuda_major"):
        _cuda_library_missing(detail, text)
        return
    if not top:
        # no module named: a package that failed at import time, or refused a config class
        # (the releases installed do not fit together), not a missing one
        pkgs = re.findall(r"\b(sglang|vllm|transformers|torch|flashinfer|sgl_kernel)\b", text)
        found = list(dict.fromkeys(pkgs))
        named = (
            " and ".join(found)
            if len(found) > 1
            else f"{found[0]} and what it imports"
            if found
            else "the packages in the traceback"
        )
        detail["fixhint"] = (
            f"the installed releases of {named} do not fit together: install the versions your "
            "SGLang release pins into the unit's venv (`<venv>/bin/pip install 'sglang==X'` "
            "brings its pins; `<venv>/bin/pip check` lists conflicts), then check "
            "`<venv>/bin/python -c 'import sglang.launch_server'` as the service user"
        )
        return
    if top == "transformers_modules":
        detail["fixhint"] = (
            "transformers_modules is transformers' cache of the checkpoint's own code "
            "(trust_remote_code): a worker process could not import it, so it did not run or "
            "see that code; give every worker the same HF_MODULES_CACHE (a path readable by the "
            "service user), or use an engine release that ships the code to its workers"
        )
        return
    pip = _PIP_NAME.get(top, top.replace("_", "-") or "the package")
    if detail.get("name"):
        # the module is there; the name is not: a release older or newer than its importer
        detail["fixhint"] = (
            f"the installed {pip} has no {detail['name']}: it is older or newer than the code "
            f"that imports it (SGLang, or the model's own code); install the {pip} release "
            f"that code needs into the unit's venv (`<venv>/bin/pip install '{pip}==<version>'`, "
            "`<venv>/bin/pip check` lists conflicts)"
        )
        return
    if top == "sglang":
        detail["fixhint"] = (
            "SGLang is not installed for the interpreter the unit runs (unit.python): install it "
            "there, or point unit.python at the venv that has it"
        )
        return
    pip = _PIP_NAME.get(top, top.replace("_", "-") or "the missing package")
    detail["fixhint"] = (
        f"install {pip} into the unit's Python environment (unit.python's venv: "
        f"`<venv>/bin/pip install {pip}`, at the version your SGLang release pins), then check "
        f"`<venv>/bin/python -c 'import {top or 'sglang'}'` as the service user"
    )


def _enrich_driver(detail: dict[str, str], text: str) -> None:
    found = detail.get("found", "")
    torch = _torch_of(text)
    if found.isdigit():
        n = int(found)
        detail["driver_cuda"] = f"CUDA {n // 1000}.{n % 1000 // 10}"
        have = f"the driver supports only {detail['driver_cuda']}"
    elif "804" in detail.get("msg", ""):
        have = (
            "the CUDA inside the image is newer than the host driver and CUDA forward "
            "compatibility works only on datacenter GPUs"
        )
    elif detail.get("need") and "container was built for" in detail.get("msg", ""):
        have = f"the image needs NVIDIA driver {detail['need']} or later and cannot use forward compatibility on this GPU"
    else:
        have = "the driver is older than the CUDA runtime torch was built with"
    insufficient = "is insufficient" in detail.get("msg", "")
    detail["fixhint"] = (
        f"{have}: upgrade the NVIDIA driver on the host to one that supports the CUDA of "
        + (
            f"torch {torch}"
            if torch
            else "the installed torch (`python -c 'import torch; print(torch.version.cuda)'`)"
        )
        + ", or install a torch/SGLang build for the driver's CUDA"
        + (
            # CUDA says the same in a container started without the GPU runtime (no driver)
            "; in a container, first check `nvidia-smi` works inside it (started with "
            "`--gpus all` / the NVIDIA runtime), since a container without the driver reports "
            "this too"
            if insufficient
            else ""
        )
    )


def _enrich_rendezvous(detail: dict[str, str], text: str) -> None:
    host = detail.get("host", "").strip("[]'\" ")
    port = detail.get("port", "?")
    if host.isdigit():
        n = int(host)
        ip = ".".join(str((n >> s) & 255) for s in (24, 16, 8, 0))
        detail["fixhint"] = (
            f"the rendezvous host '{host}' is all digits, so the resolver reads it as the IPv4 "
            f"address {ip}: give --dist-init-addr (or MASTER_ADDR) as an IP address or a host "
            "name with letters"
        )
        return
    where = f"{host}:{port}" if host else "the --dist-init-addr host and port"
    detail["fixhint"] = (
        f"the ranks could not reach each other at {where}: check that every node reaches it "
        "(firewall, the same --dist-init-addr, --nnodes and a distinct --node-rank on each "
        "node), and pin the network interface with GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME "
        "in [unit.environment]"
    )


def _enrich_hf_auth(detail: dict[str, str], text: str) -> None:
    repo = detail.get("repo") or ""
    if not repo:
        m = re.search(
            r"huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+)",
            detail.get("msg", "") + "\n" + text,
        )
        repo = m[1] if m else ""
    detail["repo"] = repo or "the model"
    detail["fixhint"] = (
        f"{detail['repo']} is gated or private: accept its licence on huggingface.co with an "
        "account that has access, put HF_TOKEN=<that account's token> in unit.environment_file "
        "(root-owned, mode 0600), or download it ahead and point model_path at the directory"
    )


def _enrich_warmup(detail: dict[str, str], text: str) -> None:
    status = detail.get("status", "?")
    how = f"with HTTP {status} " if status.isdigit() else ""
    detail["fixhint"] = (
        f"SGLang's warm-up request to its own port was answered {how}by something "
        "else: an HTTP proxy taken from http_proxy/HTTPS_PROXY in the environment. Set "
        'NO_PROXY = "127.0.0.1,localhost,::1" and no_proxy the same in [unit.environment] '
        "(or drop the proxy variables from the unit's environment)"
    )


def _enrich_backend(detail: dict[str, str], text: str) -> None:
    allowed = detail.get("allowed", "")
    names = re.findall(r"[\w-]+", allowed) if allowed else []
    sm = _sm_of(detail.get("msg", "") + "\n" + text)
    on = f" on this GPU (sm_{sm})" if sm else " on this GPU"
    if names:
        detail["fixhint"] = (
            f"set attention_backend to one of {', '.join(names)} (the backends SGLang accepts{on})"
        )
    else:
        detail["fixhint"] = (
            f"the attention backend is not available{on}: drop attention_backend to take "
            "SGLang's default for the GPU, or set one it supports (Blackwell: trtllm_mla/"
            "flashinfer/triton; Hopper: fa3/flashinfer/triton)"
        )


def _enrich_jit(detail: dict[str, str], text: str) -> None:
    if detail.get("tool") and detail.get("fixhint"):
        return  # the build tool itself is missing: the pattern's own hint says what to install
    m = re.search(r"/ld: cannot find -l([\w.+-]+)", detail.get("msg", "") + "\n" + text)
    lib = detail.get("lib") or (m[1] if m else "")
    if lib:
        detail["msg"] = f"the linker cannot find lib{lib}"
        detail["fixhint"] = (
            f"the JIT build links lib{lib}, which is not where the linker looks: install the CUDA "
            f"toolkit matching torch's CUDA (or its lib{lib} dev package) and make its lib64 "
            "visible (CUDA_HOME=/usr/local/cuda-X.Y and LIBRARY_PATH/LD_LIBRARY_PATH in "
            "[unit.environment]); a libcudart.so symlink next to libcudart.so.12 is what is missing "
            "when only the runtime is installed"
        )
    elif re.search(r"ptxas|PTXAS|PTX codegen", detail.get("msg", "") + "\n" + text):
        arch = re.search(r"Value '(sm_\w+)' is not defined", detail.get("msg", "") + "\n" + text)
        detail["fixhint"] = (
            "the PTX assembler (ptxas) that the JIT compiler (Triton, torch inductor) runs "
            + (f"does not know {arch[1]}, " if arch else "refused the kernel, most often ")
            + "a ptxas older than this GPU: upgrade Triton (it bundles its ptxas) or set "
            "TRITON_PTXAS_PATH in [unit.environment] to the ptxas of a CUDA toolkit that lists "
            "this GPU (`ptxas --list-gpu-arch`)"
        )
    else:
        detail["fixhint"] = (
            "install the CUDA toolkit matching torch's CUDA (nvcc) and set CUDA_HOME in "
            "[unit.environment] so JIT kernels can be built, or use wheels with the kernels prebuilt"
        )


# where one line names a port (an address, "port N"): any rule's detail may take it
_PORT_IN_LINE = re.compile(
    r"(?:\bport\b\D{0,3}|\]:|\b\d{1,3}(?:\.\d{1,3}){3}:|\blocalhost:)(\d{2,5})\b"
)


def note_port(detail: dict[str, str], line: str) -> None:
    """The port `line` names, where the rule's detail has none yet (before the rule's own
    enricher, which may look wider: `_enrich_port`)."""
    port = _PORT_IN_LINE.search(line)
    if port is not None and detail.get("port", "?") in ("?", ""):
        detail["port"] = port[1]


# where a log names the port a server was asked to bind (its command line, its own banner)
_PORT_IN_TEXT = re.compile(
    r"--port[= ](\d{2,5})\b|\bport=(\d{2,5})\b|Uvicorn running on https?://[^\s:]+:(\d{2,5})"
    r"|bind on address \([^,]{1,80}, (\d{2,5})\)"
)


def _enrich_disk(detail: dict[str, str], text: str) -> None:
    """disk-full: the file the failed write went to, when the line names it."""
    path = detail.get("path", "")
    if path and path != "?":
        detail["where"] = f" ({path})"


def _enrich_port(detail: dict[str, str], text: str) -> None:
    """port-in-use: the port, from the log's own words when the matched line lacks it."""
    port = detail.get("port", "?")
    if not port.isdigit():
        m = _PORT_IN_TEXT.search(text)
        port = next((g for g in m.groups() if g), "?") if m is not None else "?"
    if port.isdigit():
        detail["port"] = port
        look = f"`ss -ltnp 'sport = :{port}'`"
    else:
        detail["port"] = "(the log does not name it)"
        look = "`ss -ltnp` lists the listening ports and their processes"
    detail["fixhint"] = (
        f"stop what listens there ({look}) or give this deployment another --port; SGLang "
        "also needs --port+1.. and the NCCL / dist-init ports free"
    )
