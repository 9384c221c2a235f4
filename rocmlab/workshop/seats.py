"""GPU seats: one logical GPU per learner on a shared node (The Littlest JupyterHub, or any JupyterHub on one
machine), and the seat plan of a node's partition modes.

A seat is a logical GPU: a whole MI300X in SPX mode, one XCD of 38 CUs in CPX mode (8 per MI300X, so 64 on an
8-GPU node). :func:`count_gpus` counts the logical GPUs the node exposes (its KFD topology: one node per
partition), :func:`read_node_partitions` reads the modes from ``amd-smi static --partition``, and
:func:`plan` computes, from Lab 08's model of the package (:mod:`rocmlab.machine.topology`), what each seat
gets in a mode, how to switch (the amd-smi commands, after AMD's partitioning guide) and what it costs.
Without an AMD GPU the plan is computed from the facts and says so.

Each learner is given one seat index the first time their server starts and keeps it for the workshop; the
index goes into their server's environment as HIP_VISIBLE_DEVICES, so torch and HIP programs see that one
logical GPU as device 0. Assignments live in a JSON file, written under a lock, so a hub restart keeps them.
When every seat is taken, the spawn fails with a message saying so and how to free one.

HIP_VISIBLE_DEVICES alone is a convention, not a security boundary: a learner who unsets it sees every GPU.
The workshop hub (:mod:`.hubconfig`) enforces the seat: the server's cgroup lets it open only ``/dev/kfd`` and
its partition's render node (:func:`seat_device_paths`, :func:`device_rules`), as ``docker --device`` does. ROCm
then skips every GPU whose render node it cannot open (libhsakmt's topology check), so the server sees its one
GPU as device 0 and ``HIP_VISIBLE_DEVICES`` is set to ``0`` there (``ROCMLAB_WORKSHOP_GPU`` keeps the seat).

Used from binder/tljh/jupyterhub_config.d/rocmlab.py and the test hub (:mod:`rocmlab.workshop.hub`); no
dependency beyond the standard library at import time, so the hub's own environment can import it. Admins
(the instructor) take no seat: their server gets the whole exchange to grade instead.

Functions only: the command line is ``rocmlab seats`` (:mod:`rocmlab.commands.seats`):

    rocmlab seats plan --gpus 8 --compute CPX --memory NPS4 [--json] [--learners 30]
    rocmlab seats plan            # this node's modes, read with amd-smi
    rocmlab seats list|release USER --state FILE
"""

from __future__ import annotations

import fcntl
import json
import locale
import os
import pwd
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rocmlab import safe_read
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


#: The largest seat state file read (a JSON object of learner -> seat: 30,000 learners are under 1 MiB).
MAX_STATE_BYTES = 1 << 20


class StateError(ValueError):
    """The seat state file is not usable (missing folder, a folder, a link, not a seat state): the message says
    what and the fix."""


def check_state_file(path: str | os.PathLike) -> Path:
    """``path`` as a seat state file: its folder exists, and it is missing or a regular file (not a link) of
    seat assignments (a JSON object of learner -> seat number, or empty) of at most :data:`MAX_STATE_BYTES`, read by
    :func:`rocmlab.safe_read.read_capped` (never through a link swapped in after the look). Raises
    :class:`StateError`."""
    p = Path(path)
    fix = "give the hub's seat state file (e.g. --state /opt/tljh/state/rocmlab-gpus.json)"
    if not p.parent.is_dir():
        raise StateError(f"--state {p}: its folder {p.parent} does not exist: {fix}")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a link" if stat.S_ISLNK(st.st_mode) else "not a file"
        raise StateError(f"--state {p} is {kind}, not a seat state file: {fix}")
    try:
        text = safe_read.read_capped(p, MAX_STATE_BYTES).decode(locale.getpreferredencoding(False))
    except (safe_read.ReadRefused, OSError, UnicodeDecodeError) as exc:
        raise StateError(f"--state {p} cannot be read ({exc}): {fix}") from None
    _parse_state(text, p)
    return p


def _parse_state(text: str, path: Path) -> dict:
    if not text.strip():
        return {}
    try:
        state = json.loads(text)
    except ValueError:
        state = None
    if not isinstance(state, dict) or not all(isinstance(k, str) and type(v) is int and v >= 0
                                               for k, v in state.items()):
        raise StateError(f"{path} is not a seat state file (a JSON object of learner -> seat number): give the "
                         "hub's seat state file (e.g. --state /opt/tljh/state/rocmlab-gpus.json)")
    return state


class GpuAssigner:
    def __init__(self, state_file: str | os.PathLike, n_gpus: int):
        if n_gpus < 1:
            raise NoFreeGpu("no AMD GPU found on this node (/sys/class/kfd has no GPU node): check the amdgpu "
                            "driver (rocm-smi), or set ROCMLAB_WORKSHOP_GPUS")
        self.path = Path(state_file)
        self.n = n_gpus

    @contextmanager
    def _locked(self):
        """The state, under an exclusive lock of the state file itself (no lock file beside it), written back
        in place when the block ends without an error."""
        check_state_file(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r+") as fh:
                state = _parse_state(fh.read(), self.path)
                before = dict(state)
                yield state
                if state != before:
                    fh.seek(0)
                    fh.truncate()
                    fh.write(json.dumps(state, indent=1, sort_keys=True))
                    fh.flush()
                    os.fsync(fh.fileno())
        finally:
            os.close(fd)

    def assignments(self) -> dict[str, int]:
        check_state_file(self.path)
        return _parse_state(self.path.read_text(), self.path) if self.path.exists() else {}

    def assign(self, user: str) -> int:
        with self._locked() as state:
            if user in state and state[user] < self.n:
                return state[user]
            taken = {v for k, v in state.items() if k != user}
            free = [i for i in range(self.n) if i not in taken]
            if not free:
                owners = ", ".join(f"{i}: {u}" for u, i in sorted(state.items(), key=lambda kv: kv[1]))
                raise NoFreeGpu(f"all {self.n} GPUs on this node are assigned ({owners}): one seat per logical "
                                "GPU (a finer partition mode gives more: rocmlab seats plan); "
                                f"an admin frees one with: rocmlab seats release USER --state {self.path}")
            state[user] = free[0]
            return free[0]

    def release(self, user: str) -> bool:
        with self._locked() as state:
            return state.pop(user, None) is not None


def seat_device_paths(n_gpus: int, kfd_nodes: str = KFD_NODES, dev: str = "/dev") -> list[list[str]]:
    """For each seat (a logical GPU, in the order HIP numbers them: KFD topology nodes with SIMDs), the device
    nodes its server may open: ``/dev/kfd`` and the partition's render node ``/dev/dri/renderD<drm_render_minor>``
    (in CPX mode each XCD partition has its own render node). Empty where there is no KFD topology."""
    out = []
    nodes = sorted(Path(kfd_nodes).glob("*/properties"), key=lambda p: int(p.parent.name)
                   if p.parent.name.isdigit() else 1 << 30)
    for props in nodes:
        text = props.read_text()
        simd = re.search(r"^simd_count\s+(\d+)", text, re.M)
        minor = re.search(r"^drm_render_minor\s+(\d+)", text, re.M)
        if simd and int(simd.group(1)) > 0 and minor:
            out.append([f"{dev}/kfd", f"{dev}/dri/renderD{minor.group(1)}"])
    return out[:n_gpus]


def device_rules(paths: list[str]) -> list[str]:
    """cgroup device rules (``c MAJOR:MINOR rw``) for the device nodes ``paths``, as ``docker --device`` makes.
    Raises :class:`NoFreeGpu` naming a path that is missing or not a device node."""
    rules = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise NoFreeGpu(f"GPU seat device {path} is missing ({exc.strerror}): check the amdgpu driver "
                            "(ls -l /dev/kfd /dev/dri) or the hub's gpu_devices list") from None
        kind = "c" if stat.S_ISCHR(st.st_mode) else "b" if stat.S_ISBLK(st.st_mode) else None
        if kind is None:
            raise NoFreeGpu(f"GPU seat device {path} is not a device node: fix the hub's gpu_devices list")
        rules.append(f"{kind} {os.major(st.st_rdev)}:{os.minor(st.st_rdev)} rw")
    return rules


def make_pre_spawn_hook(assigner: GpuAssigner, exchange: str | os.PathLike | None = None, chown=os.chown,
                        devices_enforced: bool = False):
    """A JupyterHub pre_spawn_hook: HIP_VISIBLE_DEVICES for a learner, and their hand-in folders.

    A learner's server gets ``HIP_VISIBLE_DEVICES`` and ``ROCMLAB_WORKSHOP_GPU`` (their seat) and
    ``ROCMLAB_EXCHANGE``; their ``inbound/NAME`` folder is made (mode 700, owned by their Unix user where
    one exists: TLJH's ``jupyter-NAME``). An admin takes no seat and gets ``ROCMLAB_EXCHANGE`` only.
    Raises :class:`NoFreeGpu` (the spawn fails with its message) when every seat is taken.
    ``devices_enforced``: the server may open only its seat's device nodes, so HIP numbers that one GPU 0.
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
        spawner.environment["HIP_VISIBLE_DEVICES"] = "0" if devices_enforced else str(gpu)
        spawner.environment["ROCMLAB_WORKSHOP_GPU"] = str(gpu)
        if exchange is not None:
            ids = _system_ids(spawner)
            xchg.prepare_learner(exchange, user, uid=ids[0] if ids else None, gid=ids[1] if ids else None,
                                 chown=chown)
        spawner.log.info("rocmlab: %s gets GPU %d (HIP_VISIBLE_DEVICES=%d)", user, gpu, gpu)

    return hook


def _system_ids(spawner):
    """(uid, gid) of the learner's Unix user: the spawner's own ``system_user`` (rocmlab's WorkshopSpawner),
    TLJH's jupyter-NAME (SystemdSpawner's template), or NAME."""

    own = getattr(spawner, "system_user", None)
    for candidate in ([own] if own else []) + [f"jupyter-{spawner.user.name}", spawner.user.name]:
        try:
            pw = pwd.getpwnam(candidate)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    return None


# ----------------------------------------------------------------------------- seat plans (partitions)

#: Where the partition commands and the recorded outputs come from (cited in plans and in docs/teach/seats.md).
SOURCES = {
    "amd-smi-partition-guide": "AMD Instinct docs, 'Quick Start Guide to Partitioning MI300X GPUs' "
                               "https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/gpu-partitioning/"
                               "mi300x/quick-start-guide.html (set CPX first, then NPS4; NPS4 only with CPX; "
                               "back: NPS1 first, then SPX)",
    "amdsmi-partition": "AMD SMI docs, 'GPU partitioning' "
                        "https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html",
    "lab08-model": "rocmlab.machine.topology (Lab 08: labs/08-mi300x-package.ipynb), from datasets/hardware.csv "
                   "and datasets/sources.csv row amd-mi300x-partitions",
}


class PlanError(ValueError):
    """A seat plan that cannot be made: the message says why and what to give instead."""


@dataclass(frozen=True)
class NodePartitions:
    """What ``amd-smi static --partition`` printed: one (gpu, compute, memory, partition_id) per listed GPU."""

    entries: tuple

    @property
    def modes(self) -> set:
        return {(c, m) for _, c, m, _ in self.entries if c not in (None, "N/A") and m not in (None, "N/A")}

    @property
    def listed(self) -> int:
        return len(self.entries)


def parse_amd_smi_partition(text: str) -> NodePartitions:
    """Parse ``amd-smi static --partition`` (or the PARTITION blocks of ``amd-smi static``)."""
    entries, gpu, fields = [], None, {}

    def flush():
        if gpu is not None and ("COMPUTE_PARTITION" in fields or "MEMORY_PARTITION" in fields):
            pid = fields.get("PARTITION_ID")
            entries.append((gpu, fields.get("COMPUTE_PARTITION"), fields.get("MEMORY_PARTITION"),
                            int(pid) if pid and pid.isdigit() else None))

    for line in text.splitlines():
        m = re.match(r"^GPU:\s*(\d+)\s*$", line.strip())
        if m:
            flush()
            gpu, fields = int(m.group(1)), {}
            continue
        m = re.match(r"^(COMPUTE_PARTITION|MEMORY_PARTITION|PARTITION_ID):\s*(\S+)", line.strip())
        if m and gpu is not None:
            fields[m.group(1)] = m.group(2).upper() if m.group(1) != "PARTITION_ID" else m.group(2)
    flush()
    return NodePartitions(tuple(entries))


def read_node_partitions() -> tuple[NodePartitions | None, str]:
    """(the node's partitions from ``amd-smi static --partition``, '') or (None, why not)."""
    import shutil
    import subprocess

    exe = shutil.which("amd-smi")
    if exe is None:
        return None, "amd-smi is not on PATH (it ships with ROCm, in /opt/rocm/bin): no AMD GPU node here"
    try:
        done = subprocess.run([exe, "static", "--partition"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"amd-smi static --partition did not run: {exc}"
    parts = parse_amd_smi_partition(done.stdout)
    if done.returncode != 0 or not parts.entries:
        return None, f"amd-smi static --partition gave no partition lines (exit {done.returncode}): " \
                     f"{(done.stderr or done.stdout)[-200:].strip()}"
    return parts, ""


def switch_commands(compute: str, memory: str) -> list[str]:
    """The amd-smi commands that put every GPU of a node in (compute, memory), in the order AMD's guide gives:
    compute first when going to NPS4 (NPS4 needs CPX), memory first when leaving NPS4 (SPX refuses while NPS4)."""
    set_c = f"sudo amd-smi set --gpu all --compute-partition {compute}"
    set_m = f"sudo amd-smi set --memory-partition {memory}    # restarts the amdgpu driver: no GPU process may run"
    steps = [set_c, set_m] if memory == "NPS4" else [set_m, set_c]
    return steps + ["amd-smi static --partition    # every logical GPU lists COMPUTE_PARTITION and MEMORY_PARTITION",
                    "amd-smi list                  # one entry per logical GPU: the seats"]


@dataclass(frozen=True)
class SeatPlan:
    device: str
    gpus: int
    compute: str
    memory: str
    per_gpu: int
    seats: int
    cus: int
    memory_gb: float
    l2_mb: float
    hbm_tbs: float
    memory_pools: int
    basis: str                  # "plan (computed from facts, not read from this node)" or what the node showed
    commands: tuple
    costs: tuple
    sources: tuple

    def as_dict(self) -> dict:
        return {"device": self.device, "gpus": self.gpus, "compute": self.compute, "memory": self.memory,
                "logical_gpus_per_gpu": self.per_gpu, "seats": self.seats,
                "per_seat": {"cus": self.cus, "memory_gb": self.memory_gb, "l2_mb": self.l2_mb,
                             "hbm_tbs_share": round(self.hbm_tbs, 3)},
                "memory_pools_per_gpu": self.memory_pools, "basis": self.basis, "commands": list(self.commands),
                "costs": list(self.costs), "sources": list(self.sources)}

    def text(self) -> str:
        lines = [f"[{self.basis}] {self.gpus} x {self.device} in {self.compute}/{self.memory}: {self.seats} seats "
                 f"({self.per_gpu} per GPU) x {self.cus} CUs x {self.memory_gb:g} GB "
                 f"(L2 {self.l2_mb:g} MB, HBM share {self.hbm_tbs:.2f} TB/s, {self.memory_pools} memory pool(s) "
                 "per GPU)",
                 "switch every GPU to this mode (as root, nothing running on the GPUs):"]
        lines += [f"  {c}" for c in self.commands]
        lines += ["what this mode costs (Lab 08's model):"] + [f"  - {c}" for c in self.costs]
        lines += ["sources:"] + [f"  - {s}" for s in self.sources]
        return "\n".join(lines)


def _costs(compute: str, memory: str, p, pkg) -> tuple:
    share = p.logical_gpus
    out = [f"each seat has 1/{share} of a GPU: {p.cus_each} of {pkg.cus} CUs, {p.memory_each_gb:g} of "
           f"{pkg.hbm_gb:g} GB; a model or working set over {p.memory_each_gb:g} GB does not fit in a seat"]
    if share > 1:
        out.append(f"a kernel sized for {pkg.cus} CUs (a persistent grid) oversubscribes a {p.cus_each}-CU seat: "
                   "size grids from multiProcessorCount")
        out.append(f"the {pkg.hbm_tbs:g} TB/s of HBM is shared: about {p.hbm_tbs_each:.2f} TB/s per seat when "
                   "every seat streams at once")
    if compute == "CPX":
        out.append("one XCD per seat: the round-robin dispatch over XCDs and its L2 locality issue vanish, so a "
                   "seat's timings say little about SPX behaviour")
    if memory == "NPS4":
        out.append("NPS4: each seat allocates from the 48 GB pool of its own I/O die (shared by that die's 2 XCDs), "
                   "shorter latency to HBM than NPS1's interleaving over all stacks")
    out.append("switching the memory mode restarts the amdgpu driver (every GPU process must stop first); the "
               "modes may not survive a reboot: make them part of the node's boot set-up")
    return tuple(out)


def plan(gpus: int, compute: str, memory: str, device: str = "MI300X", basis: str | None = None) -> SeatPlan:
    """The seats one node gives in a partition mode, from Lab 08's model of the package."""
    from rocmlab.machine import topology as T

    if gpus < 1:
        raise PlanError(f"--gpus must be at least 1, not {gpus}")
    compute, memory = compute.upper(), memory.upper()
    try:
        pkg = T.package(device)
        p = T.partitioning(compute, memory, pkg)
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    return SeatPlan(device, gpus, compute, memory, p.logical_gpus, gpus * p.logical_gpus, p.cus_each,
                    p.memory_each_gb, p.l2_each_mb, p.hbm_tbs_each, p.numa_pools,
                    basis or "plan: computed from the facts, not read from this node",
                    tuple(switch_commands(compute, memory)), _costs(compute, memory, p, pkg),
                    tuple(SOURCES.values()))


def every_mode_plan(gpus: int = 8, device: str = "MI300X") -> list[SeatPlan]:
    """The plan of each documented partition mode (Lab 08's ``SUPPORTED``), coarsest compute mode first."""
    from rocmlab.machine import topology as T

    return [plan(gpus, c, m, device) for c, m in sorted(T.SUPPORTED, key=lambda cm: (T.COMPUTE_MODES[cm[0]], cm[1]))]


def plan_from_node(parts: NodePartitions, logical_gpus: int, device: str = "MI300X") -> SeatPlan:
    """The seats this node has now: its modes from amd-smi, its logical GPU count from the KFD topology."""
    modes = parts.modes
    if len(modes) != 1:
        raise PlanError(f"amd-smi shows mixed or unknown partition modes {sorted(modes) or 'N/A'}: set one mode "
                        "on every GPU (AMD does not recommend mixing them on one node)")
    (compute, memory), = modes
    per = plan(1, compute, memory, device).per_gpu
    if logical_gpus % per:
        raise PlanError(f"{logical_gpus} logical GPUs is not a multiple of {per} ({compute}): a GPU is missing "
                        "(AMD's guide: unload the ast driver and reload amdgpu), check `amd-smi list`")
    note = (f"read from this node: amd-smi {compute}/{memory}, {logical_gpus} logical GPUs in /sys/class/kfd"
            + (f"; amd-smi listed {parts.listed}" if parts.listed != logical_gpus else ""))
    return plan(logical_gpus // per, compute, memory, device, basis=note)


def check_learners(learners: int, seats: int, what: str = "") -> None:
    """Raise :class:`NoFreeGpu` when a workshop has more learners than GPU seats."""
    if learners > seats:
        raise NoFreeGpu(f"{learners} learners but only {seats} GPU seats{what}: a learner past the last seat "
                        "could not start. Use a finer partition mode (see `rocmlab seats plan "
                        "--gpus N --compute CPX --memory NPS4`), another node, or fewer learners")
