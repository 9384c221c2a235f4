"""A server spec, rendered to a ``docker run`` line for ROCm images or to a local command.

``ServerSpec`` holds what a deployment chooses (engine, model, TP, dtypes, lengths, batch
limits, memory fraction, quantization, environment). ``local_command()`` gives the argv to run
here; ``docker_command()`` the ``docker run`` argv for the ROCm images; ``shell()`` either as
one copy-pasteable line. :mod:`rocmlab.serve.process` starts them in the background.

The ROCm presets (``ROCM_PRESETS``) document every variable they set: what it is, which
layer reads it (vLLM, the HIP runtime, PyTorch, RCCL) and what it moves. The vLLM names are
checked against the installed vLLM's ``envs.py`` by the tests, because they change between
releases (``RENAMED`` lists ones that old recipes still use).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

IMAGES = {
    # AMD's vLLM image for Instinct GPUs (ROCm, AITER, hipBLASLt tuned); pin a dated tag for a workshop.
    "vllm": "rocm/vllm:latest",
    # AMD's SGLang image as given on the ROCm docs' SGLang page; take the current tag from there.
    "sglang": "rocm/sgl-dev:v0.5.13.post1-ubuntu24.04-py3.14-rocm7.14",
}

# Flags every ROCm container needs (the doctor checks the same on the host):
ROCM_DOCKER_FLAGS = (
    "--device", "/dev/kfd",              # the ROCm compute interface (KFD)
    "--device", "/dev/dri",              # the render nodes, one per GPU partition
    "--group-add", "video",              # permission to open them
    "--ipc=host",                        # shared memory for PyTorch / RCCL between processes
    "--shm-size", "16g",
    "--security-opt", "seccomp=unconfined",  # HIP's memory mapping calls (and profilers) need it
    "--cap-add", "SYS_PTRACE",           # debuggers and rocprof attach to processes
)


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    layer: str        # who reads it: vLLM, HIP runtime, PyTorch, RCCL, SGLang
    what: str         # what it does and what it moves


ROCM_PRESETS: dict[str, tuple[EnvVar, ...]] = {
    "vllm-mi300x": (
        EnvVar("VLLM_ROCM_USE_AITER", "1", "vLLM",
               "Master switch for AITER, AMD's tuned kernel library (attention, GEMM, MoE, RMSNorm). Off by "
               "default; the sub-flags below only act when it is on. Moves TTFT and TPOT."),
        EnvVar("VLLM_ROCM_USE_AITER_LINEAR", "1", "vLLM",
               "AITER GEMMs for linear layers (tuned unquantized GEMMs, FP8 scaled_mm). Moves prefill (TTFT)."),
        EnvVar("VLLM_ROCM_USE_AITER_MHA", "1", "vLLM", "AITER multi-head attention kernels. Moves TTFT and TPOT."),
        EnvVar("VLLM_ROCM_USE_AITER_RMSNORM", "1", "vLLM", "AITER fused RMSNorm. Small gain per layer."),
        EnvVar("VLLM_ROCM_USE_AITER_MOE", "1", "vLLM", "AITER fused MoE (Mixtral, DeepSeek, Qwen-MoE); no effect on dense Llama."),
        EnvVar("HIP_FORCE_DEV_KERNARG", "1", "HIP runtime",
               "Puts kernel arguments in device memory instead of host memory: cuts launch latency of the many "
               "small kernels of decode. Moves TPOT."),
        EnvVar("TORCH_BLAS_PREFER_HIPBLASLT", "1", "PyTorch",
               "PyTorch's GEMMs go to hipBLASLt rather than rocBLAS; hipBLASLt is the tuned library on MI300X. Moves TTFT."),
        EnvVar("NCCL_MIN_NCHANNELS", "112", "RCCL",
               "RCCL uses at least 112 channels (rings) so all-reduce spreads over all of the MI300X's XGMI links "
               "and CUs. Moves TPOT at TP > 1; no effect at TP = 1."),
    ),
    "quickreduce": (
        EnvVar("VLLM_ROCM_QUICK_REDUCE_QUANTIZATION", "INT4", "vLLM",
               "QuickReduce: a quantized all-reduce for MI300-class GPUs at TP > 1. One of FP, INT8, INT6, INT4, "
               "INT3, NONE (default NONE: off). INT4 sends 4-bit codes plus scales: less traffic, lower TPOT, "
               "at a small accuracy cost: check your model's accuracy."),
        EnvVar("VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16", "1", "vLLM",
               "Cast bf16 inputs to fp16 before QuickReduce (its bf16 kernels are slower: no bf16 asm instruction). Default on."),
        EnvVar("VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB", "2048", "vLLM",
               "Largest all-reduce (MB) QuickReduce takes; bigger ones go to custom all-reduce or RCCL. Default 2048."),
    ),
    "cpu": (
        EnvVar("VLLM_ENABLE_V1_MULTIPROCESSING", "0", "vLLM",
               "Run the engine core in the API server's process: one process to start, stop and measure "
               "(start ~24 s, 2.3 GB RSS on this project's CPU machines)."),
        EnvVar("VLLM_CPU_KVCACHE_SPACE", "1", "vLLM", "KV-cache size on a CPU in GiB (the CPU analogue of gpu-memory-utilization)."),
        EnvVar("HF_HUB_OFFLINE", "1", "huggingface_hub", "Never reach the model hub: the model is a local folder."),
    ),
    "sglang-mi300x": (
        EnvVar("SGLANG_USE_AITER", "1", "SGLang", "AITER kernels in SGLang on Instinct GPUs (unset it on Radeon)."),
        EnvVar("HIP_FORCE_DEV_KERNARG", "1", "HIP runtime", "Kernel arguments in device memory: lower launch latency (TPOT)."),
        EnvVar("NCCL_MIN_NCHANNELS", "112", "RCCL", "At least 112 RCCL channels: all-reduce over all XGMI links at TP > 1."),
    ),
}

# Names that old ROCm recipes still set but current vLLM (0.32) no longer reads: setting them
# does nothing, silently. The tests check these are absent from envs.py.
RENAMED = {
    "VLLM_USE_TRITON_FLASH_ATTN": "gone: choose the attention backend with --attention-backend",
    "VLLM_ROCM_USE_AITER_PAGED_ATTN": "gone: AITER attention is VLLM_ROCM_USE_AITER_MHA / _UNIFIED_ATTENTION",
    "VLLM_ROCM_CUSTOM_PAGED_ATTN": "gone in the V1 engine",
    "VLLM_ATTENTION_BACKEND": "now the --attention-backend argument",
    "VLLM_USE_V1": "gone: V1 is the only engine",
}


def preset_env(*names: str) -> dict[str, str]:
    env = {}
    for n in names:
        if n not in ROCM_PRESETS:
            raise KeyError(f"unknown preset {n!r}: use one of {', '.join(ROCM_PRESETS)}")
        env.update({v.name: v.value for v in ROCM_PRESETS[n]})
    return env


def preset_table(*names: str):
    import pandas as pd

    names = names or tuple(ROCM_PRESETS)
    return pd.DataFrame([{"preset": n, "variable": v.name, "value": v.value, "read by": v.layer, "what it does": v.what}
                         for n in names for v in ROCM_PRESETS[n]])


def check_model(model: str) -> None:
    """Fail fast, with the fix, when ``model`` is meant as a local folder and is not a usable one.
    Hub ids (``org/name``) pass: the server resolves those."""
    if not model:
        raise ValueError("no model given: pass a local model folder or a Hugging Face id")
    if not model.startswith(("/", "./", "../", "~")):
        return
    p = Path(model).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"model path {model} does not exist: build the tiny CPU model with "
                                "rocmlab.serve.tinymodel.build(), or pass an existing folder / a Hugging Face id")
    if p.is_dir() and not (p / "config.json").is_file():
        raise FileNotFoundError(f"model folder {model} has no config.json: it is not a Hugging Face model folder")


@dataclass(frozen=True)
class ServerSpec:
    model: str
    engine: str = "vllm"                      # vllm | sglang
    host: str = "127.0.0.1"
    port: int = 8000
    tp: int = 1
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    quantization: str | None = None
    served_model_name: str | None = None
    enforce_eager: bool = False
    extra_args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    python: str = ""                          # interpreter of the local command ("" = this one)
    image: str | None = None                  # docker image (default IMAGES[engine])

    def __post_init__(self):
        if self.engine not in ("vllm", "sglang"):
            raise ValueError(f"engine must be 'vllm' or 'sglang', got {self.engine!r}")
        if not (0 < int(self.port) < 65536):
            raise ValueError(f"port must be in 1..65535, got {self.port}")
        if self.tp < 1:
            raise ValueError(f"tp must be >= 1, got {self.tp}")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")

    def with_(self, **kw) -> ServerSpec:
        return replace(self, **kw)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def name(self) -> str:
        """The model name clients send (vLLM serves the --model string unless renamed)."""
        return self.served_model_name or self.model

    def engine_args(self, model: str | None = None, host: str | None = None) -> list[str]:
        m = model or self.model
        h = host or self.host
        if self.engine == "vllm":
            a = ["--model", m, "--host", h, "--port", str(self.port)]
            opt = [("--tensor-parallel-size", self.tp if self.tp != 1 else None),
                   ("--dtype", None if self.dtype == "auto" else self.dtype),
                   ("--kv-cache-dtype", None if self.kv_cache_dtype == "auto" else self.kv_cache_dtype),
                   ("--max-model-len", self.max_model_len), ("--max-num-seqs", self.max_num_seqs),
                   ("--max-num-batched-tokens", self.max_num_batched_tokens),
                   ("--gpu-memory-utilization", self.gpu_memory_utilization),
                   ("--quantization", self.quantization), ("--served-model-name", self.served_model_name)]
            flags = ["--enforce-eager"] if self.enforce_eager else []
        else:
            a = ["--model-path", m, "--host", h, "--port", str(self.port)]
            opt = [("--tp-size", self.tp if self.tp != 1 else None),
                   ("--dtype", None if self.dtype == "auto" else self.dtype),
                   ("--kv-cache-dtype", None if self.kv_cache_dtype == "auto" else self.kv_cache_dtype),
                   ("--context-length", self.max_model_len), ("--max-running-requests", self.max_num_seqs),
                   ("--chunked-prefill-size", self.max_num_batched_tokens),
                   ("--mem-fraction-static", self.gpu_memory_utilization),
                   ("--quantization", self.quantization), ("--served-model-name", self.served_model_name)]
            flags = ["--disable-cuda-graph"] if self.enforce_eager else []
        for k, v in opt:
            if v is not None:
                a += [k, str(v)]
        return a + flags + list(self.extra_args)

    def module(self) -> list[str]:
        # `python -m` works for both engines and for the vllm-cpu package, whose `vllm serve` CLI fails.
        return ["-m", "vllm.entrypoints.openai.api_server"] if self.engine == "vllm" else ["-m", "sglang.launch_server"]

    def local_command(self, check: bool = True) -> list[str]:
        """argv to run here; ``check`` fails fast when a local model path is missing."""
        if check:
            check_model(self.model)
        return [self.python or sys.executable, *self.module(), *self.engine_args()]

    def docker_command(self, image: str | None = None, models_dir: str | None = None,
                       hf_cache: str = os.path.expanduser("~/.cache/huggingface"), name: str | None = None, detach: bool = False) -> list[str]:
        """``docker run`` for the ROCm image. A local model folder is mounted read-only at
        ``/models/<name>``; a hub id uses the mounted Hugging Face cache."""
        image = image or self.image or IMAGES[self.engine]
        cmd = ["docker", "run", "--rm"] + (["-d"] if detach else []) + ["--name", name or self.container_name]
        cmd += list(ROCM_DOCKER_FLAGS)
        cmd += ["-p", f"{self.port}:{self.port}"]
        model = self.model
        if models_dir:                       # a folder of models, mounted at /models
            src = Path(models_dir).expanduser()
            cmd += ["-v", f"{src}:/models:ro"]
            try:
                model = "/models/" + str(Path(self.model).expanduser().relative_to(src))
            except ValueError:
                model = "/models/" + Path(self.model).name
        elif model.startswith(("/", "./", "../", "~")):   # one local model folder
            src = Path(model).expanduser().resolve()
            cmd += ["-v", f"{src}:/models/{src.name}:ro"]
            model = f"/models/{src.name}"
        cmd += ["-v", f"{hf_cache}:/root/.cache/huggingface"]
        for k, v in self.env.items():
            cmd += ["-e", f"{k}={v}"]
        cmd += [image, "python3", *self.module(), *self.engine_args(model=model, host="0.0.0.0")]
        return cmd

    @property
    def container_name(self) -> str:
        return f"rocmlab-{self.engine}-{self.port}"

    def shell(self, docker: bool = False, **kw) -> str:
        """One copy-pasteable line (environment first for a local command). A recipe for another
        machine: the model path is not checked here."""
        if docker:
            return shlex.join(self.docker_command(**kw))
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.local_command(check=False))


def rocm_spec(model: str, preset: str = "vllm-mi300x", **kw) -> ServerSpec:
    """A spec for an MI300X with a preset's environment (``vllm-mi300x``, ``sglang-mi300x``; add
    ``quickreduce`` at TP > 1 by passing ``env=preset_env('vllm-mi300x', 'quickreduce')``)."""
    env = kw.pop("env", None) or preset_env(preset)
    return ServerSpec(model=model, env=env, **kw)
