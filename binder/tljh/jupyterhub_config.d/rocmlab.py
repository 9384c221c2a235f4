# rocmlab on one 8x MI300X node with The Littlest JupyterHub: up to 8 learners, one GPU each.
# install.sh copies this file to /opt/tljh/config/jupyterhub_config.d/ (TLJH loads every .py there after
# config.yaml) and installs rocmlab's workshop modules into the hub's environment (pip --no-deps: they need
# only the standard library). `c` is JupyterHub's config object.
import os

from rocmlab.workshop.seats import GpuAssigner, count_gpus, make_pre_spawn_hook

STATE = os.environ.get("ROCMLAB_GPU_STATE", "/opt/tljh/state/rocmlab-gpus.json")
EXCHANGE = os.environ.get("ROCMLAB_EXCHANGE", "/srv/rocmlab/exchange")

assigner = GpuAssigner(STATE, count_gpus())
c.Spawner.pre_spawn_hook = make_pre_spawn_hook(assigner, exchange=EXCHANGE)  # noqa: F821
c.JupyterHub.active_server_limit = assigner.n + 1  # noqa: F821  # the learners' GPUs, plus the instructor
c.Spawner.default_url = "/lab"  # noqa: F821
c.Spawner.environment = {"ROCMLAB_EXCHANGE": EXCHANGE}  # noqa: F821
# learners' units may open /dev/kfd and /dev/dri/renderD* (owned by groups video and render)
c.SystemdSpawner.unit_extra_properties = {"SupplementaryGroups": "video render"}  # noqa: F821
