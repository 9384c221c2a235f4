#!/usr/bin/env bash
# Triton for the fused codec of Lab 05 (rocmlab.comm.triton_codec). CPU tests run its kernels in
# Triton's interpreter. Installed only where no triton is importable: ROCm and CUDA builds of torch
# bring their own (pytorch-triton-rocm, triton), which must not be replaced.
# Optional: without it Labs 05, 06 and 08 lose their Triton cells (they say so); set-up goes on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/../.."
if .venv/bin/python -c 'import triton' 2>/dev/null; then
  echo "triton: $(.venv/bin/python -c 'import triton; print(triton.__version__)') already importable"
  exit 0
fi
if ! .venv/bin/python -m pip -q --disable-pip-version-check install "triton>=3.0"; then
  optional_missing "triton (pip could not install it)" "the fused codec (Lab 05), the Triton puzzles (Lab 06, 09, 10) and the remap kernel (Lab 08): those cells say so" \
    ".venv/bin/python -m pip install 'triton>=3.0' (offline: PIP_NO_INDEX=1 PIP_FIND_LINKS=/path/to/wheels)"
  exit 0
fi
.venv/bin/python -c 'import triton; print("triton", triton.__version__)'
