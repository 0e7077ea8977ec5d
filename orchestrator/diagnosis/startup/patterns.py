"""Pattern pieces shared by the start-up rules (`orchestrator.diagnosis.startup`): errno and
status wordings, library names, GPU generations, the Hub's refusals."""

from __future__ import annotations

import re

from orchestrator import sglang
from orchestrator.diagnosis.model import Family
from orchestrator.sglang import code

# EADDRINUSE as libraries word it: errno 98 (Linux), its name, the strerror texts (zmq's is
# the short "Address in use")
# EADDRINUSE in every errno table: Linux 98, macOS/BSD 48 (whose text is "Address already in
# use" too), Windows' WSAEADDRINUSE 10048 and its own sentence
_ADDR_IN_USE = (
    "Errno 98",
    "errno: 98",
    "errno 98",
    "ddress already in use",
    "Address in use",
    "EADDRINUSE",
    "Errno 10048",
    "errno: 10048",
    "WinError 10048",
    "WSAEADDRINUSE",
    "only one usage of each socket address",
    "Only one usage of each socket address",
)
# an accelerator runtime's own status for "out of device memory" (CUDA, HIP, cuBLAS/hipBLAS,
# Intel's Unified Runtime, Ascend's ACL), whatever exception or log line carries it
_DEVICE_OOM_CODES = (
    "cudaErrorMemoryAllocation",
    "hipErrorOutOfMemory",
    "hipErrorMemoryAllocation",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "HIPBLAS_STATUS_ALLOC_FAILED",
    "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
    "ACL_ERROR_RT_MEMORY_ALLOCATION",
    "CUDA_ERROR_OUT_OF_MEMORY",
)
# this host's own addresses as a URL or requests' host= names them (loopback, the wildcard)
_LOOPBACK = r"(?:0\.0\.0\.0|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1?\])"
# a Hub repo id that is not a local weights file taken for one (that is model-not-found)
_NOT_A_FILE = (
    "".join(
        rf"(?<!\.{x})"
        for x in (
            "bin",
            "gguf",
            "ggml",
            "safetensors",
            "pt",
            "pth",
            "ckpt",
            "onnx",
            "h5",
            "msgpack",
        )
    )
    + r"(?![\w.-])"
)
# vLLM's and SGLang's platform probes, which try each vendor's library at start and go on
# without it ("Failed to import from amdsmi with ModuleNotFoundError(…)")
PROBE_NOTICE = r"Failed to import (?:from )?\w{1,40} with"
# not on a line SGLang itself marks harmless (its "ignore import error" notice for optional
# model modules, printed on healthy starts), nor on bitsandbytes' notice that it fell back to its
# CPU library (< 0.41 without GPU support prints the CPU library's missing GPU symbol, then runs),
# nor on a package's notice that it skipped its compiled extension and runs on without it
# (torchao's "Skipping import of cpp extensions: …: undefined symbol: …", a warning at import;
# the platform probes above), nor on torchvision's warning that its image extension would not
# load ("UserWarning: Failed to load image Python extension: …: undefined symbol: …"): only
# torchvision.io's image decoding goes without it)
_NOT_BENIGN = (
    r"\A(?!.*(?:"
    + "|".join(re.escape(m.keyword()) for m in sglang.all_messages("ignore-import-error"))
    + r"|can be ignored|libbitsandbytes_cpu\.so: undefined symbol"
    + r"|\bFailed to load image Python extension\b"
    + r"|\bSkipping (?:the )?(?:import|loading) of\b|\b[Ff]alling back to\b"
    + r"|\b"
    + PROBE_NOTICE
    + r"\b))"
)
# compiled kernel packages (NVIDIA's and AMD's) whose Python side is pinned to a release by the
# engine that calls it: a missing attribute of one is the installed release, not the caller's bug
_KERNEL_PACKAGES = (
    "sgl_kernel",
    "flashinfer",
    "flash_attn",
    "flash_mla",
    "deep_gemm",
    "deep_ep",
    "aiter",
    "vllm._C",
    "vllm._custom_ops",
    "vllm_flash_attn",
    "xformers",
    "triton",
    "cutlass",
    "tensorrt_llm",
    "lmdeploy.pytorch.kernels",
    "torch_npu",
    "habana_frameworks",
    "intel_extension_for_pytorch",
)
# a kernel package without a function or attribute its caller expects ("module 'deep_gemm' has
# no attribute 'get_compile_mode'", "module 'aiter' has no attribute 'dtypes'"): the installed
# release is not the one the engine was written for (kernel-package-mismatch's families, with
# any compiled library's undefined symbol)
# a call's arguments refused by the callee's signature, in Python's words and in torch's op
# schema's
_SIGNATURE_WORDS = (
    "required positional argument",
    "unexpected keyword argument",
    "positional argument but",
    "positional arguments but",
)
_OP_SCHEMA_WORDS = (*_SIGNATURE_WORDS, "argument(s) but received", "missing value for argument")
_KERNEL_PACKAGE_FAMILIES = (
    Family(("ImportError", "OSError", "RuntimeError"), words=("undefined symbol",)),
    Family(
        ("AttributeError",),
        words=tuple(f"module '{p}" for p in _KERNEL_PACKAGES),
        and_words=("has no attribute",),
        unless=("Did you mean",),
    ),
    # a call into an attention kernel package's API with another signature than the installed
    # release has (flashinfer's wrappers changed their arguments between releases): the
    # package is not the release the caller (SGLang's attention backends) was written for
    Family(
        ("TypeError",),
        words=_SIGNATURE_WORDS,
        frames=code.ATTENTION_PACKAGES,
        both=True,
    ),
    # a registered custom op (torch.ops.<package>.<op>, raised in torch/_ops.py) called with
    # another schema than the compiled library registered ("…::plan() expected at most 15
    # argument(s) but received 16 argument(s)"): the compiled part is another release than
    # the Python code that calls it
    Family(
        ("RuntimeError", "TypeError"),
        words=_OP_SCHEMA_WORDS,
        site_frames=("torch/_ops.py",),
        summary="a compiled op was called with another signature than the installed build registered: {exc}: {msg}",
    ),
)
# its examples, not from the corpus: kernel packages of another release than their callers'
_KERNEL_PACKAGE_EXAMPLES = (
    "AttributeError: module 'flash_attn' has no attribute 'flash_attn_varlen_kvpacked_func'",
    'Traceback (most recent call last):\n  File ".../vllm/model_executor/layers/fused_moe/fused_moe.py", line 1, in <module>\n'
    "    ...\nAttributeError: module 'triton.language' has no attribute 'constexpr_function'",
)
# the driver's own library (libcuda, NVML) without an entry point of the driver API that the
# caller was built for ("libcuda.so.418.74: undefined symbol: cuCtxCreate_v3"): the driver is
# older than the CUDA the caller needs (driver-too-old's, not a package's build)
_DRIVER_LACKS_SYMBOL = (
    r"(?P<msg>.*?\b(?P<lib>lib(?:cuda|nvidia-ml)\.so[\d.]{0,20})['\"]?: undefined symbol:? "
    r"(?P<symbol>(?:cu|nvml)[A-Z]\w{0,100}).*)"
)
# its example, not from the corpus: ctypes loading a driver that lacks CUDA 12's entry point
_DRIVER_LACKS_SYMBOL_EXAMPLE = (
    "OSError: /usr/lib/x86_64-linux-gnu/libcuda.so.1: undefined symbol: cuGetProcAddress_v2"
)
# the accelerator driver's own user-space libraries (NVIDIA's libcuda / NVML / PTX JIT,
# Ascend's driver HAL and DSMI/DCMI): their absence is gpu-unavailable (no driver, or a
# container without the vendor's runtime), not a missing Python package
_DRIVER_LIBS = ("cuda", "nvidia-ml", "nvidia-ptxjitcompiler", "ascend_hal", "drvdsmi_host", "dcmi")
_DRIVER_LIB = r"lib(?:" + "|".join(_DRIVER_LIBS) + r")\.so(?:\.1)?"
# not the driver's own libraries
_NOT_DRIVER_LIB = r"(?!\S*" + _DRIVER_LIB + ":)"
# the libraries of the CUDA runtime and toolkit (and ROCm's HIP runtime and its libraries), as
# their sonames begin: versioned by the CUDA/ROCm major they belong to
_CUDA_RUNTIME_LIB = (
    r"lib(?:nvrtc|nvrtc-builtins|cudart|cublas|cublasLt|cudnn|cusparse|cusparseLt|cufft|cufile"
    r"|curand|cusolver|nvJitLink|nvToolsExt|nccl|cupti|npp|nvjpeg|amdhip64|hiprtc|rocblas"
    r"|hipblas|hipblaslt|miopen|rccl|cuda(?!\.so\.1\b))"
)
# how a draft model's class or module names itself (LlamaForCausalLMEagle3, DeepseekV3ForCausalLMNextN)
_DRAFT_CLASS_WORDS = ("Eagle", "EAGLE", "eagle", "Draft", "draft", "NextN", "MTP")
# attention implementations as models and engines name them in a refusal
_ATTENTION_IMPLS = (
    "Flash Attention",
    "flash attention",
    "Flash-Attention",
    "FlashAttention",
    "flash_attn",
    "flash-attn",
    "FlashInfer",
    "flashinfer",
    "xformers",
    "xFormers",
    "attention backend",
    "Attention backend",
    "attention implementation",
    "attn_implementation",
    "sdpa",
    "SDPA",
)
# GPU generations and capabilities, as a kernel refusing the card names them
_GPU_GENERATIONS = (
    "Ampere",
    "Hopper",
    "Blackwell",
    "Turing",
    "Volta",
    "or newer",
    "or later",
    "compute capability",
    "Compute Capability",
    "sm_",
    "sm8",
    "sm9",
    "SM8",
    "SM9",
)
# A GPU generation named as what a feature needs, in the words of the code that checks it
# (SGLang's argument hooks and quantisation methods, from its own sources: "MXFP4 Marlin
# requires SM90+.", "--kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120", "needs a
# Blackwell (SM100+) device", "is supported only on NVIDIA Blackwell SM100/SM103 GPUs",
# "only supports sm 75 and above"): the requirement AND the generation, in that relation
# ("SM90 Humming MXFP4 MoE requires both expert residual scales" names none). Bounded
# repeats only: linear on any line.
_GPU_GENERATION = (
    r"(?:\bSM ?\d{2,3}|\bsm[_ ]?\d{2,3}|\bSM\d{1,2}x\b|\bSM ?\d{1,2}\.x\b|\b(?:Blackwell|Hopper|Ampere|Turing|Volta)\b"
    r"|\bgfx\d{2,4}|\bMI\d{3}\b)"
)
_NEEDS_GPU_GENERATION = (
    r"\b(?:requires?|needs?|only supports?|only supported (?:on|by|for)|supported only (?:on|by)"
    r"|not supported on|only available on|only works on)\b[^.;\n]{0,40}?"
    + _GPU_GENERATION
    + r"|"
    + _GPU_GENERATION
    + r"[\w/() -]{0,24}?(?:\+|\b(?:and|or) (?:above|newer|later)\b)"
    # the generations first, then the verdict ("Only SM 10.x and 11.x are supported": FA4)
    + r"|\b[Oo]nly (?:on )?"
    + _GPU_GENERATION
    + r"[\w/.,() -]{0,40}?\b(?:is|are) supported\b"
)
_NEEDS_GPU_GENERATION_DOC = (
    "names a GPU generation (SM90, sm_100, Blackwell, Hopper, gfx950, ...) as what it requires, "
    "needs or only supports, or as a floor (\u201cSM90+\u201d, \u201cand above\u201d, \u201cor newer\u201d)"
)
# a package missing, in the words of whoever needs it rather than Python's ("Petit is not
# installed. Please install it with `pip install petit-kernel`", "--enable-http2 requires the
# 'granian' package. Install it with: pip install ...": SGLang's own checks)
_INSTALL_HINTS = (
    # (a bare "pip install" is not enough: "requires a GPU. See the pip install docs")
    "install with `pip install",
    "install with: pip install",
    "Install with `pip install",
    "Install with: pip install",
    "by running `pip install",
    "Please install",
    "please install",
    "is not installed",
    "are not installed",
    "Install it with",
    "install it with",
    "must be installed",
    # "needs to be installed", and a framework's "Form data requires \"python-multipart\" to
    # be installed" (the package named between the two)
    "to be installed",
    "not found in your environment",
)
# ... unless it asks for another version of an installed package (that is a version
# mismatch: kernel-package-mismatch names the compiled ones)
_UPGRADE_HINTS = ("upgrade", "Upgrade", ">=", "newer version", "version of")
# a memory pool that does not fit, in the words of the code that sizes it
_NO_ROOM = (
    "leaves no room",
    "leave no room",
    "Not enough memory",
    "not enough memory",
    "Not enough space for",
    "not enough space for",
    "no GPU memory left",
    "leave no GPU memory",
)
_NOT_DEVICE_MEMORY = (
    "host memory",
    "Host memory",
    "CPU memory",
    "disk",
    "/dev/shm",
    "shared memory",
)
# cuda-oom's families for an engine's own words about device memory
_NO_ROOM_FAMILIES: tuple[Family, ...] = (
    # an allocation at load time that the engine itself blames on memory (vLLM's "Failed
    # to create unquantized linear weights. This may be caused by insufficient memory to
    # allocate the weight.")
    Family(("RuntimeError",), words=("caused by insufficient memory to allocate",)),
    # SGLang's memory pools finding no room on the GPU for the KV cache (or a model's
    # state cache) after the weights, in any release's words ("... leaves no room for
    # the full KV pool", "Not enough space for mamba cache, try to increase
    # --mamba-full-memory-ratio"); the host's memory is host-memory-exhausted's
    Family(
        ("RuntimeError", "ValueError", "AssertionError"),
        words=_NO_ROOM,
        and_words=(
            "KV",
            "kv",
            "cache",
            "pool",
            "mem-fraction",
            "mem_fraction",
            "memory-ratio",
            "memory_ratio",
        ),
        unless=_NOT_DEVICE_MEMORY,
        summary="the GPU memory left after the weights does not hold the engine's memory pool: {exc}: {msg}",
        fix="the pool does not fit in what the weights leave of the GPU ({msg}): do what the message asks (raise --mem-fraction-static, or lower --max-running-requests / --context-length), or spread the model over more GPUs (a larger --tp-size) or use a smaller checkpoint",
    ),
)
# kernel-unsupported-arch's family for a feature refused on this GPU generation
# (a feature refused on this GPU generation by the code that checks it, in any wording: the
# requirement and the generation it names; SGLang's argument hooks and quantisation methods:
# "MXFP4 Marlin requires SM90+.")
_NEEDS_GPU_GENERATION_FAMILY = Family(
    ("ValueError", "RuntimeError", "AssertionError", "NotImplementedError"),
    shape=_NEEDS_GPU_GENERATION,
    shape_doc=_NEEDS_GPU_GENERATION_DOC,
    summary="a feature this configuration uses needs another GPU generation: {exc}: {msg}",
    fix="this GPU is not of the generation the feature needs ({msg}): drop the flag, quantisation or backend that asks for it (or take the alternative the message names), or run on GPUs of that generation; `nvidia-smi --query-gpu=name,compute_cap --format=csv` shows this box's",
)
# the Hub's refusal of a request, as clients word it
_HUB_REFUSED = (
    "gated",
    "restricted",
    "401 Client Error",
    "403 Client Error",
    "Unauthorized",
    "Forbidden",
    "Invalid user token",
    "Access to model",
)
# the NVIDIA container toolkit's OCI hooks and CLI, as a runtime names the program it ran
# (gpu-unavailable reads their failures; exec-failed leaves them alone: not the entrypoint)
_NVIDIA_HOOKS = r"nvidia-(?:ctk|cdi-hook|container-runtime-hook|container-toolkit)\b"
# CUDA's words for an operation refused while a stream is being captured into a graph
_CAPTURE_REFUSED = (
    "stream is capturing",
    # cudaErrorCapturedEvent / hipErrorCapturedEvent: an event recorded in a capturing stream
    "last recorded in a capturing stream",
    "cudaErrorStreamCapture",
    "hipErrorStreamCapture",
    "during stream capture",
    "capture was invalidated",
    # torch's own refusals of a call that cannot be captured ("Cannot call
    # CUDAGeneratorImpl::current_seed during CUDA graph capture", "... not allowed during
    # graph capture"), and the capture status CUDA/HIP report with them
    "during CUDA graph capture",
    "during graph capture",
    "during HIP graph capture",
    "cudaStreamCaptureStatusActive",
    "hipStreamCaptureStatusActive",
)
# the programs a kernel build at start-up runs (a FileNotFoundError naming one alone: the tool is
# not installed, or not on the unit's PATH)
_BUILD_TOOLS = r"(?:ninja|nvcc|hipcc|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|cmake|make|ptxas|cicc)"
# a compiler a kernel build or a JIT runs, by the name its command line gives it (AWS Neuron's
# neuronx-cc compiles a model's graphs at start-up as nvcc compiles a JIT's kernels)
_COMPILERS = (
    r"(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|hipcc|ninja|icx|icpx|cl|neuronx-cc|neuron-cc)"
)
# jit-build-failed's families (see the rule in startup/builds.py)
_JIT_FAMILIES: tuple[Family, ...] = (
    Family(
        ("CalledProcessError", "RuntimeError", "CompilationError"),
        words=("ninja", "nvcc", "hipcc", "Error building extension", "CppCompileError"),
    ),
    # the compiler's exit status, raised by a kernel builder (torch cpp_extension,
    # Triton, setuptools, DeepGEMM/flashinfer JIT); MLIRCompilationError is the
    # MLIR-stage error of Triton's vendor ports (triton-ascend's bishengir, sglang #16360)
    Family(
        (
            "CalledProcessError",
            "CompileError",
            "CompilationError",
            "MLIRCompilationError",
            "DistutilsExecError",
        ),
        frames=code.BUILD_PACKAGES,
    ),
    # any exception raised by one of Triton's compiler stages (its own raise site)
    Family((), site_functions=code.TRITON_COMPILE_STAGES),
)
# gpu-unavailable's families (see the rule in startup/gpu.py): no CUDA device the process can use
_GPU_UNAVAILABLE_FAMILIES: tuple[Family, ...] = (
    Family(
        ("RuntimeError", "AcceleratorError", "DeferredCudaCallError"),
        words=(
            "busy or unavailable",
            "no CUDA-capable device",
            "Found no NVIDIA driver",
            "CUDA driver initialization failed",
            "Error 802",
            "system not yet initialized",
            "No CUDA GPUs are available",
            "device < num_gpus",
            "invalid device ordinal",
            "No HIP GPUs are available",
            "no ROCm-capable device",
            "ErrorNoDevice",
            "CUDA unknown error",
        ),
    ),
    # a code path that refuses to run when torch sees no CUDA device, in its words ending
    # "requires CUDA." (TGI's sharded models: "Sharded Llama requires CUDA.")
    Family(
        ("NotImplementedError", "RuntimeError", "AssertionError", "ValueError"),
        words=("requires CUDA.",),
    ),
    # no accelerator at all, in the words of a platform probe (SGLang's: "No supported
    # accelerator (CUDA/XPU) available", "torch_npu detected, but NPU device is not available
    # or visible", "nvidia-smi not found. Ensure NVIDIA drivers are installed and accessible.";
    # torch.cuda's "device 3 is not visible (CUDA_VISIBLE_DEVICES=0,1)", "cuda driver can't be
    # loaded"; transformers' quantizers' "No GPU or XPU found.")
    Family(
        ("RuntimeError", "AssertionError", "ValueError"),
        words=(
            "No supported accelerator",
            "No accelerator",
            "not available or visible",
            "drivers are installed and accessible",
            "is not visible (CUDA_VISIBLE_DEVICES",
            "is not visible (HIP_VISIBLE_DEVICES",
            "driver can't be loaded",
            "No GPU found",
            "No GPU or XPU found",
            # a TPU engine's probe of its Ray node or placement group ("Current node has no TPU
            # available", "The number of required TPUs exceeds the total number of available
            # TPUs in the placement group")
            "no TPU available",
            "number of available TPUs",
            # the TPU runtime's own start failing ("TPU initialization failed: …", "Failed to
            # get global TPU topology"): no chip to run on
            "TPU initialization failed",
            "Failed to get global TPU topology",
        ),
    ),
    # vLLM found no GPU platform at all: the base platform's probes (`get_device_capability`,
    # `get_device_name`, ...) are left unimplemented on its "unspecified" platform and raise a
    # bare NotImplementedError from vllm/platforms/interface.py (a container run without the
    # GPUs, a pod without the device plugin's resources)
    Family(
        ("NotImplementedError",),
        site_frames=("vllm/platforms/interface.py",),
        summary="no usable GPU: vLLM detected no GPU platform ({exc} raised by its platform "
        "interface, {frame})",
    ),
)
