"""Where vLLM lives: the interpreter of its own virtual environment (``.venv-vllm``, made by
``scripts/setup/40-vllm-cpu.sh``), or ``$ROCMLAB_VLLM_PYTHON``. A leaf module: the tiny model's
builder and the CPU server both ask it, and neither imports the other for it."""

from __future__ import annotations

import shutil
from pathlib import Path

from rocmlab import settings
from rocmlab.paths import repo_root


def vllm_python() -> str | None:
    """The interpreter with vLLM: ``$ROCMLAB_VLLM_PYTHON``, else ``.venv-vllm`` in the checkout."""
    env = settings.env("ROCMLAB_VLLM_PYTHON")
    if env:
        return env if Path(env).exists() or shutil.which(env) else None
    p = repo_root() / ".venv-vllm" / "bin" / "python"
    return str(p) if p.exists() else None
