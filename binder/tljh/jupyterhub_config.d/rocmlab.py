# rocmlab on one 8x MI300X node with The Littlest JupyterHub: up to 8 learners, one GPU each.
# install.sh copies this file to /opt/tljh/config/jupyterhub_config.d/ and rocmlab_gpus.py beside it
# (TLJH loads every .py there after config.yaml). `c` is JupyterHub's config object.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # /opt/tljh/config
from rocmlab_gpus import GpuAssigner, count_gpus, make_pre_spawn_hook  # noqa: E402

STATE = os.environ.get("ROCMLAB_GPU_STATE", "/opt/tljh/state/rocmlab-gpus.json")
EXCHANGE = os.environ.get("ROCMLAB_EXCHANGE", "/srv/rocmlab/exchange")

assigner = GpuAssigner(STATE, count_gpus())
c.Spawner.pre_spawn_hook = make_pre_spawn_hook(assigner, exchange=EXCHANGE)  # noqa: F821
c.JupyterHub.active_server_limit = assigner.n  # noqa: F821  # never more servers than GPUs
c.Spawner.default_url = "/lab"  # noqa: F821
# learners' units may open /dev/kfd and /dev/dri/renderD* (owned by groups video and render)
c.SystemdSpawner.unit_extra_properties = {"SupplementaryGroups": "video render"}  # noqa: F821
