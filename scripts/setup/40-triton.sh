#!/usr/bin/env bash
# Triton for the fused codec of Lab 05 (rocmlab.comm.triton_codec). CPU tests run its kernels in
# Triton's interpreter. Installed only where no triton is importable: ROCm and CUDA builds of torch
# bring their own (pytorch-triton-rocm, triton), which must not be replaced.
set -euo pipefail
cd "$(dirname "$0")/../.."
if .venv/bin/python -c 'import triton' 2>/dev/null; then
  echo "triton: $(.venv/bin/python -c 'import triton; print(triton.__version__)') already importable"
  exit 0
fi
.venv/bin/python -m pip -q --disable-pip-version-check install "triton>=3.0"
.venv/bin/python -c 'import triton; print("triton", triton.__version__)'
