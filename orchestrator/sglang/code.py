"""Where SGLang's code lives, as the classifier reads it in a traceback: the files and
functions of its speculative argument handling, its drafter, its serving loop, and the
packages whose frames name an exception's family. Regex fragments over a traceback's text
(frame lines `File ".../x.py", line N, in f`), or module paths under site-packages.

Read off sglang 0.5.23 (and the 0.5.11 names field reports show). Standard library only.
"""

from __future__ import annotations

__all__ = [
    "ARG_GROUPS",
    "ATTENTION_KERNEL_FILES",
    "ATTENTION_KERNEL_SOURCES",
    "ATTENTION_OP_WRAPPERS",
    "ATTENTION_PACKAGES",
    "BUILD_PACKAGES",
    "DETOKENIZER_MODULES",
    "DISTRIBUTED_PACKAGES",
    "DRAFT_FRAMES",
    "DRAFT_PACKAGES",
    "DRAFT_STEP",
    "EXAMPLE_FILES",
    "GPU_GENERATION_PROBE",
    "HUB_CLIENT_PACKAGES",
    "LORA_LOADING",
    "MODEL_REGISTRY",
    "SCHEDULER_FILE",
    "SERVING_FUNCTIONS",
    "SERVING_LOOP",
    "SERVING_MODULES",
    "SPEC_ARGS_FILES",
    "SPEC_ARGS_FRAMES",
    "SPEC_ARGS_PACKAGES",
    "SRT_TREE",
    "TRANSFORMERS_FALLBACK",
    "TRANSFORMERS_FALLBACK_CLASSES",
    "TRITON_COMPILE_STAGES",
    "VERIFY_STEP",
    "WARMUP_FUNCTIONS",
    "WEIGHT_LOADERS",
]

# SGLang's launch-argument hooks (0.5.2x): per-model and per-feature argument resolution
ARG_GROUPS = "sglang/srt/arg_groups/"
# the files (under the sglang package) where the newest release resolves and checks the
# speculative arguments, for the docs
SPEC_ARGS_FILES = (
    "srt/arg_groups/speculative_hook.py",
    "srt/speculative/spec_info.py",
    "srt/arg_groups/overrides.py",
)
# speculative argument handling: arg_groups/speculative_hook.py (0.5.2x), server_args.py
# `_handle_speculative_decoding` (older), speculative/spec_info.py
SPEC_ARGS_FRAMES = (
    r"speculative_hook\.py|spec_info\.py|in _handle_eagle_family|in _handle_speculative_decoding"
)
# where an engine resolves and checks its launch arguments (SGLang's ServerArgs and its
# per-model argument hooks, vLLM's config classes): an exception raised there that names
# speculative decoding is the speculative settings refused, whatever the words
SPEC_ARGS_PACKAGES = (
    "sglang/srt/server_args",
    ARG_GROUPS,
    "vllm/config",
    "vllm/engine/arg_utils",
)
# the draft model and its worker (the EAGLE-3 drafter): models/*_eagle3.py, speculative/
DRAFT_FRAMES = r"_eagle3?\.py|eagle_worker|draft_worker|/speculative/|in init_draft|draft_model"
# the EAGLE draft step and the target's verify step (speculative/eagle_*.py)
DRAFT_STEP = r"in draft_forward\b|in draft\b|in _draft_extend|draft_worker|in forward_draft_extend"
VERIFY_STEP = r"in verify\b|in run_eagle_verify\b|is_verify=True"
# the scheduler's own module (its process, its serving loop's functions), as a frame's path ends
SCHEDULER_FILE = "sglang/srt/managers/scheduler.py"
# the scheduler's serving loop (managers/scheduler.py), i.e. after the server was ready
SERVING_LOOP = (
    r"in event_loop_(?:normal|overlap|pp)\b|in run_batch\b|in process_batch_result\b|"
    r"in run_event_loop\b|scheduler_components/batch_result_processor\.py"
)

# the functions of the scheduler's serving loop and of what it calls on every iteration
# (managers/scheduler.py and its mixins, 0.4.x to 0.5.2x): an exception raised below one of them
# was raised while serving, never at start-up (Scheduler.__init__ and the model runner's set-up
# call none of them)
SERVING_FUNCTIONS = (
    "event_loop_normal",
    "event_loop_overlap",
    "event_loop_pp",
    "event_loop_normal_disagg_prefill",
    "event_loop_overlap_disagg_prefill",
    "event_loop_normal_disagg_decode",
    "event_loop_overlap_disagg_decode",
    "run_event_loop",
    "dispatch_event_loop",
    # the overlap scheduler's forward thread (managers/tp_worker_overlap_thread.py, 0.4.x):
    # it runs the batches the scheduler queues for it, so only while serving
    "forward_thread_func",
    "forward_thread_func_",
    "recv_requests",
    "process_input_requests",
    "handle_generate_request",
    "handle_embedding_request",
    "get_next_batch_to_run",
    "get_new_batch_prefill",
    "update_running_batch",
    "run_batch",
    "process_batch_result",
    "process_batch_result_prefill",
    "process_batch_result_decode",
    "move_ready_grammar_requests",
    "on_idle",
    "self_check_during_idle",
    "check_memory",
    "stream_output",
    # a batch of live requests made ready for a step (managers/schedule_batch.py,
    # sampling/sampling_batch_info.py, the constrained decoding backends, the speculative
    # workers' per-batch steps): only a scheduled request reaches them (CUDA-graph capture
    # and the start-up's memory profiling build their batches without them)
    "prepare_for_extend",
    "prepare_for_decode",
    "prepare_for_idle",
    "prepare_for_verify",
    "prepare_for_v2_verify",
    "prepare_for_v2_draft",
    "from_schedule_batch",
    "update_regex_vocab_mask",
    "fill_vocab_mask",
    "forward_batch_speculative_generation",
    "_draft_extend_for_decode",
    "_draft_extend_for_prefill",
)
# SGLang's modules that run only while serving: the scheduler components that process a
# batch's results, stream its output, take requests in and check the pools between batches
SERVING_MODULES = (
    "sglang/srt/managers/scheduler_output_processor_mixin",
    "sglang/srt/managers/scheduler_components/batch_result_processor",
    "sglang/srt/managers/scheduler_components/logprob_result_processor",
    "sglang/srt/managers/scheduler_components/beam_",
    "sglang/srt/managers/scheduler_components/output_streamer",
    "sglang/srt/managers/scheduler_components/output_sender",
    "sglang/srt/managers/scheduler_components/request_receiver",
    "sglang/srt/managers/scheduler_components/invariant_checker",
    "sglang/srt/managers/scheduler_components/pool_stats_observer",
    # the CUDA-IPC transport of a request's multimodal features (tokenizer to scheduler): the
    # scheduler rebuilds them (`reconstruct_on_target_device`) only for a request it serves
    "sglang/srt/utils/cuda_ipc_transport_utils",
)

# the detokenizer's own process (managers/detokenizer_manager.py, multi_detokenizer_mixin.py)
DETOKENIZER_MODULES = (
    "sglang/srt/managers/detokenizer_manager",
    "sglang/srt/managers/multi_detokenizer",
)

# module paths (under site-packages) whose frames put an exception in a family
DRAFT_PACKAGES = (
    "sglang/srt/speculative/",
    "_eagle3.py",
    "_eagle.py",
    "draft",
    # vLLM's speculative workers (V0's spec_decode/, V1's v1/spec_decode/)
    "vllm/spec_decode/",
    "vllm/v1/spec_decode/",
)
# the functions that copy a checkpoint's tensors into a model's parameters (SGLang's and vLLM's
# models and loaders): an error raised in one is about the checkpoint's weights
WEIGHT_LOADERS = (
    "load_weights",
    "load_weights_and_postprocess",
    "default_weight_loader",
    "weight_loader",
)
ATTENTION_PACKAGES = ("sglang/srt/layers/attention/", "flashinfer/", "flash_attn/")
# SGLang's GPU-generation probes (utils/common.py: is_sm90_supported, is_sm100_supported,
# is_sm120_supported, is_sm100_or_sm110_supported, is_blackwell_supported, is_hopper_with_cuda_12_3,
# ...), as a call in an assert statement: a code path written for those generations only
GPU_GENERATION_PROBE = r"is_(?:sm\d{2,3}\w{0,24}|blackwell\w{0,12}|hopper\w{0,20})\(\)"
# sgl-kernel's Python wrappers of its attention ops (cutlass_mla_decode, flash_mla, ...): they
# assert the shapes the compiled kernel was written for before calling it
ATTENTION_OP_WRAPPERS = ("sgl_kernel/attention.py", "sgl_kernel/flash_mla.py")
# the attention kernels' own files in every layout: layers/attention/ (0.3.x on),
# layers/triton_attention/ (0.2-0.3), and 0.1.x's kernels beside the layer
# (extend_attention.py, token_attention.py, context_flashattention_nopad.py); radix_attention.py,
# the layer every model's forward passes through, is not a kernel
ATTENTION_KERNEL_FILES = (
    "sglang/srt/layers/attention/",
    "sglang/srt/layers/triton_attention/",
    "sglang/srt/layers/extend_attention",
    "sglang/srt/layers/decode_attention",
    "sglang/srt/layers/prefill_attention",
    "sglang/srt/layers/token_attention",
    "sglang/srt/layers/context_flashattention",
    "flashinfer/",
    "flash_attn/",
)
MODEL_REGISTRY = ("sglang/srt/models/registry", "sglang/srt/model_loader/utils")
# SGLang's server package, as a frame's path holds it wherever it is installed
SRT_TREE = ("sglang/srt/",)
# SGLang's generic Transformers backend (models/transformers.py), which it loads only for an
# architecture it has no implementation of: an error under it, or naming one of its classes
# (0.5.23: TransformersForCausalLM, TransformersMoEForCausalLM, TransformersMultiModal...,
# TransformersEmbeddingModel, all over TransformersBase; one release printed
# "TransformersForCasualLM"), is that architecture's. Class-name heads, as a message quotes them.
TRANSFORMERS_FALLBACK = ("sglang/srt/models/transformers",)
TRANSFORMERS_FALLBACK_CLASSES = (
    "'TransformersFor",
    "'TransformersMoE",
    "'TransformersMultiModal",
    "'TransformersEmbedding",
    "'TransformersBase",
)
# SGLang's LoRA code that reads and maps an adapter as it loads (its config, its tensors'
# names, the registry), not the layers that run it while serving: an error raised here is the
# adapter's (0.5.11 and 0.5.23 alike)
LORA_LOADING = (
    "sglang/srt/lora/lora.py",
    "sglang/srt/lora/lora_manager.py",
    "sglang/srt/lora/lora_config.py",
    "sglang/srt/lora/lora_registry.py",
    "sglang/srt/lora/utils.py",
)
# SGLang's own configuration classes (srt/configs/model_config.py ModelConfig, load_config.py
# LoadConfig, device_config.py DeviceConfig), as a message quotes them: an attribute missing on
# one of these is SGLang's model code reading its own object (sglang #15784), not a model's
# config.json that this install cannot read
ENGINE_CONFIG_CLASSES = ("'ModelConfig' object", "'LoadConfig' object", "'DeviceConfig' object")
# the Hugging Face Hub's clients: an HTTP error raised under them is the Hub's answer
HUB_CLIENT_PACKAGES = ("huggingface_hub/", "transformers/utils/hub")
DISTRIBUTED_PACKAGES = ("torch/distributed/", "sglang/srt/distributed/")
# the builders of kernels compiled on the box at start-up: a CalledProcessError (the compiler's
# exit status) raised under one of these is a JIT build failure, whatever the compiler printed
BUILD_PACKAGES = (
    "torch/utils/cpp_extension",
    "triton/runtime/build",
    "triton/backends/",
    "triton/compiler/",
    "setuptools/",
    "distutils/",
    "deep_gemm/jit",
    "flashinfer/jit",
    "tvm_ffi/",
    "sgl_kernel/jit",
    "sglang/jit_kernel",
)
# Triton's compiler stages (triton/backends/<vendor>/compiler.py): an exception raised by one of
# them is the kernel's build failing (ptxas, LLVM, the AMDGPU linker), whatever it says
TRITON_COMPILE_STAGES = (
    "make_ttir",
    "make_ttgir",
    "make_llir",
    "make_ptx",
    "make_cubin",
    "make_amdgcn",
    "make_hsaco",
)
# SGLang's warm-up of its own HTTP server (http_server.py / server.py, every release): an
# exception raised by these functions themselves (not deeper, in the model) is the warm-up
# request failing to reach the server
WARMUP_FUNCTIONS = (
    "_execute_server_warmup",
    "_wait_and_warmup",
    "_run_server_warmup_after_http_ready",
    "_wait_until_http_ready",
)
# the sources of attention kernels as CUDA errors name them (`CUDA error (<file>:<line>)`):
# flash-attention (FA3 is its hopper/ tree), flashinfer
ATTENTION_KERNEL_SOURCES = ("flash-attention", "flash_attn", "flash_fwd", "flashinfer")

# SGLang's files (under site-packages) that the classifier's example tracebacks raise under: a
# per-model argument hook (a made-up one: any model's), the speculative worker, the scheduler
# and the detokenizer (serving), the HTTP server (warm-up), an EAGLE-3 draft model's weight
# loader, the LoRA layers
EXAMPLE_FILES = {
    "model-hook": ARG_GROUPS + "some_model_hook.py",
    "eagle-worker-v2": "sglang/srt/speculative/eagle_worker_v2.py",
    "scheduler": SCHEDULER_FILE,
    "detokenizer": "sglang/srt/managers/detokenizer_manager.py",
    "http-server": "sglang/srt/entrypoints/http_server.py",
    "llama-eagle3": "sglang/srt/models/llama_eagle3.py",
    "lora-layers": "sglang/srt/lora/layers.py",
}
