"""GPU seats: one GPU per learner on a shared node (The Littlest JupyterHub, or any JupyterHub on one machine).

Each learner is given one GPU index the first time their server starts and keeps it for the workshop; the
index goes into their server's environment as HIP_VISIBLE_DEVICES, so torch and HIP programs see that one
GPU as device 0. Assignments live in a JSON file, written under a lock, so a hub restart keeps them. When
every GPU is taken, the spawn fails with a message saying so and how to free one.

HIP_VISIBLE_DEVICES is a convention, not a security boundary: a learner who unsets it sees every GPU.
docs/workshop.md says how to harden it (one container per learner with only its render node).

Used from binder/tljh/jupyterhub_config.d/rocmlab.py and the test hub (:mod:`rocmlab.workshop.hub`); no
dependency beyond the standard library, so the hub's own environment can import it. Admins (the instructor)
take no seat: their server gets the whole exchange to grade instead.

    python -m rocmlab.workshop.seats list|release USER --state FILE
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pwd
import re
from contextlib import contextmanager
from pathlib import Path

from rocmlab.workshop import exchange as xchg

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


class NoFreeGpu(RuntimeError):
    """Every seat is taken (or there is no GPU). JupyterHub shows ``jupyterhub_message`` to the learner."""

    def __init__(self, message: str):
        super().__init__(message)
        self.jupyterhub_message = message


def count_gpus(kfd_nodes: str = KFD_NODES, env=None) -> int:
    """GPUs on this node: ROCMLAB_WORKSHOP_GPUS if set, else KFD topology nodes with SIMDs (CPUs have none)."""
    env = os.environ if env is None else env
    if env.get("ROCMLAB_WORKSHOP_GPUS"):
        n = int(env["ROCMLAB_WORKSHOP_GPUS"])
        if n < 1:
            raise ValueError("ROCMLAB_WORKSHOP_GPUS must be a positive number of GPUs")
        return n
    n = 0
    for props in sorted(Path(kfd_nodes).glob("*/properties")):
        m = re.search(r"^simd_count\s+(\d+)", props.read_text(), re.M)
        n += bool(m and int(m.group(1)) > 0)
    return n


class GpuAssigner:
    def __init__(self, state_file: str | os.PathLike, n_gpus: int):
        if n_gpus < 1:
            raise NoFreeGpu("no AMD GPU found on this node (/sys/class/kfd has no GPU node): check the amdgpu "
                            "driver (rocm-smi), or set ROCMLAB_WORKSHOP_GPUS")
        self.path = Path(state_file)
        self.n = n_gpus

    @contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(self.path.read_text()) if self.path.exists() else {}
            yield state
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
            tmp.replace(self.path)

    def assignments(self) -> dict[str, int]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def assign(self, user: str) -> int:
        with self._locked() as state:
            if user in state and state[user] < self.n:
                return state[user]
            taken = {v for k, v in state.items() if k != user}
            free = [i for i in range(self.n) if i not in taken]
            if not free:
                owners = ", ".join(f"{i}: {u}" for u, i in sorted(state.items(), key=lambda kv: kv[1]))
                raise NoFreeGpu(f"all {self.n} GPUs on this node are assigned ({owners}); "
                                f"an admin frees one with: python -m rocmlab.workshop.seats release USER --state {self.path}")
            state[user] = free[0]
            return free[0]

    def release(self, user: str) -> bool:
        with self._locked() as state:
            return state.pop(user, None) is not None


def make_pre_spawn_hook(assigner: GpuAssigner, exchange: str | os.PathLike | None = None, chown=os.chown):
    """A JupyterHub pre_spawn_hook: HIP_VISIBLE_DEVICES for a learner, and their hand-in folders.

    A learner's server gets ``HIP_VISIBLE_DEVICES`` and ``ROCMLAB_WORKSHOP_GPU`` (their seat) and
    ``ROCMLAB_EXCHANGE``; their ``inbound/NAME`` folder is made (mode 700, owned by their Unix user where
    one exists: TLJH's ``jupyter-NAME``). An admin takes no seat and gets ``ROCMLAB_EXCHANGE`` only.
    Raises :class:`NoFreeGpu` (the spawn fails with its message) when every seat is taken.
    """

    def hook(spawner):
        user = spawner.user.name
        spawner.environment = dict(spawner.environment or {})
        if exchange is not None:
            spawner.environment["ROCMLAB_EXCHANGE"] = str(Path(exchange))
        if getattr(spawner.user, "admin", False):
            spawner.log.info("rocmlab: %s is an admin: no GPU seat, the whole exchange", user)
            return
        gpu = assigner.assign(user)
        spawner.environment["HIP_VISIBLE_DEVICES"] = str(gpu)
        spawner.environment["ROCMLAB_WORKSHOP_GPU"] = str(gpu)
        if exchange is not None:
            ids = _system_ids(spawner)
            xchg.prepare_learner(exchange, user, uid=ids[0] if ids else None, gid=ids[1] if ids else None,
                                 chown=chown)
        spawner.log.info("rocmlab: %s gets GPU %d (HIP_VISIBLE_DEVICES=%d)", user, gpu, gpu)

    return hook


def _system_ids(spawner):
    """(uid, gid) of the learner's Unix user: TLJH's jupyter-NAME (SystemdSpawner's template), or NAME."""

    for candidate in (f"jupyter-{spawner.user.name}", spawner.user.name):
        try:
            pw = pwd.getpwnam(candidate)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="rocmlab workshop GPU assignments (one GPU per learner)")
    p.add_argument("command", choices=["list", "release"])
    p.add_argument("user", nargs="?")
    p.add_argument("--state", default="/opt/tljh/state/rocmlab-gpus.json")
    a = p.parse_args(argv)
    assigner = GpuAssigner(a.state, max(1, count_gpus()))
    if a.command == "list":
        for user, gpu in sorted(assigner.assignments().items(), key=lambda kv: kv[1]):
            print(f"GPU {gpu}: {user}")
        return 0
    if not a.user:
        p.error("release needs a USER")
    if not assigner.release(a.user):
        print(f"{a.user} has no GPU assigned")
        return 1
    print(f"released {a.user}'s GPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
