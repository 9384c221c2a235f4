#!/usr/bin/env bash
# rocmlab workshop on ONE 8x MI300X node with The Littlest JupyterHub (TLJH): a learner per GPU seat (8 in SPX,
# 64 in CPX), each seat through HIP_VISIBLE_DEVICES (jupyterhub_config.d/rocmlab.py). Run as root on Ubuntu 22.04/24.04
# with ROCm and the amdgpu driver installed (rocm-smi lists 8 GPUs), from a clone of rocmlab:
#   sudo bash binder/tljh/install.sh
# Idempotent: a second run updates the config and rocmlab, and reloads the hub.
# ROCM_TORCH_INDEX picks the ROCm torch wheels (match the node's ROCm release).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
index=${ROCM_TORCH_INDEX:-https://download.pytorch.org/whl/rocm6.4}
admin=${TLJH_ADMIN:-instructor}

[ "$(id -u)" -eq 0 ] || { echo "error: run as root (sudo bash $0)" >&2; exit 1; }
n=$(grep -l '^simd_count [1-9]' /sys/class/kfd/kfd/topology/nodes/*/properties 2>/dev/null | wc -l)
[ "$n" -ge 1 ] || { echo "error: no AMD GPU in /sys/class/kfd: install ROCm and the amdgpu driver first" >&2; exit 1; }
echo "logical GPUs on this node: $n (one learner each; /opt/tljh/hub/bin/rocmlab seats plan shows the modes)"

# 1. TLJH itself (its bootstrap script is the documented installer)
if [ ! -x /opt/tljh/hub/bin/tljh-config ]; then
  curl -fsSL https://tljh.jupyter.org/bootstrap.py | python3 - --admin "$admin"
fi

# 2. the course in the learners' environment: ROCm torch first, then rocmlab under a constraint keeping it
/opt/tljh/user/bin/python -c 'import torch, sys; sys.exit(0 if torch.version.hip else 1)' 2>/dev/null \
  || /opt/tljh/user/bin/python -m pip install --no-cache-dir torch --index-url "$index"
/opt/tljh/user/bin/python -c "import torch; print('torch==' + torch.__version__)" > /tmp/keep-torch.txt
/opt/tljh/user/bin/python -m pip install --no-cache-dir -c /tmp/keep-torch.txt "$repo[amd]"
/opt/tljh/user/bin/python -c "import torch; assert torch.version.hip, 'torch is not a ROCm build'"

# 3. config: users and limits, the per-learner GPU hook, the labs copied into each new home
install -m 0644 "$here/config.yaml" /opt/tljh/config/config.yaml
# the GPU seats and the exchange run inside the hub: rocmlab.workshop needs only the standard library
/opt/tljh/hub/bin/python -m pip install --no-cache-dir --no-deps "$repo"
install -d /opt/tljh/config/jupyterhub_config.d
install -m 0644 "$here/jupyterhub_config.d/rocmlab.py" /opt/tljh/config/jupyterhub_config.d/rocmlab.py
install -d /etc/skel/labs && cp -r "$repo/labs/." /etc/skel/labs/
/opt/tljh/hub/bin/python -c "from rocmlab.workshop.exchange import prepare; prepare('/srv/rocmlab/exchange')"

# 4. reload the hub with the new config
/opt/tljh/hub/bin/tljh-config reload hub
echo "done: learners log in at http://$(hostname -f)/ ; GPU seats: /opt/tljh/hub/bin/rocmlab seats list"
