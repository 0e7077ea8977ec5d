"""Start-up rules, as data: the GPU and its driver: driver and card, kernels written for another GPU generation, device memory, CUDA graphs (compiled kernel packages and their builds: `startup.builds`).

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

import re

from orchestrator import sglang
from orchestrator.diagnosis.enrich import (
    _enrich_arch,
    _enrich_driver,
)
from orchestrator.diagnosis.model import (
    FALLBACK,
    HINT,
    Family,
    Rule,
    Signal,
    example,
    pat,
    said,
    under,
)
from orchestrator.diagnosis.startup import patterns as P
from orchestrator.diagnosis.startup.patterns import (
    _CAPTURE_REFUSED,
    _DEVICE_OOM_CODES,
    _DRIVER_LIB,
)
from orchestrator.sglang import code

__all__ = ["RULES"]

RULES: tuple[Rule, ...] = (
    Rule(
        id="driver-too-old",
        families=(
            Family(
                ("RuntimeError", "AcceleratorError", "DeferredCudaCallError"),
                words=(
                    "driver version is insufficient",
                    "NVIDIA driver on your system is too old",
                    "Error 804",
                    "forward compatibility",
                    "InsufficientDriver",
                    "not supported in the installed CUDA driver",
                    "CallRequiresNewerDriver",
                    "unsupported toolchain",
                    "UnsupportedPtxVersion",
                ),
            ),
        ),
        title="the NVIDIA driver is older than the CUDA that torch was built with",
        summary="the NVIDIA driver is too old for this torch: {msg}",
        fix="{fixhint}",
        doc=(
            "torch (and sgl-kernel, flashinfer) were built for a CUDA the host's driver does not "
            'support: "The NVIDIA driver on your system is too old (found version 12020)" (the '
            "driver's CUDA, 12.2), \"CUDA driver version is insufficient for CUDA runtime "
            'version", or in a container "Error 804: forward compatibility was attempted on non '
            'supported HW".'
        ),
        patterns=(
            pat(
                r"(?P<msg>The NVIDIA driver on your system is too old \(found version (?P<found>\d+)\).*)",
            ),
            pat(
                r"(?P<msg>.*CUDA driver version is insufficient for CUDA runtime version.*)",
            ),
            # CUDA_ERROR_INVALID_IMAGE (200): the driver cannot load a kernel image, most often
            # code (a Triton kernel, a llama.cpp build) compiled by a newer CUDA toolkit than the
            # driver supports ("Triton Error [CUDA]: device kernel image is invalid")
            pat(
                r"(?P<msg>.*(?:device kernel image is invalid).*)",
                fixhint="the driver could not load a GPU kernel built by a newer CUDA toolkit than it supports ({msg}): update the NVIDIA driver to one that supports the toolkit the kernels were built with (Triton's bundled ptxas, the wheel's CUDA), or use a build for the driver's CUDA",
            ),
            pat(
                r"(?P<msg>.*Error 804: forward compatibility was attempted on non supported HW.*)",
            ),
            # an NGC-built container's entrypoint banner (PyTorch, Triton, TensorRT-LLM, NeMo
            # images): the image's CUDA needs a newer driver and forward compatibility is off
            pat(
                r"(?P<msg>.*?\bThis container was built for NVIDIA Driver Release (?P<need>\d+(?:\.\d+)*) or later\b.*)",
            ),
            # the NVIDIA container toolkit refusing an image whose CUDA needs a newer driver
            # (the image's NVIDIA_REQUIRE_CUDA: "cuda>=12.8", "driver>=410", or the brand
            # alternative "brand=tesla,driver>=418,driver<419" a non-Tesla GPU fails when the
            # driver is older than the image's CUDA)
            pat(
                r"(?P<msg>.*unsatisfied condition: cuda ?>= ?(?P<need>\d+\.\d+).*)",
            ),
            pat(
                r"(?P<msg>.*?\bunsatisfied condition: (?:driver ?>= ?(?P<need>\d+(?:\.\d+)*)|brand ?= ?\w{1,20}).*)",
            ),
            # the toolkit's requirement check cut before its condition: it checks only the
            # image's CUDA and driver requirements
            pat(
                r"(?P<msg>.*?\bnvidia-container-cli: requirement error: unsatisfied condition\b.*)",
            ),
            # the runtimes' enum names for the same (CUDA's error 35, ROCm's hipErrorInsufficientDriver),
            # and 35 by its number after the runtime call that returned it ("CUDA error calling
            # \"cudaGetDeviceCount(&devCount)\", code is 35")
            pat(
                r"(?P<msg>.*\b(?:cudaErrorInsufficientDriver|hipErrorInsufficientDriver|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE|cudaErrorCompatNotSupportedOnDevice)\b.*|.*?\bCUDA error calling \x22?cuda\w{1,40}\([^)\n]{0,80}\)\x22?, (?:error )?code (?:is |= ?)?35\b.*)",
            ),
            # CUDA's error 36 (cudaErrorCallRequiresNewerDriver): a library built with a newer
            # toolkit calls an entry point this driver lacks (NCCL's "Cuda failure 'API call
            # is not supported in the installed CUDA driver'"); what fails after it (NCCL's
            # collectives, "invalid device ordinal") is its consequence
            pat(
                r"(?P<msg>.*(?:API call is not supported in the installed CUDA driver|\bcudaErrorCallRequiresNewerDriver\b|\bCUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER\b).*)",
                explains=("nccl-error", "gpu-unavailable"),
            ),
            # CUDA's error 222 (cudaErrorUnsupportedPtxVersion, CUDA_ERROR_UNSUPPORTED_PTX_VERSION):
            # the PTX in the binary came from a newer CUDA toolkit than the driver can JIT,
            # so the driver, not the GPU, is too old (llama.cpp/ggml, torch, Triton all say it so)
            pat(
                r"(?P<msg>.*?(?:\bthe provided PTX was compiled with an unsupported toolchain|\bcudaErrorUnsupportedPtxVersion\b|\bCUDA_ERROR_UNSUPPORTED_PTX_VERSION\b).*)",
                fixhint="the binary's PTX was built by a newer CUDA toolkit than this driver supports: update the NVIDIA driver to one that supports that toolkit (`nvidia-smi` shows the driver's CUDA), or use a build for the driver's CUDA",
            ),
            pat(P._DRIVER_LACKS_SYMBOL, explains=("kernel-package-mismatch",)),
        ),
        preflight_rule=None,
        defaults={"msg": "?", "found": ""},
        enrich=_enrich_driver,
        examples=(
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11060). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). ... Error 804: forward compatibility was attempted on non supported HW",
            # not from the corpus: the runtime's enum name (a C++ wrapper), the same as torch says it
            "terminate called after throwing an instance of 'std::runtime_error' what(): cudaGetDeviceCount failed: cudaErrorInsufficientDriver",
            "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver",
            # not from the corpus: CUDA's error 222 as torch and the driver API name it
            "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
            "triton.runtime.errors: CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            # not from the corpus: an NGC image's banner for another release
            "ERROR: This container was built for NVIDIA Driver Release 550.54 or later, but version 535.161.08 was detected and compatibility mode is UNAVAILABLE.",
            P._DRIVER_LACKS_SYMBOL_EXAMPLE,
        ),
    ),
    Rule(
        id="gpu-unavailable",
        families=P._GPU_UNAVAILABLE_FAMILIES,
        title="no usable CUDA device",
        summary="no usable CUDA GPU: {msg}",
        fix="{fixhint}",
        doc=(
            "PyTorch cannot use the GPUs: no driver, driver older than the CUDA runtime, "
            'CUDA_VISIBLE_DEVICES hides them, fewer GPUs than --tp-size ("invalid device '
            'ordinal"), devices busy (exclusive mode), or on HGX B200/H200 the NVIDIA '
            'fabric manager not running ("Error 802: system not yet initialized").'
        ),
        patterns=(
            pat(
                r"(?P<msg>.*?(?:Error 802: system not yet initialized|cudaErrorSystemNotReady|\bCUDA_ERROR_SYSTEM_NOT_READY\b|\bsystem not yet initialized\b).*)",
                fixhint="start the NVIDIA fabric manager (`systemctl enable --now nvidia-fabricmanager`, version = driver version) and check `nvidia-smi -q | grep -i fabric`",
                # NCCL's "unhandled cuda error" is its wrapper for this status ("Cuda failure
                # 802 'system not yet initialized'" below it): the status is the cause
                explains=("nccl-error",),
            ),
            # CUDA's error 803 (cudaErrorSystemDriverMismatch): the CUDA driver library the
            # process loaded (a container's own libcuda, forward-compat libs on the ld cache)
            # is not the host kernel module's version
            pat(
                r"(?P<msg>.*?(?:\bError 803: system has unsupported display driver / cuda driver combination|\bsystem has unsupported display driver / cuda driver combination|\bcudaErrorSystemDriverMismatch\b|\bCUDA_ERROR_SYSTEM_DRIVER_MISMATCH\b).*)",
                fixhint="the CUDA driver library the service loads (libcuda.so.1) is not the host driver's version: in a container, drop the image's own libcuda / compat libraries from the library path (`ldconfig -p | grep libcuda`) so the host's mounted one is used, or align the host driver with them; on the host, reboot after a driver update",
            ),
            pat(
                r"(?P<msg>(?:No CUDA GPUs are available|Found no NVIDIA driver on your system|no CUDA-capable device is detected|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver).*)",
            ),
            # torch's CUDA init gave up (nvidia_uvm not loaded, a container without the device
            # nodes, a suspended GPU): it sets the device count to zero
            pat(
                r"(?P<msg>.*CUDA unknown error - this may be due to an incorrectly set up environment.*)",
            ),
            # the same status by its enum name, or its number in a check against cudaSuccess
            # (glog's "Check failed: error == cudaSuccess (30 vs. 0) unknown error"; the driver
            # API's 999 in Ollama's GPU discovery: "nvcuda init failure: 999"), from a
            # program that prints no more (Go's and
            # C's CUDA bindings panicking on cuInit: "panic: CUDA_ERROR_UNKNOWN"), most often a
            # host resumed from suspend with nvidia_uvm in a bad state
            pat(
                r"(?P<msg>.*?(?:\b(?:CUDA_ERROR_UNKNOWN|cudaErrorUnknown)\b|== cudaSuccess \(30 vs\. 0\)|\b(?:nvcuda|nvml(?: vram)?|cuda(?:rt)?) init failure: 999\b).*)",
                fixhint="CUDA reports an unknown error before any work: on a host resumed from suspend reload the nvidia_uvm module (`sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`) or reboot; check `nvidia-smi` and dmesg for Xid lines",
            ),
            # docker/podman started without the NVIDIA runtime, or its CLI finds no driver, or
            # the runtime could not inject the GPU devices (CDI specs naming devices the host
            # lacks, the nvidia-ctk hook failing, a CDI name taken for a device path by a
            # runtime without CDI: "stat nvidia.com/gpu=0: no such file or directory")
            pat(
                r"(?P<msg>.*(?:could not select device driver \S* ?with capabilities: \[\[(?:gpu|GPU)\]\]|nvidia-container-cli: (?:initialization|mount|device|detection) error|unresolvable CDI devices?\b|\bstat (?:nvidia|amd)\.com/gpu=\S{1,40}: no such file or directory\b|\bsetting up CDI devices\b|\bfailed to inject (?:CDI )?devices\b|\berror (?:executing|running) (?:\w{1,20} )?hook(?: #\d{1,3}:)? (?:fork/exec )?`?[^\s`]{0,200}?"
                + P._NVIDIA_HOOKS
                + r"|unknown or invalid runtime name: nvidia\b|[Uu]nknown runtime specified nvidia\b|no runtime for \\?\"?nvidia\\?\"? is configured|RuntimeHandler \\?\"?nvidia\\?\"? not supported|RuntimeClass \"?nvidia\"? (?:not found|does not exist)).*)",
                fixhint="the container runtime cannot give the container GPUs: install the NVIDIA container toolkit (`nvidia-ctk runtime configure`, restart docker) and check `nvidia-smi` works on the host",
            ),
            # the same in ROCm's, Intel's and the runtimes' own words (torch on ROCm says "No
            # HIP GPUs are available"; hipErrorNoDevice is "no ROCm-capable device is detected"),
            # and a CUDA driver call's result by its number (CUresult 100 CUDA_ERROR_NO_DEVICE,
            # 101 CUDA_ERROR_INVALID_DEVICE: "cuInit failed:100" from a shim such as HAMi-core)
            pat(
                r"(?P<msg>.*(?:No (?:HIP|XPU|NPU) GPUs are available|no ROCm-capable device is detected|(?:cuda|hip)ErrorNoDevice\b|(?:cuda|hip)ErrorInvalidDevice\b|cudaErrorDevicesUnavailable\b|\bCUDA_ERROR_NO_DEVICE\b|\bCUDA_ERROR_INVALID_DEVICE\b|\bcu[A-Z]\w{1,30}(?:\(\))? failed(?::| with)? ?(?:error )?(?:code )?(?:=\s?)?10[01]\b).*)",
            ),
            # the kernel module and the user-space driver libraries are of different versions
            # (a driver upgraded without a reboot): no GPU can be used until they match
            pat(
                r"(?P<msg>.*(?:Failed to initialize NVML: Driver/library version mismatch|NVML library version mismatch).*)",
                fixhint="the NVIDIA kernel module and the user-space driver libraries differ in version (a driver update without a reboot, or a container's libraries): reboot the host (or reload the nvidia modules) so `nvidia-smi` works again",
            ),
            # the driver's own user-space libraries are not there: no driver on the host, or a
            # container started without the NVIDIA runtime (`--gpus`, the device plugin)
            pat(
                r"(?P<msg>.*(?:\b(?P<lib>"
                + _DRIVER_LIB
                + r")(?:: cannot open shared object file| not found)|NVML Shared Library Not Found|Failed to load shared library libcuda).*)",
                fixhint="the accelerator driver's libraries (NVIDIA's libcuda.so.1 / libnvidia-ml.so.1, Ascend's libascend_hal.so) are not visible to the service: install the driver on the host, or in a container start it with the vendor's runtime (`--gpus all`, the device plugin; for Ascend mount /usr/local/Ascend/driver) so they are mounted in",
            ),
            # the NVIDIA kernel modules would not load (udev's or a unit's modprobe of nvidia,
            # nvidia-uvm, nvidia-modeset failing; modprobe's own "could not insert 'nvidia'"):
            # no driver, so no GPU (a kernel updated without the module rebuilt, Secure Boot)
            pat(
                r"(?P<msg>.*?(?:\bProcess '/(?:usr/)?s?bin/modprobe nvidia(?:[-_]\w{1,20})?' failed with exit code \d+|\bmodprobe: (?:FATAL|ERROR): could not insert '?nvidia(?:[-_]\w{1,20})?'?).*)",
                fixhint="the NVIDIA kernel module would not load: rebuild it for the running kernel (`dkms status`, reinstall the driver package or its DKMS module after a kernel update), check Secure Boot (an unsigned module is refused), then `sudo modprobe nvidia` and `nvidia-smi`",
            ),
            # NVML (the driver's management library) not loadable or not initialisable: the
            # device plugin's, nvidia-smi's, pynvml's and go-nvml's words for no driver or a
            # container without the NVIDIA runtime ("Failed to initialize NVML: could not load
            # NVML library", "Failed to initialize NVML: Unknown Error", "NVML_ERROR_…", and
            # go-nvml's names of the same return codes: "nvml init failed: ERROR_LIBRARY_NOT_FOUND";
            # the driver installer unable to load nvidia.ko, which leaves no driver at all)
            pat(
                r"(?P<msg>.*(?:could not load NVML library|[Ff]ailed to (?:initialize|start|init) (?:NVML|nvml)\b|\b(?:NVML|nvml) init(?:iali[sz]ation)? failed\b|\bUnable to load the kernel module '?nvidia(?:-\w{1,20})?\.ko\b|\b(?:NVML_)?ERROR_(?:LIBRARY_NOT_FOUND|DRIVER_NOT_LOADED|NO_PERMISSION)\b|NVMLError_(?:DriverNotLoaded|NoPermission)).*)",
                fixhint="NVML cannot be loaded or initialised: no NVIDIA driver on the host, or the container (a Kubernetes pod, the device plugin) runs without the NVIDIA runtime; install the driver and the NVIDIA container toolkit and make `nvidia` the default runtime (`nvidia-ctk runtime configure --set-as-default`), then check `nvidia-smi` in the container",
            ),
            # torch's warning that NVML would not initialise (torch/cuda/__init__.py): no driver
            # in reach, or a container without the NVIDIA runtime; a hint, since torch goes on
            # and another line may name the cause
            pat(
                r"(?P<msg>.*?\bUserWarning: Can't initialize NVML\b.*)",
                role=HINT,
                fixhint="torch could not initialise NVML (the driver's management library): check `nvidia-smi` as the service user; in a container, start it with the NVIDIA runtime (`--gpus all`, the device plugin) so the driver's libraries are mounted in",
            ),
            # CUDA's error 34 (cudaErrorStubLibrary): the toolkit's stub libcuda.so (for linking
            # only) was loaded instead of the driver's, so no GPU can be used
            pat(
                r"(?P<msg>.*?(?:\bCUDA driver is a stub library\b|\bcudaErrorStubLibrary\b|\bCUDA_ERROR_STUB_LIBRARY\b).*)",
                fixhint="the process loaded the CUDA toolkit's stub libcuda.so (lib64/stubs) instead of the driver's: take the stubs directory off LD_LIBRARY_PATH / the ld cache, and check the NVIDIA driver is installed (`nvidia-smi`)",
            ),
            # vLLM's platform detection found no accelerator (no GPU visible to the process, or
            # no driver or platform plugin for it): "RuntimeError: Failed to infer device type"
            pat(
                r"(?P<msg>.*?\bFailed to infer device type\b.*)",
                fixhint="the engine found no accelerator: check the GPUs are visible to the service (`nvidia-smi` / `rocm-smi` / `npu-smi info` as its user, CUDA_VISIBLE_DEVICES, the container's --gpus or device plugin) and that the engine build matches them (a CUDA build for NVIDIA, its plugin for Ascend/Gaudi)",
            ),
            pat(
                r"(?P<msg>.*invalid device ordinal.*)",
                fixhint="fewer GPUs are visible than the unit asks for: --tp-size (x --dp-size, + --base-gpu-id) must fit in the GPUs CUDA_VISIBLE_DEVICES leaves visible (check `nvidia-smi -L`)",
            ),
            # cudaErrorDevicesUnavailable (46) in each release's words: "CUDA-capable device(s)
            # is/are busy or unavailable", older "all CUDA-capable devices are busy or
            # unavailable" (THCudaCheck … error=46), HIP's the same
            pat(
                r"(?P<msg>.*(?:CUDA|HIP|ROCm|cuda|Cuda)-capable device(?:\(s\)|s)? (?:is/are|is|are) busy or unavailable.*)",
                fixhint="another process holds the GPUs (or they are in exclusive-process mode): find it with `nvidia-smi` and stop it",
            ),
            # the GPU's device nodes refused to the user (ROCm's /dev/kfd and render nodes need
            # the video/render groups; NVIDIA's /dev/nvidia*): the runtime then sees no GPU
            pat(
                r"(?P<msg>.*?/dev/(?:kfd|dri/(?:renderD|card)\d+|nvidia(?:\d+|ctl|-uvm))\b.{0,60}?(?:Permission denied|EACCES|Operation not permitted|EPERM).*)",
                fixhint="the service user may not open the GPU device nodes: add it to the `video` and `render` groups (ROCm: /dev/kfd, /dev/dri/renderD*) or give the container the devices (`--device /dev/kfd --device /dev/dri`, NVIDIA: the container runtime); check `ls -l /dev/kfd /dev/dri /dev/nvidia*`",
            ),
            # a vendor's visible-devices variable naming a device the process cannot see
            # (Gaudi's HABANA_VISIBLE_MODULES, Ascend's ASCEND_RT_VISIBLE_DEVICES "input data
            # rang[0-2)", ROCm's, Intel's): the variable, then what was wrong with it
            pat(
                r"(?P<msg>.*?\b(?:[Ii]nvalid |[Bb]ad )?(?P<var>(?:HABANA|ASCEND_RT|ASCEND|CUDA|HIP|ROCR|GPU|NEURON_RT|TPU)_VISIBLE_(?:DEVICES|MODULES|CORES|CHIPS)|ZE_AFFINITY_MASK)\b[=: ]{0,3}[\w,.-]{0,80}[.,]? {0,3}(?:error\b|is invalid|[Ii]nvalid\b|out of range|[Mm]odule IDs? should be\b|[Dd]evice IDs? should be\b|should be between|exceeds?\b|input data rang).*)",
                fixhint="the visible-devices variable ({var}) names a device this process cannot see: list only the devices the host (or the container) has (`hl-smi`, `npu-smi info`, `nvidia-smi -L`, `rocm-smi`), numbered from 0 inside a container that was given only some of them",
            ),
            # a device another process holds (Gaudi's synapse "Device already acquired", an
            # exclusive-mode accelerator): no device for this process
            pat(
                r"(?P<msg>.*?\b(?:[Dd]evice already (?:acquired|in use|opened)|[Dd]evice acquire failed|synDeviceAcquire\w{0,20} failed).*)",
                fixhint="another process holds the accelerator (a previous server still running, another container given the same device): find it (`hl-smi`, `npu-smi info`, `nvidia-smi`) and stop it, or give this one other devices",
            ),
            # more ranks than visible GPUs (TGI's "Each process is one gpu"); not vLLM's "required
            # GPUs exceeds ... in the placement group": a Ray group the user may have made too small
            pat(
                r"(?P<msg>.*?(?:\bEach process is one gpu\b|\bworld[_ ]size\b.{0,60}?\b(?:exceeds|is (?:larger|greater|more) than)\b.{0,60}?\b(?:number of |available |visible )(?:GPUs|devices|accelerators)\b).*)",
                fixhint="the engine was asked for more ranks (tensor/pipeline parallel size, shards) than GPUs it can see: lower it to the GPUs `nvidia-smi -L` lists (and CUDA_VISIBLE_DEVICES leaves), or give the container more GPUs",
            ),
            # the vendor's GPU tool is not there (no driver installed, or a container started
            # without the vendor's runtime, which mounts it in): Python's errno 2 naming it, a
            # container runtime's exec of it, a shell's "command not found"
            pat(
                r"(?P<msg>.*?(?:\[Errno 2\] [^'\n]{1,80}: '(?:[^'\n]{0,300}/)?(?P<tool>(?:nvidia|rocm|npu|hl|xpu)-smi)'|\bexec: \x22(?:nvidia|rocm|npu|hl|xpu)-smi\x22: executable file not found\b|\bexecutable file [`'\x22](?:nvidia|rocm|npu|hl|xpu)-smi[`'\x22] not found\b|\bfailed to run command '(?:nvidia|rocm|npu|hl|xpu)-smi': No such file or directory\b|\b(?:nvidia|rocm|npu|hl|xpu)-smi: (?:command )?not found\b).*)",
                fixhint="the GPU vendor's tools are not visible to the service: install the driver on the host, or start the container with the vendor's runtime (`--gpus all` / the NVIDIA container toolkit, the device plugin) so they are mounted in; check `nvidia-smi` there",
            ),
            # Kubernetes' scheduler found no node with a free accelerator of the kind the pod
            # asks for (the device plugin's extended resources, any vendor's GPU resource:
            # aliyun.com/gpu-mem, a shared-GPU scheduler's): the pod never starts
            pat(
                r"(?P<msg>.*?\bInsufficient (?P<resource>nvidia\.com/(?:gpu|mig-[\w.-]{1,40})|amd\.com/gpu|habana\.ai/gaudi\w{0,4}|huawei\.com/Ascend\w{1,12}|gpu\.intel\.com/(?:i915|xe)|[\w-]{1,60}(?:\.[\w-]{1,60}){1,4}/[\w.-]{0,40}?(?:gpu|GPU)[\w.-]{0,40})(?![\w.-]).*)",
                fixhint="no node has a free {resource} for the pod: free GPUs on a node (other pods hold them), lower the pod's GPU request (the tensor-parallel size), add GPU nodes, or check the device plugin advertises them (`kubectl describe node | grep -A5 Allocatable`)",
            ),
            # NVIDIA's device plugin on a node where it finds neither NVML nor a Tegra system
            # ("Incompatible strategy detected auto", then "If this is a GPU node, did you
            # configure the NVIDIA Container Toolkit?"): the plugin's container has no driver
            # libraries, so the node advertises no GPUs
            pat(
                r"(?P<msg>.*?(?:\bIf this is a GPU node, did you configure the NVIDIA Container Toolkit\b|\bIncompatible strategy detected auto\b).*)",
                fixhint="NVIDIA's device plugin found no driver libraries on the node, so it advertises no GPUs: install the NVIDIA container toolkit there and make `nvidia` the default runtime of containerd/CRI-O (`nvidia-ctk runtime configure --runtime=containerd --set-as-default`), or run the plugin with runtimeClassName: nvidia; check `nvidia-smi` on the node",
            ),
            # Ray Serve cannot place a replica that asks for GPUs ("… replicas that have taken
            # more than 30s to be scheduled … Resources required for each replica: [{… "GPU":
            # 0.1}], total resources available: {}"): no node of the cluster offers a free GPU;
            # a fallback, since Ray goes on waiting and a later line may say why
            pat(
                r"(?P<msg>.*?\btaken more than \d{1,6}s to be scheduled\b[^\n]{0,600}?\bResources required for each replica: [^\n]{0,600}?\bGPU\b.*)",
                role=FALLBACK,
                fixhint="Ray finds no free GPU for the replica: check the Ray cluster's GPUs (`ray status`: the GPU total and what holds it), that the GPU workers joined it (their node resources name GPU), and lower the replica's num_gpus or the tensor-parallel size to what a node has",
            ),
            # an OCI hook failed as the container was created, in the runtime's words with
            # no narrower cause named ("Running hook #1:: error running hook: exit status 3",
            # "createContainer hook #6: exit status 1"): in a GPU container the hooks are the
            # NVIDIA toolkit's (its prestart hook, its CDI hooks), so the GPUs were not set up;
            # a fallback, so that the hook's own words (a missing library, a CUDA requirement)
            # name the cause when they are there
            pat(
                r"(?P<msg>.*?(?:\berror running (?:\w{1,20} )?hook\b|\b(?:prestart|createRuntime|createContainer|startContainer|poststart) hook #\d{1,3}: exit status \d+).*)",
                role=FALLBACK,
                fixhint="a container hook failed while the GPU container was being set up (the NVIDIA container toolkit's hooks): check the toolkit's configuration and version (`nvidia-ctk --version`, /etc/nvidia-container-runtime/config.toml, the CDI spec: `nvidia-ctk cdi generate`), and that `nvidia-smi` works on the host",
            ),
            # the engine is configured with the NVIDIA runtime but its executable is not there
            # (podman's "no valid executable found for OCI runtime
            # /usr/bin/nvidia-container-runtime: invalid argument", docker's exec of it): the
            # NVIDIA container toolkit is not installed, so no GPU container starts
            pat(
                r"(?P<msg>.*?(?:\bno valid executable found for OCI runtime \S{0,200}?nvidia-container-runtime\b|\bexec: \\?\x22nvidia-container-runtime\\?\x22: executable file not found\b).*)",
                fixhint="the container engine names the NVIDIA runtime, but nvidia-container-runtime is not installed: install the NVIDIA container toolkit (`nvidia-container-toolkit`), or use CDI instead (`nvidia-ctk cdi generate`, then `--device nvidia.com/gpu=all`)",
                # (the runtime's exec failing is this, not the service's entrypoint)
                explains=("exec-failed",),
            ),
            # a GPU engine that found no GPU platform and goes on without one: vLLM's "No
            # platform detected, vLLM is running on UnspecifiedPlatform" (no CUDA/ROCm library
            # or device in reach: a container without the NVIDIA runtime), Ollama's GPU
            # discovery finding no library or no GPU ("no compatible GPUs were discovered",
            # "discovered GPU libraries" paths=[]); a fallback, since the same start may fail
            # for a cause a later line names
            pat(
                r"(?P<msg>.*?(?:\bNo platform detected, vLLM is running on UnspecifiedPlatform\b|\bno compatible GPUs were discovered\b|\b[Dd]iscovered GPU libraries(?:: \[?\]|\x22 paths=\[\])).*)",
                role=FALLBACK,
                fixhint="the engine found no GPU and runs without one: check the GPUs are visible to it (`nvidia-smi` as the service user; in a container the NVIDIA runtime: `--gpus all`, a pod's runtimeClassName and nvidia.com/gpu limit) and that the driver's libraries (libcuda.so.1, libnvidia-ml.so.1) are there",
            ),
            # the NVIDIA container runtime (a wrapper around runc) cannot find the runtime it
            # wraps ("nvidia-container-runtime: find runc path: exec: \"runc\": executable file
            # not found in $PATH"): no GPU container starts
            pat(
                r"(?P<msg>.*?\bnvidia-container-runtime\b[^\n]{0,40}?: find (?:runc|crun|low-level runtime) path\b.*)",
                fixhint='the NVIDIA container runtime cannot find the low-level runtime it wraps (runc/crun): install it or set its path in /etc/nvidia-container-runtime/config.toml (`runtimes = ["runc", "crun"]`), and check the engine\'s runtime configuration (`nvidia-ctk runtime configure`)',
                explains=("exec-failed",),
            ),
            # the kubelet admitted the pod to a node but the device plugin could not hand it
            # the devices (its Allocate / GetPreferredAllocation call failed: the plugin's
            # NVML broken, the plugin restarting, the devices taken): the pod never starts
            pat(
                r"(?P<msg>.*?\bUnexpectedAdmissionError\b.{0,200}?\bAllocate failed due to .*)",
                fixhint="the node's device plugin could not allocate the GPUs to the pod ({msg}): check the device plugin's pod on that node (its logs; restart it), that the driver works there (`nvidia-smi` on the node), and that the node still advertises the GPUs (`kubectl describe node`)",
            ),
            # a MIG slice that could not be made (the DRA driver's "MIG device allocation
            # failed: error creating GPU instance for '1g.20gb': Insufficient Resources",
            # nvidia-smi's "Failed to create GPU instances"): the GPU has no room for that
            # profile, so the pod or service gets no GPU
            pat(
                r"(?P<msg>.*?\b(?:MIG device allocation failed|[Ee]rror creating (?:GPU|compute) instance|Failed to create (?:GPU|compute) instances?)\b.*)",
                fixhint="the GPU could not be cut into the MIG slice asked for ({msg}): check the free MIG capacity and the placements left (`nvidia-smi mig -lgip`, `nvidia-smi mig -lgi`), ask for a profile that fits, or repartition the GPU (MIG strategy / geometry of the node)",
            ),
            # JAX's device mesh wider than the accelerators it sees (vLLM/tpu-inference on a TPU
            # host with fewer chips than the tensor-parallel size)
            pat(
                r"(?P<msg>.*?\bNumber of devices (?P<have>\d+) must be >= the product of mesh_shape\b.*)",
                fixhint="the mesh asks for more accelerators than the host shows ({have}): lower the tensor-parallel size to the devices there are, or run on a host (or slice) with enough chips",
            ),
            # the GPU operator's driver container that cannot find the kernel it should build
            # for (no kernel headers or package for this kernel, as dnf and apt say it: "Unable
            # to find a match: kernel-devel-…", "Unable to locate package linux-headers-…"): no
            # driver gets loaded
            pat(
                r"(?P<msg>.*?(?:\bCould not resolve Linux kernel version\b|\bUnable to find a match: kernel-(?:devel|headers)-\S{1,120}|\bUnable to locate package linux-(?:headers|image|modules)-\S{1,120}).*)",
                fixhint="the GPU operator's driver container cannot find the host kernel's packages: use a driver image (or precompiled driver) for this kernel and OS, or install the kernel headers the driver build needs, then check the driver pod's logs and `nvidia-smi` on the node",
            ),
            # ROCm's BLAS (rocBLAS/Tensile) finding no GPU in the process (a container without
            # /dev/kfd and /dev/dri, HIP_VISIBLE_DEVICES naming none)
            pat(
                r"(?P<msg>.*?\bCould not initialize Tensile host: No devices found\b.*)",
                fixhint="ROCm sees no GPU in the process: give the container /dev/kfd and /dev/dri (`--device /dev/kfd --device /dev/dri`, the video/render groups) and check HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES and `rocm-smi`",
            ),
            # NVIDIA's device plugin refusing a GPU in MIG mode whose MIG devices are not set up
            # (k8s-device-plugin's own check, then its panic)
            pat(
                r"(?P<msg>.*?\b(?:At least one device with migEnabled=true was not configured correctly|No MIG devices associated with /dev/nvidia\d+).*)",
                fixhint="a GPU is in MIG mode without MIG instances (or the plugin's MIG strategy does not fit): create the instances (`nvidia-smi mig -cgi … -C`, or the GPU operator's MIG manager), or turn MIG off (`nvidia-smi -mig 0`) and restart the device plugin",
            ),
            # the same from a GPU-aware scheduler (NVIDIA's KAI scheduler: "node(s) didn't have
            # enough resources: GPUs")
            pat(
                r"(?P<msg>.*?\bnode\(s\) didn't have enough resources?: (?:GPUs?|gpu)\b.*)",
                fixhint="no node has enough free GPUs for the pod: free GPUs on a node (other pods hold them), lower the pod's GPU request (the tensor-parallel size), or add GPU nodes",
            ),
            # Ascend's runtime could not open or count its NPUs (CANN's rtSetDevice: "open device
            # N failed, runtime result = 107001"; "get device count failed, runtime result =
            # 507899"): the device is missing, held or not mounted in
            pat(
                r"(?P<msg>.*?\b(?:open device \d+|get device count) failed, runtime result = \d+.*)",
                fixhint="the Ascend runtime could not open the NPU: check `npu-smi info`, that no other process holds it, the /dev/davinci* devices and driver mount in the container, and ASCEND_RT_VISIBLE_DEVICES",
            ),
            # torch's CUDA init failed with a runtime status no narrower pattern names
            # ("Unexpected error from cudaGetDeviceCount() … Error 500: named symbol not found",
            # the driver's libcuda and the runtime not fitting): no GPU is usable, whatever
            # the code; 802/803/804 and the others are named by their own patterns first
            pat(
                r"(?P<msg>.*?\bUnexpected error from (?:cuda|hip)GetDeviceCount\(\).*)",
                role=FALLBACK,
            ),
            # Ascend's runtime could not count its devices (CANN's aclrtGetDeviceCount failing,
            # "The device is unavailable"): no NPU is usable
            pat(
                r"(?P<msg>.*?(?:\baclrtGetDeviceCount|::AclrtGetDeviceCount)\b.{0,80}?\berror code is \d+.*)",
                fixhint="the Ascend runtime sees no usable NPU: check `npu-smi info`, the driver's mount in the container (/usr/local/Ascend/driver, the /dev/davinci* devices) and ASCEND_RT_VISIBLE_DEVICES",
            ),
        ),
        preflight_rule="gpus-for-tp",
        defaults={
            "msg": "?",
            "fixhint": "check `nvidia-smi` as the service user: driver loaded, GPUs visible (CUDA_VISIBLE_DEVICES), at least --tp-size of them",
        },
        examples=(
            "RuntimeError: No CUDA GPUs are available",
            under(
                ".../text_generation_server/models/__init__.py",
                "get_model",
                "NotImplementedError: Sharded Llama requires CUDA.",
            ),
            # not from the corpus: the visible-devices variable of ROCm and Gaudi out of range,
            # a Gaudi card held by another process
            "RuntimeError: HIP_VISIBLE_DEVICES=4,5 is invalid: only 2 devices are visible",
            "RuntimeError: Invalid HABANA_VISIBLE_DEVICES=3. Device IDs should be between 0 and 1.",
            "RuntimeError: synDeviceAcquireByModuleId failed: synStatus=20 [Device already acquired]",
            # not from the corpus: torch_npu's own wrapper of the device count
            "RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:217 NPU function error: c10_npu::acl::AclrtGetDeviceCount(&device_count), error code is 100000",
            # not from the corpus: a launcher probing the GPUs in a container without the runtime
            "FileNotFoundError: [Errno 2] No such file or directory: 'nvidia-smi'",
            "/bin/sh: 1: nvidia-smi: not found",
            # not from the corpus: the scheduler's event for a pod asking for more GPUs than free
            "Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 999: unknown error",
            # not from the corpus: CUDA's error 803 by its enum, docker and containerd without
            # the NVIDIA runtime, Ascend's driver library missing in a container
            "RuntimeError: cudaGetDeviceCount failed: cudaErrorSystemDriverMismatch",
            "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
            "RuntimeError: Failed to infer device type",
            # not from the corpus: the driver API's enum, and CUDA's error 34 (a stub libcuda
            # from the toolkit found instead of the driver's, ggml's words)
            "RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE",
            "ggml_cuda_init: failed to initialize CUDA: CUDA driver is a stub library",
            'Warning  FailedCreatePodSandBox  kubelet  Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured',
            "ImportError: libascend_hal.so: cannot open shared object file: No such file or directory",
            "RuntimeError: CUDA error: invalid device ordinal",
            # not from the corpus: torch on ROCm, a container without /dev/kfd
            "RuntimeError: No HIP GPUs are available",
            # the driver's libraries absent (a container without the NVIDIA runtime)
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
            # not from the corpus: nvidia-smi in a container whose device cgroup lost the GPUs
            "Failed to initialize NVML: Unknown Error",
            "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
            # not from the corpus: ROCm's HSA runtime without the render group, NVIDIA's node
            "hsa api call failure at: /long_pathname_so_that_rpms_can_package_the_debug_info/src/rocminfo/rocminfo.cc:1306 Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES ... Unable to open /dev/kfd read-write: Permission denied",
            "open /dev/nvidia0: Operation not permitted",
            "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=46 : all CUDA-capable devices are busy or unavailable",
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
        ),
    ),
    Rule(
        id="kernel-unsupported-arch",
        families=(
            Family(
                ("RuntimeError", "AcceleratorError", "ValueError", "AssertionError"),
                words=(
                    "no kernel image",
                    "not compatible with the current PyTorch",
                    "compute capability",
                    "GPUs or newer",
                    "GPU architecture is not supported",
                    "invalid device function",
                    "InvalidDeviceFunction",
                    "NoBinaryForGpu",
                    "code object for all current devices",
                    # a kernel backend's refusal of this GPU ("NvFp4 MoE backend
                    # 'FLASHINFER_CUTLASS' does not support the deployment configuration since
                    # kernel does not support current device")
                    "support current device",
                    "support the current device",
                ),
            ),
            P._NEEDS_GPU_GENERATION_FAMILY,
        ),
        title="kernels not built for this GPU (or too old)",
        summary="GPU kernels do not support this GPU or are too old: {msg}",
        fix="{fixhint}",
        doc=(
            'A CUDA kernel has no code for this GPU ("no kernel image is available for execution '
            'on the device"; PyTorch\'s "sm_100 is not compatible with the current PyTorch '
            "installation\"), or SGLang's start-up version check found sglang-kernel missing or "
            "older than required (utils/common.py `assert_pkg_version`)."
        ),
        patterns=(
            # a quantisation scheme's or kernel's floor on the compute capability, then this
            # GPU's (vLLM: "Min capability: 75. Current capability: 70.", "Minimum capability:
            # 80. Current capability: 70."), and Ascend's operator package built for another SoC
            pat(
                r"(?P<msg>.*?\bMin(?:imum)? capability: (?P<need>\d{2,3})\b[^\n]{0,12}?\bCurrent capability: (?P<have>\d{2,3})\b.*|.*?\bsocversion (?P<built>\w{1,40}) of bin package does not match the current device soc\w{0,10} (?P<device>\w{1,40}).*)",
            ),
            # a kernel's own assertion on the GPU's architecture (DeepGEMM's `arch_major == 10`,
            # `sm_version >= 90`, a device-capability check), whatever wraps it (SGLang's
            # capture wrapper, a bare AssertionError, a C++ assert quoted in the message): the
            # kernel was written for another GPU generation
            pat(
                r"\A(?P<msg>.{0,300}?\b(?:arch_major|sm_version|sm_arch|sm_major|cuda_arch|compute_capability|device_capability|get_device_capability\(\))(?:\[0\])? ?(?:==|>=|!=|<=|<|>|in) ?[\d(\[].*)",
                fixhint="a kernel this configuration uses was written for another GPU generation than this box's ({msg}): choose a checkpoint, quantisation or MoE/attention backend this GPU supports, or run on the GPU the kernel targets",
            ),
            # an assert on SGLang's own GPU-generation probes ("assert is_sm100_supported() or
            # is_sm90_supported()" in a quantisation method): the code path was written for
            # other generations than this GPU's
            pat(
                r"\A\s*(?P<msg>assert\b[^\n]{0,200}?\b" + code.GPU_GENERATION_PROBE + r".*)",
                fixhint="a code path this configuration uses was written only for other GPU generations ({msg}): choose a checkpoint, quantisation or MoE/attention backend this GPU supports, or run on the GPU generation it asserts",
            ),
            pat(
                r"(?P<msg>.*no kernel image is available for execution on the device.*)",
            ),
            # a prebuilt engine (TensorRT, TensorRT-LLM) serialized for another GPU architecture:
            # TensorRT's deserializer names both compute capabilities
            pat(
                r"(?P<msg>.*?\b(?:engine plan file is generated on an incompatible device|[Ee]ngine (?:was )?(?:built|serialized|compiled) (?:on|for) (?:an? )?(?:incompatible|different) (?:device|GPU))\b.*)",
                fixhint="the engine was built for another GPU: rebuild it on (or for) this GPU model (TensorRT engines are tied to the compute capability they were built on)",
            ),
            pat(
                r"(?P<msg>.*(?:only supported on GPUs with compute capability of at least|requires (?:a GPU with )?compute capability (?:of )?(?:at least )?|[Cc]ompute [Cc]apability (?:of )?at least )(?P<need>\d+\.\d).*?(?:capability (?:of |is )?(?P<b>\d)\.(?P<c>\d))?.*)",
            ),
            pat(
                r"(?P<msg>.*with CUDA capability (?P<sm>sm_\d+a?) is not compatible with the current PyTorch installation.*)",
            ),
            # the runtime found no code for this GPU in the binary: CUDA's and ROCm's HIP
            # "invalid device function" (a wheel built without this gfx/sm target)
            pat(
                r"(?P<msg>.*(?:(?:CUDA|HIP) error: [Ii]nvalid device function|(?:cuda|hip)ErrorInvalidDeviceFunction|(?:cuda|hip)ErrorNoKernelImageForDevice|hipErrorNoBinaryForGpu|Unable to find code object for all current devices|HIP error: shared object initialization failed|hipErrorSharedObjectInitFailed).*)",
            ),
            # a kernel library's own arch check (flashinfer, DeepGEMM, sgl-kernel), CUTLASS's
            # trap for an instruction of another generation; never a bare "Unsupported
            # architecture" (a CPU's: aarch64 on Grace hosts) nor nvcc's lower-case "Unsupported
            # gpu architecture 'compute_120'" (a build failure: jit-build-failed)
            pat(
                r"(?P<msg>.*(?:\bUnsupported (?:SM|sm|CUDA arch|GPU arch|GPU architecture|compute capability)\b|Arch conditional MMA instruction used without targeting appropriate compute capability).*)",
            ),
            # a kernel library's host-side assertion, with its C++/CUDA source location, that
            # this GPU's architecture has no kernel (DeepGEMM's "Assertion error
            # (/deepgemm/csrc/apis/attention.hpp:219): Unsupported architecture"); the source
            # location makes it a GPU kernel's, not a CPU's
            pat(
                r"(?P<msg>.*?\bAssertion (?:error|failed) \([^()\n]{1,300}?\.(?:hpp|cuh|cu|cpp|cc|h):\d{1,6}\): Unsupported (?:arch|architecture)\b.*)",
            ),
            # torch's own refusal of a GPU older than its builds ("… which is of cuda capability
            # 3.5. PyTorch no longer supports this GPU because it is too old.") and Triton's
            # ("… too old to be supported by the triton GPU compiler")
            pat(
                r"(?P<msg>.*(?:PyTorch no longer supports this GPU because it is too old|too old to be supported by the triton GPU compiler).*)",
            ),
            # a GPU generation as the floor, in any project's words: "FlashAttention only
            # supports Ampere GPUs or newer.", "requires Hopper GPUs or later", "only supported
            # on sm90 and above"
            pat(
                r"(?P<msg>.*(?:only supports?|only supported on|requires?|needs?) (?:NVIDIA |AMD )?(?P<gen>Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell|[Ss][Mm][ _]?\d{2,3}a?|CDNA ?\d|MI\d{3}\w?|gfx\d{3,4}\w?)(?: \(?sm_?\d+\)?)?(?: GPUs?| architectures?| devices?)?\s{1,3}(?:or|and)\s{1,3}(?:newer|later|above|higher)\b.*)",
            ),
            # an architecture the code has no table entry or kernel for, named by its token
            # (gfx1101, sm_120a, "120a"): "Unknown GPU architecture: gfx1101" (aiter),
            # "Unsupported arch sm_120a", or the table lookup itself failing (KeyError: '120a'
            # in deep_gemm's dispatch); a bare number is no arch token (an 'a'/'f' suffix is)
            pat(
                r"(?P<msg>.*?(?:\b(?:[Uu]nknown|[Uu]nsupported|[Uu]nrecognized|[Ii]nvalid) (?:GPU |CUDA |device |target |gfx )?(?:architecture|arch)\b:? ['\"]?(?P<arch>gfx\d{3,4}\w?|sm_?\d{2,3}[af]?\b|compute_\d{2,3}[af]?)|^KeyError: ['\"](?P<key>gfx\d{3,4}\w?|sm_?\d{2,3}[af]?|\d{2,3}[af])['\"]$).*)",
            ),
            # HIP's loader finding no code object for this GPU in a library's fat binary
            # (a ROCm build without this gfx target: rccl, torch, a wheel)
            pat(
                r"(?P<msg>.*(?:Cannot retrieve Static function|No compatible code objects? found for:? ?gfx\w+).*)",
            ),
            # a capability floor as a number: "Minimum capability: 89. Current capability: 86."
            # (vLLM's quantisation check), "compute capability >= 7.0"
            pat(
                r"(?P<msg>.*(?:[Mm]inimum (?:compute )?capability(?: required)?: ?|[Cc]apability >= ?)(?P<need>\d+(?:\.\d)?)\b.*)",
            ),
            # "<feature> requires a GPU with Compute Capability 8.9 or higher" in any
            # project's words: the needed capability, then "or higher/newer/above"
            pat(
                r"(?P<msg>.*[Cc]ompute [Cc]apability (?:of )?(?:>= ?)?(?P<need>\d+\.\d)\+? or (?:higher|above|newer|later|greater).*)",
            ),
            # a dtype or instruction the compiler refuses on this GPU generation (Triton's
            # "type fp8e4nv not supported in this architecture"); the line must speak of a GPU
            # or a GPU dtype (a CPU's architecture is no GPU's)
            pat(
                r"\A(?=.*(?:fp8|fp16|bf16|float8|dtype|GPU|CUDA|cuda|sm_\d|wgmma|[Tt]riton))"
                + r"(?P<msg>.*\bnot supported (?:in|on|by|for) (?:this|the current|your) (?:GPU |GPU's |device |CUDA )?(?:architecture|arch)\b.*)",
            ),
        ),
        defaults={"msg": "?", "sm": "?"},
        enrich=_enrich_arch,
        examples=(
            # not from the corpus: a kernel's own assertion on the GPU generation
            "RuntimeError: Assertion error (csrc/jit_kernels/impls/sm100_bf16_gemm.hpp:52): arch_major == 10",
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
            "UserWarning: NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.",
            # not from the corpus: ROCm's wording of the same cause (torch's c10/hip checks)
            "RuntimeError: HIP error: hipErrorInvalidDeviceFunction",
            # not from the corpus: ROCm's loader finding no code object for this gfx target
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036\nhipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
            # not from the corpus: a quantisation method's capability floor
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 86.",
            # not from the corpus: an arch token a dispatch table lacks, and HIP's loader
            "KeyError: 'sm_100f'",
            "RuntimeError: Unsupported arch sm_121a for this kernel",
            "ValueError: Unknown GPU architecture: gfx1201. Supported architectures: ['gfx90a', 'gfx942']",
            "hip_platform.cpp:110 : Cannot retrieve Static function, error: 98",
            "RuntimeError: This kernel only supports SM 80 and above",
            # not from the corpus: a Compute Capability floor in another project's words
            "ValueError: Marlin FP8 kernels need a GPU with compute capability 8.0 or newer; this GPU has 7.5",
            # not from the corpus: a generation as the floor (FA3's, DeepGEMM's wordings)
            "RuntimeError: FlashAttention-3 only supports Hopper GPUs or newer.",
            "AssertionError: DeepGEMM requires sm90 or above",
        ),
    ),
    Rule(
        id="cuda-oom",
        families=(
            # torch's OutOfMemoryError from any accelerator's allocator (CUDA, ROCm's HIP,
            # Ascend's NPU, Intel's XPU, Apple's MPS, the cudaMallocAsync backend's "Allocation
            # on device …"), in any wording: the device is named, not the host heap
            Family(
                ("OutOfMemoryError",),
                words=(
                    "CUDA",
                    "cuda",
                    "GPU",
                    "Tried to allocate",
                    "out of memory",
                    "HIP",
                    "NPU",
                    "XPU",
                    "MPS",
                    "device",
                ),
            ),
            # a runtime's own out-of-memory status, raised by any wrapper
            Family((), words=_DEVICE_OOM_CODES),
            *P._NO_ROOM_FAMILIES,
        ),
        title="out of GPU memory",
        summary="GPU {gpu} ran out of memory (tried to allocate {tried}, {free} free of {total})",
        fix="lower --mem-fraction-static (e.g. 0.85 -> 0.80), --max-running-requests or --chunked-prefill-size; check no other process uses the GPUs (`nvidia-smi`); the EAGLE-3 drafter and its CUDA graphs need memory outside the KV pool",
        doc=(
            'PyTorch could not allocate GPU memory (torch.OutOfMemoryError "CUDA out of memory"), '
            "or SGLang found no room left for the KV cache after the weights (its pool "
            "configurator asks for a larger --mem-fraction-static), or GPUs differ in free memory "
            "because another process holds some."
        ),
        patterns=(
            # torch's caching allocator, whatever the accelerator (CUDA, ROCm's HIP, Ascend's
            # torch_npu, Intel's XPU, Moore Threads' MUSA): "<DEV> out of memory. Tried to …"
            pat(
                r"(?P<dev>CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B)\. (?:GPU|NPU|XPU|Device) (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ [KMGT]?i?B) of which (?P<free>[\d.]+ [KMGT]?i?B) is free",
            ),
            pat(
                r"(?P<dev>CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory\. Tried to allocate (?P<tried>[\d.]+ [KMGT]?i?B) \((?:GPU|NPU|XPU|Device) (?P<gpu>\d+); (?P<total>[\d.]+ [KMGT]?i?B) total capacity; .*?(?P<free>[\d.]+ [KMGT]?i?B) free",
            ),
            pat(
                r"(?P<msg>(?:CUDA|HIP|NPU|XPU|MUSA|MLU) out of memory.*|MPS backend out of memory.*|(?:CUDA|HIP)(?: driver)? error: out of memory.*|(?:cuda|hip)Malloc\w{0,12} failed: out of memory.*|(?:CUBLAS|HIPBLAS|ROCBLAS)_STATUS_ALLOC_FAILED.*|NCCL WARN (?:Cuda|HIP|Hip) failure (?:\d+ )?'out of memory'.*|Allocation on device \d* ?would exceed allowed memory.*|(?:cuda|hip)ErrorMemoryAllocation.*|hipErrorOutOfMemory.*|UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY.*)",
                summary="GPU out of memory: {msg}",
            ),
            # the other frameworks' device allocators in their own words: TensorRT's builder
            # and runtime ("Error Code 2: OutOfMemory"), XLA's (JAX: "RESOURCE_EXHAUSTED: Out
            # of memory while trying to allocate N bytes"), TensorFlow's BFC allocator on a GPU
            # ("OOM when allocating tensor … on …/device:GPU:0")
            pat(
                r"(?P<msg>.*?(?:\bError Code \d{1,3}: OutOfMemory\b|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate\b|\bRESOURCE_EXHAUSTED: (?:Error allocating device buffer\b|XLA:TPU compile permanent error\. Ran out of memory in memory space hbm\b|Error loading program\b[^\n]{0,200}?\bAttempting to reserve\b)|\bHAMI-core ERROR\b[^\n]{0,120}?\]: Device \d+ OOM \d+ / \d+|\bResource exhausted: Failed to allocate request for\b|\bCUresult error: 2 \(out of memory\)|\bOOM when allocating tensor\b[^\n]{0,400}?\bdevice:(?:GPU|XLA_GPU):\d).*)",
                summary="GPU out of memory: {msg}",
            ),
            # Ray's report of a task whose own code raised OutOfMemoryError
            # ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() …", the
            # traceback below often cut): torch's device allocator, since Ray's own memory
            # monitor kills a task with a bare ray.exceptions.OutOfMemoryError, not wrapped so
            pat(
                r"(?P<msg>.*?\bRayTaskError\((?:torch\.)?(?:cuda\.)?OutOfMemoryError\): .*)",
                summary="GPU out of memory in a Ray task: {msg}",
            ),
            # a runtime status quoted with its runtime in brackets (OpenAI Triton's "Triton
            # Error [CUDA]: out of memory", on ROCm "[HIP]"), as any wrapper quotes it
            pat(
                r"(?P<msg>.*?\[(?:CUDA|HIP|ROCm|cuda|hip)\]:? out of memory.*)",
                summary="GPU out of memory: {msg}",
            ),
            # a runtime's "out of memory" status in a native engine's own log words: CUDA's
            # error 2 (cudaErrorMemoryAllocation) as llama.cpp/ggml prints it ("CUDA error 2
            # at ggml-cuda.cu:7949: out of memory"), TurboMind's "CUDA runtime error: out of
            # memory", HIP's the same; NCCL's device buffer refused ("Failed to CUDA calloc
            # 67108864 bytes": the memory fraction left nothing for NCCL)
            pat(
                r"(?P<msg>.*?\b(?:CUDA|HIP|cuda|hip|ROCm)(?: runtime| driver| API)? error(?: \d+)?(?: at \S+)?: out of memory.*)",
                summary="GPU out of memory: {msg}",
            ),
            # the code by number, as a library's own CUDA check prints it: CUresult 2
            # (CUDA_ERROR_OUT_OF_MEMORY, the driver API: cuMemCreate, cuMemAlloc) and the
            # runtime's error 2 (cudaErrorMemoryAllocation) named after its number (TensorRT's
            # "Cuda Error in allocate: 2 (out of memory)", a memory saver's "CUresult error
            # result=2 … func=cu_mem_create")
            pat(
                r"(?P<msg>.*?(?:\bCUresult(?: error)?\s{1,4}(?:result\s?=\s?)?2\b|\bCUDA_ERROR_OUT_OF_MEMORY\b|\bACL_ERROR_RT_MEMORY_ALLOCATION\b|\b(?:CUDA|Cuda|cuda|HIP|Hip|hip)(?: driver| runtime)? [Ee]rror in \w+: 2 \(out of memory).*)",
                summary="GPU out of memory (the runtime's out-of-memory code): {msg}",
            ),
            # the native engines' allocators in their own words: ggml's backend buffers (llama.cpp,
            # ollama: "failed to allocate CUDA0 buffer of size N", "unable to allocate ROCm0
            # buffer"), a CUDA check that names the call ("CUDA runtime error in
            # ::cudaMallocAsync(…): out of memory", TensorRT-LLM), TensorRT's allocator ("Error
            # Code 1: Cuda Runtime (out of memory)", "Requested amount of GPU memory … could not
            # be allocated"), Gaudi's device memory (PT_DEVMEM), Ascend's CANN code EL0004, AWS
            # Neuron's runtime ("Failed to allocate 512.000MB (usage: tensors) on ND 0:NC 0",
            # nrt_tensor_allocate's status 4, NRT_RESOURCE), a
            # kernel library's check that quotes CUDA's status after its own function
            # (FlashInfer's "BatchDecodeWithPagedKVCache failed with error out of memory")
            pat(
                r"(?P<msg>.*?(?:\b(?:failed to|unable to|cannot|could not) allocate (?:CUDA|ROCm|HIP|Vulkan|SYCL|MUSA|CANN|Metal)\d{0,3} buffer\b|\b[A-Z]\w{2,80} failed with error:? out of memory\b|\b(?:CUDA|HIP)(?: runtime| driver)? error in \S[^\n]{0,300}?: out of memory\b|\bError Code \d+: (?:Cuda|CUDA|HIP) (?:Runtime|Driver) \(out of memory\)|\bRequested amount of GPU memory \(\d+ bytes\) could not be allocated\b|\bMODULE:PT_DEVMEM Allocation failed\b|\bEL0004\b[^\n]{0,120}?Failed to allocate memory|\bFailed to allocate \d+ bytes on DEVICE for tensor\b|\bFailed to allocate [\d.]{1,12} ?[KMG]B \(usage: \w{1,20}\) on ND \d+:NC \d+|\bnrt_tensor_allocate status=4\b).*)",
                summary="GPU out of memory: {msg}",
            ),
            pat(
                r"(?P<msg>.*\bFailed to (?:CUDA|HIP|Cuda|Hip) (?:calloc|malloc|host alloc|hostAlloc)\w{0,8}(?: async)? (?P<tried>\d+) bytes.*)",
                summary="GPU out of memory (NCCL could not allocate {tried} bytes on the device): {msg}",
                fix="the memory SGLang reserves (--mem-fraction-static) leaves NCCL no room for its buffers: lower --mem-fraction-static (e.g. 0.95 -> 0.88) and check no other process uses the GPUs (`nvidia-smi`)",
                # NCCL's own detail of its "unhandled cuda error": the NCCL error is this OOM
                explains=("nccl-error",),
            ),
            *said(
                "not-enough-memory",
                anywhere=True,
                suffix="not-enough-memory-value",
                summary="no GPU memory left for the KV cache after the weights (mem_fraction_static={mfs})",
                fix="raise --mem-fraction-static (e.g. to 0.88-0.92) so the pool gets room, or free GPU memory: other processes, a smaller {graph_max_bs}, or more GPUs (--tp-size)",
            ),
            # an engine's start-up check that the GPU has the memory it was told to take (vLLM:
            # "Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU
            # memory utilization (0.9, 125.75 GiB)"): another process holds the rest
            pat(
                r"(?P<msg>.*?\b[Ff]ree (?:GPU |device |accelerator )?memory\b.{0,80}?\bis (?:less|lower|smaller) than (?:the )?(?:desired|requested|configured|target)\b.{0,20}?\bmemory utili[sz]ation\b.*)",
                summary="the GPU has less free memory than the engine was told to take: {msg}",
                fix="another process holds GPU memory (`nvidia-smi`): stop it, or lower the memory fraction the engine takes (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static)",
            ),
            # a memory profile that leaves the KV cache a negative size (vLLM's worker: "memory
            # reserved for KV Cache is -1.2GiB", "Available KV cache memory: -2.77 GiB"), or a
            # warm-up that finds no room for its batch (TGI's "Not enough memory to handle 4096
            # prefill tokens"): the weights and activations take all the memory given
            pat(
                r"(?P<msg>.*?\b(?:reserved for (?:the )?KV [Cc]ache is -\d|KV[ _-]?[Cc]ache (?:memory|size|space)\b[^\n]{0,30}?(?:is|:|=) ?-\d|[Nn]ot enough (?:GPU |device |CUDA )?memory to handle \d+ (?:\w+ )?tokens\b).*)",
                summary="after the weights, too little GPU memory is left for the KV cache or the warm-up batch: {msg}",
                fix="give the engine more memory (a higher memory fraction), lower the batch / prefill token budget (TGI --max-batch-prefill-tokens) or the context length, or use more / larger GPUs",
            ),
            pat(
                r"(?P<msg>.*(?:larger than the maximum number of tokens that can be stored in KV cache|No available memory for the cache blocks|Insufficient memory for KV cache|KV cache is needed, which is larger than the available KV cache memory).*)",
                summary="after the weights, too little GPU memory is left for the KV cache: {msg}",
                fix="give the KV cache more room (a higher memory fraction), lower the context length, or use more / larger GPUs",
            ),
            *said(
                "kv-no-room",
                anywhere=True,
                summary="the loaded weights (target + drafter) leave no GPU memory for the KV cache at mem_fraction_static={mfs}",
                fix="raise --mem-fraction-static above {suggested} as SGLang says (the drafter's weights count too), or free GPU memory / use more GPUs (--tp-size)",
            ),
            *said(
                "memory-unbalanced",
                anywhere=True,
                summary="GPUs have unequal free memory: {msg}",
                fix="another process uses some of the GPUs: stop it (`nvidia-smi`), then start again",
            ),
            # a native engine's check of a device allocation call whose status the paste cut
            # off (a terminal or a forum wrapped the line inside the call's arguments): the
            # allocator's own entry point failing names the cause only weakly, so it counts
            # only when nothing else is found
            pat(
                r"(?P<msg>.*?\b(?:CUDA|HIP|Cuda|Hip)(?: runtime| driver)? error in :{0,2}(?:cuda|hip|cu)(?:Malloc|MemAlloc|MallocAsync|MemCreate|MallocManaged|HostAlloc)\w{0,12}\((?:(?!\): )[^\n]){0,200}$)",
                role=FALLBACK,
                summary="a GPU memory allocation failed (the line is cut before its status; out of memory is the usual one): {msg}",
            ),
        ),
        preflight_rule=None,
        defaults={"gpu": "?", "tried": "?", "free": "?", "total": "?", "msg": "?", "mfs": "?"},
        examples=(
            # not from the corpus: TensorRT's, XLA's and TensorFlow's allocators
            "[TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)",
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.",
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[32,4096,4096] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            # not from the corpus: OpenAI Triton's launcher status, and TurboMind's malloc check
            # cut by a wrap in its arguments
            "RuntimeError: Triton Error [CUDA]: out of memory",
            "[TM][ERROR] CUDA runtime error in ::cudaMallocAsync(&ptr, size, stream_",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 139.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 138.69 GiB memory in use.",
            example("not-enough-memory")
            + sglang.NEWEST.message("not-enough-memory-value").format(mfs="0.6"),
            # not from the corpus: ROCm's HIP allocator, the same torch message
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.50 GiB. GPU 5 has a total capacity of 191.98 GiB of which 2.12 GiB is free.",
            # not from the corpus: llama.cpp's newer wording, and HIP's through ggml
            "CUDA error: out of memory\n  current device: 1, in function ggml_cuda_pool_malloc at ggml-cuda.cu:402",
            "ggml_cuda_compute_forward: HIP error 2 at ggml-cuda.cu:2311: out of memory",
            # not from the corpus: NCCL's device allocation, the malloc form (alloc.h)
            "misc/alloc.h:134 NCCL WARN Failed to CUDA malloc 33554432 bytes",
            # not from the corpus: the driver API's code by number (a cuMemCreate wrapper), and
            # TensorRT's runtime check
            "[vmm_allocator.cpp] CUresult error result=2 file=vmm_allocator.cpp func=cuMemCreate line=88",
            "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY",
            "ERROR: ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out of memory)",
            # not from the corpus: an engine's free-memory check, and a negative KV budget
            "ValueError: Free memory on device cuda:3 (12.1/79.25 GiB) on startup is less than desired GPU memory utilization (0.92, 72.91 GiB).",
            "INFO worker.py:241] model weights take 14.99GiB; non_torch_memory takes 0.12GiB; PyTorch activation peak memory takes 2.19GiB; the rest of the memory reserved for KV Cache is -0.31GiB.",
            "RuntimeError: Not enough memory to handle 8192 total tokens. You need to decrease `--max-batch-total-tokens`",
            # not from the corpus: ggml's allocator (llama.cpp, ollama), TensorRT-LLM's CUDA
            # check, TensorRT's allocator, vLLM V1's KV budget
            "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1212153856",
            "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory (/src/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
            "[TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)",
            "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.86 GiB).",
        ),
    ),
    Rule(
        id="cuda-graph-capture-failed",
        families=(
            # CUDA refused an operation during stream capture, whatever raised it or wraps it
            # (torch.compile's InternalTorchDynamoError/BackendCompilerFailed carry the
            # RuntimeError's words)
            Family((), words=_CAPTURE_REFUSED),
        ),
        signals=(Signal(("cuda",), words=_CAPTURE_REFUSED),),
        title="CUDA graph capture failed",
        summary="CUDA graph capture failed: {msg}",
        fix="lower --mem-fraction-static (e.g. 0.8), or {graph_max_bs} (e.g. 16); last resort {graph_disable} (slow). With EAGLE-3 the draft and verify graphs need extra memory",
        doc=(
            "SGLang captures CUDA graphs (target verify/decode, draft decode/extend) after the KV "
            "cache is allocated; the capture failed, usually out of memory (model_executor/"
            "runner/decode_cuda_graph_runner.py, speculative/eagle_draft_*_cuda_graph_runner.py, "
            "which print SGLang's list of possible solutions)."
        ),
        patterns=(
            # SGLang's wrapper names the category only when no line names the cause it wraps
            # (the error it carries, on this line or the next ones: an arch assertion, a
            # library too old, an OOM): the root wins over its wrapper
            *said(
                "cuda-graph-capture-failed",
                anywhere=True,
                role=FALLBACK,
                summary="CUDA graph capture failed: {error}",
            ),
            # the wrapper's words with what it wrapped cut off (a paste, a terminal width)
            *(
                pat(
                    r"(?P<msg>" + re.escape(m.literals()[0].rstrip(": ")) + r")[:.]?\s*$",
                    role=FALLBACK,
                    summary="CUDA graph capture failed (the log does not show the error it wrapped)",
                )
                for m in sglang.all_messages("cuda-graph-capture-failed")
            ),
            *said("prefill-graph-failed", anywhere=True),
            # the piecewise (torch.compile) CUDA graph of releases that turn it on by default:
            # SGLang logs what failed and advises turning it off; the root, when a line names
            # it, wins over this wrapper
            *said(
                "piecewise-graph-failed",
                anywhere=True,
                role=FALLBACK,
                summary="SGLang's piecewise CUDA graph failed: {error}",
                fix="start without the piecewise CUDA graph (--disable-piecewise-cuda-graph, as SGLang's message advises) and report the error with the model and backend to SGLang",
            ),
        ),
        defaults={"msg": "?", "error": "?"},
        examples=(
            example(
                "cuda-graph-capture-failed",
                error="CUDA error: operation not permitted when stream is capturing",
            ),
        ),
    ),
)
