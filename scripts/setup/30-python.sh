#!/usr/bin/env bash
# The Python environment in .venv. torch is installed first and never replaced:
#  - on a ROCm PyTorch image, the image's torch is reused (--system-site-packages);
#  - elsewhere the pinned CPU wheel (torch==2.13.0) is installed, unless a torch is
#    already importable. An unpinned "torch" would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if "$py" -c 'import torch' 2>/dev/null; then
    "$py" -m venv --system-site-packages .venv     # reuse the image's torch build
  else
    "$py" -m venv .venv
  fi
fi
pip=(.venv/bin/python -m pip -q --disable-pip-version-check)
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  "${pip[@]}" install "torch==${ROCMLAB_TORCH_VERSION:-2.13.0}"
fi
stamp=.venv/.rocmlab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "${pip[@]}" install -e ".[dev]"
  touch "$stamp"
fi
.venv/bin/python -c 'import rocmlab, torch; print("python env: rocmlab", rocmlab.__version__, "torch", torch.__version__)'
