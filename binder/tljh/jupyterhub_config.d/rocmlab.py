# rocmlab on one 8x MI300X node with The Littlest JupyterHub: one GPU seat (one logical GPU) per learner.
# install.sh copies this file to /opt/tljh/config/jupyterhub_config.d/ (TLJH loads every .py there after
# config.yaml) and installs rocmlab's workshop modules into the hub's environment (pip --no-deps: they need
# only the standard library). `c` is JupyterHub's config object.
#
# Seats: the logical GPUs the node exposes now (its KFD topology: 8 on 8 MI300X in SPX, 64 in CPX), so put
# the GPUs in the partition mode first (`/opt/tljh/hub/bin/rocmlab seats plan` shows the amd-smi commands).
# A config.yaml with more learners than seats stops the hub with a message saying so.
# Isolation: TLJH makes each learner the Unix user jupyter-NAME with a home closed to others (o-rwx); their
# server runs as that user in a systemd unit with TLJH's memory and CPU limits; this file adds a private
# /tmp per server and the exchange folders (each learner's hand-in folder theirs, their feedback theirs to
# read). Admins (the instructor) get sudo from TLJH: they grade with
# `sudo -E rocmlab grade --exchange ... --seed-file FILE` (a 0600 file: never the seed on a command line).
# Enforced per learner's unit (systemd applies them with cgroup v2 and its BPF device filter):
#   DevicePolicy=closed + DeviceAllow: only /dev/kfd and the seat's render node /dev/dri/renderD<minor> (from
#   the KFD topology: in CPX each XCD partition has its own), as `docker --device` does; ROCm then numbers
#   that one GPU 0, so HIP_VISIBLE_DEVICES=0; TasksMax: processes and threads (ROCMLAB_PIDS_LIMIT, 1024).
import os

from rocmlab.workshop.seats import (GpuAssigner, check_learners, count_gpus, make_pre_spawn_hook,
                                    seat_device_paths)

STATE = os.environ.get("ROCMLAB_GPU_STATE", "/opt/tljh/state/rocmlab-gpus.json")
EXCHANGE = os.environ.get("ROCMLAB_EXCHANGE", "/srv/rocmlab/exchange")

assigner = GpuAssigner(STATE, count_gpus())
allowed = c.Authenticator.allowed_users  # noqa: F821  # set by TLJH from config.yaml's users.allowed
check_learners(len(allowed) if isinstance(allowed, (set, list, tuple)) else 0, assigner.n,
               " (logical GPUs on this node)")
DEVICES = seat_device_paths(assigner.n)      # [] without a GPU: nothing to enforce, HIP_VISIBLE_DEVICES only
PIDS = int(os.environ.get("ROCMLAB_PIDS_LIMIT", "1024"))
_seat_hook = make_pre_spawn_hook(assigner, exchange=EXCHANGE, devices_enforced=bool(DEVICES))


def _pre_spawn(spawner):
    _seat_hook(spawner)
    props = dict(getattr(spawner, "unit_extra_properties", None) or {})
    props["TasksMax"] = str(PIDS)
    seat = spawner.environment.get("ROCMLAB_WORKSHOP_GPU")
    if DEVICES and seat is not None:
        props["DevicePolicy"] = "closed"
        props["DeviceAllow"] = [f"{d} rw" for d in DEVICES[int(seat)]]
    spawner.unit_extra_properties = props


c.Spawner.pre_spawn_hook = _pre_spawn  # noqa: F821
c.JupyterHub.active_server_limit = assigner.n + 1  # noqa: F821  # the learners' seats, plus the instructor
c.Spawner.default_url = "/lab"  # noqa: F821
c.Spawner.environment = {"ROCMLAB_EXCHANGE": EXCHANGE}  # noqa: F821
# learners' units may open /dev/kfd and /dev/dri/renderD* (owned by groups video and render)
c.SystemdSpawner.unit_extra_properties = {"SupplementaryGroups": "video render"}  # noqa: F821
c.SystemdSpawner.isolate_tmp = True  # noqa: F821  # each server its own /tmp
