"""Start-up rules, as data: compiled kernels and their builds: a kernel package of another release than its caller, torch or CUDA, and a kernel compiled on the box (JIT, or from source by pip) that failed to build.

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

from orchestrator.diagnosis.enrich import (
    _enrich_ext,
    _enrich_jit,
)
from orchestrator.diagnosis.model import (
    _EXC,
    FALLBACK,
    Rule,
    Signal,
    example,
    pat,
    said,
    under,
)
from orchestrator.diagnosis.startup import patterns as P
from orchestrator.diagnosis.startup.patterns import (
    _BUILD_TOOLS,
    _NOT_BENIGN,
)

__all__ = ["RULES"]

# kernel packages pip or uv build from source when no wheel fits (their names as the installer
# prints them, - or _)
_SOURCE_BUILT = (
    r"flash[-_]attn|flashinfer[\w-]{0,20}|sgl[-_]kernel|vllm|xformers|deep[-_]gemm|deep[-_]ep|apex"
    r"|causal[-_]conv1d|mamba[-_]ssm|auto[-_]gptq|autoawq|exllamav2|flash[-_]mla"
)

RULES: tuple[Rule, ...] = (
    Rule(
        id="kernel-package-mismatch",
        families=P._KERNEL_PACKAGE_FAMILIES,
        title="a compiled package (sgl-kernel, flashinfer, ...) does not match torch, CUDA or SGLang",
        summary="{pkg} cannot be used as installed: {msg}",
        fix="{fixhint}",
        doc=(
            "A compiled extension was built against another PyTorch (C++ ABI: an undefined "
            "`c10::`/`at::`/`torch::` symbol), a newer CUDA than the box has (an undefined `cu*` "
            "driver symbol), or is older than the SGLang release requires (its start-up version "
            "check, or a kernel op missing at run time). sgl-kernel hides the first two behind "
            '"Could not load any common_ops library", with the real error listed under it.'
        ),
        patterns=(
            pat(
                _EXC
                + r"(?P<exc>ImportError|OSError): (?P<msg>(?P<lib>\S+?\.so[\w.]*): undefined symbol: (?P<symbol>\S+))",
            ),
            pat(
                r"^-\s*(?P<exc>ImportError): (?P<msg>(?P<lib>\S+?\.so[\w.]*): undefined symbol: (?P<symbol>\S+))",
            ),
            # xFormers' reason under "No operator found": its installed build has no CUDA
            # kernels (a CPU wheel, or one built for another torch), not the GPU's or model's
            pat(
                r"(?P<msg>.*?\bxFormers wasn't build with CUDA support\b.*)",
                pkg="xformers",
                explains=("attention-backend-unsupported",),
                fixhint="the installed xformers has no CUDA kernels (a CPU build, or one built for another torch): install the xformers wheel built for this torch and CUDA (`pip install xformers --index-url https://download.pytorch.org/whl/cu<NNN>`)",
            ),
            # a name the caller imports that the installed kernel package lacks: the package is
            # another release than the caller (SGLang, vLLM) was written for (Python names the
            # package's file; "(unknown location)" is a directory that is no installed package,
            # python-import-error's)
            pat(
                _EXC
                + r"(?P<exc>ImportError): (?P<msg>cannot import name '(?P<symbol>\w{1,120})' from '(?P<pkg>"
                + "|".join(P._KERNEL_PACKAGES)
                + r")(?:\.[\w.]{1,120})?' \((?!unknown location\)).*)",
            ),
            # an executable (not a library) the loader cannot link: its own shared libraries are
            # another build than it ("error:<path>/ollama_llama_server: undefined symbol: X")
            pat(
                r"(?P<msg>.*?(?:error: ?|: )(?P<lib>/(?:[\w.+-]{1,100}/){1,30}[\w+-]{1,100}): undefined symbol: (?P<symbol>[\w.$@]{1,200}).*)",
            ),
            # a compiled library and "undefined symbol" in any other arrangement (a loader's
            # list of attempts, a dlopen error quoted by a wrapper, a summary in a user's words)
            pat(
                _NOT_BENIGN
                + r"(?P<msg>.*?(?<![^\s/('\"])(?P<lib>[\w/.+-]{1,300}?\.so(?:\.[\w.]+)?)['\"]?[\s:,()\u2014\u2013-]{1,6}(?:\(?[\w\s]{0,40}\)?[\s:,()\u2014\u2013-]{1,6})?undefined symbol\b(?::? (?P<symbol>[\w.$@]+))?.*)",
            ),
            # a mangled C++ symbol of torch's own namespaces (at::, c10::, torch::) undefined,
            # with no library named (a paste of the loader's last words): the extension was
            # built against another PyTorch
            pat(
                _NOT_BENIGN
                + r"(?P<msg>.*?\bundefined symbol: (?P<symbol>_ZN(?:K|[rVK]{0,3})(?:2at|3c10|5torch|6caffe2)\w{0,400}).*)",
                fixhint="a compiled extension was built against another PyTorch release (torch's C++ symbol {symbol} is not in the installed torch): reinstall the extension built for the installed torch and CUDA, or install the torch release it was built for",
            ),
            # torch's own checks on its companion packages (torchvision, torchaudio): built for
            # another CUDA major, or for another torch (their operators are not registered)
            pat(
                r"(?P<msg>Detected that PyTorch and (?P<pkg>\w+) were compiled with different CUDA (?:major )?versions.*)",
            ),
            pat(
                r"(?P<msg>operator (?P<pkg>torchvision|torchaudio|torchao|xformers|flash_attn|sgl_kernel|vllm|flashinfer)::\w+ does not exist.*)",
            ),
            # a package's start-up check that its compiled companion is the same release
            # (flashinfer and flashinfer-cubin / flashinfer-jit-cache, a kernel wheel and its
            # Python side): two versions named, and "does not match"
            pat(
                r"(?<![\w-])(?P<msg>(?P<mine>[\w-]{2,60}) version \(?v?(?P<have>\d{1,6}(?:\.[\w+-]{1,20}){0,6})\)? does not match (?P<other>[\w-]{2,60}) version \(?v?(?P<version>\d{1,6}(?:\.[\w+-]{1,20}){0,6})\)?(?:[.,;:\s].*)?)$",
            ),
            # a library's start-up check that what it needs is recent enough, in the usual words
            # ("cuDNN FP4 requires backend version >= 91002, found 90701", "requires triton>=3.2,
            # but found 3.1"): an installed release too old for this path
            pat(
                r"\A(?P<msg>.{0,200}?(?<![\w.-])(?P<who>[\w.-]{2,40}(?: [\w.-]{1,20})?) requires (?:(?P<pkg>(?!backend\b|version\b)[\w.-]{1,40}?) ?)?(?:backend )?(?:version )?>= ?v?(?P<version>\d{1,6}(?:\.[\w+-]{1,20}){0,6}),? (?:but )?(?:found|got|have|is) (?:version )?v?(?P<have>\d{1,6}(?:\.[\w+-]{1,20}){0,6}).*)",
            ),
            # a compiled module built against NumPy 1.x imported under NumPy 2 (NumPy's words)
            pat(
                r"(?P<msg>A module that was compiled using NumPy (?P<have>\d)\.x cannot be run in.*)",
                pkg="a compiled module",
            ),
            *said("pkg-not-installed", anywhere=True),
            *said("pkg-too-old", anywhere=True),
            pat(
                _EXC
                + r"(?P<exc>AttributeError|NameError|RuntimeError): (?P<msg>.*(?:'_OpNamespace' '(?P<pkg>sgl_kernel|sgl-kernel)' object has no attribute|No such operator (?P<lib>sgl_kernel)::|name '\w+' is not defined).*)",
                context=r"sgl_kernel|flashinfer|/speculative/|eagle",
            ),
            # torch's operator registry lacks an operator a compiled package should have
            # registered (any package: fbgemm, torchvision, a vendor's kernels): its library
            # did not load, or it is another release than its Python side expects
            pat(
                r"(?P<msg>.*?(?:'_OpNamespace' '(?P<pkg>\w{2,60})' object has no attribute '(?P<symbol>\w{1,120})'|\bNo such operator (?P<lib>\w{2,60})::\w{1,120}).*)",
            ),
            # a package's own check that its compiled extensions were built for another torch /
            # CUDA / Python (xFormers' "can't load C++/CUDA extensions. xFormers was built for:
            # PyTorch 2.3.0+cu121 … (you have 2.1.0+cu121)")
            pat(
                r"(?P<msg>.*?\b(?P<pkg>[\w-]{2,40}) (?:can't|cannot|could not|failed to) load (?:its |the )?C\+\+/CUDA extensions?\b.*)",
            ),
            pat(
                r"^\s*(?P<msg>PyTorch (?P<built>\d[\w.+-]{0,40}) with CUDA (?:\d{2,6}|None) \(you have (?P<torch_have>\d[\w.+-]{0,40})\).*)",
            ),
        ),
        defaults={
            "msg": "?",
            "pkg": "the compiled package",
            "symbol": "",
            "lib": "",
            "version": "?",
        },
        enrich=_enrich_ext,
        explains=("python-import-error",),
        examples=(
            "ImportError: /opt/sglang/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
            example("pkg-too-old", pkg="sgl-kernel", have="0.0.9.post2", version="0.1.1"),
            # dlopen's error quoted by a loader, not as an exception line (not from the corpus)
            "RuntimeError: Could not load /opt/venv/lib/python3.12/site-packages/flashinfer/data/libflashinfer.so (undefined symbol: _ZN3c1017RegisterOperatorsD1Ev)",
            # torch's companions built for another torch or CUDA (not from the corpus)
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch has CUDA Version=12.8 and torchvision has CUDA Version=12.4. Please reinstall the torchvision that matches your PyTorch install.",
            "RuntimeError: operator torchvision::nms does not exist",
            # not from the corpus: operators not registered, xFormers' check in other words
            "AttributeError: '_OpNamespace' 'torchvision' object has no attribute 'roi_align'",
            "RuntimeError: No such operator fbgemm::asynchronous_complete_cumsum",
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.5.1+cu124 with CUDA 1204 (you have 2.6.0+cu126)",
            "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.2.6 as it may crash.",
            # not from the corpus: libraries' own checks of what they build on (flashinfer's JIT cache)
            "RuntimeError: fused_moe requires triton>=3.2.0, but found 3.1.0",
            "RuntimeError: flashinfer-jit-cache version (0.6.1) does not match flashinfer version (0.6.2). Please install the same version of both packages.",
            *P._KERNEL_PACKAGE_EXAMPLES,
        ),
    ),
    Rule(
        id="jit-build-failed",
        families=P._JIT_FAMILIES,
        # a C/C++/CUDA compiler's own error line (a missing Python.h, a header, a syntax error)
        signals=(
            Signal(("compiler",), words=("error",)),
            # only the compiler's notes survived the paste, one saying what failed
            Signal(("compiler",), words=("failed",), role=FALLBACK),
            # a build step's compiler command logged at error level (a JIT builder's ninja
            # output re-raised line by line: "ERROR … [1/11] /usr/local/cuda/bin/nvcc …"): the
            # build failed even when the log was cut before the compiler's own error
            Signal(("error-level",), words=("bin/nvcc ", "bin/hipcc "), and_words=("] ",)),
        ),
        title="a kernel compiled at start-up (JIT) failed to build",
        summary="a kernel SGLang compiles at start-up failed to build: {msg}",
        fix="{fixhint}",
        doc=(
            "Some kernels are compiled on the box when first needed (sgl-kernel's JIT, "
            "DeepGEMM, flashinfer, triton). The build needs the CUDA toolkit (nvcc, the CUDA "
            'libraries) that matches torch; without it ninja, nvcc or the linker fail ("ninja '
            'exited with status 1", "/usr/bin/ld: cannot find -lcudart"), often inside SGLang\'s '
            "wrapper for a failed CUDA-graph capture, whose memory advice does not apply."
        ),
        patterns=(
            # the build tool itself missing (flashinfer/torch's JIT running ninja, a triton
            # build running gcc): Python's FileNotFoundError names the program, bare or by
            # its path (/usr/local/cuda/bin/nvcc: a CUDA toolkit that is not there)
            pat(
                _EXC
                + r"(?P<exc>FileNotFoundError): (?P<msg>\[Errno 2\] No such file or directory: '(?:[^'\n]{0,300}/)?(?P<tool>"
                + _BUILD_TOOLS
                + r")'.*)",
                summary="a kernel build at start-up could not run {tool}: it is not installed in the unit's environment or not on its PATH",
                fixhint="install {tool} where the unit runs (`<venv>/bin/pip install ninja` for ninja; the CUDA toolkit's nvcc, or gcc/g++, from the OS packages) and make sure the unit's PATH reaches it (Environment=PATH=<venv>/bin:/usr/local/cuda/bin:/usr/bin)",
            ),
            # the same in a JIT's own words: Triton's "Cannot find ptxas" (its CUDA toolkit
            # binaries), a builder's "Could not find nvcc"
            pat(
                r"(?P<msg>.*?\b(?:[Cc]annot|[Cc]ould not|[Uu]nable to|[Ff]ailed to) (?:find|locate) (?:the )?`?(?P<tool>"
                + _BUILD_TOOLS
                + r")(?:\.exe)?\b(?![\w.-]).*)",
                summary="a kernel build at start-up could not find {tool}: it is not installed in the unit's environment or not on its PATH",
                fixhint="install {tool} where the unit runs (the CUDA toolkit's ptxas/nvcc, or `pip install ninja`), or point the JIT at it (TRITON_PTXAS_PATH, CUDA_HOME), and make sure the unit's PATH reaches it",
            ),
            # a C++ JIT's own check that its compiler run succeeded (DeepGEMM's host assertion
            # in its jit/ runtime: "Assertion error (…/jit/kernel_runtime.hpp:45): exit_code ==
            # 0"): the kernel it compiles at start-up did not build
            pat(
                r"(?P<msg>.*?\bAssertion error \([^()\n]{0,300}?/jit/[^()\n]{0,120}\): [^\n]{0,40}?\b(?:exit_code|return_code|retcode|ret_code|status)\b.*)",
                summary="a kernel compiled at start-up (a C++ JIT such as DeepGEMM's) failed to build: {msg}",
                fixhint="the JIT's compiler run failed: check the CUDA toolkit it uses (nvcc/NVRTC of a version the package supports, CUDA_HOME), that its cache directory is writable by the service user, and rerun with the JIT's debug output (DeepGEMM: DG_JIT_DEBUG=1) to see the compiler's error",
            ),
            # a JIT's own floor on its compiler's release (DeepGEMM: "NVCC version should be >=
            # 12.3", under its jit/compiler.hpp assertion): the toolkit it finds is too old
            pat(
                r"(?P<msg>.*?\b(?:NVCC|nvcc|CUDA toolkit|CUDA Toolkit) version (?:should|must) be >= ?(?P<need>\d{1,2}\.\d{1,2})\b.*)",
                summary="a kernel compiled at start-up needs a newer CUDA compiler: {msg}",
                fixhint="the JIT needs nvcc {need} or newer and found an older one: install that CUDA toolkit release (or newer) where the unit runs and point CUDA_HOME (and PATH) at it",
            ),
            pat(r"(?P<msg>.*/ld: cannot find -l(?P<lib>[\w.+-]+).*)"),
            # a build tool that the host's C/C++ runtime is too old to run (Triton's bundled
            # LLVM: "…/.triton/llvm/…/bin/mlir-tblgen: /lib64/libstdc++.so.6: version
            # `GLIBCXX_3.4.26' not found (required by …/mlir-tblgen)"): the build stops there
            pat(
                r"(?P<msg>.*?\bversion [`'](?P<sym>GLIBC(?:XX)?_[\d.]{1,12})' not found \(required by (?P<tool>[^()\n]{0,300}?(?:/\.triton/llvm/[^()\n]{0,200}|/bin/(?:mlir-tblgen|llvm-tblgen|clang(?:\+\+)?|ptxas|nvcc|cicc|cc1plus|ld(?:\.\w{1,8})?|ninja|cmake)))\).*)",
                summary="a build tool cannot run on this host's C/C++ runtime ({sym} is missing): {msg}",
                fixhint="the build tool ({tool}) was built for a newer glibc/libstdc++ than this host has: build on a newer OS (or in its container image), install a newer libstdc++ (a newer GCC's, on LD_LIBRARY_PATH), or use a prebuilt wheel instead of building from source",
            ),
            # torch's C++ extension builder (cpp_extension._run_ninja_build: JIT kernels of
            # flashinfer, DeepGEMM, a package's first use) and inductor's C++ codegen failing
            # to compile: the frame or the exception says the build failed
            pat(
                r'^\s*File "[^"\n]{0,300}torch/utils/cpp_extension\.py", line \d+, in (?P<fn>_run_ninja_build|_write_ninja_file_and_build_library|_jit_compile)$',
                role=FALLBACK,
                summary="a kernel compiled at start-up by torch's extension builder failed to build (the log ends before the compiler's error)",
            ),
            pat(
                _EXC
                + r"(?P<exc>(?:torch\._inductor\.exc\.)?CppCompileError|InductorError): (?P<msg>(?:CppCompileError: )?C\+\+ compile error.*)",
                summary="torch.compile's C++ code did not compile (inductor's CPU codegen): {msg}",
                fixhint="inductor generated C++ that the host compiler refused: install a C++ compiler that torch supports (g++ >= 9, with the Python headers), or run without torch.compile for this path (the engine's flag that disables it, e.g. --disable-cuda-graph / enforce-eager), and report the generated code to PyTorch",
            ),
            # gcc's last words after a fatal error (a missing header, an unknown option): the
            # build stopped; the error line above it, when the paste kept it, says why
            pat(r"(?<![\w-])(?P<msg>compilation terminated\.)\s*$", role=FALLBACK),
            # LLVM's backend refusing a kernel whose stack does not fit the GPU's limit (Triton on
            # AMD: "error: triton_flash_attention.py:211:0: stack frame size (556488) exceeds
            # limit (262112) in function 'attn_fwd…'"): the JIT could not compile it for this GPU
            pat(
                r"(?P<msg>.*?\bstack frame size \(\d+\) exceeds limit \(\d+\) in function\b.*)",
                fixhint="the kernel compiler could not fit a kernel's stack on this GPU ({msg}): use another attention or kernel backend for it (vLLM on ROCm: VLLM_USE_TRITON_FLASH_ATTN=0), a smaller block configuration, or a GPU the kernel was tuned for",
            ),
            # ninja's own line for a build step that failed ("FAILED: cuda_0.o", ninja 1.12+:
            # "FAILED: [code=139] cuda_0.o"): an object file the JIT could not build, whatever
            # the compiler printed (or, killed by a signal, did not print) above it
            pat(
                r"(?<![\w/-])(?P<msg>FAILED: (?:\[code=\d{1,3}\] )?\S{0,300}?\.(?:o|obj|so)\b.*)",
                role=FALLBACK,
            ),
            pat(
                r"(?P<msg>.*(?:ninja exited with status \d+|ninja: build stopped: subcommand failed).*)",
            ),
            pat(
                r"(?P<msg>.*(?:nvcc fatal|nvcc: not found|hipcc: not found|error: command '\S*(?:nvcc|hipcc)' failed|No CUDA toolkit found|CUDA_HOME environment variable is not set|ROCM_HOME environment variable is not set|collect2: error: ld returned \d+ exit status|Failed to find C compiler|No working C\+\+ compiler found|[Nn]inja build failed|nvrtc: error|NVRTC compilation failed|NVRTC_ERROR_\w+).*)",
            ),
            # a compiler's (or ninja's) exit status in subprocess' words, whoever quotes it:
            # Triton building its launcher (cuda_utils.c / hip_utils.c) with gcc, a JIT's nvcc or
            # ninja, even inside SGLang's notice that it ignored a model module's import error,
            # where the failed build hides the model's module (the first quoted command only)
            pat(
                r"\A(?P<msg>(?>.*?\bCommand '\[?')(?P<compiler>(?:[^'\n]{0,260}[/\\])?"
                + P._COMPILERS
                + r"(?:-\d+)?(?:\.exe|\.EXE)?)'[^\]]*\]?'? returned non-zero exit status \d+.*)",
            ),
            # the same raised as CalledProcessError, its line cut before the exit status (a
            # long compiler command: Windows' MinGW gcc.EXE, a JIT's nvcc with every -I flag)
            pat(
                r"\A(?P<msg>(?>.*?\bCalledProcessError: Command '\[?')(?P<compiler>(?:[^'\n]{0,260}[/\\])?"
                + P._COMPILERS
                + r"(?:-\d+)?(?:\.exe|\.EXE)?)'.*)",
            ),
            # AWS Neuron's compiler (neuronx-cc, torch-neuronx / optimum-neuron compiling the
            # model's graphs at start-up) failed, whatever made it fail (a library it needs
            # missing from the image, an unsupported operator): the compile is the step that broke
            pat(
                r"(?P<msg>.*?\bFailed compilation with \[?'(?P<compiler>(?:[^'\n]{0,260}/)?neuronx?-cc)'.*)",
                summary="the Neuron compiler ({compiler}) failed to compile the model's graph at start-up: {msg}",
            ),
            # a kernel package built from source by pip or uv (no wheel for this torch/CUDA/OS):
            # its setup.py finding no nvcc, torch's cpp_extension refusing a CUDA other than
            # torch's, the installer's verdict on the wheel
            pat(
                r"(?P<msg>.*?(?:\bwas requested, but nvcc was not found\b|\bThe detected CUDA version \((?P<have>[\d.]{1,12})\) mismatches the version that was used to compile PyTorch\b|\bFailed to build `?(?P<pkg>"
                + _SOURCE_BUILT
                + r"|bitsandbytes)\b|\bFailed building wheel for (?P<pkg2>"
                + _SOURCE_BUILT
                + r")\b).*)",
                summary="a kernel package could not be built from source: {msg}",
                fixhint="install a prebuilt wheel that matches this torch, CUDA and Python (the package's release page lists them) instead of building it; to build, install the CUDA toolkit of torch's CUDA version (nvcc on PATH, CUDA_HOME set) and build with --no-build-isolation",
            ),
            # the PTX assembler a JIT (Triton, inductor, DeepGEMM) runs refused: most often a
            # ptxas older than the GPU ("Value 'sm_120' is not defined for option 'gpu-name'")
            pat(
                r"(?P<msg>.*(?:ptxas fatal|ptxas error|PTXASError|PTXAS error|PTX codegen error|ptxas application ptx input).*)",
            ),
        ),
        defaults={"msg": "?", "lib": ""},
        enrich=_enrich_jit,
        examples=(
            # not from the corpus: the CUDA toolkit's compiler named by its path, not there
            "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
            example("cuda-graph-capture-failed", error="ninja exited with status 1"),
            "/usr/bin/ld: cannot find -lcudart",
            # not from the corpus: ptxas's own message for a GPU it does not know
            "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'",
            # not from the corpus: Triton without a host compiler (it builds its launcher in C)
            "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
            # not from the corpus: subprocess' words for a JIT's compiler exit status
            "subprocess.CalledProcessError: Command '['/usr/local/cuda/bin/nvcc', '-c', 'kernel.cu', '-o', 'kernel.o']' returned non-zero exit status 2.",
            # not from the corpus: Windows' compiler by its .exe path, the line cut short
            "subprocess.CalledProcessError: Command '['C:\\\\Program Files\\\\LLVM\\\\bin\\\\clang.exe', 'C:\\\\Temp\\\\tmp1\\\\cuda_utils.c', '-O3', '-shared', '-IC:\\\\Py",
            # not from the corpus: AWS Neuron's compiler, run by torch-neuronx's wrapper
            "2026-12-03 10:11:12.000123:  4242  ERROR ||NEURON_CC_WRAPPER||: Failed compilation with ['neuronx-cc', 'compile', '--target=trn2', '--framework=XLA', '/tmp/model.hlo_module.pb']: neuronx-cc failed with exit status 70",
            # not from the corpus: a vendor port of Triton failing in its MLIR stage
            under(
                "/usr/lib/python3/site-packages/triton/compiler/compiler.py",
                "compile",
                "triton.compiler.errors.MLIRCompilationError: \n[ConvertLinalgRToBinary] encounters error:",
            ),
        ),
    ),
)
