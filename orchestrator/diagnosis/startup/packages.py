"""Start-up rules, as data: the model, the Hugging Face Hub and the Python packages: imports, Hub access and auth, weights (architectures: `architectures`).

Assembled in priority order by `orchestrator.diagnosis.startup`."""

from __future__ import annotations

from orchestrator.diagnosis.enrich import (
    _enrich_hf_auth,
    _enrich_import,
)
from orchestrator.diagnosis.model import (
    _EXC,
    FALLBACK,
    Family,
    Rule,
    Signal,
    example,
    pat,
    said,
    under,
)
from orchestrator.diagnosis.startup.patterns import (
    _BUILD_TOOLS,
    _CUDA_RUNTIME_LIB,
    _DRIVER_LIBS,
    _HUB_REFUSED,
    _INSTALL_HINTS,
    _NOT_A_FILE,
    _NOT_BENIGN,
    _NOT_DRIVER_LIB,
    _UPGRADE_HINTS,
)
from orchestrator.sglang import code

__all__ = ["RULES"]

# an HTTP 429 from the model hub, in any client's words: what to change
_HUB_RATE_LIMITED = (
    "the hub answered 429 Too Many Requests: download the model ahead (authenticated: HF_TOKEN "
    "raises the limit) and point the server at the local files (--model-path), or wait and restart"
)

RULES: tuple[Rule, ...] = (
    Rule(
        id="python-import-error",
        families=(
            Family(("ModuleNotFoundError", "ImportError")),
            # a distribution the program asks for by name is not installed (importlib.metadata's
            # PackageNotFoundError, pkg_resources' DistributionNotFound; transformers' version
            # check says "The 'X' distribution was not found and is required by this application")
            Family(("PackageNotFoundError", "DistributionNotFound")),
            # a wrapper that carries Python's words in its message (transformers' lazy module:
            # "Failed to import transformers.models.x because of the following error ...:
            # No module named 'y'")
            Family(
                (
                    "RuntimeError",
                    "OSError",
                    "ValueError",
                    # a framework's own exception for a dependency it could not import
                    # (BentoML's MissingDependencyException, others' MissingDependencyError)
                    "MissingDependencyException",
                    "MissingDependencyError",
                ),
                words=(
                    "No module named '",
                    "cannot import name '",
                    # its own words whatever the error under it (an attribute a newer pydantic
                    # dropped, a broken dependency): a module failed to import
                    "because of the following error (look up to see its traceback)",
                ),
            ),
            # an import that failed earlier, its exception kept in the module's name and used
            # later as if it were the module ("'ModuleNotFoundError' object has no attribute
            # 'OpenAI'": a lazy or guarded import)
            Family(
                ("AttributeError",),
                words=("'ModuleNotFoundError' object", "'ImportError' object"),
                summary="a package failed to import earlier and its error is used as the module: {exc}: {msg}",
            ),
            # the dynamic loader missing a shared library, raised as an OSError (ctypes' CDLL,
            # torch.ops.load_library) rather than an ImportError; the NVIDIA driver's own
            # libraries are gpu-unavailable's
            Family(
                ("OSError",),
                words=("cannot open shared object file",),
                unless=tuple(f"lib{name}.so" for name in _DRIVER_LIBS),
            ),
            # an installed package's module-level code failing as it is imported (a class body
            # or a decorator that the installed release of what it imports no longer accepts:
            # transformers 5 making configs dataclasses, an attribute a newer torch removed):
            # the installed versions do not fit together, whatever the words
            Family(
                ("TypeError", "AttributeError", "NameError"),
                site_functions=("<module>",),
                site_frames=("site-packages/", "dist-packages/", *code.SRT_TREE),
                summary="an installed package failed while it was being imported (its code does not fit the installed release of what it imports): {exc}: {msg}",
            ),
            # a package missing, in the words of whoever needs it rather than Python's ("Petit
            # is not installed. Please install it with `pip install petit-kernel`"): a missing
            # package named in any wording, unless it asks for another version
            Family(
                (
                    "ValueError",
                    "RuntimeError",
                    "AssertionError",
                    "Exception",
                    "OSError",
                    "NotImplementedError",
                    "AttributeError",
                    "EnvironmentError",
                ),
                words=_INSTALL_HINTS,
                unless=_UPGRADE_HINTS,
                summary="a package this configuration needs is not installed: {exc}: {msg}",
                fix="install what the message names into the unit's venv, as the service user's Python sees it (`<venv>/bin/pip install ...`, the command the message gives), or drop the flag that needs it; then check `<venv>/bin/python -c 'import sglang.launch_server'`",
            ),
            # transformers refusing a config class a package registers because transformers
            # now ships its own for that model: the package is older than transformers
            Family(
                ("ValueError",),
                words=(
                    "is already used by a Transformers model",
                    "is already used by a Transformers config",
                ),
            ),
        ),
        # an import failure reported by a supervisor, a worker pool or a launcher in its own
        # ERROR line (no exception line of its own): Python's words, any wrapper
        signals=(
            Signal(("error-level",), words=("cannot import name '", "No module named '")),
            Signal(
                ("error-level",),
                words=(
                    "is already used by a Transformers model",
                    "is already used by a Transformers config",
                ),
            ),
            # a library's own error line that a module it needs is missing ("ERROR:
            # auto_gptq…:exllama_kernels not installed.", "… is not installed, please install it")
            Signal(("error-level",), words=(" not installed.", " is not installed,")),
        ),
        title="a Python module is missing or broken",
        summary="Python could not import {module}: {msg}",
        fix="{fixhint}",
        doc=(
            "The interpreter of the unit lacks a module (ModuleNotFoundError / ImportError), "
            "often because ExecStart uses another Python than the one SGLang was installed into, "
            "or a compiled extension (sgl_kernel, flashinfer) does not match torch/CUDA "
            '("undefined symbol", "cannot open shared object file").'
        ),
        patterns=(
            # bitsandbytes' CUDA setup (< 0.43) that found no CUDA library it could load
            pat(
                r"(?P<msg>.*?\bCUDA Setup failed despite GPU being available\b.*)",
                module="bitsandbytes",
            ),
            # a library of the CUDA runtime/toolkit of one major version that the loader cannot
            # find (libnvrtc.so.12, libcudart.so.11.0, libcublasLt.so.13, ...), whoever needs it
            # (sgl_kernel, flashinfer, torch, a llama.cpp wheel): a missing shared library is an
            # import failure (not the NVIDIA driver's own libcuda.so.1 / libnvidia-ml.so.1, that
            # is gpu-unavailable); the fix names both remedies (enrich)
            pat(
                r"^(?:[-*]\s*)?\s*(?:[\w.]+\.)?(?P<exc>ImportError|OSError|RuntimeError): (?:.{0,200}?: )?(?P<msg>(?P<lib>"
                + _CUDA_RUNTIME_LIB
                + r"[\w-]*\.so\.(?P<cuda_major>\d+))[\w.]*: cannot open shared object file.*)",
            ),
            # the same, in any wrapper's words or none (a bare loader line, a quoted one,
            # cuda-python's "Failed to dlopen libcudart.so.12", cuDNN's "Could not load
            # library libcudnn_cnn_infer.so.8"): the library's name and the loader's words
            pat(
                r"(?<![\w.-])(?P<msg>(?P<lib>"
                + _CUDA_RUNTIME_LIB
                + r"[\w-]*\.so\.(?P<cuda_major>\d+))[\w.]*: ?cannot open shared object file.*)",
            ),
            pat(
                r"(?P<msg>(?:[Ff]ailed to dlopen|[Cc]ould not load library|[Uu]nable to load) (?P<lib>"
                + _CUDA_RUNTIME_LIB
                + r"[\w-]*\.so\.(?P<cuda_major>\d+))[\w.]*.*)",
            ),
            # the same library named first, then the loader's failure in a native library's
            # own words (CTranslate2's "Library libcublas.so.11 is not found or cannot be
            # loaded", "libcudnn.so.9 could not be loaded", "… was not found")
            pat(
                r"(?P<msg>.*?(?<![\w.-])(?P<lib>"
                + _CUDA_RUNTIME_LIB
                + r"[\w-]*\.so\.(?P<cuda_major>\d+))[\w.]*'? (?:is not found|was not found|not found|is not found or cannot be loaded|cannot be loaded|could not be loaded|failed to load)\b.*)",
            ),
            # any other shared library the loader cannot open, in a wrapper's words rather than
            # an exception line ("Could not load bitsandbytes native library: …/libbitsandbytes_
            # cpu.so: cannot open shared object file"): a package's own native part missing
            # (not built, another platform's wheel); a fallback, the driver's libraries excluded
            pat(
                _NOT_BENIGN
                + r"(?P<msg>.*?(?<![\w.-])(?P<lib>(?:[\w.+-]{0,300}/)?"
                + _NOT_DRIVER_LIB
                + r"lib[\w+-]{1,120}\.so[\w.]{0,20}): cannot open shared object file.*)",
                role=FALLBACK,
                summary="a package's native library cannot be loaded ({lib}): {msg}",
                fix="{lib} is not there (or cannot be loaded): install the wheel of the package that ships it built for this platform and CUDA (a source checkout must be built first: its build step makes the library), and check `ldd {lib}` for what it needs",
            ),
            # a package's own check that another is installed, told in its words with the
            # install command (LangChain's "Could not import transformers python package …
            # Please install it with `pip install transformers`", transformers' requires_backends
            # "… requires the protobuf library but it was not found in your environment")
            pat(
                r"(?P<msg>.*?\b(?:Could not|Unable to|Cannot|Can't|Failed to) import (?P<module>[\w.-]{2,80})(?: python)? (?:package|library|module)\b.{0,300}?\b(?:pip install|install it|conda install)\b.*)",
            ),
            pat(
                r"(?P<msg>.*?\brequires the (?P<module>[\w.-]{2,80}) library but it was not found in your environment\b.*)",
            ),
            # a feature's own check for an optional package, in its words: what needs it, then
            # "Please install" it ("awq quantization requires some operators from vllm. Please
            # install vllm by `pip install vllm`"); a version floor (">=", "upgrade") is not this
            pat(
                _EXC
                + r"(?P<exc>\w*(?:Error|Exception)): (?![^\n]{0,400}?(?:>=|[Uu]pgrade|\bversion\b| -U ))(?P<msg>.*?\b(?:requires|needs) (?:(?:some|the) [\w ]{1,40}? (?:from|of) )?(?P<module>[\w.-]{2,60})\b[^\n]{0,200}?\b[Pp]lease install (?:it|them|(?P=module))\b.*)",
            ),
            # a name that the installed release spells in another case (transformers 5's
            # PreTrainedConfig for 4.x's PretrainedConfig): Python suggests the same name in
            # other capitals, so code written for one release runs against another
            pat(
                r"(?P<msg>(?:NameError: name|AttributeError: module '(?P<module>[\w.]{1,200})' has no attribute) '(?P<name>\w{1,200})'(?: is not defined)?\. Did you mean: '(?i:(?P=name))'\?.*)",
                role=FALLBACK,
                summary="{name} is spelled otherwise in the installed release (Python suggests the same name in other capitals): the code and the package it uses are of releases that do not fit: {msg}",
            ),
            # a compiled extension's name undefined where it is used: the package imported it
            # in a `try: import x_ext except ImportError` at load time and went on without it
            # (AutoAWQ's awq_ext, exllama's exllama_ext, a *_C / *_cuda / *_kernels module), so
            # the extension did not import (not built, another torch / CUDA, not installed)
            pat(
                _EXC
                + r"(?P<exc>NameError): (?P<msg>name '(?P<module>\w{0,60}?(?:_ext|_C|_cuda|_kernels?|_ops|_cpp|_inference_engine))' is not defined.*)",
                fixhint="the compiled extension {module} did not import when its package loaded (the package hid the ImportError): reinstall the package's kernels built for this torch and CUDA (e.g. autoawq-kernels for awq_ext), then check `python -c 'import {module}'` for the real error",
            ),
            # a platform plugin's import of its device package failing, said on a line of its
            # own ("Failed to import torch_npu."): the reason follows or was not logged
            pat(
                r"^\s*(?P<msg>(?:Failed|Unable) to import (?P<module>\w{2,80}(?:\.\w{1,80}){0,8})\.?)\s*$",
                role=FALLBACK,
            ),
            pat(
                r"Error while finding module specification for '(?P<spec>[^']+)' \((?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)')\)",
            ),
            pat(
                _EXC
                + r"(?P<exc>ModuleNotFoundError): (?P<msg>No module named '(?P<module>[^']+)'.*)",
            ),
            pat(
                _EXC
                + r"(?P<exc>ImportError): "
                + _NOT_DRIVER_LIB
                + r"(?P<msg>(?:cannot import name '(?P<name>[^']+)' from '(?P<module>[^']+)'|(?P<lib>\S+?): cannot open shared object file).*)",
            ),
            pat(_EXC + r"(?P<exc>ImportError): " + _NOT_DRIVER_LIB + r"(?P<msg>.+)"),
            # sgl_kernel's loader gave up: a fallback, so that the cause it lists under it (a
            # missing CUDA library, an undefined symbol) names the diagnosis when logged
            pat(
                r"(?P<msg>\[sgl_kernel\] CRITICAL: Could not load any common_ops library!?)",
                module="sgl_kernel",
                critical="1",
                role=FALLBACK,
            ),
            pat(r"^\S*python[\d.]*: (?P<msg>No module named (?P<module>\S+))$"),
            # an import that failed, told in a wrapper's own words with Python's ("Encountered
            # exception while importing decord: No module named 'decord'", "Failed to import
            # from vllm._C with ModuleNotFoundError(...)"): a fallback, so that any cause
            # logged elsewhere wins, and never on a warning about an optional package
            pat(
                _NOT_BENIGN
                + r"(?!.*(?:WARNING|Warning|warning|not available|will not be|optional|[Ss]kipping))(?P<msg>.*?\b(?:[Ee]xception|[Ee]rror|[Ff]ailed|[Cc]ould not|[Cc]annot|[Uu]nable to)\b.{0,200}?\bNo module named '(?P<module>[^']{1,200})'.*)",
                role=FALLBACK,
            ),
            # the same for a name a module lacks ("Model initialization failed: cannot import
            # name 'Qwen3Config' from 'transformers'"): the installed release is older or newer
            # than what imports it
            pat(
                _NOT_BENIGN
                + r"(?!.*(?:WARNING|Warning|warning|not available|will not be|optional|[Ss]kipping))(?P<msg>.*?\b(?:[Ee]xception|[Ee]rror|[Ff]ailed|[Cc]ould not|[Uu]nable to)\b.{0,200}?\bcannot import name '(?P<name>[^']{1,200})' from '(?P<module>[^']{1,200})'.*)",
                role=FALLBACK,
            ),
            # Python's words alone on a line, as a worker's logger or a supervisor relays them
            # ("(RayWorker pid=53626) No module named 'transformers_modules'")
            pat(
                r"^(?:[(\[][^()\[\]\n]{1,80}[)\]] ?){0,3}(?P<msg>No module named '(?P<module>[^']{1,200})'\s*)$",
                role=FALLBACK,
            ),
        ),
        defaults={"module": "", "msg": "?", "critical": ""},
        enrich=_enrich_import,
        examples=(
            "/opt/sglang/bin/python3: Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
            "ModuleNotFoundError: No module named 'sgl_kernel'",
            # a wrapper's own words around Python's (not from the corpus)
            "ERROR 05-02 10:11:12 [registry.py:412] Error in inspecting model architecture 'Qwen2VLForConditionalGeneration': No module named 'qwen_vl_utils'",
            # not from the corpus: a package's module-level code under a newer torch, and a
            # package registering a config that transformers now ships itself
            under(
                "/opt/venv/lib/python3.12/site-packages/some_kernels/ops.py",
                "<module>",
                "AttributeError: module 'torch.library' has no attribute 'register_fake'",
            ),
            "ValueError: 'deepseek_v4' is already used by a Transformers config, pick another name.",
            # not from the corpus: another LangChain integration's check, transformers' backend
            # check, a CUDA library in CTranslate2's words, a package's own native library
            "ImportError: Could not import sentence_transformers python package. Please install it with `pip install sentence-transformers`.",
            # not from the corpus: a feature's own check for its optional package (the family)
            "ValueError: fp8 block quantization requires the deep_gemm kernels. Please install them with `pip install deep-gemm`.",
            "ImportError: LlamaTokenizer requires the protobuf library but it was not found in your environment. Checkout the instructions on the installation page of its repo.",
            "RuntimeError: Library libcudnn_ops.so.9 is not found or cannot be loaded",
            "Could not load the native library: /opt/venv/lib/python3.12/site-packages/some_kernels/libsome_kernels_cuda126.so: cannot open shared object file: No such file or directory",
            "Failed to import intel_extension_for_pytorch.",
            # not from the corpus: a package used its compiled extension after its import failed
            "NameError: name 'exllamav2_ext' is not defined",
            # not from the corpus: transformers' lazy module over an error that is not Python's
            # import words (a dependency of another release)
            "RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the following error (look up to see its traceback):\nmodule 'torch' has no attribute 'compiler'",
            # not from the corpus: a name renamed between releases, looked up on the module
            "AttributeError: module 'transformers' has no attribute 'PreTrainedConfig'. Did you mean: 'PretrainedConfig'?",
            # the loader's words with no exception around them (not from the corpus: cuDNN's)
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
        ),
    ),
    Rule(
        id="hf-auth",
        families=(
            Family(("GatedRepoError",)),
            Family(("HfHubHTTPError", "RepositoryNotFoundError"), words=_HUB_REFUSED),
            # a generic HTTP client's error is the Hub's only when it names the Hub
            Family(
                ("HTTPError", "OSError"),
                words=_HUB_REFUSED,
                and_words=(
                    "huggingface.co",
                    "hf.co",
                    "hf-mirror.com",
                    "gated repo",
                    "Hugging Face",
                ),
            ),
            # ... or when it was raised under the Hub's client (huggingface_hub's
            # hf_raise_for_status re-raising requests'/httpx's 401/403, whatever the message)
            Family(
                ("HTTPError", "HTTPStatusError", "HfHubHTTPError", "OSError"),
                words=_HUB_REFUSED,
                frames=code.HUB_CLIENT_PACKAGES,
                both=True,
            ),
        ),
        title="the Hugging Face repo is gated or needs a token",
        summary="{repo} needs an authorised Hugging Face token: {msg}",
        fix="{fixhint}",
        doc=(
            "The model (or drafter) is a gated or private Hub repo and the service has no token "
            'with access: "Cannot access gated repo for url …", "… is gated. You must be '
            'authenticated to access it", GatedRepoError, 401/403 from huggingface.co. The '
            "service reads HF_TOKEN from its environment file, not from a login shell."
        ),
        patterns=(
            pat(
                r"(?P<msg>.*Cannot access gated repo for url (?P<url>\S*?huggingface\.co/(?:api/models/)?(?P<repo>[\w.-]+/[\w.-]+))\S*.*)",
            ),
            pat(
                r"(?P<msg>.*(?:Repo model|Access to model) (?P<repo>[\w.-]+/[\w.-]+) is (?:gated|restricted).*)",
            ),
            # the same refusals with the URL or repo id cut or redacted by whoever posted the
            # log ("Cannot access gated repo for url https://huggingface.co/ ...", "Access to
            # model {model_id} is restricted"), and huggingface_hub's own sentence for it
            # (errors.py: "... You must have access to it and be authenticated to access it.")
            pat(
                r"(?P<msg>.*(?:\bCannot access gated repo\b|\b(?:Repo model|Access to model) \S{1,300} is (?:gated|restricted)\b|[Yy]ou must (?:have access to it and )?be authenticated to access it).*)",
            ),
            pat(
                _EXC + r"(?P<msg>(?:GatedRepoError|huggingface_hub\.errors\.GatedRepoError): .*)",
            ),
            pat(
                r"(?P<msg>.*\b(?:401|403) Client Error.*(?:huggingface\.co|hf-mirror\.com)/(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*)",
            ),
            # the Hub (or hf-mirror.com, the mirror HF_ENDPOINT often names) refused (401/403)
            # a request from any client, in its own words: Rust's
            # hf-hub "Status(403, Response[... url: https://huggingface.co/...])", httpx's
            # "Client error '401 Unauthorized' for url 'https://huggingface.co/...'",
            # "HTTP Error 403: Forbidden ... huggingface.co/...", Node's "status code 401"
            pat(
                r"\A(?=.{0,8192}?(?:Unauthorized|Forbidden|[Ss]tatus|HTTP|[Cc]lient error))(?P<msg>(?>.*?(?<![\w.:/-])(?P<status>401|403)(?![\w.:/-])).*?(?:huggingface\.co|hf\.co|hf-mirror\.com)/(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*)",
                ("huggingface.co", "hf.co", "hf-mirror.com"),
            ),
            # the same, the URL first: "<url>: status code 403", "<url> (HTTP status 401)"
            pat(
                r"\A(?P<msg>(?>.*?(?:huggingface\.co|hf\.co|hf-mirror\.com)/)(?>(?:api/models/)?)(?P<repo>[\w.-]+/[\w.-]+)"
                + _NOT_A_FILE
                + r".*?\b(?:[Ss]tatus(?: code)?|HTTP(?: status)?)[:= ]{1,3}(?P<status>401|403)\b.*)",
                ("huggingface.co", "hf.co", "hf-mirror.com"),
            ),
            # the Hub refusing the token itself: it then answers "Repository Not Found" for any
            # repo (public ones too), so that line is this one's consequence
            pat(
                r"(?P<msg>.*(?:Invalid (?:user|access) token|Invalid credentials in Authorization header).*)",
                explains=("model-not-found",),
            ),
        ),
        preflight_rule="model-path-hub",
        defaults={"msg": "?", "repo": ""},
        enrich=_enrich_hf_auth,
        examples=(
            "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.",
            "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it.",
            # other HTTP clients' words for the Hub's 401/403 (not from the corpus)
            "huggingface_hub.errors.HfHubHTTPError: Client error '401 Unauthorized' for url 'https://huggingface.co/api/models/meta-llama/Llama-3.1-8B/revision/main'",
            "Error: request error: https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json: status code 403",
            # not from the corpus: a bad HF_TOKEN, which the Hub answers with "not found"
            "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-0)\n\n"
            "Repository Not Found for url: https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json.\n"
            "Invalid user token.",
        ),
    ),
    Rule(
        id="hf-hub-unreachable",
        families=(
            Family(("LocalEntryNotFoundError", "OfflineModeIsEnabled")),
            Family(
                (
                    "ConnectionError",
                    "MaxRetryError",
                    "ConnectTimeout",
                    "ReadTimeout",
                    "NameResolutionError",
                    "ConnectTimeoutError",
                    # the same failures as httpx, aiohttp, socket and ssl name them
                    "ConnectError",
                    "ReadError",
                    "ClientConnectorError",
                    "gaierror",
                    "SSLError",
                    "ProxyError",
                    # a download cut off half-way (the connection, not the repo)
                    "ConnectionResetError",
                    "ConnectionRefusedError",
                    "RemoteDisconnected",
                    "ChunkedEncodingError",
                    "IncompleteRead",
                    "ProtocolError",
                ),
                words=("huggingface.co", "hf.co", "HF_HUB_OFFLINE"),
                frames=("huggingface_hub/",),
                # transformers' "… is not a local folder and is not a valid model identifier
                # listed on 'https://huggingface.co/models'" names the Hub but says it answered
                # (the id does not exist): model-not-found's
                unless=("valid model identifier",),
            ),
            # the Hub (or its CDN) refusing more downloads for now: an HTTP 429 as any client
            # raises it (httpx's "Client error '429 Too Many Requests'", requests' and
            # huggingface_hub's "429 Client Error: Too Many Requests"), whether or not the
            # message names the host: at start-up it is the weights or tokenizer download
            Family(
                ("HTTPStatusError", "HTTPError", "HfHubHTTPError"),
                words=("429 Too Many Requests", "429 Client Error"),
                summary="the model hub rate-limited the download (HTTP 429): {exc}: {msg}",
                fix=_HUB_RATE_LIMITED,
            ),
            # transformers raises OSError for the Hub unreachable and for a missing model alike
            # (the latter names huggingface.co too, as where to look): only a connection word
            # makes it this family
            Family(
                ("OSError",),
                words=("huggingface.co", "hf.co", "HF_HUB_OFFLINE"),
                frames=("huggingface_hub/",),
                and_words=(
                    "connect",
                    "Connection",
                    "timed out",
                    "Timeout",
                    "offline",
                    "network",
                    "Network",
                    "unreachable",
                    "resolve host",
                    "name resolution",
                    "proxy",
                    "Proxy",
                    "SSL",
                    "certificate",
                    "Max retries",
                    "internet",
                ),
            ),
        ),
        title="the Hugging Face Hub cannot be reached",
        summary="the model had to come from the Hugging Face Hub, which is unreachable: {msg}",
        fix="download the model (and drafter) ahead and point --model-path / --speculative-draft-model-path at the local directories, or allow outbound HTTPS to huggingface.co (proxy: HTTPS_PROXY in the unit's Environment=); with HF_HUB_OFFLINE=1 the files must already be in HF_HOME",
        doc=(
            "A Hub id (not a local path) was given and the host is offline, behind a proxy, or "
            "has HF_HUB_OFFLINE=1 with an empty cache. huggingface_hub / transformers print "
            "\"We couldn't connect to 'https://huggingface.co' …\", LocalEntryNotFoundError, or "
            "a requests ConnectionError naming huggingface.co."
        ),
        patterns=(
            # a downloader's own line for an HTTP 429 (llama.cpp's "get_repo_files: error: GET
            # failed (429)"): the hub rate-limited the download
            pat(
                r"(?P<msg>.*?\b(?:GET|HEAD) (?:request )?failed \(429\).*)",
                fixhint=_HUB_RATE_LIMITED,
            ),
            # the Hub (or a gateway in front of it) answering with a server error: 5xx for a
            # huggingface.co URL, in huggingface_hub's or requests' words, quoted anywhere
            pat(
                r"\A(?P<msg>.{0,300}?\b(?P<status>50[0234]) Server Error:.{0,200}? for url: https?://(?:[\w-]+\.)?(?:huggingface\.co|hf\.co|hf-mirror\.com)\b.*)",
            ),
            pat(
                r"(?P<msg>We couldn't connect to '(?P<url>https?://[^']+)'.*)",
            ),
            # huggingface_hub's check after a download (file_download.py): fewer bytes arrived
            # than the Hub announced, the connection (or a proxy, a CDN) cut it short
            # (not more bytes than announced: a mirror whose metadata is wrong, the file whole)
            pat(
                r"(?P<msg>.*?\bConsistency check failed: file should be of size (?:"
                + "|".join(rf"\d{{{k}}} but has size \d{{1,{k}}}" for k in range(1, 16))
                + r")\b.*)",
                summary="a download from the Hugging Face Hub arrived short of its size: {msg}",
                fix="download again (`huggingface-cli download <repo> --local-dir <dir>`, which resumes; HF_HUB_ENABLE_HF_TRANSFER=0 if a transfer accelerator cuts it) and point --model-path at the local directory; a proxy or a mirror that truncates large files needs HF_HUB_ETAG_TIMEOUT / HF_HUB_DOWNLOAD_TIMEOUT raised or bypassing",
            ),
            pat(_EXC + r"(?P<msg>LocalEntryNotFoundError: .*)"),
            pat(
                r"(?P<msg>.*OfflineModeIsEnabled: .*|.*offline mode is enabled.*)",
            ),
            pat(
                r"(?P<msg>.*Cannot find the requested files in the (?:disk )?cache and outgoing traffic has been disabled.*)",
            ),
            pat(
                r"\A(?P<msg>(?>.*?(?:huggingface\.co|\.hf\.co\b|hf-mirror\.com)).*(?:Max retries exceeded|NameResolutionError|Failed to resolve|Temporary failure in name resolution|timed out|Connection refused|Network is unreachable|ConnectTimeout|ProxyError).*)",
            ),
            # the configured HTTP(S) proxy cannot be reached (urllib3's proxy tunnel failed:
            # its frame, or its own words): every download, the Hub's first, fails; a
            # fallback, since the target is often cut from the paste
            pat(
                r"(?P<msg>.*?(?:\bFile \"[^\"\n]{0,300}urllib3[/\\]connectionpool\.py\", line \d+, in _prepare_proxy\b|\bUnable to connect to proxy\b|\bCannot connect to proxy\b|\bTunnel connection failed\b).*)",
                role=FALLBACK,
                summary="the HTTP(S) proxy the environment names cannot be reached, so the model's download fails: {msg}",
                fix="check HTTPS_PROXY/HTTP_PROXY/ALL_PROXY in the unit's environment (a local proxy that is not running refuses the connection; a proxy host that does not resolve fails in getaddrinfo), or unset them and download the model ahead to a local directory for --model-path",
            ),
        ),
        preflight_rule="model-path-hub",
        defaults={"msg": "?"},
        examples=(
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.",
            # not from the corpus: urllib3 refused by a proxy that is not running
            "urllib3.exceptions.ProxyError: ('Unable to connect to proxy', NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))",
            # not from the corpus: the Hub's front answering 503
            "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://huggingface.co/api/models/moonshotai/Kimi-K2.6/revision/main",
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.",
        ),
    ),
    Rule(
        id="model-not-found",
        families=(
            Family(
                (
                    "RepositoryNotFoundError",
                    "EntryNotFoundError",
                    "RevisionNotFoundError",
                    "HFValidationError",
                    # ModelScope's hub: "The model: X has no revision: main", a model it lacks
                    "NotExistError",
                )
            ),
            # the Hub answered 404 for a file (any HTTP client under huggingface_hub /
            # transformers' hub code); 401/403 are hf-auth's, connection errors the unreachable Hub's
            Family(
                ("HTTPError", "HfHubHTTPError"),
                words=("404 Client Error", "404 Not Found"),
                # the Hub's clients: huggingface_hub, transformers' hub code, ModelScope's and
                # openMind's hubs (the same 404 for a model id their hub lacks)
                frames=(
                    "huggingface_hub/",
                    "transformers/utils/hub",
                    "modelscope/hub/",
                    "openmind_hub/",
                ),
                both=True,
            ),
            Family(
                ("OSError", "FileNotFoundError", "ValueError"),
                words=(
                    "does not appear to have a file named",
                    "is not a local folder",
                    "valid model identifier",
                    "Repo id must",
                    "Can't load the configuration",
                    # transformers' words when config.json at the path is not JSON
                    "is not a valid JSON file",
                    # vLLM's, for a directory without config.json (or params.json)
                    "No supported config format found in",
                ),
            ),
            # a model directory without weight files, in a loader's words (SGLang's "No model
            # weights found in: `<path>`", vLLM's "Cannot find any model weights with")
            Family(
                ("RuntimeError", "ValueError", "OSError", "FileNotFoundError"),
                words=("No model weights found in", "Cannot find any model weights"),
            ),
            # the model path's config read as JSON and not JSON (a .pth or .safetensors file
            # given as the model path, a truncated download): the decode error under
            # transformers' config reader, before its own words above
            Family(
                ("UnicodeDecodeError", "JSONDecodeError"),
                frames=("transformers/configuration_utils",),
                summary="the model path is not a Hugging Face model directory: its config is not JSON ({exc}: {msg})",
            ),
        ),
        title="the model path or Hub id does not exist",
        summary="model not found: {msg}",
        fix="check --model-path and --speculative-draft-model-path: a local directory must exist for the service user and hold config.json and the *.safetensors ({path}); a Hub id must be 'org/name' (a gated model needs HF_TOKEN in unit.environment_file)",
        doc=(
            "The model or drafter path is wrong: a local path that does not exist is taken for a "
            'Hub repo id (huggingface_hub\'s HFValidationError "Repo id must be in the form …"), '
            "the directory lacks config.json, the Hub repo does not exist or is gated."
        ),
        patterns=(
            pat(
                _EXC
                + r"(?:HFValidationError): (?P<msg>Repo id must be in the form .*?: '(?P<path>[^']+)'.*)",
            ),
            # a model directory without its config.json, in a builder's or loader's own words
            # ("config.json not found in onnx directory: ./qwen2.5-VL-3b/")
            pat(
                r"(?P<msg>.*?\bconfig\.json (?:not found|does not exist|is missing)\b(?:[^\n]{0,40}?: (?P<path>\S{1,400}))?.*)",
            ),
            # transformers' "<path> does not appear to have a file named <file>" (config.json,
            # preprocessor_config.json, the weights; "files named" in newer releases), raised as
            # OSError/EnvironmentError and often quoted inside a wrapper's or a user's words
            pat(
                r"(?<![^\s:'\"(])(?P<msg>(?P<path>[^\s'\"*]{1,400}) does not appear to have (?:a file|files) named \(?'?(?P<file>[\w.-]+).*)",
            ),
            # the engines' and transformers' words for a model id or revision that names nothing:
            # vLLM's "Could not detect config format for no config file found", "Invalid
            # repository ID or local directory specified", transformers' "is not a valid git
            # identifier (branch name, tag name or commit id) that exists for this model name"
            pat(
                r"(?P<msg>.*?(?:\bCould not detect config format for no config file found\b|\bInvalid repository ID or local directory specified: '(?P<path>[^'\n]{1,400})'|\bis not a valid git identifier \(branch name, tag name or commit id\) that exists for this model name\b).*)",
            ),
            # model servers that could not find the model where they were pointed: Triton's
            # repository manager ("failed to load 'm' version 1: Unavailable: unable to find
            # '<path>'", "failed to stat file <path>"), TF Serving's "Could not find base path
            # <path> for servable"
            pat(
                r"(?P<msg>.*?(?:\bfailed to load '[^'\n]{1,200}' version \d+: \w+: unable to find '(?P<path>[^'\n]{1,400})'|\bfailed to stat file \s*(?P<path2>\S{1,400})|\bCould not find base path (?P<path3>\S{1,400}) for servable\b).*)",
            ),
            # a server's own check that a model file it was pointed at exists (lmdeploy's
            # "tokenizer model <path> does not exist", "config file <path> does not exist")
            pat(
                r"(?P<msg>.*?\b(?:tokenizer|model|config|weights?|checkpoint)(?: model| file| path| dir(?:ectory)?)? '?(?P<path>(?:/|[A-Za-z]:\\|\./)[^\s']{1,400})'? does not exist\b.*)",
            ),
            # diffusers' and older transformers' "Error no file named <weights or config>
            # found in directory <path>"
            pat(
                r"(?P<msg>Error no file named (?P<file>[\w.-]+).{0,200}? found in directory (?P<path>[^\s'\"]{1,400}).*)",
            ),
            # transformers' loaders, each component in its own words: "Can't load tokenizer
            # for 'x'", "Can't load config for 'x'", "Can't load image processor for 'x'",
            # "Can't load feature extractor for 'x'" (the local directory lacks its files, or
            # the id names no repo)
            pat(
                r"(?P<msg>Can't load (?:the )?(?P<what>tokenizer|config|configuration|image processor|feature extractor|processor|weights|model) (?:for|of) '(?P<path>[^']{1,400})'.*)",
            ),
            # a local file path (a weights file) sent to the Hub as a repo id: the Hub answers
            # 401 (unauthenticated) or 404 for the repo that does not exist
            pat(
                r"(?P<msg>\b(?:401|404) Client Error.*?huggingface\.co/(?:api/models/)?(?P<path>[\w.-]+/[\w.-]+\.(?:bin|gguf|ggml|safetensors|pt|pth|ckpt|onnx|h5|msgpack))(?![\w.-]).*)",
            ),
            pat(
                r"(?P<msg>.*(?:is not a local folder and is not a valid model identifier|Can't load the configuration of '(?P<path>[^']+)').*)",
            ),
            pat(_EXC + r"(?P<msg>RepositoryNotFoundError: .*)"),
            # huggingface_hub's body lines under any exception type (the first line holds only
            # the status and a request id): the repo, the revision or the file is not there
            pat(
                r"(?P<msg>(?:Repository|Revision|Entry) Not Found for url: (?P<path>\S{1,400}).*)",
            ),
            # SGLang's loader found the directory (or repo) but no weight files in it
            *said(
                "no-model-weights",
                anywhere=True,
                summary="no weight files found for {path}: {msg}",
                fix="point --model-path (and --speculative-draft-model-path) at the checkpoint directory itself, holding its *.safetensors (or *.bin) files, not a parent or a config-only copy; check the download finished and that --load-format fits the files",
            ),
            # ollama's registry without the model name asked for ("pull model manifest: file
            # does not exist", a 404), and its server without a local copy of it
            pat(
                r"(?P<msg>.*?\bpull model manifest: (?:file does not exist|[^\n]{0,200}?\b(?:not found|404)\b).*)",
            ),
            pat(
                r"(?P<msg>.*?\bmodel ['\"](?P<path>[^'\"]{1,200})['\"] not found, try pulling it first.*)"
            ),
            # a loader that looked for a named file at the path it was given and found none
            # (PEFT's "Can't find 'adapter_config.json' at '<path>'", older releases without the
            # quotes; the same for a model's or a tokenizer's file in another library's words)
            pat(
                r"(?P<msg>(?:Can't|Cannot|Could not|Unable to) find (?:file )?'?(?P<file>[\w.-]{1,100}\.(?:json|safetensors|bin|model|gguf|pt|pth))'? (?:at|in) '(?P<path>[^']{1,400})'.*)",
            ),
            # transformers' hub code (utils/hub.py) refusing a path that is neither a local
            # folder nor a Hub id
            pat(
                r"(?P<msg>Incorrect path_or_model_id: '(?P<path>[^']{1,400})'.*)",
            ),
            # another model hub's API answering 404 for the model id (ModelScope's
            # /api/v1/models/<org>/<name>/revisions: a Hugging Face id it does not mirror;
            # newer ModelScope words it "404 Not Found: <id> does not exist or is not accessible")
            pat(
                r"(?P<msg>.*?(?:\b404 Client Error:? Not Found for url: https?://(?:www\.)?(?:modelscope\.(?:cn|ai)|modelers\.cn)/api/v1/models/(?P<path>[\w.-]{1,200}/[\w.-]{1,200})|\b404 Not Found: (?P<model>[\w.-]{1,200}/[\w.-]{1,200}) does not exist or is not accessible\b).*)",
            ),
            # a Hub URL whose model id is the string of an unset value ("None", "null",
            # "undefined"): the model name was never set, whatever the Hub answered (it
            # answers 401 for a repo that does not exist)
            pat(
                r"(?P<msg>.*?\bhttps?://(?:[\w-]+\.)?(?:huggingface\.co|hf\.co|hf-mirror\.com|modelscope\.cn)/(?:api/)?(?:models/)?(?P<path>None|null|undefined)/(?:resolve|revision|tree|raw)/.*)",
                explains=("hf-auth",),
                summary="the model id is unset (the Hub was asked for a repo named {path}): {msg}",
                fix="the model name reached the loader as {path}: set the model (--model-path, the UI's model choice, the MODEL variable) to a local directory or a Hub id",
            ),
            # a model file path the loader cannot open because it does not exist (llama.cpp's
            # "gguf_init_from_file: failed to open GGUF file '…' (errno No such file or
            # directory)", any engine's "failed to load model file …: ENOENT")
            pat(
                r"(?P<msg>.*?\b(?:[Ff]ailed to|[Uu]nable to|[Cc]annot|[Cc]ould not) (?:open|load|read|find)\b[^\n]{0,60}?'?(?P<path>[^'\s:()]{1,400}\.(?:gguf|ggml|safetensors|bin|pt|pth|onnx|engine|plan))'?[^\n]{0,60}?(?:No such file or directory|\bENOENT\b|\berrno:? ?2\b).*)",
            ),
            # llama.cpp before it printed the errno: the GGUF file's path alone, the line ending
            # after it ("gguf_init_from_file: failed to open GGUF file '/models/x.gguf'"); its
            # fopen fails for a path that is not there (a permission error prints its errno)
            pat(
                r"(?P<msg>.*?\bgguf_init_from_file: failed to open GGUF file '(?P<path>[^'\n]{1,400})'\s*)$",
            ),
            # Triton's model repository holds the model's directory but no version in it (a
            # numbered subdirectory with the model file): "failed to load 'm', no version is
            # available", its model table's "Not loaded: No model version was found"; the model's
            # files are not where the server looks, as any wrapper (KServe's ModelMesh) quotes it
            pat(
                r"(?P<msg>.*?(?:\bfailed to load '(?P<path>[^'\n]{1,300})', no version is available\b|\bNot loaded: No model version was found\b).*)",
                fix="the model repository has no version of the model: put its file in a numbered version directory (`<repository>/<model>/1/model.onnx`, `model.plan`, `model.pt`), or set version_policy in config.pbtxt to versions that exist",
            ),
            # (a build tool's name alone is a compiler that is not installed: jit-build-failed;
            # a file in a JIT's or compiler's cache, or a temporary file, is no model: a cache
            # written by two processes at once, or cleaned under a running one)
            pat(
                _EXC
                + r"FileNotFoundError: (?P<msg>\[Errno 2\] No such file or directory: '(?!(?:[^'\n]{0,300}/)?"
                + _BUILD_TOOLS
                + r"')(?![^'\n]{0,400}?(?:/\.triton/|/triton/cache/|torch_extensions/|/torchinductor_|/\.cache/flashinfer/|/__pycache__/|\.tmp(?:\.|')|\.lock'))(?P<path>[^']+)')",
            ),
            # deploy's own check oneshot (templates/sglang-check.service.j2), before any load
            pat(
                r"deploy-check: (?P<msg>(?:model|drafter) (?:directory )?(?P<path>/\S*?)(?:/config\.json)? (?:does not exist|is missing or not readable.*|has no weight files.*))",
            ),
        ),
        preflight_rule="model-path-missing",
        defaults={"msg": "?", "path": "the path is in the message above"},
        examples=(
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/Kimi-K2.6'. Use `repo_type` argument if needed.",
            # not from the corpus: ollama's server for a model it holds no copy of
            'Error: model "llama3.3:70b" not found, try pulling it first',
            # not from the corpus: PEFT's config loader (peft/config.py) for an adapter path
            # that holds no adapter_config.json
            "ValueError: Can't find 'adapter_config.json' at '/models/llama-3-8b-lora-sql'",
            "OSError: /models/Kimi-K2.6 does not appear to have a file named config.json. Checkout 'https://huggingface.co//models/Kimi-K2.6/tree/None' for available files.",
            "deploy-check: drafter directory /models/Kimi-K2.6-EAGLE3 does not exist",
            # not from the corpus: ModelScope's hub for an id it lacks, an unset model id, and
            # llama.cpp's loader on a GGUF path that does not exist
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://www.modelscope.cn/api/v1/models/moonshotai/Kimi-K2.6/revisions?EndTime=1735689600",
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/None/resolve/main/tokenizer_config.json",
            # not from the corpus: a newer ModelScope's words for the same 404 (its hub/errors.py)
            "requests.exceptions.HTTPError: 404 Not Found: Qwen/Qwen3-9B does not exist or is not accessible, Request id: 3f2a for url: https://www.modelscope.cn/api/v1/models/Qwen/Qwen3-9B/revisions",
            "llama_model_load: error loading model: failed to open /models/qwen3-8b-q4_k_m.gguf: No such file or directory",
            # the families' other wordings, from transformers', diffusers' and
            # huggingface_hub's sources (not from the corpus)
            "OSError: /models/Kimi-K2.6 does not appear to have files named ('model-00001-of-00064.safetensors', 'model-00002-of-00064.safetensors'). Checkout 'https://huggingface.co//models/Kimi-K2.6/tree/main' for available files.",
            "OSError: Error no file named diffusion_pytorch_model.safetensors found in directory /models/sd-turbo/unet.",
            "OSError: Can't load config for '/models/Kimi-K2.6'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure '/models/Kimi-K2.6' is the correct path to a directory containing a config.json file",
            "OSError: Incorrect path_or_model_id: '/models/Kimi-K2.6'. Please provide either the path to a local folder or the repo_id of a model on the Hub.",
            "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: Root=1-6)\n\nRevision Not Found for url: https://huggingface.co/api/models/moonshotai/Kimi-K2.6/revision/v2.\nInvalid rev id: v2",
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/models/kimi-k2.6-q4_k_m.gguf/revision/main",
            example("no-model-weights", path="/models/Kimi-K2.6"),
            # not from the corpus: a weights file given as the model path, read as config.json
            under(
                "/opt/venv/lib/python3.12/site-packages/transformers/configuration_utils.py",
                "_dict_from_json_file",
                "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
            ),
        ),
    ),
)
